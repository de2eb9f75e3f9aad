"""`cmem converge` as a user runs it, with a model that misbehaves (issue 6): it returns within
the timeout plus 5 s, leaves no process behind, releases the lock and writes nothing.

test_model_command.py covers the runner itself (hang, grandchild, flood, SIGTERM, stdin, Ctrl-C);
these go through the whole command: the CLI, the pass, the lock, the run record.
"""

from __future__ import annotations

import os

import pytest

import reliability_harness as harness

needs_proc = pytest.mark.skipif(
    not os.path.isdir("/proc/self"), reason="scans /proc for leftover processes"
)


@pytest.fixture
def template(tmp_path):
    return harness.make_corpus_template(tmp_path)


def check(run: dict) -> None:
    assert run["within_limit"], (
        f"{run['case']}: {run['seconds']} s with a {run['timeout']} s timeout"
    )
    assert run["orphans"] == 0 and not run["lock_held"] and run["vault_changed"] == []
    assert "Traceback" not in run["stderr"]


@needs_proc
@pytest.mark.parametrize("case", ["hang", "grandchild-holds-stdout", "ignores-sigterm"])
def test_a_misbehaving_model_cannot_hold_cmem_converge(case, template, tmp_path):
    root, _ = harness.fresh_vault(template, tmp_path, case)
    home = tmp_path / "home"
    home.mkdir()
    run = harness.run_hung_model_case(case, root, home)
    check(run)
    assert run["exit"] == 1
    if (
        case != "grandchild-holds-stdout"
    ):  # that one answers garbage at once; the validator refuses it
        assert "timed out after 1 s" in run["stdout"] and "llm.timeout_seconds" in run["stdout"]


@needs_proc
@pytest.mark.slow
def test_every_misbehaving_model_three_times(tmp_path):
    figures = harness.run_hung_model_trials(tmp_path, repeat=3)
    assert figures["within_limit"] == figures["cases"] == 3 * len(harness.HUNG_CASES)
    assert figures["orphans"] == 0 and figures["locks_left"] == 0 and figures["vaults_changed"] == 0
    assert figures["peak_rss_mb"] < 200
