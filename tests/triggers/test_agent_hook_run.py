"""What an installed agent hook does when the agent runs it (docs/design.md §14), in real processes:
the command as the settings file holds it, run by a shell with the agent's JSON on stdin. No timed
assertions: the benchmark measures how fast they return (bench/agent_loop.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cmem.setup.agent_hooks import plan_agent_install
from cmem.setup.hooks import apply_hook_plan
from cmem.setup.init import init_vault
from cmem.triggers.hook_record import read_record
from cmem.vault.layers import open_vault
from support import git
from trigger_helpers import wait_for

FIXTURES = Path(__file__).parent.parent / "sessions" / "fixtures"
CLAUDE = FIXTURES / "claude-code-session.jsonl"
NOTE = "sessions/2026-11-30 claude-code tidepool 9abc.md"
KEY = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # a GitHub token's shape


def _installed(tmp_path, agent: str = "claude-code", profile: str | None = None):
    root = tmp_path / "v"
    init_vault(root, "en")
    if profile is not None:
        (root / "converged/core/profile.md").write_text(profile, "utf-8")
        git(root, "add", "-A")
        git(root, "commit", "-qm", "memory")
    vault = open_vault(root)
    project = tmp_path / "tidepool"
    project.mkdir()
    apply_hook_plan(plan_agent_install(vault, project, agent), vault)
    settings = json.loads(
        (project / ".claude/settings.local.json").read_text("utf-8")
        if agent == "claude-code"
        else (
            project / f".{agent}" / ("hooks.json" if agent == "codex" else "settings.json")
        ).read_text("utf-8")
    )
    return vault, project, settings["hooks"]


def _command(hooks: dict, event: str) -> str:
    return hooks[event][0]["hooks"][0]["command"]


def _run(
    command: str, payload: dict | None, cwd: Path, close: bool = True
) -> subprocess.CompletedProcess:
    data = "" if payload is None else json.dumps(payload)
    return subprocess.run(
        ["bash", "-c", command], input=data, capture_output=True, text=True, cwd=cwd, timeout=60
    )


def test_session_end_returns_and_the_session_is_captured(tmp_path):
    vault, project, hooks = _installed(tmp_path)
    payload = {
        "session_id": "7f3c2a9e-1b2c-4d5e-8f90-123456789abc",
        "transcript_path": str(CLAUDE),
        "cwd": str(project),
        "hook_event_name": "SessionEnd",
        "reason": "prompt_input_exit",
    }
    done = _run(_command(hooks, "SessionEnd"), payload, project)
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""
    note = vault.root / NOTE
    wait_for(note.exists, what="the session note")
    wait_for(lambda: read_record(str(vault.machine_dir), "claude-code", "pass"), what="the pass")
    assert "no, we use pnpm here, never npm" in note.read_text("utf-8")
    capture = read_record(str(vault.machine_dir), "claude-code", "capture")
    assert capture["status"] == "captured" and capture["notes"] == [NOTE]
    fired = read_record(str(vault.machine_dir), "claude-code", "fired")
    assert fired["event"] == "SessionEnd" and fired["session"] == payload["session_id"]
    # then the pass that was due (the vault's first): the session converged, citing its turns
    subjects = git(vault.root, "log", "--format=%s").splitlines()
    assert subjects[:2] == [
        "cmem: converge 1 note → profile",
        "cmem: capture 4 turns of 1 session → 2026-11-30 claude-code tidepool 9abc",
    ]
    profile = (vault.root / "converged/core/profile.md").read_text("utf-8")
    assert "[[2026-11-30 claude-code tidepool 9abc#^t2]]" in profile


def test_session_end_with_every_field_missing_or_stdin_left_open(tmp_path):
    vault, project, hooks = _installed(tmp_path)
    done = _run(_command(hooks, "PreCompact"), None, project)
    assert done.returncode == 0 and done.stdout == ""
    # an agent that writes the JSON and never closes stdin: the hook still returns
    process = subprocess.Popen(
        ["bash", "-c", _command(hooks, "SessionEnd")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=project,
    )
    process.stdin.write(json.dumps({"hook_event_name": "SessionEnd"}).encode())
    process.stdin.flush()
    assert process.wait(timeout=60) == 0
    process.stdin.close()
    wait_for(
        lambda: read_record(str(vault.machine_dir), "claude-code", "capture"), what="the capture"
    )


def test_session_start_prints_the_resident_memory_as_json_within_10000_characters(tmp_path):
    profile = (
        "---\nsummary: who I am\n---\n# Profile\n\n"
        f"- Uses pnpm, never npm (source: [[n]])\n- deploy token: {KEY} (source: [[n]])\n"
    )
    vault, project, hooks = _installed(tmp_path, profile=profile)
    topics = vault.root / "converged/topics"
    (topics / "tidepool.md").write_text(
        "# Tidepool\n\n- Tests run with vitest (source: [[n]])\n", "utf-8"
    )
    for index in range(60):  # far more than 10,000 characters of other topics
        body = "\n".join(
            f"- fact {index}.{line} about something else entirely" for line in range(40)
        )
        (topics / f"other {index:02d}.md").write_text(
            f"---\nsummary: other {index}\n---\n# Other\n\n{body}\n", "utf-8"
        )
    payload = {"hook_event_name": "SessionStart", "source": "startup", "cwd": str(project)}
    for source in ("startup", "compact"):  # a miss, then what the first one stored
        done = _run(_command(hooks, "SessionStart"), {**payload, "source": source}, project)
        assert done.returncode == 0, done.stderr
        output = json.loads(done.stdout)
        assert output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
        context = output["hookSpecificOutput"]["additionalContext"]
        assert len(context) <= 10_000
        assert context.index("Uses pnpm, never npm") < context.index("Tests run with vitest")
        assert KEY not in context and "[REDACTED" in context
        assert "converged/topics/other 00.md — other 0" in context  # named, not shown
        assert "fact 0.1 about" not in context
        assert "recall" in context and str(vault.root) in context


def test_gemini_gets_json_only_on_stdout(tmp_path):
    vault, project, hooks = _installed(tmp_path, agent="gemini")
    done = _run(_command(hooks, "SessionEnd"), {"cwd": str(project)}, project)
    assert done.returncode == 0 and json.loads(done.stdout) == {}
    done = _run(_command(hooks, "SessionStart"), {"cwd": str(project)}, project)
    assert "additionalContext" in json.loads(done.stdout)["hookSpecificOutput"]
    assert "Stop" not in hooks


def _busy_transcript(path: Path, calls: int, tools: tuple[str, ...]) -> None:
    rows = [
        {"type": "user", "uuid": "u1", "sessionId": "s1", "cwd": "/p", "timestamp": "2026-11-30T10:00:00Z",
         "message": {"role": "user", "content": "refactor the parser"}},
    ]  # fmt: skip
    for index in range(calls):
        name = tools[index % len(tools)]
        rows.append(
            {"type": "assistant", "uuid": f"a{index}", "sessionId": "s1", "timestamp": "2026-11-30T10:01:00Z",
             "message": {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{index}", "name": name, "input": {}}]}}
        )  # fmt: skip
        rows.append(
            {"type": "user", "uuid": f"r{index}", "sessionId": "s1", "timestamp": "2026-11-30T10:01:01Z",
             "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{index}", "content": "ok"}]},
             "toolUseResult": {"stdout": "ok"}}
        )  # fmt: skip
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), "utf-8")


def test_stop_asks_once_per_session_after_a_complex_turn(tmp_path):
    vault, project, hooks = _installed(tmp_path)
    stop = _command(hooks, "Stop")
    transcript = tmp_path / "s1.jsonl"
    _busy_transcript(transcript, 7, ("Bash", "Read"))
    payload = {"session_id": "s1", "transcript_path": str(transcript), "stop_hook_active": False}
    assert _run(stop, payload, project).stdout == ""  # 7 calls: not complex enough
    _busy_transcript(transcript, 8, ("Bash",))
    assert _run(stop, payload, project).stdout == ""  # 8 calls of one tool
    _busy_transcript(transcript, 8, ("Bash", "Edit"))
    assert _run(stop, {**payload, "stop_hook_active": True}, project).stdout == ""
    done = _run(stop, payload, project)
    answer = json.loads(done.stdout)
    assert answer["decision"] == "block" and "ask the user whether to converge" in answer["reason"]
    assert f"--vault {vault.root} converge" in answer["reason"]
    assert _run(stop, payload, project).stdout == ""  # once per session
    assert _run(stop, {**payload, "session_id": "s2"}, project).stdout != ""


def test_a_hook_never_fails_the_agents_session(tmp_path):
    vault, project, hooks = _installed(tmp_path)
    broken = tmp_path / "broken.jsonl"
    broken.write_text("not a transcript\n", "utf-8")
    done = _run(_command(hooks, "SessionEnd"), {"transcript_path": str(broken)}, project)
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""
    wait_for(
        lambda: (read_record(str(vault.machine_dir), "claude-code", "capture") or {}).get("status"),
        what="the capture's record",
    )
    capture = read_record(str(vault.machine_dir), "claude-code", "capture")
    assert capture["status"] == "failed" and "broken.jsonl" in capture["error"]
    # the vault is gone: nothing printed, exit 0
    gone = _command(hooks, "SessionStart").replace(str(vault.root), str(tmp_path / "nowhere"))
    done = _run(gone, {}, project)
    assert done.returncode == 0 and done.stdout == ""
    usage = subprocess.run(
        [sys.executable, "-m", "cmem", "hook", "run", "bogus", "--agent", "codex"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert usage.returncode == 2
