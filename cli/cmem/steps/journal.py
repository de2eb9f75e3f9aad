"""The step journal: a step is applied whole or not at all, even across a crash.

Before a step changes the first file, the journal records its intent — its kind and id, every
path with the digest of its old and new bytes (None: absent), both versions of each file, and the
commit message — durably, in the per-machine machine folder. Every step kind writes one: a pass,
an archive apply (a move is a file created and a file removed), an undo, a repair.

The next writing command (any of them) or `cmem doctor --fix` finds a journal left by a killed
process and finishes it before doing anything else:

- if a commit with the step's id exists, the step is done; the index is brought up to date;
- else, if the user has since edited a file that existed before the step, every file of the step
  goes back to its old bytes (the user's edit stays) and nothing is committed — the step is
  rolled back; its notes are pending again;
- else the step is rolled forward: files still old get their new bytes, files to remove go, and
  the commit is made from the journal's bytes. A file the step created and the user has edited
  since (an archived note opened in Obsidian) keeps the edit, uncommitted, on top.

Either way the vault ends as it was before the step or as it is after it, and every note exists.

A journal is bound to the repository it was written for and to the commit the step started
from (version 3): the machine folder is named by the vault's path, so a vault deleted and cloned
again at the same path finds the dead folder's journal there. Recovery finishes only a journal
whose repository (an id cmem keeps in the repository's own git folder, which a clone does not
carry: `repository_id`) is this one and whose start commit is in this branch's history; any
other is set aside — moved to `journal-set-aside/` in the machine folder, kept for inspection,
named once in the notice and by `cmem doctor` — and never applied. A journal of an earlier cmem
(no binding) is recovered as it always was.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from cmem import faults
from cmem.atomic import TEMP_SUFFIX, fsync_dir, temp_prefix, write_atomic
from cmem.errors import CmemError, GitError
from cmem.private import make_dirs
from cmem.steps import commits as history
from cmem.steps.changes import ChangeSet, current_bytes, notes_held, put, set_mode
from cmem.steps.record import step_name
from cmem.vault.layers import Vault

VERSION = 3
# where a journal that belongs to another repository, or to history this branch no longer holds,
# is kept (in the machine folder, beside `journal/`): never applied, never deleted by cmem
SET_ASIDE = "journal-set-aside"
# the file in the repository's git folder naming it for the journals (`repository_id`): in
# `info/`, git's folder for what a repository knows of itself and a clone never copies
REPOSITORY_ID_FILE = "info/cmem-repository-id"


def _digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def journal_root(vault: Vault) -> Path:
    return vault.journal_dir


def set_aside_root(vault: Vault) -> Path:
    return vault.machine_dir / SET_ASIDE


def repository_id(vault: Vault, create: bool = False) -> str | None:
    """This repository's id for the journals: random, kept in its git folder (so a clone, or a
    `.git` made anew, has another one, while a copy of the whole folder keeps it). `create`:
    made on first use, by the first step that writes a journal."""
    path = history.git_dir(vault.root) / REPOSITORY_ID_FILE
    try:
        found = path.read_text("utf-8").strip()
    except (FileNotFoundError, NotADirectoryError):
        found = ""
    except (OSError, UnicodeDecodeError):
        return None
    if found or not create:
        return found or None
    found = os.urandom(16).hex()
    path.parent.mkdir(exist_ok=True)
    write_atomic(path, found + "\n")
    return found


def _start_commit(vault: Vault) -> str | None:
    from cmem.steps.git_head import head_sha

    return head_sha(str(vault.root)) or history.head(vault.root)


@dataclass
class Journal:
    folder: Path

    def mark(self, stage: str) -> None:
        intent = json.loads((self.folder / "intent.json").read_text("utf-8"))
        intent["stage"] = stage
        write_atomic(self.folder / "intent.json", json.dumps(intent, ensure_ascii=False, indent=1))

    def finish(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        fsync_dir(self.folder.parent)


def begin(
    vault: Vault,
    kind: str,
    step_id: str,
    changes: ChangeSet,
    message: str,
    *,
    merge_parents: list[str] | tuple[str, ...] = (),
    fast_forward: tuple[str, str] | None = None,
) -> Journal:
    """`merge_parents`: a sync's merge commit's other parents; `fast_forward`: (from, to) — a
    sync that moves the branch to the other side's commit instead of committing."""
    folder = journal_root(vault) / step_id
    if folder.exists():
        shutil.rmtree(folder)
    make_dirs(folder / "new")  # the machine's state folder: 0700 (`cmem.private`)
    make_dirs(folder / "old")
    entries = []
    for index, change in enumerate(changes.ordered()):
        if change.new is not None:
            write_atomic(folder / "new" / str(index), change.new)
        if change.old is not None:
            write_atomic(folder / "old" / str(index), change.old)
        entries.append(
            {
                "rel": change.rel,
                "index": index,
                "old": _digest(change.old),
                "new": _digest(change.new),
            }
        )
    intent = {
        "version": VERSION,
        "kind": kind,
        "id": step_id,
        "stage": "applying",
        "entries": entries,
        "message": message,
        "time": time.time(),
        # what it is bound to: recovery applies it only here, on this history
        "repository": repository_id(vault, create=True),
        "start": fast_forward[0] if fast_forward else _start_commit(vault),
    }
    if merge_parents:
        intent["parents"] = list(merge_parents)
    if changes.modes:  # a recovered merge commits an executable file as executable too
        intent["modes"] = dict(changes.modes)
    if fast_forward:
        intent["fast_forward"] = {"from": fast_forward[0], "to": fast_forward[1]}
    # intent.json last: a folder without it is a journal whose writing was cut short, before any
    # file of the vault was touched
    write_atomic(folder / "intent.json", json.dumps(intent, ensure_ascii=False, indent=1))
    fsync_dir(folder.parent)
    faults.point("journal-written")
    return Journal(folder)


