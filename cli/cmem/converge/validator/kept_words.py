"""What a statement says, word by word: the words a rewrite must keep (docs/design.md §5, rule 4).

A trace keeps every word of the old statement: `was:` may hold the whole old statement or only
the words that changed, as long as each name, number and content word of the old statement is in
the new statement or in its trace. Words are compared folded (case, width), English ones lightly
stemmed ("uses" keeps "use"); Chinese is compared by character, since a clause-only trace cuts a
bigram in two ("在找北京后端实习" → "在找深圳实习（原为：北京后端）").

A statement whose every word is kept by another statement with the same numbers and negations
loses nothing either: it was reworded or merged, not changed.
"""

from __future__ import annotations

import re

from cmem.text.folding import fold
from cmem.text.terms import EN_GRAMMAR, ZH_FUNCTION_CHARS
from cmem.text.words import script_parts, word_runs

# a number with the sign before it (-5 is not 5), currency, comparison signs: a statement's facts
_NUMBER = re.compile(r"(?<![\w.])([-−+±]?)\d+(?:[.,]\d+)*|\d+(?:[.,]\d+)*")
_SIGNS = re.compile(r"[€$¥£₹₩≥≤<>≠≈~=%‰]")
_QUESTION = re.compile(r"[?？]")
_EN_NEGATION = frozenset("not no never none nobody nothing neither nor without cannot n't".split())
_ZH_NEGATION = "不没别非未无勿莫"
# function characters carry no fact of their own; negations are counted apart (`negations`)
_ZH_SKIP = ZH_FUNCTION_CHARS - frozenset(_ZH_NEGATION)


def _stem(word: str) -> str:
    for suffix in ("ing", "ies", "es", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def kept_words(text: str) -> frozenset[str]:
    """The content words of `text`: English words (stemmed, grammar words left out), numbers,
    and each Chinese (CJK) character but the function characters."""
    words: set[str] = set()
    for part, cjk in script_parts(fold(text)):
        if cjk:
            words.update(char for char in part if char not in _ZH_SKIP)
        else:
            words.add(_word(part))
    words.discard("")
    return frozenset(words)


def _word(word: str) -> str:
    if word.isdigit() or word in EN_GRAMMAR or word in _EN_NEGATION:
        return word if word.isdigit() else ""
    return _stem(word)


def numbers(text: str) -> frozenset[str]:
    """The numbers of `text` with their signs, and its currency and comparison signs."""
    folded = fold(text).replace("−", "-")
    found = {match.group().replace("−", "-") for match in _NUMBER.finditer(folded)}
    return frozenset(found | set(_SIGNS.findall(folded)))


def questions(text: str) -> int:
    return len(_QUESTION.findall(text))


def negations(text: str) -> int:
    """How many negations the text holds (English words and Chinese characters)."""
    folded = fold(text).replace("n't", " not")
    count = sum(1 for word in word_runs(folded) if word in _EN_NEGATION)
    return count + sum(folded.count(char) for char in _ZH_NEGATION)


def missing_words(old: str, kept_by: str) -> frozenset[str]:
    """The content words of `old` that `kept_by` does not hold."""
    return kept_words(old) - kept_words(kept_by)


def same_facts(old: str, new: str) -> bool:
    """`new` keeps every word, number and negation of `old`: a rewording or a merge, no change."""
    return (
        not missing_words(old, new)
        and numbers(old) <= numbers(new)
        and negations(old) == negations(new)
        and questions(old) == questions(new)
    )
