"""Gemini CLI's sessions: `~/.gemini/tmp/<project hash>/chats/session-<time>-<id>.jsonl` since
v0.39 (`session-….json` before), the file its hooks name as `transcript_path`.

Two shapes, both read by what they hold, whatever the file is called:
- JSON Lines (v0.39 on; 0.61 writes it so): a metadata record `{"sessionId", "projectHash",
  "startTime", "lastUpdated", "kind"}`, then one record a message, `{"id", "timestamp", "type",
  "content", "displayContent"?, …}`, written again under the same `id` as it changes (the last
  copy wins, in the place of the first), `{"$set": {…}}` records updating the metadata (a
  `messages` list among them replaces the conversation's messages) and `{"$rewindTo": id}` when
  the user rewinds. A legacy `.json` session resumed by a newer CLI is copied into a `.jsonl`
  beside it, with the same session id and message ids.
- One JSON document (before v0.39): `{"sessionId", "projectHash", "startTime", "lastUpdated",
  "messages": […]}`.

A message's `type` is user, gemini, info, error or warning; `content` is a string or a list of
parts (`{"text": …}`, `inlineData`, `functionResponse`…). For a user message, `displayContent`
is what the user typed and `content` what the model was sent (an `@file` prompt's file bodies
included): the typed words are kept. Kept: user messages' words and gemini messages' text.
Dropped: the CLI's own `<session_context>` message, a hook's `<hook_context>` (a SessionStart
hook's context is a user message of its own in an interactive session, and opens the prompt in a
non-interactive one), thoughts, tool calls and their results, info/error/warning messages, inline
data. A rewound message stays: the user did say it. A subagent's session (`kind` "subagent", in a
folder named by its parent's id) is what another agent told it: read as a session to skip. The
file holds no working folder; a hook's `cwd` supplies it.
"""

from __future__ import annotations

from cmem.sessions.transcript import Session, Source, agent_turn, parse_time, text_key, user_turn

NAME = "gemini"

SUBAGENT = "it is a Gemini subagent's session: what another agent told it, not the user"
_MESSAGE_TYPES = {"user", "gemini", "model", "info", "error", "warning"}


def detect(source: Source) -> bool:
    data = source.whole_json
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        return "sessionId" in data or "projectHash" in data
    return source.jsonl and any(_is_gemini_record(record) for record in source.records[:50])


def _is_gemini_record(record: dict) -> bool:
    if "$set" in record or "$rewindTo" in record:
        return True
    if "sessionId" in record and "projectHash" in record and "type" not in record:
        return True
    return (
        isinstance(record.get("id"), str)
        and record.get("type") in _MESSAGE_TYPES
        and "role" not in record
        and "content" in record
    )


def parse(source: Source) -> list[Session]:
    meta, messages = _conversation(source)
    session = Session(
        NAME, str(meta.get("sessionId") or source.path.stem), None, [], str(source.path)
    )
    if meta.get("kind") == "subagent":
        session.skip = SUBAGENT
    for message in messages:
        time = parse_time(message.get("timestamp"))
        kind = message.get("type")
        if kind == "user":
            shown = message.get("displayContent")
            text = _text(shown if shown else message.get("content")).strip()
            if text and not text.startswith("<session_context>"):
                user_turn(session, text, time, str(message.get("id") or text_key(time, text)))
        elif kind in ("gemini", "model"):
            text = _text(message.get("content")).strip()
            calls = message.get("toolCalls") or []
            tools = [str(c.get("name") or "tool") for c in calls if isinstance(c, dict)]
            if text or tools:
                key = str(message.get("id") or text_key(time, text))
                agent_turn(session.turns, text, tools, time, key)
    return [session] if session.turns or session.skip else []


def _conversation(source: Source) -> tuple[dict, list[dict]]:
    """The session's metadata and its messages in order, from either shape."""
    data = source.whole_json
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        return data, [m for m in data["messages"] if isinstance(m, dict)]
    meta: dict = {}
    messages: dict[str, dict] = {}  # by id, in the order first written
    for record in source.records:
        if "$set" in record:
            update = record["$set"] if isinstance(record["$set"], dict) else {}
            _add(messages, update.get("messages"))
            meta.update({k: v for k, v in update.items() if k != "messages"})
        elif isinstance(record.get("id"), str):
            messages[record["id"]] = record
        elif "sessionId" in record:
            meta.update({k: v for k, v in record.items() if k != "messages"})
            _add(messages, record.get("messages"))
    return meta, list(messages.values())


def _add(messages: dict[str, dict], listed) -> None:
    for message in listed if isinstance(listed, list) else []:
        if isinstance(message, dict) and isinstance(message.get("id"), str):
            messages[message["id"]] = message


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if isinstance(content, list):
        parts = [p.get("text") if isinstance(p, dict) else p for p in content]
        return "".join(p for p in parts if isinstance(p, str))  # as the CLI joins them
    return ""