@dataclass
class Recovery:
    kind: str
    step_id: str
    action: str  # "rolled forward" | "rolled back" | "already committed"
    commit: str | None = None
    conflicts: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        text = f"an interrupted {step_name(self.kind)} {self.step_id} was {self.action}"
        if self.commit:
            text += f" (commit {self.commit[:8]})"
        if self.conflicts:
            text += f"; kept your edits to {', '.join(self.conflicts)}"
        return text


def pending_journals(vault: Vault) -> list[Path]:
    root = journal_root(vault)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if (p / "intent.json").is_file())


def describe(folder: Path) -> tuple[str, str]:
    """(kind, id) of a journal, for messages; unreadable journals say so."""
    try:
        intent = json.loads((folder / "intent.json").read_text("utf-8"))
        return intent.get("kind", "converge"), intent.get("id") or intent.get(
            "pass_id"
        ) or folder.name
    except (OSError, ValueError):
        return "unknown", folder.name


def recover(vault: Vault) -> list[Recovery]:
    """Finish every journal a killed step left behind, oldest first. Call with the vault lock held."""
    root = journal_root(vault)
    if root.is_dir():
        for folder in root.iterdir():
            if folder.is_dir() and not (folder / "intent.json").is_file():
                shutil.rmtree(folder, ignore_errors=True)  # cut short before the first change
    done = []
    for folder in sorted(pending_journals(vault), key=_started):
        try:
            intent = json.loads((folder / "intent.json").read_text("utf-8"))
            intent["entries"]  # a journal without entries is unreadable
        except (OSError, ValueError, KeyError, TypeError):
            raise CmemError(
                f"the step journal {folder} is unreadable; move it aside and check the vault with `git status`."
            ) from None
        foreign = foreign_reason(vault, intent)
        if foreign:
            done.append(_set_aside(vault, folder, intent, foreign))
            continue
        _remove_temp_files(vault, intent)
        with notes_held(vault, [entry["rel"] for entry in intent["entries"]], "recovery"):
            done.append(_recover_one(vault, folder, intent))
        Journal(folder).finish()
    return done


def foreign_reason(vault: Vault, intent: dict) -> str | None:
    """Why this journal must not be applied here, or None: it was written for another
    repository (the vault was cloned again at its path, or its `.git` made anew), or the commit
    its step started from is not in this branch's history (reset away)."""
    if "repository" not in intent and "start" not in intent:
        return None  # an earlier cmem's journal: recovered as it always was
    expected = intent.get("repository")
    if expected and repository_id(vault) != expected:
        return (
            "it was written for another copy of this vault's repository "
            "(the folder was cloned or its git made anew since)"
        )
    start = intent.get("start")
    if start and not _in_history(vault, start):
        return f"the commit it started from, {start[:12]}, is not in this branch's history"
    return None


def _in_history(vault: Vault, commit: str) -> bool:
    """Whether `commit` exists and HEAD is it or descends from it."""
    head = history.head(vault.root)
    if head == commit:
        return True
    exists = history.run_git(vault.root, "cat-file", "-e", f"{commit}^{{commit}}", check=False)
    return (
        exists.returncode == 0
        and head is not None
        and history.is_ancestor(vault.root, commit, head)
    )


