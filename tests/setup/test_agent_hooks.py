"""`cmem hook install --agent claude-code|codex|gemini` (docs/design.md §14): marked entries for the
events each agent has, installing again changes nothing, uninstall gives the file back byte for
byte, `hook status` lists them; `agent-instructions` targets AGENTS.md and names cmem by path."""

from __future__ import annotations

import json

import pytest

from cmem.setup.agent_hooks import agent_hook_status, plan_agent_install, plan_agent_uninstall
from cmem.setup.agent_surfaces import plan_surface_install
from cmem.setup.agent_targets import EVENTS, TARGETS
from cmem.setup.hooks import apply_hook_plan, hook_id
from cmem.setup.init import init_vault
from cmem.vault.layers import open_vault
from support import run_cmem

USERS = b"""{
    "hooks": {
        "SessionStart": [{"hooks": [{"type": "command", "command": "echo hello"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
    },
    "theme": "dark"
}
"""


def _vault(tmp_path):
    root = tmp_path / "v"
    init_vault(root, "en")
    return open_vault(root)


@pytest.mark.parametrize("agent", sorted(TARGETS))
def test_each_agent_gets_marked_entries_and_uninstall_gives_the_file_back(
    tmp_path, agent, isolated_home
):
    vault = _vault(tmp_path)
    project = tmp_path / "project"
    target = TARGETS[agent]
    settings = target.settings_path(project)
    settings.parent.mkdir(parents=True)
    settings.write_bytes(USERS)
    plans = [apply_hook_plan(plan_agent_install(vault, project, agent), vault) for _ in range(3)]
    assert [p.action for p in plans] == ["install", "unchanged", "unchanged"]
    apply_hook_plan(plan_surface_install(vault, target, project, "user"), vault)
    data = json.loads(settings.read_text("utf-8"))
    assert data["theme"] == "dark"
    assert data["hooks"]["SessionStart"][0]["hooks"][0]["command"] == "echo hello"
    for event in target.events:
        ours = data["hooks"][event.agent_event][-1]
        (hook,) = ours["hooks"]
        assert hook["command"].startswith("/")  # cmem by absolute path
        assert f"hook run {event.ours} --agent {agent}" in hook["command"]
        assert hook["command"].endswith(f"# cmem hook ({hook_id(vault)})")
        assert hook["timeout"] == event.timeout and ours.get("matcher") == event.matcher
        assert ("name" in hook) is target.named_hooks
    assert {e.ours for e in target.events} <= set(EVENTS)
    assert any("remote" in note for note in plans[0].notes)
    if agent == "codex":
        assert any("trust" in note and "/hooks" in note for note in plans[0].notes)
    (status,) = [h for h in agent_hook_status(vault, project) if h.kind == agent]
    assert status.current is True and status.problems == []
    assert status.events == sorted(e.agent_event for e in target.events)
    assert apply_hook_plan(plan_agent_uninstall(vault, project, agent), vault).action == "uninstall"
    assert settings.read_bytes() == USERS


def test_an_older_cmem_entry_is_updated_in_place(tmp_path):
    vault = _vault(tmp_path)
    project = tmp_path / "project"
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    old = f"/usr/bin/cmem --vault {vault.root} converge --if-due --background --quiet # cmem hook ({hook_id(vault)})"
    settings.write_text(
        json.dumps({"hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": old}]}]}}),
        "utf-8",
    )
    (status,) = agent_hook_status(vault, project)
    assert status.current is False and "out of date" in status.problems[0]
    plan = apply_hook_plan(plan_agent_install(vault, project, scope="shared"), vault)
    assert plan.action == "update"
    data = json.loads(settings.read_text("utf-8"))
    assert len(data["hooks"]["SessionEnd"]) == 1
    assert "converge --if-due" not in json.dumps(data)


def test_codex_and_gemini_default_to_the_users_own_settings(tmp_path, isolated_home):
    vault = _vault(tmp_path)
    for agent, rel in (("codex", ".codex/hooks.json"), ("gemini", ".gemini/settings.json")):
        done = run_cmem("--vault", str(vault.root), "hook", "install", "--agent", agent, "--yes")
        assert done.returncode == 0, done.stderr
        assert (isolated_home / rel).is_file()
        project = tmp_path / f"p-{agent}"
        project.mkdir()
        done = run_cmem(
            "--vault", str(vault.root), "hook", "install", "--agent", agent,
            "--project", str(project), "--yes",
        )  # fmt: skip
        assert done.returncode == 0 and (project / rel).is_file()
    listed = run_cmem("--vault", str(vault.root), "hook", "status", "--json", cwd=tmp_path)
    kinds = sorted(h["kind"] for h in json.loads(listed.stdout)["hooks"])
    assert kinds == ["codex", "gemini"]
    shown = run_cmem("--vault", str(vault.root), "hook", "show", "--agent", "gemini")
    assert json.loads(shown.stdout)["hooks"]["PreCompress"][0]["hooks"][0]["timeout"] == 5000


def test_agent_instructions_target_agents_md_and_name_cmem_by_path(tmp_path):
    vault = _vault(tmp_path)
    for agent in ("claude-code", "codex", "generic"):
        done = run_cmem("--vault", str(vault.root), "agent-instructions", "--agent", agent)
        assert done.returncode == 0 and "AGENTS.md" in done.stdout
        command = next(
            line for line in done.stdout.splitlines() if "context" in line and "--vault" in line
        )
        assert "`/" in command  # an absolute path, not a bare `cmem` the agent's PATH may lack
    assert (
        "cmem hook install --agent codex"
        in run_cmem("--vault", str(vault.root), "agent-instructions", "--agent", "codex").stdout
    )


def test_the_hook_entry_knows_the_same_events_and_agents():
    from cmem import hook_command
    from cmem.triggers import hook_record

    assert hook_command.EVENTS == EVENTS and tuple(TARGETS) == hook_record.AGENT_NAMES
    for target in TARGETS.values():
        for event in target.events:
            assert event.ours in hook_command.AGENT_EVENT_NAMES


def test_the_session_end_hook_imports_neither_typer_nor_the_vault_model(tmp_path):
    """Its answer is the spawn alone: the work's modules load in the detached process."""
    import subprocess
    import sys

    vault = _vault(tmp_path)
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "cmem", "--vault", str(vault.root),
         "hook", "run", "pre-compact", "--agent", "claude-code"],
        input=b"{}", capture_output=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout == b""
    modules = {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines()}
    assert "cmem.hook_command" in modules
    assert not {"cmem.vault.layers", "cmem.sessions.capture"} & modules
