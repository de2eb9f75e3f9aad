"""What every transcript format gives: `Session`s of `Turn`s, and the `TranscriptFormat` each
agent's module provides (`formats.py` holds them in one table, as pre-commit's `all_languages.py`
holds its languages).

A format keeps what the user said and the agent's own replies, nothing else: tool calls and
results, thinking, sidechains, injected instructions and images are dropped by the format's module,
which is the one place that knows how its agent writes them. Text cmem itself put before the model
is dropped here, for every format (`user_turn`): its SessionStart memory and any hook's
`<hook_context>` taken out of a message, a pass's prompt never a turn — and a session that opens
with one is cmem's own model call, never captured (`Session.skip`). What is left is plain text; how
much of it reaches a note (cut, redacted) is `note.py`'s business.

Reading is tolerant in the way an agent still writing its file needs: a last line without its line
end that does not parse is left for the next capture (`Source.complete_bytes` stops before it), a
broken line elsewhere is skipped and counted. A file that no format recognises is one
`TranscriptError` naming it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal, Protocol

from cmem.errors import CmemError
from cmem.text.own_text import is_pass_prompt, without_cmem_context

Role = Literal["user", "agent"]


class TranscriptError(CmemError):
    """A file that is not a transcript cmem can read; the message names it."""


@dataclass(frozen=True)
class Turn:
    """One thing said: by the user, or the agent's reply (its text only). `key` is the turn's
    identity in its transcript, the same each time the file is read (a record's own id, else its
    time and text), so a turn read twice is written once. `seq`: its order in the session as read.
    `tools`: the tools an agent turn called, by name, once per call (for the Stop hook's rule).
    `aliases`: the identities it had before, when an agent writes one message twice."""

    seq: int
    role: Role
    time: datetime | None
    text: str
    key: str
    tools: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()  # other identities the same turn has had (a queued message's)

    @property
    def keys(self) -> tuple[str, ...]:
        return (self.key, *self.aliases)


PASS_SESSION = "it is a model call cmem made for a pass (its first message is the pass's prompt)"


@dataclass
class Session:
    agent: str  # claude-code | codex | gemini | generic
    session_id: str
    cwd: str | None
    turns: list[Turn] = field(default_factory=list)
    transcript: str = ""  # the file it was read from
    parent_id: str | None = None  # the session it goes on from, when its agent records one
    skip: str | None = None  # why it is not captured at all: not the user speaking

    @property
    def started(self) -> datetime | None:
        times = [turn.time for turn in self.turns if turn.time is not None]
        return min(times) if times else None

    @property
    def ended(self) -> datetime | None:
        times = [turn.time for turn in self.turns if turn.time is not None]
        return max(times) if times else None

    @property
    def user_turns(self) -> list[Turn]:
        return [turn for turn in self.turns if turn.role == "user"]


@dataclass
class Source:
    """One transcript file as read: its text (decoded leniently), and for JSONL its records."""

    path: Path
    text: str
    records: list[dict] = field(default_factory=list)  # JSONL objects, in file order
    broken_lines: int = 0  # lines that were not JSON objects (skipped)
    complete_bytes: int = 0  # bytes up to the last whole line read
    jsonl: bool = False  # every non-blank line (but a half-written last one) is a JSON object
    whole_json: object = None  # the file as one JSON value, when it is one

    @property
    def display(self) -> str:
        return display_path(self.path)


class TranscriptFormat(Protocol):
    """An agent's transcript format: a module with these three names (`formats.py`)."""

    NAME: str

    def detect(self, source: Source) -> bool: ...

    def parse(self, source: Source) -> list[Session]: ...


def display_path(path: Path | str) -> str:
    """A path as a message names it: under the home folder as `~/…`."""
    import os

    home = os.path.expanduser("~")
    text = str(path)
    inside = home not in ("", "/") and text.startswith(home + os.sep)
    return "~" + text[len(home) :] if inside else text


# --- reading ------------------------------------------------------------------------------


def read_source(path: Path, data: bytes | None = None) -> Source:
    """The file as text and, when it is JSON Lines, its records. A final line with no line end
    that does not parse is an agent still writing: it is not read, and `complete_bytes` ends
    before it, so the next capture reads it whole."""
    if data is None:
        from cmem.regular_files import read_regular

        data = read_regular(path)  # a FIFO is refused, never waited on
    text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
    source = Source(path, text, complete_bytes=len(data))
    stripped = text.strip()
    try:  # a JSON document (Gemini's session files), or a one-line JSONL file
        whole = json.loads(stripped) if stripped[:1] in ("{", "[") else None
    except ValueError:
        whole = None
    source.whole_json = whole
    if isinstance(whole, list) or (isinstance(whole, dict) and "\n" in stripped):
        return source  # one document over many lines: not JSON Lines
    lines = data.split(b"\n")
    offset = 0
    objects = 0
    for index, raw in enumerate(lines):
        last = index == len(lines) - 1
        end = offset + len(raw) + (0 if last else 1)
        line = raw.decode("utf-8", errors="replace").strip().removeprefix("\ufeff")
        if not line:
            offset = end
            continue
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict):
            source.records.append(record)
            objects += 1
        elif last:
            source.complete_bytes = offset  # half-written: read next time
            break
        else:
            source.broken_lines += 1
        offset = end
    source.jsonl = objects > 0 and objects >= source.broken_lines
    return source


