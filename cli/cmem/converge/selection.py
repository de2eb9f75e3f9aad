"""Select: which pending notes go into this pass (docs/design.md §3 step 3).

Pending notes (docs/design.md §2: new or changed since the pass that accounted for them, whatever their
words) by their best signal's priority (corrections first), then age (oldest first), within the
prompt budget; the rest wait for the next pass and are reported with their count and size.

What a note brings depends on who reads it. A model reads every line it has not judged yet (the
note's other lines are shown as context). The builtin engine reads cue lines only: a note
without a pending cue line is left for a model (`Selection.for_model`) and said so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cmem.scan.content import unaccounted_lines
from cmem.scan.signals import NEW, PendingNote, Signal
from cmem.text.tokens import estimate_tokens
from cmem.vault.layers import NoteFile, Vault
from cmem.vault.notes import read_note
from cmem.vault.obsidian import template_folders
from cmem.vault.quoted import quoted_reason
from cmem.vault.yaml_reader import read_frontmatter


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
    # the lines this pass judges (1-based): every content line no pass accounted for; the
    # note's other lines are context
    judge: list[int] = field(default_factory=list)
    why: str = NEW
    keys: list[str] = field(default_factory=list)  # recurrence key phrases of its cue lines
    body_start: int = 1
    quoted: str = ""  # why it is not the user's own words (`vault/quoted.py`), "" when it is

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)


@dataclass
class Selection:
    notes: list[SelectedNote]
    waiting: list[PendingNote]  # over the budget: next pass
    unreadable: list[str]  # pending when scanned, unreadable now
    # (note, line) of each line the scan deferred on its own (one-off, vague, venting): the builtin
    # engine leaves them for a model, and `cmem scan` shows them with their reason
    deferred_lines: set[tuple[str, int]] = field(default_factory=set)
    # pending notes only a model can take, when the builtin engine runs: no cue line to read
    for_model: list[PendingNote] = field(default_factory=list)

    @property
    def waiting_tokens(self) -> int:
        return sum(p.tokens for p in self.waiting)


def engine_takes(pending: list[PendingNote], reads_meaning: bool) -> tuple[list, list]:
    """(the pending notes an engine can take, the ones left for a model). A model takes all of
    them; the builtin engine the notes with a pending cue line."""
    if reads_meaning:
        return list(pending), []
    taken = [p for p in pending if p.signals and not p.model_only]
    return taken, [p for p in pending if not (p.signals and not p.model_only)]


def select_notes(
    vault: Vault,
    pending: list[PendingNote],
    budget_tokens: int,
    only: list[str] | None = None,
    reads_meaning: bool = True,
) -> Selection:
    """`budget_tokens` is what the notes may take of the prompt (the caller subtracts the fixed
    parts). The first note is always taken, even over budget, so a pass can make progress."""
    chosen = pending
    if only:
        wanted = {o.removesuffix(".md") for o in only}
        chosen = [p for p in pending if p.rel.removesuffix(".md") in wanted or p.name in wanted]
    taken, for_model = engine_takes(chosen, reads_meaning)
    ordered = sorted(taken, key=lambda p: (p.best_priority, p.mtime_ns, p.rel))
    selection = Selection([], [], [], for_model=for_model)
    used = 0
    templates = template_folders(vault.root)
    for entry in ordered:
        note = _read_pending(vault, entry, reads_meaning, templates)
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


def _read_pending(
    vault: Vault, entry: PendingNote, reads_meaning: bool, templates: list[str]
) -> SelectedNote | None:
    note = read_note(
        NoteFile(entry.rel, vault.root / entry.rel, "divergent"), vault.config.max_note_bytes
    )
    if not note.usable:
        return None
    if reads_meaning:
        judge = unaccounted_lines(note.lines, note.body_start, entry.accounted)
    else:
        judge = sorted({signal.line for signal in entry.signals})
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
        judge=judge,
        why=entry.why,
        keys=list(entry.keys),
        body_start=note.body_start,
        quoted=quoted_reason(
            entry.rel, read_frontmatter(note.frontmatter)[0], list(entry.tags), templates
        ),
    )
