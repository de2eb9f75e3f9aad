"""Checking a parsed reply against the vault before anything is written (SPEC §5).

`validate_response` reads — the vault's resident files, and any convergent file the reply
rewrites that the pass did not hand it in `PassContext.originals` — and never writes. It returns
every error at once (the repair round sends them all back), the warnings, and, only when there
is no error, the exact texts to write. The numbered rules are SPEC §5's:

1. paths inside the convergent layer only (see `paths.py`);
2. frontmatter parses and keeps every key it had;
3. new or changed statements cite a source that resolves to a note; kept ones keep theirs;
4. no old statement (nor any of its traces) disappears without a trace or a `<dropped>`;
5. new traces carry the pass date;
6. the resident sublayer stays within `resident_max_tokens`;
7. `<converged>`/`<deferred>` name only notes of the pass;
8. `<dropped>` (or blanking) removes at most a quarter of a file of two or more statements;
9. every added line is a statement, a blank, a short structural heading or a line the file had;
   frontmatter: only `summary`, `updated`, `tags`, `aliases` added or changed, no YAML anchors;
10. a statement leaves a file only as a move (reported), inside its own rewrite's trace, or in
   `<dropped>`; at most a quarter of the memory layer is lost, nothing moves out of the resident
   layer (both unless `--allow-shrink`);
11. a source is a note (divergent or archived), never a memory file or the checklist;
12. a new file's path is NFC, not a look-alike of a memory file, not named like a note;
13. a situational file stays within `situational_max_tokens`.

Statements are compared by `Statement.key` — the normalised core, without list marker, sources
and traces — so rewording punctuation or moving a source is not a change (digits, signs,
currency and question marks are kept: changing them is).
"""

from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import dataclass, field
from functools import cached_property

from cmem.converge.lines import frontmatter_problems, is_blank, unaccounted_lines
from cmem.converge.paths import (
    convergent_path_problem,
    lookalike_problem,
    note_stem_problem,
    show_path,
    skeleton,
)
from cmem.converge.response import RESPONSE, ConvergedEntry, DeferredEntry, Issue, Response
from cmem.converge.rules import (
    ACCOUNTING,
    CITE_NOTES,
    COMPLETE_FILES,
    DROP_LITTLE,
    FRONTMATTER,
    MEMORY_WHOLE,
    NEW_FILES,
    NOTHING_LOST,
    ONLY_STATEMENTS,
    PATHS,
    RESIDENT_SIZE,
    SIZES,
    SOURCES,
    TRACE_DATES,
)
from cmem.converge.turn_citations import turn_issues
from cmem.converge.wording import kept_words, negations, numbers, same_facts
from cmem.text.scripts import cjk_count, is_cjk
from cmem.text.terms import EN_GRAMMAR, bigrams
from cmem.text.tokens import estimate_tokens
from cmem.vault.config import Formats
from cmem.vault.layers import ARCHIVE, DIVERGENT, RESIDENT, SITUATIONAL, NoteFile, Vault
from cmem.vault.notes import read_note
from cmem.vault.statements import (
    WIKILINK,
    Statement,
    Trace,
    format_source,
    may_hold_traces,
    normalize,
    parse_statements,
    split_statement,
)
from cmem.vault.yaml_reader import frontmatter_hazard, read_frontmatter, split_frontmatter

# Below this share of a statement's words found in its cited notes, it may be invented.
INVENTION_THRESHOLD = 0.3
# A statement in one script citing a note in another (an English statement from a Chinese note)
# shares only names and numbers with it (uv, Python, 1500): across scripts, a statement is
# suspect only when the names and numbers there are to share are not shared at all.
_MAX_CITED_READS = 200  # notes read from disk for the invention check, at most, per reply
_INVENTION_MIN_TOKENS = 3
# Lines a model writes instead of the text it did not want to repeat.
_ELISION = re.compile(
    r"(rest|remainder|remaining|other|everything else|existing)\b.{0,40}\b(unchanged|omitted|same|as before|as is|elided)"
    r"|\b(unchanged|omitted) for brevity"
    r"|(其余|其他|其它|以下|以上|剩余|剩下).{0,8}(不变|省略|同上|未变|略)",
    re.IGNORECASE,
)
_DAY = re.compile(r"(?<!\d)(\d{4}-\d{2}-\d{2})(?!\d)")
_FRONTMATTER_DAY = re.compile(r"^(?:date|created|day):\s*['\"]?(\d{4}-\d{2}-\d{2})", re.MULTILINE)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_WORD_CHAR = re.compile(r"\w")
_BRACKET = re.compile(r"[（(【\[）)】\]]")
_OPENERS = frozenset("（(【[")
# A pass rewrites a handful of files; each file block costs checks on disk, so a reply of
# thousands is refused before any is looked at.
MAX_FILE_BLOCKS = 200
# Traces nest one level per change; deeper nesting is a hostile or broken reply, and parsing it
# level by level would cost the line's length once per level.
MAX_NESTING = 64
# Statements a gone one is compared with, at most (those holding its rarest word): a reply that
# removes thousands of statements is judged in time linear in its size.
_MAX_CANDIDATES = 50


def _is_ellipsis_line(line: str) -> bool:
    """A line of only dots and punctuation, like `...` or `- …`: the model skipped text. (A plain
    test, not a pattern: `^\\W*(\\.{3,})\\W*$` backtracks with the cube of a line of dots.)"""
    return ("..." in line or "…" in line) and not _WORD_CHAR.search(line)


def _nesting(line: str) -> int:
    """The deepest bracket nesting in a line, in one pass over its brackets."""
    depth = deepest = 0
    for match in _BRACKET.finditer(line):
        if match.group() in _OPENERS:
            depth += 1
            deepest = max(deepest, depth)
        elif depth:
            depth -= 1
    return deepest


@dataclass
class PassContext:
    """What the pass knows that the reply must agree with."""

    pass_date: str  # YYYY-MM-DD: the only date a new trace may carry
    selected: list[str]  # vault-relative paths of the notes in this pass
    originals: dict[str, str | None]  # convergent path → the text the pass read (None: new file)
    note_names: dict[str, list[str]]  # wikilink name → paths, as `Vault.note_names()` gives
    allow_shrink: bool = False  # `--allow-shrink`: lift rule 8
    source_texts: dict[str, str] = field(default_factory=dict)  # note name → text (invention check)
    line_counts: dict[str, int] = field(default_factory=dict)  # note of the pass → its lines


