"""The validator's reading of a reply (`ReplyReading`): each file block as the text it replaces
and the text it becomes, parsed, with rules 1, 12, 14 and 15 checked on the way (paths, new
files' names, the reply's shape, whole blocks); and the facts of the vault several rules ask about (the resident
files, the traces memory holds, the notes a source names). Nothing here writes."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import cached_property, wraps
from typing import Callable, TypeVar

from cmem.converge.validator.allowed_paths import (
    convergent_path_problem,
    lookalike_problem,
    note_stem_problem,
    show_path,
    skeleton,
)
from cmem.converge.validator.response import (
    RESPONSE,
    ConvergedEntry,
    DeferredEntry,
    Issue,
    Response,
)
from cmem.converge.validator.rules import (
    ASKED_AGAIN,
    COMPLETE_FILES,
    INVENTION,
    NEW_FILES,
    PATHS,
    SIZES,
    RuleId,
    WarningName,
)
from cmem.text.folding import fold_case
from cmem.vault.config import Formats
from cmem.vault.layers import ARCHIVE, DIVERGENT, RESIDENT, NoteFile, Vault
from cmem.vault.notes import read_note
from cmem.vault.statements import (
    WIKILINK,
    Statement,
    Trace,
    may_hold_traces,
    normalize,
    parse_statements,
    split_statement,
)
from cmem.vault.yaml_reader import read_frontmatter, split_frontmatter

_MAX_CITED_READS = 200  # notes read from disk for the invention check, at most, per reply
# What a model writes, not the text it chose not to repeat: an elision, a file block cut short.
_ELISION = re.compile(
    r"(rest|remainder|remaining|other|everything else|existing)\b.{0,40}\b(unchanged|omitted|same|as before|as is|elided)"
    r"|\b(unchanged|omitted) for brevity"
    r"|(其余|其他|其它|以下|以上|剩余|剩下).{0,8}(不变|省略|同上|未变|略)",
    re.IGNORECASE,
)
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
    # note name → why it is not the user's own words (rule 16), for the notes of the pass
    quoted: dict[str, str] = field(default_factory=dict)


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
        return [w for w in self.warnings if w.rule == INVENTION]

    @property
    def asked_again(self) -> list[Issue]:
        """Warnings sent back to the model once before the reply is applied with them."""
        return [w for w in self.warnings if w.rule in ASKED_AGAIN]


@dataclass
class Doc:
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
class Change:
    path: str
    block_line: int  # line of the <file> tag in the reply
    base: Doc | None  # None: a new file
    new: Doc


def format_issues(issues: list[Issue]) -> str:
    """Issues as a list for the repair prompt and the terminal, one per line."""
    return "\n".join(f"- {issue}" for issue in issues)


def ended(text: str) -> str:
    """Text with exactly one final newline: the form cmem writes."""
    return text.rstrip("\n") + "\n"


def short_text(text: str, limit: int = 70) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def all_traces(traces: tuple[Trace, ...] | list[Trace]) -> list[Trace]:
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


T = TypeVar("T")


def reply_fact(make: Callable[[ReplyReading], T]) -> Callable[[ReplyReading], T]:
    """A fact a rule module asks about a reply, made the first time and kept on the reading: the
    `cached_property` of a module's own function."""

    @wraps(make)
    def kept(reply: ReplyReading) -> T:
        if make not in reply.facts:
            reply.facts[make] = make(reply)
        return reply.facts[make]  # type: ignore[return-value]

    return kept


