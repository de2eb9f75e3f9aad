"""A session note (docs/design.md §14): how one session is written into the vault, and read back.

```
---
agent: "claude-code"
session: "7f3c2a9e-…"
project: "/home/me/tidepool"
started: "2026-11-30T14:02:11+08:00"
ended: "2026-11-30T15:10:40+08:00"
turns: 2
transcript: "/home/me/.claude/projects/-home-me-tidepool/7f3c2a9e-….jsonl"
---
# claude-code session · tidepool · 2026-11-30

**user · t1** · 2026-11-30 14:02 <!-- turn 3f2a9c1e7b0d4a61 -->
can you set up the test runner?

^t1

agent, before t2 (context, not a source):
~~~text
…I'll install vitest with npm. Shall I go ahead?
~~~

**user · t2** · 2026-11-30 14:03 <!-- turn 9b1d… -->
no, we use pnpm here

^t2
```

Each user turn is a header line with its number and time, the user's words as plain lines (a
scan reads them as the user's voice, which it does not do for quotes), and its block anchor
`^tN` on a line of its own after it, so `[[note#^t2]]` opens the turn in Obsidian. N is the
turn's place among the session's user turns, never renumbered: a resumed session's turns go on
from the last one. The HTML comment is the turn's identity in its transcript (two, when its agent
wrote it twice under different ids: queued, then recorded), which is how a turn read again is
recognised (hidden in Obsidian, never read as words by a scan). What the user
typed cannot break the note's structure: an unclosed fence is closed at the turn's end, an HTML
comment opener and a line that would pass for an anchor are escaped.
The agent's text is quoted only before a short user turn that answers it, cut to its end, in a
fence (a scan never reads fenced lines as the user's words), and has no anchor: it is context,
never a source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from cmem.sessions.transcript import Session, Turn
from cmem.text.secrets import redact_secrets

SHORT_TURN_CHARS = 300  # a user turn this short that follows the agent gets the agent's text
AGENT_EXCERPT_CHARS = 400
MAX_TURN_CHARS = 4000  # default of sessions.max_turn_chars

ANCHOR = re.compile(r"^\^t(\d+)\s*$")
USER_HEADER = re.compile(
    r"^\*\*user · t(\d+)\*\* · [^\n]*?<!-- turn ([0-9a-f]+(?: [0-9a-f]+)*) -->\s*$"
)
AGENT_LEAD = re.compile(r"^agent, before t\d+ \(context, not a source\):\s*$")
_UNSAFE_NAME = re.compile(r"[\\/:*?\"<>|#^\[\]\x00-\x1f]+")


@dataclass
class Rendered:
    text: str
    redacted: int = 0
    cut: int = 0  # characters of pasted text left out


@dataclass
class SessionNote:
    """What a written session note holds, as the capture and the validator need it."""

    frontmatter: dict = field(default_factory=dict)
    keys: set[str] = field(default_factory=set)  # the transcript identities of its user turns
    last_turn: int = 0  # the highest ^tN
    user_anchors: set[int] = field(default_factory=set)  # anchors of user turns
    other_anchors: set[int] = field(default_factory=set)  # ^tN after anything else
    words: list[str] = field(default_factory=list)  # each user turn's words, in the note's order

    @property
    def is_session(self) -> bool:
        return "session" in self.frontmatter and "agent" in self.frontmatter


# --- names --------------------------------------------------------------------------------


def project_name(cwd: str | None) -> str:
    """The last folder of the session's working folder, as a note name may hold it."""
    if not cwd:
        return "no-project"
    base = cwd.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1] or "root"
    cleaned = _UNSAFE_NAME.sub("-", base).strip(" .-") or "project"
    return cleaned[:40]


def _alnum(session_id: str) -> str:
    return re.sub(r"[^0-9A-Za-z]", "", session_id).lower() or "0000"


def short_id(session_id: str, length: int = 4) -> str:
    """The end of a session id: every agent's ids are random there (a UUIDv7's start is its time,
    the same for every session of a day)."""
    return _alnum(session_id)[-length:]


def base_name(session: Session, started: datetime, length: int = 4) -> str:
    """`2026-11-30 claude-code tidepool 9abc`: date, agent, project, short id."""
    date = started.strftime("%Y-%m-%d")
    return (
        f"{date} {session.agent} {project_name(session.cwd)} {short_id(session.session_id, length)}"
    )


