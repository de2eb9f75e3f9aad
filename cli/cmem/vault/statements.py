"""Statements and their provenance (docs/design.md §1, "Convergent files").

A *statement* is a content line of a convergent file: a list item or a paragraph line — not a
heading, blank line, frontmatter, code fence (or a line inside one), table rule or HTML comment.
Statements carry provenance inline:

- a source: `（来源：[[2026-11-28 随手记]]）` / `(source: [[2026-11-28 notes]])`; a note that is not
  the user's own words is cited `quoted from [[…]]` / `摘自[[…]]` (rule 16)
- an evolution trace: `（更新于 2026-11-29，原为：找北京后端实习）` / `(updated 2026-11-29, was: …)`,
  nesting when a statement changes again.

Both languages' built-in formats are always understood (a vault may mix them), plus the vault's
configured ones. The bracket pair of each format is taken from its template, and traces are
matched with bracket counting so a nested trace stays inside its parent.
"""

from __future__ import annotations

import re
import unicodedata
from collections import namedtuple
from functools import cache, cached_property, lru_cache

from cmem.text.folding import fold, nfkc
from cmem.vault.format_rules import BRACKETS
from cmem.vault.languages import LANGUAGE_DEFAULTS
from cmem.vault.quoted import QUOTED_MARKS

TYPE_CHECKING = False  # typing.TYPE_CHECKING, for the annotations alone
if TYPE_CHECKING:
    from cmem.vault.config import Formats

# Characters a wikilink cannot hold in a note's name: Obsidian reads `#` and `^` as a heading or
# block, `|` as an alias, brackets as the link's own ends; a line end breaks the link.
_UNLINKABLE = re.compile(r"[#|^\[\]\n\r\x00-\x1f]")


def unlinkable(name: str) -> str | None:
    """Why no wikilink can cite a note of this name (None: `[[name]]` resolves to it)."""
    found = _UNLINKABLE.search(name)
    if found:
        char = found.group()
        shown = repr(char) if char in "\n\r" or ord(char) < 32 else f"'{char}'"
        return f"its name holds {shown}, which a wikilink cannot hold"
    if name != name.strip():
        return "its name starts or ends with a space, which a wikilink drops"
    return None


WIKILINK = re.compile(r"\[\[([^\[\]|#\n]+)(?:#[^\[\]|\n]*)?(?:\|[^\[\]\n]*)?\]\]")
_LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")

# Named tuples, not frozen dataclasses: a light `cmem recall` strips sources from its snippets
# with this module, and `dataclasses` imports `inspect` (more than the rest of that call's
# imports); for the same reason the language formats come from `languages.py`, not the config.


class Trace(namedtuple("Trace", "date old start end formats", defaults=(None,))):
    """date; old: the old wording, itself possibly holding older traces; start, end: offsets in
    the line; formats: the vault's formats it was read with, so the traces nested in it are read
    with them too (a custom trace format nests like the built-in ones)."""

    __slots__ = ()

    @property
    def older(self) -> list[Trace]:
        return find_traces(self.old, self.formats)


class Statement(namedtuple("Statement", "line_no text core sources traces")):
    """line_no: 1-based in the file; text: the whole line; core: without list marker, sources
    and traces; sources: note names; traces: Trace each."""

    @cached_property
    def key(self) -> str:
        """The normalised core (computed once: the validator compares keys many times)."""
        return normalize(self.core)


# middle: a trace's only, between date and old
_Pattern = namedtuple("_Pattern", "prefix middle suffix opener closer")


@cache
def _trace_patterns(extra: tuple[str, ...] = ()) -> tuple[_Pattern, ...]:
    templates = [lang["trace"] for lang in LANGUAGE_DEFAULTS.values()] + list(extra)
    patterns = []
    for template in dict.fromkeys(templates):
        if "{date}" not in template or "{old}" not in template:
            continue
        prefix, rest = template.split("{date}", 1)
        middle, suffix = rest.split("{old}", 1)
        patterns.append(_Pattern(prefix, middle, suffix, prefix[:1], suffix[-1:]))
    return tuple(patterns)


