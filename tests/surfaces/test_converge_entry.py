"""`cmem converge` through the installed entry: a pass, the background spawn every shell exit
makes, and the usage errors of its options, each said before anything is done."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from support import SAMPLE_VAULT, git, git_init
from support import run_entry as shared_run_entry

GIT_DATES = {
    "GIT_AUTHOR_DATE": "2026-11-30T12:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-11-30T12:00:00+00:00",
}
# A pass's id holds its time and four random hex digits (its run record's folder is named by it);
# its commits name it, so their ids differ too.
PASS_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{4}|\b[0-9a-f]{8}\b|\b[0-9a-f]{40}\b")


def world(tmp_path: Path, kind: str) -> Path:
    """The sample vault, built afresh at the same path each call (reports name its path) with a
    machine folder of its own, in the state `kind` names."""
    root = tmp_path / "vault"
    shutil.rmtree(root, ignore_errors=True)
    shutil.rmtree(Path(os.environ["XDG_STATE_HOME"]) / "cmem", ignore_errors=True)
    shutil.copytree(SAMPLE_VAULT, root, symlinks=True)
    git_init(root)
    if kind == "converged":  # nothing is pending any more
        assert (
            run_entry("cmem.cli", ["converge", "--engine", "builtin", "-q", "--vault", str(root)])[
                0
            ]
            == 0
        )
    elif kind == "untrusted":  # a model command named only in the vault's own config
        config = root / ".cmem" / "config.yaml"
        config.write_text(config.read_text("utf-8") + "\nllm:\n  command: my-model\n", "utf-8")
        subprocess.run(["git", "-C", str(root), "commit", "-qam", "model"], check=True)
    return root


def run_entry(module: str, argv: list[str]) -> tuple[int, str, str, set[str]]:
    code, out, err, modules = shared_run_entry(module, argv, GIT_DATES)
    return code, PASS_ID.sub("PASS", out), PASS_ID.sub("PASS", err), modules


@pytest.mark.parametrize(
    "kind, argv, code",
    [
        ("sample", ["--engine", "builtin", "--quiet"], 0),
        ("sample", ["--only", "no such note", "--json"], 1),
        ("sample", ["--if-due", "--json", "--scheduled"], 0),
        ("converged", ["--if-due", "--json"], 0),
    ],
)
def test_a_pass_runs_through_the_entry(tmp_path, kind, argv, code):
    root = world(tmp_path, kind)
    found, out, err, _ = run_entry("cmem.cli", ["converge", *argv, "--vault", str(root)])
    assert found == code, err
    assert (out + err).strip() or "--quiet" in argv


def test_a_pass_waiting_for_the_lock_says_so(tmp_path):
    root = world(tmp_path, "sample")
    from cmem.vault.layers import open_vault

    machine = open_vault(root).machine_dir
    machine.mkdir(parents=True, exist_ok=True)
    with open(machine / "pass.lock", "a+") as held:  # another pass holds the vault
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write(json.dumps({"pid": os.getpid(), "purpose": "converge", "since": "now"}))
        held.flush()
        code, _, err, _ = run_entry(
            "cmem.cli", ["converge", "--engine", "builtin", "--vault", str(root)]
        )
    from cmem.errors import BUSY_EXIT_CODE

    assert code == BUSY_EXIT_CODE and "already running" in err


def test_the_background_spawn_imports_no_pass(tmp_path):
    root = world(tmp_path, "sample")
    code, out, err, modules = run_entry(
        "cmem.cli", ["converge", "--background", "--if-due", "--json", "--vault", str(root)]
    )
    assert code == 0, err
    assert '"status": "started"' in out
    # the shell hook runs this on every exit: the spawn alone, not the pass's modules
    assert "cmem.converge.pipeline" not in modules and "cmem.vault.notes" not in modules


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--engine", "gpt"], "--engine"),
        (["--only"], "--only"),  # no value
        (["--scheduled"], "--if-due"),  # without --if-due
        (["--if-due", "--dry-run"], "--dry-run"),
        (["--background", "--diff"], "--diff"),
        (["--background", "--emit-prompt"], "--emit-prompt"),
        (["stray"], "stray"),
        (["--quite"], "--quite"),
        (["--llm", " "], "--llm"),
        (["--budget", "12"], "--budget"),
    ],
)
def test_a_usage_error_is_said_before_anything_is_done(tmp_path, argv, words):
    root = world(tmp_path, "sample")
    before = git(root, "log", "--format=%H")
    code, out, err, _ = run_entry("cmem.cli", ["--vault", str(root), "converge", *argv])
    assert code == 2 and words in err and out == "", err
    assert git(root, "log", "--format=%H") == before
