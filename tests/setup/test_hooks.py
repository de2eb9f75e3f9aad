"""Session-end hooks in real shells (bash always; zsh and fish when installed) and in a Claude
Code project's settings: idempotent installs, byte-for-byte uninstalls, chained EXIT traps, the
shells' own syntax checks, odd rc files, and an interactive shell whose exit starts a background
pass that commits while the shell has already gone."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from cmem.setup.agent_hooks import (
    agent_hook_status,
    plan_agent_install,
    plan_agent_setup,
    plan_agent_uninstall,
)
from cmem.setup.hooks import HookError, apply_hook_plan, hook_id
from cmem.setup.shell_hooks import (
    find_blocks,
    plan_shell_install,
    plan_shell_uninstall,
    rc_path,
    shell_hook_status,
    shell_snippet,
)
from cmem.steps.lock import is_locked
from cmem.vault.layers import open_vault
from trigger_helpers import (
    gated_model,
    log_lines,
    outcomes,
    pass_commits,
    run_cmem,
    trigger_vault,
    wait_for,
)

SHELLS = [
    pytest.param(
        name,
        marks=pytest.mark.skipif(shutil.which(name) is None, reason=f"{name} is not installed"),
    )
    for name in ("bash", "zsh", "fish")
]
USER_TRAP = {
    "bash": 'trap \'echo "user trap, status $?" >> "$HOME/exit.log"\' EXIT',
    "zsh": 'trap \'echo "user trap" >> "$HOME/exit.log"\' EXIT',
    "fish": "function user_exit --on-event fish_exit\n    echo 'user trap' >> $HOME/exit.log\nend",
}


def install(vault, shell):
    return apply_hook_plan(plan_shell_install(vault, shell), vault)


def uninstall(vault, shell):
    return apply_hook_plan(plan_shell_uninstall(shell, vault), vault)


def syntax_ok(shell: str, path: Path) -> bool:
    flag = "--no-execute" if shell == "fish" else "-n"
    return subprocess.run([shell, flag, str(path)], capture_output=True).returncode == 0


def write_rc(shell: str, data: bytes) -> Path:
    path = rc_path(shell)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("ending", ["newline", "no-final-newline", "crlf"])
def test_three_installs_one_block_and_uninstall_restores_bytes(make_vault, shell, ending):
    vault = open_vault(trigger_vault(make_vault))
    original = {
        "newline": "# my rc\nexport EDITOR=vim\n",
        "no-final-newline": "# my rc\nexport EDITOR=vim",
        "crlf": "# my rc\r\nexport EDITOR=vim\r\n",
    }[ending]
    if shell == "fish":
        original = original.replace("export EDITOR=vim", "set -gx EDITOR vim")
    path = write_rc(shell, original.encode())
    actions = [install(vault, shell).action for _ in range(3)]
    assert actions == ["install", "unchanged", "unchanged"]
    text = path.read_bytes().decode("utf-8")
    assert len(find_blocks(text, path)) == 1 and text.count(">>> cmem hook") == 1
    assert text.startswith(original if ending != "no-final-newline" else original + "\n")
    assert syntax_ok(shell, path)
    assert uninstall(vault, shell).action == "uninstall"
    assert path.read_bytes() == original.encode()
    assert uninstall(vault, shell).action == "absent"


@pytest.mark.parametrize("shell", SHELLS)
def test_missing_rc_is_created_and_uninstall_deletes_it(make_vault, shell):
    vault = open_vault(trigger_vault(make_vault))
    path = rc_path(shell)
    assert not path.exists()
    plan = install(vault, shell)
    assert plan.action == "install" and any("does not exist" in note for note in plan.notes)
    assert syntax_ok(shell, path)
    uninstall(vault, shell)
    assert not path.exists()


def test_a_symlinked_rc_is_edited_at_its_target(make_vault, isolated_home):
    vault = open_vault(trigger_vault(make_vault))
    dotfiles = isolated_home / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "bashrc").write_bytes(b"alias ll='ls -l'\n")
    (isolated_home / ".bashrc").symlink_to("dotfiles/bashrc")
    plan = install(vault, "bash")
    assert any("symlink" in note for note in plan.notes) and plan.target == dotfiles / "bashrc"
    assert (isolated_home / ".bashrc").is_symlink() and b">>> cmem hook" in (
        dotfiles / "bashrc"
    ).read_bytes()
    uninstall(vault, "bash")
    assert (isolated_home / ".bashrc").is_symlink() and (
        dotfiles / "bashrc"
    ).read_bytes() == b"alias ll='ls -l'\n"


def test_a_dangling_symlink_and_a_read_only_rc_are_refused_clearly(make_vault, isolated_home):
    root = trigger_vault(make_vault)
    vault = open_vault(root)
    (isolated_home / ".bashrc").symlink_to("nowhere/bashrc")
    with pytest.raises(HookError, match="does not exist"):
        plan_shell_install(vault, "bash")
    (isolated_home / ".bashrc").unlink()
    path = write_rc("bash", b"export A=1\n")
    path.chmod(0o444)
    with pytest.raises(HookError, match="read-only"):
        plan_shell_install(vault, "bash")
    done = run_cmem("--vault", str(root), "hook", "install", "--shell", "bash", "--yes")
    assert done.returncode == 1 and "read-only" in done.stderr and done.stderr.count("\n") == 1
    assert path.read_bytes() == b"export A=1\n" and stat.S_IMODE(path.stat().st_mode) == 0o444


def test_broken_markers_are_refused(make_vault):
    vault = open_vault(trigger_vault(make_vault))
    path = write_rc("bash", f"# >>> cmem hook ({hook_id(vault)}) >>>\necho half a block\n".encode())
    with pytest.raises(HookError, match="no end marker"):
        plan_shell_install(vault, "bash")
    assert path.read_bytes().count(b"cmem hook") == 1


def test_an_rc_that_already_fails_the_syntax_check_is_noted_not_blamed(make_vault):
    vault = open_vault(trigger_vault(make_vault))
    write_rc("bash", b"if true; then\n  echo unclosed\n")
    plan = plan_shell_install(vault, "bash")
    assert any("already fails" in note for note in plan.notes)


def test_cli_install_shows_the_plan_and_needs_yes_without_a_terminal(make_vault):
    root = trigger_vault(make_vault)
    path = write_rc("bash", b"export A=1\n")
    refused = run_cmem("--vault", str(root), "hook", "install", "--shell", "bash")
    assert (
        refused.returncode == 1
        and "--yes" in refused.stderr
        and path.read_bytes() == b"export A=1\n"
    )
    assert "+ # >>> cmem hook" in refused.stdout  # the plan was shown before the refusal
    done = run_cmem("--vault", str(root), "hook", "install", "--shell", "bash", "--yes", "--json")
    assert json.loads(done.stdout)["plan"]["action"] == "install"
    status = json.loads(run_cmem("--vault", str(root), "hook", "status", "--json").stdout)
    (hook,) = status["hooks"]
    assert (
        hook["kind"] == "bash"
        and hook["current"] is True
        and hook["problems"] == []
        and hook["vault"] == str(root)
    )
    removed = run_cmem("--vault", str(root), "hook", "uninstall", "--shell", "bash", "--yes")
    assert removed.returncode == 0 and path.read_bytes() == b"export A=1\n"


@pytest.mark.parametrize("shell", SHELLS)
def test_show_prints_a_snippet_that_parses(make_vault, shell, tmp_path):
    root = trigger_vault(make_vault)
    done = run_cmem("--vault", str(root), "hook", "show", shell)
    assert done.returncode == 0 and done.stdout == shell_snippet(shell, open_vault(root)) + "\n"
    snippet = tmp_path / f"snippet.{shell}"
    snippet.write_text(done.stdout, "utf-8")
    assert syntax_ok(shell, snippet)


# --- real interactive shells ------------------------------------------------------------


def shell_env(home: Path, **extra) -> dict:
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "TERM": "dumb", "LANG": "C.UTF-8"}
    for name in (
        "XDG_CONFIG_HOME",
        "XDG_STATE_HOME",
        "XDG_CACHE_HOME",
        "XDG_DATA_HOME",
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GIT_CONFIG_NOSYSTEM",
        "NO_COLOR",
    ):
        if name in os.environ:
            env[name] = os.environ[name]
    env.update(extra)
    return env


def exit_interactive(
    shell: str, home: Path, env: dict, script: str = "exit\n"
) -> subprocess.CompletedProcess:
    """An interactive shell reading `script` on stdin, as a terminal session would end."""
    argv = {"bash": ["bash", "-i"], "zsh": ["zsh", "-i"], "fish": ["fish", "-i"]}[shell]
    return subprocess.run(
        argv, input=script, capture_output=True, text=True, env=env, cwd=home, timeout=60
    )


@pytest.mark.parametrize("shell", SHELLS)
def test_the_users_exit_trap_still_runs_and_the_hook_fires(make_vault, isolated_home, shell):
    root = trigger_vault(make_vault, note=False)
    vault = open_vault(root)
    write_rc(shell, (USER_TRAP[shell] + "\n").encode())
    install(vault, shell)
    result = exit_interactive(shell, isolated_home, shell_env(isolated_home), "exit 3\n")
    assert result.returncode == 3
    ran = (isolated_home / "exit.log").read_text("utf-8")
    assert "user trap" in ran
    if shell == "bash":
        assert "status 3" in ran  # the chained trap still sees the shell's exit status
    wait_for(lambda: outcomes(root), what="the hook's due check to log its outcome")
    assert outcomes(root) == ["not-due"] and "trigger=if-due/background" in log_lines(root)[0]


@pytest.mark.parametrize("shell", SHELLS)
def test_interactive_exit_starts_a_background_pass_that_commits(
    make_vault, isolated_home, tmp_path, shell
):
    root = trigger_vault(make_vault)
    vault = open_vault(root)
    install(vault, shell)
    command, gate = gated_model(root, tmp_path)
    # PATH has no cmem: the block names it by absolute path
    result = exit_interactive(shell, isolated_home, shell_env(isolated_home, CMEM_LLM=command))
    assert result.returncode == 0, result.stderr
    # The shell is gone, and the pass it started is still running (held at the model's gate):
    # the exit did not wait for it.
    wait_for((tmp_path / "gate.waiting").exists, what="the background pass to reach the model")
    assert is_locked(vault.machine_dir) and pass_commits(root) == []
    gate.touch()
    wait_for(lambda: pass_commits(root), what="the background pass's commit")
    wait_for(lambda: "applied" in outcomes(root), what="the outcome line")
    assert "running jobs" not in result.stderr and "jobs" not in result.stdout


def pty_session(shell: str, home: Path, env: dict, how: str) -> None:
    """A shell on a pseudo-terminal, ended as a person ends it: `exit`, or closing the window
    (the terminal hangs up while the shell waits at its prompt)."""
    import pty
    import select

    prompt = b"READY-pty> "
    rc = {
        "bash": "PS1='READY-pty> '\n",
        "zsh": "PROMPT='READY-pty> '\n",
        "fish": "function fish_prompt; printf 'READY-pty> '; end\nfunction fish_greeting; end\n",
    }[shell]
    path = rc_path(shell)
    path.write_text(rc + path.read_text("utf-8") if path.exists() else rc, "utf-8")
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(home)
        os.execvpe(shell, [shell, "-i"], env)
    seen = b""
    try:
        while prompt not in seen:
            ready, _, _ = select.select([fd], [], [], 30)
            assert ready, f"no prompt from {shell}: {seen[-300:]!r}"
            seen += os.read(fd, 4096)
        if how == "exit":
            os.write(fd, b"exit\n")
            while select.select([fd], [], [], 30)[0]:
                try:
                    if not os.read(fd, 4096):
                        break
                except OSError:
                    break
    finally:
        os.close(fd)  # the window closes: the pty hangs up on whatever is still attached to it
    os.waitpid(pid, 0)


@pytest.mark.parametrize("how", ["exit", "hangup"])
@pytest.mark.parametrize("shell", SHELLS)
def test_the_started_check_survives_the_terminal_closing(make_vault, isolated_home, shell, how):
    root = trigger_vault(make_vault, note=False)
    install(open_vault(root), shell)
    pty_session(shell, isolated_home, shell_env(isolated_home, TERM="xterm"), how)
    wait_for(
        lambda: outcomes(root),
        what=f"the check started by {shell}'s exit ({how}) to log its outcome",
    )
    assert outcomes(root) == ["not-due"]


def test_resourcing_the_rc_does_not_chain_the_hook_to_itself(make_vault, isolated_home):
    root = trigger_vault(make_vault, note=False)
    write_rc("bash", b"")
    install(open_vault(root), "bash")
    result = exit_interactive(
        "bash",
        isolated_home,
        shell_env(isolated_home),
        "source ~/.bashrc\nsource ~/.bashrc\ntrap -p EXIT\nexit\n",
    )
    assert result.stdout.count("__cmem_exit_") == 1
    wait_for(lambda: outcomes(root), what="the outcome line")
    assert outcomes(root) == ["not-due"]


# --- Claude Code -----------------------------------------------------------------------


SETTINGS = b"""{
    "permissions": {"allow": ["Bash(git status)"]},
    "hooks": {
        "SessionEnd": [{"hooks": [{"type": "command", "command": "echo bye"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]
    },
    "model": "opus"
}"""


def test_claude_code_hook_merges_and_uninstall_restores_bytes(make_vault, tmp_path):
    vault = open_vault(trigger_vault(make_vault))
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    settings = project / ".claude" / "settings.json"
    settings.write_bytes(SETTINGS)
    actions = [
        apply_hook_plan(plan_agent_install(vault, project, scope="shared"), vault).action
        for _ in range(3)
    ]
    assert actions == ["install", "unchanged", "unchanged"]
    data = json.loads(settings.read_text("utf-8"))
    before = json.loads(SETTINGS)
    assert data["permissions"] == before["permissions"] and data["model"] == "opus"
    assert data["hooks"]["PreToolUse"] == before["hooks"]["PreToolUse"]
    session_end = data["hooks"]["SessionEnd"]
    assert session_end[0] == before["hooks"]["SessionEnd"][0] and len(session_end) == 2
    (ours,) = session_end[1]["hooks"]
    assert ours["type"] == "command"
    assert "hook run session-end --agent claude-code" in ours["command"]
    assert f"--vault {vault.root}" in ours["command"] and ours["command"].startswith("/")
    assert ours["timeout"] == 5  # declared: Claude Code's shared 1.5 s is not the limit
    assert (
        apply_hook_plan(plan_agent_uninstall(vault, project, scope="shared"), vault).action
        == "uninstall"
    )
    assert settings.read_bytes() == SETTINGS


def test_claude_code_hook_created_from_nothing_and_removed_entirely(make_vault, tmp_path):
    root = trigger_vault(make_vault)
    project = tmp_path / "project"
    project.mkdir()
    done = run_cmem(
        "--vault",
        str(root),
        "hook",
        "install",
        "--agent",
        "claude-code",
        "--project",
        str(project),
        "--yes",
    )
    assert done.returncode == 0, done.stderr
    # a person's own settings: the project's file kept out of git, never the committed one
    assert not (project / ".claude/settings.json").exists()
    data = json.loads((project / ".claude/settings.local.json").read_text("utf-8"))
    assert list(data) == ["hooks"]
    assert list(data["hooks"]) == ["SessionStart", "SessionEnd", "PreCompact", "Stop"]
    removed = run_cmem(
        "--vault",
        str(root),
        "hook",
        "uninstall",
        "--agent",
        "claude-code",
        "--project",
        str(project),
        "--yes",
    )
    assert removed.returncode == 0 and not (project / ".claude").exists()


def test_claude_code_settings_edited_after_install_keep_the_users_change(make_vault, tmp_path):
    vault = open_vault(trigger_vault(make_vault))
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    settings = project / ".claude" / "settings.json"
    settings.write_bytes(SETTINGS)
    apply_hook_plan(plan_agent_install(vault, project, scope="shared"), vault)
    data = json.loads(settings.read_text("utf-8"))
    data["model"] = "sonnet"
    settings.write_text(json.dumps(data, indent=4), "utf-8")
    plan = apply_hook_plan(plan_agent_uninstall(vault, project, scope="shared"), vault)
    assert any("changed since" in note for note in plan.notes)
    after = json.loads(settings.read_text("utf-8"))
    expected = json.loads(SETTINGS)
    expected["model"] = "sonnet"
    assert after == expected


def test_claude_code_refuses_settings_it_cannot_read(make_vault, tmp_path):
    vault = open_vault(trigger_vault(make_vault))
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text('{"hooks": [1, 2]}', "utf-8")
    with pytest.raises(HookError, match="is not an object"):
        plan_agent_install(vault, project, scope="shared")
    (project / ".claude" / "settings.json").write_text('{"hooks": ', "utf-8")
    with pytest.raises(HookError, match="not valid JSON"):
        plan_agent_install(vault, project, scope="shared")


def test_the_claude_code_command_runs_the_due_check(make_vault, tmp_path):
    root = trigger_vault(make_vault, note=False)
    vault = open_vault(root)
    project = tmp_path / "project"
    project.mkdir()
    apply_hook_plan(plan_agent_install(vault, project), vault)
    command = json.loads((project / ".claude/settings.local.json").read_text("utf-8"))["hooks"][
        "SessionEnd"
    ][0]["hooks"][0]["command"]
    # Claude Code runs the command with a shell and the session's JSON on stdin
    done = subprocess.run(
        ["bash", "-c", command],
        input='{"hook_event_name": "SessionEnd"}',
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""
    wait_for(lambda: outcomes(root), what="the outcome line")
    assert outcomes(root) == ["not-due"]


def test_status_reads_the_shell_and_the_agent_hooks_each_from_its_own_file(make_vault, tmp_path):
    vault = open_vault(trigger_vault(make_vault))
    project = tmp_path / "project"
    project.mkdir()
    assert shell_hook_status(vault) == [] and agent_hook_status(vault, project) == []
    install(vault, "bash")
    for plan in plan_agent_setup(vault, project, "claude-code", with_model=False):
        apply_hook_plan(plan, vault)
    (shell,) = shell_hook_status(vault)
    (agent,) = agent_hook_status(vault, project)
    for hook, kind in ((shell, "bash"), (agent, "claude-code")):
        assert (hook.kind, hook.ident, hook.vault) == (kind, hook_id(vault), str(vault.root))
        assert hook.current is True and hook.problems == []
    # without a vault to compare with, both are listed and neither is judged
    assert [h.current for h in shell_hook_status(None) + agent_hook_status(None, project)] == [
        None,
        None,
    ]
    # an agent entry that no longer runs what `install` would write is out of date
    settings = project / ".claude" / "settings.local.json"
    text = settings.read_text("utf-8").replace("session-end --agent", "session-end  --agent")
    settings.write_text(text, "utf-8")
    (agent,) = agent_hook_status(vault, project)
    assert agent.current is False and "out of date" in agent.problems[0]


def test_agent_instructions_name_the_rules(make_vault):
    root = trigger_vault(make_vault)
    for agent, file_name in (
        ("claude-code", "CLAUDE.md"),
        ("codex", "AGENTS.md"),
        ("generic", None),
    ):
        done = run_cmem("--vault", str(root), "agent-instructions", "--agent", agent)
        text = done.stdout
        assert done.returncode == 0
        assert f"cmem --vault {root} context" in text and f"cmem --vault {root} note" in text
        assert (
            "8 or more tool calls" in text
            and "2 or more kinds of tool" in text
            and "archive/" in text
        )
        assert "Never converge without asking" in text
        if file_name:
            assert file_name in text
    zh = run_cmem("--vault", str(root), "agent-instructions", "--lang", "zh").stdout
    assert "长期记忆" in zh and "8 次以上工具调用" in zh and "archive/" in zh
    assert run_cmem("--vault", str(root), "agent-instructions", "--agent", "emacs").returncode == 2