def may_be_note_of(name: str, agent: str, session_id: str) -> bool:
    """Whether a note's file name can be this session's: its agent, and its short id an end of
    the session id (or, as older cmem named notes, its start), a number after it aside."""
    stem = name.removesuffix(".md")
    if f" {agent} " not in stem:
        return False
    words = stem.split(" ")
    if len(words) > 4 and words[-1].isdigit() and len(words[-1]) < 4:
        words.pop()  # `… 9abc 2`: a second note of the session
    short, alnum = words[-1].lower(), _alnum(session_id)
    return len(short) >= 4 and (alnum.endswith(short) or alnum.startswith(short))


# --- writing ------------------------------------------------------------------------------


def _q(value: str | None) -> str:
    from cmem.vault.yaml_reader import quoted_scalar

    return "null" if value is None else quoted_scalar(value)


def _time(value: datetime | None) -> str | None:
    return value.astimezone().isoformat(timespec="seconds") if value else None


def render_header(
    session: Session,
    title_date: datetime,
    turns: int,
    started: datetime | None,
    ended: datetime | None,
    continues: str | None = None,
) -> str:
    lines = [
        "---",
        f"agent: {_q(session.agent)}",
        f"session: {_q(session.session_id)}",
        f"project: {_q(session.cwd)}" if session.cwd else "project: null",
        f"started: {_q(_time(started))}" if started else "started: null",
        f"ended: {_q(_time(ended))}" if ended else "ended: null",
        f"turns: {turns}",
        f"transcript: {_q(session.transcript)}",
    ]
    if continues:
        lines.append(f"continues: {_q(f'[[{continues}]]')}")
    lines += [
        "---",
        f"# {session.agent} session · {project_name(session.cwd)} · {title_date:%Y-%m-%d}",
        "",
    ]
    if continues:
        lines += [f"Continues [[{continues}]].", ""]
    return "\n".join(lines) + "\n"


def update_header(text: str, turns: int, ended: datetime | None) -> str:
    """The note with its `turns` and `ended` keys set, every other line as it was (a user's
    `converge: false` stays)."""
    if not text.startswith("---\n"):
        return text
    end = text.find("\n---\n", 3)
    if end < 0:
        return text
    block, rest = text[: end + 1], text[end + 1 :]
    block = re.sub(r"(?m)^turns:.*$", f"turns: {turns}", block, count=1)
    if ended is not None:
        block = re.sub(r"(?m)^ended:.*$", f"ended: {_q(_time(ended))}", block, count=1)
    return block + rest


