"""Apply a validated pass: all files or none, and a second writer always wins (SPEC §3 step 6).

Every target is compared with the bytes the pass read, first all together and then again just
before each replace. A file that changed on disk (Obsidian's autosave, a sync client, the user)
stops the pass; files already replaced in this pass are put back, so the vault is as it was.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from cmem import faults
from cmem.atomic import write_atomic
from cmem.errors import CmemError
from cmem.vault import Vault


class SecondWriter(CmemError):
    """A file changed on disk while the pass ran; the pass wrote nothing."""


@dataclass
class WritePlan:
    """New content per vault-relative path, with the bytes each path held when the pass read it
    (None: it did not exist)."""

    writes: dict[str, bytes] = field(default_factory=dict)
    expected: dict[str, bytes | None] = field(default_factory=dict)

    def add(self, rel: str, new: str | bytes, expected: bytes | None) -> None:
        self.writes[rel] = new.encode("utf-8") if isinstance(new, str) else new
        self.expected[rel] = expected


def current_bytes(path: Path) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _check(vault: Vault, rel: str, expected: bytes | None) -> None:
    path = vault.root / rel
    if path.is_symlink():
        raise SecondWriter(f"{rel} became a symbolic link while the pass ran; nothing was written.")
    if current_bytes(path) != expected:
        raise SecondWriter(
            f"{rel} changed on disk while the pass ran (another editor or a sync client wrote it); "
            "your edit wins: nothing was written, run the pass again."
        )


def apply_plan(vault: Vault, plan: WritePlan) -> list[str]:
    """Write every file of the plan or none. Returns the paths written."""
    order = sorted(plan.writes)
    for rel in order:
        _check(vault, rel, plan.expected[rel])
    done: list[str] = []
    try:
        for rel in order:
            _check(vault, rel, plan.expected[rel])  # again, just before the replace
            write_atomic(vault.root / rel, plan.writes[rel])
            done.append(rel)
            faults.point("replace")
    except BaseException:
        _roll_back(vault, plan, done)
        raise
    return done


def _roll_back(vault: Vault, plan: WritePlan, done: list[str]) -> None:
    for rel in reversed(done):
        path = vault.root / rel
        if current_bytes(path) != plan.writes[rel]:
            continue  # someone wrote after us: theirs stays
        old = plan.expected[rel]
        if old is None:
            os.unlink(path)  # a file this pass created
        else:
            write_atomic(path, old)
