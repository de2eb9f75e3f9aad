"""The pass's model from outside cmem: the user's model command run (`command`), its raw output
made a reply (`reply_text`), and the agent running cmem as the model (`agent_pass`)."""
