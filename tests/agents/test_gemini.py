"""The real Gemini CLI (npm `@google/gemini-cli`, pinned in tests/agents/package.json), run
offline against the API stand-in on 127.0.0.1 (`GOOGLE_GEMINI_BASE_URL`), with cmem's hooks as a
user installs them: memory reaches the model, the session is captured without what cmem injected,
the /cmem-converge command (expanded by the interactive UI only) has the agent do the pass, and
`gemini` as the unattended model converges without its hooks firing."""

from __future__ import annotations

from pathlib import Path

from agent_api import Rule, StandIn
from cmem.text.own_text import PASS_PROMPT_MARK, is_cmem_context
from cmem.triggers import hook_record
from cmem.vault.layers import open_vault
from real_agents import (
    QUOTING_MODEL,
    agent_bin,
    agent_env,
    install_hooks,
    interactive_session,
    memory_vault,
    run_agent,
    sent_texts,
    session_notes,
)
from support import git, run_cmem
from trigger_helpers import wait_for


def _install(root: Path, *more: str, env: dict | None = None) -> None:
    install_hooks(root, "gemini", *more, env=env)


def test_memory_reaches_the_model_and_the_session_is_captured(tmp_path, isolated_home):
    agent_bin("gemini")
    root = memory_vault(tmp_path)
    project = tmp_path / "tidepool"
    project.mkdir()
    said = "no, we use pnpm here, never npm"
    with StandIn([Rule(said, reply="Got it: pnpm.")], tmp_path / "requests.jsonl") as api:
        env = agent_env("gemini", api.url, isolated_home)
        _install(root, "--no-model")
        done = run_agent("gemini", ["-p", said], cwd=project, env=env)
        assert done.returncode == 0, done.stderr
        assert "Got it: pnpm." in done.stdout
        sent = sent_texts(api.requests())
    assert is_cmem_context(sent) and "short bullet points" in sent
    wait_for(lambda: session_notes(root), what="the session note")
    (note,) = session_notes(root)
    text = note.read_text("utf-8")
    assert said in text
    assert not is_cmem_context(text) and "short bullet points" not in text


def test_the_custom_command_has_the_agent_emit_answer_and_apply(tmp_path, isolated_home):
    agent_bin("gemini")
    root = memory_vault(
        tmp_path, {"2026-12-01 notes.md": "Helix is my editor these days; vim only on servers.\n"}
    )
    project = tmp_path / "tidepool"
    project.mkdir()
    command = isolated_home / ".gemini/commands/cmem-converge.toml"
    steps = [
        {"name": "run_shell_command", "input_from_user": [*QUOTING_MODEL, "--skill"]},
        {"name": "read_file", "input_from": [*QUOTING_MODEL, "--read-prompt"]},
        {"name": "write_file", "input_from": [*QUOTING_MODEL, "--write-reply"]},
        {"name": "run_shell_command", "input_from": [*QUOTING_MODEL, "--apply"]},
    ]
    rules = [Rule("converge --as-model", reply="Memory converged.", tools=steps)]
    with StandIn(rules, tmp_path / "requests.jsonl") as api:
        env = agent_env("gemini", api.url, isolated_home)
        _install(root, "--no-model")
        assert "converge --as-model" in command.read_text("utf-8")

        def converged() -> bool:  # by the agent's reply (Gemini's PreCompress may run a pass too)
            return "Engine: response-file" in git(root, "log", "--format=%B")

        interactive_session(
            "gemini",
            ["--approval-mode", "yolo"],
            cwd=project,
            env=env,
            typed=["/cmem-converge"],
            done=converged,
        )
        results = sent_texts(api.requests())
    # the prompt reached the model, read from its file (Gemini escapes a tool's output as HTML)
    assert PASS_PROMPT_MARK.replace("<", "&lt;") in results or PASS_PROMPT_MARK in results
    assert "Engine: response-file" in git(root, "log", "-1", "--format=%B")
    memory = "".join(p.read_text("utf-8") for p in (root / "converged").rglob("*.md"))
    assert "Helix is my editor these days; vim only on servers." in memory


def test_gemini_as_the_unattended_model_converges_without_feeding_itself(tmp_path, isolated_home):
    gemini = agent_bin("gemini")
    root = memory_vault(tmp_path, {"2026-12-02 notes.md": "I decided to move the blog to Hugo.\n"})
    project = tmp_path / "tidepool"
    project.mkdir()
    rules = [Rule(PASS_PROMPT_MARK, reply_command=QUOTING_MODEL), Rule("hello", reply="Hi.")]
    machine = str(open_vault(root).machine_dir)
    with StandIn(rules, tmp_path / "requests.jsonl") as api:
        env = agent_env("gemini", api.url, isolated_home)
        _install(root, env={"PATH": f"{gemini.parent}:/usr/bin:/bin"})
        config = (isolated_home / ".config/cmem/config.yaml").read_text("utf-8")
        assert f"{gemini} -m flash --approval-mode plan" in config
        done = run_cmem("--vault", str(root), "converge", env=env, cwd=project)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "pass applied" in done.stdout and "engine llm" in done.stdout
        # its hooks did nothing; the transcript Gemini keeps of the call is never captured
        assert hook_record.read_record(machine, "gemini", "fired") is None
        captured = run_cmem("--vault", str(root), "capture", "--agent", "gemini", env=env)
        assert captured.returncode == 0, captured.stderr
        assert session_notes(root) == []
        # the control: a session of the user's own fires the same hooks
        own = run_agent("gemini", ["-p", "hello"], cwd=project, env=env)
        assert own.returncode == 0, own.stderr
        wait_for(
            lambda: hook_record.read_record(machine, "gemini", "fired"),
            what="the user's own session firing the hooks",
        )