# a link a source marks as someone else's words, `quoted from [[article]]` (`vault/quoted.py`)
_QUOTED = "|".join(re.escape(mark) for mark in QUOTED_MARKS.values())
_LINK = rf"(?:(?:{_QUOTED})\s*)?\[\[[^\[\]\n]+\]\](?:#\^?[\w-]+)?"
_SEPARATORS = r"[\s,;、，；·&|/]*(?:\band\b|和|及)?[\s,;、，；·&|/]*"


@lru_cache(maxsize=64)
def _link_run(separator: str) -> re.Pattern:
    """Links one after the other, as a source writes them: the configured separator between
    them, or the separators people write by hand."""
    between = _SEPARATORS
    if separator.strip():
        between = rf"(?:\s*{re.escape(separator.strip())}\s*|{_SEPARATORS})"
    return re.compile(rf"\s*{_LINK}(?:{between}{_LINK})*")


@cache
def _source_patterns(extra: tuple[str, ...] = ()) -> tuple[_Pattern, ...]:
    """`extra`: configured source templates, each optionally followed by its separator
    (`(template, separator)` flattened as `template + "\x00" + separator`). `middle` holds the
    separator; a pattern whose closer is not its opener's pair (`— {links}`, `src: {links}.`)
    is read as its prefix, a run of links, and its suffix."""
    templates = [
        lang["source"] + "\x00" + lang["source_separator"] for lang in LANGUAGE_DEFAULTS.values()
    ]
    patterns = []
    for entry in dict.fromkeys(templates + list(extra)):
        template, _, separator = entry.partition("\x00")
        if "{links}" not in template:
            continue
        prefix, suffix = template.split("{links}", 1)
        patterns.append(_Pattern(prefix, separator, suffix, prefix[:1], suffix[-1:]))
    return tuple(patterns)


def _source_extra(formats: Formats | None) -> tuple[str, ...]:
    return (formats.source + "\x00" + formats.source_separator,) if formats else ()


def _balanced_end(text: str, start: int, opener: str, closer: str) -> int:
    """Index just past the closer that balances the opener at `start`, or -1."""
    depth = 0
    for index in range(start, len(text)):
        char = text[index]
        if char == opener and opener != closer:
            depth += 1
        elif char == closer:
            depth -= 1
            if depth == 0:
                return index + 1
    return -1


def _bracket_ends(text: str, opener: str, closer: str) -> dict[int, int]:
    """Every opener's index → the index just past the closer that balances it (unbalanced ones
    are absent), in one pass over the brackets. Asking `_balanced_end` for each of many
    unclosed openers would read the rest of the line each time: quadratic in a hostile reply."""
    ends: dict[int, int] = {}
    stack: list[int] = []
    for match in re.finditer(f"[{re.escape(opener)}{re.escape(closer)}]", text):
        if match.group() == opener:
            stack.append(match.start())
        elif stack:
            ends[stack.pop()] = match.end()
    return ends


def _ends_for(
    text: str, pattern: _Pattern, cache: dict[tuple[str, str], dict[int, int]]
) -> dict[int, int] | None:
    """The bracket table for a pattern's pair, shared by patterns with the same pair; None when
    the pair cannot nest (an opener equal to its closer, or none)."""
    if not pattern.opener or not pattern.closer or pattern.opener == pattern.closer:
        return None
    pair = (pattern.opener, pattern.closer)
    if pair not in cache:
        cache[pair] = _bracket_ends(text, *pair)
    return cache[pair]


def find_traces(text: str, formats: Formats | None = None) -> list[Trace]:
    """Top-level traces in a piece of text (nested ones are inside `Trace.old`). Linear in the
    text: each prefix is looked at once, and brackets are matched in one pass."""
    extra = (formats.trace,) if formats else ()
    found: list[Trace] = []
    cache: dict[tuple[str, str], dict[int, int]] = {}
    for pattern in _trace_patterns(extra):
        if pattern.prefix not in text:
            continue
        ends = _ends_for(text, pattern, cache)
        position = 0
        while True:
            start = text.find(pattern.prefix, position)
            if start < 0:
                break
            date_match = _DATE.match(text, start + len(pattern.prefix))
            if not date_match or not text.startswith(pattern.middle, date_match.end()):
                position = start + 1
                continue
            end = (
                ends.get(start, -1)
                if ends is not None
                else _balanced_end(text, start, pattern.opener, pattern.closer)
            )
            if end < 0:
                position = start + 1
                continue
            old_start = date_match.end() + len(pattern.middle)
            old_end = end - len(pattern.suffix)
            found.append(Trace(date_match.group(0), text[old_start:old_end], start, end, formats))
            position = end
    found.sort(key=lambda t: t.start)
    # keep only top-level ones (a trace nested inside another belongs to it); sorted by start,
    # a nested one lies inside the top-level trace that reaches furthest so far
    top: list[Trace] = []
    widest: Trace | None = None
    for trace in found:
        if widest is not None and widest.start < trace.start and trace.end <= widest.end:
            continue
        top.append(trace)
        if widest is None or trace.end > widest.end:
            widest = trace
    return top


