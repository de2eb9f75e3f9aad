"""Reading YAML: the plain subset of frontmatter read without a YAML parser.

`_plain_frontmatter` reads `key: scalar`, `key: [a, b]` and `key:` + `- item` lines, nearly every
note's frontmatter, at a fraction of a YAML parse; anything else gives None and the full parser
decides.
"""

from __future__ import annotations

import re

_FM_KEY = re.compile(r"(\w[\w .-]*?):(?: +(.*?))?[ \t]*$")  # PyYAML wants a space after the colon
_FM_ITEM = re.compile(r"[ \t]*-[ \t]+(.*?)[ \t]*$")
_FLOW_ITEM = r"""\s*(?:"[^"\\,]*"|'[^',]*'|[^\s"'\[\]{},#][^"'\[\]{},#]*?)\s*"""
_PLAIN_SCALAR = re.compile(
    rf"""(?:"[^"\\]*"|'[^']*'|[^\s"'\[\]{{}}&*!|>%@`#,][^#]*?|\[(?:{_FLOW_ITEM}(?:,{_FLOW_ITEM})*)?\])?(?:[ \t]+#.*)?"""
)


def _plain_frontmatter(block: str) -> dict | None:
    """The frontmatter's top-level keys, when it is plain `key: scalar`, `key: [a, b]` and
    `key:` + `- item` lines — nearly every note. None for anything else (then YAML decides)."""
    data: dict = {}
    current = None
    for raw in block.split("\n"):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        if "\t" in raw[: len(raw) - len(raw.lstrip())]:
            return None  # tabs in indentation are a YAML error: let the parser name it
        item = _FM_ITEM.fullmatch(raw)
        if item and current is not None and isinstance(data[current], list):
            if not _PLAIN_SCALAR.fullmatch(item.group(1)) or ": " in item.group(1):
                return None
            data[current].append(_unquote(item.group(1)))
            continue
        key = _FM_KEY.fullmatch(raw)
        if not key or raw[0].isspace():
            return None
        value = key.group(2) or ""
        if not _PLAIN_SCALAR.fullmatch(value) or ": " in value.split(" #")[0]:
            return None
        current = key.group(1)
        data[current] = (
            _flow_list(value) if value.startswith("[") else ([] if not value else _unquote(value))
        )
    return data


def _unquote(value: str) -> str:
    if "#" in value and not value.startswith(("'", '"')):
        value = re.sub(r"[ \t]+#.*$", "", value)
    return value.strip().strip("'\"")


def _flow_list(value: str) -> list[str]:
    inner = re.sub(r"[ \t]+#.*$", "", value).strip()[1:-1]
    return [_unquote(part) for part in inner.split(",") if part.strip()]
