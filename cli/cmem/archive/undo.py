"""`cmem undo`: revert the last cmem step — a pass or an archive apply — as a new commit.

Undo works like a stack: each run reverts the newest cmem commit that is not itself an undo and
has not been undone yet, so running it twice steps back two passes. (Redo is `git revert` of the
undo commit.)

Why not a plain `git revert`: every pass appends to `state.json` and the archive checklist, so a
textual revert of an older pass conflicts on those two files as soon as anything came after it.
cmem reverts them by meaning instead — the pass's state entries go back to what they were, its
staged lines leave the checklist, lines it removed come back — and reverts every other file exactly
as `git revert` would, refusing when a later commit changed the same file (unless `--force`, which
merges three ways and still refuses on overlapping edits). The commit says `This reverts commit …`
and carries `Cmem-Undoes: <sha>`. Files the pass created are removed from the working tree; their
bytes stay in git, in the commit being reverted.
"""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from cmem.errors import CmemError, GitError
from cmem.regular_files import read_regular, reason_of
from cmem.steps import commits as history
from cmem.steps.changes import in_line_ends, same_text
from cmem.steps.pass_log import (
    STATE_REL,
    CmemCommit,
    FileChange,
    list_cmem_commits,
    read_blob,
    read_object,
)
from cmem.vault.layers import Vault

# what undo does to a file: put the old bytes back, remove what the step created, move a note
# the step archived back, merge three ways (--force), or keep what was edited since
UndoAction = Literal["restore", "remove", "move-back", "merge", "keep"]
UndoStatus = Literal["undone", "nothing"]


@dataclass
class FileUndo:
    """What undo does to one file of the reverted commit."""

    action: UndoAction
    path: str  # the path the file ends at (for move-back: the original path)
    from_path: str | None = None  # move-back: where it is now
    detail: str = ""
    new_bytes: bytes | None = None  # restore / merge / move-back content

    def to_json(self) -> dict:
        return {
            "action": self.action,
            "path": self.path,
            "from": self.from_path,
            "detail": self.detail,
        }


@dataclass
class UndoPlan:
    target: CmemCommit | None
    files: list[FileUndo] = field(default_factory=list)
    later: dict[str, list[str]] = field(
        default_factory=dict
    )  # path → later commits that changed it
    blocked: list[str] = field(default_factory=list)  # reasons --force cannot override
    force: bool = False
    current: dict[str, bytes | None] = field(default_factory=dict)  # bytes read for the plan

    @property
    def refused(self) -> bool:
        return bool(self.blocked) or (bool(self.later) and not self.force)

    @property
    def reasons(self) -> list[str]:
        reasons = list(self.blocked)
        if self.later and not self.force:
            for path, commits in self.later.items():
                reasons.append(f"{path} was changed after it by {', '.join(commits)}")
        return reasons

    def to_json(self) -> dict:
        target = self.target
        return {
            "target": target.to_json() if target else None,
            "files": [f.to_json() for f in self.files],
            "refused": self.refused,
            "reasons": self.reasons,
            "later": self.later,
            "force": self.force,
        }


@dataclass
class UndoResult:
    status: UndoStatus
    plan: UndoPlan
    pass_id: str | None = None
    commit: str | None = None
    warnings: list[str] = field(default_factory=list)  # files the step's snapshot left out

    def to_json(self) -> dict:
        data = self.plan.to_json()
        data.update(
            {
                "status": self.status,
                "pass": self.pass_id,
                "commit": self.commit,
                "warnings": self.warnings,
            }
        )
        return data


# --- planning -------------------------------------------------------------------------------


def find_undo_target(vault: Vault) -> CmemCommit | None:
    """The newest step to undo. A capture is not one: it wrote the user's own words from a
    transcript (a hook makes one after every session), and `undo` means the last pass."""
    for commit in list_cmem_commits(vault):
        # an undo is taken back by `git revert`; a repair put a file back as git had it; a capture
        # is the user's own words, never undone with a pass
        if commit.kind not in ("undo", "repair", "capture") and commit.undone_by is None:
            return commit
    return None


