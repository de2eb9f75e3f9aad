"""Words, for the builtin engine (docs/design.md §4): what a line is about, what a change replaces, and
the line itself quoted as a statement.

Matching is by characters, not meaning: English words (lower case, a plural `s` off, common
words left out) and CJK bigrams — Chinese is written without spaces, and two characters are the
shortest unit that carries a topic. That is why "喜欢 React" and "Svelte 真香" share nothing.
"""

from __future__ import annotations

import re
from collections.abc import Container
from functools import lru_cache

from cmem.text.folding import fold
from cmem.text.names import name_key  # re-exported: the engine compares names so
from cmem.text.terms import EN_STOP, ZH_CUE_BIGRAMS, bigrams
from cmem.text.words import han_runs, tool_words
from cmem.vault.statements import normalize

# A bigram holding a particle ("上的", "了两") straddles two words: noise, not a topic.
_PARTICLE = re.compile(r"[的了着过吗呢吧啊]")


@lru_cache(maxsize=65536)
def terms(text: str) -> frozenset[str]:
    """Content words of a line: English words (lower case, plural `s` off) and CJK bigrams —
    Chinese has no spaces, and two characters are the shortest unit that carries a topic."""
    text = fold(text)
    found = set()
    for word in tool_words(text):
        word = word.strip(".-_")
        if len(word) < 2 or word in EN_STOP or (word.isdigit() and len(word) < 3):
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        found.add(word)
    for run in han_runs(text):
        found.update(pair for pair in bigrams(run) if not _PARTICLE.search(pair))
    return frozenset(found - ZH_CUE_BIGRAMS)


# An explicit switch: only these (and corrections) may rewrite an existing statement.
SWITCH = re.compile(
    r"改用|换成|改成|换到|转向|替换|取代|代替"
    r"|\bswitch(?:ed|ing)?\s+(?:to|from|over)\b|\bgoing with\b|\bmov(?:e|ed|ing) to\b|\bmigrat(?:e|ed|ing) to\b"
    r"|\breplac(?:e|es|ed|ing)\b|\binstead of\b|\bno longer\b|\bfrom\s+(?!now\b)\S.*?\s+to\b",
    re.IGNORECASE,
)
_END = r"(?=[，,；;。：:！!？?]|\.\s|\.?$)"
# The "old" side of a change: its words point at the statement being replaced.
OLD_SIDE = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"不是(.+?)" + _END,
        r"不再(?:用|是)?(.+?)" + _END,
        r"(?:代替|取代|替换掉?|替代)(.+?)" + _END,
        r"从(.+?)(?:改成|换成|改用|换到|转到|转向)",
        r"不用(.+?)了",
        r"原来(?:是|用)?(.+?)" + _END,
        r"\bnot\s+(.+?)" + _END,
        r"\binstead of\s+(.+?)" + _END,
        r"\brather than\s+(.+?)" + _END,
        r"\brather\s+(?!than\b)\S.*?\s+than\s+(.+?)" + _END,
        r"不要再?(.+?)了(?=[，,])",
        r"\breplac(?:e|es|ed|ing)\s+(.+?)" + _END,
        r"\bfrom\s+(?!now\b)(.+?)(?:\s+back)?\s+to\b",
        r"\bno longer\s+(.+?)" + _END,
        r"\bdropp(?:ed|ing)\s+(.+?)" + _END,
    )
]


# A line naming both sides of a change of mind ("calls, not written feedback", "X instead of Y",
# "rather X than Y", "X 而不是 Y", "不要Y了，改成X"): a preference or decision said so replaces
# the one it contradicts, as a switch does.
CONTRAST = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\S\s*(?:[,;—–(]|\s-)\s*(?:and\s+|but\s+)?not\s+\S",
        r"\S\s+(?:instead of|rather than)\s+\S",
        r"\brather\s+(?!than\b)\S.*?\s+than\s+\S",
        r"\S\s*[，,]?\s*(?:而)?不是\s*\S",
        r"不要再?\S.*?了[，,]\s*(?:改成|换成|改用|换用)",
        r"\S\s*[，,]\s*不再(?:用|是)?\s*\S",
    )
]


def names_both_sides(text: str) -> bool:
    """Whether a line says what holds now and, as its contrast, what no longer does."""
    return any(pattern.search(text) for pattern in CONTRAST)


def old_side_terms(text: str) -> frozenset[str]:
    return frozenset().union(*(terms(m.group(1)) for p in OLD_SIDE for m in p.finditer(text)))


# --- quoting the user's words ---------------------------------------------------------------

_LEAD = re.compile(r"^\s*(?:>\s*)*(?:#{1,6}\s+)?(?:(?:[-*+]|\d+[.)])\s+)?(?:\[[ xX]\]\s+)?")
_TIME = re.compile(r"^\[?(?:\d{4}-\d{2}-\d{2}[ T])?\d{1,2}:\d{2}(?::\d{2})?\]?\s*[-–—:：]?\s+")
_FILLER = re.compile(
    r"^(?:想通了|决定了|更正|纠正|补充|其实|update|correction|note|actually|ps)\s*[:：,，]\s*",
    re.IGNORECASE,
)
_TRAILING_TAGS = re.compile(r"(?:\s+#[^\s#\[\]]+)+\s*$")
_TRAILING_LINK = re.compile(r"\s*\[\[([^\[\]|#\n]+)(?:#[^\[\]|\n]*)?(?:\|[^\[\]\n]*)?\]\]\s*$")


def quote_line(line: str, topic_keys: Container[str]) -> str:
    """The signal line as a statement, trimmed lightly; never reworded."""
    text = _TIME.sub("", _LEAD.sub("", line)).strip()
    trimmed = _FILLER.sub("", text)
    text = trimmed if normalize(trimmed) else text
    while True:
        text = _TRAILING_TAGS.sub("", text)
        link = _TRAILING_LINK.search(text)
        # A trailing [[topic]] is a routing hint, already honoured; other links are content.
        if (
            not link
            or name_key(link.group(1)) not in topic_keys
            or not normalize(text[: link.start()])
        ):
            return text.strip()
        text = text[: link.start()]


def slug(text: str) -> str:
    return re.sub(r"[^\w]+", "-", fold(text)).strip("-_")[:48].strip("-_")


_CUE_PREFIX = re.compile(
    r"^(?:我决定|决定了|决定|想通了|我想|以后都|改用|换成|i decided to|decided to|switching to|switched to|going with)\s*[:：,，]?\s*",
    re.IGNORECASE,
)


def without_cue(text: str) -> str:
    """The line without a leading decision cue, for naming a topic after what was decided."""
    return _CUE_PREFIX.sub("", text)
