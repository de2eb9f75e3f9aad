"""Shared by the trigger, hook and watch tests: a vault with something pending, a model that
waits at a gate, real `cmem` processes, and polling with a deadline (never a sleep as an assertion)."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

from support import (
    git,
    run_cmem,  # noqa: F401 (the trigger tests import it from here)
)

NOTE = "2026-11-30 notes.md"
NOTE_TEXT = "# Notes\n\n- Actually, I prefer Svelte over React for side projects.\n"
CONFIG = "language: en\nmin_interval_minutes: 0\nllm:\n  timeout_seconds: 120\n"
CMEM = [sys.executable, "-m", "cmem"]

GATED_MODEL = """\
import os, sys, time
gate, reply = sys.argv[1], sys.argv[2]
sys.stdin.read()
with open(gate + ".waiting", "a") as handle:
    handle.write(str(os.getpid()) + "\\n")
deadline = time.monotonic() + 120
while not os.path.exists(gate) and time.monotonic() < deadline:
    time.sleep(0.02)
sys.stdout.write(open(reply, encoding="utf-8").read())
"""


def trigger_vault(make_vault, config: str = CONFIG, note: bool = True) -> Path:
    return make_vault({NOTE: NOTE_TEXT} if note else {}, config_yaml=config, git=True)


def wait_for(predicate, timeout: float = 60.0, what: str = "the condition"):
    """Poll until `predicate()` is truthy; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.05)


def pass_commits(root: Path) -> list[str]:
    out = git(root, "log", "--format=%H %s")
    return [line for line in out.splitlines() if ": converge " in line]


def log_lines(root: Path) -> list[str]:
    from cmem.triggers.if_due import read_log
    from cmem.vault.layers import open_vault

    return read_log(open_vault(root))


def outcomes(root: Path) -> list[str]:
    return [line.split("\t")[1] for line in log_lines(root)]


def builtin_reply(root: Path, scratch: Path) -> str:
    """A valid response for this vault's pending notes: what the builtin engine answers on a copy."""
    from cmem.converge.pipeline import PassOptions, run_pass
    from cmem.vault.layers import open_vault

    copy = scratch / "reply-source"
    shutil.copytree(root, copy)
    result = run_pass(open_vault(copy), PassOptions(engine="builtin", dry_run=True))
    assert result.status == "dry-run", result.errors
    return (Path(result.run_dir) / "response-1.txt").read_text("utf-8")


def gated_model(root: Path, scratch: Path) -> tuple[str, Path]:
    """(model command, gate path): the model answers a valid reply once the gate file exists."""
    script = scratch / "gated_model.py"
    script.write_text(GATED_MODEL, "utf-8")
    reply = scratch / "reply.txt"
    reply.write_text(builtin_reply(root, scratch), "utf-8")
    gate = scratch / "gate"
    return f"{sys.executable} {script} {gate} {reply}", gate
