"""The builtin engine (docs/design.md §4): deterministic, offline and extractive — and conservative: it
keeps memory as a person would, and leaves meaning to a model.

It reads the selected notes' signal lines and writes a response in the docs/design.md §5 format, which
goes through the same parser and validator as a model's. What it does:

- **States** each signal line as memory, one sentence a statement (`sentences`): a line of
  several sentences becomes the one holding its cue, a sentence longer than a statement should
  be waits for a model. List marker, `10:32` timestamp, trailing `#tags` and links to convergent
  files trimmed; cue words and hedges ("Actually", "其实", "I decided to", "not X") off, and a
  recurrence cue only where a sentence is left (`patterns`); a switch said as what holds now ("I
  switched from uv to poetry" → "I use poetry"); relative dates resolved against the note's
  date (`phrasing`). The note is its source.
- **Routes** by class: corrections and preferences to `<resident>/profile.md`, recurring
  patterns to `<resident>/methodology.md` (both created when missing), each class under its own
  heading there; decisions to the topic file the note's links or tags name (file name, `aliases`
  or `tags`, compared without case or hyphens), else the topic file of the line's subject, else
  the topic file sharing the most words, else a new topic file (`topic_names`) named from its
  subject ("Shell"), or the note's first specific tag, or the line's first words — never after a
  note's links, a date, a year or a note's name — and summarised by that name.
- **Merges duplicates**: a line whose normalised words equal, or are contained in, an existing
  statement (or contain it with only a few characters more) adds its source to that statement
  instead of a second copy.
- **Updates recurring events in place**: one pattern statement with its count and dates, citing
  every note; a count that grows keeps the count it had in one trace, the earlier counts nested
  in it (`patterns`).
- **Rewrites** on an explicit correction or switch ("其实不是…", "改用 Svelte", "actually …, not
  …", "switched to uv", "from X to Y", "I moved to Munich") only the statement it is about
  (`corrections`): one holding the old side the line names ("not 3.12", "不再用 React", "from
  pipenv to"; a number or a common word needs another shared word beside it), or, with no old
  side, one sharing two of its words or the same slot (where one lives). Anything else is added.
  Among those, the statement sharing the most words (weighted by rarity, doubled for old-side
  words; any convergent file, written earlier or earlier in this pass, the files the note names
  first) gets the corrected part in place ("I meant 3 sessions a week, not 2": "I do 2 Dutch
  sessions a week" → "I do 3 Dutch sessions a week"), or the line's statement whole, and a trace
  dated by the note quoting the old wording with its own traces, so traces nest. A `summary:`
  quoting the replaced words changes the same way.
- **Never writes what the validator rejects**: each line is read back in the vault's formats
  before it is written (`reads_back`); one that would not read back — raw HTML, words that read
  as a source or a trace, an old wording whose brackets would end its trace early — waits for a
  model or is added instead of rewritten; a trace that would repeat one memory holds (same date
  and words) is dated by the pass; a statement said again after this pass rewrote it cites the
  notes it first came from; a note whose name no wikilink can hold is deferred with the reason.
- Writes sources and traces in each file's own language format (or the vault's custom ones);
  stamps `updated:` in the frontmatter of every file it changes, editing that one line so every
  other key and comment stays byte for byte; files it does not change are not in the response.

Its limits, honestly:

- It sees words, not meaning. "我喜欢 React" and a later "Svelte 真香" do not conflict for it:
  without a correction or switch cue, a change of mind is added next to the old statement
  instead of replacing it (character similarity cannot see semantic contradictions). Being
  conservative, it also adds a correction that names no old side and shares one word with what
  it corrects ("Actually the standup is at 10"): two statements for a model to reconcile.
- A rewrite picks the statement with the most shared words; with two near candidates it can
  pick the wrong one. The old wording is kept in the trace, so nothing is lost, and the diff
  shows it.
- Its restatements are a few lexical rules: it never shortens a sentence (a long one waits for
  a model), and two lines saying the same thing in different words both stay.
- It only reads signal lines, and of a line only the sentence holding the cue: context on the
  lines and sentences around it is not carried over.
- It never drops a statement, so it never emits `<dropped>`.
"""

from __future__ import annotations

from cmem.converge.builtin.edits import (
    add_source,
    append_statement,
    list_prefix,
    reads_back,
    rewrite_with_trace,
    sources_stay_with_the_words,
)
from cmem.converge.builtin.line_words import SWITCH, name_key, names_both_sides, quote_line
from cmem.converge.builtin.patterns import count_clause, counted, pattern_base, pattern_text
from cmem.converge.builtin.phrasing import statement_text
from cmem.converge.builtin.placing import NO_SUBJECT, best_match, find_duplicate, route
from cmem.converge.builtin.sentences import cue_sentence, too_long
from cmem.converge.builtin.working_copy import MemoryFile, PassWork, joiner, touch_updated
from cmem.converge.selection import SelectedNote
from cmem.scan.signals import Signal
from cmem.text.tokens import estimate_tokens
from cmem.vault.layers import Vault
from cmem.vault.notes import note_date
from cmem.vault.statements import WIKILINK, format_source, format_trace, normalize, split_statement


