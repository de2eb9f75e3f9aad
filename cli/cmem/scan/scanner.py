"""The scan: every pending signal of the divergent layer, and every deferred line with its reason
(SPEC §2; `cmem scan --json` is SPEC §11).

Per note, `signals.scan_note` finds the cue lines. Across the vault this module adds what one
note cannot know: which notes and lines were already converged (`.cmem/state.json`), which key
phrases recur in enough notes, which lines repeat a statement the convergent layer already holds
(the feedback-loop guard) or one it retired (re-emergence).

Reading and detecting is the slow part, so its result is cached per note in the per-machine
machine folder, keyed by (path, mtime_ns, size): an unchanged divergent layer is rescanned by
`stat` alone. The convergent statements the guard needs are cached the same way, keyed by every
convergent file's (path, mtime_ns, size), in a file of their own (`guard-index.marshal`) that also
keeps them merged: a cold scan of the notes reuses it, and when no convergent file changed the
merge is not redone. Both are marshal, not JSON (a JSON cache cost ~20 ms a warm call at 10k notes).
The cache is only a cache: missing, corrupt or from an older cmem, it is rebuilt without a word.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import time
from dataclasses import dataclass, field, replace

from cmem.cache_file import RACY_NS, write_cache
from cmem.errors import CmemError
from cmem.scan.content import content_line_numbers, unaccounted_lines
from cmem.scan.signals import (
    ALREADY_CONVERGED,
    BACKLOG,
    CHANGED,
    DEFERRED,
    EXCLUDED,
    NEW,
    RECURS,
    RETURNED,
    SIGNALS,
    UNJUDGED,
    VAGUE,
    BacklogNote,
    Deferred,
    Hit,
    NoteFlags,
    NoteScan,
    PendingNote,
    Quarantined,
    Signal,
    defer_reason,
    excluded_reason,
    scan_note,
)
from cmem.text.cues import PRIORITY, cue_fingerprint
from cmem.text.tokens import estimate_tokens
from cmem.vault.backlog import in_backlog, load_backlog
from cmem.vault.layers import DIVERGENT, NoteFile, Vault
from cmem.vault.notes import OddFile, find_odd_names, odd_from_note, read_note
from cmem.vault.state_json import BUILTIN, ConvergedNote, State, load_state
from cmem.vault.statements import normalize, parse_statements, split_statement, unlinkable

CACHE_NAME = "scan-cache.marshal"
GUARD_NAME = "guard-index.marshal"
# 5: entries keep the inode and ctime (`_change`); 6: each entry its own bytes; 7: content lines
# and tokens, quotes and callouts read; 8: notes not in UTF-8 decoded (`text/encodings.py`)
CACHE_VERSION = 8


@dataclass(frozen=True)
class Reemerged:
    """A signal that repeats what memory once held: a statement retired into a trace, or a line
    of a note converged (and perhaps archived) before."""

    note: str
    line: int
    cls: str
    excerpt: str
    how: str  # "retired" | "converged"
    where: str  # the convergent file holding the trace, or the note it was converged from
    first_seen: str  # date it was first recorded ("" when unknown)
    retired: str = ""  # date of the trace that retired it

    def to_json(self) -> dict:
        return {
            "note": self.note,
            "line": self.line,
            "class": self.cls,
            "excerpt": self.excerpt,
            "how": self.how,
            "where": self.where,
            "first_seen": self.first_seen or None,
            "retired": self.retired or None,
        }


@dataclass
class ScanResult:
    signals: list[Signal] = field(default_factory=list)
    deferred: list[Deferred] = field(default_factory=list)
    pending: list[PendingNote] = field(default_factory=list)
    odd: list[OddFile] = field(default_factory=list)
    reemerged: list[Reemerged] = field(default_factory=list)
    backlog: list[BacklogNote] = field(default_factory=list)  # an adopted folder's notes
    quarantined: list[Quarantined] = field(default_factory=list)  # no pass takes them
    notes_scanned: int = 0  # divergent notes looked at
    notes_read: int = 0  # of which read from disk (the rest came from the cache)

    def to_json(self) -> dict:
        return {
            "signals": [s.to_json() for s in self.signals],
            "deferred": [d.to_json() for d in self.deferred],
            "reemerged": [r.to_json() for r in self.reemerged],
            "pending": [p.to_json() for p in self.pending],
            "backlog": [{"note": b.note, "tokens": b.tokens} for b in self.backlog],
            "quarantined": [q.to_json() for q in self.quarantined],
            "odd": [{"note": o.rel, "kind": o.kind, "message": o.message} for o in self.odd],
        }


def scan_vault(
    vault: Vault,
    state: State | None = None,
    only: list[str] | None = None,
    backlog: bool = False,
    confirm_only: bool = False,
) -> ScanResult:
    """Scan the divergent layer. `only` limits the result to these notes (path or name); the
    whole layer is still read, because recurrence counts across all notes. `backlog`: the notes
    an adopted folder held are pending too (`cmem converge --backlog`), not only their cue lines.
    `confirm_only`: the notes `only` names are confirmed, as `converge: true` does (a pass the
    user asked for by name: `cmem converge --only NOTE`)."""
    state = load_state(vault.state_file) if state is None else state
    cache = _Cache.load(
        vault.machine_dir / CACHE_NAME, _fingerprint(vault), vault.machine_dir / GUARD_NAME
    )
    # One listing of each folder: the notes, the guard's convergent files and the odd names
    # below all read the folders it holds.
    with vault.listed_once():
        entries = cache.entries(vault.list_layer(DIVERGENT), vault)
        index, odd = cache.convergent_index(vault), find_odd_names(vault)
    cache.save()
    # `only` (a pass's --only): the other notes still count towards recurrence, but only these
    # are judged (a one-note pass at 10k judged ~2,300 lines to keep a handful)
    wanted = _wanted(only, [file for file, _ in entries]) if only else None
    judge = _Judgement(vault, state, index, entries, load_backlog(vault), backlog)
    result = judge.assemble(wanted, confirm_only)
    result.notes_scanned, result.notes_read = len(entries), cache.reads
    result.odd = sorted(result.odd + odd, key=lambda o: (o.rel, o.kind))
    return result


# --- per-note entries and the cache -----------------------------------------------------


@dataclass
class _Entry:
    mtime_ns: int
    size: int
    read_ns: int  # when it was read: entries read too soon after a change are re-read
    change: tuple[int, int] = (0, 0)  # (inode, ctime): `_change`
    sha256: str = ""
    skip: str | None = None  # why the note is not an input
    odd: list[list[str]] = field(default_factory=list)  # [kind, message]
    units: int = 0  # content lines (`scan/content.py`): a new note with none is not pending
    tokens: int = 0  # the note's token estimate, for the budget and the backlog's cost
    scan: NoteScan = field(default_factory=NoteScan)
    # its encoded form (`to_bytes`): made once, when the cache is saved, and saved as it is; an
    # entry decoded from the cache keeps the bytes it came from. Entries are not changed once made, so it stays their truth.
    encoded: bytes | None = field(default=None, compare=False, repr=False)

    def to_bytes(self) -> bytes:
        """The entry as the cache keeps it: one marshal value a note, so a cache rewrite copies
        each entry's bytes instead of encoding every entry again (at 10k notes a cold scan's save
        took 14-20 ms, all of it after the notes were read), and a load decodes only the entries
        it uses."""
        if self.encoded is None:
            self.encoded = marshal.dumps(self.to_json())
        return self.encoded

    @classmethod
    def from_bytes(cls, data: bytes) -> "_Entry":
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
    def from_json(cls, data: dict) -> "_Entry":
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


def _change(st: os.stat_result | None) -> tuple[int, int]:
    """What the (mtime, size) of a file's cache key misses: its inode (a file replaced by
    another) and its ctime, which every write moves, so an edit that keeps the size and sets the
    mtime back (`touch -r`, `rsync -t`, a tool restoring times) is still seen, as git sees it."""
    return (st.st_ino, st.st_ctime_ns) if st is not None else (0, 0)


def _stat(file: NoteFile) -> os.stat_result | None:
    try:
        return os.stat(file.location, follow_symlinks=False)
    except OSError:
        return None  # read_note says why it cannot be read


def _read_entry(file: NoteFile, vault: Vault, st: os.stat_result | None = None) -> _Entry:
    st = _stat(file) if st is None else st
    note = read_note(file, vault.config.max_note_bytes, st=st)
    entry = _Entry(
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


def _fingerprint(vault: Vault) -> str:
    """Everything detection depends on besides the note itself."""
    config = vault.config
    basis = [
        CACHE_VERSION,
        cue_fingerprint(config.extra_cues),
        config.max_note_bytes,
        config.formats.source,
        config.formats.trace,
    ]
    return hashlib.sha1(json.dumps(basis, ensure_ascii=False).encode("utf-8")).hexdigest()


def _trusted(mtime_ns: int, read_ns: int) -> bool:
    """A file changed again within its mtime's granularity keeps its (mtime, size): an entry read
    less than RACY_NS after the file's mtime is re-read next time (git's "racily clean" problem)."""
    return mtime_ns + RACY_NS < read_ns


def _load_marshal(path, fingerprint: str, required: str) -> dict | None:
    """A cache file's data, or None when it is missing, corrupt, from another version or for
    another detection setup (then it is rebuilt)."""
    try:
        data = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if (
        not isinstance(data, dict)
        or data.get("version") != CACHE_VERSION
        or data.get("fingerprint") != fingerprint
    ):
        return None
    return data if isinstance(data.get(required), dict) else None


def _save_marshal(path, data: dict) -> None:
    """Replaced whole, without fsync (`cmem.cache_file`): both files are caches that a lost
    write only makes slower, and the fsync cost a cold scan a few ms for nothing."""
    try:
        write_cache(os.fspath(path), marshal.dumps(data))  # a read-only folder: not written
    except ValueError:
        pass  # a value marshal cannot hold: not stored


class _Cache:
    def __init__(
        self,
        path,
        fingerprint: str,
        data: dict | None = None,
        guard_path=None,
    ):
        self.path = path
        self.guard_path = guard_path
        self.fingerprint = fingerprint
        self.raw_notes: dict = (data or {}).get("notes", {})
        self._raw_guard: dict | None = None  # `raw_guard`
        self.notes: dict[str, _Entry] = {}
        self.convergent: dict | None = None  # rel -> the file's guard entry
        self.merged: tuple | None = None
        self.dirty = False
        self.guard_dirty = False
        self.reads = 0

    @classmethod
    def load(cls, path, fingerprint: str, guard_path=None) -> "_Cache":
        data = _load_marshal(path, fingerprint, "notes")
        cache = cls(path, fingerprint, data, guard_path)
        cache.dirty = data is None
        return cache

    @property
    def raw_guard(self) -> dict:
        """The guard index as stored, loaded when first asked for (by `convergent_index`)."""
        if self._raw_guard is None:
            loaded = (
                _load_marshal(self.guard_path, self.fingerprint, "files")
                if self.guard_path is not None
                else None
            )
            self._raw_guard = loaded or {}
        return self._raw_guard

    def entries(self, files: list[NoteFile], vault: Vault) -> list[tuple[NoteFile, _Entry]]:
        """Each listed note with its entry, in listing order: from the cache when its (mtime,
        size) still match, else read (with the stat just taken: one per note)."""
        found: dict[str, _Entry] = {}
        misses = []
        for file in files:
            try:
                st = file.lstat()  # the listing's stat when it took one
            except OSError:
                continue  # gone since the listing
            cached = self._cached(file.rel)
            if (
                cached
                and cached.mtime_ns == st.st_mtime_ns
                and cached.size == st.st_size
                and cached.change == _change(st)
                and _trusted(cached.mtime_ns, cached.read_ns)
            ):
                found[file.rel] = cached
            else:
                misses.append((file, st))
        read = [_read_entry(file, vault, st) for file, st in misses]
        for (file, _), entry in zip(misses, read):
            found[file.rel] = entry
        self.reads += len(misses)
        self.dirty = self.dirty or bool(misses)
        self.notes.update(found)
        return [(file, found[file.rel]) for file in files if file.rel in found]

    def _cached(self, rel: str) -> _Entry | None:
        raw = self.raw_notes.get(rel)
        if raw is None:
            return None
        try:
            return _Entry.from_bytes(raw)
        except (KeyError, TypeError, ValueError, EOFError):
            return None  # one bad entry costs one read

    def convergent_index(self, vault: Vault) -> "_ConvergentIndex":
        """The guard's statements, rebuilt from the convergent files whose stat (mtime, size,
        inode, ctime) changed; the others come from the cache — merged already when none
        changed."""
        raw_files = self.raw_guard.get("files", {})
        files = {}
        misses = []
        for file in vault.convergent_files():
            try:
                st = file.lstat()  # the listing's stat when it took one
            except OSError:
                continue
            cached = raw_files.get(file.rel) if isinstance(raw_files, dict) else None
            if not (
                isinstance(cached, dict)
                and cached.get("m") == st.st_mtime_ns
                and cached.get("s") == st.st_size
                and cached.get("c") == list(_change(st))
                and _trusted(st.st_mtime_ns, cached.get("r", 0))
            ):
                misses.append((file, st))
                cached = None  # read below, all at once; its place in the order kept
            files[file.rel] = cached
        for (file, _), entry in zip(misses, [_convergent_entry(f, vault, st) for f, st in misses]):
            files[file.rel] = entry
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
            return _ConvergentIndex(*merged)
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
        if self.guard_dirty and self.guard_path is not None and self.convergent is not None:
            _save_marshal(
                self.guard_path,
                {
                    "version": CACHE_VERSION,
                    "fingerprint": self.fingerprint,
                    "files": self.convergent,
                    "merged": self.merged,
                },
            )
        if self.dirty:
            _save_marshal(
                self.path,
                {
                    "version": CACHE_VERSION,
                    "fingerprint": self.fingerprint,
                    "notes": {rel: entry.to_bytes() for rel, entry in sorted(self.notes.items())},
                },
            )


# --- the convergent layer: the guard's statements and the retired ones -----------------


@dataclass
class _ConvergentIndex:
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
    entry = {
        "m": note.mtime_ns,
        "s": note.size,
        "r": time.time_ns(),
        "c": list(_change(st)),
        "statements": "",
        "retired": {},
    }
    if not note.usable:
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
                entry["retired"].setdefault(
                    _digest(key), [trace.date, older[0].date if older else ""]
                )
            traces.extend(older)
    entry["statements"] = "".join(digests)  # one string, not a list: the cache parses faster
    return entry


def _merge_convergent(files: dict[str, dict]) -> _ConvergentIndex:
    index = _ConvergentIndex({}, {})
    for rel, entry in files.items():
        joined = entry["statements"]
        for start in range(0, len(joined), _DIGEST_CHARS):
            index.statements.setdefault(joined[start : start + _DIGEST_CHARS], rel)
        for digest, (retired_on, first_seen) in entry["retired"].items():
            index.retired.setdefault(digest, (rel, retired_on, first_seen))
    for digest in index.statements:
        index.retired.pop(digest, None)  # a wording that came back is not retired
    return index


# --- assembling the result --------------------------------------------------------------


class _Judgement:
    """The scan's result from every note's entry (SPEC §2): which notes are pending and why.

    A note is pending while it holds a content line no pass accounted for: new (no entry in
    `state.json`), changed since the pass that converged or deferred it (its new lines, and the
    lines deferred then come back), judged by the builtin engine, which reads cue lines only
    (the rest waits for a model), or deferred by a model and recurring (a note pending now
    shares its key phrases) or asked for by name (`--only`). Cue lines only rank and mark. A
    note an adopted folder held, unchanged since, is pending only through its cue lines; the
    rest is the backlog, pending when `backlog` is asked for."""

    def __init__(self, vault, state, index, entries, adopted, backlog):
        self.vault, self.state, self.index, self.entries = vault, state, index, entries
        self.adopted, self.include_backlog = adopted, backlog
        self.min_recurrence = vault.config.min_recurrence
        self.recurring = _recurring_keys(entries, self.min_recurrence, state)
        self.converged_lines = _converged_lines(state)
        self.result = ScanResult()

    def assemble(self, wanted: set[str] | None, confirm: bool = False) -> ScanResult:
        """With `wanted`, the signals, deferred lines and pending notes of those notes alone (the
        odd files and recurrence still come from all)."""
        result = self.result
        deferred_notes = []  # (file, entry, done, hits' outcomes): model-deferred, unchanged
        for file, entry in self.entries:
            if entry.odd:
                result.odd.extend(OddFile(file.rel, kind, message) for kind, message in entry.odd)
            if wanted is not None and file.rel not in wanted:
                continue
            if entry.skip:
                continue  # not an input
            flags = entry.scan.flags
            if flags.excluded:
                result.deferred.append(Deferred(file.rel, 0, excluded_reason(flags), kind=EXCLUDED))
                continue
            waiting = self._note(file, entry, explicit=confirm and wanted is not None)
            if waiting is not None:
                deferred_notes.append(waiting)
        self._returning(deferred_notes)
        _sort(result, {file.rel: entry.mtime_ns for file, entry in self.entries})
        return result

    def _note(self, file: NoteFile, entry: _Entry, explicit: bool):
        """Judge one note into the result; a note a model deferred, unchanged since, is handed
        back for the recurrence rule (`_returning`)."""
        done = self.state.notes.get(file.rel)
        same = done is not None and done.sha256 == entry.sha256
        held = self._unlinkable(file, entry)
        if held is not None:
            self.result.quarantined.append(held)
            return None
        if same and done.quarantined:
            # the builtin engine failed on it as it is: a model may still take it (UNJUDGED)
            self.result.quarantined.append(
                Quarantined(
                    file.rel,
                    done.quarantined,
                    "edit the note (it is pending again then), or converge it with a model: "
                    f"`cmem converge --only {file.name!r} --llm CMD`",
                )
            )
        adopted = in_backlog(self.adopted, file.rel, entry.sha256) and not self.include_backlog
        signals, deferred = [], []
        # a note asked for by name (`--only`) is confirmed for this pass: its deferred lines count
        flags = replace(entry.scan.flags, confirmed=True) if explicit else entry.scan.flags
        for hit in entry.scan.hits:
            if done is not None and hit.line_key in done.lines:
                continue  # converged in an earlier pass; only new lines are pending
            if (
                same
                and hit.line_key in done.deferred
                and not (explicit or self._returns(hit, done))
            ):
                deferred.append(self._deferred_hit(file.rel, hit, done))
                continue
            outcome = _judge(file.rel, hit, flags, self.index, self.recurring, self.min_recurrence)
            if isinstance(outcome, Deferred):
                deferred.append(outcome)
                continue
            signals.append(outcome)
            if hit.line_key in self.converged_lines or (
                hit.content_key and hit.content_key in self.index.retired
            ):
                again = _reemergence(file.rel, hit, self.index, self.converged_lines)
                if again is not None:
                    self.result.reemerged.append(again)
        self.result.deferred.extend(deferred)
        why, model_only = self._why(file, entry, done, same, adopted, explicit, signals)
        if why == BACKLOG:
            self.result.backlog.append(BacklogNote(file.rel, entry.tokens))
            return None
        if why is None:
            if same and done.deferred and done.engine != BUILTIN:
                self._note_deferred(file, done, deferred)
                return (file, entry, done)
            return None
        self._pend(file, entry, done, same, why, signals, model_only)
        return None

    def _unlinkable(self, file: NoteFile, entry: _Entry) -> Quarantined | None:
        """A note whose name no wikilink can cite: a statement could never name its source, so
        no pass takes it; it is named instead (SPEC §1 names, issue 35)."""
        if not entry.units and not entry.scan.hits:
            return None  # nothing to converge in it anyway
        problem = unlinkable(file.name)
        if problem is None:
            return None
        return Quarantined(
            file.rel,
            f"{problem}, so no statement can cite it",
            "rename the note (without '#', '|', '^' or brackets); it is pending again then",
        )

    def _why(self, file, entry, done, same, adopted, explicit, signals):
        """(why the note is pending or None, whether only a model can take it)."""
        if done is None:
            if not entry.units and not signals:
                return None, False
            if adopted and not explicit:
                return (SIGNALS, False) if signals else (BACKLOG, False)
            return NEW, not signals
        if not same:
            # the lines it holds now that no pass converged: a deletion alone leaves none
            if signals or self._unaccounted(file, done.lines):
                return CHANGED, not signals
            return None, False
        if signals:
            return RETURNED, False  # a line deferred by the builtin rules that recurs now
        if explicit and done.deferred:
            return RETURNED, True  # asked for by name: its deferred lines are judged again
        if done.engine == BUILTIN and (done.unjudged or done.deferred):
            # judged by cue lines alone: what the builtin engine could not read waits for a model
            return (BACKLOG, False) if adopted else (UNJUDGED, True)
        return None, False

    def _unaccounted(self, file: NoteFile, accounted: set[str]) -> bool:
        note = read_note(file, self.vault.config.max_note_bytes)
        if not note.usable:
            return False
        return bool(unaccounted_lines(note.lines, note.body_start, accounted))

    def _returns(self, hit: Hit, done: ConvergedNote) -> bool:
        """A line the builtin rules deferred (a one-off, venting, vague) is judged again: it
        returns once it recurs or the note is confirmed. A model's deferral stands."""
        return done.engine == BUILTIN and bool(hit.kind)

    def _deferred_hit(self, rel: str, hit: Hit, done: ConvergedNote) -> Deferred:
        reason = done.deferred.get(hit.line_key) or "deferred by the last pass"
        return Deferred(rel, hit.line, reason, hit.cls, hit.cue, DEFERRED, hit.excerpt)

    def _note_deferred(self, file: NoteFile, done: ConvergedNote, listed: list[Deferred]) -> None:
        """A model's deferral of lines without a cue, said once for the note (line 0)."""
        shown = sum(1 for d in listed if d.kind == DEFERRED)
        rest = len(done.deferred) - shown
        if rest > 0:
            reasons = list(dict.fromkeys(done.deferred.values()))
            reason = reasons[0] + (
                f" (and {len(reasons) - 1} other reasons)" if len(reasons) > 1 else ""
            )
            lines = "line" if rest == 1 else "lines"
            self.result.deferred.append(
                Deferred(file.rel, 0, f"{rest} {lines} deferred: {reason}", kind=DEFERRED)
            )

    def _pend(self, file, entry, done, same, why, signals, model_only) -> None:
        flags = entry.scan.flags
        # the lines not to judge again: those converged, and a model's deferrals while they stand
        if done is None:
            accounted: frozenset[str] = frozenset()
        elif same and done.engine != BUILTIN and why == RETURNED and not model_only:
            accounted = frozenset(done.lines | set(done.deferred))
        else:
            accounted = frozenset(done.lines)
        keys = sorted({key for hit in entry.scan.hits for key in hit.keys})
        self.result.signals.extend(signals)
        self.result.pending.append(
            PendingNote(
                file.rel,
                file.name,
                entry.sha256,
                entry.mtime_ns,
                signals,
                list(flags.tags),
                list(entry.scan.links),
                flags.confirmed,
                why=why,
                model_only=model_only,
                tokens=entry.tokens,
                accounted=accounted,
                keys=keys,
            )
        )

    def _returning(self, deferred_notes: list) -> None:
        """A note a model deferred, unchanged since, comes back while another pending note shares
        its key phrases (SPEC §2: the same key phrase recurs in a later note); once that note is
        converged or deferred too, it waits again, so nothing is sent twice unchanged."""
        if not deferred_notes or not self.result.pending:
            return
        pending_keys = [(p.rel, set(p.keys)) for p in self.result.pending]
        for file, entry, done in deferred_notes:
            wanted = set(done.deferred_keys)
            if not wanted:
                continue
            need = min(2, len(wanted))
            if any(rel != file.rel and len(wanted & keys) >= need for rel, keys in pending_keys):
                self.result.deferred = [
                    d
                    for d in self.result.deferred
                    if not (d.note == file.rel and d.kind == DEFERRED)
                ]
                self._pend(file, entry, done, True, RECURS, [], True)


