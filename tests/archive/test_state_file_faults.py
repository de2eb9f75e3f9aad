"""A `state.json` that is missing, empty or broken in the working copy (issue 35): `undo` over it
committed `"notes": {}`, so the notes converged by passes it did not undo became pending and
were converged twice. No step may write a state.json built from a broken working copy: every
step refuses it before anything is written — one sentence naming the file and the way out —
and never commits it as "your edits" in a snapshot; `cmem doctor` names it and `doctor --fix`
restores it from git, as a step. Where git's HEAD has no valid one either (the deletion was
committed), undo takes the state from git: the undone step's own. Real `cmem` processes and
real passes of the builtin engine."""

from __future__ import annotations

import json

import pytest

from support import git, run_cmem
from trigger_helpers import NOTE, pass_commits, trigger_vault

STATE = ".cmem/state.json"
SECOND = "2026-12-01 more.md"
BREAKS = {
    "empty": b"",
    "blank": b"\n  \n",
    "missing": None,
    "truncated": b'{\n "version": 1,\n "notes": {\n  "2026-11-30 notes.md": {"sha',
    "not-state": b"[]\n",
}


def two_passes(make_vault):
    """NOTE converged by a first pass, SECOND by a second: an undo takes back the second only."""
    root = trigger_vault(make_vault)
    for note in (None, SECOND):
        if note:
            (root / note).write_text("- I decided to switch to Vue at work.\n", "utf-8")
        done = run_cmem("--vault", str(root), "converge", "--engine", "builtin", "--quiet")
        assert done.returncode == 0, done.stderr
    assert len(pass_commits(root)) == 2
    notes = json.loads((root / STATE).read_text("utf-8"))["notes"]
    assert NOTE in notes and SECOND in notes
    return root


def break_state(root, how: str) -> None:
    data = BREAKS[how]
    if data is None:
        (root / STATE).unlink()
    else:
        (root / STATE).write_bytes(data)


def head_state(root) -> dict:
    return json.loads(git(root, "show", f"HEAD:{STATE}"))


@pytest.mark.parametrize("how", sorted(BREAKS))
def test_undo_refuses_a_broken_state_file_and_doctor_fix_restores_it(make_vault, how):
    root = two_passes(make_vault)
    head = git(root, "rev-parse", "HEAD")
    break_state(root, how)
    done = run_cmem("--vault", str(root), "undo", "--yes")
    assert done.returncode == 1, done.stdout
    message = done.stderr.strip()
    assert STATE in message and "doctor --fix" in message
    assert "nothing was written" in message
    assert git(root, "rev-parse", "HEAD") == head  # no snapshot of the broken file, no undo
    # doctor names it, --fix restores it from git as a step
    findings = json.loads(run_cmem("--vault", str(root), "doctor", "--json").stdout)["findings"]
    named = [f for f in findings if f["check"] == "state" and f["level"] == "error"]
    assert named and STATE in named[0]["message"], findings
    fixed = run_cmem("--vault", str(root), "doctor", "--fix", "--yes", "--json")
    data = json.loads(fixed.stdout)
    assert fixed.returncode == 0, fixed.stdout
    assert any(STATE in line for line in data["fixed"])
    assert git(root, "status", "--porcelain", "--", STATE) == ""
    assert json.loads((root / STATE).read_text("utf-8")) == head_state(root)
    # and now undo takes back the second pass only
    done = run_cmem("--vault", str(root), "undo", "--yes")
    assert done.returncode == 0, done.stderr
    notes = json.loads((root / STATE).read_text("utf-8"))["notes"]
    assert NOTE in notes and SECOND not in notes


@pytest.mark.parametrize("how", ["empty", "missing", "truncated"])
@pytest.mark.parametrize(
    "argv",
    [["converge", "--engine", "builtin"], ["archive", "apply", "--all", "--yes"], ["sync"]],
)
def test_no_step_commits_a_broken_state_file(make_vault, tmp_path, how, argv):
    root = two_passes(make_vault)
    if argv == ["sync"]:  # a remote to sync with, up to date
        remote = tmp_path / "remote.git"
        git(tmp_path, "init", "-q", "--bare", str(remote))
        git(root, "remote", "add", "origin", str(remote))
        git(root, "push", "-q", "-u", "origin", "main")
    (root / "2026-12-02 third.md").write_text("- Actually, I prefer tea at night.\n", "utf-8")
    head = git(root, "rev-parse", "HEAD")
    break_state(root, how)
    done = run_cmem("--vault", str(root), *argv)
    assert done.returncode != 0
    assert STATE in done.stderr, done.stderr
    assert git(root, "rev-parse", "HEAD") == head
    assert head_state(root)["notes"].keys() >= {NOTE, SECOND}


def test_a_deletion_committed_by_hand_is_undone_from_gits_own_state(make_vault):
    """HEAD has no state.json (the user committed its deletion): undo takes the state the undone
    pass wrote, so the first pass's notes stay converged."""
    root = two_passes(make_vault)
    git(root, "rm", "-q", STATE)
    git(root, "commit", "-qm", "oops")
    findings = json.loads(run_cmem("--vault", str(root), "doctor", "--json").stdout)["findings"]
    assert any(
        f["check"] == "state" and f["level"] != "ok" and STATE in f["message"] for f in findings
    )
    done = run_cmem("--vault", str(root), "undo", "--yes")
    assert done.returncode == 0, done.stderr
    notes = json.loads((root / STATE).read_text("utf-8"))["notes"]
    assert NOTE in notes and SECOND not in notes


def test_doctor_fix_restores_a_deletion_committed_by_hand_from_history(make_vault):
    root = two_passes(make_vault)
    kept = (root / STATE).read_bytes()
    git(root, "rm", "-q", STATE)
    git(root, "commit", "-qm", "oops")
    fixed = run_cmem("--vault", str(root), "doctor", "--fix", "--yes")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert (root / STATE).read_bytes() == kept
    assert git(root, "show", f"HEAD:{STATE}").encode() == kept  # committed, as a step
    assert git(root, "status", "--porcelain") == ""


def test_init_over_a_vault_whose_state_file_was_deleted_restores_it(make_vault):
    """`cmem init` on an existing vault creates what is missing: never an empty state where git
    holds the real one."""
    root = two_passes(make_vault)
    kept = (root / STATE).read_bytes()
    (root / STATE).unlink()
    done = run_cmem("init", str(root))
    assert done.returncode == 0, done.stderr
    assert (root / STATE).read_bytes() == kept