def _attr(value: str) -> str:
    return (
        value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")
    )


def builtin_response(
    vault: Vault, notes: list[SelectedNote], originals: dict[str, str], pass_date: str
) -> str:
    """The docs/design.md §5 response for these notes. `originals` maps every convergent file (vault-relative
    path) to its current text; the same inputs give the same bytes."""
    work = PassWork(vault, originals, pass_date)
    # Oldest note first, so a later change of mind nests over an earlier one.
    for note in sorted(notes, key=lambda n: (n.mtime_ns, n.rel)):
        _converge_note(work, note)
    work.cache.save()
    return _render(work)


def _converge_note(work: PassWork, note: SelectedNote) -> None:
    secret = _secret_line(note) or _unlinkable(note.name) or _quoted(note)
    if secret:
        # A credential is never memory: the note waits, saying why, and nothing of it is written
        # (no signal of a converged note may be left out, so the whole note is deferred). A
        # name no wikilink can hold could never be cited, so nothing can rest on it either.
        work.deferred[note.rel] = secret
        return
    named = _named_files(work, note)
    topic_keys = _TopicKeys(work)
    targets: set[str] = set()
    left: dict[int, str] = {}  # line → why it waits for a model
    day = note_date(note.name, _mtime_date(note, work.date))
    for signal in _distinct_signals(note.signals):
        line = note.lines[signal.line - 1] if 0 < signal.line <= len(note.lines) else signal.excerpt
        # A line pasted from memory brings its annotations; its source and trace are re-made
        # here (a pasted source may not resolve, a pasted trace is no change of this pass).
        raw = split_statement(quote_line(line, topic_keys), work.formats)[0]
        # one sentence, not a paragraph: the one holding the cue
        raw = cue_sentence(raw, signal.cue)
        if len(normalize(raw)) < 2:
            left[signal.line] = f"line {signal.line} has no words to keep"
            continue
        long = too_long(raw)
        if long:
            left[signal.line] = long
            continue
        # the statement: cue words, hedges and the old side off, relative dates resolved
        text = statement_text(raw, day) if signal.cls != "recurring" else pattern_base(raw)
        target, reason = _place(work, note, signal, text, named, raw, day)
        if target:
            targets.add(target)
        else:
            left[signal.line] = reason
    if targets:
        work.converged[note.rel] = targets
        if left:
            work.deferred_lines[note.rel] = left
    else:
        work.deferred[note.rel] = next(
            iter(left.values()),
            "no signal line to keep; the builtin engine only quotes signal lines",
        )


def _quoted(note: SelectedNote) -> str:
    """A note that is not the user's own words (a web clip, a template): its cue lines are
    someone else's ("I prefer small endpoints" in an article), so it waits for a model, which
    cites it as quoted (rule 16)."""
    if not note.quoted:
        return ""
    return f"not the user's own words ({note.quoted}): a model converges it, citing it as quoted"


def _unlinkable(name: str) -> str:
    """Why no wikilink can cite a note of this name, or "": `[[C# tips]]` links the heading
    "tips" of a note "C", and `|`, `[`, `]` end or break a link."""
    match = WIKILINK.fullmatch(f"[[{name}]]")
    if match and match.group(1).strip() == name:
        return ""
    held = [c for c in "#|[]^" if c in name] or ["a space at its edge or a line break"]
    return (
        f"its name holds {' '.join(repr(c) if len(c) == 1 else c for c in held)}, which a wikilink "
        "cannot cite; rename the note and converge again"
    )


class _TopicKeys:
    """The names (file name, aliases, tags) of every topic file, made on the first question:
    `quote_line` asks only about a line ending in a link, and making every topic file's name
    was a cost of every pass whose lines end in none."""

    def __init__(self, work: PassWork):
        self.work = work
        self.keys: set[str] | None = None

    def __contains__(self, key: object) -> bool:
        if self.keys is None:
            self.keys = {key for file in self.work.situational() for key in file.keys}
        return key in self.keys


def _mtime_date(note: SelectedNote, pass_date: str):
    from datetime import date, datetime

    if note.mtime_ns:
        return datetime.fromtimestamp(note.mtime_ns / 1e9).date()
    return date.fromisoformat(pass_date)


