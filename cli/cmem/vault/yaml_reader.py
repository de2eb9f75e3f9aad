"""Reading and writing YAML: the one module that imports a YAML library (`bench/layout.py`
counts the others; `tests/project/test_architecture.py` holds them to none). One named function
a purpose:

- `split_frontmatter`: a note's frontmatter block, found between its `---` fences.
- `read_frontmatter`: a note's frontmatter as a mapping, what every reader of a note calls.
  Nearly every note's frontmatter is plain (`key: scalar`, `key: [a, b]`, `key:` + `- item`
  lines); `_plain_frontmatter` reads that subset without a parser, at a fraction of a parse, and
  gives None for anything else, which the full load then decides. It must give exactly what the
  full load gives whenever it answers: scalars are resolved as YAML 1.1 resolves them (yes/on →
  True, ~ → None, 2026-11-28 → a date, 42 → an int) and a form it cannot be sure of is left to
  the parser; `tests/vault/test_yaml_reader.py` feeds both the same blocks.
- `parse_frontmatter_block`: the full load `read_frontmatter` falls back on (hazard check, then
  PyYAML's safe load), the oracle its fast path is tested against.
- `plain_frontmatter`: the plain subset alone, None where only a parser can say: SessionStart
  reads memory files' frontmatter without importing YAML at all (`reading/start_memory.py`,
  its budget measured by `bench/agent_loop.py`).
- `frontmatter_hazard`: why a block is not even parsed — anchors or aliases (an alias bomb is a
  few hundred bytes that expand to gigabytes), too large, too deep — checked on YAML events
  before anything is built.
- `read_config_yaml`: a config file (the vault's, the user's), PyYAML's safe load; C loader where
  built (several times the pure one).
- `CommentKeepingEdit`: a file of the user's that cmem edits (their config), loaded and dumped
  with ruamel.yaml round-trip, which keeps the comments, key order and quotes a PyYAML load and
  dump would lose; `comment_keeping_mapping` and `comment_keeping_list` make the values put in it.
- `flow_list_line` and `quoted_scalar`: the YAML cmem writes into a frontmatter by itself — a
  merged list key (`sync/memory_merge.py`), a double-quoted string (session notes, agent skills).

A YAML error becomes one sentence naming the file and line in one place, `_error_at`, for either
library.
"""

from __future__ import annotations

import datetime
import itertools
import re
from functools import lru_cache

from cmem.errors import ConfigError

# typing only names the annotations (never evaluated): every command that opens a vault
# would pay for importing it
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

# --- the frontmatter block --------------------------------------------------------------------


def split_frontmatter(text: str) -> tuple[str | None, int, str | None]:
    """(block, body_start_line, problem). Only a block closed by `---` or `...` counts."""
    global _closing
    if not text.startswith("---\n") and text != "---":
        return None, 1, None
    if _closing is None:
        _closing = re.compile(r"^(---|\.\.\.)[ \t]*$", re.MULTILINE)
    # searched from offset 4, not in a copy of the text from there: `^` matches there too,
    # just after the opening line's `\n` (every note with frontmatter is split here)
    end = _closing.search(text, 4)
    if end is None:
        return None, 1, "frontmatter is not closed by a '---' line"
    block = text[4 : end.start()]
    return block, block.count("\n") + 3, None


_closing: re.Pattern | None = None  # compiled on first use: not every command reads a note


# --- the full load ----------------------------------------------------------------------------


def _loader():
    import yaml  # lazy: the plain subset and the light CLI path never pay for it

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _safe_load(text: str) -> Any:
    """PyYAML's safe load (the C loader where built). Raises `yaml.YAMLError`."""
    import yaml

    return yaml.load(text, Loader=_loader())


