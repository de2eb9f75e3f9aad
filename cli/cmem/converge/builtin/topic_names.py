"""The name of a topic file the builtin engine creates (docs/design.md §4, §5 rule 12, issues 35 and 41).

A topic file is named by what it is about: the line's subject ("Shell"), else the note's first
specific tag or a link to no note, else the noun phrase the line is about (`subject_phrase`:
"for the prototypes", "the hospital", what "I decided to learn" names) — never the line's first
words, which are a clause ("m-dropping-fte" from "I'm dropping FTE…", "顺便-tag-的时候自动发"):
a line with no such name is filed under an existing topic it shares words with, or waits for a
model. Never a link to a note — a daily note's template links the days around it, and
`[[2026-12-04]]` is no topic — and never as a note is named (a source `[[name]]` would no longer
say which one it means), as a date, a year or a number, or like an existing memory file but for
case, Unicode form or look-alike letters (that file is the one to write to).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from cmem.converge.builtin.line_words import slug
from cmem.converge.validator.allowed_paths import skeleton
from cmem.text.folding import fold_case
from cmem.text.scripts import HAN
from cmem.text.terms import EN_KEY_STOP, EN_STOP
from cmem.text.words import capitalised_names, phrase_tokens

# Only digits and separators: a date (2026-12-04), a month, a year, a number.
_NO_WORDS = re.compile(r"[\d\W_]*")


def names_a_topic(name: str) -> bool:
    """Whether a file name (a slug) says what a topic is: it holds a letter."""
    return bool(name) and not _NO_WORDS.fullmatch(name)


def topic_name(
    titles: Iterable[str],
    folder: str,
    existing: dict[str, str],
    is_note_name: Callable[[str], bool],
    usable: Callable[[str], bool],
) -> tuple[str, str] | None:
    """(path, title) of the topic file for the first title that makes a good name: an existing
    file of that name (or of a name looking the same) when it is `usable`, else a new path named
    like no note and no memory file; None when no title names a topic. `existing` maps each
    memory file's skeleton to its path."""
    titles = list(titles)
    for title in titles:
        name = slug(title)
        if not names_a_topic(name) or is_note_name(name) or is_note_name(title):
            continue
        rel = f"{folder}/{name}.md"
        same = existing.get(skeleton(rel))
        if same is not None:
            if usable(same):
                return same, title
            continue
        return rel, title
    # every title names a note, a date or an unusable file: number the first good one
    base = next((slug(t) for t in titles if names_a_topic(slug(t))), None)
    if base is None:
        return None
    title = base.replace("-", " ")
    for number in range(2, 1000):
        rel = f"{folder}/{base}-{number}.md"
        if skeleton(rel) not in existing and not is_note_name(f"{base}-{number}"):
            return rel, title
    raise AssertionError("no free topic name")  # a thousand taken names: not a real vault


# --- the noun phrase a line is about --------------------------------------------------------

_TIME_WORDS = frozenset(
    "morning mornings evening evenings night nights weekend weekends week weeks month months "
    "year years today tonight tomorrow now monday mondays tuesday tuesdays wednesday wednesdays "
    "thursday thursdays friday fridays saturday saturdays sunday sundays january february march "
    "april may june july august september october november december winter summer spring autumn "
    "while moment end start beginning rest lot bit".split()
)
_PREPOSITIONS = frozenset(
    "to for from on at in with of by as into onto over under after before about via than "
    "because since until without per during instead and or but so then when while".split()
)
_LEADING = frozenset(
    "i we i'm i'll i've i'd we're we'll we've we'd will would shall should can could may might "
    "must am are is was were be been have has had do does did going gonna just finally now also "
    "really probably definitely actually still already".split()
)
# verbs whose next word names the thing chosen ("switched to decaf coffee", "go with Figma")
_CHOOSING = frozenset("to with on for".split())
_DETERMINERS = frozenset("my our the a an this that these those some".split())


def _content(token: str) -> bool:
    """A word a topic may be named by: no function word, no time, no contraction, no number."""
    low = fold_case(token).rstrip(".")
    return (
        token[:1].isalpha()
        and "'" not in token
        and "’" not in token
        and len(low) >= 2
        and low not in EN_STOP
        and low not in EN_KEY_STOP
        and low not in _TIME_WORDS
        and low not in _PREPOSITIONS
    )