def _secret_line(note: SelectedNote) -> str:
    """Why the note is deferred when a signal line holds a credential, else ""."""
    from cmem.text.secrets import secret_kinds

    for signal in _distinct_signals(note.signals):
        line = note.lines[signal.line - 1] if 0 < signal.line <= len(note.lines) else signal.excerpt
        kinds = secret_kinds(line)
        if kinds:
            return (
                f"line {signal.line} holds a credential ({', '.join(kinds)}); the builtin engine never copies one "
                "into memory: move it to a password manager, delete it from the note, and converge again"
            )
    return ""


def _distinct_signals(signals: list[Signal]) -> list[Signal]:
    """One signal a line (the most urgent class), in line order."""
    by_line: dict[int, Signal] = {}
    for signal in sorted(signals, key=lambda s: (s.line, s.priority, s.cue)):
        by_line.setdefault(signal.line, signal)
    return [by_line[line] for line in sorted(by_line)]


def _named_files(work: PassWork, note: SelectedNote) -> list[str]:
    """Convergent files the note's links, then tags, name — by file name, alias or tag."""
    names = [*note.links, *note.tags]
    if not names:
        return []
    # each file looked through once for every name, not once a name (each look sorted the
    # 2,049 files of a 10k vault again)
    wanted = {name_key(name) for name in names} - {""}
    by_key: dict[str, list[str]] = {}
    for rel, file in sorted(work.files.items()):
        for key in file.keys & wanted:
            by_key.setdefault(key, []).append(rel)
    named: list[str] = []
    for name in names:
        for rel in by_key.get(name_key(name), ()):
            if rel not in named:
                named.append(rel)
    return named


def _place(
    work: PassWork,
    note: SelectedNote,
    signal: Signal,
    text: str,
    named: list[str],
    raw: str | None = None,
    day=None,
) -> tuple[str | None, str]:
    """Put one line where it belongs; (file, "") or (None, why not). `raw` is the line as the
    user wrote it (its cue words and old side find the statement a change replaces), `text` the
    statement made of it."""
    raw = text if raw is None else raw
    preferred = set(named)
    # a correction, a switch, or a preference or decision naming what it replaces
    is_change = (
        signal.cls == "correction"
        or (signal.cls == "decision" and bool(SWITCH.search(raw)))
        or (signal.cls in ("decision", "preference") and names_both_sides(raw))
    )
    if signal.cls == "recurring" and day is not None:
        merged = _merge_pattern(work, note, text, day)
        if merged:
            return merged
    # A correction quoting the old statement ("其实不是 X，是 Y") contains it: not a duplicate.
    duplicate = find_duplicate(work, text, preferred, exact_only=is_change)
    if duplicate and (note.name in duplicate[1].sources or not duplicate[0].problem):
        file, statement = duplicate
        if note.name not in statement.sources:
            if not _fits(work, file, f"、[[{note.name}]]"):
                return None, _FULL
            if not add_source(work, file, statement, note.name):
                return None, _UNREADABLE
        return file.rel, ""
    cite = _citation(note, signal)  # the note, or the session turn the line stands in
    source = format_source([cite], work.formats)
    match = best_match(work, note, raw, preferred) if is_change else None
    if match:
        if not _fits(work, match[0], text + format_trace(work.date, "", work.formats) + source):
            return None, _FULL
        written = rewrite_with_trace(work, *match, text, cite, raw)
        if written is not None:
            work.written.add((match[0].rel, normalize(written), note.rel))
            return match[0].rel, ""
        # its trace would not read back in this vault's formats: the line is added instead
    target = route(work, note, signal, text, named)
    if target is None:
        return None, NO_SUBJECT
    if target.problem:
        return None, f"{target.rel} is left alone ({target.problem}); fix it and converge again"
    earlier: list[str] = []
    if signal.cls == "recurring" and day is not None:
        # a new pattern counts the archived notes that said it before (the scan counted them)
        found = work.archived_occurrences(text, note.name)
        earlier = [name for name, _ in found]
        text = pattern_text(text, [day.isoformat(), *(when for _, when in found)])
    if not _fits(work, target, f"- {text}{source}"):
        return None, _FULL
    if not append_statement(work, target, text, cite, signal.cls, earlier):
        return None, _UNREADABLE
    work.written.add((target.rel, normalize(text), note.rel))
    return target.rel, ""


def _citation(note: SelectedNote, signal: Signal) -> str:
    """`note` or, for a line of a user's turn in a session note, `note#^t5` (docs/design.md §14)."""
    from cmem.sessions.note import turn_of_line

    turn = turn_of_line(note.text, signal.line)
    return f"{note.name}#^t{turn}" if turn else note.name


