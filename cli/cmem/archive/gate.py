"""The archive gate (docs/design.md §6): staged lines in `archive/ARCHIVE-CHECKLIST.md`, ticked by
the user, moved into the archive with git by `cmem archive apply` (the checklist's format:
`checklist`).

Nothing is ever deleted: a note moves in one journaled step (written at its archive
path, then removed from the root, in one commit git sees as a rename), a taken archive name gets
a unique one, and a note that changed since it was staged stays where it is (it will be scanned
again).
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from datetime import datetime

from cmem.archive.checklist import (
    CHANGED,
    MISSING,
    READY,
    REFUSED,
    UNCITED,
    UNPARSED,
    UNREADABLE,
    WAITING,
    StagedLine,
    archive_target,
    filing_date,
    parse_checklist,
    read_checklist,
    remove_checklist_lines,
)
from cmem.archive.citations import Citations
from cmem.errors import CmemError
from cmem.regular_files import read_regular, reason_of
from cmem.text.folding import fold_case
from cmem.vault.layers import ARCHIVE, DIVERGENT, NEVER_READ_DIRS, Vault, is_undecodable, show_name
from cmem.vault.state_json import load_state, state_bytes
from cmem.vault.statements import WIKILINK


@dataclass
class ArchiveMove:
    line: StagedLine
    source: str  # vault-relative path now
    target: str  # vault-relative path it moves to
    staged_target: str  # what the line asked for; differs when that name was taken
    warnings: list[str] = field(default_factory=list)

    @property
    def renamed(self) -> bool:
        return self.target != self.staged_target

    def to_json(self) -> dict:
        return {
            "note": self.line.note,
            "from": self.source,
            "to": self.target,
            "staged_target": self.staged_target,
            "renamed": self.renamed,
            "line": self.line.line_no,
            "warnings": self.warnings,
        }


@dataclass
class ArchivePlan:
    moves: list[ArchiveMove]
    skipped: list[StagedLine]  # chosen but changed, uncited, missing or unparsed: they stay staged
    not_chosen: list[StagedLine]  # unticked lines (without --all)
    duplicates: list[
        StagedLine
    ]  # further lines for a note already moved by this plan: removed with it
    all_lines: bool
    checklist_bytes: bytes | None
    state_bytes: bytes | None

    @property
    def pending_again(self) -> list[StagedLine]:
        """Chosen lines whose note memory no longer holds, still recorded as converged: the
        archive step drops their state.json entries, so they are pending again."""
        lines: dict[str, StagedLine] = {}
        for line in self.skipped:
            if line.state == UNCITED and line.recorded and line.source:
                lines.setdefault(line.source, line)
        return list(lines.values())

    @property
    def warnings(self) -> list[str]:
        return [w for move in self.moves for w in move.warnings]

    def to_json(self) -> dict:
        return {
            "moves": [m.to_json() for m in self.moves],
            "skipped": [_skip_json(s) for s in self.skipped],
            "pending_again": [line.source for line in self.pending_again],
            "not_chosen": len(self.not_chosen),
            "all": self.all_lines,
        }


@dataclass
class ArchiveResult:
    status: str  # applied | nothing | dry-run
    plan: ArchivePlan
    pass_id: str | None = None
    commit: str | None = None
    snapshot_commit: str | None = None
    step_warnings: list[str] = field(default_factory=list)  # files the step's snapshot left out

    def to_json(self) -> dict:
        return {
            "status": self.status,
            "pass": self.pass_id,
            "commit": self.commit,
            "snapshot_commit": self.snapshot_commit,
            "moved": [m.to_json() for m in self.plan.moves] if self.status != "nothing" else [],
            "skipped": [_skip_json(s) for s in self.plan.skipped],
            "pending_again": (
                [line.source for line in self.plan.pending_again] if self.commit else []
            ),
            "not_chosen": len(self.plan.not_chosen),
            "warnings": self.plan.warnings + self.step_warnings,
        }


def _skip_json(line: StagedLine) -> dict:
    return {"note": line.note, "state": line.state, "line": line.line_no, "reason": line.detail}


def list_staged(vault: Vault) -> list[StagedLine]:
    """Every staged line with its state: ready, changed (the note's bytes differ from the digest
    recorded when it was staged), uncited (memory no longer holds what it was converged into:
    `citations.py`), missing (no such note in the divergent layer), refused or unparsed."""
    text, _ = read_checklist(vault)
    return _with_states(vault, parse_checklist(text))


def _with_states(vault: Vault, lines: list[StagedLine]) -> list[StagedLine]:
    state = load_state(vault.state_file)
    citations = Citations(vault)
    by_name: dict[str, list[str]] = {}
    for note in vault.list_layer(DIVERGENT):
        by_name.setdefault(note.name, []).append(note.rel)
    for line in lines:
        if line.state == UNPARSED:
            continue
        candidates = by_name.get(line.note or "", [])
        if len(candidates) > 1:
            # Two divergent notes share the name (root and a daily folder): the converged one wins.
            known = [rel for rel in candidates if rel in state.notes]
            candidates = known or candidates
        line.source = candidates[0] if candidates else None
        _fill_target(vault, line, state)
        if line.state != REFUSED:
            _fill_state(vault, line, state)
        if line.state == READY:
            _fill_waiting(line, state)
        if line.state == READY:
            _fill_citation(line, state, citations)
    return lines


def _fill_waiting(line: StagedLine, state) -> None:
    """A ready line whose note still holds lines no pass judged is `waiting`: archived, they
    would be in no memory file and no queue."""
    entry = state.notes.get(line.source or "")
    if entry is None or not entry.waits:
        return
    count = entry.waiting_lines
    lines, them = (
        ("1 line of it waits", "it") if count == 1 else (f"{count} lines of it wait", "them")
    )
    line.state = WAITING
    line.detail = (
        f"{lines} for a model (no pass judged {them} yet), so it stays out of the archive until a "
        f"pass with a model judges {them} (`cmem converge --only {line.note!r} --llm CMD`, or an "
        "agent answering the prompt)"
    )


def _fill_citation(line: StagedLine, state, citations: Citations) -> None:
    """A ready line whose note memory no longer holds is `uncited`, with the reason."""
    entry = state.notes.get(line.source or "")
    line.recorded = entry is not None
    unreadable = citations.unreadable(list(entry.into) if entry else [])
    if unreadable:
        line.state = UNREADABLE
        line.detail = (
            f"{unreadable}, so whether memory still holds the note cannot be told; it stays "
            "staged until the file can be read"
        )
        return
    problem = citations.problem(
        line.note or "",
        list(entry.into) if entry else [],
        entry.pass_id if entry else "",
        recorded=entry is not None,
    )
    if problem:
        line.state = UNCITED
        again = "it is pending" if entry is None else "`cmem archive apply` makes it pending"
        line.detail = (
            f"memory no longer holds what it was converged into ({problem}), so it stays out of "
            f"the archive; {again} again and the next pass converges it anew (to keep it out of "
            "memory, give the note `converge: false`)"
        )


def _fill_target(vault: Vault, line: StagedLine, state) -> None:
    """The line's archive path: the one written on it, else the configured pattern's. A target
    that is not a Markdown path inside the archive layer — `..`, a dot-folder (`archive/.git/`),
    another layer, the checklist, a symbolic link or a file on the way — or a note whose name a
    step may not take as a path refuses the line: it is skipped with the reason, nothing is
    moved for it, and the other lines move (one bad note never stops the whole apply)."""
    if line.target:
        target = line.target.replace("\\", "/")  # a line edited on Windows
        where = f"the line's target {show_name(target)!r}"
    else:
        rel = line.source or f"{line.note}.md"
        date = line.pass_date
        entry = state.notes.get(line.source or "")
        if date is None and entry and entry.time[:10]:
            date = entry.time[:10]
        date = filing_date(line.note or "", "", None, date or datetime.now().date().isoformat())
        target = archive_target(vault.config.archive_dir, vault.config.archive_pattern, rel, date)
        where = f"its archive path {show_name(target)!r} (setting 'archive.pattern')"
    line.target = target
    source_problem = vault.path_problem(line.source, DIVERGENT) if line.source else None
    if source_problem:  # a backslash in its name: a separator where the vault may be synced
        line.state = REFUSED
        line.detail = (
            f"{line.source} {source_problem}; cmem cannot move it into the archive — rename the "
            "note (its line stays staged until then)"
        )
        return
    problem = vault.path_problem(target, ARCHIVE)
    if problem is None and not target.endswith(".md"):
        problem = "is not a Markdown file (.md)"
    if problem is None and fold_case(target) == fold_case(vault.checklist_rel):
        problem = "is the checklist itself"
    if problem is None:
        link = _link_on_the_way(vault, target)
        if link:
            problem = (
                f"goes through the symbolic link {link}, which could take the note out of the vault"
            )
    blocked = None if problem else _file_on_the_way(vault, target)
    if blocked:
        line.state = REFUSED
        line.detail = (
            f"{where} needs the folder {blocked}, which is a file; move that file away (the line "
            "stays staged until then)"
        )
        return
    if problem:
        line.state = REFUSED
        line.detail = (
            f"{where} {problem}; nothing is moved for this line — fix the target or delete the line"
        )


def _fill_state(vault: Vault, line: StagedLine, state) -> None:
    if line.source is None:
        line.state = MISSING
        if line.target and (vault.root / line.target).exists():
            line.detail = f"already archived at {line.target}; delete the line"
        else:
            line.detail = f"no note named {line.note!r} in the divergent layer (moved, renamed or archived by hand?)"
        return
    try:
        raw = read_regular(vault.root / line.source)
    except OSError as exc:
        line.state, line.detail = UNREADABLE, f"{line.source} {reason_of(exc)}; it stays staged"
        return
    digest = hashlib.sha256(raw).hexdigest()
    recorded = line.digest
    entry = state.notes.get(line.source)
    if recorded is None and entry is not None:
        recorded = entry.sha256  # a hand-edited line lost its digest: state.json has it
    if recorded is None:
        line.state, line.detail = (
            CHANGED,
            "no digest recorded for it, so cmem cannot tell it is unchanged; converge it to stage it again",
        )
    elif not digest.startswith(recorded):
        line.state, line.detail = (
            CHANGED,
            "edited since it was staged; the next pass will scan it again",
        )
    else:
        line.state = READY


# --- planning -------------------------------------------------------------------------------


def plan_archive(vault: Vault, all_lines: bool = False) -> ArchivePlan:
    """The moves `apply_archive` would make: ticked lines (every line with `all_lines`) whose
    note is ready. Changed, missing, unparsed and refused lines are skipped and stay staged."""
    text, checklist_bytes = read_checklist(vault)
    lines = _with_states(vault, parse_checklist(text))
    state_bytes = _read_bytes(vault.state_file)
    chosen = [line for line in lines if all_lines or line.ticked]
    plan = ArchivePlan(
        [],
        [],
        [line for line in lines if not (all_lines or line.ticked)],
        [],
        all_lines,
        checklist_bytes,
        state_bytes,
    )
    names = None
    taken: set[str] = set()
    moving: dict[str, ArchiveMove] = {}
    for line in chosen:
        source, staged = line.source, line.target  # a ready line has both (`_fill_state`)
        if line.state != READY or source is None or staged is None:
            plan.skipped.append(line)
            continue
        if source in moving:
            plan.duplicates.append(line)
            continue
        if names is None:
            names = _vault_note_names(vault)
        move = _plan_move(vault, line, source, staged, taken, names)
        taken.add(fold_case(move.target))
        moving[source] = move
        plan.moves.append(move)
    return plan


def _plan_move(
    vault: Vault,
    line: StagedLine,
    source: str,
    staged: str,
    taken: set[str],
    names: dict[str, list[str]],
) -> ArchiveMove:
    target = _unique_target(vault, staged, taken)
    move = ArchiveMove(line, source, target, staged)
    if line.detail:
        move.warnings.append(f"{line.note}: {line.detail}")
    note_name = source.rsplit("/", 1)[-1].removesuffix(".md")
    final_name = target.rsplit("/", 1)[-1].removesuffix(".md")
    if move.renamed:
        cited = _citing_files(vault, note_name)
        cited_text = f" (cited in {', '.join(cited)})" if cited else ""
        move.warnings.append(
            f"{staged} already exists, so {source} is archived as {target}: links [[{note_name}]]{cited_text} "
            f"will resolve to the older note; link this one as [[{final_name}]]"
        )
    elif final_name != note_name:
        move.warnings.append(
            f"the line renames {source} to {target}: links [[{note_name}]] will no longer resolve to it"
        )
    else:
        others = [rel for rel in names.get(note_name, []) if rel != source]
        if others:
            move.warnings.append(
                f"another note named {note_name!r} exists ({', '.join(others)}): Obsidian may resolve [[{note_name}]] to either"
            )
    return move


def _unique_target(vault: Vault, target: str, taken: set[str]) -> str:
    """`target`, or `name (2).md`, `name (3).md`… when a file (or an earlier move of this plan)
    holds it: an existing archive file is never overwritten."""
    folder, _, name = target.rpartition("/")
    stem = name.removesuffix(".md")
    candidate, number = target, 1
    while fold_case(candidate) in taken or os.path.lexists(vault.root / candidate):
        number += 1
        candidate = f"{folder}/{stem} ({number}).md" if folder else f"{stem} ({number}).md"
    return candidate


def _vault_note_names(vault: Vault) -> dict[str, list[str]]:
    """Name → paths of every Markdown file in the vault, managed or not: Obsidian resolves a
    wikilink against all of them."""
    names: dict[str, list[str]] = {}
    for folder, dirs, files in os.walk(vault.root):
        dirs[:] = [
            d
            for d in dirs
            if not d.startswith(".") and d not in NEVER_READ_DIRS and not is_undecodable(d)
        ]
        for name in files:
            if name.endswith(".md") and not is_undecodable(
                name
            ):  # no note's name: `doctor` names them
                rel = vault.rel(os.path.join(folder, name))
                names.setdefault(name[:-3], []).append(rel)
    return names


def _citing_files(vault: Vault, note_name: str) -> list[str]:
    """Memory files whose sources link this name: after a rename they point at the other note."""
    needle = f"[[{note_name}"
    found = []
    for note in vault.convergent_files():
        try:
            text = read_regular(note.path).decode("utf-8", errors="replace")
        except OSError:
            continue
        if needle in text and any(m.group(1).strip() == note_name for m in WIKILINK.finditer(text)):
            found.append(note.rel)
    return found


def _read_bytes(path) -> bytes | None:
    try:
        return read_regular(path)
    except FileNotFoundError:
        return None


# --- applying -------------------------------------------------------------------------------


def apply_archive(vault: Vault, plan: ArchivePlan, now: datetime | None = None) -> ArchiveResult:
    """Move the plan's notes into the archive, remove their lines from the checklist, move their
    state.json entries, and make one commit — one step (cmem.steps): journaled, all or none."""
    from cmem.steps.changes import ChangeSet
    from cmem.steps.runner import open_step

    if not plan.moves and not plan.pending_again:
        return ArchiveResult("nothing", plan)
    with open_step(
        vault, "archive", now=now
    ) as step:  # the user's ticks and edits get their own commit first
        _recheck(vault, plan)
        _recheck_citations(vault, plan)
        changes = ChangeSet()
        for move in plan.moves:
            changes.move(move.source, move.target, read_regular(vault.root / move.source))
        _rewrite_checklist_and_state(vault, plan, step, changes)
        commit = step.commit(changes, commit_message(plan, step.id))
    return ArchiveResult(
        "applied",
        plan,
        pass_id=step.id,
        commit=commit,
        snapshot_commit=step.snapshot,
        step_warnings=step.warnings,
    )


def _recheck(vault: Vault, plan: ArchivePlan) -> None:
    """Between the plan shown and the move: the checklist and every note must be as planned."""
    if _read_bytes(vault.checklist_path) != plan.checklist_bytes:
        raise CmemError(
            f"{vault.checklist_rel} changed since the plan was made; run `cmem archive apply` again."
        )
    if _read_bytes(vault.state_file) != plan.state_bytes:
        raise CmemError(
            f"{vault.rel(vault.state_file)} changed since the plan was made (a pass ran?); run `cmem archive apply` again."
        )
    for move in plan.moves:
        current = _read_bytes(vault.root / move.source)
        if current is None or not hashlib.sha256(current).hexdigest().startswith(
            _expected_digest(vault, move.line)
        ):
            raise CmemError(
                f"{move.source} changed since the plan was made; nothing was moved, run `cmem archive apply` again."
            )
        if os.path.lexists(vault.root / move.target):
            raise CmemError(
                f"{move.target} appeared since the plan was made; nothing was moved, run `cmem archive apply` again."
            )
        link = _link_on_the_way(vault, move.target)
        if link:
            raise CmemError(
                f"{move.target} goes through the symbolic link {link}; cmem never moves a note through a link, "
                "which could take it out of the vault. Nothing was moved."
            )


def _recheck_citations(vault: Vault, plan: ArchivePlan) -> None:
    """Inside the step (after any interrupted step was finished and the user's edits were
    committed): memory must still hold what every moving note was converged into, as on disk now;
    a note that became uncited meanwhile stops the step, and the next run refuses its line."""
    state = load_state(vault.state_file)
    citations = Citations(vault)
    for move in plan.moves:
        entry = state.notes.get(move.source)
        problem = citations.problem(
            move.line.note or "",
            list(entry.into) if entry else [],
            entry.pass_id if entry else "",
            recorded=entry is not None,
        )
        if problem:
            raise CmemError(
                f"{move.source}: memory changed since the plan was made ({problem}); nothing "
                "was moved, run `cmem archive apply` again."
            )


def _file_on_the_way(vault: Vault, target: str) -> str | None:
    """The first of the target's folders that exists as something other than a folder."""
    parts = target.split("/")[:-1]
    for end in range(1, len(parts) + 1):
        rel = "/".join(parts[:end])
        try:
            mode = os.lstat(vault.root / rel).st_mode
        except FileNotFoundError:
            return None  # made by the move
        except OSError:
            return rel
        if not stat.S_ISDIR(mode) and not stat.S_ISLNK(mode):  # a link: `_link_on_the_way`
            return rel
    return None