class ReplyReading:
    """A reply as the rules read it — its file blocks as `Change`s, read once by `read_changes`
    — and what the vault holds that several rules ask about. A rule is a function of this (and
    of one `Change`, for a rule of each block): `converge/validator/validate.py` registers them."""

    def __init__(self, vault: Vault, response: Response, ctx: PassContext, result: Validation):
        self.vault, self.response, self.ctx, self.result = vault, response, ctx, result
        self.formats: Formats = vault.config.formats
        self.changes: list[Change] = []  # the file blocks that can be checked, once read
        self.content_lines: dict[str, set[int]] = {}  # path → lines a content error named
        self._by_name: dict[str, list[str]] = {}  # exact and case-folded name → paths
        for known, paths in ctx.note_names.items():
            self._by_name.setdefault(known, []).extend(paths)
            self._by_name.setdefault(fold_case(known), []).extend(paths)
        self._cited_texts: dict[str, str | None] = {}
        self.facts: dict[Callable, object] = {}  # a `reply_fact` → its answer for this reply

    def error(self, file: str, line: int, rule: RuleId, message: str) -> None:
        self.result.errors.append(Issue(file, line, rule, message))
        if rule == COMPLETE_FILES:
            self.content_lines.setdefault(file, set()).add(line)

    def warn(self, file: str, line: int, rule: RuleId | WarningName, message: str) -> None:
        self.result.warnings.append(Issue(file, line, rule, message))

    def parse(self, text: str) -> Doc:
        block, body_start, problem = split_frontmatter(text)
        body = "\n".join(text.split("\n")[body_start - 1 :])
        return Doc(
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
        try:
            os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):
            return None, None
        except OSError as exc:  # a folder on the way that cannot be searched: not a new file
            return None, f"cannot be read ({exc.strerror})"
        note = read_note(
            NoteFile(path, full, self.vault.layer_of(path) or ""), self.vault.config.max_note_bytes
        )
        if note.skip_reason and not (note.skip_reason == "is empty" and not note.problems):
            return None, note.skip_reason
        if note.problems:
            return None, note.problems[0]
        return note.text, None

    def read_changes(self) -> list[Change]:
        """The reply's file blocks as `Change`s (kept in `self.changes`), each path and content
        checked on the way; a block that cannot be checked further is named and left out."""
        changes = self.changes
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
                problem = lookalike_problem(block.path, self.existing_memory) or note_stem_problem(
                    block.path, self.note_shapes
                )
                if problem:
                    self.error(
                        RESPONSE,
                        block.line,
                        NEW_FILES,
                        f'<file path="{show_path(block.path)}">: the path {problem}',
                    )
                    continue
                self.existing_memory.append(
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
            change = Change(block.path, block.line, base, self.parse(new_text))
            self.check_elision(change.path, change.new, base)
            self.check_replacement_characters(change.path, change.new, base)
            changes.append(change)
        return changes

    @cached_property
    def existing_memory(self) -> list[str]:
        """The memory files on disk (and, as they are read, the reply's new ones)."""
        return [f.rel for f in self.vault.convergent_files()]

    @cached_property
    def note_shapes(self) -> dict[str, str]:
        """Skeleton of each note's name (divergent or archived) → the name."""
        shapes: dict[str, str] = {}
        for name, paths in self.ctx.note_names.items():
            if any(self.is_note(path) for path in paths):
                shapes.setdefault(skeleton(name), name)
        return shapes

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
        return ended(content)

    def check_elision(self, path: str, new: Doc, base: Doc | None) -> None:
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
                    f"this line looks like an elision ({short_text(line, 50)!r}); write out the complete file, every statement included",
                )

    def check_replacement_characters(self, path: str, new: Doc, base: Doc | None) -> None:
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

    def targets(self, name: str) -> list[str]:
        """The paths a wikilink name resolves to: by name (`.md` optional, as Obsidian does,
        without regard to case) or by a path's tail (`[[2026-11/x]]`)."""
        name = name.strip()
        bare = name.removesuffix(".md")
        found = (
            self._by_name.get(name) or self._by_name.get(bare) or self._by_name.get(fold_case(bare))
        )
        if found:
            return found
        if "/" in name:
            return self.path_tails.get(bare + ".md", [])
        return []

    @cached_property
    def path_tails(self) -> dict[str, list[str]]:
        """Every tail of a path after a '/' → the paths: made on the first source that names a
        path, as most replies cite notes by name and these are most of starting a check."""
        tails: dict[str, list[str]] = {}
        for paths in self.ctx.note_names.values():
            for path in paths:
                for i in range(path.count("/") + 1):
                    tails.setdefault(path.split("/", i)[-1], []).append(path)
        return tails

    def resolves(self, name: str) -> bool:
        return bool(self.targets(name))

    @cached_property
    def known_traces(self) -> set[tuple[str, str]]:
        """Traces that exist before the pass, in any file it touches or the resident ones: a
        statement moved with its history brings old dates along."""
        texts = (
            [c.base.text for c in self.changes if c.base]
            + [t for t in self.ctx.originals.values() if t]
            + list(self.resident_texts.values())
        )
        known: set[tuple[str, str]] = set()
        for text in dict.fromkeys(texts):
            if not may_hold_traces(text, self.formats):
                continue  # most of a large layer: nothing to parse for traces
            for statement in self.parse(text).statements:
                known.update(self.trace_id(t) for t in all_traces(statement.traces))
        return known

    @cached_property
    def resident_texts(self) -> dict[str, str]:
        """The resident files as they are before the pass."""
        resident: dict[str, str] = {}
        originals = self.ctx.originals
        for file in self.vault.list_layer(RESIDENT):
            text = originals.get(file.rel)
            if text is None:
                # a file the pass read is taken as read (the loop below would add it anyway);
                # only one it did not is stat'ed
                if not file.path.is_file():
                    continue  # never open a FIFO or a device: the read would block
                text = read_note(file, self.vault.config.max_note_bytes).text
            resident[file.rel] = text
        base = self.vault.config.resident_dir + "/"
        for path, text in originals.items():
            # `layer_of` is RESIDENT only below the resident folder: topic files need no class
            if text is not None and path.startswith(base) and self.vault.layer_of(path) == RESIDENT:
                resident.setdefault(path, text)
        return resident

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


# A rule of the rulebook, or the warning a check that only warns gives.
RuleKey = RuleId | WarningName
# A check of one file block of the reply, and a check of the reply as a whole.
ChangeRule = Callable[[ReplyReading, Change], None]
ReplyRule = Callable[[ReplyReading], None]