def _judge(
    rel: str,
    hit: Hit,
    flags: NoteFlags,
    index: _ConvergentIndex,
    recurring: set[str],
    min_recurrence: int,
) -> Signal | Deferred:
    where = index.holding(hit.content_key)
    if where:
        # pasted back from memory (by an agent or the user): converging it again would loop
        return Deferred(
            rel, hit.line, f"already in {where}", hit.cls, hit.cue, ALREADY_CONVERGED, hit.excerpt
        )
    if not hit.kind or flags.confirmed:
        return Signal(rel, hit.line, hit.cls, hit.cue, hit.excerpt)
    if hit.cls == "recurring" and hit.kind != VAGUE and not recurring.isdisjoint(hit.keys):
        return Signal(rel, hit.line, hit.cls, hit.cue, hit.excerpt)
    return Deferred(
        rel,
        hit.line,
        defer_reason(hit.kind, hit.cue, min_recurrence),
        hit.cls,
        hit.cue,
        hit.kind,
        hit.excerpt,
    )


def _recurring_keys(
    entries: list[tuple[NoteFile, _Entry]], min_recurrence: int, state: State | None = None
) -> set[str]:
    """The key phrases the recurring lines of at least `min_recurrence` notes hold (every
    divergent note counts, converged or not; excluded notes do not; so do the notes a pass
    converged that have left the divergent layer — archived — by the keys `state.json` kept).
    One set, so `_judge` tests a line's phrases against it in C (`isdisjoint`) where it asked
    any() over a generator of look-ups, for each of the ~2,000 recurring lines of a 10k cold
    scan's assembly."""
    counts: dict[str, int] = {}
    if state is not None and state.notes:
        divergent = {file.rel for file, _ in entries}
        for rel, done in state.notes.items():
            if rel not in divergent:
                for key in set(done.keys):
                    counts[key] = counts.get(key, 0) + 1
    for _, entry in entries:
        if entry.skip or entry.scan.flags.excluded:
            continue
        keys = set()  # a note counts once, however many of its lines hold the phrase
        for hit in entry.scan.hits:
            if hit.keys:
                keys.update(hit.keys)
        for key in keys:
            counts[key] = counts.get(key, 0) + 1
    return {key for key, count in counts.items() if count >= min_recurrence}