def cut_paste(text: str, limit: int) -> tuple[str, int]:
    """A turn over `limit` characters keeps its start and its end (where a correction after a
    pasted log usually stands), at line ends where it can, with a marker between."""
    if len(text) <= limit:
        return text, 0
    head_len, tail_len = limit * 3 // 4, limit // 4
    head = text[:head_len]
    if "\n" in head[head_len // 2 :]:
        head = head[: head.rfind("\n")]
    tail = text[-tail_len:]
    if "\n" in tail[: tail_len // 2]:
        tail = tail[tail.find("\n") + 1 :]
    left_out = len(text) - len(head) - len(tail)
    marker = f"[… cmem cut {left_out:,} characters of pasted text here …]"
    return f"{head.rstrip()}\n{marker}\n{tail.lstrip()}", left_out


def _safe(text: str) -> str:
    """The user's words as lines that cannot change the note's structure around them."""
    text = text.replace("<!--", "&lt;!--")
    lines = [("\\" + line) if ANCHOR.match(line) else line for line in text.split("\n")]
    fence = ""
    for line in lines:
        stripped = line.strip()
        if fence:
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                fence = ""
        elif stripped.startswith(("```", "~~~")):
            fence = stripped[0] * (len(stripped) - len(stripped.lstrip(stripped[0])))
    if fence:
        lines.append(fence)  # an unclosed fence would swallow the turns after it
    return "\n".join(lines)


def _excerpt(text: str) -> str:
    """The end of the agent's text: what a short answer answers is usually its last lines."""
    text = text.strip()
    if len(text) <= AGENT_EXCERPT_CHARS:
        return text
    tail = text[-AGENT_EXCERPT_CHARS:]
    space = re.search(r"\s", tail)
    if space and space.start() < 40:
        tail = tail[space.end() :]
    return "…" + tail


def _fence(text: str) -> str:
    runs = [len(m.group(0)) for m in re.finditer(r"(?m)^\s*(~{3,})", text)]
    return "~" * max([3] + [run + 1 for run in runs])


def turn_words(text: str, max_chars: int = MAX_TURN_CHARS) -> Rendered:
    """A user turn's words as its block holds them: redacted, cut, made safe."""
    text, redacted = redact_secrets(text)
    text, cut = cut_paste(text, max_chars)
    return Rendered(_safe(text), redacted, cut)


def render_turn(
    number: int, turn: Turn, answered: Turn | None, max_chars: int = MAX_TURN_CHARS
) -> Rendered:
    """One user turn as its block, with the agent text it answers when it is a short answer."""
    words = turn_words(turn.text, max_chars)
    redacted, cut = words.redacted, words.cut
    out = []
    if answered is not None and answered.text.strip() and len(turn.text) <= SHORT_TURN_CHARS:
        excerpt, hidden = redact_secrets(_excerpt(answered.text))
        redacted += hidden
        fence = _fence(excerpt)
        out += [
            f"agent, before t{number} (context, not a source):",
            f"{fence}text",
            excerpt,
            fence,
            "",
        ]
    when = turn.time.astimezone().strftime("%Y-%m-%d %H:%M") if turn.time else "time unknown"
    header = f"**user · t{number}** · {when} <!-- turn {turn_digest(turn.key)} -->"
    out += [header, words.text, "", f"^t{number}", ""]
    return Rendered("\n".join(out) + "\n", redacted, cut)


def add_identities(text: str, learnt: dict[str, str]) -> str:
    """The note with each turn known by one of `learnt`'s identities known by its other one too
    (a message queued, then written again under the record's own id)."""
    out = []
    for line in text.split("\n"):
        header = USER_HEADER.match(line)
        if header:
            digests = header.group(2).split()
            more = [learnt[d] for d in digests if d in learnt and learnt[d] not in digests]
            if more:
                start, end = header.span(2)
                line = line[:start] + " ".join(digests + more) + line[end:]
        out.append(line)
    return "\n".join(out)


def turn_digest(key: str) -> str:
    import hashlib

    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]


# --- reading back -------------------------------------------------------------------------


def read_session_note(text: str) -> SessionNote:
    """Its frontmatter, its turns' identities, and which of its `^tN` anchors close a user turn:
    one whose `**user · tN**` header opens the block the anchor ends, with nothing but the
    user's words between (fenced text inside them included). An anchor after the agent's
    context, or anywhere else, is not a user turn."""
    from cmem.vault.yaml_reader import parse_frontmatter_block, split_frontmatter

    note = SessionNote()
    block, body_start, _problem = split_frontmatter(text)
    if block is not None:
        data, _ = parse_frontmatter_block(block)
        note.frontmatter = data if isinstance(data, dict) else {}
    fence = ""
    turn: int | None = None  # the user turn whose words the lines are in
    lines: list[str] = []  # its words so far
    for index, line in enumerate(text.split("\n")):
        if index < body_start - 1:
            continue
        stripped = line.strip()
        if turn is not None and not ANCHOR.match(line):
            lines.append(line)
        if fence:  # fenced lines say nothing about the turns
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                fence = ""
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[0] * (len(stripped) - len(stripped.lstrip(stripped[0])))
            continue
        header = USER_HEADER.match(line)
        if header:
            note.keys.update(header.group(2).split())
            turn, lines = int(header.group(1)), []
            continue
        if AGENT_LEAD.match(line):
            turn = None
            continue
        anchor = ANCHOR.match(line)
        if not anchor:
            continue
        number = int(anchor.group(1))
        note.last_turn = max(note.last_turn, number)
        (note.user_anchors if turn == number else note.other_anchors).add(number)
        if turn == number:
            note.words.append("\n".join(lines).strip("\n"))
        turn = None
    return note


def turn_of_line(text: str, line_no: int) -> int | None:
    """The user turn a line of a session note is in (its `^tN` number), None when the note is no
    session note or the line is not one of the user's words: the builtin engine cites the turn a
    signal line stands in, `[[note#^t5]]`."""
    if "<!-- turn " not in text or not read_session_note(text).is_session:
        return None
    lines = text.split("\n")
    turn = None
    for line in lines[: max(line_no - 1, 0)]:
        header = USER_HEADER.match(line)
        if header:
            turn = int(header.group(1))
        elif ANCHOR.match(line) or AGENT_LEAD.match(line):
            turn = None
    return turn
