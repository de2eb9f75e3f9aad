"""Tone: the cue lines that wait rather than count (docs/design.md §2).

A line that vents (ugh, 烦死, shouting, a row of !!!) or says too little once its cue is taken
out (`content_units` below `MIN_CONTENT_UNITS`) is deferred, not dropped: it becomes a signal
when it recurs or its note is confirmed.
"""

from __future__ import annotations

import re

from cmem.scan.matching import _ZH_CLAUSE_END, _is_word_char
from cmem.text.scripts import is_cjk
from cmem.text.terms import EN_FILLER, ZH_UNIT_STOP
from cmem.text.words import caps_words, latin_words, unit_tokens

_VENTING_ZH = (
    "烦死",
    "气死",
    "累死",
    "受不了",
    "烦躁",
    "妈的",
    "去死",
    "我靠",
    "卧槽",
    "艹",
    "抓狂",
    "心累",
    "无语",
    "真服了",
    "我服了",
    "郁闷",
    "我崩溃",
    "要崩溃",
    "心态崩",
    "好烦",
    "烦烦",
    "啊啊啊",
    "淦",
)
_VENTING_EN = (
    "ugh",
    "ughh",
    "argh",
    "fml",
    "wtf",
    "ffs",
    "dammit",
    "damn it",
    "goddamn",
    "so annoying",
    "so annoyed",
    "sick of",
    "fed up",
    "i hate this",
)
_BANGS = re.compile(r"[!！]{3,}|[!?！？]{4,}")


def _venting(masked: str, low: str, cue_pos: int, cue_len: int) -> bool:
    # the Chinese markers cannot occur in an ASCII line
    if (
        (not low.isascii() and _holds_zh_marker(low))
        or (_bang_count(low) >= 3 and _BANGS.search(low))
        or _breakdown(low)
    ):
        return True
    for marker in _VENTING_EN:
        if marker in low and _word_at(low, marker):  # `in` first spares most lines _word_at
            return True
    if low == masked:
        return False  # nothing was lowercased: no capital letter, so no shouting
    # Shouting: five or more all-caps words making most of the line. A capitalised cue on its
    # own ("NEVER push to main") is emphasis, not venting, so the cue is left out of the count.
    rest = masked[:cue_pos] + " " + masked[cue_pos + cue_len :]
    caps = caps_words(rest)
    if len(caps) < 5:
        return False  # most lines: the words need not be counted
    return len(caps) >= 0.8 * len(latin_words(rest))


# The Chinese markers by their first character: most of those characters are rare, and one
# character is found faster than a marker, so a line is searched for 18 characters and the
# markers of the few it holds, not for all 23 markers (a cue line's per-hit cost in a cold scan)
_ZH_BY_FIRST: dict[str, list[str]] = {}
for _marker in _VENTING_ZH:
    _ZH_BY_FIRST.setdefault(_marker[0], []).append(_marker)


def _holds_zh_marker(low: str) -> bool:
    """Whether `low` holds one of `_VENTING_ZH`."""
    # plain loops: any() over a generator costs more than the `in` tests it runs
    for first, markers in _ZH_BY_FIRST.items():
        if first in low:
            for marker in markers:
                if marker in low:
                    return True
    return False


def _bang_count(low: str) -> int:
    """How many of ! ? ！ ？ the line holds: _BANGS needs three at least, and most lines have
    fewer, so four C-level counts spare most lines the regex search (a cue line's per-hit cost)."""
    return low.count("!") + low.count("?") + low.count("！") + low.count("？")


def _breakdown(low: str) -> bool:
    """崩溃 as an outcry (崩溃，又改需求 / 要崩溃了), not a crash (程序崩溃了, 又崩溃了)."""
    pos = low.find("崩溃")
    while pos >= 0:
        before = low[:pos].rstrip()
        if not before or before[-1] in _ZH_CLAUSE_END or before[-1] in "我要快真好都心":
            return True
        pos = low.find("崩溃", pos + 1)
    return False


def _word_at(low: str, phrase: str) -> bool:
    pos = low.find(phrase)
    while pos >= 0:
        end = pos + len(phrase)
        if (pos == 0 or not _is_word_char(low[pos - 1])) and (
            end == len(low) or not _is_word_char(low[end])
        ):
            return True
        pos = low.find(phrase, pos + 1)
    return False


_TIMES = re.compile(r"\d{1,2}:\d{2}|\d{4}-\d{2}-\d{2}")


def content_units(text: str, enough: int = 1 << 30) -> int:
    """How much is said: a Chinese character counts 1, a Latin word 2; particles, pronouns,
    filler words and times count nothing. Stops counting at `enough`."""
    units = 0
    # finditer, not findall: the scan asks for MIN_CONTENT_UNITS (2), which the first tokens of
    # a line nearly always reach, so the rest of the line is never tokenised
    for token in unit_tokens(_TIMES.sub(" ", text) if ":" in text or "-" in text else text):
        if len(token) == 1 and not token.isascii():
            if is_cjk(token):  # other non-ASCII characters (punctuation, é) say nothing
                units += token not in ZH_UNIT_STOP
        elif token not in EN_FILLER and not token.isdigit():
            units += 2
        if units >= enough:
            break
    return units


MIN_CONTENT_UNITS = 2
