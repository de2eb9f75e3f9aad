"""Nothing cmem injected into a session ever appears in a session note (docs/design.md §14, §15):
cmem's real SessionStart memory — made by `cmem hook run session-start` on a vault — embedded the
way each agent records it, whole or around the user's words, and a pass's prompt in the middle of a
session. The note holds the words typed, and not one line of the memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cmem.sessions.capture import capture_transcripts
from cmem.setup.init import init_vault
from cmem.text.own_text import CONTEXT_END_MARK, PASS_PROMPT_MARK, is_cmem_context
from cmem.vault.layers import open_vault
from support import git, run_cmem

REAL = Path(__file__).parent / "fixtures" / "real"
PROFILE = (
    "---\nsummary: who I am\n---\n# Profile\n\n"
    "- Keeps a hedgehog called Quill (source: [[n]])\n"
    "- Deploys the tidepool app to Hetzner, never to AWS (source: [[n]])\n"
)
TYPED = "the migration fails on null defaults"
PASS_PROMPT = f"{PASS_PROMPT_MARK}\nYou converge the loose notes of a memory vault.\n"


def _memory(tmp_path: Path, agent: str) -> tuple[object, str]:
    """A vault, and the context its SessionStart hook gives `agent`, as the hook prints it."""
    root = tmp_path / "v"
    init_vault(root, "en")
    (root / "converged/core/profile.md").write_text(PROFILE, "utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "memory")
    project = tmp_path / "tidepool"
    project.mkdir()
    done = run_cmem(
        "--vault", str(root), "hook", "run", "session-start", "--agent", agent, cwd=project
    )
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Keeps a hedgehog called Quill" in context and is_cmem_context(context)
    return open_vault(root), context


def _escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _captured(vault, path: Path, context: str) -> str:
    result = capture_transcripts(vault, [path])
    notes = [vault.root / captured.note for captured in result.sessions]
    text = "".join(note.read_text("utf-8") for note in notes)
    for line in context.splitlines():
        if len(line.strip()) > 12:
            assert line.strip() not in text and _escaped(line.strip()) not in text, line
    assert "Quill" not in text and "Hetzner" not in text and "convergence prompt" not in text
    return text


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), "utf-8")
    return path


def test_claude_code(tmp_path):
    vault, context = _memory(tmp_path, "claude-code")
    # 2.1.197 records the SessionStart context as an attachment (the real file's, with today's)
    rows = [json.loads(line) for line in (REAL / CLAUDE_FIRST).read_text("utf-8").splitlines()]
    for row in rows:
        attachment = row.get("attachment") or {}
        if attachment.get("type") == "hook_additional_context":
            attachment["content"] = [context]
    base = {"sessionId": "5c1f0000-0000-4000-8000-00000000c1a0", "cwd": "/w/tidepool"}
    rows += [  # an older record of it in the user's message, and a pass prompt mid-session
        {**base, "type": "user", "uuid": "u2", "timestamp": "2026-12-03T11:00:00Z",
         "message": {"role": "user", "content": f"<system-reminder>\nSessionStart hook additional context: {context}\n</system-reminder>\n{TYPED}"}},
        {**base, "type": "user", "uuid": "u3", "timestamp": "2026-12-03T11:01:00Z",
         "message": {"role": "user", "content": [{"type": "text", "text": f"{context}\n\nand add a test"}]}},
        {**base, "type": "user", "uuid": "u4", "timestamp": "2026-12-03T11:02:00Z",
         "message": {"role": "user", "content": PASS_PROMPT}},
    ]  # fmt: skip
    text = _captured(vault, _jsonl(tmp_path / "s.jsonl", rows), context)
    assert "we use pnpm here, never npm" in text and TYPED in text and "and add a test" in text


def test_codex(tmp_path):
    vault, context = _memory(tmp_path, "codex")
    rows = [json.loads(line) for line in (REAL / CODEX_0171).read_text("utf-8").splitlines()]
    stamp = "2026-12-03T11:00:00.000Z"
    injected = [  # as a developer message, a user message of its own, around the user's words
        {"timestamp": stamp, "type": "response_item",
         "payload": {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": context}]}},
        {"timestamp": stamp, "type": "response_item",
         "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": context}]}},
        {"timestamp": stamp, "type": "response_item",
         "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"{context}\n{TYPED}"}]}},
        {"timestamp": stamp, "type": "response_item",
         "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": PASS_PROMPT}]}},
    ]  # fmt: skip
    path = tmp_path / "rollout-2026-12-03T11-00-00-01a23b7c-9e70-77b3-a720-9307be6c2725.jsonl"
    text = _captured(vault, _jsonl(path, rows[:1] + injected + rows[1:]), context)
    assert TYPED in text and "no wait, the tests run with vitest" in text


def test_gemini(tmp_path):
    """0.61 escapes the hook's context inside `<hook_context>`: a message of its own in an
    interactive session, before the prompt (`content` and `displayContent`) with `-p`."""
    vault, context = _memory(tmp_path, "gemini")
    wrapped = f"<hook_context>{_escaped(context)}</hook_context>"
    rows = [json.loads(line) for line in (REAL / GEMINI_061).read_text("utf-8").splitlines()]
    for row in rows:
        if row.get("type") == "user":
            for part in row["content"] + (row.get("displayContent") or []):
                head, _, typed = part["text"].partition("</hook_context>")
                if head.startswith("<hook_context>"):
                    part["text"] = wrapped + typed
    rows += [
        {"id": "own", "timestamp": "2026-12-03T11:00:00Z", "type": "user", "content": [{"text": wrapped}]},
        {"id": "raw", "timestamp": "2026-12-03T11:01:00Z", "type": "user", "content": [{"text": f"{context}\n\n{TYPED}"}]},
        {"id": "pass", "timestamp": "2026-12-03T11:02:00Z", "type": "user", "content": [{"text": PASS_PROMPT}]},
    ]  # fmt: skip
    text = _captured(
        vault, _jsonl(tmp_path / "session-2026-12-03T10-37-0ccb9f1c.jsonl", rows), context
    )
    assert "read @notes.md and remember: we use pnpm here, never npm" in text and TYPED in text


@pytest.mark.parametrize("shape", ["jsonl", "markdown"])
def test_generic(tmp_path, shape):
    vault, context = _memory(tmp_path, "claude-code")
    if shape == "jsonl":
        rows = [
            {"role": "user", "content": context},
            {"role": "user", "content": f"{context}\n{TYPED}"},
            {"role": "assistant", "content": "Which column?"},
            {"role": "user", "content": PASS_PROMPT},
            {"role": "user", "content": "the created_at one"},
        ]
        path = _jsonl(tmp_path / "chat.jsonl", rows)
    else:
        path = tmp_path / "chat.md"
        path.write_text(
            f"User: {context}\n\n{TYPED}\n\nAssistant: Which column?\n\nUser: the created_at one\n",
            "utf-8",
        )
    text = _captured(vault, path, context)
    assert TYPED in text and "the created_at one" in text


def test_the_context_ends_where_the_mark_says():
    from cmem.reading.session_start import CLOSING

    assert CLOSING.startswith(CONTEXT_END_MARK)


CLAUDE_FIRST = "claude-code-2.1.197-23636b76-09d4-4b9d-b5a5-9017065113c6.jsonl"
CODEX_0171 = "codex-0.171-rollout-2026-12-03T10-39-12-01a23b7c-9e70-77b3-a720-9307be6c2725.jsonl"
GEMINI_061 = "gemini-0.61-session-2026-12-03T10-37-0ccb9f1c.jsonl"