def plan_undo(vault: Vault, force: bool = False) -> UndoPlan:
    """What undoing the last cmem step would do, and whether it is refused (and why)."""
    operation = history.operation_in_progress(vault.root)
    if operation:
        raise GitError(
            f"{operation} is in progress in {vault.root}; finish or abort it before undoing."
        )
    target = find_undo_target(vault)
    plan = UndoPlan(target, force=force)
    if target is None:
        return plan
    parent = f"{target.sha}^"
    if (
        history.run_git(vault.root, "rev-parse", "--verify", "-q", parent, check=False).returncode
        != 0
    ):
        plan.blocked.append(_no_parent(vault, target))
        return plan
    wrote = _step_wrote(vault, target)
    for change in target.files:
        if change.path in (STATE_REL, vault.checklist_rel):
            continue
        _plan_file(vault, plan, target, change, wrote)
    _find_later_commits(vault, plan, target)
    return plan


def _no_parent(vault: Vault, target: CmemCommit) -> str:
    """Why the step's commit has no parent to go back to: a shallow clone cut its history
    there, or it is the repository's first commit."""
    shallow = history.run_git(vault.root, "rev-parse", "--is-shallow-repository", check=False)
    if shallow.stdout.strip() == "true":
        return (
            f"the commit before {target.short} is not in this clone: its history is shallow (a "
            "`git clone --depth`); run `git fetch --unshallow` (or `git fetch --deepen=10`) in "
            "the vault, then undo again"
        )
    return f"{target.short} is the first commit of the repository; there is nothing before it to go back to"


def _step_wrote(vault: Vault, target: CmemCommit) -> dict[str, str | None] | None:
    """What the step wrote, by path (the blob, None: removed), as state.json in its own commit
    records it. A pass of an older cmem recorded only the files it changed: their blob is ""
    (unknown). None: no record, and the commit is taken as all the step's own."""
    data = read_blob(vault, target.sha, STATE_REL)
    try:
        passes = json.loads(data.decode("utf-8")).get("passes") if data else None
    except (ValueError, UnicodeDecodeError, AttributeError):
        return None
    for entry in passes if isinstance(passes, list) else []:
        if isinstance(entry, dict) and entry.get("id") == target.pass_id:
            wrote, changed = entry.get("wrote"), entry.get("changed")
            if isinstance(wrote, dict) and wrote:
                return dict(wrote)
            if entry.get("kind") == "converge" and isinstance(changed, list) and changed:
                return {str(rel): "" for rel in changed}
    return None


@dataclass(frozen=True)
class _FileVersions:
    """One file of the step's commit: before and after the step, at HEAD, on disk now, and what
    the step itself wrote (differing from `after` when an amend folded the user's edits in)."""

    before: bytes | None
    after: bytes | None
    head: bytes | None
    disk: bytes | None
    step_after: bytes | None
    amended: bool

    @property
    def changed_since(self) -> bool:
        return self.head != self.after


def _plan_file(
    vault: Vault,
    plan: UndoPlan,
    target: CmemCommit,
    change: FileChange,
    wrote: dict[str, str | None] | None,
) -> None:
    after_path = change.path
    if wrote is not None and after_path not in wrote:
        # the commit was amended with an edit of the user's: that is theirs, not the step's
        plan.files.append(
            FileUndo("keep", after_path, detail="not written by the step (amended into its commit)")
        )
        return
    versions = _file_versions(vault, plan, target, change, wrote)
    if versions is None:
        return  # _file_versions recorded why
    if versions.changed_since:
        plan.later.setdefault(after_path, [])
    if change.status == "A":
        _undo_created(plan, after_path, versions)
    elif change.status == "D":
        _undo_removed(plan, after_path, versions)
    else:
        _undo_changed(vault, plan, change, versions)


