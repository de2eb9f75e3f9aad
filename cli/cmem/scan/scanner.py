"""The scan: every pending signal of the divergent layer, and every deferred line with its reason
(docs/design.md §2; `cmem scan --json` is docs/design.md §11).

Per note, `signals.scan_note` finds the cue lines. Across the vault this module adds what one
note cannot know: which notes and lines were already converged (`.cmem/state.json`), which key
phrases recur in enough notes, which lines repeat a statement the convergent layer already holds
(the feedback-loop guard) or one it retired (re-emergence).

Reading and detecting is the slow part, so each note's result, and the convergent statements
the guard needs, are kept in the machine folder by their files' stats (`scan/scan_cache.py`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from cmem.errors import CmemError
from cmem.scan.archive_recurrence import ArchivedRecurrence, archived_recurrences
from cmem.scan.content import unaccounted_lines
from cmem.scan.scan_cache import (
    CACHE_NAME,
    GUARD_NAME,
    ConvergentIndex,
    NoteEntry,
    ScanCache,
    memory_odd,
    scan_fingerprint,
)
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
    PendingNote,
    Quarantined,
    Signal,
    defer_reason,
    excluded_reason,
)
from cmem.text.cues import PRIORITY
from cmem.vault.backlog import in_backlog, read_record
from cmem.vault.layers import DIVERGENT, NoteFile, Vault
from cmem.vault.notes import OddFile, find_odd_names, read_note
from cmem.vault.state_json import BUILTIN, ConvergedNote, State, load_state
from cmem.vault.statements import unlinkable


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
    # notes of folders read since the backlog's record (path → sha256): backlog until a pass
    # records them (`vault/backlog.py: widened_record`)
    widened: dict[str, str] = field(default_factory=dict)
    quarantined: list[Quarantined] = field(default_factory=list)  # no pass takes them
    notes_scanned: int = 0  # divergent notes looked at
    notes_read: int = 0  # of which read from disk (the rest came from the cache)
    builtin_lines: int = 0  # lines the builtin engine converged so far (state.json)

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
    cache = ScanCache.load(
        vault.machine_dir / CACHE_NAME, scan_fingerprint(vault), vault.machine_dir / GUARD_NAME
    )
    # One listing of each folder: the notes, the guard's convergent files and the odd names
    # below all read the folders it holds.
    with vault.listed_once():
        entries = cache.entries(vault.list_layer(DIVERGENT), vault)
        index, odd = cache.convergent_index(vault), find_odd_names(vault)
        odd += memory_odd(cache.convergent)
        cache.save()  # first: it makes the machine folder the archive's keys are kept in
        archived = _archive_if_needed(vault, entries, state)
    # `only` (a pass's --only): the other notes still count towards recurrence, but only these
    # are judged (a one-note pass at 10k judged ~2,300 lines to keep a handful)
    wanted = _wanted(only, [file for file, _ in entries]) if only else None
    judge = _Judgement(vault, state, index, entries, read_record(vault), backlog, archived)
    result = judge.assemble(wanted, confirm_only)
    result.notes_scanned, result.notes_read = len(entries), cache.reads
    result.odd = sorted(result.odd + odd, key=lambda o: (o.rel, o.kind))
    return result


# --- assembling the result --------------------------------------------------------------


class _Judgement:
    """The scan's result from every note's entry (docs/design.md §2): which notes are pending and
    why.

    A note is pending while it holds a content line no pass accounted for: new (no entry in
    `state.json`), changed since the pass that converged or deferred it (its new lines, and the
    lines deferred then come back), judged by the builtin engine, which reads cue lines only
    (the rest waits for a model), or deferred by a model and recurring (a note pending now
    shares its key phrases) or asked for by name (`--only`). Cue lines only rank and mark. A
    note an adopted folder held, unchanged since, is pending only through its cue lines; the
    rest is the backlog, pending when `backlog` is asked for."""

    def __init__(self, vault, state, index, entries, record, backlog, archived=()):
        self.vault, self.state, self.index, self.entries = vault, state, index, entries
        self.record, self.adopted, self.include_backlog = record, record.notes, backlog
        self.min_recurrence = vault.config.min_recurrence
        self.recurring = _recurring_keys(entries, self.min_recurrence, state, archived)
        self.converged_lines = _converged_lines(state)
        self._unaccounted_memo: dict[str, int] = {}
        self.result = ScanResult(
            builtin_lines=sum(len(d.lines) for d in state.notes.values() if d.engine == BUILTIN)
        )

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

    def _note(self, file: NoteFile, entry: NoteEntry, explicit: bool):
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
        adopted = in_backlog(self.adopted, file.rel, entry.sha256)
        if done is None and self.record.newly_read(
            file.rel, entry.mtime_ns, self.vault.config.sessions_folder
        ):
            self.result.widened[file.rel] = entry.sha256
            adopted = True
        adopted = adopted and not self.include_backlog
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
        if why == UNJUDGED and same and done.deferred and done.engine != BUILTIN:
            self._note_deferred(file, done, deferred)  # the lines it deferred, while the rest wait
        ruled = len({d.line for d in deferred if d.line and not d.for_model})
        self._pend(file, entry, done, same, why, signals, model_only, ruled)
        return None

    def _unlinkable(self, file: NoteFile, entry: NoteEntry) -> Quarantined | None:
        """A note whose name no wikilink can cite: a statement could never name its source, so
        no pass takes it; it is named instead (docs/design.md §1 names, issue 35)."""
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
        if done.waits:
            # what no engine judged (the builtin engine reads cue lines alone; a model's reply
            # may defer some lines and judge no others) waits for a model
            return (BACKLOG, False) if adopted and done.engine == BUILTIN else (UNJUDGED, True)
        return None, False

    def _unaccounted(self, file: NoteFile, accounted: set[str]) -> bool:
        return bool(self._unaccounted_count(file, accounted))

    def _unaccounted_count(self, file: NoteFile, accounted: set[str]) -> int:
        """Its content lines no pass accounted for (a changed note is read for them)."""
        memo = self._unaccounted_memo
        if file.rel not in memo:
            note = read_note(file, self.vault.config.max_note_bytes)
            memo[file.rel] = (
                len(unaccounted_lines(note.lines, note.body_start, accounted)) if note.usable else 0
            )
        return memo[file.rel]

    def _returns(self, hit: Hit, done: ConvergedNote) -> bool:
        """A line the builtin rules deferred (a one-off, venting, vague) is judged again: it
        returns once it recurs or the note is confirmed. A model's deferral stands."""
        return done.engine == BUILTIN and bool(hit.kind)

    def _deferred_hit(self, rel: str, hit: Hit, done: ConvergedNote) -> Deferred:
        reason = done.deferred.get(hit.line_key) or "deferred by the last pass"
        # a signal the builtin engine deferred waits for a model (its rules' deferrals return
        # on their own: `_returns`); a model's deferral stands
        for_model = done.engine == BUILTIN
        return Deferred(rel, hit.line, reason, hit.cls, hit.cue, DEFERRED, hit.excerpt, for_model)

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

    def _model_lines(self, file, entry, done, same, why, signals, ruled: int) -> int:
        """Its content lines no engine judges without a model: not converged, not a cue line
        the builtin engine takes, not deferred by the scan's rules (`ruled` lines), and the cue
        lines the builtin engine deferred for a model — one account, whatever asks."""
        if why in (SIGNALS, BACKLOG):
            return 0  # an adopted note's other lines are the backlog, converged when asked
        if same:
            if done.engine != BUILTIN:
                return len(done.deferred) if why == RECURS else 0
            return done.unjudged + sum(
                1 for hit in entry.scan.hits if hit.line_key in done.deferred and not hit.kind
            )
        unaccounted = entry.units if done is None else self._unaccounted_count(file, done.lines)
        return max(unaccounted - len({s.line for s in signals}) - ruled, 0)

    def _pend(self, file, entry, done, same, why, signals, model_only, ruled: int = 0) -> None:
        flags = entry.scan.flags
        # the lines not to judge again: those converged, and a model's deferrals while they stand
        if done is None:
            accounted: frozenset[str] = frozenset()
        elif (
            same
            and done.engine != BUILTIN
            and ((why == RETURNED and not model_only) or why == UNJUDGED)
        ):
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
                model_lines=self._model_lines(file, entry, done, same, why, signals, ruled),
            )
        )

    def _returning(self, deferred_notes: list) -> None:
        """A note a model deferred, unchanged since, comes back while another pending note shares
        its key phrases (docs/design.md §2: the same key phrase recurs in a later note); once that
        note is converged or deferred too, it waits again, so nothing is sent twice unchanged."""
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
    index: ConvergentIndex,
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
    entries: list[tuple[NoteFile, NoteEntry]],
    min_recurrence: int,
    state: State | None = None,
    archived: Iterable[ArchivedRecurrence] = (),
) -> set[str]:
    """The key phrases the recurring lines of at least `min_recurrence` notes hold (every
    divergent note counts, converged or not; excluded notes do not; so do the notes a pass
    converged that have left the divergent layer — archived — by the keys `state.json` kept,
    and the archived notes no pass converged, by their own lines: `archive_recurrence`).
    One set, so `_judge` tests a line's phrases against it in C (`isdisjoint`) where it asked
    any() over a generator of look-ups, for each of the ~2,000 recurring lines of a 10k cold
    scan's assembly."""
    counts: dict[str, int] = {}
    known: set[str] = set()  # the file names of the notes state.json counts
    if state is not None and state.notes:
        divergent = {file.rel for file, _ in entries}
        for rel, done in state.notes.items():
            known.add(rel.rsplit("/", 1)[-1])
            if rel not in divergent:
                for key in set(done.keys):
                    counts[key] = counts.get(key, 0) + 1
    for note in archived:
        if note.rel.rsplit("/", 1)[-1] not in known:
            for key in set(note.keys):
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


