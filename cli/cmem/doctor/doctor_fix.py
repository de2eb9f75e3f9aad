"""What an interrupted run can leave behind, and `cmem doctor --fix` to repair it (issue 6).

- a step journal: a pass, archive apply or undo killed between its first change and its commit;
  the journal's own recovery rolls it forward or back (`cmem.steps.journal.recover`, which every
  writing command also runs first);
- an archive apply of cmem 0.1, which had no journal: notes moved into the archive (staged with
  `git mv`) but the checklist, state.json or the commit not done; the repair finishes it — the
  user confirmed those moves when they ran `cmem archive apply` — and commits them as that apply
  would have;
- git lock files (`index.lock`, `HEAD.lock`, a branch's `.lock`) left by a killed git: removed
  only when no git process is running and the file is older than a few minutes, so a lock a live
  git (obsidian-git, an editor) holds is never taken away;
- a search index (`cmem recall`) that SQLite cannot read: deleted and built again from the notes
  (it is a cache; a search would do the same on its own).

cmem's own pass lock is an `flock`: the kernel releases it when its holder dies, so it cannot go
stale and needs no repair (`cmem doctor` says who holds it).

`find_leftovers` only reads; `repair_leftovers` changes the vault, holding the pass lock.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal

from cmem.errors import CmemError
from cmem.steps import commits as history
from cmem.vault.layers import DIVERGENT, Vault

# A git lock file older than this, with no git process running, was left by a killed git.
STALE_GIT_LOCK_SECONDS = 300

# what is left: a step's journal, one set aside (another copy's), an interrupted archive apply,
# a dead git's lock, a damaged search index, a damaged state.json
LeftoverKind = Literal["journal", "set-aside", "archive", "git-lock", "index", "state"]
_GIT_LOCKS = ("index.lock", "HEAD.lock", "config.lock", "packed-refs.lock", "shallow.lock")


@dataclass
class Leftover:
    kind: LeftoverKind
    message: str  # what is wrong, one sentence naming the file
    action: str | None  # what `--fix` does; None: nothing to do safely (yet)
    path: str | None = None
    moves: list[tuple[str, str]] = field(default_factory=list)  # archive: (from, to)
    pass_id: str | None = None  # archive: the interrupted apply's id, when state.json has it
    scope: str | None = None  # index: convergent | archive

    @property
    def fixable(self) -> bool:
        return self.action is not None

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "message": self.message,
            "action": self.action,
            "path": self.path,
        }


def find_leftovers(vault: Vault) -> list[Leftover]:
    found: list[Leftover] = []
    found += _journals(vault)
    found += _interrupted_archive(vault)
    found += _git_locks(vault)
    found += _state_file(vault)
    found += _indexes(vault)
    return found


def repair_leftovers(
    vault: Vault, leftovers: list[Leftover], now: datetime | None = None
) -> list[str]:
    """Repair the fixable leftovers; returns one line per repair done."""
    from cmem.steps import journal, preflight
    from cmem.steps.lock import vault_lock

    done: list[str] = []
    with vault_lock(vault.machine_dir, "doctor --fix"):
        # git's own locks first: recovering a step commits, and a dead git's index.lock blocks that
        for leftover in leftovers:
            if leftover.kind == "git-lock" and leftover.fixable and leftover.path is not None:
                done.append(_remove_git_lock(vault, Path(leftover.path)))
        archives = [item for item in leftovers if item.kind == "archive" and item.fixable]
        if journal.pending_journals(vault) or archives:
            preflight.check_repository(
                vault
            )  # a detached HEAD or a merge in progress: refuse, naming it
        done += [str(recovery) for recovery in journal.recover(vault)]
        for leftover in archives:
            done.append(_finish_archive(vault, leftover, now or datetime.now().astimezone()))
    if any(item.kind == "state" and item.fixable for item in leftovers):
        done.append(restore_state(vault, now))  # a step of its own: it takes the lock itself
    for leftover in leftovers:
        if leftover.kind != "index" or leftover.scope is None:
            continue
        from cmem.reading.search_index import rebuild_index

        report = rebuild_index(vault, leftover.scope)
        done.append(
            f"rebuilt the {leftover.scope} search index from the notes ({report.files} files, {report.rows} statements)"
        )
    return done


def _indexes(vault: Vault) -> list[Leftover]:
    from cmem.reading.search_index import SCOPES, index_file, index_problem

    found = []
    for scope in SCOPES:
        problem = index_problem(vault, scope)
        if problem:
            found.append(
                Leftover(
                    "index",
                    f"the {scope} search index {index_file(vault, scope)} {problem}",
                    "delete it and build it again from the notes",
                    path=str(index_file(vault, scope)),
                    scope=scope,
                )
            )
    return found


# --- step journals ------------------------------------------------------------------------------


def _journals(vault: Vault) -> list[Leftover]:
    from cmem.steps import journal
    from cmem.steps.record import a_step

    found = []
    for folder in journal.pending_journals(vault):
        kind, step_id = journal.describe(folder)
        foreign = journal.foreign_journal(vault, folder)
        if foreign:
            found.append(
                Leftover(
                    "journal",
                    f"{a_step(kind)} was interrupted (step {step_id}, journal {folder}), but {foreign}",
                    "sets it aside, never applied (the next command that writes does too)",
                    str(folder),
                )
            )
            continue
        found.append(
            Leftover(
                "journal",
                f"{a_step(kind)} was interrupted before it finished (step {step_id}, journal {folder})",
                "finishes it, or puts every file back if you edited one since",
                str(folder),
            )
        )
    for kind, step_id, folder in journal.set_aside_journals(vault):
        found.append(
            Leftover(
                "set-aside",
                f"the journal of {a_step(kind)} {step_id} was set aside, not applied: it belongs "
                f"to another copy of this vault or to history this branch no longer has; it is "
                f"kept in {folder} — read it, then delete the folder",
                None,
                str(folder),
            )
        )
    return found


# --- state.json ---------------------------------------------------------------------------------


def _state_file(vault: Vault) -> list[Leftover]:
    """A state.json missing where git has it, empty or broken (cmem.steps.state_file)."""
    from cmem.steps.state_file import restorable, working_problem

    try:
        found = working_problem(vault)
    except CmemError:
        return []
    if not found:
        return []
    source = restorable(vault)
    where = None if source is None else ("HEAD" if source[0] == "HEAD" else source[0][:12])
    return [
        Leftover(
            "state",
            f"{vault.rel(vault.state_file)} {found}",
            None if where is None else f"restores it from git ({where})",
            vault.rel(vault.state_file),
        )
    ]


def restore_state(vault: Vault, now=None) -> str:
    """`cmem doctor --fix`: state.json back from git, as a step (journaled, all or nothing,
    committed when HEAD does not hold these bytes). Returns what was done, in words."""
    from cmem.steps.changes import ChangeSet, current_bytes
    from cmem.steps.message import CommitMessage
    from cmem.steps.runner import open_step
    from cmem.steps.state_file import STATE_REL, restorable, working_problem

    with open_step(vault, "repair", now=now, snapshot=False) as step:
        found = working_problem(vault)
        source = restorable(vault)
        if not found or source is None:
            return f"{STATE_REL} needs nothing restored"
        changes = ChangeSet()
        changes.write(STATE_REL, source[1], current_bytes(vault.state_file))
        where = "HEAD" if source[0] == "HEAD" else f"commit {source[0][:12]}"
        message = CommitMessage(
            f"cmem: restore {STATE_REL} from {where}",
            step.id,
            preamble=f"Restored by `cmem doctor --fix`: the working copy {found}.",
        )
        commit = step.commit(changes, message)
    done = f"restored {STATE_REL} from {where} (it {found})"
    return done + (f", commit {commit[:8]}" if commit else "")


# --- git lock files ------------------------------------------------------------------------------


def _git_locks(vault: Vault) -> list[Leftover]:
    try:
        git_dir = history.git_dir(vault.root)
    except CmemError:
        return []
    locks = [git_dir / name for name in _GIT_LOCKS] + sorted((git_dir / "refs").glob("**/*.lock"))
    found = []
    running = None
    for lock in locks:
        try:
            age = time.time() - lock.stat().st_mtime
        except OSError:
            continue
        if running is None:
            running = git_processes(git_dir.parent)
        minutes = f"{age / 60:.0f} min old" if age >= 60 else f"{age:.0f} s old"
        if running:
            found.append(
                Leftover(
                    "git-lock",
                    f"{lock} exists ({minutes}) and a git process is running (pid {running[0]}); "
                    "it is probably that git's — wait for it",
                    None,
                    str(lock),
                )
            )
        elif age < STALE_GIT_LOCK_SECONDS:
            found.append(
                Leftover(
                    "git-lock",
                    f"{lock} exists ({minutes}); no git process is running — if it is still there "
                    f"in {STALE_GIT_LOCK_SECONDS // 60} minutes, a killed git left it",
                    None,
                    str(lock),
                )
            )
        else:
            found.append(
                Leftover(
                    "git-lock",
                    f"{lock} was left by a git that was killed ({minutes}, no git process is running)",
                    "removes it",
                    str(lock),
                )
            )
    return found


def git_processes(repository: Path) -> list[int]:
    """Pids of running git processes that may be working in `repository`: those whose working
    folder is inside it (git moves there for `-C`), and any whose folder cannot be read. Without
    /proc (macOS), every git process counts: a lock is never worth a guess."""
    pids = []
    if os.path.isdir("/proc/self"):
        top = os.path.realpath(repository)
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == os.getpid():
                continue
            try:
                comm = Path(f"/proc/{name}/comm").read_text().strip()
            except OSError:
                continue
            if not (comm == "git" or comm.startswith("git-")):
                continue
            try:
                cwd = os.path.realpath(os.readlink(f"/proc/{name}/cwd"))
            except (FileNotFoundError, ProcessLookupError):
                continue  # it ended between the two reads: it holds no lock now
            except OSError:
                cwd = top  # cannot tell (another user's process): assume it is ours
            if cwd == top or cwd.startswith(top + os.sep):
                pids.append(int(name))
        return pids
    import subprocess

    listed = subprocess.run(["ps", "-axo", "pid=,comm="], capture_output=True, text=True).stdout
    for line in listed.splitlines():
        pid, _, comm = line.strip().partition(" ")
        base = comm.strip().rsplit("/", 1)[-1]
        if pid.isdigit() and (base == "git" or base.startswith("git-")):
            pids.append(int(pid))
    return pids


def _remove_git_lock(vault: Vault, lock: Path) -> str:
    if git_processes(history.git_dir(vault.root).parent):
        return f"kept {lock}: a git process started meanwhile"
    try:
        age = time.time() - lock.stat().st_mtime
    except FileNotFoundError:
        return f"{lock} is gone already"
    if age < STALE_GIT_LOCK_SECONDS:
        return f"kept {lock}: it was touched again"
    os.unlink(lock)
    return f"removed {lock}, left by a killed git"


# --- an interrupted archive apply ----------------------------------------------------------------


def _interrupted_archive(vault: Vault) -> list[Leftover]:
    """Notes moved into the archive and not committed, that a checklist line or state.json's
    last (uncommitted) archive entry says cmem moved. A note moved there by hand is not ours."""
    from cmem.archive.gate import MISSING, list_staged
    from cmem.steps import journal
    from cmem.vault.state_json import load_state

    if journal.pending_journals(vault):
        return []  # an archive apply with a journal: the journal's recovery finishes it
    try:
        state = load_state(vault.state_file)
    except CmemError:
        return []
    archive_dir = vault.config.archive_dir.rstrip("/") + "/"
    pending_pass = None
    last = state.passes[-1] if state.passes else None
    if (
        last
        and last.get("kind") == "archive"
        and history.find_pass_commit(vault.root, last["id"]) is None
    ):
        pending_pass = last
    claimed = {(m["from"], m["to"]) for m in (pending_pass or {}).get("moves", [])}
    staged = {
        line.target: line for line in list_staged(vault) if line.state == MISSING and line.target
    }
    moves = []
    for source, target in _staged_renames(vault) + _untracked_moves(vault, staged, state):
        if not target.startswith(archive_dir) or vault.layer_of(source) != DIVERGENT:
            continue
        if (source, target) in claimed or target in staged:
            moves.append((source, target))
    if pending_pass and not moves:
        moves = sorted(claimed)  # moved and listed, the commit is what is missing
    if not moves:
        return []
    shown = ", ".join(f"{source} → {target}" for source, target in moves[:5]) + (
        " …" if len(moves) > 5 else ""
    )
    return [
        Leftover(
            "archive",
            f"an archive apply was interrupted: {len(moves)} note{'s' if len(moves) != 1 else ''} moved "
            f"but not committed ({shown})",
            "finishes it: removes their checklist lines, updates state.json and commits the moves",
            vault.checklist_rel,
            moves,
            pending_pass["id"] if pending_pass else None,
        )
    ]


def _staged_renames(vault: Vault) -> list[tuple[str, str]]:
    result = history.run_git(
        vault.root, "diff", "--cached", "-M", "--name-status", "-z", "HEAD", "--", ".", check=False
    )
    if result.returncode != 0:
        return []
    fields = result.stdout.split("\0")
    renames = []
    index = 0
    while index < len(fields) - 1:
        status = fields[index]
        if status.startswith(("R", "C")) and index + 2 < len(fields):
            renames.append((fields[index + 1], fields[index + 2]))
            index += 3
        else:
            index += 2
    return renames


def _untracked_moves(vault: Vault, staged: dict, state) -> list[tuple[str, str]]:
    """A note git did not track yet is moved with a plain rename: its checklist line is missing
    its note, the target exists, and state.json still has the note at its old path."""
    moves = []
    for target, line in staged.items():
        if not (vault.root / target).is_file():
            continue
        for source in state.notes:
            if (
                source.rsplit("/", 1)[-1].removesuffix(".md") == line.note
                and not (vault.root / source).exists()
            ):
                tracked = history.run_git(
                    vault.root,
                    "--literal-pathspecs",
                    "ls-files",
                    "--error-unmatch",
                    "--",
                    target,
                    check=False,
                )
                if tracked.returncode != 0:
                    moves.append((source, target))
    return moves


def _finish_archive(vault: Vault, leftover: Leftover, now: datetime) -> str:
    """Do what an interrupted `cmem archive apply` of cmem 0.1 (which moved notes with `git mv`
    before its journal existed) did not: checklist lines out, state.json entries moved (unless
    done), and one commit holding the moves — as a step of its own, journaled."""
    from cmem.archive import gate as archive
    from cmem.steps import journal
    from cmem.steps.changes import ChangeSet, current_bytes
    from cmem.steps.message import CommitMessage
    from cmem.steps.record import StepRecord, new_step_id
    from cmem.steps.runner import Step
    from cmem.vault.state_json import load_state, state_bytes

    moves = [(s, t) for s, t in leftover.moves if (vault.root / t).exists()]
    if not moves:
        return "the interrupted archive apply left nothing to finish"
    pass_id = leftover.pass_id or new_step_id(now)
    text, checklist_raw = archive.read_checklist(vault)
    moved_names = {target.rsplit("/", 1)[-1].removesuffix(".md") for _, target in moves} | {
        source.rsplit("/", 1)[-1].removesuffix(".md") for source, _ in moves
    }
    lines = [line.line_no for line in archive.parse_checklist(text) if line.note in moved_names]
    state_raw = current_bytes(vault.state_file)
    state = load_state(vault.state_file)
    for source, target in moves:
        entry = state.notes.pop(source, None)
        if entry is not None:
            state.notes[target] = entry
    if not any(p.get("id") == pass_id for p in state.passes):
        record = StepRecord(
            pass_id,
            "archive",
            now.isoformat(timespec="seconds"),
            notes=[s for s, _ in moves],
            changed=[t for _, t in moves],
            moves=moves,
        )
        state.passes.append(record.to_json())
    changes = ChangeSet()
    for source, target in moves:
        changes.include(source, current_bytes(vault.root / source))
        changes.include(target, current_bytes(vault.root / target))
    if lines:
        changes.write(
            vault.checklist_rel, archive.remove_checklist_lines(text, set(lines)), checklist_raw
        )
    changes.write(vault.rel(vault.state_file), state_bytes(state), state_raw)
    names = ", ".join(t.rsplit("/", 1)[-1].removesuffix(".md") for _, t in moves)
    message = CommitMessage(
        f"cmem: archive {len(moves)} note{'s' if len(moves) != 1 else ''} → {names}",
        pass_id,
        preamble="Finished by `cmem doctor --fix` after an interruption.",
    )
    for source, target in moves:
        message.add("Archived", f"{source} → {target}")
    if journal.pending_journals(vault):
        return "kept the interrupted archive apply: a step journal is still waiting"
    commit = Step(vault, "archive", pass_id, now).commit(changes, message)
    return f"finished the interrupted archive apply: {len(moves)} notes moved, commit {commit[:8] if commit else 'none'}"
