"""The builtin engine (SPEC §4): deterministic, offline and extractive — and conservative: it
keeps memory as a person would, and leaves meaning to a model.

It reads the selected notes' signal lines and writes a response in the SPEC §5 format, which
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
  before it is written (`_reads_back`); one that would not read back — raw HTML, words that read
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

import json
import math
import re
from dataclasses import dataclass, field
from functools import cached_property

from cmem.converge.corrections import holds, old_sides, side_words, specific, substitute
from cmem.converge.patterns import count_clause, counted, pattern_base, pattern_text
from cmem.converge.phrasing import is_chinese, note_date, statement_text, subject_of
from cmem.converge.selection import SelectedNote
from cmem.converge.sentences import cue_sentence, too_long
from cmem.converge.statement_words import (
    CACHE_NAME,
    FileWords,
    TokenMemo,
    WordsCache,
    fingerprint,
    probe,
    text_digest,
)
from cmem.converge.words import (
    SWITCH,
    leading_words,
    name_key,
    old_side_terms,
    quote_line,
    slug,
    terms,
    without_cue,
)
from cmem.scan.signals import Signal
from cmem.text.tokens import estimate_tokens
from cmem.vault.config import Formats
from cmem.vault.layers import Vault
from cmem.vault.notes import parse_frontmatter_block, split_frontmatter
from cmem.vault.statements import (
    WIKILINK,
    Statement,
    find_sources,
    find_traces,
    format_source,
    format_trace,
    normalize,
    parse_statements,
    split_statement,
)

PROFILE, METHODOLOGY = "profile.md", "methodology.md"

_NEW_RESIDENT = {
    "zh": {
        PROFILE: ("我是谁、在做什么、想被怎样帮助", 9, "画像"),
        METHODOLOGY: ("希望 AI 怎样帮我，以及我的工作方法", 8, "方法论"),
    },
    "en": {
        PROFILE: ("who I am and how I want to be helped", 9, "Profile"),
        METHODOLOGY: ("how I work and how I want AI to help", 8, "Methodology"),
    },
}


def _attr(value: str) -> str:
    return (
        value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")
    )


def _joiner(template: str) -> str:
    """A space before `(source: …)` or `— …`, none before full-width `（来源：…）`."""
    import unicodedata

    return "" if unicodedata.east_asian_width(template[:1] or " ") in "FW" else " "


# --- the working copy of the convergent layer -----------------------------------------------


@dataclass
class _File:
    rel: str
    # the whole file as lines (`lines`), or its text until they are first asked for: most of
    # the 2,049 files a pass loads at 10k are never read line by line (~8 ms to split them all)
    _lines: list[str] | str
    meta: dict
    problem: str | None = None  # set: the engine leaves this file alone
    changed: bool = False
    created: bool = False
    digest: str | None = None  # the original text's, while the file is unchanged
    _statements: list[Statement] | None = field(default=None, repr=False)
    _words: FileWords | None = field(default=None, repr=False)
    _tokens: int | None = field(default=None, repr=False)

    @property
    def lines(self) -> list[str]:
        """The whole file, frontmatter included, without the last line end; change it through
        `edit`."""
        if isinstance(self._lines, str):
            lines = self._lines.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            self._lines = lines
        return self._lines

    def joined(self) -> str:
        """`"\\n".join(self.lines)`, without splitting a file that was never split."""
        if isinstance(self._lines, str):
            return self._lines[:-1] if self._lines.endswith("\n") else self._lines
        return "\n".join(self._lines)

    @property
    def body_start(self) -> int:
        return split_frontmatter(self.joined())[1]

    def statements(self, formats: Formats) -> list[Statement]:
        # Cached: every signal looks through every file for duplicates and matches.
        if self._statements is None:
            start = self.body_start
            self._statements = parse_statements("\n".join(self.lines[start - 1 :]), start, formats)
        return self._statements

    def words(self, work: "_Pass") -> FileWords:
        """Its statements' keys and words: from the machine folder's copy while the file is as
        it was read, else made from its statements (and kept for the next pass)."""
        if self._words is None:
            if self.digest is not None:
                self._words = work.cache.get(self.digest)
            if self._words is None:
                self._words = FileWords.of(self.statements(work.formats))
                if self.digest is not None:
                    work.cache.put(self.digest, self._words)
        return self._words

    def edit(self, index: int, remove: int, new_lines: list[str]) -> None:
        self.lines[index : index + remove] = new_lines
        self.changed, self._statements, self._words, self.digest = True, None, None, None
        self._tokens = None

    def tokens(self, memo: TokenMemo | None = None) -> int:
        """The token estimate of its text as it is now (kept until the next edit: `_fits` sums
        every resident file for each line it places, 506 files and 1 MB at 10k), from the
        validator's memo while the text is one it measured."""
        if self._tokens is None:
            text = self.joined() + "\n"
            self._tokens = (
                estimate_tokens(text) if memo is None else memo.tokens(text, estimate_tokens)
            )
        return self._tokens

    def formats(self, default: Formats, custom: bool, incoming: str = "") -> Formats:
        """The file's own source and trace format: a vault's custom format wins; else the
        language its statements already use (a zh vault may hold an English file), else the
        language of its text, else the vault's."""
        if custom:
            return default
        from cmem.vault.config import LANGUAGE_DEFAULTS

        body = "\n".join(self.lines[self.body_start - 1 :])
        for language, values in LANGUAGE_DEFAULTS.items():
            if values["source"].split("{links}", 1)[0] in body:
                return _formats_of(language)
        text = "".join(
            re.sub(r"\[\[[^\]]*\]\]", "", line)
            for line in self.lines[self.body_start - 1 :]
            if not line.startswith("#") or not self.created
        )
        text = text if text.strip() else incoming  # a new file takes the language of its first line
        if text.strip():
            return _formats_of("zh" if is_chinese(text) else "en")
        return default

    @cached_property
    def keys(self) -> frozenset[str]:
        """Names a note's tag or link may use for this file."""
        names = [self.rel.rsplit("/", 1)[-1].removesuffix(".md")]
        for field_name in ("aliases", "tags"):
            value = self.meta.get(field_name)
            names.extend(
                value if isinstance(value, list) else [value] if isinstance(value, str) else []
            )
        return frozenset(name_key(str(n)) for n in names if n)