def _link_on_the_way(vault: Vault, target: str) -> str | None:
    """The first symbolic link among the target's folders (checked after resolving: the real
    folder must be inside the real archive folder, inside the real vault)."""
    current = vault.root
    for part in target.split("/")[:-1]:
        current = current / part
        if os.path.islink(current):
            return vault.rel(current)
    real_root = os.path.realpath(vault.root)
    real_folder = os.path.realpath((vault.root / target).parent)
    real_archive = os.path.realpath(vault.root / vault.config.archive_dir)
    inside = lambda path, folder: path == folder or path.startswith(folder + os.sep)
    if not (inside(real_archive, real_root) and inside(real_folder, real_archive)):
        return vault.config.archive_dir
    return None


def _expected_digest(vault: Vault, line: StagedLine) -> str:
    if line.digest:
        return line.digest
    entry = load_state(vault.state_file).notes.get(line.source or "")
    return entry.sha256 if entry else "-"  # "-" never prefixes a hex digest


def _rewrite_checklist_and_state(vault: Vault, plan: ArchivePlan, step, changes) -> None:
    from cmem.steps.record import StepRecord
    from cmem.vault.state_json import load_state as _load

    removed = {move.line.line_no for move in plan.moves} | {
        line.line_no for line in plan.duplicates
    }
    if removed:
        text, _ = read_checklist(vault)
        changes.write(
            vault.checklist_rel, remove_checklist_lines(text, removed), plan.checklist_bytes
        )
    state = _load(vault.state_file)
    for line in plan.pending_again:
        # memory no longer holds what it was converged into: pending again, converged anew
        if line.source is not None:
            state.notes.pop(line.source, None)
    for move in plan.moves:
        entry = state.notes.pop(move.source, None)
        if entry is not None:
            # The entry follows the note: a new note later written at the old path is a new note.
            state.notes[move.target] = entry
    record = StepRecord(
        step.id,
        "archive",
        step.now.isoformat(timespec="seconds"),
        notes=[m.source for m in plan.moves],
        changed=[m.target for m in plan.moves],
        warnings=len(plan.warnings),
        moves=[(m.source, m.target) for m in plan.moves],
    )
    state.passes.append(record.to_json())
    changes.write(vault.rel(vault.state_file), state_bytes(state), plan.state_bytes)


def commit_message(plan: ArchivePlan, pass_id: str):
    from cmem.steps.message import CommitMessage

    count = len(plan.moves)
    names = ", ".join(m.source.rsplit("/", 1)[-1].removesuffix(".md") for m in plan.moves)
    again = plan.pending_again
    if count:
        subject = f"cmem: archive {count} note{'s' if count != 1 else ''} → {names}"
    else:
        subject = (
            f"cmem: archive nothing; {len(again)} note{'s' if len(again) != 1 else ''} pending "
            "again → " + ", ".join((line.note or "") for line in again)
        )
    message = CommitMessage(subject, pass_id)
    for move in plan.moves:
        message.add("Archived", f"{move.source} → {move.target}")
    for line in again:
        message.add("Pending-again", f"{line.source} (memory no longer cites it)")
    for skipped in plan.skipped:
        message.add("Skipped", f"{skipped.note} ({skipped.state}: {skipped.detail})")
    for warning in plan.warnings:
        message.add("Warning", warning)
    return message
