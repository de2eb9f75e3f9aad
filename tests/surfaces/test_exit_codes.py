"""Exit codes and messages a script can trust (issue 35): a refusal a person sees exits non-zero
— a second pass, an undo, an archive apply or a dry run while a pass holds the vault exit
`BUSY_EXIT_CODE` with one line on stderr, `{"status": "busy"}` under `converge --json`, while the unattended
triggers (`--if-due`, `--background`, the hooks, `watch`) stay silent and exit 0. A model command
that is empty or missing is an error before anything is written: `--llm ""` is a usage error
(exit 2), `--engine llm` with no command and a command that is not installed stop before the
snapshot commit and the run record. Real `cmem` processes throughout; the lock is held by this
test process with the step layer's own `vault_lock` (an flock), as a running pass holds it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cmem.errors import BUSY_EXIT_CODE
from cmem.steps.lock import vault_lock
from cmem.vault.layers import open_vault
from support import git, run_entry
from trigger_helpers import log_lines, pass_commits, trigger_vault

ENTRY = "cmem.cli"  # what the installed `cmem` runs


def _commits(root) -> list[str]:
    return git(root, "log", "--format=%s").splitlines()


def _runs(root) -> list[str]:
    runs = open_vault(root).machine_dir / "runs"
    return sorted(p.name for p in runs.iterdir()) if runs.is_dir() else []


@pytest.mark.parametrize(
    "argv",
    [
        ["converge", "--engine", "builtin"],
        ["converge", "--engine", "builtin", "--dry-run"],
        ["converge", "--emit-prompt"],
        ["converge", "--engine", "builtin", "--quiet"],
        ["undo", "--yes"],
        ["archive", "apply", "--all", "--yes"],
    ],
)
def test_an_interactive_command_refused_by_a_running_pass_exits_non_zero(make_vault, argv):
    root = trigger_vault(make_vault)
    assert (
        run_entry("cmem.cli", ["converge", "--engine", "builtin", "-q", "--vault", str(root)])[0]
        == 0
    )
    (root / "2026-12-01 more.md").write_text("- I decided to switch to Vue at work.\n", "utf-8")
    before = _commits(root)
    with vault_lock(open_vault(root).machine_dir, "converge"):
        code, out, err, _ = run_entry(ENTRY, [*argv, "--vault", str(root)])
    assert code == BUSY_EXIT_CODE, (code, out, err)
    if "--quiet" in argv:
        assert (out, err) == ("", "")  # quiet: no word, but the exit code still tells
    else:  # (undo and archive apply show their plan first, on stdout)
        assert "a pass is already running" in err and "nothing was done" in err
        assert out == "" or argv[0] != "converge"
    assert _commits(root) == before


def test_a_busy_pass_under_json_says_busy_and_exits_non_zero(make_vault):
    root = trigger_vault(make_vault)
    with vault_lock(open_vault(root).machine_dir, "converge"):
        code, out, err, _ = run_entry(
            ENTRY, ["converge", "--engine", "builtin", "--json", "--vault", str(root)]
        )
    assert code == BUSY_EXIT_CODE
    data = json.loads(out)
    assert data["status"] == "busy" and "already running" in data["message"]


@pytest.mark.parametrize(
    "argv",
    [
        ["converge", "--if-due"],
        ["converge", "--if-due", "--scheduled"],
        ["converge", "--if-due", "--quiet"],
        ["converge", "--detached"],
    ],
)
def test_an_unattended_trigger_meeting_a_running_pass_is_silent_and_exits_0(make_vault, argv):
    root = trigger_vault(make_vault)
    with vault_lock(open_vault(root).machine_dir, "converge"):
        code, out, err, _ = run_entry(ENTRY, [*argv, "--vault", str(root)])
    assert (code, out, err) == (0, "", "")
    assert pass_commits(root) == []
    assert log_lines(root)[-1].split("\t")[1] == "busy"  # the log still has its one line


def test_the_busy_exit_code_is_documented_in_the_readme_and_the_help():
    from support import REPO

    readme = (REPO / "README.md").read_text("utf-8")
    assert f"exit {BUSY_EXIT_CODE}" in readme
    code, out, err, _ = run_entry("cmem.cli", ["converge", "--help"])
    assert code == 0 and str(BUSY_EXIT_CODE) in " ".join(out.split())


# --- a model command that is empty or missing ------------------------------------------------


@pytest.mark.parametrize("value", ["", "   "])
def test_an_empty_llm_flag_is_a_usage_error_and_nothing_is_written(make_vault, value):
    """`--llm "$LLM"` with the variable unset must not fall back on the builtin engine."""
    root = trigger_vault(make_vault)
    before = _commits(root)
    for argv in (["--llm", value], [f"--llm={value}"], ["--engine", "builtin", "--llm", value]):
        code, out, err, _ = run_entry(ENTRY, ["converge", *argv, "--vault", str(root)])
        assert code == 2, (argv, code, out, err)
        assert "--llm" in err and "empty" in err
        assert _commits(root) == before and _runs(root) == []


@pytest.mark.parametrize("name", ["gpt", "LLM", ""])
def test_an_engine_no_engine_has_is_a_usage_error_and_nothing_is_written(make_vault, name):
    """`--engine` takes only the names `ENGINES` has (the pass is given the name, typed)."""
    root = trigger_vault(make_vault)
    before = _commits(root)
    code, out, err, _ = run_entry(ENTRY, ["converge", "--engine", name, "--vault", str(root)])
    assert code == 2, (code, out, err)
    assert "--engine" in err and "builtin or llm" in err
    assert _commits(root) == before and _runs(root) == []


def test_engine_llm_without_a_command_errors_before_the_snapshot_and_the_run_record(make_vault):
    root = trigger_vault(make_vault)
    (root / "2026-12-01 more.md").write_text("- I decided to switch to Vue at work.\n", "utf-8")
    before = _commits(root)
    code, out, err, _ = run_entry(ENTRY, ["converge", "--engine", "llm", "--vault", str(root)])
    assert code == 1
    assert "--engine llm needs a model command" in err
    assert "asked" not in err and "snapshot" not in err and "committed first" not in err
    assert _commits(root) == before  # no snapshot commit
    assert _runs(root) == []  # no run record, so `cmem log` lists no failed pass
    assert "failed" not in run_entry("cmem.cli", ["log", "--vault", str(root)])[1]
    assert "2026-12-01 more.md" in git(root, "status", "--porcelain")


def test_a_model_command_that_is_not_installed_is_never_said_to_have_been_asked(
    make_vault, tmp_path
):
    root = trigger_vault(make_vault)
    before = _commits(root)
    missing = str(tmp_path / "no-such-model")
    for command in ("no-such-model-cmd-35 -m x", missing):
        code, out, err, _ = run_entry(ENTRY, ["converge", "--llm", command, "--vault", str(root)])
        assert code == 1, err
        assert "not found" in err and "asked once" not in err
        assert _commits(root) == before and _runs(root) == []


def test_a_model_command_that_cannot_start_inside_a_pass_says_the_model_was_not_asked(
    make_vault, monkeypatch, tmp_path
):
    """A command found when the pass began and gone when the engine is asked (uninstalled
    meanwhile): the report counts the rounds the model really answered."""
    from cmem.converge import pipeline
    from cmem.converge.pipeline import PassOptions, run_pass
    from cmem.errors import CmemError

    root = trigger_vault(make_vault)
    script = tmp_path / "model.sh"
    script.write_text("#!/bin/sh\ncat >/dev/null\necho hi\n", "utf-8")
    script.chmod(0o755)
    real = pipeline.choose_engine

    def engine_then_uninstall(*args, **kwargs):
        engine = real(*args, **kwargs)
        script.unlink()  # gone once the pass has chosen its engine
        return engine

    monkeypatch.setattr(pipeline, "choose_engine", engine_then_uninstall)
    with pytest.raises(CmemError) as caught:
        run_pass(open_vault(root), PassOptions(llm=str(script)))
    message = str(caught.value)
    assert "not found" in message and "the model was not asked" in message
    assert "asked once" not in message


def test_the_mcp_converge_tool_refuses_an_empty_model_command(make_vault):
    root = trigger_vault(make_vault)
    from cmem.converge.pipeline import PassOptions, run_pass
    from cmem.errors import UsageError

    with pytest.raises(UsageError, match="--llm"):
        run_pass(open_vault(root), PassOptions(llm=""))
    assert pass_commits(root) == [] and _runs(root) == []


def test_a_busy_watch_stays_silent(make_vault):
    """`cmem watch` reports each pass it runs; a check that met a running pass is not one."""
    from cmem.triggers.if_due import TriggerOutcome
    from cmem.triggers.watch import Watcher

    root = trigger_vault(make_vault)
    said: list[str] = []
    watcher = Watcher(
        open_vault(root),
        settle=0,
        report=said.append,
        verbose=None,
        trigger=lambda: TriggerOutcome("busy", "a pass is already running (pid 1)."),
        rescan_seconds=3600,
    )
    assert watcher._check() is None
    assert said == []


def test_python_dash_m_cmem_exits_with_the_busy_code(make_vault):
    root = trigger_vault(make_vault)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CMEM_")}
    with vault_lock(open_vault(root).machine_dir, "converge"):
        done = subprocess.run(
            [sys.executable, "-m", "cmem", "--vault", str(root), "converge", "--engine", "builtin"],
            capture_output=True,
            text=True,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == BUSY_EXIT_CODE and "already running" in done.stderr