def _archive_if_needed(
    vault: Vault, entries: list[tuple[NoteFile, NoteEntry]], state: State
) -> list[ArchivedRecurrence]:
    """The archive's recurring notes when a recurring line would otherwise wait as a one-off
    (its key phrases recur in no other note yet): only then can the archive change a verdict,
    so most scans never look at it."""
    recurring = _recurring_keys(entries, vault.config.min_recurrence, state)
    for _, entry in entries:
        if entry.skip or entry.scan.flags.excluded:
            continue
        for hit in entry.scan.hits:
            if hit.cls == "recurring" and hit.kind not in ("", VAGUE) and hit.keys:
                if recurring.isdisjoint(hit.keys):
                    known = {rel.rsplit("/", 1)[-1] for rel in state.notes}
                    return archived_recurrences(vault, known)
    return []


def _converged_lines(state: State) -> dict[str, tuple[str, str]]:
    lines: dict[str, tuple[str, str]] = {}
    for rel, converged in state.notes.items():
        for key in converged.lines:
            if key not in lines or converged.time < lines[key][1]:
                lines[key] = (rel, converged.time)
    return lines


def _reemergence(
    rel: str, hit: Hit, index: ConvergentIndex, converged_lines: dict[str, tuple[str, str]]
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
    names: dict[str, str] = {}
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
