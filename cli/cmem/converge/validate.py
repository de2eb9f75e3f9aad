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
8. `<dropped>` removes at most a quarter of a file of four or more statements.

Statements are compared by `Statement.key` — the normalised core, without list marker, sources
and traces — so rewording punctuation or moving a source is not a change.
"""

from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import dataclass, field
from functools import cached_property

from cmem.vault.config import Formats
from cmem.converge.paths import convergent_path_problem, show_path
from cmem.converge.response import RESPONSE, ConvergedEntry, DeferredEntry, Issue, Response
from cmem.vault.notes import parse_frontmatter_block, read_note, split_frontmatter
from cmem.vault.statements import WIKILINK, Statement, Trace, format_source, normalize, parse_statements, split_statement
from cmem.text.tokens import estimate_tokens
from cmem.vault.layers import RESIDENT, NoteFile, Vault

# Below this share of a statement's words found in its cited notes, it may be invented.
INVENTION_THRESHOLD = 0.3
_INVENTION_MIN_TOKENS = 3
_STOPWORDS = frozenset("a an and are as at be but by for from has have he her his i in is it its me my no not of on or our she so that the their them they this to was we were what when which who will with you your".split())
_CJK_CHAR = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
# Lines a model writes instead of the text it did not want to repeat.
_ELISION = re.compile(
    r"(rest|remainder|remaining|other|everything else|existing)\b.{0,40}\b(unchanged|omitted|same|as before|as is|elided)"
    r"|\b(unchanged|omitted) for brevity|^\W*(\.{3,}|…+)\W*$"
    r"|(其余|其他|其它|以下|以上|剩余|剩下).{0,8}(不变|省略|同上|未变|略)",
    re.IGNORECASE,
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


@dataclass
class PassContext:
    """What the pass knows that the reply must agree with."""

    pass_date: str  # YYYY-MM-DD: the only date a new trace may carry
    selected: list[str]  # vault-relative paths of the notes in this pass
    originals: dict[str, str | None]  # convergent path → the text the pass read (None: new file)
    note_names: dict[str, list[str]]  # wikilink name → paths, as `Vault.note_names()` gives
    allow_shrink: bool = False  # `--allow-shrink`: lift rule 8
    source_texts: dict[str, str] = field(default_factory=dict)  # note name → text (invention check)


@dataclass
class Validation:
    errors: list[Issue] = field(default_factory=list)
    warnings: list[Issue] = field(default_factory=list)
    writes: dict[str, str] = field(default_factory=dict)  # path → new text; empty unless ok
    bases: dict[str, str | None] = field(default_factory=dict)  # path → the text each write replaces
    converged: list[ConvergedEntry] = field(default_factory=list)  # note = the selected path
    deferred: list[DeferredEntry] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


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
        checker.check_sources(change)
        checker.check_removals(change, changes)
        checker.check_new_traces(change, changes)
    checker.check_dropped_entries(changes)
    checker.check_resident_size(changes)
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
    """Traces at every depth: a statement's own, and the ones nested inside them."""
    found = []
    for trace in traces:
        found.append(trace)
        found.extend(_all_traces(trace.older))
    return found


