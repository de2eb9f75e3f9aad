"""What an explicit correction or switch replaces, for the builtin engine (docs/design.md §4, issue 35): a
rewrite is for the statement the line is about, and changes only the part it corrects.

- **The old side**: what the line says no longer holds — "not 2", "from uv to", "instead of
  pip", "不是北京", "不再用 React" (`old_sides`). A statement is rewritten for it only when it
  holds those words (`holds`): a name alone is enough ("not Neovim"), a number or a common word
  needs another word of the line beside it ("3 sessions a week, not 2" → the statement about
  sessions a week holding 2).
- **The corrected part**: the rewrite puts the new words in place of the old ones inside the
  statement (`substitute`): "I meant 3 sessions a week, not 2" turns "I do 2 Dutch sessions a
  week" into "I do 3 Dutch sessions a week"; "I switched from pipenv to uv for managing
  virtualenvs" turns "Uses pipenv for managing virtualenvs" into "Uses uv for managing
  virtualenvs"; a switch into a slot puts the new name in place of the old one ("I switched to
  uv": "Survey scripts run under pipenv" → "Survey scripts run under uv", `slots`). When the
  new words are not one such part, the line's statement replaces the old one whole; either way
  the trace keeps the old wording.
"""

from __future__ import annotations

import re

from cmem.converge.builtin.line_words import OLD_SIDE
from cmem.converge.builtin.phrasing import substitution
from cmem.converge.builtin.slots import slot_swap
from cmem.text.folding import fold, fold_case, nfkc
from cmem.text.scripts import HAN_RUN
from cmem.text.terms import EN_KEY_STOP, EN_STOP
from cmem.text.words import han_runs, written_words

_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)*(?![\w]|\.\d)")


def _stem(word: str) -> str:
    word = fold_case(word.rstrip("."))
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _tokens(text: str) -> list[re.Match]:
    return written_words(nfkc(text))


def _content(word: str) -> bool:
    return word.isdigit() or (_stem(word) not in EN_STOP and len(word.rstrip(".")) >= 2)


def old_sides(raw: str) -> list[str]:
    """The words of each old side the line names, as written."""
    found = []
    for pattern in OLD_SIDE:
        for match in pattern.finditer(raw):
            side = match.group(1).strip(" ，,；;。.!！")
            if side and side not in found:
                found.append(side)
    return found


def _side_units(side: str) -> tuple[list[str], list[str]]:
    """(ASCII content words, Chinese runs) of an old side."""
    words = [_stem(m.group(0)) for m in _tokens(side) if _content(m.group(0))]
    return words, han_runs(side)


def holds(core: str, side: str) -> bool:
    """Whether a statement holds every content word of an old side (whole words, plural `s`
    aside; Chinese as written)."""
    words, runs = _side_units(side)
    if not words and not runs:
        return False
    stems = {_stem(m.group(0)) for m in _tokens(core)}
    folded = fold(core)
    return all(word in stems for word in words) and all(fold(run) in folded for run in runs)


def specific(side: str) -> bool:
    """Whether an old side names a thing by itself (a name, a Chinese word), not only a number
    or a word many statements hold: a word of three letters or more, or a two-letter name no
    list of common words holds ("from uv to poetry")."""
    words, runs = _side_units(side)
    return any(_names_a_thing(word) for word in words) or any(len(run) >= 2 for run in runs)


def _names_a_thing(word: str) -> bool:
    if word.isdigit():
        return False
    return len(word) >= 3 or (word.isalpha() and word not in EN_KEY_STOP | EN_STOP)


def side_words(side: str) -> frozenset[str]:
    words, runs = _side_units(side)
    return frozenset(words) | frozenset(runs)


def substitute(core: str, new: str, raw: str, sides: list[str]) -> tuple[str, str, str] | None:
    """(the statement with the corrected part in place, the old part, the new part), or None
    when the new words are not one part of it to put in place."""
    swap = substitution(raw)
    if swap and swap[0] and swap[0] in core and swap[1] not in core:
        return core.replace(swap[0], swap[1], 1), swap[0], swap[1]
    held = [side for side in sides if holds(core, side)]
    for side in held:
        found = _number_swap(core, new, side) or _word_swap(core, new, side)
        if found:
            return found
    # a line naming the old side says in its own words what holds now ("stay on Ghost")
    return None if held else slot_swap(core, new)


def _number_swap(core: str, new: str, side: str) -> tuple[str, str, str] | None:
    """ "3 sessions a week, not 2": the one number of the old side, standing once in the
    statement, becomes the one number of the new words the statement does not hold."""
    old_numbers = _NUMBER.findall(side)
    if len(old_numbers) != 1:
        return None
    held = set(_NUMBER.findall(core))
    fresh = [n for n in dict.fromkeys(_NUMBER.findall(new)) if n not in held]
    places = [m for m in _NUMBER.finditer(core) if m.group(0) == old_numbers[0]]
    if len(fresh) != 1 or len(places) != 1:
        return None
    at = places[0]
    return core[: at.start()] + fresh[0] + core[at.end() :], old_numbers[0], fresh[0]


def _word_swap(core: str, new: str, side: str) -> tuple[str, str, str] | None:
    """ "from pipenv to uv": the new words the statement does not hold, one run of at most as
    many words as the old side, take the old side's place."""
    side = nfkc(side)
    side_tokens = [m for m in _tokens(side) if _content(m.group(0))]
    if not side_tokens or HAN_RUN.search(side):
        return None
    stems = {_stem(m.group(0)) for m in _tokens(core)}
    tokens = _tokens(new)
    fresh = [
        i for i, m in enumerate(tokens) if _content(m.group(0)) and _stem(m.group(0)) not in stems
    ]
    if not fresh or fresh[-1] - fresh[0] + 1 != len(fresh) or len(fresh) > len(side_tokens):
        return None
    text = nfkc(new)
    # "video calls instead of calls": a run that only qualifies the old words is no new value
    side_stems = {_stem(m.group(0)) for m in side_tokens}
    before = tokens[fresh[0] - 1] if fresh[0] else None
    after = tokens[fresh[-1] + 1] if fresh[-1] + 1 < len(tokens) else None
    for near, gap in (
        (before, text[before.end() : tokens[fresh[0]].start()] if before else ""),
        (after, text[tokens[fresh[-1]].end() : after.start()] if after else ""),
    ):
        if near is not None and not gap.strip(" -") and _stem(near.group(0)) in side_stems:
            return None
    replacement = text[tokens[fresh[0]].start() : tokens[fresh[-1]].end()].rstrip(".")
    first, last = side_tokens[0], side_tokens[-1]
    phrase = side[first.start() : last.end()].rstrip(".")
    place = re.search(rf"(?<![\w.+#-]){re.escape(phrase)}(?![\w+#-])", core, re.IGNORECASE)
    if place is None or fold_case(replacement) in fold(core):
        return None
    if tokens[fresh[0]].start() == 0 and place.start() > 0 and replacement[1:2].islower():
        # "Calls from now on": a capital that only starts the line, not a name
        replacement = replacement[0].lower() + replacement[1:]
    old = place.group(0)
    return core[: place.start()] + replacement + core[place.end() :], old, replacement
