"""Content lines: the lines of a note that say something (docs/design.md §2).

A divergent note is pending while it holds a content line no pass has accounted for, whatever
its words. Every line of the body counts — list items, paragraphs, blockquotes and callouts
(Obsidian's daily templates put the answers in `>` lines), code — except what only structures
the note: headings, rules and fences, lines of tags or links alone (a daily note's `#daily`,
`<< [[2026-12-03]] | [[2026-12-05]] >>`), comments, template placeholders, and the labels daily
templates leave unfilled (a label alone: `- Mood:`, `今日主任务：`).
"""

from __future__ import annotations

import re

_HEADING = re.compile(r"^\s{0,3}#{1,6}(?:\s|$)")
_MARKERS = re.compile(
    r"^\s*(?:>\s*)*(?:\[![\w-]+\][+-]?\s*)?(?:(?:[-*+]|\d+[.)])\s+)?(?:\[.\]\s*)?"
)
_NOISE = re.compile(
    r"\[\[[^\]\n]*\]\]"  # wikilinks
    r"|!\[[^\]\n]*\]\([^)\n]*\)"  # embedded images
    r"|(?<![\w#])#[^\s#\[\](){}<>,.;:!?\"'`，。；：！？、（）]+"  # tags
    r"|\{\{[^}\n]*\}\}"  # template placeholders
    r"|<%[^%\n]*%>"  # Templater commands
    r"|%%.*?%%"  # Obsidian comments
    r"|<!--.*?-->"  # HTML comments
)
_FENCE = re.compile(r"^\s*(```|~~~)")
# a short label waiting for its answer: "Mood:", "今日主任务："
_LABEL = re.compile(r"^[^:：]{1,40}[:：]\s*$")
_WORD = re.compile(r"\w")


def says_something(line: str) -> bool:
    """Whether one line of a note's body is content (see the module docstring)."""
    if not line.strip() or _HEADING.match(line) or _FENCE.match(line):
        return False
    rest = _NOISE.sub(" ", _MARKERS.sub("", line, count=1)).strip()
    return bool(_WORD.search(rest)) and not _LABEL.match(rest)


def content_line_numbers(lines: list[str], body_start: int) -> list[int]:
    """The 1-based numbers of the content lines of a note split into `lines`, whose body starts
    at line `body_start` (frontmatter is never content)."""
    return [
        number for number in range(body_start, len(lines) + 1) if says_something(lines[number - 1])
    ]


def unaccounted_lines(
    lines: list[str],
    body_start: int,
    accounted: set[str] | frozenset[str],
) -> list[int]:
    """The content lines whose key (`state_json.line_key`) no pass accounted for."""
    from cmem.vault.state_json import line_key

    return [
        number
        for number in content_line_numbers(lines, body_start)
        if line_key(lines[number - 1]) not in accounted
    ]
