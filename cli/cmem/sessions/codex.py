"""Codex's rollouts: `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`.

One JSON object a line, `{"timestamp", "type", "payload"}`: `session_meta` (the session's `id`
and `cwd`), `turn_context` (per turn: cwd, model), `response_item` (what the model saw and said:
`message` with a role and `input_text`/`output_text` blocks, `function_call`,
`function_call_output`, `custom_tool_call…`, `local_shell_call`, `reasoning`), `event_msg` (what
the client showed: `user_message`, `agent_message`, `agent_reasoning`, `token_count`…) and
`compacted` (a model's summary). Older rollouts have no envelope: a first line of metadata, then
the response items themselves.

The same user message is written twice, as a `response_item` message and as an `event_msg`
`user_message` (and the same reply as a message and an `agent_message`): when a file has event
messages of a kind, those are read and the response items of that kind are not, so each is kept
once. Dropped: tool calls and outputs, reasoning, developer and system messages, the
`<user_instructions>` and `<environment_context>` blocks (and `AGENTS.md` instructions) Codex sends
as user messages, images, and compaction summaries.

The first `session_meta` is the session's own (Codex 0.77 to 0.171 and Codex Desktop, whose
`originator` is "Codex Desktop", write the same shape). A subagent's rollout — its `source` a
`{"subagent": …}` object, or `thread_source` "subagent" — holds what another agent told it, never
the user: it is read as a session to skip. A fork (`codex fork`, `/fork`) names the thread it goes
on from in `forked_from_id` (`Session.parent_id`); 0.171 writes only its own turns after it, older
versions first copied the parent's records, its `session_meta` among them, under new times — the
turns a fork opens with are then the parent's, and capture finds them in the parent's note.
"""

from __future__ import annotations

import re

from cmem.sessions.transcript import (
    Session,
    Source,
    agent_turn,
    parse_time,
    remove_tagged,
    text_key,
    user_turn,
)

NAME = "codex"

_ENVELOPES = {"session_meta", "turn_context", "response_item", "event_msg", "compacted"}
_ITEMS = {
    "message",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "reasoning",
    "web_search_call",
}
_TOOL_CALLS = {"function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
INJECTED = (
    "user_instructions",
    "environment_context",
    "user_shell_command",
    "turn_aborted",
    "INSTRUCTIONS",
    "permissions instructions",
)
_AGENTS_MD = re.compile(r"^\s*# AGENTS\.md instructions for ", re.M)
_ROLLOUT_ID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$", re.I)


def detect(source: Source) -> bool:
    head = source.records[:50]
    return source.jsonl and (
        any(r.get("type") in _ENVELOPES and isinstance(r.get("payload"), dict) for r in head)
        or (
            bool(head)
            and "id" in head[0]
            and "instructions" in head[0]
            and any(r.get("type") in _ITEMS for r in head[1:])
        )
    )


def _entries(source: Source) -> list[tuple[str, dict, object]]:
    """(envelope type, payload, timestamp) for each record, the old format read as the new."""
    out = []
    for index, record in enumerate(source.records):
        payload = record.get("payload")
        if isinstance(payload, dict) and record.get("type") in _ENVELOPES:
            out.append((record["type"], payload, record.get("timestamp")))
        elif index == 0 and "id" in record and "type" not in record:
            out.append(("session_meta", record, record.get("timestamp")))
        elif record.get("type") in _ITEMS:
            out.append(("response_item", record, record.get("timestamp")))
    return out


def parse(source: Source) -> list[Session]:
    entries = _entries(source)
    events_user = any(
        p.get("type") == "user_message" for kind, p, _ in entries if kind == "event_msg"
    )
    events_agent = any(
        p.get("type") == "agent_message" for kind, p, _ in entries if kind == "event_msg"
    )
    match = _ROLLOUT_ID.search(source.path.stem)
    session = Session(
        NAME, match.group(1) if match else source.path.stem, None, [], str(source.path)
    )
    seen: set[str] = set()
    own_meta = False
    for kind, payload, stamp in entries:
        time = parse_time(stamp) or parse_time(payload.get("timestamp"))
        if kind == "session_meta":
            if not own_meta:
                own_meta = True
                _read_meta(session, payload)
            elif payload.get("id") and str(payload["id"]) != session.session_id:
                session.parent_id = session.parent_id or str(payload["id"])
            continue
        if kind == "turn_context" and session.cwd is None and isinstance(payload.get("cwd"), str):
            session.cwd = payload["cwd"]
        said = _said(kind, payload, events_user, events_agent)
        if said is None:
            continue
        role, text, tools = said
        key = text_key(time, f"{role}:{text}:{','.join(tools)}:{payload.get('call_id', '')}")
        if key in seen:  # a resumed rollout repeats what it continues from
            continue
        seen.add(key)
        if role == "user":
            user_turn(session, text, time, key)
        else:
            agent_turn(session.turns, text, tools, time, key)
    return [session] if session.turns or session.skip else []


SUBAGENT = "it is a subagent's rollout: what another agent told it, not the user"


def _read_meta(session: Session, payload: dict) -> None:
    """The session's own `session_meta`: its id, folder, the thread it forks, whether a person
    is speaking in it."""
    session.session_id = str(payload.get("id") or session.session_id)
    if isinstance(payload.get("cwd"), str):
        session.cwd = payload["cwd"]
    if payload.get("forked_from_id"):
        session.parent_id = str(payload["forked_from_id"])
    source = payload.get("source")
    spawned = isinstance(source, dict) and any(str(k).lower() == "subagent" for k in source)
    if spawned or str(payload.get("thread_source", "")).lower() == "subagent":
        session.skip = SUBAGENT


def _said(kind: str, payload: dict, events_user: bool, events_agent: bool):
    """(role, text, tools) of a record that says something, else None."""
    item = payload.get("type")
    if kind == "event_msg":
        if item == "user_message" and events_user:
            if payload.get("kind") not in (None, "plain"):
                return None
            text = _clean(payload.get("message"))
            return ("user", text, []) if text else None
        if item == "agent_message" and events_agent:
            text = payload.get("message")
            return ("agent", text.strip(), []) if isinstance(text, str) and text.strip() else None
        return None
    if kind != "response_item":
        return None
    if item in _TOOL_CALLS:
        name = payload.get("name") or ("shell" if item == "local_shell_call" else item)
        return ("agent", "", [str(name)])
    if item != "message":
        return None
    role = payload.get("role")
    texts = [
        block.get("text", "")
        for block in payload.get("content") or []
        if isinstance(block, dict) and block.get("type") in ("input_text", "output_text", "text")
    ]
    text = "\n\n".join(t for t in texts if isinstance(t, str))
    if role == "user" and not events_user:
        cleaned = _clean(text)
        return ("user", cleaned, []) if cleaned else None
    if role == "assistant" and not events_agent and text.strip():
        return ("agent", text.strip(), [])
    return None


def _clean(text) -> str | None:
    if not isinstance(text, str):
        return None
    if _AGENTS_MD.match(text):
        return None  # the project's instructions, sent as a user message
    text = remove_tagged(text, INJECTED).strip()
    return text or None
