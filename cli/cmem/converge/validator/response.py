"""Reading a model's reply in the response format (docs/design.md §5).

The parser is tolerant about everything that cannot lose data — chat before or after the
`<convergence>` element, a Markdown fence around it, either quote style, XML entities in
attribute values, unknown elements or attributes (warnings) — and strict about everything that
can: a `<file>` block without its closing `</file>` line, two blocks for one path, a reply cut
off before `</convergence>`. It never judges content; `validate.py` does that.

Line numbers in the result are 1-based lines of the reply (after CRLF → LF), for messages.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field

from cmem.converge.validator.rules import FORMAT, ONE_REPLY, SIZES, UNKNOWN, RuleId, WarningName

RESPONSE = "response"  # the `file` of issues about the reply itself
MAX_ERRORS = 50  # a reply this broken needs rewriting, not a longer list
# The largest reply read at all (UTF-8 bytes): the model runner's default output cap. Everything
# after this check is linear in the reply's size, so validation under the vault lock is bounded.
MAX_RESPONSE_BYTES = 4_000_000

KNOWN_ATTRIBUTES = {
    "convergence": set(),
    "file": {"path"},
    "dropped": {"file", "reason"},
    "converged": {"note", "into"},
    "deferred": {"note", "reason", "lines"},
    "merged": {"file", "into", "reason"},
}

# A tag whose attribute values may hold `<` or `>` in quotes, its parts bounded, not open-ended: a
# search that fails (an unclosed quote) gives up within a few thousand characters, never reads to
# the end of the reply from every `<`, so the reply is read in linear time.
_TAG = re.compile(
    r"""<(/?)([A-Za-z][\w.:-]{0,63})((?:[^<>"']|"[^"]{0,2000}"|'[^']{0,2000}'){0,4000})>"""
)
_ATTRIBUTE = re.compile(r"""\s*([^\s=/"'<>]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+))""")
_ENTITY = re.compile(r"&(amp|lt|gt|quot|apos|#\d+|#x[0-9A-Fa-f]+);")
_NAMED_ENTITIES = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}
_NEXT_ELEMENT = re.compile(r"<(?:file|dropped|merged|converged|deferred)[\s/>]|</convergence>")
_FENCE_OPEN = re.compile(r"^\s*(```|~~~)[\w-]*\s*$")


@dataclass(frozen=True)
class Issue:
    """One problem, named by file and line: `converged/core/profile.md:4: … (rule 3)`.

    `file` is a vault-relative path, or `response` for the reply itself (then `line` is a line of
    the reply). `rule` is a rule number of the rulebook (`converge/validator/rules.py`, `RuleId`) for an
    error, a word for a warning (`WarningName`: "invention", "unknown", …). `line` 0 means the
    whole file.
    """

    file: str
    line: int
    rule: RuleId | WarningName
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        rule = f"rule {self.rule}" if self.rule.isdigit() else self.rule
        return f"{where}: {self.message} ({rule})"


@dataclass(frozen=True)
class FileBlock:
    path: str
    content: str  # the lines between the tags, joined by \n, without a final \n
    line: int  # line of the opening tag


@dataclass(frozen=True)
class DroppedEntry:
    file: str
    statement: str
    reason: str
    line: int


@dataclass(frozen=True)
class ConvergedEntry:
    note: str
    into: list[str]  # vault-relative paths, in the order given
    line: int


@dataclass(frozen=True)
class DeferredEntry:
    note: str
    reason: str
    line: int
    lines: tuple[int, ...] = ()  # some lines of the note (1-based); () is the whole note


@dataclass(frozen=True)
class MergedEntry:
    """`<merged file="…" into="new statement">old statement</merged>`: an old statement
    rewritten into another without a change of fact (a duplicate, a rewording): declared, so it
    needs no trace (docs/design.md §5)."""

    file: str
    statement: str  # the old statement
    into: str  # the statement of the new file that holds it now
    reason: str
    line: int


@dataclass
class Response:
    files: list[FileBlock] = field(default_factory=list)
    dropped: list[DroppedEntry] = field(default_factory=list)
    converged: list[ConvergedEntry] = field(default_factory=list)
    deferred: list[DeferredEntry] = field(default_factory=list)
    merged: list[MergedEntry] = field(default_factory=list)
    errors: list[Issue] = field(default_factory=list)
    warnings: list[Issue] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def unescape(value: str) -> str:
    """The five XML entities and numeric character references; anything else stays as written."""

    def replace(match: re.Match) -> str:
        name = match.group(1)
        if name in _NAMED_ENTITIES:
            return _NAMED_ENTITIES[name]
        try:
            code = int(name[2:], 16) if name[1] in "xX" else int(name[1:])
            return chr(code)
        except (ValueError, OverflowError):
            return match.group(0)

    return _ENTITY.sub(replace, value)


class _Reader:
    """The reply, with a cursor and line numbers, collecting issues as it goes."""

    def __init__(self, text: str, response: Response):
        self.text = text
        self.response = response
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self._found: dict[str, tuple[int, int]] = {}
        self.block_lines: dict[
            str, int
        ] = {}  # path → line of its file block (a dict: no rescan per block)

    def find(self, needle: str, start: int) -> int:
        """`str.find`, remembering the answer: a reply of many unclosed elements must not make
        every one of them search the rest of the text again."""
        cached = self._found.get(needle)
        if cached is not None and cached[0] <= start and (cached[1] < 0 or cached[1] >= start):
            return cached[1]
        found = self.text.find(needle, start)
        self._found[needle] = (start, found)
        return found

    def line_at(self, offset: int) -> int:
        return bisect_right(self.line_starts, offset)

    def line_end(self, offset: int) -> int:
        """Offset just past the newline of the line holding `offset` (or the text's end)."""
        end = self.text.find("\n", offset)
        return len(self.text) if end < 0 else end + 1

    def error(self, offset: int, message: str) -> None:
        self.response.errors.append(Issue(RESPONSE, self.line_at(offset), ONE_REPLY, message))

    def warn(self, offset: int, message: str, rule: WarningName = UNKNOWN) -> None:
        warnings = self.response.warnings
        if len(warnings) == MAX_ERRORS:
            message, rule = "more warnings are not listed", UNKNOWN
        elif len(warnings) > MAX_ERRORS:
            return
        warnings.append(Issue(RESPONSE, self.line_at(offset), rule, message))

    def attributes(self, match: re.Match) -> dict[str, str]:
        name, raw = match.group(2), match.group(3).rstrip().removesuffix("/")
        values: dict[str, str] = {}
        position = 0
        for attribute in _ATTRIBUTE.finditer(raw):
            if raw[position : attribute.start()].strip():
                break
            value = next(v for v in attribute.group(2, 3, 4) if v is not None)
            values[attribute.group(1)] = unescape(value)
            position = attribute.end()
        if raw[position:].strip():
            self.warn(
                match.start(),
                f"could not read the attributes of <{name}> after {raw[position:].strip()[:40]!r}",
            )
        for unknown in sorted(set(values) - KNOWN_ATTRIBUTES.get(name, set())):
            self.warn(match.start(), f"unknown attribute {unknown!r} on <{name}> is ignored")
        return values


def parse_response(text: str) -> Response:
    """The elements of the first `<convergence>` element of a reply, with errors and warnings."""
    response = Response()
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > MAX_RESPONSE_BYTES:
        response.errors.append(
            Issue(
                RESPONSE,
                0,
                SIZES,
                f"the response is {size} bytes, over the limit of {MAX_RESPONSE_BYTES}; cmem does not read it (write only the files that change)",
            )
        )
        return response
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    reader = _Reader(text, response)
    opening = _find_opening(text, reader=reader)
    if opening is None:
        what = "is empty" if not text.strip() else "holds no <convergence> element"
        response.errors.append(
            Issue(
                RESPONSE,
                0,
                ONE_REPLY,
                f"the response {what}; answer with one <convergence>…</convergence> element",
            )
        )
        return response
    reader.attributes(opening)
    end = _read_elements(reader, opening.end())
    if end is None:
        reader.error(
            len(text),
            "the response ends without </convergence> (was it cut off?); send the whole element",
        )
    elif (second := _second_element(reader, end)) is not None:
        # Two answers ("oops, here is a better one"): applying either could apply the one the
        # model retracted, so neither is; the repair round asks for exactly one.
        reader.error(
            second,
            "a second <convergence> element follows the first; answer with exactly one",
        )
    elif _find_opening(text, end, reader):
        reader.warn(
            end, "text after the first </convergence> is ignored, including a quoted <convergence>"
        )
    return response


_OPENING = re.compile(r"<convergence[\s/>]")


def _starts_line(reader: _Reader, offset: int) -> bool:
    """Only blanks before `offset` on its line (found through the line table: no rescan)."""
    start = reader.line_starts[reader.line_at(offset) - 1]
    return not reader.text[start:offset].strip()


def _convergence_tags(reader: _Reader, start: int):
    """`<convergence>` opening tags from `start`: found by a plain search first, so a reply full
    of other tags is not matched tag by tag."""
    for candidate in _OPENING.finditer(reader.text, start):
        match = _TAG.match(reader.text, candidate.start())
        if match and match.group(2) == "convergence" and not match.group(1):
            yield match


def _find_opening(text: str, start: int = 0, reader: _Reader | None = None) -> re.Match | None:
    """The first `<convergence>` tag; one that starts a line wins over one quoted in chat."""
    reader = reader or _Reader(text, Response())
    first = None
    for match in _convergence_tags(reader, start):
        if _starts_line(reader, match.start()):
            return match
        first = first or match
    return first


def _second_element(reader: _Reader, start: int) -> int | None:
    """Offset of another `<convergence>` tag that starts a line after `start` (one quoted in chat is not an answer)."""
    for match in _convergence_tags(reader, start):
        if _starts_line(reader, match.start()):
            return match.start()
    return None


def _read_elements(reader: _Reader, position: int) -> int | None:
    """Read elements until `</convergence>`; its end offset, or None if the reply stops first."""
    text = reader.text
    while True:
        match = _TAG.search(text, position)
        stray = text[position : match.start() if match else len(text)]
        if stray.strip() and stray.strip() not in ("```", "~~~"):
            reader.warn(
                position + len(stray) - len(stray.lstrip()),
                f"text between elements is ignored: {stray.strip()[:60]!r}",
            )
        if match is None:
            return None
        closing, name = bool(match.group(1)), match.group(2)
        if name == "convergence" and closing:
            return match.end()
        if closing:
            if name in ("file", "dropped", "merged"):
                reader.warn(match.start(), f"</{name}> without its opening tag is ignored")
            position = match.end()  # closings of self-closing or unknown elements
            continue
        if len(reader.response.errors) >= MAX_ERRORS:
            reader.error(
                match.start(),
                f"more than {MAX_ERRORS} errors; the rest of the response was not read",
            )
            return match.end()
        handler = _HANDLERS.get(name)
        if handler is None:
            reader.warn(match.start(), f"unknown element <{name}> is ignored")
            position = match.end()
            continue
        position = handler(reader, match)


def _read_file(reader: _Reader, match: re.Match) -> int:
    """`<file path="…">`: content from the next line to the first line that is `</file>`."""
    text, response = reader.text, reader.response
    attributes = reader.attributes(match)
    path = attributes.get("path")
    line = reader.line_at(match.start())
    rest = text[match.end() : reader.line_end(match.end())]
    if match.group(3).rstrip().endswith("/"):
        reader.error(
            match.start(),
            "<file/> is self-closing: a file block holds the complete file between <file path=…> and a </file> line",
        )
        return match.end()
    if rest.strip():
        reader.error(
            match.start(),
            f"content must start on the line after <file path=…>, not after the tag: {rest.strip()[:40]!r}",
        )
    start = reader.line_end(match.end())
    lines, offset = [], start
    while offset < len(text):
        end = reader.line_end(offset)
        current = text[offset:end].rstrip("\n")
        if current.strip() == "</file>":
            break
        if _is_boundary(current):
            # No convergent file holds these lines: the block lost its `</file>`.
            reader.error(
                match.start(),
                f"the file block for {path!r} has no closing </file> line before line {reader.line_at(offset)}",
            )
            return offset
        lines.append(current)
        offset = end
    else:
        reader.error(
            match.start(),
            f"the file block for {path!r} has no closing </file> line (was the response cut off?)",
        )
        return len(text)
    if path is None:
        reader.error(match.start(), "<file> without a path attribute")
    elif path in reader.block_lines:
        first_line = reader.block_lines[path]
        reader.error(
            match.start(),
            f"a second file block for {path!r} (the first is at line {first_line}); send each file once",
        )
    else:
        reader.block_lines[path] = line
        response.files.append(FileBlock(path, _unfence(reader, match.start(), lines), line))
    return reader.line_end(offset)


def _is_boundary(line: str) -> bool:
    stripped = line.strip()
    return stripped == "</convergence>" or bool(
        stripped.startswith("<file ") and _TAG.match(stripped)
    )


def _unfence(reader: _Reader, offset: int, lines: list[str]) -> str:
    """Remove a Markdown fence the model wrapped the whole file in: left there, it would turn
    every statement into code and the frontmatter into text."""
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    if (
        len(lines) >= 2
        and _FENCE_OPEN.match(lines[0])
        and lines[-1].strip() == lines[0].strip()[:3]
    ):
        reader.warn(offset, "a code fence around the whole file content was removed", rule=FORMAT)
        lines = lines[1:-1]
    return "\n".join(lines)


def _element_text(reader: _Reader, match: re.Match) -> tuple[str | None, int]:
    """(text, end) of a non-self-closing element whose next tag is its own closing tag."""
    if match.group(3).rstrip().endswith("/"):
        return None, match.end()
    following = _TAG.search(reader.text, match.end())
    if following and following.group(1) and following.group(2) == match.group(2):
        return reader.text[match.end() : following.start()], following.end()
    return None, match.end()


def _statement_text(reader: _Reader, match: re.Match, name: str) -> tuple[str | None, int]:
    """The statement inside `<dropped>…</dropped>` or `<merged>…</merged>`; it may hold
    tag-like text of its own, but not the start of another element (then the closing tag is
    missing)."""
    if match.group(3).rstrip().endswith("/"):
        return None, match.end()
    closing = f"</{name}>"
    close = reader.find(closing, match.end())
    # searched in place, not in a slice: a copy of the rest of the reply for each of many
    # unclosed elements would be quadratic
    if close < 0 or _NEXT_ELEMENT.search(reader.text, match.end(), close):
        return None, match.end()
    return reader.text[match.end() : close], close + len(closing)


def _read_dropped(reader: _Reader, match: re.Match) -> int:
    attributes = reader.attributes(match)
    inner, end = _statement_text(reader, match, "dropped")
    if inner is None and not match.group(3).rstrip().endswith("/"):
        reader.error(match.start(), "<dropped> has no closing </dropped>")
        return end
    if inner is None or not inner.strip():
        reader.error(
            match.start(),
            '<dropped> must hold the removed statement: <dropped file="…" reason="…">old statement</dropped>',
        )
        return end
    if "file" not in attributes:
        reader.error(match.start(), "<dropped> without a file attribute")
        return end
    if not attributes.get("reason", "").strip():
        reader.warn(match.start(), "<dropped> without a reason", rule=FORMAT)
    statement = unescape(inner.strip())
    reader.response.dropped.append(
        DroppedEntry(
            attributes["file"],
            statement,
            attributes.get("reason", ""),
            reader.line_at(match.start()),
        )
    )
    return end


def _read_merged(reader: _Reader, match: re.Match) -> int:
    attributes = reader.attributes(match)
    inner, end = _statement_text(reader, match, "merged")
    shape = '<merged file="…" into="the statement it is in now">old statement</merged>'
    if inner is None and not match.group(3).rstrip().endswith("/"):
        reader.error(match.start(), "<merged> has no closing </merged>")
        return end
    if inner is None or not inner.strip():
        reader.error(match.start(), f"<merged> must hold the old statement: {shape}")
        return end
    if "file" not in attributes or not attributes.get("into", "").strip():
        reader.error(match.start(), f"<merged> needs a file and an into attribute: {shape}")
        return end
    reader.response.merged.append(
        MergedEntry(
            attributes["file"],
            unescape(inner.strip()),
            attributes["into"].strip(),
            attributes.get("reason", ""),
            reader.line_at(match.start()),
        )
    )
    return end


def _read_converged(reader: _Reader, match: re.Match) -> int:
    attributes = reader.attributes(match)
    _, end = _element_text(reader, match)
    note = attributes.get("note", "").strip()
    into = [part.strip() for part in re.split(r"[,;]", attributes.get("into", "")) if part.strip()]
    if not note:
        reader.error(match.start(), "<converged> without a note attribute")
    elif not into:
        reader.error(
            match.start(),
            f'<converged note={note!r}> does not say into which files (into="a.md; b.md"); a note with nothing to keep is <deferred>',
        )
    else:
        reader.response.converged.append(ConvergedEntry(note, into, reader.line_at(match.start())))
    return end


_LINE_PART = re.compile(r"(\d{1,9})(?:-(\d{1,9}))?")
_LINE_SEPARATORS = re.compile(r"[,;\s]+")
MAX_LINES = 100_000  # a range wider than any note is a broken reply, not a list to expand


def _line_numbers(value: str) -> tuple[int, ...] | None:
    """`3,5` or `3-5, 9` as line numbers; None when it is not such a list."""
    numbers: list[int] = []
    for part in _LINE_SEPARATORS.split(value.strip().replace(" - ", "-")):
        if not part:
            continue
        match = _LINE_PART.fullmatch(part)
        if match is None:
            return None
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else first
        if last < first or last - first > MAX_LINES or len(numbers) > MAX_LINES:
            return None
        numbers.extend(range(first, last + 1))
    return tuple(sorted(set(numbers))) or None


def _read_deferred(reader: _Reader, match: re.Match) -> int:
    attributes = reader.attributes(match)
    inner, end = _element_text(reader, match)
    note = attributes.get("note", "").strip()
    reason = attributes.get("reason", "").strip() or unescape((inner or "").strip())
    if not note:
        reader.error(match.start(), "<deferred> without a note attribute")
        return end
    lines: tuple[int, ...] = ()
    if "lines" in attributes:
        parsed = _line_numbers(attributes["lines"])
        if not parsed:
            reader.error(
                match.start(),
                f"<deferred note={note!r} lines={attributes['lines']!r}>: lines is a list of the "
                'note\'s line numbers, as `lines="3,5"` or `lines="3-5"`',
            )
            return end
        lines = parsed
    if not reason:
        reader.warn(match.start(), f"<deferred note={note!r}> without a reason", rule=FORMAT)
    reader.response.deferred.append(
        DeferredEntry(note, reason, reader.line_at(match.start()), lines)
    )
    return end


def _read_nested_convergence(reader: _Reader, match: re.Match) -> int:
    reader.warn(
        match.start(), "a <convergence> inside <convergence> is ignored (its elements are read)"
    )
    return match.end()


_HANDLERS = {
    "file": _read_file,
    "dropped": _read_dropped,
    "merged": _read_merged,
    "converged": _read_converged,
    "deferred": _read_deferred,
    "convergence": _read_nested_convergence,
}