@dataclass
class Validation:
    errors: list[Issue] = field(default_factory=list)
    warnings: list[Issue] = field(default_factory=list)
    writes: dict[str, str] = field(default_factory=dict)  # path → new text; empty unless ok
    bases: dict[str, str | None] = field(
        default_factory=dict
    )  # path → the text each write replaces
    converged: list[ConvergedEntry] = field(default_factory=list)  # note = the selected path
    deferred: list[DeferredEntry] = field(default_factory=list)
    moves: list[dict] = field(
        default_factory=list
    )  # {"statement", "from", "to": [paths]}: reported, never silent
    # old statements rewritten into another without a change of fact, declared (<merged>) or
    # found (every word kept): {"statement", "into", "file", "declared"}, in the commit message
    merged: list[dict] = field(default_factory=list)
    line_reasons: dict[str, dict[int, str]] = field(default_factory=dict)  # note → line → reason

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def inventions(self) -> list[Issue]:
        return [w for w in self.warnings if w.rule == "invention"]


@dataclass
class _Doc:
    """A convergent file's text split into frontmatter and statements."""

    text: str
    frontmatter: str | None
    frontmatter_problem: str | None
    body_start: int
    statements: list[Statement]

    @cached_property
    def keys(self) -> set[str]:
        return {s.key for s in self.statements}


@dataclass
class _Change:
    path: str
    block_line: int  # line of the <file> tag in the reply
    base: _Doc | None  # None: a new file
    new: _Doc


def format_issues(issues: list[Issue]) -> str:
    """Issues as a list for the repair prompt and the terminal, one per line."""
    return "\n".join(f"- {issue}" for issue in issues)


def validate_response(vault: Vault, response: Response, ctx: PassContext) -> Validation:
    result = Validation(errors=list(response.errors), warnings=list(response.warnings))
    checker = _Checker(vault, response, ctx, result)
    changes = checker.load_changes()
    for change in changes:
        checker.check_frontmatter(change)
        checker.check_lines(change)
        checker.check_sources(change)
        known = change.base.keys if change.base else set()  # a cited turn is the user's (§14)
        for line, agents, message in turn_issues(change.new.statements, known, checker.cited_text):
            checker.error(change.path, line, CITE_NOTES if agents else SOURCES, message)
        checker.check_removals(change, changes)
        checker.check_new_traces(change, changes)
    checker.check_layer_loss(changes)
    checker.check_dropped_entries(changes)
    checker.check_resident_size(changes)
    checker.check_situational_size(changes)
    checker.check_notes(changes)
    checker.check_invention(changes)
    if result.ok:
        for change in changes:
            if change.base is None or change.new.text != _ended(change.base.text):
                result.writes[change.path] = change.new.text
                result.bases[change.path] = None if change.base is None else change.base.text
    return result


def _ended(text: str) -> str:
    """Text with exactly one final newline: the form cmem writes."""
    return text.rstrip("\n") + "\n"


def _short(text: str, limit: int = 70) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _all_traces(traces: tuple[Trace, ...] | list[Trace]) -> list[Trace]:
    """Traces at every depth: a statement's own, and the ones nested inside them (without
    recursion: a hostile reply may nest deeper than Python's stack)."""
    found = []
    pending = [(list(traces), 0)]
    while pending:
        level, depth = pending.pop()
        for trace in level:
            found.append(trace)
            if depth < MAX_NESTING:
                pending.append((trace.older, depth + 1))
    return found