def _formats_of(language: str) -> Formats:
    from cmem.vault.config import LANGUAGE_DEFAULTS

    values = LANGUAGE_DEFAULTS[language]
    return Formats(values["source"], values["source_separator"], values["trace"])


# The frontmatter keys this engine reads (`_File.keys`, `_best_topic`): all a cached head keeps.
_META_KEYS = ("aliases", "tags", "summary")


def _load(rel: str, text: str, cache: WordsCache | None = None) -> _File:
    digest = text_digest(text)
    head = cache.head(digest) if cache is not None else None
    if head is None:
        head = _head(text)
        if cache is not None:
            cache.put_head(digest, *head)
    return _File(rel, text, head[1], head[0], digest=digest)


def _head(text: str) -> tuple[str | None, dict]:
    """(why the engine leaves the file alone, or None; the frontmatter keys it reads). Parsing
    YAML for every file of a 10k vault's layer was a tenth of a one-note pass: kept by digest."""
    block, _, problem = split_frontmatter(text)
    meta, error = parse_frontmatter_block(block)
    problem = problem or error
    if "\r" in text or text.startswith("\ufeff"):
        problem = "it has CRLF line ends or a byte-order mark"
    elif any(
        line.strip() in ("</file>", "</convergence>") or line.lstrip().startswith("<file ")
        for line in text.split("\n")
    ):
        problem = "a line of it would end a <file> block"
    return problem, {key: meta[key] for key in _META_KEYS if key in meta}


def _touch_updated(file: _File, date: str) -> None:
    """Set `updated:` by editing its one line, so the user's keys, order and comments stay."""
    body_start = file.body_start
    if body_start == 1:
        file.edit(0, 0, ["---", f"updated: {date}", "---"])
        return
    for index in range(1, body_start - 2):
        match = re.match(r"^(updated[ \t]*:[ \t]*)(.*?)([ \t]+#.*)?$", file.lines[index])
        if match:
            quote = match.group(2)[:1] if match.group(2)[:1] in "\"'" else ""
            file.edit(index, 1, [f"{match.group(1)}{quote}{date}{quote}{match.group(3) or ''}"])
            return
    file.edit(body_start - 2, 0, [f"updated: {date}"])