@cache
def _loose_trace_patterns(extra: tuple[str, ...] = ()) -> tuple[tuple[re.Pattern, str], ...]:
    """Each trace format as a pattern that reads anything short in place of its date (and any
    spacing around it): what a trace looks like to a reader, whether or not cmem can read it.
    Paired with the format's exact prefix."""
    found = []
    for pattern in _trace_patterns(extra):
        head, middle = pattern.prefix.rstrip(), pattern.middle.strip()
        if not head or not middle:
            continue
        brackets = re.escape(pattern.opener + pattern.closer)
        found.append(
            (
                re.compile(
                    rf"{re.escape(head)}\s*([^\n{brackets}]{{1,40}}?)\s*{re.escape(middle)}"
                ),
                pattern.prefix + "\x00" + pattern.middle,
            )
        )
    return tuple(found)


def misread_traces(text: str, formats: Formats | None = None) -> list[str]:
    """What stands as the date of each trace-shaped annotation that does not read as a trace
    (`(updated yesterday, was: …)`, `（更新于2026-11-29，原为：…）`): kept as statement text, such
    an annotation is no trace at all, so `cmem trace` never sees the change."""
    extra = (formats.trace,) if formats else ()
    found = []
    for loose, exact in _loose_trace_patterns(extra):
        prefix, middle = exact.split("\x00", 1)
        for match in loose.finditer(text):
            date = match.group(1)
            start = match.start()
            exact_date = _DATE.fullmatch(date)
            if (
                exact_date
                and text.startswith(prefix, start)
                and text.startswith(middle, start + len(prefix) + len(date))
            ):
                continue  # a trace as cmem reads it
            found.append(date.strip())
    return found


def may_hold_traces(text: str, formats: Formats | None = None) -> bool:
    """Whether a text can hold a trace at all: a trace starts with its pattern's prefix, so a
    text without any is skipped whole by readers that want only traces (the validator's known
    traces, the coverage check), instead of parsing every statement of the layer."""
    extra = (formats.trace,) if formats else ()
    return any(pattern.prefix in text for pattern in _trace_patterns(extra))


def find_sources(text: str, formats: Formats | None = None) -> list[tuple[int, int, list[str]]]:
    """Top-level source annotations: (start, end, note names). Linear in the text, like
    `find_traces`."""
    found = []
    cache: dict[tuple[str, str], dict[int, int]] = {}
    for pattern in _source_patterns(_source_extra(formats)):
        if not pattern.prefix.strip() or pattern.prefix not in text:
            continue  # a template with nothing before its links cannot be told from a link
        bracketed = BRACKETS.get(pattern.opener) == pattern.closer
        ends = _ends_for(text, pattern, cache) if bracketed else None
        position = 0
        while True:
            start = text.find(pattern.prefix, position)
            if start < 0:
                break
            # the prefix, a run of links, the suffix, as cmem writes them: exact even for a
            # note name holding one of the format's brackets ("note :)")
            end = _run_end(text, start + len(pattern.prefix), pattern)
            if end < 0 and bracketed:
                # written by hand, with more than links between the brackets
                end = (
                    ends.get(start, -1)
                    if ends is not None
                    else _balanced_end(text, start, pattern.opener, pattern.closer)
                )
            names = (
                [m.group(1).strip() for m in WIKILINK.finditer(text, start, end)]
                if end > start
                else []
            )
            if not names:
                position = start + 1
                continue
            found.append((start, end, names))
            position = end
    found.sort()
    # two formats may read one annotation (a custom one and a built-in one): the outer one holds it
    kept: list[tuple[int, int, list[str]]] = []
    for item in found:
        if kept and item[0] < kept[-1][1]:
            if item[1] > kept[-1][1] and item[0] == kept[-1][0]:
                kept[-1] = item
            continue
        kept.append(item)
    return kept


