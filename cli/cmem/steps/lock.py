"""One pass at a time per vault, across processes (docs/design.md §3 step 1), and one writer of
notes at a time.

Each lock is an `flock` on a file in the per-machine machine folder, so the kernel releases it when
its holder dies: a lock left by a killed process is never stale. The file records who holds it,
for messages and `cmem doctor`.

The notes lock is finer than the vault lock because appending a line is not a pass: a pass holds
the vault lock for minutes while its model thinks, and `cmem note` must neither wait for that nor
fail. Every writer of a divergent note (`cmem note`, the MCP `note` tool, a step that writes,
moves or restores notes) holds the notes lock while it writes, milliseconds, so none of them
replaces a line another appended.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from contextlib import contextmanager
from pathlib import Path

from cmem.errors import Busy
from cmem.private import make_dirs, open_private


def lock_path(machine_dir: Path) -> Path:
    return machine_dir / "pass.lock"


@contextmanager
def vault_lock(machine_dir: Path, purpose: str = "converge"):
    make_dirs(machine_dir)
    path = lock_path(machine_dir)
    fd = open_private(path, os.O_RDWR)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = read_holder(path)
            who = (
                f" (pid {holder.get('pid', '?')}, {holder.get('purpose', 'a pass')} since {holder.get('since', '?')})"
                if holder
                else ""
            )
            raise Busy(
                f"a pass is already running{who}; nothing was done: try again once it ends."
            ) from None
        os.ftruncate(fd, 0)
        os.write(
            fd,
            json.dumps(
                {
                    "pid": os.getpid(),
                    "purpose": purpose,
                    "since": time.strftime("%Y-%m-%dT%H:%M:%S"),
                }
            ).encode(),
        )
        yield
    finally:
        os.close(fd)  # closing drops the flock


def read_holder(path: Path) -> dict | None:
    """Who holds the lock, as it recorded itself; None when the file says nothing readable (being
    written, damaged, or another program's: only the flock is the truth)."""
    try:
        holder = json.loads(path.read_text("utf-8") or "null")
    except (OSError, ValueError):
        return None
    return holder if isinstance(holder, dict) else None


def notes_lock_path(machine_dir: Path) -> Path:
    return machine_dir / "notes.lock"


@contextmanager
def notes_lock(machine_dir: Path, purpose: str = "note", wait_seconds: float = 30.0):
    """Hold the lock every writer of a note takes, waiting for the writer holding it (a write
    takes milliseconds; the bound only ends a wait on a stuck process)."""
    make_dirs(machine_dir)
    path = notes_lock_path(machine_dir)
    fd = open_private(path, os.O_RDWR)
    deadline = time.monotonic() + wait_seconds
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = read_holder(path) or {}
                    raise Busy(
                        f"another cmem has been writing notes for {wait_seconds:.0f} s "
                        f"(pid {holder.get('pid', '?')}, {holder.get('purpose', 'a step')}; "
                        f"{path}); nothing was written: try again once it ends."
                    ) from None
                time.sleep(0.005)
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "purpose": purpose}).encode())
        yield
    finally:
        os.close(fd)  # closing drops the flock


def is_locked(machine_dir: Path) -> bool:
    return held_elsewhere(lock_path(machine_dir))


def held_elsewhere(path: Path) -> bool:
    """Whether another open file holds the flock on the lock file `path` (the vault lock, the
    notes lock): flock belongs to the open file, so a second open of it tells."""
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