class _Pass:
    """The convergent files as this pass changes them, and what became of each note."""

    def __init__(self, vault: Vault, originals: dict[str, str], pass_date: str):
        self.vault = vault
        self.originals = originals
        self.config = vault.config
        self.formats = vault.config.formats
        # a vault with its own source/trace format keeps it everywhere; the defaults follow each file's language
        self.custom_formats = vault.config.formats != _formats_of(vault.config.language)
        self.date = pass_date
        cache_path = vault.machine_dir / CACHE_NAME if vault.machine_dir.is_dir() else None
        self.cache = WordsCache(cache_path, fingerprint(self.formats))
        self.files = {rel: _load(rel, text, self.cache) for rel, text in sorted(originals.items())}
        # the resident files' sizes as the last pass's validator measured them (read only here)
        self.token_memo = TokenMemo(vault.machine_dir)
        # each file's statements as read, looked up only where a count is rewritten
        self._original = {rel: f.words(self) for rel, f in self.files.items() if not f.problem}
        self.compared = 0  # statements scored by `_best_match`: what its index saves, for tests
        self.converged: dict[str, set[str]] = {}
        self.deferred: dict[str, str] = {}
        # (file, statement key, note) of every line this pass wrote: a note's switch must not
        # rewrite what the same note just added.
        self.written: set[tuple[str, str, str]] = set()
        # note → {line: why the builtin engine leaves it for a model}, beside what it converged
        self.deferred_lines: dict[str, dict[int, str]] = {}
        self._note_shapes: set[str] | None = None
        self._trace_ids: set[tuple[str, str]] | None = None  # (date, old words) of every trace

    def is_note_name(self, name: str) -> bool:
        """Whether `name` looks like (skeleton) the name of a note, divergent or archived: a new
        memory file named so would make `[[name]]` ambiguous (rule 12)."""
        if self._note_shapes is None:
            from cmem.converge.paths import skeleton
            from cmem.vault.layers import ARCHIVE, DIVERGENT

            vault = self.vault
            self._note_shapes = {
                skeleton(note)
                for note, paths in vault.note_names().items()
                if any(vault.layer_of(p) in (DIVERGENT, ARCHIVE) for p in paths)
            }
        from cmem.converge.paths import skeleton

        return skeleton(name) in self._note_shapes

    def held_at_first(self, rel: str, key: str) -> bool:
        """Whether the file held a statement with this key before the pass changed anything
        (a set of all 28k keys at 10k, made at the start, was a third of starting the engine)."""
        words = self._original.get(rel)
        return words is not None and words.index_of(key) is not None

    def sources_of_gone(self, file: _File, key: str) -> list[str]:
        """The sources of a statement with this key the file held before the pass and no longer
        holds (this pass rewrote it): a statement that says those words again cites its notes
        too, as the validator holds a statement it finds again to its sources (rule 3)."""
        if not key or not self.held_at_first(file.rel, key):
            return []
        if any(s.key == key for s in file.statements(self.formats)):
            return []  # still there, with its own sources
        text = self.originals.get(file.rel) or ""
        start = split_frontmatter(text)[1]
        body = "\n".join(text.split("\n")[start - 1 :])
        found = [s.sources for s in parse_statements(body, start, self.formats) if s.key == key]
        return list(dict.fromkeys(name for sources in found for name in sources))

    def trace_date(self, note_name: str, old: str) -> str | None:
        """The date a new trace of `old` gets: its note's (rule 5), else the pass's when memory
        already holds a trace of that date and wording (the validator would take the new one
        for that old one, and the rewrite for a loss); None when both are taken."""
        if self._trace_ids is None:
            from cmem.vault.statements import may_hold_traces

            self._trace_ids = set()
            for text in self.originals.values():
                if not text or not may_hold_traces(text, self.formats):
                    continue
                for statement in parse_statements(text, 1, self.formats):
                    pending = list(statement.traces)
                    while pending:
                        trace = pending.pop()
                        self._trace_ids.add((trace.date, _trace_key(trace.old, self.formats)))
                        pending.extend(trace.older)
        key = _trace_key(old, self.formats)
        for day in dict.fromkeys([_change_date(note_name, self.date), self.date]):
            if (day, key) not in self._trace_ids:
                return day
        return None

    def writable(self, preferred: set[str] = frozenset()) -> list[_File]:
        """Writable files: the ones a note names first, then resident before situational."""
        resident = self.config.resident_dir + "/"
        files = [f for f in self.files.values() if not f.problem]
        return sorted(
            files, key=lambda f: (f.rel not in preferred, not f.rel.startswith(resident), f.rel)
        )

    def situational(self) -> list[_File]:
        return [
            f
            for rel, f in sorted(self.files.items())
            if rel.startswith(self.config.situational_dir + "/")
        ]

    def formats_for(self, file: _File, incoming: str = "") -> Formats:
        return file.formats(self.formats, self.custom_formats, incoming)

    def resident_file(self, name: str) -> _File:
        rel = f"{self.config.resident_dir}/{name}"
        if rel not in self.files:
            summary, importance, title = _NEW_RESIDENT[self.config.language][name]
            self.files[rel] = _new_file(rel, summary, importance, self.date, title, [])
        return self.files[rel]


def _trace_key(old: str, formats: Formats) -> str:
    """A trace's identity besides its date, as the validator compares them."""
    return normalize(split_statement(old, formats)[0])


def _new_file(
    rel: str, summary: str, importance: int, date: str, title: str, tags: list[str]
) -> _File:
    # JSON strings are YAML strings: a summary holding `: ` or `#` stays one plain value.
    header = [
        "---",
        f"summary: {json.dumps(summary, ensure_ascii=False)}",
        f"importance: {importance}",
        f"updated: {date}",
    ]
    if tags:
        plain = [
            t if re.fullmatch(r"[^\W\d_][\w-]*", t) else json.dumps(t, ensure_ascii=False)
            for t in tags
        ]
        header.append("tags: [" + ", ".join(plain) + "]")
    return _File(rel, header + ["---", f"# {title}", ""], {"tags": tags}, created=True)


# --- the engine ---------------------------------------------------------------------------


