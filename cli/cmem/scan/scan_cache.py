"""What a scan keeps in the machine folder, so an unchanged vault is rescanned by `stat` alone:
each divergent note's entry (its signals, flags, content lines, tokens; `scan-cache.marshal`)
under its `stat_key`, and the guard's index of the convergent layer's statements, and of the
ones it retired (`guard-index.marshal`), under every convergent file's stat, kept merged. Two
`cache_store.Kept` files: missing, corrupt or from an older cmem, they are rebuilt without a
word."""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import time
from dataclasses import dataclass, field

from cmem.cache_store import Kept, settled, stat_key
from cmem.scan.content import content_line_numbers
from cmem.scan.signals import Hit, NoteFlags, NoteScan, scan_note
from cmem.text.cues import cue_fingerprint
from cmem.text.tokens import estimate_tokens
from cmem.vault.layers import NoteFile, Vault
from cmem.vault.notes import OddFile, odd_from_note, read_note
from cmem.vault.statements import normalize, parse_statements, split_statement

CACHE_NAME = "scan-cache.marshal"
GUARD_NAME = "guard-index.marshal"


# --- per-note entries and the cache -----------------------------------------------------


@dataclass
class NoteEntry:
    mtime_ns: int
    size: int
    read_ns: int  # when it was read: entries read too soon after a change are re-read
    change: tuple[int, int] = (0, 0)  # (inode, ctime): with mtime and size, its `stat_key`
    sha256: str = ""
    skip: str | None = None  # why the note is not an input
    odd: list[list[str]] = field(default_factory=list)  # [kind, message]
    units: int = 0  # content lines (`scan/content.py`): a new note with none is not pending
    tokens: int = 0  # the note's token estimate, for the budget and the backlog's cost
    scan: NoteScan = field(default_factory=NoteScan)
    # its encoded form (`to_bytes`), made once; entries never change, so it stays their truth
    encoded: bytes | None = field(default=None, compare=False, repr=False)

    def to_bytes(self) -> bytes:
        """The entry as the cache keeps it: one marshal value a note, so a cache rewrite copies
        each entry's bytes instead of encoding every entry again, and a load decodes only the
        entries it uses."""
        if self.encoded is None:
            self.encoded = marshal.dumps(self.to_json())
        return self.encoded

    @classmethod
    def from_bytes(cls, data: bytes) -> NoteEntry:
        entry = cls.from_json(marshal.loads(data))
        entry.encoded = data
        return entry

    def to_json(self) -> dict:
        flags = self.scan.flags
        return {
            "m": self.mtime_ns,
            "s": self.size,
            "r": self.read_ns,
            "c": list(self.change),
            "h": self.sha256,
            "skip": self.skip,
            "odd": self.odd,
            "u": self.units,
            "t": self.tokens,
            "flags": [flags.confirmed, flags.excluded, flags.reason, flags.tags, flags.problem],
            "links": self.scan.links,
            "hits": [hit.to_list() for hit in self.scan.hits],
        }

    @classmethod
    def from_json(cls, data: dict) -> NoteEntry:
        confirmed, excluded, reason, tags, problem = data["flags"]
        flags = NoteFlags(bool(confirmed), bool(excluded), str(reason), list(tags), problem)
        scan = NoteScan([Hit.from_list(hit) for hit in data["hits"]], flags, list(data["links"]))
        return cls(
            int(data["m"]),
            int(data["s"]),
            int(data["r"]),
            tuple(data["c"]),
            str(data["h"]),
            data["skip"],
            list(data["odd"]),
            int(data["u"]),
            int(data["t"]),
            scan,
        )

    def holds(self, st: os.stat_result) -> bool:
        """Whether the entry still stands for the file whose stat is `st` (the one racy rule)."""
        return (self.mtime_ns, self.size, *self.change) == stat_key(st) and settled(
            self.mtime_ns, self.read_ns
        )


def _change(st: os.stat_result | None) -> tuple[int, int]:
    """The inode and ctime of a file's `stat_key`, kept beside the note's mtime and size."""
    return stat_key(st)[2:] if st is not None else (0, 0)


def _stat(file: NoteFile) -> os.stat_result | None:
    try:
        return os.stat(file.location, follow_symlinks=False)
    except OSError:
        return None  # read_note says why it cannot be read


def _read_entry(file: NoteFile, vault: Vault, st: os.stat_result | None = None) -> NoteEntry:
    st = _stat(file) if st is None else st
    note = read_note(file, vault.config.max_note_bytes, st=st)
    entry = NoteEntry(
        note.mtime_ns, note.size, time.time_ns(), _change(st), note.sha256, note.skip_reason
    )
    entry.odd = [[odd.kind, odd.message] for odd in odd_from_note(note)]
    if note.usable:
        entry.units = len(content_line_numbers(note.lines, note.body_start))
        entry.tokens = estimate_tokens(note.text)
        entry.scan = scan_note(note, vault.config.extra_cues, vault.config.formats)
        # the guard only tests equality: a digest is enough, and keeps the cache small
        entry.scan.hits = [
            # built directly: dataclasses.replace costs more than the hit itself
            Hit(
                hit.line,
                hit.cls,
                hit.cue,
                hit.excerpt,
                hit.kind,
                hit.line_key,
                _digest(hit.content_key) if hit.content_key else "",
                hit.keys,
            )
            for hit in entry.scan.hits
        ]
        if entry.scan.flags.problem:
            entry.odd.append(
                ["frontmatter", f"{entry.scan.flags.problem}; cmem reads it but never rewrites it"]
            )
    return entry


