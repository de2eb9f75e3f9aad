"""Transcripts as the agents really write them (tests/sessions/fixtures/real/, each with its
source and licence in the README there): each gives exactly what the user typed, once, in
order — nothing the agent, Claude Code's machinery, a hook or cmem wrote in their place."""

from __future__ import annotations

from pathlib import Path

import pytest

from cmem.sessions.formats import FORMATS, detect_format, read_transcript
from cmem.sessions.transcript import read_source

REAL = Path(__file__).parent / "fixtures" / "real"
# What never is the user's words, in any of these files.
NEVER = (
    "cmem memory",
    "Memory (reference material)",
    "hook_context",
    "session_context",
    "Content from referenced files",
    "The deploy target is fly.io",
    "Operation stopped by hook",
    "Read the output file",
    "Full transcript available",
    "task-notification",
    "(no content)",
    "Caveat:",
    "command-name",
    "Invoke the superpowers",
    "Base directory for this skill",
    "This session is being continued",
    "Request interrupted",
    "environment_context",
    "AGENTS.md instructions",
    "user-memory-input",
    "agent-notification",
    "Implement the following plan",
    "cmem convergence prompt",
)

TYPED = {
    "claude-code-1.0.57.jsonl": [
        "yes, in a previous session we remove the react web app in favor of generating static "
        "PNG files. Can you update the README to reflect the current state of the app?",
        "I made some additional updates to the README. You can commit now",
        "We already have a repo, so you don't need to git init. Instead stage the latest changes "
        "and use conventional commit convention for the commit message. You can review the "
        "existing commit messages using git log for examples",
        "When committing to git repo, always use the conventional-commits convention for log "
        "message",
    ],
    "claude-code-2.0.76-agent-notification.jsonl": [],
    "claude-code-2.1.12-plan.jsonl": [],
    "claude-code-2.1.17-compact-arguments.jsonl": [
        "/compact oh, one last comment. I don't know I agree with it's proposed solution though "
        "- pull it in after this compaction and let's discuss",
        "oh, one last comment on #90. I don't know I agree with it's proposed solution though - "
        "pull it in and let's discuss",
    ],
    "claude-code-2.1.20-queued.jsonl": [
        "should we be using the StripIDE code from textutil?",  # said rejecting a tool call
        "can we do this in a subagent? - also WRITE TESTS",  # typed while it worked: `enqueue`
    ],
    "claude-code-2.1.29-slash-command.jsonl": [
        "/superpowers:write-plan let's write a short plan for this - it's not huge right?\n\n"
        "yeah if there's no local branch check for the remote then create the local branch if it "
        "doesn't exist.\n\nQ: is there a sync operation we'd need to do if we're behind as well?"
    ],
    "claude-code-2.1.29-hook-verdict.jsonl": ["fix tests", "fix tests"],
    "claude-code-2.1.37-agent-notification.jsonl": [],
    "claude-code-2.1.39-dequeued.jsonl": ["I like that the prompt structure is documented."],
    "claude-code-2.1.42-task-notification.jsonl": [],
    "claude-code-2.1.197-23636b76-09d4-4b9d-b5a5-9017065113c6.jsonl": [
        "we use pnpm here, never npm"
    ],
    "claude-code-2.1.197-de9d8d24-cef9-4a7b-8532-18afa8888283.jsonl": [
        "/compact keep the pnpm decision"
    ],
    "codex-0.77-rollout.jsonl": [
        "can you analyse the MD files in this directory and determine if the info we have is "
        "clear enough to start planning the migration?"
    ],
    "codex-0.171-rollout-2026-12-03T10-39-12-01a23b7c-9e70-77b3-a720-9307be6c2725.jsonl": [
        "SPAWN-A-HELPER: ask a helper to list the files, then tell me",
        "no wait, the tests run with vitest",  # `codex exec resume`: the same file grew
    ],
    "codex-0.171-rollout-2026-12-03T10-39-30-01a23b7c-e5ac-7060-9b0f-fe40c787a668.jsonl": [
        "and the commit messages are imperative"
    ],
    "gemini-0.61-session-2026-12-03T10-37-0ccb9f1c.jsonl": [
        "read @notes.md and remember: we use pnpm here, never npm",  # displayContent
        "no wait, the tests run with vitest",
    ],
    "gemini-legacy-session-2025-11-21T20-38-8016034b.json": ["run notepad as admin"],
}
AGENT = {
    "claude": "claude-code",
    "codex-": "codex",
    "gemini": "gemini",
}