def parse_time(value: object) -> datetime | None:
    """An ISO 8601 time (a `Z` suffix too), or epoch seconds/milliseconds; None otherwise.
    Naive times are taken as UTC, as agents write them."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = value / 1000 if value > 1e11 else value
        try:
            return datetime.fromtimestamp(seconds, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip().replace("Z", "+00:00").replace("z", "+00:00")
    match = re.match(r"^(.*T\d\d:\d\d:\d\d)(\.\d+)?(.*)$", text)
    if match and match.group(2):  # fromisoformat (3.10) wants 3 or 6 fraction digits
        text = match.group(1) + (match.group(2) + "000000")[:7] + match.group(3)
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        return None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)


def text_key(time: datetime | None, text: str) -> str:
    """A turn's identity when its record has no id: its time and a digest of its text."""
    import hashlib

    stamp = time.isoformat() if time else "-"
    return f"{stamp}:{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:16]}"


def remove_tagged(text: str, tags: tuple[str, ...]) -> str:
    """`text` without the `<tag>…</tag>` blocks an agent injects into the user's message (an
    unclosed one runs to the end: it is never the user's)."""
    for tag in tags:
        if f"<{tag}" not in text:
            continue
        text = re.sub(
            rf"<{re.escape(tag)}(?:\s[^>]*)?>.*?(?:</{re.escape(tag)}>|\Z)", "", text, flags=re.S
        )
    return text


def tidy(text: str) -> str:
    """Line ends made `\\n`, trailing spaces off each line, runs of blank lines one."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    out: list[str] = []
    for line in lines:
        if not line and (not out or not out[-1]):
            continue
        out.append(line)
    while out and not out[-1]:
        out.pop()
    return "\n".join(out)


def agent_turn(turns: list[Turn], text: str, tools: list[str], time, key: str) -> None:
    """Append an agent reply, merging it into the previous turn when that was the agent's too:
    an agent writes one reply as several records (text, a tool call, more text)."""
    if turns and turns[-1].role == "agent":
        last = turns[-1]
        joined = tidy("\n\n".join(part for part in (last.text, text) if part))
        turns[-1] = Turn(
            last.seq, "agent", last.time or time, joined, last.key, last.tools + tuple(tools)
        )
        return
    turns.append(Turn(len(turns) + 1, "agent", time, tidy(text), key, tuple(tools)))


def own_words(text: str) -> str:
    """A user message without the text cmem or a hook put in it: cmem's memory, `<hook_context>`."""
    return tidy(without_cmem_context(remove_tagged(text, ("hook_context",))))


def user_turn(session: Session, text: str, time, key: str, aliases: tuple[str, ...] = ()) -> None:
    """Append what the user said, once cmem's own text is out of it. A pass's prompt is never a
    turn; when it is the first thing said, the session is a pass's own model call."""
    words = own_words(text)
    if not words:
        return
    if is_pass_prompt(words):
        if session.skip is None and not any(turn.role == "user" for turn in session.turns):
            session.skip = PASS_SESSION
        return
    session.turns.append(Turn(len(session.turns) + 1, "user", time, words, key, (), aliases))


def without_turns(turns: list[Turn], keys: set[str]) -> list[Turn]:
    """`turns` less those whose key is in `keys`, numbered again; agent turns left side by side
    are one reply again."""
    kept: list[Turn] = []
    for turn in turns:
        if turn.key in keys:
            continue
        if turn.role == "agent" and kept and kept[-1].role == "agent":
            agent_turn(kept, turn.text, list(turn.tools), turn.time, turn.key)
            continue
        kept.append(
            Turn(len(kept) + 1, turn.role, turn.time, turn.text, turn.key, turn.tools, turn.aliases)
        )
    return kept