def scan_fingerprint(vault: Vault) -> str:
    """Everything detection depends on besides the note itself."""
    config = vault.config
    basis = [
        cue_fingerprint(config.extra_cues),
        config.max_note_bytes,
        config.formats.source,
        config.formats.trace,
    ]
    return hashlib.sha1(json.dumps(basis, ensure_ascii=False).encode("utf-8")).hexdigest()


class ScanCache:
    def __init__(self, path, fingerprint: str, guard_path=None):
        self.kept = Kept(path, "scan", fingerprint)
        self.guard = Kept(guard_path, "scan", fingerprint, "guard")
        self.raw_notes: dict = self.kept.read()
        self._raw_guard: dict | None = None  # `raw_guard`
        self.notes: dict[str, NoteEntry] = {}
        self.convergent: dict | None = None  # rel -> the file's guard entry
        self.merged: tuple | None = None
        self.dirty = not self.kept.found  # a missing, damaged or foreign file is written anew
        self.guard_dirty = False
        self.reads = 0
        self.left = 0  # notes `entries` left unread at its deadline

    @classmethod
    def load(cls, path, fingerprint: str, guard_path=None) -> ScanCache:
        return cls(path, fingerprint, guard_path)

    @property
    def raw_guard(self) -> dict:
        """The guard index as stored, loaded when first asked for (by `convergent_index`)."""
        if self._raw_guard is None:
            self._raw_guard = self.guard.read()
        return self._raw_guard

    def entries(
        self, files: list[NoteFile], vault: Vault, deadline: float | None = None
    ) -> list[tuple[NoteFile, NoteEntry]]:
        """Each listed note with its entry, in listing order: from the cache when its (mtime,
        size) still match, else read (with the stat just taken: one per note). `deadline` (a
        `time.monotonic()`): notes still to read past it are left out (`warm`)."""
        found: dict[str, NoteEntry] = {}
        misses = []
        for file in files:
            try:
                st = file.lstat()  # the listing's stat when it took one
            except OSError:
                continue  # gone since the listing
            cached = self._cached(file.rel)
            if cached and cached.holds(st):
                found[file.rel] = cached
            else:
                misses.append((file, st))
        for at, (file, st) in enumerate(misses):
            if deadline is not None and time.monotonic() > deadline:
                self.left, misses = len(misses) - at, misses[:at]
                break
            found[file.rel] = _read_entry(file, vault, st)
        self.reads += len(misses)
        self.dirty = self.dirty or bool(misses)
        self.notes.update(found)
        return [(file, found[file.rel]) for file in files if file.rel in found]

    def _cached(self, rel: str) -> NoteEntry | None:
        raw = self.raw_notes.get(rel)
        if raw is None:
            return None
        try:
            return NoteEntry.from_bytes(raw)
        except (KeyError, TypeError, ValueError, EOFError):
            return None  # one bad entry costs one read

    def warm_convergent(self, vault: Vault, deadline: float) -> bool:
        """The guard's entries of the convergent files read until `deadline`, kept without
        their merge (made by the next `convergent_index`); whether none is left to read."""
        raw_files = self.raw_guard.get("files", {})
        raw_files = raw_files if isinstance(raw_files, dict) else {}
        files, misses = {}, []
        for file in vault.convergent_files():
            try:
                st = file.lstat()
            except OSError:
                continue
            cached = raw_files.get(file.rel)
            if (
                isinstance(cached, dict)
                and cached.get("k") == stat_key(st)
                and settled(st.st_mtime_ns, cached.get("r", 0))
            ):
                files[file.rel] = cached
            else:
                misses.append((file, st))
        done = True
        for at, (file, st) in enumerate(misses):
            if time.monotonic() > deadline:
                misses, done = misses[:at], False
                break
            files[file.rel] = _convergent_entry(file, vault, st)
        if misses:
            self.convergent, self.merged, self.guard_dirty = files, None, True
        return done

    def convergent_index(self, vault: Vault) -> ConvergentIndex:
        """The guard's statements, rebuilt from the convergent files whose stat (mtime, size,
        inode, ctime) changed; the others come from the cache — merged already when none
        changed."""
        raw_files = self.raw_guard.get("files", {})
        slots: dict[str, dict | None] = {}  # None: read below
        misses = []
        for file in vault.convergent_files():
            try:
                st = file.lstat()  # the listing's stat when it took one
            except OSError:
                continue
            cached = raw_files.get(file.rel) if isinstance(raw_files, dict) else None
            if not (
                isinstance(cached, dict)
                and cached.get("k") == stat_key(st)
                and settled(st.st_mtime_ns, cached.get("r", 0))
            ):
                misses.append((file, st))
                cached = None  # read below, all at once; its place in the order kept
            slots[file.rel] = cached
        read = {file.rel: _convergent_entry(file, vault, st) for file, st in misses}
        files = {rel: read[rel] if entry is None else entry for rel, entry in slots.items()}
        changed = bool(misses)
        if set(files) != set(raw_files):
            changed = True
        self.convergent = files
        merged = self.raw_guard.get("merged")
        if (
            not changed
            and isinstance(merged, tuple)
            and len(merged) == 2
            and all(isinstance(part, dict) for part in merged)
        ):
            return ConvergentIndex(*merged)
        self.guard_dirty = True
        try:
            index = _merge_convergent(files)
        except (KeyError, TypeError, ValueError, AttributeError):
            self.convergent = files = {
                f.rel: _convergent_entry(f, vault) for f in vault.convergent_files()
            }  # a damaged entry
            index = _merge_convergent(files)
        self.merged = (index.statements, index.retired)
        return index

    def save(self) -> None:
        if set(self.raw_notes) != set(self.notes):
            self.dirty = True  # notes came or went
        if self.guard_dirty and self.convergent is not None:
            self.guard.write({"files": self.convergent, "merged": self.merged})
        if self.dirty:
            self.kept.write({rel: entry.to_bytes() for rel, entry in sorted(self.notes.items())})


