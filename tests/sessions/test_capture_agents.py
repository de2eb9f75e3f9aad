"""`cmem capture` over what the agents really write (tests/sessions/fixtures/real/): a session
resumed under a new id links the note it continues and repeats none of its turns, what is not
the user speaking makes no note and says why, Gemini's JSONL sessions are found and grow once,
and notes of one day and project never share a name because their ids share a start."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from cmem.sessions.capture import capture_transcripts
from cmem.sessions.note import read_session_note
from cmem.setup.init import init_vault
from cmem.vault.layers import open_vault
from support import git, run_cmem, user_lines

REAL = Path(__file__).parent / "fixtures" / "real"
CLAUDE_FIRST = REAL / "claude-code-2.1.197-23636b76-09d4-4b9d-b5a5-9017065113c6.jsonl"
CLAUDE_FORK = REAL / "claude-code-2.1.197-e33209bd-f172-4124-b9a0-bf9a82c6fe61.jsonl"
CODEX_MAIN = (
    REAL / "codex-0.171-rollout-2026-12-03T10-39-12-01a23b7c-9e70-77b3-a720-9307be6c2725.jsonl"
)
CODEX_HELPER = (
    REAL / "codex-0.171-rollout-2026-12-03T10-39-12-01a23b7c-9f8f-79b3-aeaf-0db547e564cc.jsonl"
)
CODEX_FORK = (
    REAL / "codex-0.171-rollout-2026-12-03T10-39-30-01a23b7c-e5ac-7060-9b0f-fe40c787a668.jsonl"
)
GEMINI = REAL / "gemini-0.61-session-2026-12-03T10-37-0ccb9f1c.jsonl"
PASS_CALLS = (
    REAL / "claude-code-2.1.197-pass-call.jsonl",
    REAL
    / "codex-0.171-pass-call-rollout-2026-12-03T11-10-48-01a23b99-8dc4-79c0-9340-4c0a3f9c00d5.jsonl",
    REAL / "gemini-0.61-pass-call-session-2026-12-03T10-38-a4f99230.jsonl",
)


def _vault(tmp_path: Path):
    root = tmp_path / "v"
    init_vault(root, "en")
    return open_vault(root)


def _notes(vault) -> dict[str, str]:
    return {p.name: p.read_text("utf-8") for p in sorted((vault.root / "sessions").glob("*.md"))}


def test_a_claude_code_fork_links_the_note_it_continues_and_repeats_none_of_its_turns(tmp_path):
    for order in ([CLAUDE_FIRST], [CLAUDE_FORK]), ([CLAUDE_FORK, CLAUDE_FIRST],):
        vault = _vault(tmp_path / str(len(order)))
        for paths in order:
            capture_transcripts(vault, paths)
        notes = _notes(vault)
        first, fork = "2026-12-03 claude-code proj 13c6.md", "2026-12-03 claude-code proj fe61.md"
        assert sorted(notes) == [first, fork]
        assert user_lines(notes[first]) == ["we use pnpm here, never npm"]
        assert user_lines(notes[fork]) == ["the tests run with vitest"]
        meta = read_session_note(notes[fork]).frontmatter
        assert meta["continues"] == "[[2026-12-03 claude-code proj 13c6]]"
        assert "Continues [[2026-12-03 claude-code proj 13c6]]." in notes[fork]
        head = git(vault.root, "rev-parse", "HEAD")
        again = capture_transcripts(vault, [CLAUDE_FORK, CLAUDE_FIRST])
        assert again.status == "nothing" and git(vault.root, "rev-parse", "HEAD") == head


def test_a_codex_fork_continues_its_parents_note_and_its_subagent_is_no_note(tmp_path):
    vault = _vault(tmp_path)
    done = run_cmem(
        "--vault", str(vault.root), "capture", str(CODEX_MAIN), str(CODEX_HELPER), "--json"
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert [s["session"] for s in data["sessions"]] == ["01a23b7c-9e70-77b3-a720-9307be6c2725"]
    (skipped,) = data["skipped"]
    assert skipped["what"] == "codex session 01a23b7c-9f8f-79b3-aeaf-0db547e564cc"
    assert "subagent" in skipped["reason"]
    main = "2026-12-03 codex proj 2725"
    done = run_cmem("--vault", str(vault.root), "capture", str(CODEX_FORK))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == [
        "new note sessions/2026-12-03 codex proj a668.md: 1 turn of codex · /tmp/i42/cdx/proj",
        f"  continues [[{main}]]",
    ]
    notes = _notes(vault)
    assert user_lines(notes[f"{main}.md"]) == [
        "SPAWN-A-HELPER: ask a helper to list the files, then tell me",
        "no wait, the tests run with vitest",
    ]
    assert user_lines(notes["2026-12-03 codex proj a668.md"]) == [
        "and the commit messages are imperative"
    ]
    assert "helper task" not in "".join(notes.values())


def test_a_fork_that_copies_its_parents_turns_under_new_times_writes_them_once(tmp_path):
    """Codex before paginated history copied the parent's records into the fork, the parent's
    `session_meta` among them, each stamped anew (codex-rs `record_initial_history`): the
    turns the fork opens with are the parent's, word for word, and stay in the parent's note."""
    parent = [json.loads(line) for line in CODEX_MAIN.read_text("utf-8").splitlines()]
    own = json.loads(CODEX_FORK.read_text("utf-8").splitlines()[0])
    copied = [{**record, "timestamp": "2026-12-03T11:00:00.000Z"} for record in parent]
    new = [json.loads(line) for line in CODEX_FORK.read_text("utf-8").splitlines()[1:]]
    fork = tmp_path / "rollout-2026-12-03T11-00-00-01a23b7c-e5ac-7060-9b0f-fe40c787a668.jsonl"
    fork.write_text("".join(json.dumps(r) + "\n" for r in [own, *copied, *new]), "utf-8")
    vault = _vault(tmp_path)
    capture_transcripts(vault, [CODEX_MAIN])
    (captured,) = capture_transcripts(vault, [fork]).sessions
    assert captured.continues == "2026-12-03 codex proj 2725" and captured.added == 1
    text = _notes(vault)["2026-12-03 codex proj a668.md"]
    assert user_lines(text) == ["and the commit messages are imperative"]
    assert capture_transcripts(vault, [fork, CODEX_MAIN]).status == "nothing"


def test_a_queued_message_captured_before_it_is_written_again_is_written_once(tmp_path):
    """`claude -p` queues the prompt, then writes it as a user record; a capture in between
    (a checkpoint) wrote the queued one: the record is that turn, not a second one."""
    vault = _vault(tmp_path)
    growing = tmp_path / CLAUDE_FIRST.name
    lines = CLAUDE_FIRST.read_bytes().splitlines(keepends=True)
    growing.write_bytes(b"".join(lines[:4]))  # queued, not yet written as a user record
    (first,) = capture_transcripts(vault, [growing]).sessions
    assert first.added == 1
    growing.write_bytes(b"".join(lines))
    (again,) = capture_transcripts(vault, [growing]).sessions  # the turn's record id, learnt
    assert (again.added, again.turns) == (0, 1)
    assert capture_transcripts(vault, [growing]).status == "nothing"
    (text,) = _notes(vault).values()
    assert user_lines(text) == ["we use pnpm here, never npm"]
    # and a fork of the session, captured now, knows the turn by the record it copied
    (fork,) = capture_transcripts(vault, [CLAUDE_FORK]).sessions
    assert fork.added == 1 and fork.continues


def test_what_is_not_the_user_speaking_makes_no_note_and_says_why(tmp_path):
    vault = _vault(tmp_path)
    done = run_cmem("--vault", str(vault.root), "capture", *map(str, PASS_CALLS), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["status"] == "nothing" and data["sessions"] == []
    reasons = {s["what"].split()[0]: s["reason"] for s in data["skipped"]}
    assert sorted(reasons) == ["claude-code", "codex", "gemini"]
    assert all("model call cmem made for a pass" in reason for reason in reasons.values())
    assert not (vault.root / "sessions").exists() or not _notes(vault)
    text = run_cmem("--vault", str(vault.root), "capture", *map(str, PASS_CALLS))
    assert text.returncode == 0 and "nothing new to capture" in text.stdout


def test_a_gemini_jsonl_session_is_found_in_its_folder_and_grows_once(tmp_path, isolated_home):
    vault = _vault(tmp_path)
    chats = isolated_home / ".gemini" / "tmp" / "proj" / "chats"
    chats.mkdir(parents=True)
    lines = GEMINI.read_bytes().splitlines(keepends=True)
    started = chats / GEMINI.name.removeprefix("gemini-0.61-")
    started.write_bytes(b"".join(lines[:6]))  # before `gemini --resume` went on with it
    helper = chats / "0ccb9f1c-49d4-4dcd-9689-bd58e67d186e" / "helper-session.jsonl"
    helper.parent.mkdir()
    helper.write_bytes(b"".join(lines[:6]))  # a subagent's: a folder below chats/
    first = capture_transcripts(vault, None, cwd=None)
    assert first.transcripts == 1 and [s.added for s in first.sessions] == [1]
    started.write_bytes(GEMINI.read_bytes())
    second = capture_transcripts(vault, None)
    assert [(s.added, s.turns, s.created) for s in second.sessions] == [(1, 2, False)]
    (text,) = _notes(vault).values()
    assert user_lines(text) == [
        "read @notes.md and remember: we use pnpm here, never npm",
        "no wait, the tests run with vitest",
    ]
    assert capture_transcripts(vault, [started]).status == "nothing"


def test_notes_of_one_day_and_project_never_share_a_name_through_their_ids(tmp_path):
    """UUIDv7 ids begin with their time: every Codex session of a day began `01a2…`. A note is
    named by the id's end, as long as it must be to be the only one with that name."""
    vault = _vault(tmp_path)
    capture_transcripts(vault, [CODEX_MAIN, CODEX_FORK])
    assert sorted(_notes(vault)) == [
        "2026-12-03 codex proj 2725.md",
        "2026-12-03 codex proj a668.md",
    ]
    rows = [
        {"role": "user", "content": "first idea", "session": f"{start}-5555-4444-abcd", "cwd": "/p"}
        for start in ("aaaa1111", "bbbb2222")
    ]
    chat = tmp_path / "two.jsonl"
    chat.write_text("".join(json.dumps(row) + "\n" for row in rows), "utf-8")
    capture_transcripts(vault, [chat])
    names = [name for name in _notes(vault) if " generic " in name]
    assert len(names) == 2 and not any(name.endswith(" 2.md") for name in names)
    assert {name.rsplit(" ", 1)[1] for name in names} == {"abcd.md", "44abcd.md"}


def test_a_note_named_as_older_cmem_named_it_is_still_the_sessions_note(tmp_path):
    vault = _vault(tmp_path)
    capture_transcripts(vault, [CODEX_MAIN])
    old = vault.root / "sessions" / "2026-12-03 codex proj 01a2.md"  # the id's start
    shutil.move(vault.root / "sessions" / "2026-12-03 codex proj 2725.md", old)
    git(vault.root, "add", "-A")
    git(vault.root, "commit", "-qm", "named by an older cmem")
    (vault.machine_dir / "sessions.json").unlink()  # nothing remembered on this machine
    assert capture_transcripts(open_vault(vault.root), [CODEX_MAIN]).status == "nothing"
    assert sorted(_notes(vault)) == ["2026-12-03 codex proj 01a2.md"]
