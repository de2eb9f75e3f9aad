"""Text cmem itself puts in front of a model, recognised wherever it comes back: an agent
records what a SessionStart hook injected (Gemini as a user message), and a pass that runs an
agent's CLI as its model sends the pass prompt as the user's first message. Neither is the
user's words, so capture must never keep it (SPEC §14, §15: no feedback loop).

Every such text carries one of these marks; this module is their one definition."""

from __future__ import annotations

# The first line of the SessionStart context (`reading/session_start.py`).
CONTEXT_MARK = "<!-- cmem memory:"
# The first line of every prompt a pass sends a model, its repair rounds included
# (`converge/prompt.py`, `converge/model_command.py`).
PASS_PROMPT_MARK = "<!-- cmem convergence prompt -->"
# The environment variable a pass sets for the model command it runs: an agent CLI started as
# cmem's model fires its own hooks, and `cmem hook run` then does nothing.
MODEL_CALL_ENV = "CMEM_MODEL_CALL"


# Gemini CLI records a hook's context HTML-escaped inside `<hook_context>`.
_ESCAPED_CONTEXT_MARK = CONTEXT_MARK.replace("<", "&lt;")


def is_cmem_context(text: str) -> bool:
    """Whether a message holds memory cmem injected (anywhere in it: agents wrap it, escape it)."""
    return CONTEXT_MARK in text or _ESCAPED_CONTEXT_MARK in text


def is_pass_prompt(text: str) -> bool:
    """Whether a message is a pass's prompt: it opens with the mark, whitespace aside."""
    return text.lstrip().startswith(PASS_PROMPT_MARK)
