"""Claude Code's transcripts: `~/.claude/projects/<encoded cwd>/<session id>.jsonl`.

One JSON object a line, `type` user, assistant, summary, system, attachment, file-history-snapshot,
queue-operation…; each conversational record carries `uuid`, `parentUuid`, `sessionId`, `cwd`,
`timestamp` and `isSidechain`. `message.content` is a string or a list of blocks: `text`,
`tool_use`, `tool_result`, `thinking`, `image`.

Kept: the user's typed messages (a `user` record's text, and a prompt typed while the agent worked,
which Claude Code writes as an `attachment` of type `queued_command`), and the agent's text blocks.
Dropped: tool calls and their results (a `user` record holding `tool_result` blocks or a
`toolUseResult`), thinking, images, sidechain records (subagents, whose own files are
`agent-*.jsonl`), `isMeta` records (caveats, hook feedback), the compaction summary
(`isCompactSummary`: a model's words), API error texts, and the `<system-reminder>` and
`<command-…>` blocks Claude Code puts inside a user's message. A record seen twice (a resumed
session's file repeats the records it continues from) is read once, by its `uuid`.
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

NAME = "claude-code"

_TYPES = {
    "user",
    "assistant",
    "summary",
    "system",
    "attachment",
    "file-history-snapshot",
    "queue-operation",
}
# Blocks Claude Code writes into a user record that the user did not type.
INJECTED = (
    "system-reminder",
    "command-name",
    "command-message",
    "command-args",
    "command-contents",
    "local-command-stdout",
    "local-command-stderr",
    "local-command-caveat",
    "bash-input",
    "bash-stdout",
    "bash-stderr",
    "task-notification",
    "user-prompt-submit-hook",
    "ide_selection",
    "ide_opened_file",
)
_NOISE = re.compile(r"\[Request interrupted by user[^\]]*\]|\[Image #\d+\]")


def detect(source: Source) -> bool:
    return source.jsonl and any(
        record.get("type") in _TYPES
        and "payload" not in record
        and ("sessionId" in record or "uuid" in record or "leafUuid" in record)
        for record in source.records[:50]
    )


def parse(source: Source) -> list[Session]:
    sessions: dict[str, Session] = {}
    seen: set[str] = set()
    fallback = source.path.stem
    for record in source.records:
        uuid = record.get("uuid")
        if isinstance(uuid, str):
            if uuid in seen:
                continue
            seen.add(uuid)
        if record.get("isSidechain") is True:
            continue
        kind = record.get("type")
        if kind not in ("user", "assistant", "attachment"):
            continue
        session_id = str(record.get("sessionId") or fallback)
        session = sessions.get(session_id)
        if session is None:
            session = sessions[session_id] = Session(NAME, session_id, None, [], str(source.path))
        if session.cwd is None and isinstance(record.get("cwd"), str):
            session.cwd = record["cwd"]
        time = parse_time(record.get("timestamp"))
        if kind == "assistant":
            _read_assistant(session, record, time, uuid)
            continue
        text = _typed(record)
        if text:
            user_turn(
                session.turns, text, time, uuid if isinstance(uuid, str) else text_key(time, text)
            )
    return [session for session in sessions.values() if session.turns]


def _typed(record: dict) -> str | None:
    """What the person typed, when this record is that."""
    if record.get("isMeta") or record.get("isCompactSummary"):
        return None
    if record.get("isVisibleInTranscriptOnly") or record.get("toolUseResult") is not None:
        return None
    if record.get("type") == "attachment":
        attachment = record.get("attachment")
        if not isinstance(attachment, dict) or attachment.get("type") != "queued_command":
            return None
        if attachment.get("isMeta") or attachment.get("commandMode", "prompt") != "prompt":
            return None
        origin = attachment.get("origin")
        if isinstance(origin, dict) and origin.get("kind", "human") != "human":
            return None
        content = attachment.get("prompt")
    else:
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
    return _clean(_texts(content, user=True))


def _texts(content, user: bool) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    if user and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return ""  # a tool's result, sent back as a user record
    parts = [
        block.get("text", "")
        for block in content
        if isinstance(block, dict) and block.get("type") == "text"
    ]
    return "\n\n".join(part for part in parts if isinstance(part, str))


def _clean(text: str) -> str | None:
    text = _NOISE.sub("", remove_tagged(text, INJECTED)).strip()
    return text or None


def _read_assistant(session: Session, record: dict, time, uuid) -> None:
    message = record.get("message")
    if not isinstance(message, dict) or record.get("isApiErrorMessage"):
        return
    if message.get("model") == "<synthetic>":  # Claude Code's own filler, not the model's
        return
    content = message.get("content")
    tools = []
    if isinstance(content, list):
        tools = [
            str(block.get("name") or "tool")
            for block in content
            if isinstance(block, dict) and block.get("type") in ("tool_use", "server_tool_use")
        ]
    text = _texts(content, user=False).strip()
    if not text and not tools:
        return
    key = uuid if isinstance(uuid, str) else text_key(time, text)
    agent_turn(session.turns, text, tools, time, key)
