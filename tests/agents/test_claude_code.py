"""The real Claude Code (npm `@anthropic-ai/claude-code`, pinned in tests/agents/package.json),
run offline against the API stand-in on 127.0.0.1, with cmem's hooks installed as a user would
install them (docs/design.md §14, §15): memory reaches the model at the start, the session is
captured at the end, the installed skill has the agent do the pass itself, the Stop question asks
for exactly that, and `claude -p` set as the unattended model converges without feeding itself."""

from __future__ import annotations

import json
from pathlib import Path

from agent_api import Rule, StandIn
from cmem.text.own_text import CONTEXT_MARK, PASS_PROMPT_MARK
from cmem.triggers import hook_record
from cmem.vault.layers import open_vault
from real_agents import (
    QUOTING_MODEL,
    agent_bin,
    agent_env,
    install_hooks,
    memory_vault,
    run_agent,
    sent_texts,
    session_notes,
)
from support import git, run_cmem
from trigger_helpers import wait_for


def _install(root: Path, project: Path, *more: str, env: dict | None = None) -> None:
    install_hooks(root, "claude-code", "--project", str(project), *more, env=env)


def test_memory_reaches_the_model_and_the_session_is_captured(tmp_path, isolated_home):
    agent_bin("claude-code")
    root = memory_vault(tmp_path)
    project = tmp_path / "tidepool"
    project.mkdir()
    _install(root, project, "--no-model")
    said = "no, we use pnpm here, never npm"
    rules = [
        Rule(said, reply="Got it: pnpm.", tools=[{"name": "Bash", "input": {"command": "ls"}}])
    ]
    with StandIn(rules, tmp_path / "requests.jsonl") as api:
        env = agent_env("claude-code", api.url, isolated_home)
        done = run_agent(
            "claude-code", ["-p", said, "--allowedTools", "Bash"], cwd=project, env=env
        )
        assert done.returncode == 0, done.stderr
        assert "Got it: pnpm." in done.stdout
        sent = sent_texts(api.requests())
    # SessionStart: the resident memory is in what the model was sent
    assert CONTEXT_MARK in sent and "short bullet points" in sent
    # SessionEnd: the detached capture writes the user's words, and nothing cmem injected
    wait_for(lambda: session_notes(root), what="the session note")
    (note,) = session_notes(root)
    text = note.read_text("utf-8")
    assert said in text
    assert CONTEXT_MARK not in text and "short bullet points" not in text
    machine = str(open_vault(root).machine_dir)
    record = wait_for(
        lambda: hook_record.read_record(machine, "claude-code", "capture"),
        what="the capture record",
    )
    assert record["status"] == "captured" and record["turns"] == 1


