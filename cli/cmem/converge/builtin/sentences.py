"""One sentence of a signal line, for the builtin engine (docs/design.md §4, issue 35): a statement of memory
is a sentence a person keeps, not a paragraph of a message to a friend.

- A line of several sentences becomes its first sentence that holds the cue ("Thanks for the tips.
  I prefer mornings, since afternoons are packed. Say hi to Tom!" → "I prefer mornings, since
  afternoons are packed."); the other sentences hold no cue, so they wait for a model.
- A sentence longer than a statement should be is left for a model, with the reason: the engine
  cannot shorten it without choosing which words matter.
- Cue words come off only where taking them leaves a sentence (`drop_at_edges`): at its start, at
  its end, or before a clause's punctuation ("Skipped Dutch again: I plan …" → "Skipped Dutch: I
  plan …"); one inside a clause ("… and every time it fails") stays, so no sentence is garbled.
"""

from __future__ import annotations

import re

from cmem.text.folding import fold
from cmem.text.scripts import cjk_count

# After . ! ? followed by a space (not inside 3.13, v2.0 or crdt.tech), or after 。！？ at once.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)]*\s+(?=\S)|(?<=[。！？])[”’）」』]*")
# A statement is at most this long (characters; a CJK character counts two, as it says more).
MAX_STATEMENT = 200


def sentences(text: str) -> list[str]:
    parts = [part.strip() for part in _SENTENCE_END.split(text)]
    return [part for part in parts if part]


def width(text: str) -> int:
    """The length a statement is measured by: a CJK character counts two."""
    return len(text) + cjk_count(text)


def cue_sentence(text: str, cue: str) -> str:
    """The first sentence of `text` holding `cue` (folded), else its first sentence; `text`
    itself when it is one sentence."""
    parts = sentences(text)
    if len(parts) <= 1:
        return text
    wanted = fold(cue).strip()
    for part in parts:
        if wanted and wanted in fold(part):
            return part
    return parts[0]


def too_long(text: str) -> str:
    """Why a statement this long is left for a model, or ""."""
    if width(text) <= MAX_STATEMENT:
        return ""
    return (
        f"a sentence of {len(text)} characters is longer than a statement should be; the "
        "builtin engine never shortens one, so it waits for a model"
    )


_CLAUSE_PUNCTUATION = ",;:，；："
_OPENS_CLAUSE = re.compile(r"\s*(?:every|each|whenever)\b", re.IGNORECASE)
_SPACE_BEFORE = re.compile(r"\s+([,.;:!?，。；：！？)）\]】])")
_OPEN_SPACE = re.compile(r"([(（\[【])\s+")


def tidy(text: str) -> str:
    """Spaces as a sentence has them once words were taken out: none before punctuation, one
    between words, no punctuation left hanging at either end."""
    text = re.sub(r"\s+", " ", text)
    text = _SPACE_BEFORE.sub(r"\1", text)
    text = _OPEN_SPACE.sub(r"\1", text)
    text = re.sub(r"([,;:，；：])(?:\s*[,;:，；：])+", r"\1", text)
    text = re.sub(r"^[\s,;:，；：]+", "", text)
    return re.sub(r"(?:[\s,;:，；：]|\s[—–-])+$", "", text).strip()


def drop_at_edges(text: str, cue: re.Pattern) -> str:
    """`text` without the matches of `cue` that stand at its start, at its end or before a
    clause's punctuation; a match inside a clause stays. Chinese adverbs (又, 总是) stand
    anywhere: a Chinese sentence reads the same without them."""
    for _ in range(4):  # "Forgot it again, as usual": each pass takes what the last one exposed
        kept = []
        position, removed = 0, False
        for match in cue.finditer(text):
            before = text[position : match.start()]
            after = text[match.end() :]
            at_start = not text[: match.start()].strip(" \t,;:，；：")
            at_end = not after.strip(" \t.!?。！？,;:，；：")
            at_clause = (
                after.lstrip(" ")[:1] in _CLAUSE_PUNCTUATION
                or match.group(0).rstrip()[-1:] in _CLAUSE_PUNCTUATION
            )
            chinese = not match.group(0).strip(" ，,；;").isascii()
            # "Every time I deploy, it breaks": a cue that opens a clause is no adverb there
            at_start = at_start and (at_clause or not _OPENS_CLAUSE.match(match.group(0)))
            kept.append(before)
            if at_start or at_end or at_clause or chinese:
                removed = True
            else:
                kept.append(match.group(0))
            position = match.end()
        kept.append(text[position:])
        dropped = tidy("".join(kept)) if removed else text
        if dropped == text or not dropped:
            break
        text = dropped
    return text
