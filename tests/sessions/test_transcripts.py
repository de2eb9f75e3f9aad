"""Each agent's transcript format keeps the user's words and the agent's replies, and nothing
else (docs/design.md §14). The fixtures are in the agents' public shapes
(tests/sessions/fixtures/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cmem.sessions.formats import FORMATS, detect_format, read_transcript
from cmem.sessions.transcript import TranscriptError, read_source

FIXTURES = Path(__file__).parent / "fixtures"
CLAUDE = FIXTURES / "claude-code-session.jsonl"
CODEX = FIXTURES / "rollout-2026-11-30T07-00-00-019a2d7a-41c4-78b1-b7cc-a45d62a89cd5.jsonl"
# markers the fixtures put in everything a session note must never hold
NEVER = (
    "SECRET-THOUGHT",
    "TOOL-RESULT-TEXT",
    "TOOL-OUTPUT",
    "INJECTED-REMINDER",
    "system-reminder",
    "SIDECHAIN",
    "COMPACT-SUMMARY",
    "COMPACTED-SUMMARY",
    "API Error",
    "Caveat:",
    "Stop hook feedback",
    "command-name",
    "local-command",
    "iVBORw0KGgo",
    "Request interrupted",
    "USER-INSTRUCTIONS",
    "environment_context",
    "DEVELOPER-TEXT",
    "REASONING",
    "FUNCTION-OUTPUT",
    "CUSTOM-OUTPUT",
    "GEMINI-THOUGHT",
    "GEMINI-TOOL-OUTPUT",
    "GEMINI-INFO",
    "SYSTEM-PROMPT",
    "TOOL-LINE",
)


def _said(path: Path, agent: str | None = None) -> list[tuple[str, str]]:
    (session,), _ = read_transcript(path, agent)
    return [(turn.role, turn.text) for turn in session.turns]


def _nothing_forbidden(turns) -> None:
    for _, text in turns:
        for marker in NEVER:
            assert marker not in text, (marker, text)


def test_claude_code_keeps_the_users_words_and_the_agents_text_only():
    (session,), source = read_transcript(CLAUDE)
    assert (session.agent, session.cwd) == ("claude-code", "/home/me/work/tidepool")
    assert session.session_id == "7f3c2a9e-1b2c-4d5e-8f90-123456789abc"
    users = [turn.text for turn in session.user_turns]
    assert users[0].startswith("Can you set up the test runner")
    assert users[1] == "no, we use pnpm here, never npm"
    assert users[2].startswith("Here is a screenshot of the error")
    assert users[3] == "also add a coverage script please"  # typed while the agent worked
    assert len(users) == 4
    turns = [(t.role, t.text) for t in session.turns]
    _nothing_forbidden(turns)
    # the agent's reply is one turn however many records it spans, with the tools it called
    reply = session.turns[1]
    assert reply.role == "agent" and "Shall I go ahead?" in reply.text and reply.tools == ("Read",)
    assert source.complete_bytes == CLAUDE.stat().st_size


def test_codex_keeps_each_user_message_once_and_drops_injected_context():
    turns = _said(CODEX)
    users = [text for role, text in turns if role == "user"]
    assert users == [
        "list the docker services and tell me which one is flaky",
        "that's wrong, the db is the flaky one; I prefer you check logs first",
    ]
    agents = [text for role, text in turns if role == "agent"]
    assert agents[0].startswith("There are three services") and len(agents) == 2
    assert agents[0].count("There are three services") == 1  # the event and the item: once
    _nothing_forbidden(turns)
    (session,), _ = read_transcript(CODEX)
    assert session.session_id == "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5"
    assert session.cwd == "/home/me/work/harbor"
    assert session.turns[1].tools == ("shell",) and session.turns[3].tools == ("apply_patch",)


def test_codex_without_event_messages_reads_the_response_items(tmp_path):
    """A rollout written without `event_msg` lines (older Codex): its response items say it."""
    kept = [
        line
        for line in CODEX.read_text("utf-8").splitlines()
        if json.loads(line)["type"] != "event_msg"
    ]
    path = tmp_path / "rollout-old.jsonl"
    path.write_text("\n".join(kept) + "\n", "utf-8")
    turns = _said(path)
    assert [text for role, text in turns if role == "user"] == [
        "list the docker services and tell me which one is flaky",
        "that's wrong, the db is the flaky one; I prefer you check logs first",
    ]
    _nothing_forbidden(turns)


def test_codex_rollouts_without_an_envelope_are_read(tmp_path):
    """The first rollouts: a metadata line, then the response items themselves."""
    path = tmp_path / "rollout-2025-05-01-abc.jsonl"
    lines = [
        {
            "id": "a1b2c3d4-0000-4000-8000-000000000001",
            "timestamp": "2025-05-01T10:00:00Z",
            "instructions": None,
        },
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "<environment_context>x</environment_context>"}
            ],
        },
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "use tabs, not spaces"}],
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Will do."}],
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
    (session,), _ = read_transcript(path)
    assert session.agent == "codex" and session.session_id == "a1b2c3d4-0000-4000-8000-000000000001"
    assert [(t.role, t.text) for t in session.turns] == [
        ("user", "use tabs, not spaces"),
        ("agent", "Will do."),
    ]


def test_gemini_and_the_generic_shapes():
    turns = _said(FIXTURES / "gemini-session.json")
    assert turns == [
        ("user", "what's our deploy target?"),
        ("agent", "Probably Heroku, based on the Procfile. Is that right?"),
        ("user", "no, we deploy to fly.io now"),
    ]
    assert _said(FIXTURES / "generic.jsonl") == [
        ("user", "my name is Ada"),
        ("agent", "Hi Ada, should I call you Adeline?"),
        ("user", "no, always Ada"),
    ]
    assert _said(FIXTURES / "generic.md") == [
        ("user", "I decided to switch to Svelte for the blog."),
        ("agent", "Good choice. Do you want SvelteKit too?"),
        ("user", "yes, with the static adapter"),
    ]
    for name, agent in (
        ("gemini-session.json", "gemini"),
        ("generic.jsonl", "generic"),
        ("generic.md", "generic"),
        (CLAUDE.name, "claude-code"),
        (CODEX.name, "codex"),
    ):
        assert detect_format(read_source(FIXTURES / name)) is FORMATS[agent], name


def test_a_half_written_last_line_is_left_for_next_time(tmp_path):
    whole = CLAUDE.read_bytes()
    lines = whole.split(b"\n")
    last = lines[-2]  # the final record (its line end follows it)
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines[:-2]) + b"\n" + last[: len(last) // 2])
    (session,), source = read_transcript(path)
    assert source.complete_bytes == len(b"\n".join(lines[:-2]) + b"\n")
    assert source.broken_lines == 0
    before = len(session.turns)
    path.write_bytes(whole)  # the agent finished writing it
    (session,), source = read_transcript(path)
    assert source.complete_bytes == len(whole) and len(session.turns) >= before


def test_a_broken_line_inside_is_skipped_and_counted(tmp_path):
    lines = CODEX.read_text("utf-8").splitlines()
    path = tmp_path / "rollout-x.jsonl"
    path.write_text("\n".join(lines[:5] + ["{not json"] + lines[5:]) + "\n", "utf-8")
    (session,), source = read_transcript(path)
    assert source.broken_lines == 1 and len(session.user_turns) == 2


@pytest.mark.parametrize(
    "content",
    ["", "just some notes\nwith no turns\n", '{"a": 1}\n{"b": 2}\n', "\x00\x01binary"],
)
def test_an_unknown_file_is_one_sentence_naming_it(tmp_path, content):
    path = tmp_path / "mystery.txt"
    path.write_text(content, "utf-8")
    with pytest.raises(TranscriptError) as caught:
        read_transcript(path)
    message = str(caught.value)
    assert "mystery.txt" in message and message.count(". ") == 0 and message.endswith(".")


def test_a_named_agent_that_does_not_match_is_refused():
    with pytest.raises(TranscriptError, match="is not a codex transcript"):
        read_transcript(CLAUDE, "codex")
    with pytest.raises(TranscriptError, match="must be one of"):
        read_transcript(CLAUDE, "emacs")