def test_the_installed_skill_has_the_agent_emit_answer_and_apply(tmp_path, isolated_home):
    agent_bin("claude-code")
    root = memory_vault(
        tmp_path, {"2026-12-01 notes.md": "Helix is my editor these days; vim only on servers.\n"}
    )
    project = tmp_path / "tidepool"
    project.mkdir()
    _install(root, project, "--no-model")
    skill = isolated_home / ".claude/skills/cmem-converge/SKILL.md"
    assert "converge --as-model" in skill.read_text("utf-8")
    # The stand-in plays a model that follows the skill's text and nothing else: the command it
    # names, then the prompt file the hand-over names read, the reply written to the file it
    # names, then the apply command.
    steps = [
        {"name": "Bash", "input_from_user": [*QUOTING_MODEL, "--skill"]},
        {"name": "Read", "input_from": [*QUOTING_MODEL, "--read-prompt"]},
        {"name": "Write", "input_from": [*QUOTING_MODEL, "--write-reply"]},
        {"name": "Bash", "input_from": [*QUOTING_MODEL, "--apply"]},
    ]
    rules = [Rule("converge --as-model", reply="Memory converged.", tools=steps)]
    with StandIn(rules, tmp_path / "requests.jsonl") as api:
        env = agent_env("claude-code", api.url, isolated_home)
        done = run_agent(
            "claude-code",
            ["-p", "/cmem-converge", "--allowedTools", "Bash", "Read", "Write"],
            cwd=project,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        requests = api.requests()
    results = sent_texts(requests)
    assert PASS_PROMPT_MARK in results  # the prompt reached the model, read from its file
    assert "pass applied" in results  # and the apply command's report came back
    log = git(root, "log", "--format=%s")
    assert log.splitlines()[0].startswith("cmem: converge ")
    memory = "".join(p.read_text("utf-8") for p in (root / "converged").rglob("*.md"))
    assert "Helix is my editor these days; vim only on servers." in memory
    assert not (open_vault(root).machine_dir / "agent-pass.json").exists()  # the hand-over is spent


def test_the_stop_question_asks_the_agent_to_do_the_pass_itself(tmp_path, isolated_home):
    agent_bin("claude-code")
    root = memory_vault(tmp_path)
    project = tmp_path / "tidepool"
    project.mkdir()
    (project / "a.txt").write_text("a\n", "utf-8")
    _install(root, project, "--no-model")
    work = [{"name": "Bash", "input": {"command": f"echo {n}"}} for n in range(5)]
    work += [{"name": "Read", "input": {"file_path": str(project / "a.txt")}} for _ in range(3)]
    rules = [Rule("refactor the parser", reply="Refactored.", tools=work)]
    with StandIn(rules, tmp_path / "requests.jsonl") as api:
        env = agent_env("claude-code", api.url, isolated_home)
        done = run_agent(
            "claude-code",
            ["-p", "refactor the parser", "--allowedTools", "Bash", "Read"],
            cwd=project,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        sent = sent_texts(api.requests())
    assert "ask the user whether to converge" in sent
    assert "converge --as-model" in sent  # the agent is asked to be the model, not to run a pass


def test_claude_as_the_unattended_model_converges_without_feeding_itself(tmp_path, isolated_home):
    claude = agent_bin("claude-code")
    root = memory_vault(tmp_path, {"2026-12-02 notes.md": "I decided to move the blog to Hugo.\n"})
    project = tmp_path / "tidepool"
    project.mkdir()
    path_env = {"PATH": f"{claude.parent}:/usr/bin:/bin"}
    # --user: the hooks fire for every folder, the one the pass runs its model in included
    _install(root, project, "--user", env=path_env)
    config = (isolated_home / ".config/cmem/config.yaml").read_text("utf-8")
    assert f"{claude} -p --model haiku --tools ''" in config
    assert "--no-session-persistence" in config
    rules = [Rule(PASS_PROMPT_MARK, reply_command=QUOTING_MODEL), Rule("hello", reply="Hi.")]
    machine = str(open_vault(root).machine_dir)
    with StandIn(rules, tmp_path / "requests.jsonl") as api:
        env = agent_env("claude-code", api.url, isolated_home)
        status = run_cmem("--vault", str(root), "status", env=env)
        assert f"model: {claude} -p" in status.stdout
        done = run_cmem("--vault", str(root), "converge", env=env, cwd=project)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "pass applied" in done.stdout and "engine llm" in done.stdout
        requests = api.requests()
        # the model was asked with no tools: a pass's model call only writes its reply
        asked = [r for r in requests if PASS_PROMPT_MARK in json.dumps(r["body"])]
        assert asked and all(not r["body"].get("tools") for r in asked)
        # its hooks did nothing: no firing recorded, no session note, no transcript, one pass
        assert hook_record.read_record(machine, "claude-code", "fired") is None
        assert session_notes(root) == []
        assert not list((isolated_home / ".claude/projects").rglob("*.jsonl"))
        log = run_cmem("--vault", str(root), "log", "--json", env=env)
        assert [p["kind"] for p in json.loads(log.stdout)["passes"]] == ["converge"]
        # the control: a session of the user's own in that folder does fire the same hooks
        own = run_agent("claude-code", ["-p", "hello"], cwd=project, env=env)
        assert own.returncode == 0, own.stderr
        wait_for(
            lambda: hook_record.read_record(machine, "claude-code", "fired"),
            what="the user's own session firing the hooks",
        )


def test_a_real_session_is_captured_as_the_user_typed_it(tmp_path, isolated_home):
    """Tool calls, a message typed while the agent works (Claude Code 2.1 keeps it only as a
    queue record) and a custom slash command with its arguments: the note holds exactly the
    user's three messages, once each, in order, and nothing else of the session."""
    import subprocess
    import time

    agent_bin("claude-code")
    root = memory_vault(tmp_path)
    project = tmp_path / "tidepool"
    (project / ".claude/commands").mkdir(parents=True)
    (project / ".claude/commands/orchestrate.md").write_text(
        "---\ndescription: Orchestrate a change\n---\nDo this: $ARGUMENTS\n", "utf-8"
    )
    _install(root, project, "--no-model")
    typed = [
        "rename the helper to parse_notes",
        "check again",
        "/orchestrate update CLAUDE.md to the latest state",
    ]
    slow = [{"name": "Bash", "input": {"command": "sleep 3; echo renamed"}}]
    rules = [
        Rule(typed[0], reply="Renamed.", tools=slow),
        Rule("check again", reply="Checked."),
        Rule("Do this:", reply="Orchestrated."),
    ]
    with StandIn(rules, tmp_path / "requests.jsonl") as api:
        env = agent_env("claude-code", api.url, isolated_home)
        args = ["-p", "--input-format", "stream-json", "--output-format", "stream-json"]
        agent = subprocess.Popen(
            [str(agent_bin("claude-code")), *args, "--verbose", "--allowedTools", "Bash"],
            cwd=project,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert agent.stdin is not None
        for text, pause in zip(typed, (1.5, 1.0, 8.0)):  # the second arrives mid-tool-call
            agent.stdin.write(
                json.dumps({"type": "user", "message": {"role": "user", "content": text}}) + "\n"
            )
            agent.stdin.flush()
            time.sleep(pause)
        _, errors = agent.communicate(timeout=60)
        assert agent.returncode == 0, errors
    wait_for(lambda: session_notes(root), what="the session note")
    (note,) = session_notes(root)
    text = note.read_text("utf-8")
    at = [text.find(line) for line in typed]
    assert all(place >= 0 for place in at) and at == sorted(at), text
    assert all(text.count(line) == 1 for line in typed), text
    assert "Do this:" not in text and "<command-" not in text and "renamed" not in text
