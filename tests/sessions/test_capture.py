"""`cmem capture`: session notes hold the user's words and nothing else, a second capture
changes nothing, a resumed session adds its turns once, an archived session goes on in a new
note (docs/design.md §14). Real git, real processes where the command is the subject."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cmem.errors import CmemError
from cmem.sessions.capture import capture_transcripts, load_record
from cmem.sessions.note import read_session_note
from cmem.setup.init import init_vault
from cmem.vault.layers import open_vault
from support import git, run_cmem, user_lines

FIXTURES = Path(__file__).parent / "fixtures"
CLAUDE = FIXTURES / "claude-code-session.jsonl"
RESUMED = FIXTURES / "claude-code-resumed.jsonl"
CODEX = FIXTURES / "rollout-2026-11-30T07-00-00-019a2d7a-41c4-78b1-b7cc-a45d62a89cd5.jsonl"
NEVER = (
    "SECRET-THOUGHT",
    "TOOL-RESULT-TEXT",
    "TOOL-OUTPUT",
    "INJECTED-REMINDER",
    "system-reminder",
    "SIDECHAIN",
    "COMPACT",
    "API Error",
    "Caveat:",
    "Stop hook feedback",
    "command-name",
    "iVBORw0KGgo",
    "USER-INSTRUCTIONS",
    "environment_context",
    "DEVELOPER-TEXT",
    "REASONING",
    "FUNCTION-OUTPUT",
    "CUSTOM-OUTPUT",
    "sk-ant-api03",
)


def _vault(tmp_path: Path, name: str = "v"):
    root = tmp_path / name
    init_vault(root, "en")
    return open_vault(root)


def _notes(vault) -> dict[str, str]:
    folder = vault.root / "sessions"
    return {p.name: p.read_text("utf-8") for p in sorted(folder.glob("*.md"))}


def _head(vault) -> str:
    return git(vault.root, "rev-parse", "HEAD").strip()


def test_capture_writes_the_users_words_and_nothing_else(tmp_path):
    vault = _vault(tmp_path)
    result = capture_transcripts(vault, [CLAUDE, CODEX])
    assert result.status == "captured" and len(result.sessions) == 2
    notes = _notes(vault)
    assert sorted(notes) == [
        "2026-11-30 claude-code tidepool 9abc.md",
        "2026-11-30 codex harbor 9cd5.md",
    ]
    claude = notes["2026-11-30 claude-code tidepool 9abc.md"]
    for text in notes.values():
        for marker in NEVER:
            assert marker not in text, marker
    assert user_lines(claude) == [
        "Can you set up the test runner for this repo? Use the config in package.json.",
        "no, we use pnpm here, never npm",
        "Here is a screenshot of the error, and my key is [REDACTED:anthropic-key] for the API test",
        "also add a coverage script please",
    ]
    assert user_lines(notes["2026-11-30 codex harbor 9cd5.md"]) == [
        "list the docker services and tell me which one is flaky",
        "that's wrong, the db is the flaky one; I prefer you check logs first",
    ]
    parsed = read_session_note(claude)
    meta = parsed.frontmatter
    assert (meta["agent"], meta["project"], meta["turns"]) == (
        "claude-code",
        "/home/me/work/tidepool",
        4,
    )
    assert meta["session"] == "7f3c2a9e-1b2c-4d5e-8f90-123456789abc"
    assert meta["started"].startswith("2026-11-30") and meta["transcript"] == str(CLAUDE)
    assert parsed.user_anchors == {1, 2, 3, 4} and parsed.other_anchors == set()
    # the short answer carries the agent's question it answers, fenced and marked as context
    before = claude.split("**user · t2**")[0]
    assert "agent, before t2 (context, not a source):" in before
    assert "Shall I go ahead?" in before.rsplit("agent, before t2", 1)[1]
    # a longer turn, or one with no agent text before it, has none
    assert "agent, before t1" not in claude
    assert result.redacted == 1
    log = git(vault.root, "log", "--format=%s")
    assert log.splitlines()[0].startswith("cmem: capture 6 turns of 2 sessions")
    assert git(vault.root, "status", "--porcelain") == ""


def test_capturing_again_changes_nothing_and_a_resumed_session_adds_its_turns_once(tmp_path):
    vault = _vault(tmp_path)
    capture_transcripts(vault, [CLAUDE, CODEX])
    head, notes = _head(vault), _notes(vault)
    # the user's pending edit elsewhere is not committed by a capture that has nothing to do
    (vault.root / "idea.md").write_text("- an idea\n", "utf-8")
    again = capture_transcripts(vault, [CLAUDE, CODEX])
    assert again.status == "nothing" and again.commit is None
    assert _head(vault) == head and _notes(vault) == notes
    # the user excludes the session from passes; a resumed session keeps that
    path = vault.root / "sessions" / "2026-11-30 claude-code tidepool 9abc.md"
    path.write_text(
        path.read_text("utf-8").replace("turns: 4\n", "turns: 4\nconverge: false\n"), "utf-8"
    )
    # a resumed session: a new file repeating the records it continues from, then new turns
    resumed = capture_transcripts(vault, [RESUMED])
    (captured,) = resumed.sessions
    assert (captured.added, captured.turns, captured.created) == (1, 5, False)
    text = _notes(vault)["2026-11-30 claude-code tidepool 9abc.md"]
    assert text.count("also add a coverage script please") == 1
    assert "**user · t5**" in text and "^t5" in text
    assert "I meant lines not branches" in user_lines(text)[-1]
    assert read_session_note(text).frontmatter["turns"] == 5
    assert read_session_note(text).frontmatter["converge"] is False
    assert read_session_note(text).frontmatter["ended"].startswith("2026-12-01")
    head = _head(vault)
    for paths in ([CLAUDE, RESUMED], [RESUMED], [CLAUDE]):
        assert capture_transcripts(vault, paths).status == "nothing"
    assert _head(vault) == head


def test_a_session_whose_note_was_archived_goes_on_in_a_new_note(tmp_path):
    vault = _vault(tmp_path)
    capture_transcripts(vault, [CLAUDE])
    name = "2026-11-30 claude-code tidepool 9abc"
    (vault.root / "archive" / "2026-12").mkdir(parents=True)
    git(vault.root, "mv", f"sessions/{name}.md", f"archive/2026-12/{name}.md")
    git(vault.root, "commit", "-qm", "archive it")
    vault = open_vault(vault.root)
    result = capture_transcripts(vault, [CLAUDE, RESUMED])
    (captured,) = result.sessions
    assert captured.created and captured.continues == name and captured.added == 1
    # named by the day it goes on (the same day would make it `… 7f3c 2`)
    text = _notes(vault)["2026-12-01 claude-code tidepool 9abc.md"]
    assert f"Continues [[{name}]]." in text and f'continues: "[[{name}]]"' in text
    # numbering goes on from the archived note's turns, which are not written again
    assert "**user · t5**" in text and "**user · t1**" not in text
    assert "also add a coverage script please" not in text
    assert capture_transcripts(vault, [CLAUDE, RESUMED]).status == "nothing"


def test_oversized_pastes_are_cut_and_nothing_typed_breaks_the_note(tmp_path):
    vault = _vault(tmp_path)
    log = "\n".join(f"log line {i} ERROR something" for i in range(2000))
    rows = [
        {"role": "user", "content": f"here is the log:\n{log}\nsee, the retry is wrong"},
        {"role": "assistant", "content": "I see."},
        {"role": "user", "content": "```python\nprint('unclosed')\n^t99\n<!-- hidden"},
        {"role": "user", "content": "and one more turn after it"},
    ]
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    result = capture_transcripts(vault, [path])
    (text,) = _notes(vault).values()
    assert result.cut > 0 and "characters of pasted text here" in text
    assert "here is the log:" in text and "see, the retry is wrong" in text
    assert len(text) < 8000
    parsed = read_session_note(text)
    assert parsed.user_anchors == {1, 2, 3} and parsed.last_turn == 3
    assert "&lt;!-- hidden" in text and "\\^t99" in text


def test_projects_are_kept_or_left_out_by_their_working_folder(tmp_path):
    vault = _vault(tmp_path)
    config = vault.root / ".cmem" / "config.yaml"
    text = config.read_text("utf-8").replace(
        "  exclude: []             # globs whose",
        '  exclude: ["/home/me/work/harbor"] # globs whose',
    )
    config.write_text(text, "utf-8")
    vault = open_vault(vault.root)
    result = capture_transcripts(vault, [CLAUDE, CODEX])
    assert [c.agent for c in result.sessions] == ["claude-code"]
    assert "sessions.exclude" in result.skipped[0]["reason"]
    text = config.read_text("utf-8").replace("  include: []  ", '  include: ["/elsewhere/**"]  ')
    config.write_text(text, "utf-8")
    assert capture_transcripts(open_vault(vault.root), [CODEX]).sessions == []


def test_a_session_whose_note_the_user_deleted_is_not_written_again(tmp_path):
    vault = _vault(tmp_path)
    capture_transcripts(vault, [CLAUDE])
    git(vault.root, "rm", "-q", "sessions/2026-11-30 claude-code tidepool 9abc.md")
    git(vault.root, "commit", "-qm", "not this one")
    result = capture_transcripts(vault, [CLAUDE, RESUMED])
    assert result.sessions == [] and "was deleted" in result.skipped[0]["reason"]
    assert not (vault.root / "sessions" / "2026-11-30 claude-code tidepool 9abc.md").exists()


def test_a_vault_without_a_sessions_folder_says_how_to_add_one(make_vault):
    vault = open_vault(make_vault({}, git=True))
    with pytest.raises(CmemError, match=r"divergent\.extra_folders"):
        capture_transcripts(vault, [CLAUDE])


def test_with_no_file_it_imports_the_agents_folders_once(tmp_path, isolated_home):
    vault = _vault(tmp_path)
    projects = isolated_home / ".claude" / "projects" / "-home-me-work-tidepool"
    projects.mkdir(parents=True)
    shutil.copy(CLAUDE, projects / "7f3c2a9e-1b2c-4d5e-8f90-123456789abc.jsonl")
    (projects / "agent-1234abcd.jsonl").write_text(RESUMED.read_text("utf-8"), "utf-8")
    rollouts = isolated_home / ".codex" / "sessions" / "2026" / "11" / "30"
    rollouts.mkdir(parents=True)
    shutil.copy(CODEX, rollouts / CODEX.name)
    result = capture_transcripts(vault, None, since=None)
    assert sorted(c.agent for c in result.sessions) == ["claude-code", "codex"]
    assert result.transcripts == 2  # the subagent's file is never read
    record = load_record(vault)
    assert str(projects / "7f3c2a9e-1b2c-4d5e-8f90-123456789abc.jsonl") in record["files"]
    # the next import reads nothing: the record holds both files as they are
    again = capture_transcripts(vault, None)
    assert again.transcripts == 0 and again.status == "nothing"
    # a capture killed after reading, before its record: the notes say what is in already
    (vault.machine_dir / "sessions.json").unlink()
    again = capture_transcripts(vault, None)
    assert again.transcripts == 2 and again.status == "nothing"


def test_a_capture_killed_midway_loses_nothing(tmp_path):
    """Killed after its files are written, before the commit: the next capture finishes the
    step from its journal, and every turn is in the note once."""
    vault = _vault(tmp_path)
    done = run_cmem("--vault", str(vault.root), "capture", str(CLAUDE), fault="applied")
    assert done.returncode != 0
    again = run_cmem("--vault", str(vault.root), "capture", str(CLAUDE), str(RESUMED), "--json")
    assert again.returncode == 0, again.stderr
    text = _notes(open_vault(vault.root))["2026-11-30 claude-code tidepool 9abc.md"]
    assert [text.count(f"^t{n}\n") for n in range(1, 6)] == [1] * 5
    assert git(vault.root, "status", "--porcelain") == ""
    subjects = git(vault.root, "log", "--format=%s").splitlines()
    assert sum(s.startswith("cmem: capture") for s in subjects) == 2


def test_the_command_reports_and_refuses_in_one_sentence(tmp_path):
    vault = _vault(tmp_path)
    done = run_cmem("--vault", str(vault.root), "capture", str(CLAUDE), "--json")
    data = json.loads(done.stdout)
    assert done.returncode == 0 and data["status"] == "captured" and data["added"] == 4
    assert data["sessions"][0]["note"] == "sessions/2026-11-30 claude-code tidepool 9abc.md"
    text = run_cmem("--vault", str(vault.root), "capture", str(CLAUDE))
    assert text.returncode == 0 and "nothing new to capture" in text.stdout
    junk = tmp_path / "notes.txt"
    junk.write_text("hello\n", "utf-8")
    bad = run_cmem("--vault", str(vault.root), "capture", str(junk))
    assert bad.returncode == 1 and "notes.txt is not a transcript cmem can read" in bad.stderr
    assert bad.stderr.count("\n") == 1
    usage = run_cmem("--vault", str(vault.root), "capture", "--agent", "emacs", str(CLAUDE))
    assert usage.returncode == 2
    usage = run_cmem("--vault", str(vault.root), "capture", "--since", "soon")
    assert usage.returncode == 2 and "--since" in usage.stderr


def test_undo_leaves_captures_alone_and_init_says_where_sessions_go(tmp_path):
    from cmem.archive.undo import find_undo_target

    root = tmp_path / "v"
    report = init_vault(root, "en")
    assert any("sessions/" in note and "remote" in note for note in report.notes)
    vault = open_vault(root)
    capture_transcripts(vault, [CLAUDE])
    assert find_undo_target(vault) is None  # the capture is not a step to undo
    # an adopted folder with a `sessions/` of its own keeps it: session notes go elsewhere
    adopted = tmp_path / "adopted"
    (adopted / "sessions").mkdir(parents=True)
    (adopted / "sessions" / "mine.md").write_text("- my own\n", "utf-8")
    init_vault(adopted, "en")
    config = open_vault(adopted).config
    assert config.sessions_folder == "agent-sessions"
    assert "sessions" not in config.extra_divergent


def test_a_session_header_reads_back_every_character_its_values_hold():
    """The header's values are written as YAML double-quoted scalars that read back exactly: a
    folder or file name may hold a NEL, a DEL, a line separator or a paragraph separator, which a
    JSON string leaves bare and YAML then folds or refuses."""
    from datetime import datetime, timezone

    from cmem.sessions.note import render_header
    from cmem.sessions.transcript import Session

    odd = 'a\x85b\x7fc\u2028d\u2029e\tf"g\\h: #i\x01'
    session = Session("codex", f"id-{odd}", f"/home/me/{odd}", transcript=f"/t/{odd}.jsonl")
    when = datetime(2026, 11, 30, 9, 0, tzinfo=timezone.utc)
    header = render_header(session, when, 3, when, when, continues=f"note {odd}")
    meta = read_session_note(header).frontmatter
    assert meta["session"] == f"id-{odd}" and meta["project"] == f"/home/me/{odd}"
    assert meta["transcript"] == f"/t/{odd}.jsonl" and meta["continues"] == f"[[note {odd}]]"
    assert meta["turns"] == 3 and meta["agent"] == "codex"