_UNREADABLE = (
    "written as a statement, it would not read back as written (its words hold HTML, or read "
    "as a source or a trace in this vault's formats); it waits for a model"
)


def _merge_pattern(
    work: PassWork, note: SelectedNote, base: str, day
) -> tuple[str | None, str] | None:
    """A recurring event joins the pattern statement it repeats (sharing a key phrase, as the
    scanner counts recurrence): its count and dates grow in place, the note joins its sources.
    A count memory held before this pass is kept in one trace of the count alone, the
    statement's older traces nested in it (`patterns`); a count this pass already changed keeps
    the trace it was given."""
    from cmem.scan.recurrence import phrase_keys

    keys = set(phrase_keys(base.lower()))
    if not keys:
        return None
    best, best_shared = None, 0
    for file in work.writable():
        if not file.rel.startswith(work.config.resident_dir + "/"):
            continue
        for statement in file.statements(work.formats):
            found = counted(statement.core)
            if not found:
                continue
            shared = len(keys & set(phrase_keys(found[0].lower())))
            if shared > best_shared:
                best, best_shared = (file, statement, found), shared
    if best is None:
        return None
    file, statement, (what, count, dates, zh) = best
    if day.isoformat() in dates:
        if note.name in statement.sources:
            return file.rel, ""
        # the same day again, from another note: no new count, only its source
        if not _fits(work, file, f"、[[{note.name}]]"):
            return None, _FULL
        if not add_source(work, file, statement, note.name):
            return None, _UNREADABLE
        return file.rel, ""
    formats = work.formats_for(file)
    new_core = pattern_text(what, dates + [day.isoformat()], zh)
    line = file.lines[statement.line_no - 1]
    prefix = list_prefix(line)
    gone = work.sources_of_gone(file, normalize(new_core))
    names = list(dict.fromkeys([*statement.sources, *gone, note.name]))
    older = [line[t.start : t.end] for t in statement.traces]
    if work.held_at_first(file.rel, statement.key):
        was = count_clause(count, zh) + (joiner(formats.trace) + "".join(older) if older else "")
        day_of_change = work.trace_date(note.name, was)
        if day_of_change is None:
            return None, _UNREADABLE
        traces = [format_trace(day_of_change, was, formats)]
        expected = [was]
    else:
        traces = older  # this pass wrote it, or already kept the count memory had before
        expected = [t.old for t in statement.traces]
    new = prefix + new_core
    for trace in traces:
        new += joiner(formats.trace) + trace
    new += joiner(formats.source) + format_source(names, formats)
    if not _fits(work, file, new):
        return None, _FULL
    if not reads_back(work, new, new_core, names, expected):
        return None, _UNREADABLE
    file.edit(statement.line_no - 1, 1, [new])
    sources_stay_with_the_words(work, file, statement)
    work.written.add((file.rel, normalize(new_core), note.rel))
    return file.rel, ""


_FULL = "the resident files are at their size cap (resident_max_tokens); compress them by hand or with an llm pass"


def _fits(work: PassWork, file: MemoryFile, added: str) -> bool:
    """Whether the resident sublayer stays within its cap (validator rule 6). This engine cannot
    compress, so it defers what does not fit rather than fail the whole pass."""
    resident = work.config.resident_dir + "/"
    if not file.rel.startswith(resident):
        return True
    size = sum(
        f.tokens(work.token_memo)
        for rel, f in work.files.items()
        if rel.startswith(resident) and (f.changed or not f.created or f is file)
    )
    return size + estimate_tokens(added) + 4 <= work.config.resident_max_tokens


def _render(work: PassWork) -> str:
    out = ["<convergence>"]
    for rel, file in sorted(work.files.items()):
        if not file.changed:
            continue
        if not file.created:
            touch_updated(file, work.date)
        out += [f'<file path="{_attr(rel)}">', "\n".join(file.lines).rstrip("\n"), "</file>"]
    for note, into in sorted(work.converged.items()):
        out.append(f'<converged note="{_attr(note)}" into="{_attr(", ".join(sorted(into)))}"/>')
    for note, reason in sorted(work.deferred.items()):
        out.append(f'<deferred note="{_attr(note)}" reason="{_attr(reason)}"/>')
    for note, lines in sorted(work.deferred_lines.items()):
        by_reason: dict[str, list[int]] = {}
        for number, reason in sorted(lines.items()):
            by_reason.setdefault(reason, []).append(number)
        for reason, numbers in by_reason.items():
            listed = ",".join(str(n) for n in numbers)
            out.append(
                f'<deferred note="{_attr(note)}" lines="{listed}" reason="{_attr(reason)}"/>'
            )
    out.append("</convergence>")
    return "\n".join(out) + "\n"
