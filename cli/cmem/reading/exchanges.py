"""A conversation's exchanges, as recall searches them: each turn with the turn it answers.

In a dialogue the fact is often in a reply whose own words say little ("5 years already!"), while
the question it answers holds the words someone will search with ("How long have you been
married?"). So recall indexes a reply's lines with the turn they answer (a field of their own), and
a question that the next turn answers with a lower weight than its reply: the exchange is one unit
of search, and the line shown is still the one that holds the fact.

Three shapes are read as conversations:
- a session note (`sessions/note.py`): a user turn answers the agent's text quoted before it;
- `Q:` / `A:` lines (also `Question:` / `Answer:`), one pair is enough;
- lines that start with a speaker's name (`Caroline: …`, `**Mel**: …`, `[10:02] Bob: …`) where at
  least two speakers take turns at least twice: a note of `Date:` and `Tags:` lines is no dialogue.
"""

from __future__ import annotations

import itertools
import re

from cmem.sessions.note import AGENT_LEAD, ANCHOR, USER_HEADER

CONTEXT_CHARS = 300  # of the turn answered: its end, where a question usually stands

_SPEAKER = re.compile(
    r"^\s*(?:[-*+]\s+)?(?:\[[^\]\n]{1,20}\]\s*)?(?:\*\*|__)?"
    r"(?P<name>[^\W\d_][\w.' -]{0,24}?|[\u3400-\u9fff]{1,6})"
    r"(?:\*\*|__)?\s*[:：](?:\*\*|__)?\s+(?P<text>\S.*)$"
)
_QA = {"q": "q", "question": "q", "a": "a", "answer": "a", "问": "q", "答": "a"}
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])")
MIN_TURNS = 4
# labels a note's lines start with that are no speakers ("Note: …", "Due: …")
_LABELS = frozenset(
    "note notes todo tags tag date status source summary example warning tip update link url title "
    "time location owner due done result results step idea edit ps nb why what how when where who "
    "question answer".split()
)


class Turn:
    __slots__ = ("speaker", "lines", "text")

    def __init__(self, speaker: str, line: int, text: str):
        self.speaker, self.lines, self.text = speaker, [line], text


def exchange_fields(lines: list[str], first: int = 1) -> dict[int, tuple[str, int]]:
    """For each line of a conversation, by its 1-based number: (the text of the turn it answers,
    or "" for none; the first line of the next turn when that turn answers its questions, else
    0). Empty for a note that is no conversation. `lines` are the note's lines, `first` the
    body's first line."""
    if any(USER_HEADER.match(line) for line in lines[first - 1 :]):
        return _session_fields(lines, first)
    turns = _speaker_turns(lines, first)
    if not turns:
        return {}
    fields: dict[int, tuple[str, int]] = {}
    for i, turn in enumerate(turns):
        before = turns[i - 1] if i else None
        after = turns[i + 1] if i + 1 < len(turns) else None
        answers = before.text[-CONTEXT_CHARS:] if before and before.speaker != turn.speaker else ""
        replied = after and after.speaker != turn.speaker and _has_question(turn.text)
        for line_no in turn.lines:
            fields[line_no] = (answers, after.lines[0] if replied and after else 0)
    return fields


def _speaker_turns(lines: list[str], first: int) -> list[Turn]:
    """The turns of a note whose lines start with speakers' names, or [] if it is no dialogue."""
    turns: list[Turn] = []
    current: Turn | None = None
    for line_no in range(first, len(lines) + 1):
        line = lines[line_no - 1]
        found = _SPEAKER.match(line)
        name = found.group("name").strip().lower() if found else ""
        if found and (name in _QA or name not in _LABELS):
            current = Turn(_QA.get(name, name), line_no, found.group("text").strip())
            turns.append(current)
        elif current is not None and line.strip() and not line.lstrip().startswith("#"):
            current.lines.append(line_no)  # a turn of several lines
            current.text += " " + line.strip()
        else:
            current = None
    speakers = [turn.speaker for turn in turns]
    if {"q", "a"} <= set(speakers):
        return turns
    changes = sum(a != b for a, b in itertools.pairwise(speakers))
    counts = sorted((speakers.count(name) for name in set(speakers)), reverse=True)
    # two speakers who each speak twice, taking turns (a group chat less strictly than an
    # interview): the keys of a metadata block do not repeat
    if len(counts) < 2 or counts[1] < 2 or len(turns) < MIN_TURNS or changes * 4 < len(turns):
        return []
    return turns


def _has_question(text: str) -> bool:
    return "?" in text or "？" in text


def split_questions(text: str) -> tuple[str, str]:
    """(the sentences that are no question, the questions) of a turn's line."""
    said: list[str] = []
    asked: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        (asked if sentence.rstrip().endswith(("?", "？")) else said).append(sentence)
    return " ".join(said), " ".join(asked)


def _session_fields(lines: list[str], first: int) -> dict[int, tuple[str, int]]:
    """A session note: each user turn's lines answer the agent text quoted before the turn."""
    fields: dict[int, tuple[str, int]] = {}
    agent: list[str] = []
    answers = ""
    quoting = in_fence = False
    in_turn = False
    for line_no in range(first, len(lines) + 1):
        line = lines[line_no - 1]
        stripped = line.strip()
        if AGENT_LEAD.match(stripped):
            quoting, agent, in_turn = True, [], False
        elif quoting and stripped.startswith(("~~~", "```")):
            in_fence = not in_fence
            quoting = in_fence
        elif quoting and in_fence:
            agent.append(stripped)
        elif USER_HEADER.match(stripped):
            answers = " ".join(agent)[-CONTEXT_CHARS:]
            agent, in_turn = [], True
        elif ANCHOR.match(stripped):
            in_turn, answers = False, ""
        elif in_turn and stripped and answers:
            fields[line_no] = (answers, 0)
    return fields
