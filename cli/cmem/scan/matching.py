"""Cue matching: whether a cue found in a line stands in a context that fits it (docs/design.md §2).

A cue's text is found literally; these rules then look at the words around it: word boundaries
and the previous word for an English cue (`_latin_fits`), the characters that may not touch a
Chinese one (`_cjk_fits`), and the named special rules (又 as "again", always/never as the
user's own rule). `find_cue` gives the first cue, in priority order, whose context fits.
"""

from __future__ import annotations

import re

from cmem.text.cues import Cue
from cmem.text.scripts import is_cjk
from cmem.text.words import clause_words

_CLAUSE_END = set('.,;:!?()[]{}"“”—–-…/|，。；：！？、（）「」『』【】《》')
_OPENERS = "*_~`\"'“‘(>"
_LEAD = re.compile(
    r"\s*(?:[-*+>]|\d+[.)]|#+)?\s*(?:\[[ xX]\])?\s*(?:\d{1,2}:\d{2})?\s*"
)  # list marker, box, HH:MM
_LAST_WORD = re.compile(r"[a-z0-9_'-]+$")
_CONJUNCTIONS = {
    "and",
    "but",
    "so",
    "then",
    "also",
    "or",
    "plus",
    "yes",
    "no",
    "ok",
    "okay",
    "oh",
    "well",
    "hmm",
    "yeah",
    "note",
}
_PARTICLES = set("吧啊呀呢哦嘛啦喔，。；：！？、,.;:!?…～~ \t）)」』】")


def _is_word_char(ch: str) -> bool:
    if ch.isascii():
        return ch.isalnum() or ch in "_-"
    return ch.isalpha() and not is_cjk(ch)  # accented Latin letters join words, CJK does not


def _previous(low: str, pos: int) -> tuple[str, bool]:
    """(previous word, whether the cue starts a clause)."""
    before = low[:pos].rstrip().rstrip(_OPENERS).rstrip()
    if not before or before[-1] in _CLAUSE_END or _LEAD.fullmatch(before):
        return "", True
    match = _LAST_WORD.search(before)
    if not match:
        return "", True  # a switch from Chinese to English starts a clause too
    word = match.group(0).strip("'-")
    return word, word in _CONJUNCTIONS


def _latin_fits(cue: Cue, low: str, pos: int) -> bool:
    end = pos + len(cue.text)
    if pos > 0 and _is_word_char(low[pos - 1]):
        return False
    if end < len(low) and _is_word_char(low[end]):
        return False
    word, clause_start = _previous(low, pos)
    if word in cue.before_not:
        return False
    if cue.after_not:
        rest = low[end:].lstrip(" \t,")
        for phrase in cue.after_not:
            if rest.startswith(phrase) and (
                len(rest) == len(phrase) or not _is_word_char(rest[len(phrase)])
            ):
                return False
    if cue.rule == "again" and (
        _redo_before(low, pos) or _object_again(low, pos) or _generic_again(low, pos)
    ):
        return False
    if cue.rule == "own" and not _FIRST_PERSON.search(_clause_before(low, pos)):
        return False
    if cue.text in ("always", "never") and word in _MODALS and not _person_before(low, pos):
        return False  # "Aliases should always be formatted…" is a manual's rule, not the user's
    return not cue.clause_start or clause_start or word in cue.before_ok


_MODALS = {"should", "must", "will", "shall", "can", "may", "would", "could"}
_PERSONS = {"i", "we", "you", "u", "please"}
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|we|we're|we've|my|me|our|us)\b")


def _clause_before(low: str, pos: int) -> str:
    clause = _CLAUSE_WORDS.search(low[:pos])  # always matches: the run may be empty
    return clause.group(0) if clause else ""


def _person_before(low: str, pos: int) -> bool:
    """Whether the modal before a cue has a person as subject ("you should always ask", "I must
    never"): the user's rule for themselves or the assistant, not a manual's."""
    words = clause_words(_clause_before(low, pos))
    return len(words) >= 2 and words[-2] in _PERSONS


_GENERIC = re.compile(
    r"\b(?:must|can|cannot|can't|should|will|may|might|need to|needs to|when|whenever|if)\b"
    r"|\b(?:be|been|being|is|are|gets?)\s+\w+(?:ed|en)\b"
)