def warm(vault: Vault, deadline: float) -> bool:
    """A vault's first scan spread over several calls: the entries of the divergent notes, then
    of the convergent files (the guard's), read until `deadline` and kept; the rest is the next
    call's. Whether everything is kept now (then a scan reads nothing)."""
    from cmem.vault.layers import DIVERGENT

    cache = ScanCache.load(
        vault.machine_dir / CACHE_NAME, scan_fingerprint(vault), vault.machine_dir / GUARD_NAME
    )
    with vault.listed_once():
        files = vault.list_layer(DIVERGENT)
        cache.entries(files, vault, deadline)
        notes_done = cache.left == 0
        guard_done = cache.warm_convergent(vault, deadline)
    cache.save()
    return notes_done and guard_done


# --- the convergent layer: the guard's statements and the retired ones -----------------


@dataclass
class ConvergentIndex:
    statements: dict[str, str]  # digest of a normalised statement -> convergent file holding it
    retired: dict[
        str, tuple[str, str, str]
    ]  # digest of an old wording -> (file, date retired, date first seen)

    def holding(self, digest: str) -> str | None:
        return self.statements.get(digest) if digest else None

    def retiring(self, digest: str) -> tuple[str, str, str] | None:
        return self.retired.get(digest) if digest else None


_DIGEST_CHARS = 16


def _digest(key: str) -> str:
    """Statements are cached as short digests: the cache stays small and loads fast."""
    return hashlib.blake2b(key.encode("utf-8"), digest_size=_DIGEST_CHARS // 2).hexdigest()


def _convergent_entry(file: NoteFile, vault: Vault, st: os.stat_result | None = None) -> dict:
    """One convergent file's statements and retired wordings, as cached."""
    st = _stat(file) if st is None else st
    note = read_note(file, vault.config.max_note_bytes, st=st)
    retired: dict[str, list[str]] = {}  # digest → [from, until]
    entry = {
        "k": (note.mtime_ns, note.size, *_change(st)),
        "r": time.time_ns(),
        "statements": "",
        "retired": retired,
    }
    if not note.usable:
        # one that cannot be read is named by status, scan and doctor; a pass leaves it alone
        entry["odd"] = [
            [odd.kind, f"{odd.message}; cmem leaves this memory file alone until it can read it"]
            for odd in odd_from_note(note)
            if odd.kind == "unreadable"
        ]
        return entry
    formats = vault.config.formats
    digests = []
    for statement in parse_statements(note.body, note.body_start, formats):
        if statement.key:
            digests.append(_digest(statement.key))
        traces = list(statement.traces)
        while traces:
            trace = traces.pop()
            older = trace.older
            key = normalize(split_statement(trace.old, formats)[0])
            if key:
                # the wording was current from the older trace's date until this one's
                retired.setdefault(_digest(key), [trace.date, older[0].date if older else ""])
            traces.extend(older)
    entry["statements"] = "".join(digests)  # one string, not a list: the cache parses faster
    return entry


def memory_odd(convergent: dict | None) -> list[OddFile]:
    """The memory files the guard could not read (`_convergent_entry`), as odd files."""
    return [
        OddFile(rel, kind, message)
        for rel, entry in (convergent or {}).items()
        for kind, message in entry.get("odd", ())
    ]


def _merge_convergent(files: dict[str, dict]) -> ConvergentIndex:
    index = ConvergentIndex({}, {})
    for rel, entry in files.items():
        joined = entry["statements"]
        for start in range(0, len(joined), _DIGEST_CHARS):
            index.statements.setdefault(joined[start : start + _DIGEST_CHARS], rel)
        for digest, (retired_on, first_seen) in entry["retired"].items():
            index.retired.setdefault(digest, (rel, retired_on, first_seen))
    for digest in index.statements:
        index.retired.pop(digest, None)  # a wording that came back is not retired
    return index
