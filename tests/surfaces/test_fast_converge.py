"""The light entry's `cmem converge` (`cmem.fast: run_converge`): only the background spawn every
shell exit makes runs without typer; a pass, by hand or detached, runs through typer (one command
line); anything the light entry does not parse is handed to typer before anything is done."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cmem import fast
from support import SAMPLE_VAULT, git_init
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
def test_a_pass_runs_through_the_one_command_line(tmp_path, kind, argv, code):
    """The light entry hands a pass to typer: both entries print the same, and both import it."""
    answers = []
    for module in ("cmem.fast", "cmem.cli"):
        root = world(tmp_path, kind)
        answers.append(run_entry(module, ["converge", *argv, "--vault", str(root)]))
    assert answers[0][:3] == answers[1][:3]
    assert answers[0][0] == code, answers[0][2]
    assert "typer" in answers[0][3] and "typer" in answers[1][3]


def test_a_pass_waiting_for_the_lock_says_so_as_the_full_cli_does(tmp_path):
    root = world(tmp_path, "sample")
    from cmem.vault.layers import open_vault

    machine = open_vault(root).machine_dir
    machine.mkdir(parents=True, exist_ok=True)
    answers = []
    with open(machine / "pass.lock", "a+") as held:  # another pass holds the vault
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write(json.dumps({"pid": os.getpid(), "purpose": "converge", "since": "now"}))
        held.flush()
        for module in ("cmem.fast", "cmem.cli"):
            answers.append(
                run_entry(module, ["converge", "--engine", "builtin", "--vault", str(root)])
            )
    assert answers[0][:3] == answers[1][:3]
    from cmem.errors import BUSY_EXIT_CODE

    assert answers[0][0] == BUSY_EXIT_CODE and "already running" in answers[0][2]


def test_the_light_pass_starts_a_background_pass_without_typer(tmp_path):
    root = world(tmp_path, "sample")
    code, out, err, modules = run_entry(
        "cmem.fast", ["converge", "--background", "--if-due", "--json", "--vault", str(root)]
    )
    assert code == 0, err
    assert '"status": "started"' in out
    # the hooks run this on every exit: the spawn alone, not the pass's modules
    assert "typer" not in modules and "cmem.converge.pipeline" not in modules
    assert "cmem.converge.engines" not in modules  # no --engine: not even the engines' names


@pytest.mark.parametrize(
    "argv",
    [
        ["converge", "--help"],
        ["converge", "--budget", "900"],
        ["converge", "--response", "reply.xml"],
        ["converge", "--replay", "last"],
        ["converge", "--engine", "gpt"],
        ["converge", "--only"],  # no value: click says so
        ["converge", "--scheduled"],  # without --if-due
        ["converge", "--if-due", "--dry-run"],
        ["converge", "--background", "--diff"],
        ["converge", "--engine", "builtin"],  # a pass: typer runs it
        ["converge", "--if-due", "--detached"],
        ["converge", "--background", "--emit-prompt"],
        ["converge", "stray"],
        ["converge", "--quite"],
        ["converge", "--vault", ""],
        ["status"],
        ["--json", "converge"],
    ],
)
def test_what_the_light_pass_does_not_know_goes_to_the_full_cli(argv):
    assert fast.parse_converge(argv) is None


def test_the_light_pass_reads_options_as_click_does():
    def parse(argv):
        return fast.parse_converge([*argv, "--background"])

    request = parse(
        ["--vault", "a", "--no-color", "converge", "--only", "x.md", "--only=y", "-q", "--vault=b"]
    )
    assert request["vault"] == "b" and request["no_color"] and request["quiet"]
    assert request["only"] == ["x.md", "y"]
    # a value that looks like an option is still the option's value, as click takes it
    assert parse(["converge", "--only", "--json"])["only"] == ["--json"]
    assert parse(["converge", "--llm=llm -m x", "--engine", "llm"])["llm"] == "llm -m x"
    # an option given twice keeps its last value, as click does; a value is a value
    assert parse(["converge", "--engine", "llm", "--engine=builtin"])["engine"] == "builtin"
    assert parse(["converge", "--only", "-q"])["only"] == ["-q"]
