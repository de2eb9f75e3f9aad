"""Gemini CLI's sessions: `~/.gemini/tmp/<project hash>/chats/session-<time>-<id>.json`, the file
its hooks name as `transcript_path`.

One JSON document, not JSON Lines: `{"sessionId", "projectHash", "startTime", "lastUpdated",
"messages": [{"id", "timestamp", "type": "user"|"gemini"|"info"|"error", "content", "thoughts",
"toolCalls": [{"name", "args", "result", …}]}]}`; `content` is a string or a list of parts
(`{"text": …}`). Google documents the hooks' fields, not this file: its shape here is the one the
CLI's source writes and public readers of it agree on, so a change in a release shows as "not a
transcript cmem can read", never as wrong turns.

Kept: `user` messages' text and `gemini` messages' text. Dropped: thoughts, tool calls and their
results, `info`/`error` messages, inline data (images, files). The file holds no working folder;
a hook's `cwd` supplies it.
"""

from __future__ import annotations

from cmem.sessions.transcript import Session, Source, agent_turn, parse_time, text_key, user_turn

NAME = "gemini"


def detect(source: Source) -> bool:
    data = source.whole_json
    return (
        isinstance(data, dict)
        and isinstance(data.get("messages"), list)
        and ("sessionId" in data or "projectHash" in data)
    )


def parse(source: Source) -> list[Session]:
    data = source.whole_json
    assert isinstance(data, dict)
    session = Session(
        NAME, str(data.get("sessionId") or source.path.stem), None, [], str(source.path)
    )
    for message in data["messages"]:
        if not isinstance(message, dict):
            continue
        time = parse_time(message.get("timestamp"))
        text = _text(message.get("content")).strip()
        key = str(message.get("id") or text_key(time, text))
        if message.get("type") == "user" and text:
            user_turn(session.turns, text, time, key)
        elif message.get("type") in ("gemini", "model"):
            calls = message.get("toolCalls") or []
            tools = [str(c.get("name") or "tool") for c in calls if isinstance(c, dict)]
            if text or tools:
                agent_turn(session.turns, text, tools, time, key)
    return [session] if session.turns else []


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        return "\n\n".join(p for p in parts if isinstance(p, str))
    return ""