class _Checker:
    def __init__(self, vault: Vault, response: Response, ctx: PassContext, result: Validation):
        self.vault, self.response, self.ctx, self.result = vault, response, ctx, result
        self.formats: Formats = vault.config.formats
        self._resident: dict[str, str] | None = None
        self._known_traces: set[tuple[str, str]] | None = None
        self._written_traces: set[tuple[str, str]] | None = None
        self._new_key_files: dict[str, set[str]] | None = None
        self._dropped_by_file: dict[str, set[str]] | None = None
        self._parsed: dict[str, _Doc] = {}
        self.content_lines: dict[str, set[int]] = {}  # path → lines a content error named
        self._source_words: dict[str, set[str]] = {}
        names = ctx.note_names
        self._by_name: dict[str, list[str]] = {}  # exact and case-folded name → paths
        for known, paths in names.items():
            self._by_name.setdefault(known, []).extend(paths)
            self._by_name.setdefault(known.casefold(), []).extend(paths)
        # every path tail after a '/' → paths: made when a source names a path (`_tails`)
        self._by_tail: dict[str, list[str]] | None = None
        self._cited_texts: dict[str, str | None] = {}
        self._losses: dict[str, int] = {}  # path → statements dropped or blanked
        self._rewrites: dict[str, list[bool]] | None = None
        self._existing_memory: list[str] | None = None
        self._note_shapes: dict[str, str] | None = None
        self._merged: dict[tuple[str, str], list] | None = None
        self._word_index: dict[str, list] | None = None
        self._traced: list = []
        self.line_reasons: dict[str, dict[int, str]] = {}  # note → deferred line → reason

    def error(self, file: str, line: int, rule: str, message: str) -> None:
        self.result.errors.append(Issue(file, line, rule, message))
        if rule == COMPLETE_FILES:
            self.content_lines.setdefault(file, set()).add(line)

    def warn(self, file: str, line: int, rule: str, message: str) -> None:
        self.result.warnings.append(Issue(file, line, rule, message))

    # --- reading ------------------------------------------------------------------------

    def parse(self, text: str) -> _Doc:
        block, body_start, problem = split_frontmatter(text)
        body = "\n".join(text.split("\n")[body_start - 1 :])
        return _Doc(
            text, block, problem, body_start, parse_statements(body, body_start, self.formats)
        )

    def trace_id(self, trace: Trace) -> tuple[str, str]:
        """A trace is the same trace when its date and the old wording's core agree."""
        return trace.date, normalize(split_statement(trace.old, self.formats)[0])

    def base_text(self, path: str) -> tuple[str | None, str | None]:
        """(text the reply replaces, why it may not be replaced). The pass's own reading wins;
        a file the pass did not read is read here, so its statements are protected too."""
        if path in self.ctx.originals:
            text = self.ctx.originals[path]
            return (None, None) if text is None else (text.replace("\r\n", "\n"), None)
        full = self.vault.root / path
        if not os.path.lexists(full):
            return None, None
        note = read_note(
            NoteFile(path, full, self.vault.layer_of(path) or ""), self.vault.config.max_note_bytes
        )
        if note.skip_reason and not (note.skip_reason == "is empty" and not note.problems):
            return None, note.skip_reason
        if note.problems:
            return None, note.problems[0]
        return note.text, None

    def load_changes(self) -> list[_Change]:
        changes = []
        if len(self.response.files) > MAX_FILE_BLOCKS:
            self.error(
                RESPONSE,
                self.response.files[MAX_FILE_BLOCKS].line,
                SIZES,
                f"the response holds {len(self.response.files)} file blocks, more than {MAX_FILE_BLOCKS} in one pass; write only the files that change",
            )
            return changes
        for block in self.response.files:
            problem = convergent_path_problem(self.vault, block.path)
            if problem:
                self.error(
                    RESPONSE,
                    block.line,
                    PATHS,
                    f'<file path="{show_path(block.path)}">: the path {problem}; write only convergent files under {self.vault.config.resident_dir}/ or {self.vault.config.situational_dir}/',
                )
                continue
            base_text, refusal = self.base_text(block.path)
            if (
                base_text is None
                and not refusal
                and not os.path.lexists(self.vault.root / block.path)
            ):
                problem = lookalike_problem(
                    block.path, self.existing_memory()
                ) or note_stem_problem(block.path, self.note_shapes())
                if problem:
                    self.error(
                        RESPONSE,
                        block.line,
                        NEW_FILES,
                        f'<file path="{show_path(block.path)}">: the path {problem}',
                    )
                    continue
                self.existing_memory().append(
                    block.path
                )  # a second block may not look like it either
            if refusal:
                self.error(
                    block.path,
                    0,
                    COMPLETE_FILES,
                    f"the current file {refusal}; cmem never rewrites such a file — fix it by hand first",
                )
                continue
            new_text = self.content(block.path, block.content)
            if new_text is None:
                continue
            base = None if base_text is None else self.parse(base_text)
            if base is not None and (
                base.frontmatter_problem or read_frontmatter(base.frontmatter)[1]
            ):
                self.error(
                    block.path,
                    1,
                    COMPLETE_FILES,
                    "the current file's frontmatter does not parse; cmem never rewrites it — fix it by hand first",
                )
                continue
            change = _Change(block.path, block.line, base, self.parse(new_text))
            self.check_elision(change.path, change.new, base)
            self.check_replacement_characters(change.path, change.new, base)
            changes.append(change)
        return changes

    def existing_memory(self) -> list[str]:
        """The memory files on disk (and, as they are read, the reply's new ones)."""
        if self._existing_memory is None:
            self._existing_memory = [f.rel for f in self.vault.convergent_files()]
        return self._existing_memory

    def note_shapes(self) -> dict[str, str]:
        """Skeleton of each note's name (divergent or archived) → the name."""
        if self._note_shapes is None:
            self._note_shapes = {}
            for name, paths in self.ctx.note_names.items():
                if any(self.is_note(path) for path in paths):
                    self._note_shapes.setdefault(skeleton(name), name)
        return self._note_shapes

    def is_note(self, path: str) -> bool:
        """A note a statement may cite: divergent or archived, never memory or the checklist."""
        return (
            self.vault.layer_of(path) in (DIVERGENT, ARCHIVE) and path != self.vault.checklist_rel
        )

    def content(self, path: str, content: str) -> str | None:
        """The text to write, or None after naming why the block cannot be written."""
        content = content.lstrip("\ufeff")
        if "\x00" in content:
            self.error(
                path,
                content[: content.index("\x00")].count("\n") + 1,
                COMPLETE_FILES,
                "the content holds NUL bytes",
            )
            return None
        control = _CONTROL.search(content)
        if control:
            self.error(
                path,
                content[: control.start()].count("\n") + 1,
                COMPLETE_FILES,
                f"the content holds the control character U+{ord(control.group()):04X}",
            )
            return None
        for number, line in enumerate(content.split("\n"), 1):
            if ("(" in line or "（" in line or "【" in line or "[" in line) and _nesting(
                line
            ) > MAX_NESTING:
                self.error(
                    path,
                    number,
                    COMPLETE_FILES,
                    f"this line nests brackets {_nesting(line)} deep (at most {MAX_NESTING}); a trace nests once per change",
                )
                return None
        if not content.strip():
            self.error(
                path,
                0,
                COMPLETE_FILES,
                "the file block is empty; a whole-file rewrite must hold the complete file (was the reply cut off?)",
            )
            return None
        return _ended(content)

    def check_elision(self, path: str, new: _Doc, base: _Doc | None) -> None:
        """Name the "… rest unchanged …" line itself: the statements it stands for are caught
        by rule 4, but this says why. A line the file already had is the user's, not elision."""
        before = {line.strip() for line in base.text.split("\n")} if base else set()
        for number, line in enumerate(new.text.split("\n"), 1):
            if (
                (_is_ellipsis_line(line) or _ELISION.search(line))
                and not WIKILINK.search(line)
                and line.strip() not in before
            ):
                self.error(
                    path,
                    number,
                    COMPLETE_FILES,
                    f"this line looks like an elision ({_short(line, 50)!r}); write out the complete file, every statement included",
                )

    def check_replacement_characters(self, path: str, new: _Doc, base: _Doc | None) -> None:
        """U+FFFD is what undecodable bytes of a reply became: a garbled answer, never memory.
        A line the file already had keeps its own, and a word quoted from a note that was itself
        read with replacement characters (a Latin-1 note) is the user's, not the reply's."""
        before = {line.strip() for line in base.text.split("\n")} if base else set()
        sources = [text for text in self.ctx.source_texts.values() if "\ufffd" in text]
        for number, line in enumerate(new.text.split("\n"), 1):
            if "\ufffd" not in line or line.strip() in before:
                continue
            spots = [i for i, ch in enumerate(line) if ch == "\ufffd"]
            quoted = lambda i: any(
                line[max(i - 2, 0) : i + 3] in text for text in sources
            )  # two characters each side
            if not all(quoted(i) for i in spots):
                self.error(
                    path,
                    number,
                    COMPLETE_FILES,
                    "this line holds U+FFFD, the mark of bytes that were not UTF-8 (a garbled reply); write it out again",
                )
                return

    # --- rule 2 ------------------------------------------------------------------------

    def check_frontmatter(self, change: _Change) -> None:
        new = change.new
        if new.frontmatter_problem:
            self.error(change.path, 1, FRONTMATTER, f"the {new.frontmatter_problem}")
            return
        if new.frontmatter and frontmatter_hazard(new.frontmatter):
            self.error(
                change.path, 1, ONLY_STATEMENTS, f"the {frontmatter_hazard(new.frontmatter)}"
            )
            return
        # the plain subset first (what the scanner reads notes with): it gives what the full load
        # gives, and a one-note pass then never imports yaml (~25 ms) for `key: value` lines
        data, problem = read_frontmatter(new.frontmatter)
        if problem:
            where = re.search(r"line (\d+)", problem)
            self.error(change.path, int(where.group(1)) if where else 1, FRONTMATTER, problem)
            return
        for why in frontmatter_problems(
            change.base.frontmatter if change.base else None,
            new.frontmatter,
            data,
            change.base is None,
        ):
            self.error(change.path, 1, ONLY_STATEMENTS, f"the frontmatter {why}")
        if change.base is None:
            return
        before, _ = read_frontmatter(change.base.frontmatter)
        lost = [str(key) for key in before if key not in data]
        if lost:
            self.error(
                change.path,
                1,
                FRONTMATTER,
                f"the frontmatter lost the key{'s' if len(lost) > 1 else ''} {', '.join(lost)}; keep every key the file had",
            )

    # --- rule 9 ------------------------------------------------------------------------

    def check_lines(self, change: _Change) -> None:
        before = {line.strip() for line in change.base.text.split("\n")} if change.base else set()
        statements = {s.line_no for s in change.new.statements}
        for number, why in unaccounted_lines(
            change.new.text, change.new.body_start, statements, before
        )[:MAX_FILE_BLOCKS]:
            if number not in self.content_lines.get(change.path, set()):
                self.error(
                    change.path,
                    number,
                    ONLY_STATEMENTS,
                    f"{why} (only sourced statements, blank lines and short headings are written)",
                )

    # --- rule 3 ------------------------------------------------------------------------

    def targets(self, name: str) -> list[str]:
        """The paths a wikilink name resolves to: by name (`.md` optional, as Obsidian does,
        without regard to case) or by a path's tail (`[[2026-11/x]]`)."""
        name = name.strip()
        bare = name.removesuffix(".md")
        found = (
            self._by_name.get(name) or self._by_name.get(bare) or self._by_name.get(bare.casefold())
        )
        if found:
            return found
        if "/" in name:
            return self._tails().get(bare + ".md", [])
        return []

    def _tails(self) -> dict[str, list[str]]:
        """Made on the first source that names a path: most replies cite notes by name, and
        the tails of every path in the vault (30k at 10k notes) were most of starting a check."""
        if self._by_tail is None:
            self._by_tail = {}
            for paths in self.ctx.note_names.values():
                for path in paths:
                    for i in range(path.count("/") + 1):
                        self._by_tail.setdefault(path.split("/", i)[-1], []).append(path)
        return self._by_tail

    def resolves(self, name: str) -> bool:
        return bool(self.targets(name))

    def check_sources(self, change: _Change) -> None:
        base_keys = change.base.keys if change.base else set()
        elided = self.content_lines.get(change.path, set())
        for statement in change.new.statements:
            if statement.line_no in elided:
                continue
            if statement.key not in base_keys and not statement.sources:
                self.error(
                    change.path,
                    statement.line_no,
                    SOURCES,
                    f"statement has no source: {_short(statement.core)!r}; cite the note it came from as {format_source(['…'], self.formats)}",
                )
            for name in statement.sources:
                if self._kept_source(change, statement, name):
                    continue
                targets = self.targets(name)
                if not targets:
                    self.error(
                        change.path,
                        statement.line_no,
                        SOURCES,
                        f"the source [[{name}]] resolves to no note",
                    )
                elif not any(self.is_note(path) for path in targets):
                    self.error(
                        change.path,
                        statement.line_no,
                        CITE_NOTES,
                        f"the source [[{name}]] is {targets[0]}, a memory file or the checklist, not a note; cite the note the statement came from",
                    )
        self.check_kept_sources(change)

    def _kept_source(self, change: _Change, statement: Statement, name: str) -> bool:
        """A source the statement already had is not the reply's doing, even if broken."""
        if change.base is None:
            return False
        return any(
            old.key == statement.key and name in old.sources for old in change.base.statements
        )

    def check_kept_sources(self, change: _Change) -> None:
        """A statement kept as it was keeps its sources: provenance is what makes memory checkable."""
        if change.base is None:
            return
        new_sources: dict[str, set[str]] = {}
        first_line: dict[str, int] = {}
        for statement in change.new.statements:
            new_sources.setdefault(statement.key, set()).update(statement.sources)
            first_line.setdefault(statement.key, statement.line_no)
        for old in change.base.statements:
            if old.key not in new_sources:
                continue
            lost = [
                name
                for name in old.sources
                if name not in new_sources[old.key] and self.resolves(name)
            ]
            if lost:
                line = first_line[old.key]
                links = ", ".join(f"[[{name}]]" for name in lost)
                self.error(
                    change.path,
                    line,
                    SOURCES,
                    f"the statement {_short(old.core)!r} lost its source {links}; keep the sources of statements you keep",
                )

    # --- rules 4 and 8 ------------------------------------------------------------------

    def dropped_keys(self, path: str) -> set[str]:
        if self._dropped_by_file is None:
            self._dropped_by_file = {}
            for entry in self.response.dropped:
                self._dropped_by_file.setdefault(entry.file, set()).add(
                    normalize(split_statement(entry.statement, self.formats)[0])
                )
        return self._dropped_by_file.get(path, set())

    def written_traces(self, changes: list[_Change]) -> set[tuple[str, str]]:
        """Every trace in the reply's files, at every depth: computed once, not once per file."""
        if self._written_traces is None:
            self._written_traces = {
                self.trace_id(t)
                for other in changes
                for s in other.new.statements
                for t in _all_traces(s.traces)
            }
        return self._written_traces

    def new_key_files(self, changes: list[_Change]) -> dict[str, set[str]]:
        """Statement key → the reply's files that hold it."""
        if self._new_key_files is None:
            self._new_key_files = {}
            for other in changes:
                for statement in other.new.statements:
                    self._new_key_files.setdefault(statement.key, set()).add(other.path)
        return self._new_key_files

    def rewrites(self, changes: list[_Change]) -> dict[str, list[bool]]:
        """Old wording (normalised) → one flag per statement of this pass that rewrites it:
        whether that new statement is blank (`Unknown (was: X)`). A rewrite is a trace this pass
        wrote at the top level of a statement (a change, or a merge into one already there); a
        trace nested inside another is that other statement's history, not this one's rewrite."""
        if self._rewrites is None:
            known = self.known_traces(changes)
            current = {old.key for c in changes if c.base for old in c.base.statements}
            self._rewrites = {}
            for other in changes:
                for statement in other.new.statements:
                    level = list(statement.traces)
                    while level:
                        deeper: list[Trace] = []
                        for trace in level:
                            trace_id = self.trace_id(trace)
                            if trace_id in known:
                                continue
                            self._rewrites.setdefault(trace_id[1], []).append(
                                is_blank(statement.core)
                            )
                            # a statement changed twice in one pass (X → Y → Z): Y was never in a
                            # file, so X, nested under it, is still this chain's own rewrite; under
                            # a statement the file holds, it is that statement's history instead
                            if trace_id[1] not in current:
                                deeper += trace.older
                        level = deeper
        return self._rewrites

    def check_removals(self, change: _Change, changes: list[_Change]) -> None:
        """Rule 4 (and the resident half of rule 10): every old statement gone from the file
        is rewritten with a trace that keeps its words, declared merged, reworded with every
        word and fact kept, moved, or dropped; its traces stay."""
        if change.base is None:
            return
        kept_traces = self.written_traces(changes)
        rewrites = self.rewrites(changes)
        holders = self.new_key_files(changes)
        dropped = self.dropped_keys(change.path)
        resident = self.vault.layer_of(change.path) == RESIDENT
        removed_by_drop = blanked = 0
        for old in change.base.statements:
            gone = old.key and old.key not in change.new.keys
            elsewhere = sorted(holders.get(old.key, set()) - {change.path}) if gone else []
            if gone and old.key in rewrites:
                if all(rewrites[old.key]):
                    blanked += 1  # rewritten as "Unknown": the fact is lost all the same
            elif gone and elsewhere:
                self._moved(change, old, elsewhere, resident)
            elif gone and old.key in dropped:
                removed_by_drop += 1
                continue  # its traces go with it, on purpose
            elif gone and self._declared_merge(change, old, changes):
                pass
            elif gone:
                held = self.words_kept(old, change, changes)
                if held is None:
                    self.error(
                        change.path,
                        old.line_no,
                        NOTHING_LOST,
                        f"the statement {_short(old.core)!r} (line {old.line_no} of the current file) is gone; keep it, rewrite it with a trace that keeps its words {self._example_trace(old.core)}, declare it <merged> into the statement that holds it, or list it in <dropped>",
                    )
                    continue
                path, statement, blank = held
                if blank:
                    blanked += 1
                if path != change.path:
                    self._moved(change, old, [path], resident)
            for trace in _all_traces(old.traces):
                if self.trace_id(trace) not in kept_traces:
                    self.error(
                        change.path,
                        old.line_no,
                        NOTHING_LOST,
                        f"the trace of {_short(old.core, 40)!r} dated {trace.date} (was: {_short(split_statement(trace.old, self.formats)[0], 40)!r}) is gone; keep every trace, nested inside the new one when a statement changes again",
                    )
        self._losses[change.path] = removed_by_drop + blanked
        self.check_shrink(change, removed_by_drop, blanked)

    def _moved(self, change: _Change, old: Statement, to: list[str], resident: bool) -> None:
        self.result.moves.append({"statement": old.core, "from": change.path, "to": to})
        if (
            resident
            and not any(self.vault.layer_of(path) == RESIDENT for path in to)
            and not self.ctx.allow_shrink
        ):
            self.error(
                change.path,
                old.line_no,
                MEMORY_WHOLE,
                f"the statement {_short(old.core)!r} moves out of the resident layer (to {', '.join(to)}); resident memory is read every session — keep it here, or the user passes --allow-shrink",
            )

    def _declared_merge(self, change: _Change, old: Statement, changes: list[_Change]) -> bool:
        """A `<merged>` naming this old statement: the statement it names must be in the
        reply's file, and keep the old one's numbers and negations (a merge changes no fact:
        one losing a number or a "not" is a change, and needs a trace)."""
        for entry in self.merged_entries().get((change.path, old.key), []):
            target = self._merge_target(change, entry.into)
            if target is None:
                self.error(
                    RESPONSE,
                    entry.line,
                    NOTHING_LOST,
                    f"<merged into={_short(entry.into, 50)!r}> names no statement of {change.path} as the reply writes it; copy the statement that holds the old one now",
                )
                return True  # named once: the statement is not "gone" a second time
            # the statement holding it now may say more (two merged into one), never less
            lost_number = not numbers(old.core) <= numbers(target.core)
            if lost_number or negations(old.core) > negations(target.core):
                self.error(
                    change.path,
                    target.line_no,
                    NOTHING_LOST,
                    f"<merged> of {_short(old.core, 50)!r} into {_short(target.core, 50)!r} changes a number or a negation; a change of fact is a rewrite with a trace",
                )
            self.result.merged.append(
                {"statement": old.core, "into": target.core, "file": change.path, "declared": True}
            )
            return True
        return False

    def _merge_target(self, change: _Change, into: str) -> Statement | None:
        key = normalize(split_statement(into, self.formats)[0])
        if not key:
            return None
        for statement in change.new.statements:
            if statement.key == key:
                return statement
        found = [s for s in change.new.statements if len(key) >= 8 and key in s.key]
        return found[0] if len(found) == 1 else None

    def merged_entries(self) -> dict[tuple[str, str], list]:
        if self._merged is None:
            self._merged = {}
            for entry in self.response.merged:
                key = normalize(split_statement(entry.statement, self.formats)[0])
                self._merged.setdefault((entry.file, key), []).append(entry)
        return self._merged

    def words_kept(
        self, old: Statement, change: _Change, changes: list[_Change]
    ) -> tuple[str, Statement, bool] | None:
        """Where the words of a gone statement live on (path, statement, whether that statement is
        blank), or None: a new statement with a trace this pass wrote, the two together holding
        every content word of the old one (a trace may keep only the words that changed); or a
        statement keeping every word, number and negation of it (a rewording, no change). The
        reply's own file is looked in first."""
        words = kept_words(old.core)
        if not words:
            return None
        index = self.word_index(changes)
        rarest = min(words, key=lambda word: len(index.get(word, ())))
        candidates = sorted(
            index.get(rarest, ()), key=lambda c: (c[0] != change.path, c[0], c[1].line_no)
        )
        if not candidates:
            # no statement holds the word: only a trace can (`was: bun`)
            candidates = [c for c in self.traced_statements(changes)]
        for path, statement, statement_words, traces in candidates[:_MAX_CANDIDATES]:
            if words <= statement_words and same_facts(old.core, statement.core):
                self.result.merged.append(
                    {"statement": old.core, "into": statement.core, "file": path, "declared": False}
                )
                return path, statement, False
            for trace_words in traces:
                if words <= statement_words | trace_words:
                    return path, statement, is_blank(statement.core)
        return None

    def word_index(self, changes: list[_Change]) -> dict[str, list]:
        """Content word → the reply's statements that are new or changed, with their words and
        the words of each trace this pass wrote at their top level."""
        if self._word_index is None:
            self._word_index = {}
            known = self.known_traces(changes)
            self._traced = []
            for other in changes:
                base_keys = other.base.keys if other.base else set()
                for statement in other.new.statements:
                    if statement.key in base_keys:
                        continue
                    # a trace's own old wording, not the history nested in it: a statement hidden
                    # inside another one's older trace is lost, not kept
                    traces = [
                        kept_words(split_statement(trace.old, self.formats)[0])
                        for trace in statement.traces
                        if self.trace_id(trace) not in known
                    ]
                    item = (other.path, statement, kept_words(statement.core), traces)
                    if traces:
                        self._traced.append(item)
                    for word in item[2] | frozenset().union(*traces):
                        self._word_index.setdefault(word, []).append(item)
        return self._word_index

    def traced_statements(self, changes: list[_Change]) -> list:
        self.word_index(changes)
        return self._traced

    def _example_trace(self, old: str) -> str:
        return self.formats.trace.replace("{date}", self.ctx.pass_date).replace(
            "{old}", _short(old, 30)
        )

    def check_shrink(self, change: _Change, removed: int, blanked: int = 0) -> None:
        """Rule 8: a file loses at most a quarter of its statements (to <dropped> or blanking)
        in one pass — one in a file of two or three, never all of them; a rewrite with a trace
        or a merge keeps a statement."""
        total = len(change.base.statements) if change.base else 0
        lost = removed + blanked
        # a quarter, and one in a file of two or three (a duplicate may go), never them all;
        # a statement blanked ("Unknown") gets no such allowance
        limit = total // 4 if blanked or total >= 4 else min(1, total - 1)
        if total >= 2 and lost > limit and not self.ctx.allow_shrink:
            how = f" ({removed} in <dropped>, {blanked} blanked)" if blanked else ""
            self.error(
                change.path,
                0,
                DROP_LITTLE,
                f"the reply removes {lost} of its {total} statements{how}, more than rule 8 allows in one pass (a quarter; one of a file of two or three; never all); drop fewer (a statement rewritten with a trace or declared <merged> is kept, not dropped; 'Unknown' is a loss), or the user passes --allow-shrink",
            )

    def check_layer_loss(self, changes: list[_Change]) -> None:
        """More than a quarter of all memory lost in one pass, across files (SPEC §5 rule 10)."""
        lost = sum(self._losses.values())
        if (
            not lost
            or self.ctx.allow_shrink
            or any(issue.rule == DROP_LITTLE for issue in self.result.errors)
        ):
            return  # a file's own quarter already named the loss
        texts = {path: text for path, text in self.ctx.originals.items() if text}
        texts.update({c.path: c.base.text for c in changes if c.base})
        for path, text in self.resident_texts().items():
            texts.setdefault(path, text)
        total = sum(len(self.parse(text).statements) for text in texts.values())
        if total >= 4 and lost * 4 > total:
            self.error(
                RESPONSE,
                0,
                MEMORY_WHOLE,
                f"the reply removes {lost} of the {total} statements of the memory layer, more than a quarter in one pass; drop fewer, or the user passes --allow-shrink",
            )

    def check_dropped_entries(self, changes: list[_Change]) -> None:
        by_path = {change.path: change for change in changes}
        for entry in self.response.dropped:
            change = by_path.get(entry.file)
            key = normalize(split_statement(entry.statement, self.formats)[0])
            if change is None:
                self.warn(
                    RESPONSE,
                    entry.line,
                    "dropped",
                    f'<dropped file="{show_path(entry.file)}"> names a file the reply does not rewrite; ignored',
                )
            elif change.base is None or key not in change.base.keys:
                self.warn(
                    RESPONSE,
                    entry.line,
                    "dropped",
                    f"<dropped> names {_short(entry.statement, 50)!r}, which is not a statement of {entry.file}; ignored",
                )
            elif key in change.new.keys:
                self.warn(
                    RESPONSE,
                    entry.line,
                    "dropped",
                    f"<dropped> names {_short(entry.statement, 50)!r}, which is still in {entry.file}",
                )

    # --- rule 5 ------------------------------------------------------------------------

    def check_new_traces(self, change: _Change, changes: list[_Change]) -> None:
        """Rule 5: a trace this pass wrote is dated by a note its statement cites (the day the
        change came from) or by the pass, never later than the pass."""
        known = self.known_traces(changes)
        for statement in change.new.statements:
            allowed = None
            for trace in _all_traces(statement.traces):
                if self.trace_id(trace) in known or trace.date == self.ctx.pass_date:
                    continue
                if allowed is None:
                    allowed = {
                        day
                        for name in statement.sources
                        for day in self.note_dates(name)
                        if day <= self.ctx.pass_date
                    }
                if trace.date not in allowed:
                    cited = ", ".join(sorted(allowed)) or "none"
                    later = " (later than today)" if trace.date > self.ctx.pass_date else ""
                    self.error(
                        change.path,
                        statement.line_no,
                        TRACE_DATES,
                        f"a new trace is dated {trace.date}{later}; date it by the note the change came from (dates of the notes it cites: {cited}) or {self.ctx.pass_date}, the date of this pass",
                    )

    def note_dates(self, name: str) -> set[str]:
        """The days a note speaks from: a date in its name, and its frontmatter's `date` or
        `created`."""
        base = name.strip().split("#", 1)[0]
        days = set(_DAY.findall(base))
        text = self.cited_text(base)
        if text and text.startswith("---"):
            head = text[:2000]
            days.update(_FRONTMATTER_DAY.findall(head))
        return days

    def known_traces(self, changes: list[_Change]) -> set[tuple[str, str]]:
        """Traces that exist before the pass, in any file it touches or the resident ones: a
        statement moved with its history brings old dates along."""
        if self._known_traces is None:
            texts = (
                [c.base.text for c in changes if c.base]
                + [t for t in self.ctx.originals.values() if t]
                + list(self.resident_texts().values())
            )
            self._known_traces = set()
            for text in dict.fromkeys(texts):
                if not may_hold_traces(text, self.formats):
                    continue  # most of a large layer: nothing to parse for traces
                for statement in self.parse(text).statements:
                    self._known_traces.update(
                        self.trace_id(t) for t in _all_traces(statement.traces)
                    )
        return self._known_traces

    # --- rule 6 ------------------------------------------------------------------------

    def resident_texts(self) -> dict[str, str]:
        """The resident files as they are before the pass."""
        if self._resident is None:
            self._resident = {}
            originals = self.ctx.originals
            for file in self.vault.list_layer(RESIDENT):
                text = originals.get(file.rel)
                if text is None:
                    # a file the pass read is taken as read (the loop below would add it
                    # anyway); only one it did not is looked at (506 stats at 10k were ~10 ms)
                    if not file.path.is_file():
                        continue  # never open a FIFO or a device: the read would block
                    text = read_note(file, self.vault.config.max_note_bytes).text
                self._resident[file.rel] = text
            base = self.vault.config.resident_dir + "/"
            for path, text in originals.items():
                # `layer_of` is RESIDENT only below the resident folder: the 1,543 topic files
                # of a 10k vault need not be classified (~15 ms)
                if (
                    text is not None
                    and path.startswith(base)
                    and self.vault.layer_of(path) == RESIDENT
                ):
                    self._resident.setdefault(path, text)
        return self._resident

    def check_resident_size(self, changes: list[_Change]) -> None:
        before = self.resident_texts()
        written = {c.path: c.new.text for c in changes if self.vault.layer_of(c.path) == RESIDENT}
        after = {**before, **written}
        cap = self.vault.config.resident_max_tokens
        # each file measured once: the files the reply leaves alone count the same on both sides
        # (at 10k, 506 resident files measured twice were a fifth of validating a one-note pass),
        # and kept by the text's digest for the next pass, whose originals are these texts
        from cmem.converge.statement_words import TokenMemo

        memo = TokenMemo(self.vault.machine_dir)
        tokens = {path: memo.tokens(text, estimate_tokens) for path, text in before.items()}
        size_before = sum(tokens.values())
        tokens.update((path, memo.tokens(text, estimate_tokens)) for path, text in written.items())
        memo.save()
        size_after = sum(tokens[path] for path in after)
        if size_after <= cap:
            return
        if written and size_after > size_before:
            largest = max(written, key=lambda path: estimate_tokens(written[path]))
            self.error(
                largest,
                0,
                RESIDENT_SIZE,
                f"the resident files would hold about {size_after} tokens, over the cap of {cap} (resident_max_tokens); compress them — merge overlapping statements with <dropped>, or move situational detail to {self.vault.config.situational_dir}/",
            )
        else:
            self.warn(
                self.vault.config.resident_dir,
                0,
                RESIDENT_SIZE,
                f"the resident files hold about {size_after} tokens, over the cap of {cap}; the next pass should compress them",
            )

    # --- rule 13 -----------------------------------------------------------------------

    def check_situational_size(self, changes: list[_Change]) -> None:
        cap = self.vault.config.situational_max_tokens
        for change in changes:
            if self.vault.layer_of(change.path) != SITUATIONAL:
                continue
            size = estimate_tokens(change.new.text)
            if size > cap and (change.base is None or size > estimate_tokens(change.base.text)):
                self.error(
                    change.path,
                    0,
                    SIZES,
                    f"the file would hold about {size} tokens, over the cap of {cap} for a topic file (situational_max_tokens); split it by topic or compress it",
                )

    # --- rule 7 ------------------------------------------------------------------------

    def selected_path(self, note: str) -> str | None:
        """The note of the pass a `note=` attribute names: by path or by name, `.md` optional."""
        wanted = note.strip().removeprefix("[[").removesuffix("]]").removesuffix(".md")
        for path in self.ctx.selected:
            stem = path.removesuffix(".md")
            if wanted in (stem, stem.rsplit("/", 1)[-1]):
                return path
        return None

    def check_notes(self, changes: list[_Change]) -> None:
        """Rule 7: every note of the pass is accounted for — converged (and then cited by a
        statement of memory as the pass leaves it), deferred, or converged with some of its
        lines deferred (`lines="3,5"`); only notes of the pass are named."""
        written = {change.path: change.new.text for change in changes}
        seen: dict[str, str] = {}
        merged: dict[str, ConvergedEntry] = {}
        for entry in self.response.converged:
            again = self.selected_path(entry.note)
            if again is not None and seen.get(again) == "converged":
                # one note converged into several files, written as several elements: one entry
                if self._into_ok(entry, again, written) and again in merged:
                    merged[again].into.extend(t for t in entry.into if t not in merged[again].into)
                continue
            path = self._note_of_pass(entry.note, entry.line, "converged", seen)
            if path and self._into_ok(entry, path, written):
                merged[path] = ConvergedEntry(path, list(dict.fromkeys(entry.into)), entry.line)
                self.result.converged.append(merged[path])
        partly: dict[str, DeferredEntry] = {}
        for entry in self.response.deferred:
            if entry.lines:
                self._deferred_lines(entry, seen, partly)
                continue
            path = self._note_of_pass(entry.note, entry.line, "deferred", seen)
            if path:
                self.result.deferred.append(DeferredEntry(path, entry.reason, entry.line))
        self.result.deferred.extend(partly.values())
        for path in self.ctx.selected:
            if path not in seen:
                self.warn(
                    path,
                    0,
                    "unaccounted",
                    "the reply neither converged nor deferred this note; it is treated as deferred",
                )
                self.result.deferred.append(
                    DeferredEntry(path, "neither converged nor deferred by the reply", 0)
                )
            elif seen[path] == "lines":
                self.warn(
                    path,
                    0,
                    "unaccounted",
                    "the reply deferred some lines of this note and did not converge it; its other lines are treated as deferred",
                )
                self.result.deferred.append(
                    DeferredEntry(path, "neither converged nor deferred by the reply", 0)
                )
        self.check_cited(changes)
        self.result.line_reasons = self.line_reasons

    def _deferred_lines(
        self, entry: DeferredEntry, seen: dict[str, str], partly: dict[str, DeferredEntry]
    ) -> None:
        """`<deferred note=… lines=…>`: those lines of a note of the pass wait; the note may be
        converged besides (its other lines)."""
        path = self.selected_path(entry.note)
        if path is None:
            self._note_of_pass(entry.note, entry.line, "deferred", seen)  # names the error
            return
        if seen.get(path) == "deferred":
            self.error(
                RESPONSE,
                entry.line,
                ACCOUNTING,
                f"{path} is deferred whole and in part; write one <deferred> for the whole note, or <converged> with <deferred lines=…> for the lines that wait",
            )
            return
        count = self.ctx.line_counts.get(path)
        outside = [n for n in entry.lines if count is not None and not 0 < n <= count]
        if outside:
            self.error(
                RESPONSE,
                entry.line,
                ACCOUNTING,
                f"<deferred note={entry.note!r} lines=…> names line {outside[0]}, but {path} has {count} lines; use the line numbers shown in the note",
            )
            return
        seen.setdefault(path, "lines")
        reasons = dict(self.line_reasons.get(path, {}))
        for number in entry.lines:
            reasons.setdefault(number, entry.reason)
        self.line_reasons[path] = reasons
        before = partly.get(path)
        lines = tuple(sorted(set(before.lines if before else ()) | set(entry.lines)))
        partly[path] = DeferredEntry(
            path, before.reason if before else entry.reason, entry.line, lines
        )

    def check_cited(self, changes: list[_Change]) -> None:
        """A note marked converged must be cited by at least one statement of memory as the
        pass leaves it (one it wrote, or one it kept): checked mechanically, not by words."""
        if not self.result.converged:
            return
        texts = {path: text for path, text in self.ctx.originals.items() if text}
        texts.update({change.path: change.new.text for change in changes})
        for entry in self.result.converged:
            names = self.names_of(entry.note)
            into = [texts[path] for path in entry.into if path in texts]
            if any(_cites(text, names) for text in into) or any(
                _cites(text, names) for text in texts.values()
            ):
                continue
            shown = sorted(names)[0]
            self.error(
                RESPONSE,
                entry.line,
                ACCOUNTING,
                f"{entry.note} is marked converged, but no statement cites [[{shown}]]; cite it in the statements that hold what it says, or <deferred> it with the reason",
            )

    def _note_of_pass(self, note: str, line: int, kind: str, seen: dict[str, str]) -> str | None:
        path = self.selected_path(note)
        if path is None:
            self.error(
                RESPONSE,
                line,
                ACCOUNTING,
                f'<{kind} note="{show_path(note)}"> names a note that is not in this pass; name only the notes given to you',
            )
            return None
        if path in seen:
            if seen[path] == "lines" and kind == "converged":
                seen[path] = kind  # some lines deferred, the rest converged
                return path
            if seen[path] != kind:
                self.error(
                    RESPONSE,
                    line,
                    ACCOUNTING,
                    f"{path} is both converged and deferred whole; defer only some of its lines (<deferred lines=…>), or choose one",
                )
            else:
                self.warn(
                    RESPONSE, line, "unknown", f"{path} is {kind} twice; the first entry counts"
                )
            return None
        seen[path] = kind
        return path

    def names_of(self, path: str) -> set[str]:
        """The wikilink names a note of the pass is cited by: its name, and its path without
        `.md`."""
        stem = path.removesuffix(".md")
        return {stem.rsplit("/", 1)[-1], stem}

    def _into_ok(self, entry: ConvergedEntry, note_path: str, written: dict[str, str]) -> bool:
        name = note_path.rsplit("/", 1)[-1].removesuffix(".md")
        ok = True
        for into in entry.into:
            problem = convergent_path_problem(self.vault, into)
            text = None if problem else written.get(into) or self._existing(into)
            if problem or text is None:
                why = (
                    f"the path {problem}"
                    if problem
                    else "that file is neither in the reply nor in the vault"
                )
                self.error(
                    RESPONSE, entry.line, ACCOUNTING, f'<converged into="{show_path(into)}">: {why}'
                )
                ok = False
            elif not any(
                source == name for s in self.parsed(into, text).statements for source in s.sources
            ):
                self.warn(
                    into,
                    0,
                    "converged",
                    f"{note_path} is said to be converged into this file, but no statement here cites [[{name}]]",
                )
        return ok

    def parsed(self, path: str, text: str) -> _Doc:
        """A target file parsed once, however many <converged> elements name it."""
        if path not in self._parsed:
            self._parsed[path] = self.parse(text)
        return self._parsed[path]

    def _existing(self, path: str) -> str | None:
        text = self.ctx.originals.get(path)
        if text is not None:
            return text
        full = self.vault.root / path
        return full.read_text("utf-8", errors="replace") if full.is_file() else None

    # --- warnings: possible invention ---------------------------------------------------

    def cited_text(self, name: str) -> str | None:
        """The text of the note a source names — one of the pass or any other, divergent or
        archived — read once; None when it resolves to no readable note."""
        if name in self.ctx.source_texts:
            return self.ctx.source_texts[name]
        if name not in self._cited_texts:
            text = None
            notes = [path for path in self.targets(name) if self.is_note(path)]
            if notes and len(self._cited_texts) < _MAX_CITED_READS:
                full = self.vault.root / notes[0]
                if full.is_file():
                    note = read_note(
                        NoteFile(notes[0], full, self.vault.layer_of(notes[0]) or ""),
                        self.vault.config.max_note_bytes,
                    )
                    text = note.text if note.usable else None
            self._cited_texts[name] = text
        return self._cited_texts[name]

    def source_words(self, name: str) -> set[str]:
        """A cited note's words, tokenised once however many statements cite it."""
        if name not in self._source_words:
            self._source_words[name] = word_tokens(self.cited_text(name) or "")
        return self._source_words[name]

    def check_invention(self, changes: list[_Change]) -> None:
        for change in changes:
            base_keys = change.base.keys if change.base else set()
            for statement in change.new.statements:
                if statement.key in base_keys:
                    continue
                cited = [name for name in statement.sources if self.cited_text(name) is not None]
                words = word_tokens(statement.core)
                if not cited or len(words) < _INVENTION_MIN_TOKENS:
                    continue
                note_words = set().union(*(self.source_words(name) for name in cited))
                overlap = len(words & note_words) / len(words)
                if any(
                    _mostly_cjk(statement.core) == _mostly_cjk(self.cited_text(name) or "")
                    for name in cited
                ):
                    suspect = overlap < INVENTION_THRESHOLD
                else:
                    # a translation: judge on the names and numbers (ASCII words) one side offers
                    offered = {
                        w
                        for w in (words if _mostly_cjk(statement.core) else note_words)
                        if w.isascii()
                    }
                    suspect = bool(offered) and not (
                        offered & (note_words if _mostly_cjk(statement.core) else words)
                    )
                if suspect:
                    links = ", ".join(f"[[{name}]]" for name in cited)
                    self.warn(
                        change.path,
                        statement.line_no,
                        "invention",
                        f"few of the words of {_short(statement.core, 50)!r} occur in its cited source {links} ({overlap:.0%}); it may be invented — cite the note that says this, or drop it",
                    )