def builtin_response(
    vault: Vault, notes: list[SelectedNote], originals: dict[str, str], pass_date: str
) -> str:
    """The SPEC §5 response for these notes. `originals` maps every convergent file (vault-relative
    path) to its current text; the same inputs give the same bytes."""
    work = _Pass(vault, originals, pass_date)
    # Oldest note first, so a later change of mind nests over an earlier one.
    for note in sorted(notes, key=lambda n: (n.mtime_ns, n.rel)):
        _converge_note(work, note)
    work.cache.save()
    return _render(work)


def _converge_note(work: _Pass, note: SelectedNote) -> None:
    secret = _secret_line(note) or _unlinkable(note.name)
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
    `quote_line` asks only about a line ending in a link, and making the names of 1,543 topic
    files at 10k was ~15 ms of every pass whose lines end in none."""

    def __init__(self, work: _Pass):
        self.work, self.keys = work, None

    def __contains__(self, key: str) -> bool:
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


def _named_files(work: _Pass, note: SelectedNote) -> list[str]:
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
    work: _Pass,
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
    is_change = signal.cls == "correction" or (
        signal.cls == "decision" and bool(SWITCH.search(raw))
    )
    if signal.cls == "recurring" and day is not None:
        merged = _merge_pattern(work, note, text, day)
        if merged:
            return merged
    # A correction quoting the old statement ("其实不是 X，是 Y") contains it: not a duplicate.
    duplicate = _find_duplicate(work, text, preferred, exact_only=is_change)
    if duplicate and (note.name in duplicate[1].sources or not duplicate[0].problem):
        file, statement = duplicate
        if note.name not in statement.sources:
            if not _fits(work, file, f"、[[{note.name}]]"):
                return None, _FULL
            if not _add_source(work, file, statement, note.name):
                return None, _UNREADABLE
        return file.rel, ""
    cite = _citation(note, signal)  # the note, or the session turn the line stands in
    source = format_source([cite], work.formats)
    match = _best_match(work, note, raw, preferred) if is_change else None
    if match:
        if not _fits(work, match[0], text + format_trace(work.date, "", work.formats) + source):
            return None, _FULL
        written = _rewrite(work, *match, text, cite, raw)
        if written is not None:
            work.written.add((match[0].rel, normalize(written), note.rel))
            return match[0].rel, ""
        # its trace would not read back in this vault's formats: the line is added instead
    file = _route(work, note, signal, text, named)
    if file.problem:
        return None, f"{file.rel} is left alone ({file.problem}); fix it and converge again"
    if signal.cls == "recurring" and day is not None:
        text = pattern_text(text, [day.isoformat()])
    if not _fits(work, file, f"- {text}{source}"):
        return None, _FULL
    if not _append(work, file, text, cite, signal.cls):
        return None, _UNREADABLE
    work.written.add((file.rel, normalize(text), note.rel))
    return file.rel, ""


def _citation(note: SelectedNote, signal: Signal) -> str:
    """`note` or, for a line of a user's turn in a session note, `note#^t5` (SPEC §14)."""
    from cmem.sessions.note import turn_of_line

    turn = turn_of_line(note.text, signal.line)
    return f"{note.name}#^t{turn}" if turn else note.name


_UNREADABLE = (
    "written as a statement, it would not read back as written (its words hold HTML, or read "
    "as a source or a trace in this vault's formats); it waits for a model"
)


# --- recurring patterns: one statement with its count and dates ---------------------------


def _merge_pattern(work: _Pass, note: SelectedNote, base: str, day) -> tuple[str, str] | None:
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
        if not _add_source(work, file, statement, note.name):
            return None, _UNREADABLE
        return file.rel, ""
    formats = work.formats_for(file)
    new_core = pattern_text(what, dates + [day.isoformat()], zh)
    line = file.lines[statement.line_no - 1]
    prefix = _LIST_PREFIX.match(line).group(0)
    gone = work.sources_of_gone(file, normalize(new_core))
    names = list(dict.fromkeys([*statement.sources, *gone, note.name]))
    older = [line[t.start : t.end] for t in statement.traces]
    if work.held_at_first(file.rel, statement.key):
        was = count_clause(count, zh) + (_joiner(formats.trace) + "".join(older) if older else "")
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
        new += _joiner(formats.trace) + trace
    new += _joiner(formats.source) + format_source(names, formats)
    if not _fits(work, file, new):
        return None, _FULL
    if not _reads_back(work, new, new_core, names, expected):
        return None, _UNREADABLE
    file.edit(statement.line_no - 1, 1, [new])
    _sources_stay_with_the_words(work, file, statement)
    work.written.add((file.rel, normalize(new_core), note.rel))
    return file.rel, ""