def _users(name: str) -> list[str]:
    sessions, _ = read_transcript(REAL / name)
    said = [turn.text for session in sessions for turn in session.user_turns]
    for text in said:
        for marker in NEVER:
            assert marker not in text, (name, marker, text)
    return said


@pytest.mark.parametrize("name", sorted(TYPED))
def test_each_real_transcript_gives_what_the_user_typed_once_in_order(name):
    assert _users(name) == TYPED[name]
    agent = AGENT[name[:6]]
    assert detect_format(read_source(REAL / name)) is FORMATS[agent]  # by what it holds


def test_a_gemini_session_is_read_by_its_content_whatever_its_name(tmp_path):
    copy = tmp_path / "transcript.txt"
    copy.write_bytes((REAL / "gemini-0.61-session-2026-12-03T10-37-0ccb9f1c.jsonl").read_bytes())
    (session,), _ = read_transcript(copy)
    assert session.agent == "gemini"
    assert session.session_id == "0ccb9f1c-49d4-4dcd-9689-bd58e67d186e"
    # the agent's reply is there too, once, after each thing said
    assert [turn.role for turn in session.turns] == ["user", "agent", "user", "agent"]


def test_a_legacy_gemini_session_resumed_by_a_newer_cli_is_one_session():
    """The CLI copies a `.json` session into a `.jsonl` beside it and starts one more file
    under the same id: read together, each turn once."""
    folder = REAL / "gemini-0.61-resumed-legacy"
    found = [read_transcript(path)[0] for path in sorted(folder.iterdir())]
    ids = {session.session_id for sessions in found for session in sessions}
    assert ids == {"8016034b-8665-42c9-bb72-6486cf8a8162"}
    copied = [s for sessions in found for s in sessions if s.transcript.endswith("b.jsonl")]
    assert [t.text for t in copied[0].user_turns] == [
        "run notepad as admin",
        "and open the hosts file too",
    ]


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("claude-code-2.1.197-pass-call.jsonl", "model call cmem made for a pass"),
        ("gemini-0.61-pass-call-session-2026-12-03T10-38-a4f99230.jsonl", "model call cmem"),
        (
            "codex-0.171-pass-call-rollout-2026-12-03T11-10-48-01a23b99-8dc4-79c0-9340-4c0a3f9c00d5.jsonl",
            "model call cmem",
        ),
        (
            "codex-0.171-rollout-2026-12-03T10-39-12-01a23b7c-9f8f-79b3-aeaf-0db547e564cc.jsonl",
            "subagent's rollout",
        ),
    ],
)
def test_a_session_that_is_not_the_user_speaking_is_read_as_one_to_skip(name, why):
    (session,), _ = read_transcript(REAL / name)
    assert session.skip is not None and why in session.skip


def test_a_fork_names_the_session_it_goes_on_from():
    (fork,), _ = read_transcript(
        REAL / "codex-0.171-rollout-2026-12-03T10-39-30-01a23b7c-e5ac-7060-9b0f-fe40c787a668.jsonl"
    )
    assert fork.parent_id == "01a23b7c-9e70-77b3-a720-9307be6c2725"
    # Claude Code 2.1.197's `--fork-session` copies the records under the new id, each keeping
    # the `uuid` it had: the copied turn is the first session's turn
    (first,), _ = read_transcript(
        REAL / "claude-code-2.1.197-23636b76-09d4-4b9d-b5a5-9017065113c6.jsonl"
    )
    (copy,), _ = read_transcript(
        REAL / "claude-code-2.1.197-e33209bd-f172-4124-b9a0-bf9a82c6fe61.jsonl"
    )
    assert copy.session_id != first.session_id
    assert copy.user_turns[0].key == first.user_turns[0].key
    assert [t.text for t in copy.user_turns] == [
        "we use pnpm here, never npm",
        "the tests run with vitest",
    ]