def parse_frontmatter_block(block: str | None) -> tuple[dict, str | None]:
    """(mapping, error) for a frontmatter block. Parsing is done only where needed: it is the
    slowest part of reading a note."""
    if not block or not block.strip():
        return {}, None
    import yaml

    hazard = frontmatter_hazard(block)
    if hazard:
        return {}, hazard
    try:
        data = _safe_load(block)
    except yaml.YAMLError as exc:
        line, _problem = _error_at(exc, first_line=2)  # the block starts on the file's line 2
        where = f" (line {line})" if line is not None else ""
        return {}, f"frontmatter is not valid YAML{where}"
    except ValueError as exc:  # a value its constructor refuses: `date: 2026-13-45`
        return {}, f"frontmatter is not valid YAML ({exc})"
    if data is None:
        return {}, None
    if not isinstance(data, dict):
        return {}, "frontmatter is not a mapping of keys"
    return data, None


def _error_at(exc: Exception, first_line: int = 1) -> tuple[int | None, str]:
    """(the file's line a YAML error is on, or None; the parser's problem in its own words), for
    PyYAML's errors and ruamel.yaml's alike: the one reading of a YAML error."""
    mark = getattr(exc, "problem_mark", None)
    line = mark.line + first_line if mark is not None else None
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return line, problem


def _config_error(exc: Exception, where: Path | str) -> ConfigError:
    line, problem = _error_at(exc)
    at = f" at line {line}" if line is not None else ""
    return ConfigError(f"{where} is not valid YAML{at}: {problem}.")


# --- a config file ----------------------------------------------------------------------------


def read_config_yaml(text: str, where: Path | str) -> Any:
    """A config file's YAML (the vault's `.cmem/config.yaml`, the user's settings), or
    ConfigError: one sentence naming `where` and the line."""
    import yaml

    try:
        return _safe_load(text)
    except yaml.YAMLError as exc:
        raise _config_error(exc, where) from None
    except ValueError as exc:  # a value its constructor refuses: `heading: 2026-13-45`
        raise ConfigError(
            f"{where} is not valid YAML: a value reads as a date that does not exist ({exc}); "
            "quote it."
        ) from None


class CommentKeepingEdit:
    """A YAML file of the user's edited as data and written back with its comments, key order,
    quotes and indentation kept (ruamel.yaml round-trip): what PyYAML's load and dump would
    lose. A text of comments only is kept as it is, the settings written after it."""

    def __init__(self, text: str, where: Path | str):
        from ruamel.yaml import YAML
        from ruamel.yaml.error import YAMLError

        self.original = text
        self.yaml = YAML()
        self.yaml.width = 4096  # never fold a long vault path
        self.yaml.preserve_quotes = True
        self.yaml.indent(**_guess_indent(text))  # ruamel re-indents the whole file: match it
        try:
            loaded = self.yaml.load(text) if text.strip() else None
        except YAMLError as exc:  # one PyYAML takes and ruamel refuses: a key given twice
            raise _config_error(exc, where) from None
        self.prefix = text if loaded is None else ""
        self.data = loaded if loaded is not None else comment_keeping_mapping()

    def text(self) -> str:
        """The edited file's text."""
        import io

        buffer = io.StringIO()
        self.yaml.dump(self.data, buffer)
        text = buffer.getvalue()
        return self.prefix.rstrip("\n") + "\n" + text if self.prefix else text


def comment_keeping_mapping(pairs: Any = ()) -> Any:
    """A mapping to put into a `CommentKeepingEdit`'s data (comments can attach to it)."""
    from ruamel.yaml.comments import CommentedMap

    return CommentedMap(pairs)


def comment_keeping_list() -> Any:
    """A list to put into a `CommentKeepingEdit`'s data."""
    from ruamel.yaml.comments import CommentedSeq

    return CommentedSeq()


def _guess_indent(text: str) -> dict[str, int]:
    """The file's mapping indent and list style (`- item` or `  - item`), from its first examples."""
    mapping, sequence, offset = None, None, None
    lines = [
        line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]
    for parent, child in itertools.pairwise(lines):
        if not re.sub(r"\s+#.*$", "", parent).rstrip().endswith(":"):
            continue
        parent_at = len(parent) - len(parent.lstrip(" "))
        child_at = len(child) - len(child.lstrip(" "))
        body = child.lstrip(" ")
        if body.startswith("- ") and sequence is None:
            offset = child_at - parent_at
            sequence = offset + 1 + len(body[1:]) - len(body[1:].lstrip(" "))
        elif not body.startswith("-") and child_at > parent_at and mapping is None:
            mapping = child_at - parent_at
    mapping = mapping or 2
    offset = offset if offset is not None and offset >= 0 else 0
    sequence = sequence if sequence is not None and sequence >= offset + 2 else offset + 2
    return {"mapping": mapping, "sequence": sequence, "offset": offset}