def _reads_back(
    work: _Pass, line: str, core: str, sources: list[str], traces: list[str] | None
) -> bool:
    """Whether a line the engine writes reads back as it meant it, in the vault's formats: these
    words, these sources, these top-level traces (None: any), and no raw HTML (rule 9). A
    statement whose words hold the start of a source or trace annotation, or brackets that end a
    trace early, would otherwise reach the validator with a source it does not cite or a trace
    it did not keep."""
    from cmem.converge.lines import holds_html

    if holds_html(line):
        return False
    got_core, got_sources, got_traces = split_statement(line, work.formats)
    # a source citing a session turn (`note#^t5`, SPEC §14) reads back as its note
    wanted = [source.split("#", 1)[0] for source in sources]
    if normalize(got_core) != normalize(core) or list(got_sources) != wanted:
        return False
    return traces is None or [t.old for t in got_traces] == traces


_FULL = "the resident files are at their size cap (resident_max_tokens); compress them by hand or with an llm pass"


def _fits(work: _Pass, file: _File, added: str) -> bool:
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


_MERGE_MIN, _MERGE_EXTRA = 6, 4  # normalised characters


def _find_duplicate(
    work: _Pass, text: str, preferred: set[str], exact_only: bool
) -> tuple[_File, Statement] | None:
    """A statement saying the same: equal once normalised, holding the new line, or held by it
    with at most a few characters more ("…了", "always …"). A line that adds a clause is not a
    duplicate: merging it would lose the clause from memory once the note is archived."""
    key = normalize(text)
    files = sorted(
        work.files.values(), key=lambda f: (bool(f.problem), f.rel not in preferred, f.rel)
    )
    for file in files:
        # the kept keys, so that only a file holding the duplicate is parsed
        if exact_only:  # equality alone: looked up without splitting the file into its keys
            index = file.words(work).index_of(key)
            if index is not None:
                return file, file.statements(work.formats)[index]
            continue
        for index, old in enumerate(file.words(work).keys):
            if old == key:
                return file, file.statements(work.formats)[index]
            if exact_only or min(len(old), len(key)) < _MERGE_MIN:
                continue
            if key in old or (old in key and _adds_nothing(key.replace(old, "", 1))):
                return file, file.statements(work.formats)[index]
    return None


# Cue words a line may wrap around a statement memory already holds ("I prefer …", "以后都…").
_CUE_WORDS = re.compile(
    r"^(?:iprefer|ilike|ialways|fromnowon|idecidedto|idecided|我喜欢|我更喜欢|以后都|以后|我决定|决定)"
)
_NEGATION = re.compile(r"不|别|没|无|非|never|not|no|dont")


def _adds_nothing(extra: str) -> bool:
    """Whether what a new line has beyond an old statement is only cue words or a few
    characters — never a negation, which would turn the statement around."""
    rest = _CUE_WORDS.sub("", extra)
    return len(rest) <= _MERGE_EXTRA and not _NEGATION.search(rest)


def _best_match(
    work: _Pass, note: SelectedNote, text: str, preferred: set[str]
) -> tuple[_File, Statement] | None:
    """The statement an explicit change replaces, if the line is about it; else None and the
    line is added. When the line names an old side ("not 2", "from uv to", "不是北京"), only a
    statement holding it may be replaced, and one holding only a number or a common word of it
    must share another word with the line (`corrections.holds`, `specific`); without an old
    side, a statement must share two words with the line, or fill the same slot ("I moved to
    Munich" → "I live in Berlin"). Among those: most shared words, rare words weighing more,
    words of the old side double, the files the note names first.

    Only statements sharing a word with the line can pass those rules, so they are found through
    each file's word index (`FileWords.postings`) instead of scoring every statement; how rare a
    word is still counts every statement. A line filling a slot may replace a statement
    sharing no word, so it looks at them all. A statement this note wrote is replaced only when
    the line names it by its old side (a correction of a correction in one note)."""
    sides = old_sides(text)
    new_terms, old_terms = terms(text), old_side_terms(text)
    for side in sides:
        new_terms = new_terms | side_words(side)
    slot = _slot(text)
    files = work.writable(preferred)
    total = 0  # statements that may be rewritten
    frequency: dict[str, int] = dict.fromkeys(new_terms, 0)
    # (file's place, statement index) → the line's words it holds
    shared_by: dict[tuple[int, int], set[str]] = {}
    probes = [probe(word) for word in new_terms]
    # what this note wrote, by file
    written: dict[str, set[str]] = {}
    for rel, key, by in work.written:
        if by == note.rel:
            written.setdefault(rel, set()).add(key)
    for place, file in enumerate(files):
        words = file.words(work)
        barred = set(words.empty)
        total += words.count - len(barred)
        for word, indexes in words.holding_each(probes):
            for index in indexes:
                if index not in barred:
                    frequency[word] += 1
                    shared_by.setdefault((place, index), set()).add(word)
        if slot is not None:
            for index in range(words.count):
                if index not in barred:
                    shared_by.setdefault((place, index), set())
    best, best_score = None, 0.0
    # in the order of a full scan: on a tie the earlier wins (named files, then resident, path)
    for place, index in sorted(shared_by):
        work.compared += 1
        shared = shared_by[(place, index)]
        file = files[place]
        named = file.rel in preferred
        core = file.statements(work.formats)[index].core
        mine = file.rel in written and file.words(work).keys[index] in written[file.rel]
        same_slot = slot is not None and _slot(core) == slot
        held = [side for side in sides if holds(core, side)]
        if sides:
            # "not 2": the statement holding 2 and another word of the line, never any "2"
            about = any(specific(side) or shared - side_words(side) for side in held)
            if not about and not (same_slot and not mine):
                continue
        elif mine or (len(shared) < 2 and not same_slot):
            continue
        score = sum(
            (1 + math.log(max(total, 1) / max(frequency.get(w, 0), 1)))
            * (2 if w in old_terms else 1)
            for w in sorted(shared)
        )
        score += 3 if same_slot else 0
        score += 4 * len(held)
        score *= 1.5 if named else 1
        if score > best_score:
            best, best_score = (file, index), score
    return None if best is None else (best[0], best[0].statements(work.formats)[best[1]])


