"""Any agent's transcript, in one of two plain shapes, so every agent can be fed:

- JSON Lines of `{"role", "content", "timestamp"?}` (OpenAI-style messages): `role` user or
  human is the user; assistant, agent, ai or model is the agent; tool and system lines are
  dropped. `content` is a string or a list of `{"type": "text", "text"}` parts. A line may name
  its `session` (or `session_id`) and `cwd`.
- Markdown with `User:` and `Assistant:` turns (also `**User:**`, `Human:`, `Agent:`, `AI:`),
  each running to the next marker.

With no session id in the file, the file is the session (its path, digested).
"""

from __future__ import annotations

import hashlib
import re

from cmem.sessions.transcript import (
    Session,
    Source,
    agent_turn,
    parse_time,
    text_key,
    user_turn,
)

NAME = "generic"

_USER = {"user", "human"}
_AGENT = {"assistant", "agent", "ai", "model", "bot"}
_MARKER = re.compile(
    r"^\s*(?:#{1,6}\s*)?(?:\*\*|__)?(user|human|assistant|agent|ai)(?:\*\*|__)?\s*:(?:\*\*|__)?[ \t]?",
    re.I,
)


def detect(source: Source) -> bool:
    if source.jsonl:
        return any(isinstance(r.get("role"), str) and "content" in r for r in source.records[:50])
    if source.whole_json is not None:
        return False
    markers = [m.group(1).lower() for m in map(_MARKER.match, source.text.splitlines()) if m]
    return any(m in _USER for m in markers) and any(m not in _USER for m in markers)


def _file_id(source: Source) -> str:
    return hashlib.sha256(
        str(source.path.resolve()).encode("utf-8", "surrogateescape")
    ).hexdigest()[:16]


def parse(source: Source) -> list[Session]:
    return _parse_jsonl(source) if source.jsonl else _parse_markdown(source)


def _parse_jsonl(source: Source) -> list[Session]:
    sessions: dict[str, Session] = {}
    for index, record in enumerate(source.records):
        role = str(record.get("role", "")).lower()
        if role not in _USER and role not in _AGENT:
            continue
        session_id = str(record.get("session") or record.get("session_id") or _file_id(source))
        session = sessions.setdefault(
            session_id, Session(NAME, session_id, None, [], str(source.path))
        )
        if session.cwd is None and isinstance(record.get("cwd"), str):
            session.cwd = record["cwd"]
        time = parse_time(record.get("timestamp") or record.get("time"))
        text = _text(record.get("content")).strip()
        if not text:
            continue
        key = str(record.get("id") or text_key(time, f"{index}:{text}"))
        if role in _USER:
            user_turn(session, text, time, key)
        else:
            agent_turn(session.turns, text, [], time, key)
    return [s for s in sessions.values() if s.turns or s.skip]


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            p.get("text") if isinstance(p, dict) and p.get("type", "text") == "text" else None
            for p in content
        ]
        return "\n\n".join(p for p in parts if isinstance(p, str))
    return ""


def _parse_markdown(source: Source) -> list[Session]:
    session = Session(NAME, _file_id(source), None, [], str(source.path))
    role: str | None = None
    lines: list[str] = []
    said: list[tuple[str, str]] = []
    for line in source.text.splitlines():
        match = _MARKER.match(line)
        if match:
            if role is not None:
                said.append((role, "\n".join(lines)))
            role = "user" if match.group(1).lower() in _USER else "agent"
            lines = [line[match.end() :]]
        elif role is not None:
            lines.append(line)
    if role is not None:
        said.append((role, "\n".join(lines)))
    for index, (role, text) in enumerate(said):
        text = text.strip()
        if not text:
            continue
        key = text_key(None, f"{index}:{text}")
        if role == "user":
            user_turn(session, text, None, key)
        else:
            agent_turn(session.turns, text, [], None, key)
    return [session] if session.turns or session.skip else []
