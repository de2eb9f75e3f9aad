"""One pass at a time per vault, across processes (SPEC §3 step 1).

The lock is an `flock` on a file in the per-machine machine folder, so the kernel releases it when
its holder dies: a lock left by a killed process is never stale. The file records who holds it,
for messages and `cmem doctor`.
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


# The descriptors of the locks this process holds: a forked helper closes its copies
# (`close_inherited_locks`), so a lock lasts as long as the process that took it.
_held: set[int] = set()


def close_inherited_locks() -> None:
    """In a forked child: close the copies of the parent's lock descriptors. An flock belongs to
    the open file, which the parent's descriptor still holds, so the parent keeps the lock; the
    child's copy would only keep it held past the parent's end (a killed pass's helper)."""
    for fd in list(_held):
        try:
            os.close(fd)
        except OSError:
            pass
    _held.clear()


@contextmanager
def vault_lock(machine_dir: Path, purpose: str = "converge"):
    make_dirs(machine_dir)
    path = lock_path(machine_dir)
    fd = open_private(path, os.O_RDWR)
    _held.add(fd)
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
        _held.discard(fd)
        os.close(fd)  # closing drops the flock


def read_holder(path: Path) -> dict | None:
    """Who holds the lock, as it recorded itself; None when the file says nothing readable (being
    written, damaged, or another program's: only the flock is the truth)."""
    try:
        holder = json.loads(path.read_text("utf-8") or "null")
    except (OSError, ValueError):
        return None
    return holder if isinstance(holder, dict) else None


def is_locked(machine_dir: Path) -> bool:
    path = lock_path(machine_dir)
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
