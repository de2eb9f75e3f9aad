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