def _phrase(tokens: list[str], start: int, object_of_verb: bool = False) -> str:
    """Up to three content words from `start` (after a determiner), ended by any other word."""
    while start < len(tokens) and fold_case(tokens[start]) in _DETERMINERS:
        start += 1
    words: list[str] = []
    for token in tokens[start : start + 3]:
        # a function word ends it, and so does a name after common words ("the side project
        # Ledger" is about the side project); a word in -ing first is a verb ("checking Slack")
        if not _content(token) or (words and token[:1].isupper() and words[-1][:1].islower()):
            break
        if object_of_verb and not words and fold_case(token).endswith("ing") and len(token) > 5:
            continue
        words.append(token.rstrip("."))
    return " ".join(words)


def _en_subject(text: str) -> str:
    tokens = phrase_tokens(text)
    low = [fold_case(t) for t in tokens]
    # what the line is for: "for the prototypes", "as my shell"
    for index, word in enumerate(low[:-1]):
        if word in ("for", "as") and low[index + 1] in _DETERMINERS:
            found = _phrase(tokens, index + 1)
            if found:
                return found
    # a thing it names with a possessive or an article: "the hospital", "my blog"
    for index, word in enumerate(low[:-1]):
        if word in ("my", "our", "the"):
            found = _phrase(tokens, index)
            if found:
                return found
    # the object of the line's verb: "I decided to learn Rust", "I switched to decaf coffee"
    index = 0
    while index < len(low) and (low[index] in _LEADING or low[index] == "decided"):
        index += 2 if index + 1 < len(low) and low[index + 1] == "to" else 1
    index += 1  # the verb
    if index < len(low) and low[index] in _CHOOSING:
        index += 1
    found = _phrase(tokens, index, object_of_verb=True)
    if found:
        return found
    # a name anywhere but at the line's start: "Syncthing", "FTE"
    for token in tokens[1:]:
        if token[:1].isupper() and _content(token):
            return token.rstrip(".")
    return ""


_ZH_STOP_RUN = "的了着过吗呢吧啊和跟与在把被给让就都也还又再很太"
_ZH_USE_FOR = re.compile(
    rf"用\s*[^，,。；;\s]+?\s*来?(?:写|做|管理|开发|记录?|画|剪|学|部署|测试|整理|同步|备份|跑)([{HAN}]{{2,4}})"
)
_ZH_COUNTED = re.compile(
    rf"[一二两三四五六七八九十几\d]+\s*[个家道次份本条篇位台门节场件张款种项]([{HAN}]+)"
)
_ZH_OBJECT = re.compile(rf"(?:看|读|学|买|刷|练|听|用|写|做|养|戒|换)([{HAN}]+)")


def _zh_subject(text: str) -> str:
    for pattern in (_ZH_USE_FOR, _ZH_COUNTED, _ZH_OBJECT):
        for match in pattern.finditer(text):
            run = match.group(1)
            cut = next((i for i, ch in enumerate(run) if ch in _ZH_STOP_RUN), len(run))
            # two to four characters up to a particle or the clause's end: one word, not a clause
            if 2 <= cut <= 4 and (
                cut < len(run)
                or match.end() == len(text.rstrip("。！!"))
                or text[match.end() : match.end() + 1] in "，,。；;！!？? "
            ):
                return run[:cut]
    names = capitalised_names(text)
    return names[0] if names else ""


def subject_phrase(text: str) -> str:
    """The noun phrase a decision is about, to name a new topic file by ("" when none is
    found): what it is for ("for the prototypes", "用 Tailwind 写样式" → 样式), a thing it names
    with an article or a possessive ("the hospital"), the object of its verb ("learn Rust",
    "刷两道算法题" → 算法题), else a name in it ("Syncthing"). Never a clause: a contraction, a
    verb or a run of Chinese longer than a word is no name."""
    if re.search(rf"[{HAN}]", text):
        return _zh_subject(text)
    return _en_subject(text)