def _generic_again(low: str, pos: int) -> bool:
    """ "must be trusted again", "when a statement changes again", "is scanned again": a rule or a
    passive describes how things work, not something that keeps happening to the user — unless
    the user is its subject ("when I am tired I skip lunch again")."""
    clause = _clause_before(low, pos)
    return bool(_GENERIC.search(clause)) and not _FIRST_PERSON.search(clause)


def _object_again(low: str, pos: int) -> bool:
    """ "display it again", "you can show them again": an action done once more, the way manuals
    speak; with a first-person subject ("I broke it again") it is the user's pattern."""
    clause = _clause_before(low, pos)
    words = clause_words(clause)
    return (
        bool(words)
        and words[-1] in ("it", "them", "this", "that")
        and not _FIRST_PERSON.search(clause)
    )


_REDO = {
    "try",
    "tried",
    "trying",
    "retry",
    "read",
    "reread",
    "rerun",
    "restart",
    "watch",
    "watched",
    "listen",
    "check",
    "checked",
}
_CLAUSE_WORDS = re.compile(r"[^.,;:!?()\"“”—–]*$")


def _redo_before(low: str, pos: int) -> bool:
    """A verb of doing-once-more a few words back: "read the chapter again" repeats an action
    on purpose, "the build broke again" is the pattern."""
    clause = _clause_before(low, pos)
    return any(word in _REDO for word in clause_words(clause)[-4:])


_YOU_NOT_AFTER = (
    "名",
    "称",
    "及",
    "不是",
    "何必",
    "何尝",
    "怎样",
    "怎么样",
    "如何",
    "能怎样",
    "有什么",
    "何妨",
)
_ZH_CLAUSE_END = set("，。；：！？、,.;:!?\n")


def _you_fits(low: str, pos: int) -> bool:
    """又 as "again" (又熬夜了), not as "and / also" (又快又好, 既…又…, 而又), not 又名 / 又称,
    not the rhetorical 又不是 / 又如何, not a fraction (一又二分之一)."""
    if low.startswith(_YOU_NOT_AFTER, pos + 1) or "分之" in low[pos + 1 : pos + 5]:
        return False
    if pos > 0 and low[pos - 1] == "而":
        return False
    start = pos
    while start > 0 and low[start - 1] not in _ZH_CLAUSE_END:
        start -= 1
    end = pos + 1
    while end < len(low) and low[end] not in _ZH_CLAUSE_END:
        end += 1
    if "又" in low[max(start, pos - 5) : pos] or "又" in low[pos + 1 : min(end, pos + 6)]:
        return False  # 又X又Y
    return "既" not in low[start:pos]


def _cjk_fits(cue: Cue, low: str, pos: int) -> bool:
    end = pos + len(cue.text)
    # a tuple to endswith/startswith tests each string in C, as any() over them did in Python
    if low.endswith(cue.before_not, 0, pos) or low.startswith(cue.after_not, end):
        return False
    if cue.alone and end < len(low) and low[end] not in _PARTICLES:
        return False
    if cue.rule == "you":
        return _you_fits(low, pos)
    if cue.rule == "de" and low.startswith("的", end):
        return "是" in _clause_after(low, end)
    if cue.cls == "recurring" and low.startswith(("会", "能", "将", "可以"), end):
        # "插件每次都会自动同步": what a program does each time, not the user's pattern
        start = pos
        while start > 0 and low[start - 1] not in _ZH_CLAUSE_END:
            start -= 1
        return "我" in low[start:pos]
    return True


def _clause_after(low: str, end: int) -> str:
    stop = end
    while stop < len(low) and low[stop] not in _ZH_CLAUSE_END:
        stop += 1
    return low[end:stop]


def find_cue(low: str, cues) -> tuple[Cue, int] | None:
    """The first cue, in priority order, that occurs in `low` (a masked, folded line) in a
    context that fits it, with its offset."""
    for cue in cues:
        pos = low.find(cue.text)
        while pos >= 0:
            if _latin_fits(cue, low, pos) if cue.latin else _cjk_fits(cue, low, pos):
                return cue, pos
            pos = low.find(cue.text, pos + 1)
    return None