# --- what cmem writes into a frontmatter ------------------------------------------------------


def flow_list_line(key: str, items: list) -> str:
    """`key: [a, b]` and its line end: a list key written back after a merge."""
    import yaml

    dumped = yaml.safe_dump(
        {key: items}, default_flow_style=True, allow_unicode=True, sort_keys=False
    )
    return dumped.strip("{}\n") + "\n"


# Characters a YAML double-quoted scalar cannot hold as themselves: those outside YAML's
# printable set, and the line breaks a reader folds (NEL, the line and paragraph separators).
# Lone surrogates (a name's bytes that are not UTF-8) pass as they are: YAML has no form for them.
_UNQUOTABLE = re.compile(
    "[^\t\x20-\x7e\xa0-\ud7ff\ud800-\udfff\ue000-\ufffd\U00010000-\U0010ffff]|[\x85\u2028\u2029]"
)
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\t": "\\t", "\n": "\\n", "\r": "\\r"}


def quoted_scalar(text: str) -> str:
    """`text` as a YAML double-quoted scalar that any YAML reader reads back as `text` exactly:
    a colon, quote or `#` in it stays text; a control character or line break is escaped."""
    escaped = re.sub(r'[\\"\t\n\r]', lambda m: _ESCAPES[m.group()], text)
    return '"' + _UNQUOTABLE.sub(_escape, escaped) + '"'


def _escape(match: re.Match) -> str:
    return f"\\u{ord(match.group()):04x}"


# Frontmatter is a few lines of metadata. Bounds, so that no file makes a reader build a huge
# structure: an alias bomb (`a: &a [x, x]`, `b: &b [*a, *a]`, …) is a few hundred bytes that
# expand to gigabytes, so anchors and aliases are refused outright, before anything is built.
MAX_FRONTMATTER_BYTES = 64_000
MAX_FRONTMATTER_DEPTH = 8


def frontmatter_hazard(block: str) -> str | None:
    """Why a frontmatter block is not even parsed (anchors or aliases, too large, too deep), or
    None. Reads YAML events only: nothing is constructed, so nothing is expanded."""
    size = len(block.encode("utf-8", errors="surrogatepass"))
    if size > MAX_FRONTMATTER_BYTES:
        return f"frontmatter is {size} bytes, over the limit of {MAX_FRONTMATTER_BYTES}"
    openers = block.count("[") + block.count("{") + block.count(":") + block.count("- ")
    if "&" not in block and "*" not in block and openers <= MAX_FRONTMATTER_DEPTH:
        return None  # no anchor, no alias, too few openers to nest deep: the common case, no scan
    if len(block) <= MAX_FRONTMATTER_BYTES // 4 and _plain_frontmatter(block) is not None:
        # a plain block (what `read_frontmatter` reads without a parser) holds no anchor or
        # alias and nests two levels at most: a memory file's `summary:` with a few colons
        # or tags no longer imports yaml to be scanned
        return None
    import yaml

    depth = 0
    try:
        for event in yaml.parse(block, Loader=_loader()):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                return "frontmatter uses a YAML anchor or alias (& or *), which cmem does not expand; write the values out"
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_FRONTMATTER_DEPTH:
                    return f"frontmatter nests deeper than {MAX_FRONTMATTER_DEPTH} levels"
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
    except yaml.YAMLError:
        return None  # the parse that follows names the error and its line
    return None


# --- the plain subset, read without a parser ----------------------------------------------------


