"""`hook install --agent` as a whole (issues 41, 42): the hooks in a person's own settings, an
older install in a project's committed file moved, the in-session surface beside them, the
agent's CLI offered as the model of unattended passes — and `hook uninstall` giving every file
back byte for byte."""

from __future__ import annotations

import json
import os
import stat

import pytest

from cmem.setup.init import init_vault
from support import run_cmem

SHARED = b'{\n  "permissions": {"allow": ["Bash(npm test)"]},\n  "model": "opus"\n}\n'
USER_CONFIG = b"# my cmem settings\nllm:\n  timeout_seconds: 300  # slow laptop\n"


def _vault(tmp_path):
    root = tmp_path / "vault"
    init_vault(root, "en")
    return root


def _fake_cli(tmp_path, name: str):
    """A stand-in for the agent's CLI on PATH: `hook install` only looks it up."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    program = folder / name
    program.write_text("#!/bin/sh\necho 'codex-cli 0.139.0'\n", "utf-8")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return folder


def _cmem(root, *args, path=None):
    env = {"PATH": f"{path}{os.pathsep}{os.environ['PATH']}"} if path else None
    return run_cmem("--vault", str(root), "hook", *args, "--yes", env=env)


def test_claude_code_hooks_move_out_of_the_committed_file_and_all_comes_back(
    tmp_path, isolated_home
):
    root = _vault(tmp_path)
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    shared = project / ".claude/settings.json"
    shared.write_bytes(SHARED)
    config = isolated_home / ".config/cmem/config.yaml"
    config.parent.mkdir(parents=True)
    config.write_bytes(USER_CONFIG)
    bin_dir = _fake_cli(tmp_path, "claude")
    # an older install in the committed file
    done = _cmem(
        root,
        "install",
        "--agent",
        "claude-code",
        "--project",
        str(project),
        "--shared",
        "--no-model",
    )
    assert done.returncode == 0, done.stderr
    assert b"cmem hook" in shared.read_bytes()
    # the next install goes to the person's own file, and moves it there
    done = _cmem(root, "install", "--agent", "claude-code", "--project", str(project), path=bin_dir)
    assert done.returncode == 0, done.stderr
    assert shared.read_bytes() == SHARED
    local = json.loads((project / ".claude/settings.local.json").read_text("utf-8"))
    assert set(local["hooks"]) == {"SessionStart", "SessionEnd", "PreCompact", "Stop"}
    skill = isolated_home / ".claude/skills/cmem-converge/SKILL.md"
    assert "converge --as-model" in skill.read_text("utf-8")
    text = config.read_text("utf-8")
    assert text.startswith("# my cmem settings") and "timeout_seconds: 300  # slow laptop" in text
    assert f'command: "{bin_dir}/claude -p --model haiku' in text
    status = run_cmem("--vault", str(root), "status", "--json")
    assert json.loads(status.stdout)["model"]["origin"] == "user-config"
    listed = run_cmem("--vault", str(root), "hook", "status", "--project", str(project), "--json")
    (hook,) = json.loads(listed.stdout)["hooks"]
    assert hook["path"].endswith("settings.local.json") and hook["problems"] == []
    assert any("cmem-converge" in note for note in hook["notes"])
    # uninstall: every file as it was
    done = _cmem(root, "uninstall", "--agent", "claude-code", "--project", str(project))
    assert done.returncode == 0, done.stderr
    assert not (project / ".claude/settings.local.json").exists()
    assert shared.read_bytes() == SHARED
    assert not (isolated_home / ".claude/skills/cmem-converge").exists()
    assert config.read_bytes() == USER_CONFIG


def test_a_model_the_user_set_is_never_replaced(tmp_path, isolated_home):
    root = _vault(tmp_path)
    config = isolated_home / ".config/cmem/config.yaml"
    config.parent.mkdir(parents=True)
    config.write_bytes(b"llm:\n  command: ollama run qwen2.5:14b\n")
    done = _cmem(root, "install", "--agent", "codex", path=_fake_cli(tmp_path, "codex"))
    assert done.returncode == 0, done.stderr
    assert config.read_bytes() == b"llm:\n  command: ollama run qwen2.5:14b\n"
    assert "your model command stays as it is" in done.stdout
    done = _cmem(root, "uninstall", "--agent", "codex")
    assert config.read_bytes() == b"llm:\n  command: ollama run qwen2.5:14b\n"


def test_no_model_declines_and_a_user_skill_of_the_same_name_is_left_alone(tmp_path, isolated_home):
    root = _vault(tmp_path)
    mine = isolated_home / ".agents/skills/cmem-converge/SKILL.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("---\nname: cmem-converge\ndescription: mine\n---\nMy own.\n", "utf-8")
    done = _cmem(
        root, "install", "--agent", "codex", "--no-model", path=_fake_cli(tmp_path, "codex")
    )
    assert done.returncode == 0, done.stderr
    assert mine.read_text("utf-8").endswith("My own.\n")
    assert "is not cmem's: it is left as it is" in done.stdout
    assert not (isolated_home / ".config/cmem/config.yaml").exists()
    # an old Codex: hook status says which event it lacks and what captures instead
    listed = run_cmem(
        "--vault", str(root), "hook", "status", "--json",
        env={"PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"},
    )  # fmt: skip
    (hook,) = json.loads(listed.stdout)["hooks"]
    assert any("Codex 0.139.0 has no SessionEnd" in note for note in hook["notes"])
    assert any("cmem-converge command is missing" in problem for problem in hook["problems"])


def test_gemini_gets_a_custom_command_in_the_toml_it_reads(tmp_path, isolated_home):
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    root = _vault(tmp_path)
    done = _cmem(root, "install", "--agent", "gemini", "--no-model")
    assert done.returncode == 0, done.stderr
    command = tomllib.loads(
        (isolated_home / ".gemini/commands/cmem-converge.toml").read_text("utf-8")
    )
    assert set(command) == {"description", "prompt"}  # the keys Gemini CLI's loader reads
    assert "converge --as-model" in command["prompt"]
    done = _cmem(root, "uninstall", "--agent", "gemini")
    assert done.returncode == 0, done.stderr
    assert not (isolated_home / ".gemini/commands").exists()
