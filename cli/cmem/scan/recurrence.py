"""Recurrence keys: the key phrases that tell two recurring lines repeat the same pattern.

A recurring cue (又, every time) in one note alone waits; the scanner counts it as a signal once
notes enough share a key phrase of its sentence (`phrase_keys`). The converge engine and the
coverage check compare statements by the same keys.
"""

from __future__ import annotations

import re

from cmem.text.terms import EN_KEY_STOP, ZH_KEY_BIGRAMS, ZH_KEY_STOP
from cmem.text.words import cjk_runs, key_words


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


MAX_KEYS = 8
_SENTENCE_END = set("。！？!?；;\n")


_SENTENCE_MARK = re.compile("[" + re.escape("".join(sorted(_SENTENCE_END))) + "]")


def sentence_around(low: str, start: int, end: int) -> str:
    """The sentence holding low[start:end], without that span."""
    # Searched in C, not stepped through in Python a character at a time (a Chinese sentence
    # runs to the line's end, past every full-width comma): the mark before the span is the
    # first one in the reversed text before it.
    before = _SENTENCE_MARK.search(low[start - 1 :: -1]) if start else None
    head = start - before.start() if before else 0
    after = _SENTENCE_MARK.search(low, end)
    tail = after.start() if after else len(low)
    return low[head:start] + " " + low[end:tail]


def phrase_keys(text: str) -> list[str]:
    """Key phrases of a recurring cue's sentence (the cue taken out): Chinese bigrams of content
    characters and English content words, lightly stemmed, at most MAX_KEYS of them. Two notes
    whose recurring lines share a key repeat the same pattern (又熬夜到两点 / 又熬夜刷题 share 熬夜)."""
    # The first MAX_KEYS distinct keys are kept, so the search stops once it has them: a long
    # sentence is not read to its end (a recurring cue line's per-hit cost in a cold scan).
    keys: dict[str, None] = {}
    for run in cjk_runs(text):
        # the run's bigrams (`terms.bigrams`) in place: a stop character rules a pair out before
        # it is sliced, and no list of every pair is made for the few pairs read
        for index in range(len(run) - 1):
            if run[index] in ZH_KEY_STOP or run[index + 1] in ZH_KEY_STOP:
                continue
            pair = run[index : index + 2]
            if pair not in ZH_KEY_BIGRAMS:
                keys[pair] = None
                if len(keys) == MAX_KEYS:
                    return sorted(keys)
    for word in key_words(text):
        word = word.strip("'-")
        if len(word) >= 4 and word not in EN_KEY_STOP:
            keys[_stem(word)] = None
            if len(keys) == MAX_KEYS:
                return sorted(keys)
    return sorted(keys)