def read_frontmatter(block: str | None) -> tuple[dict, str | None]:
    """(mapping, error), as `parse_frontmatter_block` gives them, through the plain subset when
    the block is plain: the scanner reads every note's flags this way."""
    if not block or not block.strip():
        return {}, None
    # a block near the size limit goes to the full path, which measures it in bytes and refuses
    data = _plain_frontmatter(block) if len(block) <= MAX_FRONTMATTER_BYTES // 4 else None
    if data is not None:
        return data, None
    return parse_frontmatter_block(block)


def plain_frontmatter(block: str) -> dict | None:
    """What `read_frontmatter` gives for a plain block, read without YAML; None for any other
    block (then only the full parse can say): SessionStart from kept memory never imports YAML."""
    if not block.strip():
        return {}
    return _plain_frontmatter(block) if len(block) <= MAX_FRONTMATTER_BYTES // 4 else None


_FM_KEY = re.compile(r"(\w[\w .-]*?):(?: +(.*?))?[ \t]*$")  # PyYAML wants a space after the colon
_FM_ITEM = re.compile(r"([ \t]*)-[ \t]+(.*?)[ \t]*$")
_FLOW_ITEM = r"""\s*(?:"[^"\\,]*"|'[^',]*'|[^\s"'\[\]{},#][^"'\[\]{},#]*?)\s*"""
_PLAIN_SCALAR = re.compile(
    rf"""(?:"[^"\\]*"|'[^']*'|[^\s"'\[\]{{}}&*!|>%@`#,][^#]*?|\[(?:{_FLOW_ITEM}(?:,{_FLOW_ITEM})*)?\])?(?:[ \t]+#.*)?"""
)

