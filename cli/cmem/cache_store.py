"""The one store of what cmem may lose without harm: every cache in the machine folder (and the
stored results beside them) is a `Kept` file of entries under a stamp, looked up by a file's stat
(`kept_by_stat`) or by the digest of a text (`KeptByDigest`), with one racy rule (`settled`) and
one version registry (`FORMATS`). Written replaced whole (a reader sees the old file or the new
one, never half of it), with `os`, `marshal` and `zlib`'s CRC-32 alone: a stored answer reads (and the next
stores) here on every call, and `cmem.atomic`'s fsync would cost more than the write.

Unlike `cmem.atomic.write_atomic` there is no fsync: a power cut may lose the last such write,
which costs only a slower next call. Memory, notes and the vault's own files never come here,
and this module imports nothing of cmem's domain.
"""

from __future__ import annotations

import marshal
import os
from zlib import crc32

from cmem import __version__
from cmem.private import FILE_MODE, make_dirs

# Git's "racily clean" problem: a file changed again within its timestamp granularity keeps
# its stat, so an answer is trusted only for a file this much older than the answer
# (2 s covers FAT, 1 s ext3/HFS+, ns ext4).
RACY_NS = 2_000_000_000


# Every cache's format, in one registry: bump a cache's number when what it keeps changes shape,
# and a file an older cmem wrote reads as missing. (state.json, the backlog and the step journal
# carry versions of their own: they are the vault's data, not caches.)
FORMATS = {
    "scan": 9,  # scan/scan_cache.py: each note's signals (8: notes not in UTF-8 decoded; 9: odd memory)
    "statement-words": 6,  # converge/memory/statement_words.py (5: UTF-8 keys; 6: no word mask)
    "statement-tokens": 1,  # converge/memory/statement_words.py: resident files' token estimates
    "prompt-texts": 6,  # converge/prompt.py: the convergent files' texts as the prompt shows them
    "prompt-redactions": 2,  # converge/prompt.py: the notes' texts with credentials redacted
    "search-index": 5,  # reading/search_index.py (5: title rows, exchanges, one index of notes)
    "stored-results": 8,  # reading/stored_results.py: what status and scan printed, and the key (8: lines waiting for a model)
    "context-material": 4,  # reading/stored_context.py: what `context` is assembled from (4: topic texts as parts, problems redacted)
    "context-meta": 2,  # reading/context.py: each memory file's frontmatter, for the index (2: aliases)
    "start-memory": 1,  # reading/start_memory.py: the memory files as SessionStart shows them
    "start-memory-texts": 2,  # reading/start_memory.py: their texts, read a part at a time (2: CRC-32s)
    "layer-sizes": 1,  # reading/sizes.py: each file's token estimate
    "archive-names": 2,  # vault/archive_names.py: the archive's note paths by folder
    "archive-recurrence": 1,  # scan/archive_recurrence.py: archived notes' recurrence keys
    "conflicts": 1,  # sync/conflicts_found.py: each memory file's conflict statements
    "config-validators": 2,  # vault/config_cache.py: the schema's compiled validator (2: Decimal)
    "config-yaml": 1,  # vault/config_cache.py: a config file's parsed YAML
    "read-times": 1,  # reading/stored_context.py: read-times.json's copy, read without json
    "help-pages": 1,  # commands/stored_help.py: what typer printed for a help line
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


class Kept:
    """One cache file: `entries` (a dict of what marshal holds) kept at `path` under a stamp of
    its kind's format (`FORMATS`), this cmem's version and `depends` (what else every entry was
    made from: a vault's settings, a code stamp). A missing, damaged or foreign file — another
    kind, format, cmem or `depends` — reads as no entries; `path` None keeps nothing.

    Written with `parts` (bytes values), the file holds them after its entries, and `read`
    leaves them on disk: `part(i)` reads one from the file `read` opened (held open until the
    next `read`, so a file replaced meanwhile still gives the parts of the entries read). For a
    cache of many texts a call shows few of."""

    def __init__(self, path: str | os.PathLike | None, kind: str, *depends):
        self.path = None if path is None else os.fspath(path)
        self.stamp = (kind, FORMATS[kind], __version__, *depends)
        self.found = False  # whether the last `read` found this kind's file as stamped
        self._parts: tuple | None = None  # (the open file, where its parts start, their spans)

    def close(self) -> None:
        """Let go of the file a `read` of parts holds open (its parts read no more)."""
        if self._parts is not None:
            self._parts[0].close()
            self._parts = None

    def __del__(self) -> None:
        self.close()

    def read(self) -> dict:
        self.found = False
        self.close()
        if self.path is None:
            return {}
        handle = None
        try:
            # unbuffered: each read one system call, a file of megabytes never copied twice
            handle = open(self.path, "rb", buffering=0)  # noqa: SIM115 - a parts file stays open
            start = handle.read(len(_PARTS_MARK) + 8)
            if start[: len(_PARTS_MARK)] == _PARTS_MARK:
                data, base, spans = _head(handle, start)
                self._parts, handle = (handle, base, spans), None  # kept open
            else:
                handle.seek(0)
                data = marshal.loads(handle.readall())
        except (
            OSError,
            EOFError,
            ValueError,
            TypeError,
            LookupError,
            AttributeError,
            OverflowError,
        ):
            return {}
        finally:
            if handle is not None:
                handle.close()
        if not isinstance(data, dict) or data.get("stamp") != self.stamp:
            self.close()
            return {}
        entries = data.get("entries")
        self.found = isinstance(entries, dict)
        return entries if isinstance(entries, dict) else {}

    def part(self, index: int) -> bytes | None:
        """The `index`-th part of the file `read` read last, or None (none such, or not as
        written: each part's CRC-32 is kept beside its span)."""
        if self._parts is None or not self.found:
            return None
        handle, base, spans = self._parts
        try:
            offset, length, check = spans[index]
            data = os.pread(handle.fileno(), length, base + offset)
        except (OSError, IndexError, TypeError, ValueError):
            return None
        return data if len(data) == length and crc32(data) == check else None

    def write(self, entries: dict, mode: int = FILE_MODE, parts: list[bytes] | None = None) -> None:
        """Replace the file with `entries` (and `parts`, see the class); one value marshal
        cannot hold keeps the old file."""
        if self.path is None:
            return
        try:
            if parts is None:
                data = marshal.dumps({"stamp": self.stamp, "entries": entries})
            else:
                spans, at = [], 0
                for part in parts:
                    spans.append((at, len(part), crc32(part)))
                    at += len(part)
                head = marshal.dumps({"stamp": self.stamp, "entries": entries, "parts": spans})
                data = b"".join([_PARTS_MARK, len(head).to_bytes(8, "big"), head, *parts])
        except ValueError:
            return
        write_cache(self.path, data, mode)

    def remove(self) -> None:
        if self.path is not None:
            try:
                os.unlink(self.path)
            except OSError:
                pass  # none, or it stays: its stamp still says what its entries are


_PARTS_MARK = b"cmem-kept-parts\n"  # a file of entries and parts (`Kept.write`), not marshal's


def _head(handle, start: bytes) -> tuple:
    """A parts file's head (what `marshal` holds), where its parts start, and their spans. A
    file cut short or grown past its last part raises, and reads as no entries: its parts would
    not be the ones written."""
    size = int.from_bytes(start[len(_PARTS_MARK) :], "big")
    whole = os.fstat(handle.fileno()).st_size
    head = handle.read(size) if len(start) + size <= whole else b""
    if len(head) != size:
        raise EOFError(size)
    data = marshal.loads(head)
    spans = data.get("parts") if isinstance(data, dict) else None
    base = len(start) + size
    if whole != base + (spans[-1][0] + spans[-1][1] if spans else 0):
        raise EOFError(whole)
    return data, base, spans


def kept_by_stat(
    kept: Kept,
    files,
    compute,
    valid=lambda answer: True,
    mode: int = FILE_MODE,
    slack: int = 0,
) -> dict:
    """Each file's answer (rel -> answer, in the order of `files`), kept in `kept` under the
    file's `stat_key` as the listing took it (`note.lstat()`). A file whose stat changed, or
    whose kept answer is not `valid`, gets `compute(note)` (None: left out). An answer is kept
    only for a file `settled` when it was computed, so a file written twice within its
    timestamp granularity is computed every time until it settles. The file is rewritten only
    when what it keeps moved by more than `slack` answers (or an eighth of them): for a large
    file of answers cheap to compute again, one out of date costs one `compute` a call where a
    rewrite costs the whole file. A missing, damaged or foreign file is always written."""
    import time

    known = kept.read()
    entries: dict = {}  # rel -> (stat, answer)
    found: dict = {}
    for note in files:
        try:
            stat = stat_key(note.lstat())  # the listing's stat when it took one
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
        entries[note.rel] = (stat, answer)
        found[note.rel] = answer
    moved = _moved(known, entries)
    if moved and (not known or moved > min(slack, len(entries) // 8)):
        kept.write(entries, mode)
    return found


def _moved(known: dict, kept: dict) -> int:
    """How many answers differ between the file and this call's, 0 when they are the same
    (answers kept again are the same objects, so each comparison is by identity first)."""
    return sum(1 for rel, entry in kept.items() if known.get(rel) != entry) + sum(
        1 for rel in known if rel not in kept
    )


def digest(text: str) -> bytes:
    """What `KeptByDigest` keys a text's entry by: blake2b (16 bytes) of its UTF-8."""
    from hashlib import blake2b  # not at import: a stored answer never digests

    return blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class KeptByDigest:
    """Entries kept by the digest of the text they were made from, each a dict of parts (what
    several consumers make of the same text). An entry is never wrong, only stale (a text no
    file holds any more): `save` rewrites the file with the entries this run used once an
    eighth of them are stale or some were added. Given a `side` file, additions go there while
    it holds at most `side_max` entries (read over the main file), so a run that added a few
    entries to a large file does not rewrite all of it."""

    def __init__(self, kept: Kept, side: Kept | None = None, side_max: int = 64):
        self.kept, self.side, self.side_max = kept, side, side_max
        self.entries: dict = kept.read()
        self.has_main = kept.found  # a side file is written only beside a main file
        self.side_entries: dict = side.read() if side is not None else {}
        for key, parts in self.side_entries.items():
            before = self.entries.get(key)
            self.entries[key] = {**before, **parts} if isinstance(before, dict) else parts
        self.used: dict = {}  # digest -> parts read or made in this run
        self.added: dict = {}  # digest -> parts made in this run
        self._keys: dict[str, bytes] = {}  # text -> its digest, for this store's life only

    def key(self, text: str) -> bytes:
        """The text's `digest`, made once however often this store is asked about the text."""
        found = self._keys.get(text)
        if found is None:
            found = self._keys[text] = digest(text)
        return found

    def get(self, key: bytes, part: str):
        entry = self.entries.get(key)
        value = entry.get(part) if isinstance(entry, dict) else None
        if value is not None:
            self.used.setdefault(key, {})[part] = value
        return value

    def put(self, key: bytes, part: str, value) -> None:
        try:
            marshal.dumps(value)
        except ValueError:
            return  # a value marshal cannot hold (a YAML date): made again next time
        self.used.setdefault(key, {})[part] = value
        self.added.setdefault(key, {})[part] = value

    def made(self, key: bytes, part: str, make, valid=lambda value: True):
        """The kept `part` of `key`'s entry when `valid`, else `make()`, kept."""
        value = self.get(key, part)
        if value is None or not valid(value):
            value = make()
            self.put(key, part, value)
        return value

    def save(self, mode: int = FILE_MODE) -> None:
        stale = sum(1 for key in self.entries if key not in self.used)
        too_stale = stale > len(self.entries) // 8
        if not self.added and not too_stale:
            return  # nothing new, and what is stale costs only its share of the read
        small = len(self.side_entries) + len(self.added) <= self.side_max
        if self.side is not None and self.added and self.has_main and not too_stale and small:
            side = dict(self.side_entries)
            for key, parts in self.added.items():
                side[key] = {**side.get(key, {}), **parts}
            self.side.write(side, mode)
            return
        kept = {}
        for key, parts in self.used.items():
            before = self.entries.get(key)
            kept[key] = {**before, **parts} if isinstance(before, dict) else parts
        self.kept.write(kept, mode)
        if self.side is not None:
            self.side.remove()
