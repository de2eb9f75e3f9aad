"""Files cmem may lose without harm — stored results, stored validators and parses, read times,
the last-sync record — written the one way they all need: replaced whole (a reader sees the old
file or the new one, never half of it), with `os` alone, because the light paths (`cmem.fast`,
`cmem.idle_sync`) write them and `cmem.atomic`'s imports would cost them more than the write.

Unlike `cmem.atomic.write_atomic` there is no fsync: a power cut may lose the last such write,
which costs only a slower next call. Memory, notes and the vault's own files never come here.
"""

from __future__ import annotations

import os

from cmem.private import FILE_MODE, make_dirs

# Git's "racily clean" problem: a file changed again within its file system's timestamp
# granularity keeps its (mtime, size), so an answer kept under a file's stat is trusted only
# when the file's mtime lies more than this before the answer was made (2 s covers FAT, 1 s
# ext3/HFS+, ns ext4). Every cache keyed by stats uses this one value.
RACY_NS = 2_000_000_000


# Every cache's format, in one registry: bump a cache's number when what it keeps changes shape,
# and a file an older cmem wrote reads as missing. (state.json, the backlog and the step journal
# carry versions of their own: they are the vault's data, not caches.)
FORMATS = {
    "scan": 8,  # scan/scan_cache.py: each note's signals (8: notes not in UTF-8 decoded)
    "statement-words": 6,  # converge/statement_words.py (5: UTF-8 keys; 6: no word mask)
    "statement-tokens": 1,  # converge/statement_words.py: resident files' token estimates
    "prompt-texts": 6,  # converge/prompt.py: the convergent files' texts as the prompt shows them
    "prompt-redactions": 2,  # converge/prompt.py: the notes' texts with credentials redacted
    "search-index": 4,  # reading/search_index.py (4: files keep the inode and ctime)
    "stored-results": 6,  # reading/stored_results.py: what status and scan printed, and the key
    "context-material": 2,  # reading/stored_context.py: what `context` is assembled from
    "context-meta": 1,  # reading/context.py: each memory file's frontmatter, for the index
    "layer-sizes": 1,  # reading/sizes.py: each file's token estimate
    "archive-names": 2,  # vault/archive_names.py: the archive's note paths by folder
    "conflicts": 1,  # sync/conflicts_found.py: each memory file's conflict statements
}


def settled(mtime_ns: int, at_ns: int) -> bool:
    """Whether what was read at `at_ns` of a file or folder whose mtime is `mtime_ns` may be kept
    under its stat: the one racy rule every stat-keyed cache applies."""
    return mtime_ns + RACY_NS < at_ns


def stat_key(st: os.stat_result) -> tuple[int, int, int, int]:
    """What an answer kept under a file's stat keys on: (mtime, size, inode, ctime). The ctime
    moves on every write, so an edit that keeps the size and sets the mtime back (`touch -r`,
    `rsync -t`, a restore) is still seen, as git's index sees it."""
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)


def write_cache(path: str, data: bytes, mode: int = FILE_MODE) -> os.stat_result | None:
    """Replace `path` with `data` (its folder made if need be, 0700); the written file's stat, or
    None when it could not be written (a read-only or full disk): no temp file is left behind,
    and the caller carries on without it. `mode` as `os.open` takes it: 0600, as everything in
    the machine's state folder (`cmem.private`), which holds copies of the vault's text."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        make_dirs(os.path.dirname(path) or ".")
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)
        with open(os.open(tmp, flags, mode), "wb") as handle:
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


def code_stamp(*modules) -> tuple:
    """Each module's source file as (mtime, size), None for one without a file: part of a cache's
    key wherever what is kept depends on cmem's code, so an edited or upgraded cmem never reads
    what other code made."""
    stamp: list[tuple[int, int] | None] = []
    for module in modules:
        try:
            st = os.stat(module.__file__)
            stamp.append((st.st_mtime_ns, st.st_size))
        except (OSError, TypeError, AttributeError):
            stamp.append(None)
    return tuple(stamp)


def read_stamped(path: str, stamp) -> dict:
    """The entries `write_stamped` kept at `path` under this `stamp`; {} when the file is
    missing, damaged, or was written under another stamp (another cmem, format or vault)."""
    import marshal

    try:
        with open(path, "rb") as handle:
            data = marshal.loads(handle.read())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(data, dict) or data.get("stamp") != stamp:
        return {}
    entries = data.get("entries")
    return entries if isinstance(entries, dict) else {}


def write_stamped(path: str, stamp, entries: dict, mode: int = FILE_MODE) -> None:
    """Keep `entries` (what marshal holds) at `path` under `stamp`, as `write_cache` writes."""
    import marshal

    try:
        data = marshal.dumps({"stamp": stamp, "entries": entries})
    except ValueError:
        return  # a value marshal cannot hold: not kept
    write_cache(path, data, mode)


def kept_by_stat(
    path: str,
    stamp,
    files,
    compute,
    valid=lambda answer: True,
    mode: int = FILE_MODE,
    slack: int = 0,
) -> dict:
    """Each file's answer (rel -> answer, in the order of `files`), kept at `path` under `stamp`
    and the file's stat — (mtime, size, inode, ctime) as the listing took it (`note.lstat()`):
    the ctime moves on every write, so an mtime set back by hand does not hide an edit. A file
    whose stat changed, or whose kept answer is not `valid`, gets `compute(note)` (None: left
    out). Racy rule (`RACY_NS`): an answer is kept only for a file whose mtime lies that far
    before it was computed, so a file written twice within its timestamp granularity is
    computed every time until it settles. The file is rewritten only when what it keeps moved,
    and, given a `slack`, by more than that many answers or an eighth of them: for a large file
    whose answers are cheap to compute again (a file's bytes), an answer out of date costs one
    `compute` a call, where a rewrite costs the whole file, so a few out of date are left for a
    later call to rewrite. A missing, damaged or foreign file is always written."""
    import time

    known = read_stamped(path, stamp)
    kept: dict = {}  # rel -> (stat, answer)
    found: dict = {}
    for note in files:
        try:
            st = note.lstat()  # the listing's stat when it took one
            stat = stat_key(st)
        except OSError:
            stat = None
        before = known.get(note.rel)
        if (
            stat is not None
            and isinstance(before, tuple)
            and len(before) == 2
            and before[0] == stat
            and valid(before[1])
        ):
            answer = before[1]
        else:
            computed_at = time.time_ns()
            answer = compute(note)
            if answer is None:
                continue
            if stat is None or not settled(stat[0], computed_at):
                found[note.rel] = answer  # changed too recently to trust its stat: not kept
                continue
        kept[note.rel] = (stat, answer)
        found[note.rel] = answer
    moved = _moved(known, kept)
    if moved and (not known or moved > min(slack, len(kept) // 8)):
        write_stamped(path, stamp, kept, mode)
    return found


def _moved(known: dict, kept: dict) -> int:
    """How many answers differ between the file and this call's, 0 when they are the same
    (answers kept again are the same objects, so each comparison is by identity first)."""
    return sum(1 for rel, entry in kept.items() if known.get(rel) != entry) + sum(
        1 for rel in known if rel not in kept
    )