class _Checker:
    def __init__(self, vault: Vault, response: Response, ctx: PassContext, result: Validation):
        self.vault, self.response, self.ctx, self.result = vault, response, ctx, result
        self.formats: Formats = vault.config.formats
        self._resident: dict[str, str] | None = None
        self._known_traces: set[tuple[str, str]] | None = None

    def error(self, file: str, line: int, rule: str, message: str) -> None:
        self.result.errors.append(Issue(file, line, rule, message))

    def warn(self, file: str, line: int, rule: str, message: str) -> None:
        self.result.warnings.append(Issue(file, line, rule, message))

    # --- reading ------------------------------------------------------------------------

    def parse(self, text: str) -> _Doc:
        block, body_start, problem = split_frontmatter(text)
        body = "\n".join(text.split("\n")[body_start - 1 :])
        return _Doc(text, block, problem, body_start, parse_statements(body, body_start, self.formats))

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
        note = read_note(NoteFile(path, full, self.vault.layer_of(path) or ""), self.vault.config.max_note_bytes)
        if note.skip_reason and not (note.skip_reason == "is empty" and not note.problems):
            return None, note.skip_reason
        if note.problems:
            return None, note.problems[0]
        return note.text, None

    def load_changes(self) -> list[_Change]:
        changes = []
        for block in self.response.files:
            problem = convergent_path_problem(self.vault, block.path)
            if problem:
                self.error(RESPONSE, block.line, "1", f"<file path=\"{show_path(block.path)}\">: the path {problem}; write only convergent files under {self.vault.config.resident_dir}/ or {self.vault.config.situational_dir}/")
                continue
            base_text, refusal = self.base_text(block.path)
            if refusal:
                self.error(block.path, 0, "content", f"the current file {refusal}; cmem never rewrites such a file — fix it by hand first")
                continue
            new_text = self.content(block.path, block.content)
            if new_text is None:
                continue
            base = None if base_text is None else self.parse(base_text)
            if base is not None and (base.frontmatter_problem or parse_frontmatter_block(base.frontmatter)[1]):
                self.error(block.path, 1, "content", "the current file's frontmatter does not parse; cmem never rewrites it — fix it by hand first")
                continue
            change = _Change(block.path, block.line, base, self.parse(new_text))
            self.check_elision(change.path, change.new, base)
            self.check_replacement_characters(change.path, change.new, base)
            changes.append(change)
        return changes

    def content(self, path: str, content: str) -> str | None:
        """The text to write, or None after naming why the block cannot be written."""
        content = content.lstrip("\ufeff")
        if "\x00" in content:
            self.error(path, content[: content.index("\x00")].count("\n") + 1, "content", "the content holds NUL bytes")
            return None
        control = _CONTROL.search(content)
        if control:
            self.error(path, content[: control.start()].count("\n") + 1, "content", f"the content holds the control character U+{ord(control.group()):04X}")
            return None
        if not content.strip():
            self.error(path, 0, "content", "the file block is empty; a whole-file rewrite must hold the complete file (was the reply cut off?)")
            return None
        return _ended(content)

    def check_elision(self, path: str, new: _Doc, base: _Doc | None) -> None:
        """Name the "… rest unchanged …" line itself: the statements it stands for are caught
        by rule 4, but this says why. A line the file already had is the user's, not elision."""
        before = {line.strip() for line in base.text.split("\n")} if base else set()
        for number, line in enumerate(new.text.split("\n"), 1):
            if _ELISION.search(line) and not WIKILINK.search(line) and line.strip() not in before:
                self.error(path, number, "content", f"this line looks like an elision ({_short(line, 50)!r}); write out the complete file, every statement included")

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
            quoted = lambda i: any(line[max(i - 2, 0) : i + 3] in text for text in sources)  # two characters each side
            if not all(quoted(i) for i in spots):
                self.error(path, number, "content", "this line holds U+FFFD, the mark of bytes that were not UTF-8 (a garbled reply); write it out again")
                return

    # --- rule 2 ------------------------------------------------------------------------

    def check_frontmatter(self, change: _Change) -> None:
        new = change.new
        if new.frontmatter_problem:
            self.error(change.path, 1, "2", f"the {new.frontmatter_problem}")
            return
        data, problem = parse_frontmatter_block(new.frontmatter)
        if problem:
            where = re.search(r"line (\d+)", problem)
            self.error(change.path, int(where.group(1)) if where else 1, "2", problem)
            return
        if change.base is None:
            return
        before, _ = parse_frontmatter_block(change.base.frontmatter)
        lost = [str(key) for key in before if key not in data]
        if lost:
            self.error(change.path, 1, "2", f"the frontmatter lost the key{'s' if len(lost) > 1 else ''} {', '.join(lost)}; keep every key the file had")

    # --- rule 3 ------------------------------------------------------------------------

    def resolves(self, name: str) -> bool:
        names = self.ctx.note_names
        name = name.strip()
        if name in names or name.removesuffix(".md") in names:
            return True
        target = name if name.endswith(".md") else name + ".md"
        if "/" in name and any(path == target or path.endswith("/" + target) for paths in names.values() for path in paths):
            return True
        # Obsidian resolves links without regard to case.
        folded = name.removesuffix(".md").casefold()
        return any(known.casefold() == folded for known in names)

    def check_sources(self, change: _Change) -> None:
        base_keys = change.base.keys if change.base else set()
        elided = {issue.line for issue in self.result.errors if issue.file == change.path and issue.rule == "content"}
        for statement in change.new.statements:
            if statement.line_no in elided:
                continue
            if statement.key not in base_keys and not statement.sources:
                self.error(change.path, statement.line_no, "3", f"statement has no source: {_short(statement.core)!r}; cite the note it came from as {format_source(['…'], self.formats)}")
            for name in statement.sources:
                if not self.resolves(name) and not self._kept_source(change, statement, name):
                    self.error(change.path, statement.line_no, "3", f"the source [[{name}]] resolves to no note")
        self.check_kept_sources(change)

    def _kept_source(self, change: _Change, statement: Statement, name: str) -> bool:
        """A source the statement already had is not the reply's doing, even if broken."""
        if change.base is None:
            return False
        return any(old.key == statement.key and name in old.sources for old in change.base.statements)

    def check_kept_sources(self, change: _Change) -> None:
        """A statement kept as it was keeps its sources: provenance is what makes memory checkable."""
        if change.base is None:
            return
        new_sources: dict[str, set[str]] = {}
        for statement in change.new.statements:
            new_sources.setdefault(statement.key, set()).update(statement.sources)
        for old in change.base.statements:
            if old.key not in new_sources:
                continue
            lost = [name for name in old.sources if name not in new_sources[old.key] and self.resolves(name)]
            if lost:
                line = next(s.line_no for s in change.new.statements if s.key == old.key)
                links = ", ".join(f"[[{name}]]" for name in lost)
                self.error(change.path, line, "3", f"the statement {_short(old.core)!r} lost its source {links}; keep the sources of statements you keep")

    # --- rules 4 and 8 ------------------------------------------------------------------

    def dropped_keys(self, path: str) -> set[str]:
        return {normalize(split_statement(entry.statement, self.formats)[0]) for entry in self.response.dropped if entry.file == path}

    def check_removals(self, change: _Change, changes: list[_Change]) -> None:
        if change.base is None:
            return
        kept_traces = {self.trace_id(t) for other in changes for s in other.new.statements for t in _all_traces(s.traces)}
        # Only a trace this pass wrote says "this statement changed"; an old one quoting the
        # same words is history, not a rewrite.
        quoted = {old for date, old in kept_traces - self.known_traces(changes)}
        moved = {s.key for other in changes if other is not change for s in other.new.statements}
        dropped = self.dropped_keys(change.path)
        removed_by_drop = 0
        for old in change.base.statements:
            gone = old.key and old.key not in change.new.keys
            if gone and old.key in dropped and old.key not in quoted and old.key not in moved:
                removed_by_drop += 1
                continue  # its traces go with it, on purpose
            if gone and old.key not in quoted and old.key not in moved:
                self.error(change.path, old.line_no, "4", f"the statement {_short(old.core)!r} (line {old.line_no} of the current file) is gone; keep it, rewrite it with a trace {self._example_trace(old.core)}, or list it in <dropped>")
                continue
            for trace in _all_traces(old.traces):
                if self.trace_id(trace) not in kept_traces:
                    self.error(change.path, old.line_no, "4", f"the trace of {_short(old.core, 40)!r} dated {trace.date} (was: {_short(split_statement(trace.old, self.formats)[0], 40)!r}) is gone; keep every trace, nested inside the new one when a statement changes again")
        self.check_shrink(change, removed_by_drop)

    def _example_trace(self, old: str) -> str:
        return self.formats.trace.replace("{date}", self.ctx.pass_date).replace("{old}", _short(old, 30))

    def check_shrink(self, change: _Change, removed: int) -> None:
        total = len(change.base.statements) if change.base else 0
        if total >= 4 and removed * 4 > total and not self.ctx.allow_shrink:
            self.error(change.path, 0, "8", f"<dropped> removes {removed} of its {total} statements, more than a quarter in one pass; drop fewer (a statement rewritten with a trace is changed, not dropped), or the user passes --allow-shrink")

    def check_dropped_entries(self, changes: list[_Change]) -> None:
        by_path = {change.path: change for change in changes}
        for entry in self.response.dropped:
            change = by_path.get(entry.file)
            key = normalize(split_statement(entry.statement, self.formats)[0])
            if change is None:
                self.warn(RESPONSE, entry.line, "dropped", f"<dropped file=\"{show_path(entry.file)}\"> names a file the reply does not rewrite; ignored")
            elif change.base is None or key not in change.base.keys:
                self.warn(RESPONSE, entry.line, "dropped", f"<dropped> names {_short(entry.statement, 50)!r}, which is not a statement of {entry.file}; ignored")
            elif key in change.new.keys:
                self.warn(RESPONSE, entry.line, "dropped", f"<dropped> names {_short(entry.statement, 50)!r}, which is still in {entry.file}")

    # --- rule 5 ------------------------------------------------------------------------

    def check_new_traces(self, change: _Change, changes: list[_Change]) -> None:
        known = self.known_traces(changes)
        for statement in change.new.statements:
            for trace in _all_traces(statement.traces):
                if self.trace_id(trace) not in known and trace.date != self.ctx.pass_date:
                    self.error(change.path, statement.line_no, "5", f"a new trace is dated {trace.date}; date it {self.ctx.pass_date}, the date of this pass")

    def known_traces(self, changes: list[_Change]) -> set[tuple[str, str]]:
        """Traces that exist before the pass, in any file it touches or the resident ones: a
        statement moved with its history brings old dates along."""
        if self._known_traces is None:
            texts = [c.base.text for c in changes if c.base] + [t for t in self.ctx.originals.values() if t] + list(self.resident_texts().values())
            self._known_traces = set()
            for text in dict.fromkeys(texts):
                for statement in self.parse(text).statements:
                    self._known_traces.update(self.trace_id(t) for t in _all_traces(statement.traces))
        return self._known_traces

    # --- rule 6 ------------------------------------------------------------------------

    def resident_texts(self) -> dict[str, str]:
        """The resident files as they are before the pass."""
        if self._resident is None:
            self._resident = {}
            for file in self.vault.list_layer(RESIDENT):
                if not file.path.is_file():
                    continue  # never open a FIFO or a device: the read would block
                text = self.ctx.originals.get(file.rel)
                self._resident[file.rel] = text if text is not None else read_note(file, self.vault.config.max_note_bytes).text
            for path, text in self.ctx.originals.items():
                if text is not None and self.vault.layer_of(path) == RESIDENT:
                    self._resident.setdefault(path, text)
        return self._resident

    def check_resident_size(self, changes: list[_Change]) -> None:
        before = self.resident_texts()
        written = {c.path: c.new.text for c in changes if self.vault.layer_of(c.path) == RESIDENT}
        after = {**before, **written}
        cap = self.vault.config.resident_max_tokens
        size_before = sum(estimate_tokens(text) for text in before.values())
        size_after = sum(estimate_tokens(text) for text in after.values())
        if size_after <= cap:
            return
        if written and size_after > size_before:
            largest = max(written, key=lambda path: estimate_tokens(written[path]))
            self.error(largest, 0, "6", f"the resident files would hold about {size_after} tokens, over the cap of {cap} (resident_max_tokens); compress them — merge overlapping statements with <dropped>, or move situational detail to {self.vault.config.situational_dir}/")
        else:
            self.warn(self.vault.config.resident_dir, 0, "6", f"the resident files hold about {size_after} tokens, over the cap of {cap}; the next pass should compress them")

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
        written = {change.path: change.new.text for change in changes}
        seen: dict[str, str] = {}
        for entry in self.response.converged:
            path = self._note_of_pass(entry.note, entry.line, "converged", seen)
            if path and self._into_ok(entry, path, written):
                self.result.converged.append(ConvergedEntry(path, list(entry.into), entry.line))
        for entry in self.response.deferred:
            path = self._note_of_pass(entry.note, entry.line, "deferred", seen)
            if path:
                self.result.deferred.append(DeferredEntry(path, entry.reason, entry.line))
        for path in self.ctx.selected:
            if path not in seen:
                self.warn(path, 0, "unaccounted", "the reply neither converged nor deferred this note; it is treated as deferred")
                self.result.deferred.append(DeferredEntry(path, "neither converged nor deferred by the reply", 0))

    def _note_of_pass(self, note: str, line: int, kind: str, seen: dict[str, str]) -> str | None:
        path = self.selected_path(note)
        if path is None:
            self.error(RESPONSE, line, "7", f"<{kind} note=\"{show_path(note)}\"> names a note that is not in this pass; name only the notes given to you")
            return None
        if path in seen:
            if seen[path] != kind:
                self.error(RESPONSE, line, "7", f"{path} is both converged and deferred; choose one")
            else:
                self.warn(RESPONSE, line, "unknown", f"{path} is {kind} twice; the first entry counts")
            return None
        seen[path] = kind
        return path

    def _into_ok(self, entry: ConvergedEntry, note_path: str, written: dict[str, str]) -> bool:
        name = note_path.rsplit("/", 1)[-1].removesuffix(".md")
        ok = True
        for into in entry.into:
            problem = convergent_path_problem(self.vault, into)
            text = None if problem else written.get(into) or self._existing(into)
            if problem or text is None:
                why = f"the path {problem}" if problem else "that file is neither in the reply nor in the vault"
                self.error(RESPONSE, entry.line, "7", f"<converged into=\"{show_path(into)}\">: {why}")
                ok = False
            elif not any(source == name for s in self.parse(text).statements for source in s.sources):
                self.warn(into, 0, "converged", f"{note_path} is said to be converged into this file, but no statement here cites [[{name}]]")
        return ok

    def _existing(self, path: str) -> str | None:
        text = self.ctx.originals.get(path)
        if text is not None:
            return text
        full = self.vault.root / path
        return full.read_text("utf-8", errors="replace") if full.is_file() else None

    # --- warnings: possible invention ---------------------------------------------------

    def check_invention(self, changes: list[_Change]) -> None:
        if not self.ctx.source_texts:
            return
        for change in changes:
            base_keys = change.base.keys if change.base else set()
            for statement in change.new.statements:
                if statement.key in base_keys:
                    continue
                texts = [self.ctx.source_texts[name] for name in statement.sources if name in self.ctx.source_texts]
                words = word_tokens(statement.core)
                if not texts or len(words) < _INVENTION_MIN_TOKENS:
                    continue
                overlap = len(words & word_tokens("\n".join(texts))) / len(words)
                if overlap < INVENTION_THRESHOLD:
                    self.warn(change.path, statement.line_no, "invention", f"few of the words of {_short(statement.core, 50)!r} occur in its cited source ({overlap:.0%}); it may be invented")


def word_tokens(text: str) -> set[str]:
    """Words for overlap: lower-cased words of other scripts, and bigrams of each CJK run (CJK
    is not written with spaces, and single characters match too easily)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    tokens: set[str] = set()
    for run in re.findall(r"[^\W_]+", text):
        for part in re.split(r"((?:%s)+)" % _CJK_CHAR.pattern, run):
            if not part:
                continue
            if _CJK_CHAR.match(part):
                tokens.update(part[i : i + 2] for i in range(max(len(part) - 1, 1)))
            elif part not in _STOPWORDS and (len(part) > 1 or part.isdigit()):
                tokens.add(part)
    return tokens