def foreign_journal(vault: Vault, folder: Path) -> str | None:
    """`foreign_reason` of the journal in `folder`, for `cmem doctor`: None when it matches, or
    when it cannot be read (its recovery says so)."""
    try:
        intent = json.loads((folder / "intent.json").read_text("utf-8"))
        return foreign_reason(vault, intent) if isinstance(intent, dict) else None
    except (OSError, ValueError, CmemError):
        return None


def _set_aside(vault: Vault, folder: Path, intent: dict, reason: str) -> Recovery:
    kind, step_id = intent.get("kind", "converge"), intent.get("id") or folder.name
    base = set_aside_root(vault)
    base.mkdir(mode=0o700, parents=True, exist_ok=True)  # copies of note text: its owner's only
    target = base / folder.name
    suffix = 2
    while target.exists():
        target = base / f"{folder.name}-{suffix}"
        suffix += 1
    os.replace(folder, target)
    fsync_dir(folder.parent)
    fsync_dir(base)
    return Recovery(kind, step_id, f"set aside, not applied: {reason}; it is kept in {target}")


def set_aside_journals(vault: Vault) -> list[tuple[str, str, Path]]:
    """(kind, id, folder) of every journal set aside, for `cmem doctor`."""
    root = set_aside_root(vault)
    if not root.is_dir():
        return []
    return [(*describe(p), p) for p in sorted(root.iterdir()) if (p / "intent.json").is_file()]


def _started(folder: Path) -> float:
    try:
        return float(json.loads((folder / "intent.json").read_text("utf-8")).get("time", 0))
    except (OSError, ValueError, TypeError):
        return 0.0


def _remove_temp_files(vault: Vault, intent: dict) -> None:
    """Temp files of a replace that never happened (cmem.atomic names them `.<name>.*.cmem-tmp`)."""
    for entry in intent["entries"]:
        target = vault.root / entry["rel"]
        if target.parent.is_dir():
            pattern = f"{glob.escape(temp_prefix(target.name))}*{TEMP_SUFFIX}"
            for leftover in target.parent.glob(pattern):
                leftover.unlink(missing_ok=True)


def _recover_one(vault: Vault, folder: Path, intent: dict) -> Recovery:
    kind = intent.get("kind", "converge")
    step_id = intent.get("id") or intent["pass_id"]  # version 1 journals (passes only) said pass_id
    entries = intent["entries"]
    paths = [e["rel"] for e in entries]
    if intent.get("fast_forward"):
        return _recover_fast_forward(vault, folder, intent)
    commit = history.find_pass_commit(vault.root, step_id)
    if commit is not None:
        history.sync_index(vault.root, paths)  # killed before the index caught up
        return Recovery(kind, step_id, "already committed", commit.sha)
    _clear_stale_git_locks(vault, intent)
    states = {entry["rel"]: _state(vault, entry) for entry in entries}
    edited = sorted(rel for rel, state in states.items() if state == "edited")
    # An edit to a file that existed before the step may be built on its old bytes: rolling
    # forward would commit the step's version under it. Put the step back instead.
    if any(states[e["rel"]] == "edited" and e["old"] is not None for e in entries):
        restore = [
            e
            for e in entries
            if states[e["rel"]] == "new" and not _only_copy(vault, folder, e, entries, states)
        ]
        for entry in sorted(restore, key=lambda e: e["old"] is None):  # restore before removing
            put(vault, entry["rel"], _version(folder, entry, "old"))
        history.sync_index(vault.root, paths)
        return Recovery(kind, step_id, "rolled back", conflicts=edited)
    forward = [e for e in entries if states[e["rel"]] == "old"]
    for entry in sorted(forward, key=lambda e: e["new"] is None):  # write before removing
        put(vault, entry["rel"], _version(folder, entry, "new"))
    for rel, mode in (intent.get("modes") or {}).items():
        if (vault.root / rel).is_file():
            set_mode(vault, rel, mode)
    try:
        sha = history.commit_files(
            vault.root,
            {e["rel"]: _version(folder, e, "new") for e in entries},
            intent["message"],
            merge_parents=intent.get("parents") or (),
            modes=intent.get("modes") or None,
        )
    except GitError as exc:
        made = history.find_pass_commit(vault.root, step_id)
        if made is not None:  # the commit landed; only the index could not be brought up to date
            return Recovery(kind, step_id, "rolled forward", made.sha, conflicts=edited)
        # A commit that cannot be made (a path git refuses, a broken repository) must not block
        # every later command: the step is put back, its notes are pending again, and the
        # reason is said.
        states = {e["rel"]: _state(vault, e) for e in entries}
        for entry in sorted(
            (e for e in entries if states[e["rel"]] == "new"), key=lambda e: e["old"] is None
        ):
            put(vault, entry["rel"], _version(folder, entry, "old"))
        return Recovery(
            kind, step_id, f"rolled back because its commit failed ({str(exc).rstrip('.')})"
        )
    return Recovery(kind, step_id, "rolled forward", sha, conflicts=edited)


