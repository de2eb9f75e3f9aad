"""Crash consistency: a pass killed (SIGKILL) between any two steps of its apply and commit leaves
the vault as it was or as it is after the pass, and the next run completes it (crash_harness)."""

import pytest

from crash_harness import POINTS, run_kill_trials, run_trial


@pytest.mark.parametrize("point", POINTS)
def test_killed_at_each_point_first_time(tmp_path, point):
    trial = run_trial(tmp_path, point, 1)
    assert trial.killed, f"the pass never reached {point}"
    assert trial.consistent and trial.fsck_clean and trial.next_run_ok, trial.problems


@pytest.mark.parametrize(
    "point, nth",
    [
        ("replace", 2),
        ("replace", 4),
        ("replace", 6),
        ("rename", 22),
        ("temp-write", 24),
        ("fsync", 26),
    ],
)
def test_killed_between_two_replaces(tmp_path, point, nth):
    trial = run_trial(tmp_path, point, nth)
    assert trial.killed and trial.consistent and trial.fsck_clean and trial.next_run_ok, (
        trial.problems
    )


def test_user_edit_after_a_crash_wins_and_the_pass_is_rolled_back(tmp_path):
    import subprocess

    from crash_harness import _cmem, _fresh

    vault, home = _fresh(tmp_path, "edit")
    assert (
        _cmem(vault, home, "replace:3").returncode == -9
    )  # state, checklist, methodology replaced; profile not yet
    profile = vault / "converged/core/profile.md"
    edited = profile.read_text("utf-8") + "- 用户在崩溃后写的一行（来源：[[2026-09-30 日记]]）\n"
    profile.write_text(edited, encoding="utf-8")
    again = _cmem(vault, home)
    assert again.returncode == 0, again.stderr
    # The new pass rewrote the profile on top of the user's edit: their line is there, whole, after
    # the lines it followed (and the pass's own statements follow it).
    user_line = "- 用户在崩溃后写的一行（来源：[[2026-09-30 日记]]）"
    after = profile.read_text("utf-8").splitlines()
    assert after.count(user_line) == 1
    assert after[after.index(user_line) - 1] == edited.splitlines()[-2]
    methodology = (vault / "converged/core/methodology.md").read_text("utf-8")
    assert (
        "熬夜到两点" in methodology
    )  # (the cue 又 stripped) the new pass ran after the rollback and converged again
    assert "rolled back" in again.stdout + again.stderr
    fsck = subprocess.run(["git", "-C", str(vault), "fsck", "--no-dangling"], capture_output=True)
    assert fsck.returncode == 0


@pytest.mark.slow
def test_every_kill_point_every_time(tmp_path):
    figures = run_kill_trials(None, tmp_path)
    print(figures)
    assert figures["trials"] > 50 and figures["survived"] == figures["trials"], figures["problems"]
