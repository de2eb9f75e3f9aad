"""`cmem completion bash|zsh|fish` (issue 14), run in the real shells where they are installed:
commands, subcommands and the fixed choices of options complete on TAB."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def shell_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("CMEM_VAULT",)}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return env


def script(shell: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "cmem", "completion", shell],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


needs_script = pytest.mark.skipif(
    not (BIN / "cmem").exists(), reason="the shells call the installed cmem script"
)


@needs_script
@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completes_commands_and_choices(tmp_path):
    (tmp_path / "c.bash").write_text(script("bash"), encoding="utf-8")
    probe = (
        f"source {tmp_path / 'c.bash'}; complete -p cmem; "
        'COMP_WORDS=(cmem con); COMP_CWORD=1; _cmem_completion cmem; echo "1:${COMPREPLY[*]}"; '
        "COMP_WORDS=(cmem converge --engine ''); COMP_CWORD=3; _cmem_completion cmem; echo \"2:${COMPREPLY[*]}\"; "
        "COMP_WORDS=(cmem hook ''); COMP_CWORD=2; _cmem_completion cmem; echo \"3:${COMPREPLY[*]}\""
    )
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", probe],
        capture_output=True,
        text=True,
        env=shell_env(),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = dict(
        line.split(":", 1) for line in done.stdout.splitlines() if line[:2] in ("1:", "2:", "3:")
    )
    assert set(lines["1"].split()) == {"context", "converge"}
    assert lines["2"].split() == ["builtin", "llm"]
    assert {"install", "uninstall", "show", "status"} <= set(lines["3"].split())


@needs_script
@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_completes_commands_and_choices():
    probe = 'cmem completion fish | source; complete -C "cmem con"; echo ---; complete -C "cmem init --lang "'
    done = subprocess.run(
        ["fish", "--no-config", "-c", probe],
        capture_output=True,
        text=True,
        env=shell_env(),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.split("---\n")
    assert {line.split("\t")[0] for line in first.splitlines()} == {"context", "converge"}
    assert sorted(second.split()) == ["en", "zh"]  # fish sorts them


@needs_script
@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_loads_the_script_and_its_function_offers_the_commands(tmp_path):
    (tmp_path / "c.zsh").write_text(script("zsh"), encoding="utf-8")
    # zsh's completion widgets need a terminal; the function is called with words and CURRENT set
    # as the widget would, and _arguments (which draws the menu) prints what it was given
    probe = (
        f"autoload -U compinit; compinit -u -d {tmp_path}/zcompdump; source {tmp_path / 'c.zsh'}; "
        '_arguments() { print -r -- "$@"; }; words=(cmem con); CURRENT=2; _cmem_completion; '
        "words=(cmem converge --engine ''); CURRENT=4; _cmem_completion"
    )
    done = subprocess.run(
        ["zsh", "-f", "-c", probe], capture_output=True, text=True, env=shell_env(), timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert '"context":' in done.stdout and '"converge":' in done.stdout
    assert '"builtin"' in done.stdout and '"llm"' in done.stdout


def test_an_unknown_shell_is_refused_and_the_help_says_how_to_install():
    done = subprocess.run(
        [sys.executable, "-m", "cmem", "completion", "tcsh"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "bash, zsh or fish" in done.stderr
    helped = subprocess.run(
        [sys.executable, "-m", "cmem", "completion", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (
        'eval "$(cmem completion bash)"' in helped.stdout
        and "completions/cmem.fish" in helped.stdout
    )


def test_hook_show_takes_the_shell_one_way():
    helped = subprocess.run(
        [sys.executable, "-m", "cmem", "hook", "show", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "[SHELL]" in helped.stdout and "--shell" not in helped.stdout
