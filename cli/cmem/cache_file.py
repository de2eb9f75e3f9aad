"""Files cmem may lose without harm — stored results, stored validators and parses, read times,
the last-sync record — written the one way they all need: replaced whole (a reader sees the old
file or the new one, never half of it), with `os` alone, because the light paths (`cmem.fast`,
`cmem.idle_sync`) write them and `cmem.atomic`'s imports would cost them more than the write.

Unlike `cmem.atomic.write_atomic` there is no fsync: a power cut may lose the last such write,
which costs only a slower next call. Memory, notes and the vault's own files never come here.
"""

from __future__ import annotations

import os

# Git's "racily clean" problem: a file changed again within its file system's timestamp
# granularity keeps its (mtime, size), so an answer kept under a file's stat is trusted only
# when the file's mtime lies more than this before the answer was made (2 s covers FAT, 1 s
# ext3/HFS+, ns ext4). Every cache keyed by stats uses this one value.
RACY_NS = 2_000_000_000


def write_cache(path: str, data: bytes) -> os.stat_result | None:
    """Replace `path` with `data` (its folder made if need be); the written file's stat, or None
    when it could not be written (a read-only or full disk): no temp file is left behind, and
    the caller carries on without it."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            written = os.fstat(handle.fileno())
        os.replace(tmp, path)
        return written
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return None