# Slots that hold one value at a time: where one lives. A move replaces the last one.
_SLOTS = [
    (
        "home",
        re.compile(
            r"^(?:i|we)(?:'ve| have)?\s+(?:moved\s+to|live\s+in|relocated\s+to)\b|搬到|搬家到|住在",
            re.IGNORECASE,
        ),
    )
]


def _slot(text: str) -> str | None:
    text = without_cue(text.strip())
    for name, pattern in _SLOTS:
        if pattern.search(text):
            return name
    return None


def _route(work: _Pass, note: SelectedNote, signal: Signal, text: str, named: list[str]) -> _File:
    if signal.cls == "recurring":
        return work.resident_file(METHODOLOGY)
    if signal.cls != "decision":
        return work.resident_file(PROFILE)
    situational_dir = work.config.situational_dir + "/"
    for rel in named:
        if rel.startswith(situational_dir):
            return work.files[rel]
    return _subject_topic(work, text) or _best_topic(work, text) or _new_topic(work, note, text)


def _subject_topic(work: _Pass, text: str) -> _File | None:
    """The topic file named after the line's subject (file name, title, alias or tag)."""
    subject = subject_of(text)
    if not subject:
        return None
    key = name_key(subject)
    for file in work.situational():
        if file.problem:
            continue
        title = next(
            (line[2:] for line in file.lines[file.body_start - 1 :] if line.startswith("# ")), ""
        )
        if key in file.keys or name_key(title) == key or name_key(slug(subject)) in file.keys:
            return file
    return None


def _weight(words: set[str]) -> float:
    """English words weigh 1.5, CJK bigrams 1: a shared three-character Chinese word gives two
    bigrams and should not outweigh two shared English words."""
    return sum(1.5 if word.isascii() else 1.0 for word in words)


def _best_topic(work: _Pass, text: str) -> _File | None:
    new_terms = terms(text)
    best, best_score = None, 0.0
    for file in work.situational():
        if file.problem:
            continue
        # every word of its statements: the keys of its word index
        words = set(terms(str(file.meta.get("summary") or ""))) | file.words(work).words()
        score = _weight(new_terms & words)
        if score >= 3 and score > best_score:
            best, best_score = file, score
    return best


_GENERIC_TAGS = {
    name_key(t)
    for t in "daily journal diary 日记 随手记 笔记 note notes idea ideas inbox todo meeting converge noconverge private draft 草稿 想法".split()
}


def _new_topic(work: _Pass, note: SelectedNote, text: str) -> _File:
    """The topic file of the line's subject, else of the note's first specific tag, else of the
    line's first words (`topic_names`): never a note's link, a date, a year or a note's name."""
    from cmem.converge.paths import skeleton
    from cmem.converge.topic_names import topic_name

    subject = subject_of(text)
    tags = [
        t.replace("-", " ").replace("_", " ").replace("/", " ").strip()
        for t in note.tags
        if name_key(t) not in _GENERIC_TAGS
    ]
    words = " ".join(leading_words(without_cue(text)))
    titles = [t for t in [subject or "", *tags, words, "topic"] if t]
    existing = {skeleton(rel): rel for rel in work.files}
    rel, title = topic_name(
        titles,
        work.config.situational_dir,
        existing,
        work.is_note_name,
        lambda rel: not work.files[rel].problem,
    )
    if rel not in work.files:
        # summarised by its name, never by a statement's words: a rewrite cannot make it stale
        summary = title if len(title) <= 80 else title[:79] + "…"
        name = rel.rsplit("/", 1)[-1].removesuffix(".md")
        work.files[rel] = _new_file(
            rel, summary, 5, work.date, title[:1].upper() + title[1:], [name]
        )
    return work.files[rel]


# --- editing lines ------------------------------------------------------------------------

_LIST_PREFIX = re.compile(r"^\s*(?:(?:[-*+]|\d+[.)])\s+)?(?:\[[ xX]\]\s+)?")


