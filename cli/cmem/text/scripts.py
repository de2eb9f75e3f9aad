"""Which characters are CJK: the one definition every module matches with.

Chinese (and Japanese, Korean) is written without spaces, so cmem counts, splits and pairs these
characters differently from words. Three sets, chosen per use:

- `HAN`: Chinese characters — CJK Unified Ideographs, Extension A and the compatibility block.
  For "is this Chinese" questions (the vault's language, a statement phrased in Chinese) and
  the builtin engine's bigrams.
- `CJK`: Han plus kana and Hangul syllables — every letter of a script written without spaces.
  For splitting text into runs (search, overlap, recurrence keys, content units).
- `CJK_WIDE`: CJK plus CJK punctuation and full-width forms — what counts one token each in
  the token estimate, since a tokenizer spends about a token on each of those too.

Punctuation is never part of a run: "熬夜，刷题" is two runs, so no bigram straddles the comma.
"""

from __future__ import annotations

import re

# Character-class bodies (no brackets), so callers can build larger classes from them.
HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
KANA = "\u3040-\u30ff"
HANGUL = "\uac00-\ud7af"
CJK = HAN + KANA + HANGUL
PUNCTUATION = "\u3000-\u303f\uff00-\uffef"  # CJK symbols and punctuation, full-width forms
CJK_WIDE = CJK + PUNCTUATION

# Compiled on first use (PEP 562): a class of tens of thousands of code points is slow to
# compile and a stored `context` needs only the strings above; a one-character question
# compares code points instead (`is_han`, `is_cjk`).
_PATTERNS = {
    "HAN_RUN": f"[{HAN}]+",
    "CJK_RUN": f"[{CJK}]+",
    "CJK_WIDE_CHAR": f"[{CJK_WIDE}]",
}


def __getattr__(name: str) -> re.Pattern:
    if name not in _PATTERNS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    pattern = globals()[name] = re.compile(_PATTERNS[name])
    return pattern


def _compiled(name: str) -> re.Pattern:
    return globals().get(name) or __getattr__(name)


def _ranges(body: str) -> tuple[tuple[int, int], ...]:
    """A class body made of ranges only (HAN, CJK), as code points."""
    return tuple((ord(first), ord(last)) for first, last in re.findall("(.)-(.)", body))


_HAN_RANGES = _ranges(HAN)
# CJK's ranges as code points: `is_cjk` asks about one character at a time (the scan's word
# boundaries), where comparing code points costs less than compiling the class (once per
# process: in every cold scan) and matching it.
_CJK_RANGES = _ranges(CJK)


def is_han(ch: str) -> bool:
    """A Chinese character; `ch` is one character."""
    code = ord(ch)
    return any(first <= code <= last for first, last in _HAN_RANGES)


def is_cjk(ch: str) -> bool:
    """A Han character, kana or a Hangul syllable (punctuation is not); `ch` is one character."""
    code = ord(ch)
    for first, last in _CJK_RANGES:
        if first <= code <= last:
            return True
    return False


def han_count(text: str) -> int:
    return sum(map(len, _compiled("HAN_RUN").findall(text)))


def cjk_count(text: str) -> int:
    return sum(map(len, _compiled("CJK_RUN").findall(text)))