def _run_end(text: str, after: int, pattern: _Pattern) -> int:
    """The end of `prefix [[a]], [[b]] suffix` whose links start at `after`, or -1."""
    run = _link_run(pattern.middle).match(text, after)
    if run is None:
        return -1
    end = run.end()
    suffix = pattern.suffix
    if not suffix:
        return end
    if text.startswith(suffix, end):
        return end + len(suffix)
    stripped = suffix.strip()
    rest = len(text) - len(text[end:].lstrip())
    if stripped and text.startswith(stripped, rest):
        return rest + len(stripped)
    return -1


@lru_cache(maxsize=16)
def _provenance_prefixes(trace: str, source: str) -> tuple[str, ...]:
    """Every prefix a trace or a source of these extra formats (and the built-in ones) starts
    with: a text holding none of them holds neither (`find_traces` and `find_sources` look for
    nothing else first)."""
    extra_trace, extra_source = (trace,) if trace else (), (source,) if source else ()
    patterns = _trace_patterns(extra_trace) + _source_patterns(extra_source)
    return tuple(dict.fromkeys(pattern.prefix for pattern in patterns))


def _may_hold_provenance(text: str, formats: Formats | None) -> bool:
    trace, source = (formats.trace, formats.source) if formats else ("", "")
    for prefix in _provenance_prefixes(trace, source):  # a plain loop: any() costs more
        if prefix in text:
            return True
    return False


def split_statement(
    line: str, formats: Formats | None = None
) -> tuple[str, list[str], list[Trace]]:
    """(core, sources, traces) of one statement line. Sources inside a trace belong to the old
    wording and are not the statement's own."""
    if not _may_hold_provenance(line, formats):
        # most lines (every cue line of a scan) hold neither: no spans to cut out
        return _LIST_MARKER.sub("", line).strip(), [], []
    traces = find_traces(line, formats)
    spans = [(t.start, t.end) for t in traces]
    sources: list[str] = []
    trace_index = 0  # traces are sorted and disjoint: one sweep says whether a source is inside one
    for start, end, names in find_sources(line, formats):
        while trace_index < len(traces) and traces[trace_index].end <= start:
            trace_index += 1
        if (
            trace_index < len(traces)
            and traces[trace_index].start <= start
            and end <= traces[trace_index].end
        ):
            continue
        spans.append((start, end))
        sources.extend(names)
    pieces, cursor = [], 0
    for start, end in sorted(spans):
        if start >= cursor:
            pieces.append(line[cursor:start])
        cursor = max(cursor, end)
    pieces.append(line[cursor:])
    core = _LIST_MARKER.sub("", "".join(pieces)).strip()
    return core, sources, traces


def statement_lines(text: str, start_line: int = 1) -> list[tuple[int, str]]:
    """(line number, line) of every statement in a Markdown body starting at `start_line`."""
    result = []
    in_fence = False
    fence = ""
    in_comment = False
    for offset, line in enumerate(text.split("\n")):
        stripped = line.strip()
        if in_fence:
            if stripped.startswith(fence):
                in_fence = False
            continue
        if stripped.startswith(("```", "~~~")):
            in_fence, fence = True, stripped[:3]
            continue
        if in_comment:
            if "-->" in stripped:
                in_comment = False
            continue
        if stripped.startswith("<!--"):
            in_comment = "-->" not in stripped
            continue
        if not stripped or (stripped.startswith("#") and re.match(r"#{1,6}(\s|$)", stripped)):
            continue
        if re.fullmatch(r"\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?", stripped) or re.fullmatch(
            r"(-{3,}|\*{3,}|_{3,})", stripped
        ):
            continue  # table rule or thematic break
        if _LIST_MARKER.sub("", line).strip() == "":
            continue  # an empty list item
        result.append((start_line + offset, line))
    return result


def parse_statements(
    body: str, start_line: int = 1, formats: Formats | None = None
) -> list[Statement]:
    statements = []
    for line_no, line in statement_lines(body, start_line):
        core, sources, traces = split_statement(line, formats)
        statements.append(Statement(line_no, line, core, tuple(sources), tuple(traces)))
    return statements


