"""The memory files' bytes, as a pass reads them all (`pipeline.read_originals`), kept between
passes in the machine folder (`memory-bytes.marshal`) under each file's stat.

A pass shows the engine and the validator every convergent file, so it read all of them: 2,049
opens and reads at 10k notes, 50-65 ms of a ~1.1 s one-note pass on this machine, where loading
them in one read costs a few. A file is read again only when its stat — (mtime, size, inode,
ctime), as the listing took it — changed; the ctime moves on every write, so an mtime set back by
hand does not hide an edit. The racy-git rule applies (`RACY_NS`): bytes are kept only for a file
whose mtime lies that far before the read, so a file written twice within its timestamp
granularity is read every time until it settles.

Beside each file's bytes, the digest of its text (`statement_words.digest_of`, which keys the
engine's words, the topic memo and the token memo): a pass hashed all 9 MB of them at 10k notes
(~11 ms, the encoding included) to find answers kept by that digest, although the bytes, and so
the digest, were known not to have changed. Only bytes that are their text exactly (UTF-8 without
a CR: `read_originals` turns CRLF into LF) carry one; the others are hashed as their text.

What is kept never decides what is written: a pass writes a memory file only if the disk still
holds the bytes it started from (`steps/changes.py`, the second-writer check), so bytes kept
wrongly could only make a pass refuse, never overwrite an edit. The file is a cache: a missing,
corrupt or foreign one is rebuilt, and one that cannot be written costs only speed. It is a copy
of the whole memory, so only its owner may read it (0600), as the run records.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from cmem.cache_file import kept_by_stat

CACHE_NAME = "memory-bytes.marshal"
FORMAT = 2  # bump when an entry's shape changes (2: (bytes, digest of its text or b""))
PRIVATE = 0o600  # a copy of the memory, whatever the vault's own files allow: its owner's only
# Files out of date the copy may hold before it is rewritten: each is read again by every pass
# (tens of µs), where a rewrite is the whole copy (5 MB, ~10 ms at 10k notes), and every pass
# finds out of date the file its predecessor wrote.
STALE_FILES = 64


def memory_bytes(
    vault, read: Callable[[str], bytes | None], digests: dict[str, bytes] | None = None
) -> dict[str, bytes]:
    """Every convergent file's bytes in listing order (rel -> bytes): kept ones whose stat still
    matches, the others through `read(location)` (None: the file is gone, and left out). With
    `digests`, each file's text digest is put there where its bytes are its text (`text_digest`)."""
    kept = kept_by_stat(
        os.path.join(vault.machine_dir, CACHE_NAME),
        f"{FORMAT} {os.fspath(vault.root)}",
        vault.convergent_files(),
        lambda note: _with_digest(read(note.location)),
        valid=_valid,
        mode=PRIVATE,
        slack=STALE_FILES,
    )
    found = {}
    for rel, (raw, digest) in kept.items():
        found[rel] = raw
        if digests is not None and digest:
            digests[rel] = digest
    return found


def text_digest(raw: bytes) -> bytes:
    """`digest_of(raw.decode())` when those bytes are that text exactly (valid UTF-8, no CR),
    else b"" (the text read from them is not its bytes: hashed as a text when asked)."""
    if b"\r" in raw:
        return b""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return b""
    from cmem.converge.statement_words import digest_of_bytes

    return digest_of_bytes(raw)


def _with_digest(raw: bytes | None) -> tuple[bytes, bytes] | None:
    return None if raw is None else (raw, text_digest(raw))


def _valid(answer) -> bool:
    return (
        isinstance(answer, tuple)
        and len(answer) == 2
        and isinstance(answer[0], bytes)
        and isinstance(answer[1], bytes)
        and len(answer[1]) in (0, 16)
    )