def _file_versions(
    vault: Vault,
    plan: UndoPlan,
    target: CmemCommit,
    change: FileChange,
    wrote: dict[str, str | None] | None,
) -> _FileVersions | None:
    """The file's versions, or None (with the reason in `plan.blocked`) when it cannot be undone:
    unreadable, edited and not committed, or amended past what git still holds."""
    after_path = change.path
    before_path = change.old_path or change.path
    before = read_blob(vault, f"{target.sha}^", before_path) if change.status != "A" else None
    after = read_blob(vault, target.sha, after_path) if change.status != "D" else None
    head_after = read_blob(vault, "HEAD", after_path)
    try:
        now_after = _disk(vault, after_path)
    except OSError as exc:
        plan.blocked.append(_unreadable(after_path, exc))
        return None
    plan.current[after_path] = now_after
    if not same_text(now_after, head_after):
        plan.blocked.append(
            f"{after_path} has changes that are not committed yet; commit or stash them, then undo"
        )
        return None
    # what the step wrote, where an amend folded the user's edits into the same file: those edits
    # are kept as later ones are, and only the step's change is taken back
    step_after, amended = after, False
    written = (wrote or {}).get(after_path)
    if written and after is not None:
        step_after = read_object(vault, written)
        if step_after is None:
            plan.blocked.append(
                f"{after_path}: the step's commit was amended and git no longer has what the step "
                "wrote; undo it by hand"
            )
            return None
        amended = step_after != after
    return _FileVersions(before, after, head_after, now_after, step_after, amended)


def _undo_created(plan: UndoPlan, path: str, versions: _FileVersions) -> None:
    """A file the step created goes, unless someone has edited it since."""
    if versions.amended:
        plan.files.append(
            FileUndo("keep", path, detail="created by the step, edited in an amend: kept")
        )
    elif versions.changed_since:
        plan.files.append(
            FileUndo("keep", path, detail="created by the pass and edited since: kept")
        )
    else:
        plan.files.append(
            FileUndo("remove", path, detail="created by the pass (its text stays in git)")
        )


def _undo_removed(plan: UndoPlan, path: str, versions: _FileVersions) -> None:
    """A file the step removed comes back, unless it has been written again since."""
    if versions.disk is not None:
        plan.files.append(
            FileUndo("keep", path, detail="removed by the pass and written again since: kept")
        )
    else:
        plan.files.append(FileUndo("restore", path, new_bytes=versions.before))


def _undo_changed(
    vault: Vault, plan: UndoPlan, change: FileChange, versions: _FileVersions
) -> None:
    """A file the step changed (or moved) goes back, merged with the edits made since."""
    after_path = change.path
    before_path = change.old_path or change.path
    now_after, head_after = versions.disk, versions.head
    ours = (
        head_after if now_after is not None and head_after is not None else now_after
    )  # line ends aside
    merged = versions.changed_since or versions.amended
    content = (
        versions.before
        if not merged
        else _merge3(vault, ours, versions.step_after, versions.before, after_path, plan)
    )
    if content is None and merged:
        return  # _merge3 recorded why
    if content is not None and now_after is not None:
        content = in_line_ends(content, now_after)  # written back in the file's own line ends
    if change.status in "RC" and before_path != after_path:
        _undo_move(vault, plan, before_path, after_path, content, merged)
        return
    plan.files.append(
        FileUndo(
            "merge" if merged else "restore",
            after_path,
            new_bytes=content,
            detail="keeping the edits amended into its commit" if versions.amended else "",
        )
    )