_DROP_CATEGORIES = ("P", "Z", "S", "C")
# Kept although they are punctuation or symbols, since they change what a statement says:
# currency (`€60k` vs `$60k`), maths signs (`≥` vs `≤`), the question mark.
_KEEP_CATEGORIES = ("Sc", "Sm")
_KEEP = frozenset("?")
# A decimal point between digits (`3.12` vs `31.2`) and a minus before one (`-5` vs `5`) are
# kept as these two signs, which the table below keeps (both are maths symbols).
_DECIMAL, _MINUS = "\u2219", "\u2212"
# Written sign first, the lookbehinds after it: a pattern that starts with a character class is
# searched for those characters alone, where `(?<=\d)\.(?=\d)|(?<![\w.])[-−–](?=\d)` was tried at
# every position of every statement (tests/vault/test_statements.py holds them equal).
_NUMBER_MARKS = re.compile(r"[.\-\u2212\u2013](?=\d)(?:(?<=\d\.)|(?<=[-\u2212\u2013])(?<![\w.].))")


class _DropTable(dict):
    """code point -> None (drop) or itself, filled on first sight: `str.translate` then runs in
    C, far faster than testing each character's category in Python (scans normalise every
    convergent statement)."""

    def __missing__(self, code: int) -> int | None:
        char = chr(code)
        category = unicodedata.category(char)
        keep = (
            char in _KEEP
            or category in _KEEP_CATEGORIES
            or not category.startswith(_DROP_CATEGORIES)
        )
        value = code if keep else None
        self[code] = value
        return value


_DROP = _DropTable()


def normalize(text: str) -> str:
    """Compare statements without case, whitespace or the punctuation and symbols that carry no
    meaning (NFKC first, so full-width and half-width forms agree). Digits, decimal points,
    minus signs, currency, comparison signs and question marks stay: changing one changes the
    statement."""
    if not text.isascii():
        text = _narrow_punctuation(text)
    text = fold(text)
    # four `in` tests, not any() over a generator: that cost more than the tests (per cue line)
    if "." in text or "-" in text or "\u2212" in text or "\u2013" in text:
        text = _NUMBER_MARKS.sub(lambda m: _DECIMAL if m.group() == "." else _MINUS, text)
    return _drop(text)


# The signs nearly every statement holds, each one `_DROP` drops: taken out first in C (as bytes
# and by `replace`), so the per-character `translate` runs only for the rare rest (issue 13;
# tests/vault/test_statements.py checks against the table).
_ASCII_DROPS = bytes(range(0x24)) + b"%&'()*,-./:;@[\\]^_`{}\x7f"
_CJK_DROPS = "。、「」『』《》【】〈〉—·“”‘’"


def _drop(text: str) -> str:
    """`text.translate(_DROP)`, the common signs taken out first."""
    # surrogatepass: a lone surrogate (a name that was not UTF-8) goes through unchanged
    kept = text.encode("utf-8", "surrogatepass").translate(None, _ASCII_DROPS)
    text = kept.decode("utf-8", "surrogatepass")
    if not text.isascii():
        for sign in _CJK_DROPS:
            if sign in text:
                text = text.replace(sign, "")
    if text.isalnum() or ("?" in text and text.replace("?", "").isalnum()):
        return text  # only letters, digits and `?` left: the table keeps them all
    return text.translate(_DROP)


# The full-width signs that keep most Chinese lines from NFKC's quick check (issue 13), each
# with its NFKC form: its own whole decomposition, so putting it in first changes no result.
_WIDE_PUNCTUATION = tuple((chr(code), nfkc(chr(code))) for code in map(ord, "，：；！？（）"))


def _narrow_punctuation(text: str) -> str:
    for wide, narrow in _WIDE_PUNCTUATION:
        if wide in text:
            text = text.replace(wide, narrow)
    return text


def format_source(names: list[str], formats: Formats) -> str:
    links = formats.source_separator.join(f"[[{name}]]" for name in names)
    return formats.source.replace("{links}", links)


def format_trace(date: str, old: str, formats: Formats) -> str:
    return formats.trace.replace("{date}", date).replace("{old}", old)
