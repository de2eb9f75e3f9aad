"""The pass journal: a pass is applied whole or not at all, even across a crash (SPEC §3 step 6).

Before the first replace, the journal records the intent — every path with the digest of its
old and new bytes, both versions of each file, the commit to make — durably, in the per-machine
state folder. The next pass (or `cmem doctor --fix`) finds a journal left by a killed process
and finishes it: files still old are rolled forward to their validated new bytes and the commit
is made, unless someone edited a file since the crash — then every file of the pass is rolled
back to its old bytes (the user's edit stays) and nothing is committed. Either way the vault ends
as it was before the pass or as it is after it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from cmem import history
from cmem.atomic import fsync_dir, write_atomic
from cmem.converge.apply import WritePlan, current_bytes
from cmem.errors import CmemError
from cmem.vault import Vault


def _digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def journal_root(vault: Vault) -> Path:
    return vault.state_dir / "journal"


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


def begin(vault: Vault, pass_id: str, plan: WritePlan, message: str) -> Journal:
    folder = journal_root(vault) / pass_id
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "new").mkdir(parents=True)
    (folder / "old").mkdir()
    entries = []
    for index, rel in enumerate(sorted(plan.writes)):
        new, old = plan.writes[rel], plan.expected[rel]
        write_atomic(folder / "new" / str(index), new)
        if old is not None:
            write_atomic(folder / "old" / str(index), old)
        entries.append({"rel": rel, "index": index, "old": _digest(old), "new": _digest(new)})
    intent = {"pass_id": pass_id, "stage": "applying", "entries": entries, "message": message, "time": time.time()}
    write_atomic(folder / "intent.json", json.dumps(intent, ensure_ascii=False, indent=1))
    fsync_dir(folder.parent)
    from cmem import faults

    faults.point("journal-written")
    return Journal(folder)


@dataclass
class Recovery:
    pass_id: str
    action: str  # "rolled forward" | "rolled back" | "already committed"
    commit: str | None = None
    conflicts: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        text = f"an interrupted pass {self.pass_id} was {self.action}"
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


def recover(vault: Vault) -> list[Recovery]:
    """Finish every journal a killed pass left behind. Call with the vault lock held."""
    root = journal_root(vault)
    if root.is_dir():
        for folder in root.iterdir():
            if not (folder / "intent.json").is_file():
                # killed while writing the journal: no file of the vault was touched yet
                shutil.rmtree(folder, ignore_errors=True)
    done = []
    for folder in pending_journals(vault):
        try:
            intent = json.loads((folder / "intent.json").read_text("utf-8"))
        except (OSError, ValueError):
            raise CmemError(f"the pass journal {folder} is unreadable; move it aside and check the vault with `git status`.") from None
        _remove_temp_files(vault, intent)
        done.append(_recover_one(vault, folder, intent))
        Journal(folder).finish()
    return done


def _remove_temp_files(vault: Vault, intent: dict) -> None:
    """Temp files of a replace that never happened (cmem.atomic names them `.<name>.*.cmem-tmp`)."""
    for entry in intent["entries"]:
        target = vault.root / entry["rel"]
        for leftover in target.parent.glob(f".{target.name}.*.cmem-tmp"):
            leftover.unlink(missing_ok=True)


def _recover_one(vault: Vault, folder: Path, intent: dict) -> Recovery:
    pass_id = intent["pass_id"]
    commit = history.find_pass_commit(vault.root, pass_id)
    if commit is not None:
        history.sync_index(vault.root, [e["rel"] for e in intent["entries"]])  # killed before the index caught up
        return Recovery(pass_id, "already committed", commit.sha)
    _clear_stale_git_locks(vault, intent)
    states = {}
    for entry in intent["entries"]:
        digest = _digest(current_bytes(vault.root / entry["rel"]))
        states[entry["rel"]] = "new" if digest == entry["new"] else "old" if digest == entry["old"] else "edited"
    conflicts = sorted(rel for rel, state in states.items() if state == "edited")
    if conflicts:
        for entry in intent["entries"]:
            if states[entry["rel"]] == "new":
                _restore(vault, folder, entry, "old")
        history.run_git(vault.root, "reset", "-q", "--", *[e["rel"] for e in intent["entries"]], check=False)
        return Recovery(pass_id, "rolled back", conflicts=conflicts)
    for entry in intent["entries"]:
        if states[entry["rel"]] == "old":
            _restore(vault, folder, entry, "new")
    new_bytes = {e["rel"]: (folder / "new" / str(e["index"])).read_bytes() for e in intent["entries"]}
    sha = history.commit_files(vault.root, new_bytes, intent["message"])
    return Recovery(pass_id, "rolled forward", sha)


def _restore(vault: Vault, folder: Path, entry: dict, version: str) -> None:
    path = vault.root / entry["rel"]
    source = folder / version / str(entry["index"])
    if version == "old" and entry["old"] is None:
        if path.exists():
            os.unlink(path)  # a file the interrupted pass created
        return
    write_atomic(path, source.read_bytes())


def _clear_stale_git_locks(vault: Vault, intent: dict) -> None:
    """A `git commit` killed with the pass leaves its lock files; they are ours (the pass held
    the vault lock, and git hooks are off), so they go — but only those older than the journal."""
    if intent.get("stage") != "committing":
        return
    git_dir = history.git_dir(vault.root)
    candidates = [git_dir / "index.lock", git_dir / "HEAD.lock", *git_dir.glob("refs/heads/**/*.lock")]
    for lock in candidates:
        try:
            if lock.stat().st_mtime >= intent["time"] - 1:
                os.unlink(lock)
        except FileNotFoundError:
            continue