def _converged_lines(state: State) -> dict[str, tuple[str, str]]:
    lines: dict[str, tuple[str, str]] = {}
    for rel, converged in state.notes.items():
        for key in converged.lines:
            if key not in lines or converged.time < lines[key][1]:
                lines[key] = (rel, converged.time)
    return lines


def _reemergence(
    rel: str, hit: Hit, index: _ConvergentIndex, converged_lines: dict[str, tuple[str, str]]
) -> Reemerged | None:
    retired = index.retiring(hit.content_key)
    if retired:
        where, retired_on, first_seen = retired
        return Reemerged(
            rel, hit.line, hit.cls, hit.excerpt, "retired", where, first_seen, retired_on
        )
    earlier = converged_lines.get(hit.line_key)
    if earlier and earlier[0] != rel:
        return Reemerged(
            rel, hit.line, hit.cls, hit.excerpt, "converged", earlier[0], earlier[1][:10]
        )
    return None


def _sort(result: ScanResult, mtimes: dict[str, int]) -> None:
    """Priority, then age (older notes first), then note, then line."""
    result.signals.sort(key=lambda s: (s.priority, mtimes.get(s.note, 0), s.note, s.line))
    result.reemerged.sort(key=lambda r: (PRIORITY[r.cls], mtimes.get(r.note, 0), r.note, r.line))
    result.deferred.sort(key=lambda d: (mtimes.get(d.note, 0), d.note, d.line))
    result.backlog.sort(key=lambda b: (mtimes.get(b.note, 0), b.note))
    result.pending.sort(key=lambda p: (p.best_priority, p.mtime_ns, p.rel))


def _wanted(only: list[str], files: list[NoteFile]) -> set[str]:
    """The notes `only` names (each by path, path without `.md`, or name)."""
    names = {}
    for file in files:
        for alias in (file.rel, file.rel.removesuffix(".md"), file.name):
            names.setdefault(alias, file.rel)
    wanted = set()
    for name in only:
        rel = names.get(name) or names.get(name.removesuffix(".md"))
        if rel is None:
            raise CmemError(
                f"no divergent note named {name!r}; `cmem scan` lists the notes with signals."
            )
        wanted.add(rel)
    return wanted