def _own_source_spans(line: str, formats: Formats) -> list[tuple[int, int]]:
    """Source annotations of the statement itself (one inside a trace belongs to the old words)."""
    traces = [(t.start, t.end) for t in find_traces(line, formats)]
    return [
        (start, end)
        for start, end, _ in find_sources(line, formats)
        if not any(s <= start and end <= e for s, e in traces)
    ]


def _add_source(work: _Pass, file: _File, statement: Statement, name: str) -> bool:
    """The note joins the statement's sources; False (nothing written) when the line would not
    read back with it."""
    if name in statement.sources:
        return True
    index = statement.line_no - 1
    line = file.lines[index]
    spans = _own_source_spans(line, work.formats)
    if spans:
        # Extend the last annotation in its own style (a zh vault may hold an en line).
        start, end = spans[-1]
        annotation = line[start:end]
        # after its last link (the format's own closing bracket may be a "]" too)
        close = [m.end() for m in WIKILINK.finditer(annotation)][-1]
        separator = _separator_of(annotation, work.formats)
        line = (
            line[:start]
            + annotation[:close]
            + separator
            + f"[[{name}]]"
            + annotation[close:]
            + line[end:]
        )
    else:
        formats = work.formats_for(file)
        line = line.rstrip() + _joiner(formats.source) + format_source([name], formats)
    olds = [trace.old for trace in statement.traces]
    if not _reads_back(work, line, statement.core, [*statement.sources, name], olds):
        return False
    file.edit(index, 1, [line])
    return True


def _separator_of(annotation: str, formats: Formats) -> str:
    from cmem.vault.config import LANGUAGE_DEFAULTS

    for template, separator in [(formats.source, formats.source_separator)] + [
        (d["source"], d["source_separator"]) for d in LANGUAGE_DEFAULTS.values()
    ]:
        if annotation.startswith(template.split("{links}", 1)[0]):
            return separator
    return formats.source_separator


def _rewrite(
    work: _Pass, file: _File, statement: Statement, text: str, name: str, raw: str | None = None
) -> str | None:
    """The new words, then a trace quoting the old ones with their own traces, dated by the note
    the change came from (never after the pass), then the sources: the old wording's and the
    note's, so every note the statement came from stays cited. When the line corrects one part
    of the statement ("3 sessions a week, not 2", "不是 X，是 Y", "from pipenv to uv"), the new
    part goes in place of the old one inside it (`corrections.substitute`) instead. Returns the
    new statement's words, or None (nothing written) when the line would not read back."""
    index = statement.line_no - 1
    line = file.lines[index]
    prefix = _LIST_PREFIX.match(line).group(0)
    old = line
    for start, end in sorted(_own_source_spans(line, work.formats), reverse=True):
        old = old[:start] + old[end:]
    old = " ".join(old[len(prefix) :].split())
    swap = substitute(statement.core, text, raw or text, old_sides(raw or text))
    if swap:
        text = swap[0]
    formats = work.formats_for(file)
    gone = work.sources_of_gone(file, normalize(text)) if normalize(text) != statement.key else []
    sources = list(dict.fromkeys([*statement.sources, *gone, name]))
    day = work.trace_date(name, old)
    if day is None:
        return None
    new = (
        prefix
        + text
        + _joiner(formats.trace)
        + format_trace(day, old, formats)
        + _joiner(formats.source)
        + format_source(sources, formats)
    )
    if not _reads_back(work, new, text, sources, [old]):
        return None
    file.edit(index, 1, [new])
    _sources_stay_with_the_words(work, file, statement)
    _refresh_summary(work, file, statement.core, text, swap[1:] if swap else None)
    return text


def _sources_stay_with_the_words(work: _Pass, file: _File, changed: Statement) -> None:
    """A statement just changed may have a twin saying its old words (two statements that came
    to say the same): the twin that stays takes the changed one's sources, since the validator
    holds the words memory keeps to every note they came from (rule 3)."""
    twins = [s for s in file.statements(work.formats) if s.key == changed.key]
    if not twins:
        return
    for name in changed.sources:
        twin = next(s for s in file.statements(work.formats) if s.key == changed.key)
        if name not in twin.sources:
            _add_source(work, file, twin, name)


def _refresh_summary(
    work: _Pass, file: _File, old: str, new: str, part: tuple[str, str] | None
) -> None:
    """A file's `summary:` after one of its statements changed: the words it quoted from the
    old statement, or the part a correction replaced, are replaced the same way, so the index
    never shows what memory no longer says. A summary that quotes neither is left alone (it says
    what the file is about, not what a statement says); a summary of several lines too."""
    summary = file.meta.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        return
    fresh = summary
    for before, after in ((old, new), part or ("", "")):
        if not before:
            continue
        # whole words only: "uv" is no part of "uvicorn"
        place = re.compile(rf"(?<![\w.+#-]){re.escape(before)}(?![\w+#-]|\.\d)")
        if place.search(summary):
            fresh = place.sub(lambda _: after, summary)
            break
    if fresh == summary:
        return
    last = file.body_start - 3  # the frontmatter's last line, `---` being lines[0]
    for at in range(1, last + 1):
        match = re.match(r"^(summary[ \t]*:[ \t]*)(.*?)([ \t]+#.*)?$", file.lines[at])
        if not match:
            continue
        if match.group(2)[:1] in ("|", ">", "") or (
            at < last and file.lines[at + 1][:1] in (" ", "\t")
        ):
            return  # a block or folded value: not one line to edit
        file.edit(
            at,
            1,
            [f"{match.group(1)}{json.dumps(fresh, ensure_ascii=False)}{match.group(3) or ''}"],
        )
        file.meta = {**file.meta, "summary": fresh}
        return