# YAML 1.1's implicit scalars, as PyYAML resolves them (its resolver's own words and patterns).
_WORDS = {
    **dict.fromkeys(("yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
    **dict.fromkeys(("no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False),
    **dict.fromkeys(("~", "null", "Null", "NULL", ""), None),
}
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[-+]?[0-9]+\.[0-9]+")
# Any other int, float or timestamp form (0x1f, 1_000, 1:30, .inf, 2026-1-2 3:04:05): left to the
# parser, which knows how each is built.
_NUMBERISH = re.compile(
    r"""[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+
    |[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+
    |[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)
    |[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9]
     (?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?""",
    re.VERBOSE,
)


class _NotPlain(Exception):
    """A scalar the plain reader cannot be sure of: the parser decides."""


def _plain_frontmatter(block: str) -> dict | None:
    """The frontmatter's top-level keys, when it is plain `key: scalar`, `key: [a, b]` and
    `key:` + `- item` lines — nearly every note. None for anything else (then YAML decides)."""
    # control characters, U+2028 …: YAML refuses them or breaks lines there (one test a block)
    if not block.replace("\n", " ").replace("\t", " ").isprintable():
        return None
    data: dict = {}
    current = None  # the key of a bare `key:` line, whose `- item` lines may follow
    indent = None  # those items' indentation: YAML reads a deeper `- x` as part of the last item
    try:
        for raw in block.split("\n"):
            form = _line_form(raw)
            if form is None:
                return None  # a form only the parser reads right
            if form[0] == _SKIP:
                continue
            if form[0] == _ITEM:
                _, item_indent, read = form
                if current is None or indent not in (None, item_indent):
                    return None  # an item of no bare key, or at another indentation
                if read is None or read[0] == "list":
                    return None  # a form only the parser reads right, or a nested list
                indent = item_indent
                if data[current] is None:
                    data[current] = []
                data[current].append(read[1])
                continue
            _, name, bare, read = form
            current, indent = (name, None) if bare else (None, None)
            data[name] = list(read[1]) if read[0] == "list" else read[1]
    except _NotPlain:
        return None
    return data


_SKIP, _ITEM, _KEY = "skip", "item", "key"


@lru_cache(maxsize=4096)
def _line_form(raw: str) -> tuple | None:
    """What one frontmatter line is, on its own: (_SKIP,) a comment or a blank line; (_ITEM,
    indentation, value read) a `- item` line; (_KEY, name, bare, value read) a `key: value`
    line; None a form only the parser reads right. Lines recur from note to note (`tags:`,
    `  - design`, `status: draft`): each is matched once a run, not once a note (the scanner
    reads every note's frontmatter). The values are `_value`'s, shared: callers copy lists."""
    first = raw[:1]
    if first == "#" or not raw or (first in " \t-" and raw.lstrip()[:1] in ("", "#")):
        return (_SKIP,)
    if first in " \t" and "\t" in raw[: len(raw) - len(raw.lstrip())]:
        return None  # tabs in indentation are a YAML error: let the parser name it
    if first in " \t-":
        # a key line never starts so: an item of the bare key above it, or not plain
        item = _FM_ITEM.fullmatch(raw)
        return (_ITEM, item.group(1), _value(item.group(2))) if item else None
    key = _FM_KEY.fullmatch(raw)
    if not key or raw[0].isspace() or key.group(1).endswith(" "):
        return None
    value = key.group(2) or ""
    read = _value(value)
    name = _key(key.group(1))
    if read is None or name is None:
        return None  # `yes:` or `1:` is not a str key
    return (_KEY, name, not value, read)


@lru_cache(maxsize=4096)
def _value(value: str) -> tuple | None:
    """("scalar", x) or ("list", items) for a value the plain reader reads as YAML does, else
    None. Values recur from note to note (tags, dates, statuses): each is resolved once a run,
    and a list is handed out as a new list each time, so no caller shares one."""
    if not _plain_value(value):
        return None
    try:
        if value.startswith("["):
            return "list", tuple(_flow_list(value))
        return "scalar", _scalar(value)
    except _NotPlain:
        return None


@lru_cache(maxsize=256)
def _key(text: str) -> str | None:
    """A key as YAML reads it, or None when that is not a string (a few keys recur in every note)."""
    try:
        name = _scalar(text)
    except _NotPlain:
        return None
    return name if isinstance(name, str) else None


def _plain_value(value: str) -> bool:
    """Whether a value (after `key: ` or `- `) is one the plain reader reads as YAML does."""
    if not _PLAIN_SCALAR.fullmatch(value):
        return False
    if value[:1] in ("'", '"'):
        return True  # the pattern took the quotes whole, a comment at most after them
    if ": " in value and ": " in value.split(" #")[0]:
        return False
    bare = re.sub(r"[ \t]+#.*$", "", value) if "#" in value else value
    # `- x`, `? x`, `: x` are block indicators and `x:` ends in one: only the parser reads them
    indicator = bare[:1] in ("-", "?", ":") and bare[1:2] in ("", " ", "\t")
    return not indicator and not bare.endswith(":")


def _scalar(value: str) -> Any:
    """A scalar as YAML 1.1 resolves it: quoted ones are strings; plain ones may be a bool, null,
    int, float or date. Raises _NotPlain for a form left to the parser."""
    quote = value[:1]
    if quote in ("'", '"'):
        return value[1 : value.index(quote, 1)]  # the pattern allows no quote or escape inside
    text = (re.sub(r"[ \t]+#.*$", "", value) if "#" in value else value).strip()
    if text in _WORDS:
        return _WORDS[text]
    if text in ("<<", "="):
        raise _NotPlain(text)  # the merge key and the value indicator
    if text[0] in "-+.0123456789":
        if _INT.fullmatch(text):
            return int(text)
        if _FLOAT.fullmatch(text):
            return float(text)
        if _DATE.fullmatch(text):
            try:
                return datetime.date(int(text[:4]), int(text[5:7]), int(text[8:]))
            except ValueError:
                raise _NotPlain(text) from None  # 2026-13-45: the parser names the error
        if _NUMBERISH.fullmatch(text):
            raise _NotPlain(text)
    return text


def _flow_list(value: str) -> list:
    inner = re.sub(r"[ \t]+#.*$", "", value).strip()[1:-1]
    items = []
    for part in inner.split(","):
        part = part.strip()
        if not part:
            continue
        if part[0] in "&*!|>%@`?:-" and (part[0] not in "?:-" or part[1:2] in ("", " ")):
            raise _NotPlain(part)  # an anchor, alias, tag or indicator inside [ ]
        items.append(_scalar(part))
    return items
