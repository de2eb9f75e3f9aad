"""CLI habits (issue 14, part 4): global flags after the subcommand, `diff --json`, help that
lists choices and points at the right command."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cmem.commands.app import _hoist_global_flags
from cmem.converge.pipeline import PassOptions, run_pass
from cmem.vault.layers import open_vault
from history_helpers import run_main


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["cmem", "status", "--no-color"], ["cmem", "--no-color", "status"]),
        (["cmem", "--no-color", "status"], ["cmem", "--no-color", "status"]),
        (
            ["cmem", "archive", "list", "--no-color", "--json"],
            ["cmem", "--no-color", "archive", "list", "--json"],
        ),
        (
            ["cmem", "note", "--", "--no-color"],
            ["cmem", "note", "--", "--no-color"],
        ),  # text after --, not a flag
        (["cmem", "status", "--no-color", "--no-color"], ["cmem", "--no-color", "status"]),
        (["cmem"], ["cmem"]),
    ],
)
def test_global_flags_are_hoisted_before_the_subcommand(argv, expected):
    _hoist_global_flags(argv)
    assert argv == expected


def test_no_color_after_the_subcommand_is_accepted(sample_vault):
    done = subprocess.run(
        [sys.executable, "-m", "cmem", "status", "--no-color", "--vault", str(sample_vault)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "\x1b[" not in done.stdout and "layers" in done.stdout


def test_diff_json_has_the_pass_and_its_diff(sample_vault, monkeypatch, capsys):
    result = run_pass(open_vault(sample_vault), PassOptions(engine="builtin"))
    assert result.status == "applied"
    code, out, err = run_main(monkeypatch, capsys, "diff", "--json", "--vault", str(sample_vault))
    assert code == 0, err
    data = json.loads(out)
    assert data["pass"]["id"] == result.pass_id and data["pass"]["kind"] == "converge"
    assert data["diff"].startswith("diff --git") and "converged/" in data["diff"]


def test_diff_json_error_is_json(sample_vault, monkeypatch, capsys):
    code, out, _ = run_main(
        monkeypatch, capsys, "diff", "nosuchpass", "--json", "--vault", str(sample_vault)
    )
    assert code == 1 and "error" in json.loads(out)


def test_help_lists_choices_and_points_propose_at_cmem_apply(monkeypatch, capsys):
    _, out, _ = run_main(monkeypatch, capsys, "converge", "--help")
    assert "[builtin|llm]" in out and "cmem apply" in out and "with --replay" not in out
    _, out, _ = run_main(monkeypatch, capsys, "init", "--help")
    assert "[zh|en]" in out
