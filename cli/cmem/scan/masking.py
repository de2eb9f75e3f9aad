"""Masking: the parts of a note a scan never reads as the user's words (docs/design.md §2).

Inline code, URLs, HTML comments, Markdown link destinations and wikilink targets are blanked
within a line (`mask_inline`, offsets kept so cue positions stay right); frontmatter, fenced
code and multi-line HTML comments are whole lines skipped (`blocked_lines`).
"""

from __future__ import annotations

import re

# Each pattern with the strings one of which any match holds: a line runs only the patterns it
# can match (most cue lines hold a wikilink's `[` and nothing else to mask).
_INLINE_MASKS = (
    (
        re.compile(r"<!--.*?(?:-->|$)"),
        ("<!--",),
    ),  # an HTML comment (to the line end when it runs on)
    (re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)"), ("`",)),  # inline code, any run of backticks
    (
        re.compile(r"(?:https?|ftp|file)://[^\s<>()\[\]]+|\bwww\.[^\s<>()\[\]]+", re.IGNORECASE),
        ("://", "w.", "W."),  # www. in any case ends in w. or W.
    ),
    (re.compile(r"\]\([^)\s]*\)"), ("](",)),  # a Markdown link destination
    # A wikilink target names a note, it says nothing: [[又一年]] is a title. The linked note is
    # scanned on its own if it is divergent. The alias after | is the user's text and stays.
    (re.compile(r"\[\[[^\]|\n]*"), ("[[",)),
)


def _blank(match: re.Match) -> str:
    return " " * len(match.group(0))


def mask_inline(line: str) -> str:
    """The line with code, URLs, comments and link targets blanked out (offsets kept)."""
    if (
        "`" not in line
        and "<!--" not in line
        and "://" not in line
        and "www." not in line
        and "[" not in line
    ):
        return line
    for pattern, needs in _INLINE_MASKS:
        # plain loops: any() over a generator cost more than the `in` tests (five per cue line)
        for need in needs:
            if need in line:
                line = pattern.sub(_blank, line)
                break
    return line


def blocked_lines(lines: list[str], body_start: int) -> tuple[set[int], set[int]]:
    """(0-based indices of lines never scanned: frontmatter, fenced code, inside a multi-line
    HTML comment; indices of lines that *end* such a comment, whose head is blanked)."""
    blocked = set(range(body_start - 1))
    comment_tails: set[int] = set()
    fence = ""
    in_comment = False
    for index in range(body_start - 1, len(lines)):
        stripped = lines[index].strip()
        if fence:
            blocked.add(index)
            if stripped.startswith(fence) and not stripped[len(fence) :].strip(fence[0]).strip():
                fence = ""
            continue
        if in_comment:
            if "-->" in lines[index]:
                in_comment = False
                comment_tails.add(index)
            else:
                blocked.add(index)
            continue
        if stripped.startswith(("```", "~~~")):
            run = len(stripped) - len(stripped.lstrip(stripped[0]))
            fence = stripped[0] * run
            blocked.add(index)
            continue
        opened = lines[index].rfind("<!--")
        if opened >= 0 and "-->" not in lines[index][opened:]:
            in_comment = True
    return blocked, comment_tails
