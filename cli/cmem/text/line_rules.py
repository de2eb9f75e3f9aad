"""How the redaction rules run (`secrets.py`, `secret_labels.py`): each compiled on first use,
and each that never crosses a line run only on the lines a literal search finds for it."""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing.TYPE_CHECKING, for the annotations alone
if TYPE_CHECKING:
    from collections.abc import Callable


class Lazy:
    """`re.compile(pattern, flags)`, done on first use. The ~80 redaction rules cost more to
    compile than a `cmem recall` answered from its index spends on everything else it imports,
    and most calls never run most of them: each rule runs only when its literal is in the text."""

    __slots__ = ("_args", "_compiled")

    def __init__(self, pattern: str, flags: int = 0):
        self._args = (pattern, flags)
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(*self._args)
        return self._compiled

    def sub(self, repl, string: str) -> str:
        return self.compiled.sub(repl, string)

    def finditer(self, string: str, pos: int = 0, endpos: int | None = None):
        if endpos is None:
            return self.compiled.finditer(string, pos)
        return self.compiled.finditer(string, pos, endpos)

    def search(self, string: str, pos: int = 0):
        return self.compiled.search(string, pos)

    def match(self, string: str):
        return self.compiled.match(string)

    def fullmatch(self, string: str):
        return self.compiled.fullmatch(string)


def lower(text: str) -> str | None:
    """`text` lower-cased, or None when a letter's lower case is longer (offsets would shift)."""
    low = text.lower()
    return low if len(low) == len(text) else None


def on_lines(
    text: str,
    low: str | None,
    needle: Lazy,
    substitute: Callable[[str], str],
    window: tuple[int, int] | None = None,
    literals: tuple[str, ...] = (),
) -> str:
    """`substitute(…)` of the lines of `text` where `needle` occurs in `low` (the text
    lower-cased), for rules that never cross a line: notes are mostly prose without a key word,
    and a literal search over all of it costs far less than the rule's own try at every position.
    `window`: the rule's match lies within these many characters around its needle.
    `literals`: one of them is in every match of `needle`; when none is in `low`, neither the
    needle nor the rule is compiled."""
    if low is None:  # a rare letter whose lower case is longer: search it all
        return substitute(text)
    if literals and not any(literal in low for literal in literals):
        return text
    spans: list[tuple[int, int]] = []
    for match in needle.finditer(low):
        if spans and match.start() < spans[-1][1]:
            continue  # on a line already taken
        start = text.rfind("\n", 0, match.start()) + 1
        end = text.find("\n", match.end())
        end = len(text) if end < 0 else end
        if window:
            start, end = max(start, match.start() - window[0]), min(end, match.end() + window[1])
            if spans and start <= spans[-1][1]:
                spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
                continue
        spans.append((start, end))
    if not spans:
        return text
    out, position = [], 0
    for start, end in spans:
        out += [text[position:start], substitute(text[start:end])]
        position = end
    out.append(text[position:])
    return "".join(out)


def sub_declining(pattern: Lazy, judge: Callable[[re.Match[str]], str | None], text: str) -> str:
    """`pattern.sub`, where `judge` may decline a match (None): the search then goes on from
    the end of the match's `key` group, not from the end of the match, so a value the rule read
    too far (`monkey password: X`: "password:" taken as the value of "key") is searched again."""
    out: list[str] = []
    position = kept = 0
    while True:
        match = pattern.search(text, position)
        if match is None:
            break
        replacement = judge(match)
        if replacement is None:
            position = max(match.end("key"), position + 1)
            continue
        out += [text[kept : match.start()], replacement]
        kept = position = max(match.end(), position + 1)
    if not out:
        return text
    out.append(text[kept:])
    return "".join(out)
