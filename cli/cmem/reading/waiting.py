"""What waits, and why (docs/design.md §2): the one account `status`, `scan` and `doctor` give.

A note waits because it is pending and the next pass will take it, because it is over one
pass's budget, because only a model can read it (the builtin engine reads cue lines only),
because it was deferred (with the reason), or because it is the backlog of an adopted folder.
None of them ever says "nothing pending" while a note waits.

Without a model, what waits is counted in lines, each in one place: a line a pass placed in a
statement is converged; a cue line the scan's rules deferred (a one-off, venting) is deferred,
and returns on its own; every other line no pass converged waits for a model — the non-cue
lines, and the cue lines the builtin engine left for one. The pass report says the same
(`converge/waiting_words.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cmem.converge.selection import engine_takes
from cmem.scan.signals import DEFERRED
from cmem.text.cues import SIGNAL_CLASSES

# The notes' share of a pass's prompt budget, for the estimate of how many passes the backlog
# takes: the rest is the instructions and the memory files the prompt shows.
NOTES_SHARE = 0.5


@dataclass
class Waiting:
    notes: int = 0  # pending notes
    tokens: int = 0
    signals: dict[str, int] = field(default_factory=dict)  # class → pending cue lines
    why: dict[str, int] = field(default_factory=dict)  # PendingNote.why → notes
    workable: int = 0  # notes the configured engine takes: what makes a pass due
    for_model: int = 0  # notes only a model can take, when none is configured
    for_model_tokens: int = 0
    # content lines no engine judges without a model, and the notes holding them: lines a pass
    # placed in a statement are never among them (`PendingNote.model_lines`)
    model_lines: int = 0
    model_line_notes: int = 0
    model: bool = False  # a model command is configured
    builtin_lines: int = 0  # lines the builtin engine converged from cue words so far
    over_budget: int = 0  # notes the next pass leaves for the one after
    over_budget_tokens: int = 0
    deferred_lines: int = 0
    deferred_notes: int = 0
    backlog: int = 0
    backlog_tokens: int = 0
    backlog_passes: int = 0
    quarantined: list = field(default_factory=list)  # scan.signals.Quarantined

    def to_json(self) -> dict:
        return {
            "notes": self.notes,
            "tokens": self.tokens,
            "signals": self.signals,
            "why": self.why,
            "workable": self.workable,
            "waiting_for_model": {
                "notes": self.for_model,
                "tokens": self.for_model_tokens,
                "lines": self.model_lines,
                "lines_in_notes": self.model_line_notes,
            },
            "model_configured": self.model,
            "converged_from_cues": self.builtin_lines,
            "over_budget": {"notes": self.over_budget, "tokens": self.over_budget_tokens},
            "deferred": self.deferred_lines,
            "deferred_notes": self.deferred_notes,
            "backlog": {
                "notes": self.backlog,
                "tokens": self.backlog_tokens,
                "passes": self.backlog_passes,
            },
            "quarantined": [q.to_json() for q in self.quarantined],
        }


def account_waiting(vault, scan, model: bool, memory_tokens: int = 0) -> Waiting:
    """The waiting notes of a scan, for a vault whose pass would (`model`) or would not run a
    model; `memory_tokens`, the convergent layer's size, shrinks a pass's room for notes."""
    waiting = Waiting(model=model)
    waiting.signals = dict.fromkeys(SIGNAL_CLASSES, 0)
    for signal in scan.signals:
        waiting.signals[signal.cls] += 1
    waiting.notes = len(scan.pending)
    waiting.tokens = sum(p.tokens for p in scan.pending)
    for note in scan.pending:
        waiting.why[note.why] = waiting.why.get(note.why, 0) + 1
    takes, left = engine_takes(scan.pending, model)
    waiting.workable = len(takes)
    waiting.for_model = len(left)
    waiting.for_model_tokens = sum(p.tokens for p in left)
    waiting.builtin_lines = scan.builtin_lines
    if not model:
        held = [p.model_lines for p in scan.pending]
        waiting.model_lines = sum(held)
        waiting.model_line_notes = sum(1 for lines in held if lines)
    room = _room(vault, memory_tokens)
    used = 0
    for note in sorted(takes, key=lambda p: (p.best_priority, p.mtime_ns, p.rel)):
        cost = note.tokens + 40 * len(note.signals)
        if used and used + cost > room:
            waiting.over_budget += 1
            waiting.over_budget_tokens += note.tokens
        else:
            used += cost
    waiting.deferred_lines = sum(1 for d in scan.deferred if d.line and not d.for_model)
    waiting.deferred_notes = len({d.note for d in scan.deferred if d.kind == DEFERRED})
    waiting.quarantined = list(scan.quarantined)
    waiting.backlog = len(scan.backlog)
    waiting.backlog_tokens = sum(b.tokens for b in scan.backlog)
    if waiting.backlog:
        waiting.backlog_passes = max(1, -(-waiting.backlog_tokens // max(room, 1)))
    return waiting


def _room(vault, memory_tokens: int) -> int:
    budget = vault.config.budget_tokens
    return max(int(budget * NOTES_SHARE), budget - memory_tokens)