def _recover_fast_forward(vault: Vault, folder: Path, intent: dict) -> Recovery:
    """A sync killed while moving the branch to the other side's commit: done when the branch
    holds that commit; else the files go forward and the branch moves — unless the user edited a
    file since or the branch moved meanwhile, then every file goes back (the next sync does it
    again)."""
    kind, step_id, entries = intent.get("kind", "sync"), intent["id"], intent["entries"]
    paths = [e["rel"] for e in entries]
    source, target = intent["fast_forward"]["from"], intent["fast_forward"]["to"]
    head = history.head(vault.root)
    if head == target or (head and history.is_ancestor(vault.root, target, head)):
        history.sync_index(vault.root, paths)
        return Recovery(kind, step_id, "already committed", target)
    _clear_stale_git_locks(vault, intent)
    states = {entry["rel"]: _state(vault, entry) for entry in entries}
    edited = sorted(rel for rel, state in states.items() if state == "edited")
    if edited or head != source:
        restore = [e for e in entries if states[e["rel"]] == "new"]
        for entry in sorted(restore, key=lambda e: e["old"] is None):
            put(vault, entry["rel"], _version(folder, entry, "old"))
        history.sync_index(vault.root, paths)
        return Recovery(kind, step_id, "rolled back", conflicts=edited)
    for entry in sorted(
        (e for e in entries if states[e["rel"]] == "old"), key=lambda e: e["new"] is None
    ):
        put(vault, entry["rel"], _version(folder, entry, "new"))
    # the modes too, as _recover_one does: a file written anew (or one whose mode alone changed,
    # its bytes already "new") would otherwise stay 0644 while the branch moves to 100755
    for rel, mode in (intent.get("modes") or {}).items():
        if (vault.root / rel).is_file():
            set_mode(vault, rel, mode)
    history.move_branch(vault.root, target, source, paths)
    return Recovery(kind, step_id, "rolled forward", target)


def _state(vault: Vault, entry: dict) -> str:
    digest = _digest(current_bytes(vault.root / entry["rel"]))
    return "new" if digest == entry["new"] else "old" if digest == entry["old"] else "edited"


def _only_copy(
    vault: Vault, folder: Path, entry: dict, entries: list[dict], states: dict[str, str]
) -> bool:
    """A file the step created (a note's archive copy) whose bytes a rollback could not put back
    anywhere: the path it moved from now holds something else that does not contain them (a new
    note written there after the move). Removing it would leave the note nowhere; it stays."""
    if entry["old"] is not None or entry["new"] is None:
        return False
    for other in entries:
        if (
            other["old"] == entry["new"]
            and other["new"] is None
            and states[other["rel"]] == "edited"
        ):
            if not _built_on(
                current_bytes(vault.root / other["rel"]) or b"",
                _version(folder, entry, "new") or b"",
            ):
                return True
    return False


def _built_on(now: bytes, old: bytes) -> bool:
    """Whether `now` looks like an edit of `old` (most of it is still there) rather than a new
    file written at the same path."""
    if old in now:
        return True
    if len(now) + len(old) > 2_000_000:
        return False  # too large to compare: assume a new file, so the old bytes are kept
    import difflib

    matcher = difflib.SequenceMatcher(
        None, old.decode("utf-8", "replace"), now.decode("utf-8", "replace"), autojunk=False
    )
    return matcher.ratio() >= 0.5


def _version(folder: Path, entry: dict, which: str) -> bytes | None:
    if entry[which] is None:
        return None
    return (folder / which / str(entry["index"])).read_bytes()


def _clear_stale_git_locks(vault: Vault, intent: dict) -> None:
    """A `git` killed with the step leaves its lock files; they are ours (the step held the vault
    lock, and git hooks are off), so they go — but only those older than the journal."""
    if intent.get("stage") != "committing":
        return
    git_dir = history.git_dir(vault.root)
    candidates = [
        git_dir / "index.lock",
        git_dir / "HEAD.lock",
        *git_dir.glob("refs/heads/**/*.lock"),
    ]
    for lock in candidates:
        try:
            if lock.stat().st_mtime >= intent["time"] - 1:
                os.unlink(lock)
        except FileNotFoundError:
            continue
