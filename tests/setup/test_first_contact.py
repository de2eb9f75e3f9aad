"""First contact (issue 14): what the README's Quick start and `cmem demo` tell a new user works
as printed in a new shell, where the venv is not active."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import REPO

VENV_CMEM = Path(sys.executable).parent / "cmem"


def new_shell_env(home: Path) -> dict:
    """A new login's environment: no venv on PATH, no VIRTUAL_ENV."""
    path = os.pathsep.join(
        p
        for p in os.environ.get("PATH", "").split(os.pathsep)
        if Path(p).resolve() != VENV_CMEM.parent.resolve()
    )
    env = {
        k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CMEM_VAULT", "CMEM_LLM")
    }
    env.update(PATH=path, HOME=str(home))
    return env


@pytest.mark.skipif(not VENV_CMEM.exists(), reason="needs the cmem script of an installed venv")
def test_the_demo_try_line_works_as_printed_in_a_new_shell(tmp_path):
    env = new_shell_env(tmp_path)
    assert shutil.which("cmem", path=env["PATH"]) is None or "VIRTUAL_ENV" not in env
    demo = subprocess.run(
        [str(VENV_CMEM), "demo", str(tmp_path / "demo")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert demo.returncode == 0, demo.stderr
    line = re.search(r"^Try: (.+)$", demo.stdout, re.MULTILINE).group(1)
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", line],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, (line, done.stderr)
    assert "cmem: command not found" not in done.stderr and "divergent" in done.stdout


def test_the_readme_quick_start_never_needs_an_active_venv():
    readme = (REPO / "README.md").read_text("utf-8")
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", quick, re.DOTALL)
    assert blocks
    for block in blocks:
        for line in block.splitlines():
            command = line.split("#", 1)[0].strip()
            # a bare `cmem …` works only once the venv is active: the block must activate it first
            if re.match(r"^cmem\b", command):
                assert "source .venv/bin/activate" in block or ". .venv/bin/activate" in block, line
