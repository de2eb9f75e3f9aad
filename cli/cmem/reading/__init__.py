"""What agents and people read back: `cmem context` (`context`), `cmem recall` (`recall`) over
the full-text index (`search_index`), `cmem trace` (`trace`), `cmem status` (`status`) with
layer sizes (`sizes`), and when each convergent file was last read (`read_times`)."""
