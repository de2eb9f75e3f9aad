"""The real Codex CLI (npm `@openai/codex`, pinned in tests/agents/package.json), run offline
against the API stand-in on 127.0.0.1 (a model provider in ~/.codex/config.toml speaking the
Responses API), with cmem's hooks as a user installs them: memory reaches the model, the session
is captured without what cmem injected, the cmem-converge skill is offered to the model, and
`codex exec` as the unattended model converges without feeding itself.

Codex runs a hook only once the user trusted it (in /hooks); these runs pass
`--dangerously-bypass-hook-trust` for that. Codex's tools are JavaScript cells (`exec`) that this
stand-in does not write, so the skill's own steps are run by the Claude Code and Gemini CLI tests."""

from __future__ import annotations

import shlex
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
    memory_vault,
    run_agent,
    sent_texts,
    session_notes,
)
from support import run_cmem
from trigger_helpers import wait_for

TRUSTED = "--dangerously-bypass-hook-trust"


def _install(root: Path, *more: str, env: dict | None = None) -> None:
    install_hooks(root, "codex", *more, env=env)


def _exec(prompt: str, project: Path, env: dict) -> None:
    args = ["exec", TRUSTED, "--skip-git-repo-check", "--color", "never", prompt]
    done = run_agent("codex", args, cwd=project, env=env)
    assert done.returncode == 0, done.stderr


def test_memory_reaches_the_model_and_the_session_is_captured(tmp_path, isolated_home):
    agent_bin("codex")
    root = memory_vault(tmp_path)
    project = tmp_path / "tidepool"
    project.mkdir()
    said = "no, we use pnpm here, never npm"
    with StandIn([Rule(said, reply="Got it: pnpm.")], tmp_path / "requests.jsonl") as api:
        env = agent_env("codex", api.url, isolated_home)
        _install(root, "--no-model")
        _exec(said, project, env)
        sent = sent_texts(api.requests())
    assert is_cmem_context(sent) and "short bullet points" in sent
    wait_for(lambda: session_notes(root), what="the session note")
    (note,) = session_notes(root)
    text = note.read_text("utf-8")
    assert said in text
    assert not is_cmem_context(text) and "short bullet points" not in text


def test_the_skill_is_offered_to_the_model(tmp_path, isolated_home):
    agent_bin("codex")
    root = memory_vault(tmp_path)
    project = tmp_path / "tidepool"
    project.mkdir()
    with StandIn([Rule("hello", reply="Hi.")], tmp_path / "requests.jsonl") as api:
        env = agent_env("codex", api.url, isolated_home)
        _install(root, "--no-model")
        _exec("hello", project, env)
        sent = sent_texts(api.requests())
    skill = isolated_home / ".agents/skills/cmem-converge/SKILL.md"
    assert "cmem-converge: Converge the user's long-term memory" in sent
    assert str(skill.relative_to(isolated_home / ".agents/skills")) in sent
    text = skill.read_text("utf-8")
    assert f"--vault {shlex.quote(str(root))} converge --as-model" in text


def test_codex_as_the_unattended_model_converges_without_feeding_itself(tmp_path, isolated_home):
    codex = agent_bin("codex")
    root = memory_vault(tmp_path, {"2026-12-02 notes.md": "I decided to move the blog to Hugo.\n"})
    project = tmp_path / "tidepool"
    project.mkdir()
    rules = [Rule(PASS_PROMPT_MARK, reply_command=QUOTING_MODEL), Rule("hello", reply="Hi.")]
    machine = str(open_vault(root).machine_dir)
    with StandIn(rules, tmp_path / "requests.jsonl") as api:
        env = agent_env("codex", api.url, isolated_home)
        _install(root, env={"PATH": f"{codex.parent}:/usr/bin:/bin"})
        config = (isolated_home / ".config/cmem/config.yaml").read_text("utf-8")
        assert f"{codex} exec --ephemeral --skip-git-repo-check --sandbox read-only" in config
        # the hooks trusted for the model's call too, so only cmem's own guard can stop them
        command = f"{codex} exec {TRUSTED} --ephemeral --skip-git-repo-check --sandbox read-only -"
        done = run_cmem("--vault", str(root), "converge", "--llm", command, env=env, cwd=project)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "pass applied" in done.stdout and "engine llm" in done.stdout
        assert hook_record.read_record(machine, "codex", "fired") is None
        assert not list((isolated_home / ".codex/sessions").rglob("*.jsonl"))  # --ephemeral
        assert session_notes(root) == []
        # the configured command itself runs as the model of a pass too
        (root / "2026-12-03 notes.md").write_text("I decided to read more fiction.\n", "utf-8")
        again = run_cmem("--vault", str(root), "converge", env=env, cwd=project)
        assert again.returncode == 0 and "pass applied" in again.stdout, again.stderr
        # the control: a session of the user's own fires the same hooks
        _exec("hello", project, env)
        wait_for(
            lambda: hook_record.read_record(machine, "codex", "fired"),
            what="the user's own session firing the hooks",
        )