def _cites(text: str, names: set[str]) -> bool:
    """Whether a statement of `text` cites one of these note names (a wikilink to it, with or
    without a `#` fragment or an `|` alias)."""
    if "[[" not in text:
        return False
    return any(
        match.group(1).strip() in names or match.group(1).strip().casefold() in _folded(names)
        for match in WIKILINK.finditer(text)
    )


def _folded(names: set[str]) -> set[str]:
    return {name.casefold() for name in names}


def _mostly_cjk(text: str) -> bool:
    """Written mostly in Chinese (or Japanese, Korean): a CJK character against a Latin word."""
    return cjk_count(text) > len(re.findall(r"[A-Za-z]+", text))


def _cjk_split(run: str) -> list[str]:
    """`re.split(f"([{CJK}]+)", run)`: the parts between CJK runs and the runs themselves, in
    order. Found with the CJK_RUN pattern the pass has compiled already: the same class with
    a group was compiled again only for this (~3 ms: a class of thousands of code points)."""
    from cmem.text.scripts import CJK_RUN

    parts, at = [], 0
    for match in CJK_RUN.finditer(run):
        parts += [run[at : match.start()], match.group()]
        at = match.end()
    parts.append(run[at:])
    return parts


def word_tokens(text: str) -> set[str]:
    """Words for overlap: lower-cased words of other scripts, and bigrams of each CJK run (CJK
    is not written with spaces, and single characters match too easily)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    tokens: set[str] = set()
    for run in re.findall(r"[^\W_]+", text):
        for part in _cjk_split(run):
            if not part:
                continue
            if is_cjk(part[0]):  # a CJK run (the parts between runs hold none)
                tokens.update(bigrams(part) or [part])
            elif part not in EN_GRAMMAR and (len(part) > 1 or part.isdigit()):
                tokens.add(part)
    return tokens
