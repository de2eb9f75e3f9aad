"""Text cmem itself puts in front of a model, recognised wherever it comes back: an agent
records what a SessionStart hook injected (Gemini as a user message), and a pass that runs an
agent's CLI as its model sends the pass prompt as the user's first message. Neither is the
user's words, so capture must never keep it (docs/design.md §14, §15: no feedback loop).

Every such text carries one of these marks; this module is their one definition."""

from __future__ import annotations

# The first line of the SessionStart context (`reading/session_start.py`), and its last.
CONTEXT_MARK = "<!-- cmem memory:"
CONTEXT_END_MARK = "<!-- end of cmem memory:"
# The first line of every prompt a pass sends a model, its repair rounds included
# (`converge/prompt.py`, `converge/model/command.py`).
PASS_PROMPT_MARK = "<!-- cmem convergence prompt -->"
# The environment variable a pass sets for the model command it runs: an agent CLI started as
# cmem's model fires its own hooks, and `cmem hook run` then does nothing.
MODEL_CALL_ENV = "CMEM_MODEL_CALL"


def is_cmem_context(text: str) -> bool:
    """Whether a message holds memory cmem injected (anywhere in it: agents wrap it)."""
    return any(opening in text for opening, _, _ in _CONTEXT_MARKS)


def _escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# The marks as written, and as an agent that escapes markup in a hook's context records them.
_CONTEXT_MARKS = (
    (CONTEXT_MARK, CONTEXT_END_MARK, "-->"),
    (_escaped(CONTEXT_MARK), _escaped(CONTEXT_END_MARK), _escaped("-->")),
)


def without_cmem_context(text: str) -> str:
    """`text` with each block of memory cmem injected taken out, from its opening mark to the end
    of its closing comment (to the end of the text when the block was cut short)."""
    for opening, ending, close in _CONTEXT_MARKS:
        while opening in text:
            start = text.index(opening)
            end = text.find(ending, start)
            stop = text.find(close, end + len(ending)) if end >= 0 else -1
            text = text[:start] + (text[stop + len(close) :] if stop >= 0 else "")
    return text


def is_pass_prompt(text: str) -> bool:
    """Whether a message is a pass's prompt: it opens with the mark, whitespace aside."""
    return text.lstrip().startswith(PASS_PROMPT_MARK)