def _change_date(name: str, pass_date: str) -> str:
    """The day a change came from: the date in its note's name, else the pass's; never later
    than the pass (SPEC §5 rule 5)."""
    from datetime import date

    day = note_date(name, date.fromisoformat(pass_date)).isoformat()
    return min(day, pass_date)


_CLASS_HEADINGS = {
    "en": {
        "preference": "Preferences",
        "correction": "Facts",
        "decision": "Decisions",
        "recurring": "Patterns",
    },
    "zh": {
        "preference": "偏好",
        "correction": "事实",
        "decision": "决定",
        "recurring": "反复出现的模式",
    },
}


def _append(work: _Pass, file: _File, text: str, name: str, cls: str | None = None) -> bool:
    """A new statement; False (nothing written) when it would not read back as written."""
    resident = file.rel.startswith(work.config.resident_dir + "/")
    formats = work.formats_for(
        file, "" if resident else text
    )  # resident files are in the vault's language
    names = list(dict.fromkeys([*work.sources_of_gone(file, normalize(text)), name]))
    line = f"- {text}{_joiner(formats.source)}{format_source(names, formats)}"
    if not _reads_back(work, line, text, names, []):
        return False
    if resident and cls in _CLASS_HEADINGS["en"]:
        # resident files keep one heading per class: a decision never lands under "weaknesses"
        language = (
            work.config.language
            if work.custom_formats
            else "zh"
            if formats.source.startswith("（")
            else "en"
        )
        _append_under(work, file, f"## {_CLASS_HEADINGS[language][cls]}", line)
        return True
    index, blank_first = _insertion_point(work, file, terms(text))
    file.edit(index, 0, ["", line] if blank_first else [line])
    return True


def _append_under(work: _Pass, file: _File, heading: str, line: str) -> None:
    """After the last line of the section `heading` (any level, any case), or a new section at
    the file's end."""
    top = file.body_start - 1
    wanted = heading.lstrip("#").strip().casefold()
    for index in range(top, len(file.lines)):
        match = re.match(r"(#{1,6})\s+(.*?)\s*$", file.lines[index])
        if match and match.group(2).casefold() == wanted:
            level = len(match.group(1))
            end = index + 1
            while end < len(file.lines):
                other = re.match(r"(#{1,6})\s", file.lines[end])
                if other and len(other.group(1)) <= level:
                    break
                end += 1
            while end > index + 1 and not file.lines[end - 1].strip():
                end -= 1
            file.edit(end, 0, [line])
            return
    tail = [] if not file.lines or not file.lines[-1].strip() else [""]
    file.edit(len(file.lines), 0, [*tail, heading, "", line])


def _insertion_point(work: _Pass, file: _File, new_terms: frozenset[str]) -> tuple[int, bool]:
    """After the last statement of the section sharing the most words (the last section on a
    tie); the file's end when it has no statements yet."""
    statements = file.statements(work.formats)
    if not statements:
        blank_first = (
            bool(file.lines) and file.lines[-1].strip() != "" and not file.lines[-1].startswith("#")
        )
        return len(file.lines), blank_first
    sections: dict[int, list[Statement]] = {}
    top = file.body_start - 1  # a `# comment` in the frontmatter is no heading
    for statement in statements:
        heading = next(
            (
                i
                for i in range(statement.line_no - 2, top - 1, -1)
                if re.match(r"#{1,6}\s", file.lines[i])
            ),
            -1,
        )
        sections.setdefault(heading, []).append(statement)

    def overlap(item: tuple[int, list[Statement]]) -> tuple[int, int]:
        heading, members = item
        words = set(terms(file.lines[heading])) if heading >= 0 else set()
        for statement in members:
            words |= terms(statement.core)
        return len(new_terms & words), heading

    _, members = max(sections.items(), key=overlap)
    index = members[-1].line_no  # the line after the section's last statement
    in_table = file.lines[index - 1].lstrip().startswith("|")
    while in_table and index < len(file.lines) and file.lines[index].lstrip().startswith("|"):
        index += 1
    return index, in_table


# --- the response -------------------------------------------------------------------------


def _render(work: _Pass) -> str:
    out = ["<convergence>"]
    for rel, file in sorted(work.files.items()):
        if not file.changed:
            continue
        if not file.created:
            _touch_updated(file, work.date)
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