def _undo_move(
    vault: Vault,
    plan: UndoPlan,
    before_path: str,
    after_path: str,
    content: bytes | None,
    merged: bool,
) -> None:
    """A note the step moved (archived) goes back to its old path, if that path is free."""
    try:
        now_before = _disk(vault, before_path)
    except OSError as exc:
        plan.blocked.append(_unreadable(before_path, exc))
        return
    plan.current[before_path] = now_before
    if now_before is not None:
        plan.blocked.append(
            f"{before_path} exists again; move it away, then undo (the archived note would go back there)"
        )
        return
    plan.files.append(
        FileUndo(
            "move-back",
            before_path,
            after_path,
            new_bytes=content,
            detail="merged with later edits" if merged else "",
        )
    )


def _merge3(
    vault: Vault,
    ours: bytes | None,
    base: bytes | None,
    theirs: bytes | None,
    path: str,
    plan: UndoPlan,
) -> bytes | None:
    """The later edits (ours) kept, the pass's change (base → theirs) taken back: `git merge-file`."""
    if ours is None or base is None or theirs is None:
        plan.blocked.append(f"{path} was removed or created since; undo it by hand")
        return None
    with tempfile.TemporaryDirectory(prefix="cmem-undo-") as folder:
        names = []
        for label, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            name = os.path.join(folder, label)
            with open(name, "wb") as handle:
                handle.write(data)
            names.append(name)
        result = subprocess.run(
            ["git", *history.SAFE_GIT_OPTIONS, "merge-file", "-p", *names], capture_output=True
        )
    if result.returncode != 0:
        plan.blocked.append(
            f"{path}: the later edits overlap the lines the pass changed; even --force cannot undo it cleanly"
        )
        return None
    return result.stdout


def _find_later_commits(vault: Vault, plan: UndoPlan, target: CmemCommit) -> None:
    if not plan.later:
        return
    for path in plan.later:
        result = history.run_git(
            vault.root,
            "--literal-pathspecs",
            "log",
            "--format=%h %s",
            f"{target.sha}..HEAD",
            "--",
            path,
            check=False,
        )
        plan.later[path] = [
            line.strip() for line in result.stdout.splitlines() if line.strip()
        ] or ["a later commit"]


def _disk(vault: Vault, rel: str) -> bytes | None:
    """The file's bytes, None when there is none (an `OSError` when it cannot be read)."""
    try:
        return read_regular(vault.root / rel)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def _unreadable(rel: str, exc: OSError) -> str:
    return (
        f"{rel} {reason_of(exc)}, so whether it changed since cannot be told; make it readable, "
        "then undo"
    )


# --- state.json and the checklist, reverted by meaning ----------------------------------------


def revert_state(
    current: bytes | None, after: bytes | None, before: bytes | None, target_pass: str, entry: dict
) -> bytes:
    """Notes whose entry the step changed, and that nothing changed since, get their old entry
    back (or none: the note is pending again); the step's pass record goes; the undo is recorded."""
    from cmem.vault.state_json import ConvergedNote, State, state_bytes

    def load(data):
        try:
            return json.loads(data.decode("utf-8")) if data else {}
        except (ValueError, UnicodeDecodeError):
            raise CmemError(
                f"{STATE_REL} is not valid JSON; restore it from git, then undo."
            ) from None

    now, then, old = load(current), load(after), load(before)
    notes = dict(now.get("notes") or {})
    old_notes, then_notes = old.get("notes") or {}, then.get("notes") or {}
    for rel in set(old_notes) | set(then_notes):
        if old_notes.get(rel) == then_notes.get(rel) or notes.get(rel) != then_notes.get(rel):
            continue  # untouched by the step, or changed again since: the later word stands
        if rel in old_notes:
            notes[rel] = old_notes[rel]
        else:
            notes.pop(rel, None)
    passes = [p for p in (now.get("passes") or []) if p.get("id") != target_pass] + [entry]
    state = State(passes=passes)
    for rel, data in notes.items():
        try:
            state.notes[rel] = ConvergedNote.from_json(data)
        except (KeyError, TypeError, AttributeError, ValueError):
            raise CmemError(
                f"{STATE_REL}: the entry for {rel!r} is malformed; run `cmem doctor`."
            ) from None
    return state_bytes(state)


