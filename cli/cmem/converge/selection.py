"""Select: which pending notes go into this pass (SPEC §3 step 3).

Pending notes by their best signal's priority (corrections first), then age (oldest first),
within the prompt budget; the rest wait for the next pass and are reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cmem.scan.signals import PendingNote, Signal
from cmem.text.tokens import estimate_tokens
from cmem.vault.layers import NoteFile, Vault
from cmem.vault.notes import read_note


@dataclass
class SelectedNote:
    rel: str
    name: str  # wikilink name
    text: str
    lines: list[str]  # the note's lines; line N is lines[N - 1]
    signals: list[Signal]
    tags: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    sha256: str = ""
    mtime_ns: int = 0

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)


@dataclass
class Selection:
    notes: list[SelectedNote]
    waiting: list[PendingNote]  # over the budget: next pass
    unreadable: list[str]  # pending when scanned, unreadable now
    # (note, line) of each line the scan deferred on its own (one-off, vague, venting): a pass that
    # converges the note leaves them pending, so they wait visibly for recurrence or confirmation
    deferred_lines: set[tuple[str, int]] = field(default_factory=set)


def select_notes(
    vault: Vault, pending: list[PendingNote], budget_tokens: int, only: list[str] | None = None
) -> Selection:
    """`budget_tokens` is what the notes may take of the prompt (the caller subtracts the fixed
    parts). The first note is always taken, even over budget, so a pass can make progress."""
    chosen = pending
    if only:
        wanted = {o.removesuffix(".md") for o in only}
        chosen = [p for p in pending if p.rel.removesuffix(".md") in wanted or p.name in wanted]
    ordered = sorted(chosen, key=lambda p: (p.best_priority, p.mtime_ns, p.rel))
    selection = Selection([], [], [])
    used = 0
    for entry in ordered:
        note = _read_pending(vault, entry)
        if note is None:
            selection.unreadable.append(entry.rel)
            continue
        cost = note.tokens + 40 * len(note.signals)
        if selection.notes and used + cost > budget_tokens:
            selection.waiting.append(entry)
            continue
        selection.notes.append(note)
        used += cost
    return selection


def _read_pending(vault: Vault, entry: PendingNote) -> SelectedNote | None:
    note = read_note(
        NoteFile(entry.rel, vault.root / entry.rel, "divergent"), vault.config.max_note_bytes
    )
    if not note.usable:
        return None
    return SelectedNote(
        rel=entry.rel,
        name=entry.name,
        text=note.text,
        lines=note.lines,
        signals=list(entry.signals),
        tags=list(entry.tags),
        links=list(entry.links),
        sha256=note.sha256,
        mtime_ns=note.mtime_ns,
    )
