"""The words `status`, `scan`, `doctor` and the pass report say about what the builtin engine
converged and what waits for a model (docs/design.md §4: the builtin engine is the fallback, and says so):
one sentence, with one hint. Stdlib only: a status served from a stored result prints it."""

from __future__ import annotations

# how a person gets what waits read: one hint, in status, scan, doctor and the pass report
MODEL_HINT = "set a model: `--llm CMD` or `llm.command` (see `cmem converge --help`)"


def _count(number: int, word: str) -> str:
    return f"{number} {word}" if number == 1 else f"{number} {word}s"


def waiting_clause(lines: int, notes: int) -> str:
    """ "41 lines in 9 notes wait for a model — set a model: …" (or that nothing waits)."""
    if not lines:
        return "nothing waits for a model"
    verb = "waits" if lines == 1 else "wait"
    return f"{_count(lines, 'line')} in {_count(notes, 'note')} {verb} for a model — {MODEL_HINT}"


def waiting_sentence(
    converged: int, lines: int, notes: int, model_set: bool, detail: str = "", so_far: bool = False
) -> str:
    """One sentence of what the builtin engine did and what it leaves (docs/design.md §4: it says so):
    "builtin engine (no model set): 3 lines converged from cue words; 41 lines in 9 notes wait
    for a model — set a model: …". `detail` follows the converged count in brackets."""
    who = "builtin engine" if model_set else "builtin engine (no model set)"
    done = f"{_count(converged, 'line')} converged from cue words" + (" so far" if so_far else "")
    done += f" ({detail})" if detail else ""
    return f"{who}: {done}; {waiting_clause(lines, notes)}"