def revert_checklist(current: str, after: str, before: str | None) -> str | None:
    """The checklist with the step's staged lines and headings taken out and the lines it removed
    put back (under their heading). Staged lines are matched by note and digest, so a line the
    user has ticked or reformatted since still counts as the same line. None: the file should not
    exist (the step created it and nothing changed since)."""
    from cmem.archive.checklist import _SECTION, parse_checklist, remove_checklist_lines

    if current == after:
        return before
    before_lines, after_lines = (before or "").split("\n"), after.split("\n")
    after_staged = {line.line_no: line for line in parse_checklist(after)}
    before_staged = {line.line_no: line for line in parse_checklist(before or "")}
    added_notes: list[tuple[str | None, str | None]] = []  # (note, digest) of each line staged
    added_headings: list[str] = []
    removed: list[
        tuple[str | None, str, str | None]
    ] = []  # (heading, line, note) of each line removed
    matcher = difflib.SequenceMatcher(None, before_lines, after_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("insert", "replace"):
            for j in range(j1, j2):
                if j + 1 in after_staged:
                    added_notes.append((after_staged[j + 1].note, after_staged[j + 1].digest))
                elif _SECTION.match(after_lines[j].strip()):
                    added_headings.append(after_lines[j].strip())
        if tag in ("delete", "replace"):
            for i in range(i1, i2):
                if i + 1 in before_staged:
                    removed.append(
                        (
                            _heading_before(before_lines, i),
                            before_lines[i],
                            before_staged[i + 1].note,
                        )
                    )
    lines = current.split("\n")
    drop: set[int] = set()
    current_staged = parse_checklist(current)
    for note, digest in added_notes:
        match = next(
            (
                s
                for s in current_staged
                if s.line_no not in drop and s.note == note and s.digest == digest
            ),
            None,
        )
        if match is not None:
            drop.add(match.line_no)
    for heading in added_headings:
        index = next(
            (i for i, line in enumerate(lines) if line.strip() == heading and i + 1 not in drop),
            None,
        )
        if index is not None:
            drop.add(index + 1)
    lines = [line for number, line in enumerate(lines, start=1) if number not in drop]
    still_staged = {s.note for s in current_staged if s.line_no not in drop}
    for under, line, note in removed:
        if note not in still_staged:
            _insert_under(lines, under, line)
            still_staged.add(note)
    return remove_checklist_lines("\n".join(lines), set())


def _heading_before(lines: list[str], index: int) -> str | None:
    for i in range(index, -1, -1):
        if lines[i].startswith("## "):
            return lines[i]
    return None


def _insert_under(lines: list[str], heading: str | None, line: str) -> None:
    if heading and heading in lines:
        position = lines.index(heading) + 1
        while position < len(lines) and not lines[position].startswith("#"):
            position += 1
        while position > 0 and not lines[position - 1].strip():
            position -= 1
        lines.insert(position, line)
        return
    while lines and not lines[-1].strip():
        lines.pop()
    lines.extend(["", heading or "## restored by cmem undo", line, ""])


# --- applying -------------------------------------------------------------------------------


def check_undo(plan: UndoPlan) -> None:
    """Raise the refusal, with its reasons, as one message."""
    if plan.target is not None and plan.refused:
        hint = (
            "" if plan.blocked else " (--force keeps those changes and takes back only this step's)"
        )
        raise CmemError(f"cannot undo {plan.target.short}: " + "; ".join(plan.reasons) + hint + ".")


def apply_undo(vault: Vault, plan: UndoPlan, now: datetime | None = None) -> UndoResult:
    """Revert the plan's step as one step of its own (cmem.steps): journaled, all or none, one
    commit carrying `Cmem-Undoes: <sha>`."""
    from cmem.steps.changes import ChangeSet
    from cmem.steps.record import StepRecord
    from cmem.steps.runner import open_step

    if plan.target is None:
        return UndoResult("nothing", plan)
    check_undo(plan)
    target = plan.target
    with open_step(vault, "undo", now=now) as step:
        latest = find_undo_target(vault)
        if latest is None or latest.sha != target.sha:
            raise CmemError("another cmem commit was made since the plan; run `cmem undo` again.")
        changes = ChangeSet()
        for item in plan.files:
            if item.action in ("restore", "merge"):
                changes.write(item.path, item.new_bytes or b"", plan.current.get(item.path))
            elif item.action == "move-back":
                changes.write(item.path, item.new_bytes or b"", None)
                if item.from_path is not None:  # always, for a move back
                    changes.remove(item.from_path, plan.current.get(item.from_path))
            elif item.action == "remove":
                changes.remove(item.path, plan.current.get(item.path))
        touched = [i.path for i in plan.files if i.action != "keep"] + [
            i.from_path for i in plan.files if i.from_path
        ]
        record = StepRecord(
            step.id,
            "undo",
            step.now.isoformat(timespec="seconds"),
            notes=target.notes,
            changed=sorted(set(touched)),
            undoes=target.pass_id,
            commit=target.sha,
        )
        state_now = _disk(vault, STATE_REL)
        after = read_blob(vault, target.sha, STATE_REL)
        changes.write(
            STATE_REL,
            revert_state(
                _state_base(vault, state_now, after),
                after,
                read_blob(vault, f"{target.sha}^", STATE_REL),
                target.pass_id,
                record.to_json(),
            ),
            state_now,
        )
        _plan_checklist(vault, target, changes)
        commit = step.commit(changes, undo_message(target, plan, step.id))
    return UndoResult("undone", plan, pass_id=step.id, commit=commit, warnings=step.warnings)


def _state_base(vault: Vault, state_now: bytes | None, after: bytes | None) -> bytes | None:
    """The state the undo is made on: the working copy, unless it is missing, empty or broken —
    then never a state built from nothing (every converged note would be pending again), but
    git's: HEAD's copy when valid, else the one the undone step wrote. (A broken working copy
    git still has a valid copy of never gets here: the step's snapshot refuses it first.)"""
    from cmem.steps.state_file import problem

    if problem(state_now) is None:
        return state_now
    head = read_blob(vault, "HEAD", STATE_REL)
    return head if problem(head) is None else after


def _plan_checklist(vault: Vault, target: CmemCommit, changes) -> None:
    """Adds the checklist's new text (or its removal) to `changes`."""
    if not any(change.path == vault.checklist_rel for change in target.files):
        return
    decode = lambda data: None if data is None else data.decode("utf-8", "replace")
    current_bytes = _disk(vault, vault.checklist_rel)
    after = decode(read_blob(vault, target.sha, vault.checklist_rel)) or ""
    before = decode(read_blob(vault, f"{target.sha}^", vault.checklist_rel))
    text = revert_checklist(decode(current_bytes) or "", after, before)
    if text is None:
        changes.remove(vault.checklist_rel, current_bytes)
    else:
        changes.write(vault.checklist_rel, text, current_bytes)


def undo_message(target: CmemCommit, plan: UndoPlan, undo_id: str):
    from cmem.steps.message import CommitMessage

    what = target.subject.removeprefix("cmem: ").strip() or target.pass_id
    message = CommitMessage(
        f"cmem: undo {what}",
        undo_id,
        undoes=target.sha,
        preamble=f"This reverts commit {target.sha} (pass {target.pass_id}).",
    )
    labels = {
        "restore": "Restored",
        "merge": "Restored (merged with later edits)",
        "remove": "Removed",
        "keep": "Kept",
    }
    for item in plan.files:
        if item.action == "move-back":
            message.add("Moved back", f"{item.from_path} → {item.path}")
        else:
            message.add(
                labels[item.action],
                item.path + (f" ({item.detail})" if item.detail and item.action == "keep" else ""),
            )
    return message
