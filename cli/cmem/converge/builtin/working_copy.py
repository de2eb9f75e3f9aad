"""The builtin engine's working copy of the convergent layer: each memory file as lines,
parsed into statements when asked, with the words the engine compares (`statement_words`); the
pass's state (`PassWork`: the files, what each note wrote); a new file's frontmatter."""

from __future__ import annotations

import json
import re
from collections.abc import Set
from dataclasses import dataclass, field
from functools import cached_property

from cmem.converge.builtin.line_words import name_key
from cmem.converge.builtin.phrasing import is_chinese
from cmem.converge.memory.statement_words import (
    CACHE_NAME,
    FileWords,
    TokenMemo,
    WordsCache,
    fingerprint,
    text_digest,
)
from cmem.text.tokens import estimate_tokens
from cmem.vault.config import Formats
from cmem.vault.layers import Vault
from cmem.vault.notes import note_date, parse_frontmatter_block, split_frontmatter
from cmem.vault.statements import Statement, normalize, parse_statements, split_statement

PROFILE, METHODOLOGY = "profile.md", "methodology.md"


@dataclass
class MemoryFile:
    rel: str
    # the whole file as lines (`lines`), or its text until they are first asked for: most of
    # the files a pass loads are never read line by line
    _lines: list[str] | str
    meta: dict
    problem: str | None = None  # set: the engine leaves this file alone
    changed: bool = False
    created: bool = False
    digest: bytes | None = None  # the original text's, while the file is unchanged
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

    def words(self, work: PassWork) -> FileWords:
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
            self._tokens = estimate_tokens(text) if memo is None else memo.tokens(text)
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


# The frontmatter keys this engine reads (`MemoryFile.keys`, `_best_topic`): all a cached head keeps.
_META_KEYS = ("aliases", "tags", "summary")


def _load(rel: str, text: str, cache: WordsCache | None = None) -> MemoryFile:
    digest = text_digest(text)
    head = cache.head(digest) if cache is not None else None
    if head is None:
        head = _head(text)
        if cache is not None:
            cache.put_head(digest, *head)
    return MemoryFile(rel, text, head[1], head[0], digest=digest)


def warm_words(vault: Vault, texts: dict[str, str], deadline: float) -> bool:
    """The words of the memory files whose texts are `texts` (as a pass reads them), made and
    kept until `deadline` (a `time.monotonic()`), as `PassWork` would make them: a big vault's
    first pass spread over several background runs. Whether all are kept now."""
    import time

    formats = vault.config.formats
    cache = WordsCache(vault.machine_dir / CACHE_NAME, fingerprint(formats))
    done = True
    for rel, text in sorted(texts.items()):
        if time.monotonic() > deadline:
            done = False
            break
        file = _load(rel, text, cache)
        if not file.problem and file.digest is not None and cache.get(file.digest) is None:
            cache.put(file.digest, FileWords.of(file.statements(formats)))
    cache.save()
    return done


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


def touch_updated(file: MemoryFile, date: str) -> None:
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


class PassWork:
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
        self.compared = 0  # statements scored by `best_match`: what its index saves, for tests
        self.converged: dict[str, set[str]] = {}
        self.deferred: dict[str, str] = {}
        # (file, statement key, note) of every line this pass wrote: a note's switch must not
        # rewrite what the same note just added.
        self.written: set[tuple[str, str, str]] = set()
        # note → {line: why the builtin engine leaves it for a model}, beside what it converged
        self.deferred_lines: dict[str, dict[int, str]] = {}
        self._note_shapes: set[str] | None = None
        self._archived: list | None = None  # scan.archive_recurrence, read on first use
        self._trace_ids: set[tuple[str, str]] | None = None  # (date, old words) of every trace

    def is_note_name(self, name: str) -> bool:
        """Whether `name` looks like (skeleton) the name of a note, divergent or archived: a new
        memory file named so would make `[[name]]` ambiguous (rule 12)."""
        if self._note_shapes is None:
            from cmem.converge.validator.allowed_paths import skeleton
            from cmem.vault.layers import ARCHIVE, DIVERGENT

            vault = self.vault
            self._note_shapes = {
                skeleton(note)
                for note, paths in vault.note_names().items()
                if any(vault.layer_of(p) in (DIVERGENT, ARCHIVE) for p in paths)
            }
        from cmem.converge.validator.allowed_paths import skeleton

        return skeleton(name) in self._note_shapes

    def archived_occurrences(self, base: str, name: str) -> list[tuple[str, str]]:
        """(name, day) of each archived note, oldest first, whose recurring line shares a key
        phrase with `base` (what keeps happening), as the scan counted them (docs/design.md §2: archived
        notes count); never the note `name` itself."""
        from cmem.scan.archive_recurrence import archived_recurrences
        from cmem.scan.recurrence import phrase_keys

        if self._archived is None:
            self._archived = archived_recurrences(self.vault)
        keys = set(phrase_keys(base.lower()))
        found = {
            (note.day, note.name)
            for note in self._archived
            if note.name != name and keys & set(note.keys)
        }
        return [(found_name, day) for day, found_name in sorted(found)]

    def held_at_first(self, rel: str, key: str) -> bool:
        """Whether the file held a statement with this key before the pass changed anything
        (a set of all 28k keys at 10k, made at the start, was a third of starting the engine)."""
        words = self._original.get(rel)
        return words is not None and words.index_of(key) is not None

    def sources_of_gone(self, file: MemoryFile, key: str) -> list[str]:
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

    def writable(self, preferred: Set[str] = frozenset()) -> list[MemoryFile]:
        """Writable files: the ones a note names first, then resident before situational."""
        resident = self.config.resident_dir + "/"
        files = [f for f in self.files.values() if not f.problem]
        return sorted(
            files, key=lambda f: (f.rel not in preferred, not f.rel.startswith(resident), f.rel)
        )

    def situational(self) -> list[MemoryFile]:
        return [
            f
            for rel, f in sorted(self.files.items())
            if rel.startswith(self.config.situational_dir + "/")
        ]

    def formats_for(self, file: MemoryFile, incoming: str = "") -> Formats:
        return file.formats(self.formats, self.custom_formats, incoming)

    def resident_file(self, name: str) -> MemoryFile:
        rel = f"{self.config.resident_dir}/{name}"
        if rel not in self.files:
            summary, importance, title = _NEW_RESIDENT[self.config.language][name]
            self.files[rel] = new_file(rel, summary, importance, self.date, title, [])
        return self.files[rel]


def _trace_key(old: str, formats: Formats) -> str:
    """A trace's identity besides its date, as the validator compares them."""
    return normalize(split_statement(old, formats)[0])


def new_file(
    rel: str, summary: str, importance: int, date: str, title: str, tags: list[str]
) -> MemoryFile:
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
    return MemoryFile(rel, header + ["---", f"# {title}", ""], {"tags": tags}, created=True)


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


def joiner(template: str) -> str:
    """A space before `(source: …)` or `— …`, none before full-width `（来源：…）`."""
    import unicodedata

    return "" if unicodedata.east_asian_width(template[:1] or " ") in "FW" else " "


def _change_date(name: str, pass_date: str) -> str:
    """The day a change came from: the date in its note's name, else the pass's; never later
    than the pass (docs/design.md §5 rule 5)."""
    from datetime import date

    day = note_date(name, date.fromisoformat(pass_date)).isoformat()
    return min(day, pass_date)
