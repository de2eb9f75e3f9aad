"""A last-pass time in the future (issue 35): a clock set back, or another machine's clock
merged in by `cmem sync`, must not hold passes off. Every trigger path asks the one due rule
(`triggers/due.py: due_rule`): `converge --if-due`, `--if-due --scheduled`, the command the shell
and agent hooks run (`setup/hooks.py: trigger_argv`), `cmem watch`'s retry timer, and `status`,
served fresh and from a stored result by the light entry. Real `cmem` processes where the
trigger is one; the future time is written into state.json as a synced pass from a fast clock
leaves it, and committed."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timedelta

import pytest

from cmem.triggers.due import due_rule
from cmem.triggers.if_due import check_due, next_due_at
from cmem.vault.layers import open_vault
from cmem.vault.state_json import load_state
from support import git, run_cmem, run_entry, settle
from trigger_helpers import log_lines, outcomes, pass_commits, trigger_vault, wait_for

HOURLY = "language: en\nmin_interval_minutes: 60\nschedule_hours: 24\n"
MORE = "2026-12-01 more.md"


def future_vault(make_vault, days: float = 30) -> tuple:
    """A vault whose last pass, by state.json, ran `days` from now; something new is pending."""
    root = trigger_vault(make_vault, config=HOURLY)
    done = run_cmem("--vault", str(root), "converge", "--engine", "builtin", "--quiet")
    assert done.returncode == 0, done.stderr
    state_file = root / ".cmem" / "state.json"
    data = json.loads(state_file.read_text("utf-8"))
    ahead = (datetime.now().astimezone() + timedelta(days=days)).isoformat(timespec="seconds")
    data["passes"][-1]["time"] = ahead
    state_file.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", "utf-8")
    (root / MORE).write_text("- I decided to switch to Vue at work.\n", "utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "sync: a pass from a machine whose clock runs ahead")
    return root, ahead


@pytest.mark.parametrize("interval", [timedelta(minutes=60), timedelta(hours=24)])
@pytest.mark.parametrize("ahead", [timedelta(seconds=5), timedelta(days=1), timedelta(days=400)])
def test_the_due_rule_never_waits_on_a_last_pass_in_the_future(interval, ahead):
    now = datetime(2026, 12, 1, 12, 0, tzinfo=datetime.now().astimezone().tzinfo)
    due = due_rule(3, (now + ahead).isoformat(), interval, "the setting", now)
    assert due.due
    assert "in the future" in due.reason and "clock" in due.reason
    # the past still waits as it did, and nothing pending is never due
    assert not due_rule(3, (now - timedelta(seconds=1)).isoformat(), interval, "x", now).due
    assert not due_rule(0, (now + ahead).isoformat(), interval, "x", now).due


def test_next_due_at_does_not_wait_on_a_future_pass(make_vault):
    root, _ = future_vault(make_vault)
    vault = open_vault(root)
    state = load_state(vault.state_file)
    assert next_due_at(vault, state) is None
    assert next_due_at(vault, state, scheduled=True) is None
    assert check_due(vault, state, 1).due and check_due(vault, state, 1, scheduled=True).due


@pytest.mark.parametrize("scheduled", [False, True])
def test_if_due_runs_a_pass_when_the_last_one_is_dated_in_the_future(make_vault, scheduled):
    root, ahead = future_vault(make_vault)
    argv = ["--vault", str(root), "converge", "--if-due", "--json"]
    done = run_cmem(*argv, *(["--scheduled"] if scheduled else []))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "applied"
    assert len(pass_commits(root)) == 2
    # the pass it ran is dated by this machine's clock: the rule is back to its interval
    last = load_state(open_vault(root).state_file).last_of_kind("converge")
    assert last["time"] < ahead


def test_the_hook_command_runs_a_pass_when_the_last_one_is_dated_in_the_future(make_vault):
    """What the shell and agent hooks run on exit, as they run it: detached, quiet."""
    from cmem.setup.hooks import trigger_argv

    root, _ = future_vault(make_vault)
    done = subprocess.run(
        trigger_argv(open_vault(root)), capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    wait_for(lambda: outcomes(root), what="the background pass's outcome line")
    assert outcomes(root) == ["applied"], log_lines(root)
    assert len(pass_commits(root)) == 2


def test_watch_asks_the_same_rule_and_runs_the_pass(make_vault):
    from cmem.triggers.watch import Watcher

    root, _ = future_vault(make_vault)
    said: list[str] = []
    watcher = Watcher(open_vault(root), settle=0, report=said.append)
    assert watcher._check() is None  # the pass ran: no retry to schedule for weeks on
    assert watcher.summary.outcomes == ["applied"] and len(pass_commits(root)) == 2
    assert watcher._retry_time() is None


def test_status_says_due_and_why_fresh_and_stored(make_vault):
    entry = "cmem.cli"
    root, ahead = future_vault(make_vault)
    settle(root)
    answers = []
    for _ in range(2):  # the second is served from the stored result
        code, out, err, _ = run_entry(entry, ["status", "--json", "--vault", str(root)])
        assert code == 0, err
        answers.append(json.loads(out)["due"])
    for due in answers:
        assert due["due"] is True
        assert "in the future" in due["reason"] and ahead[:10] in due["reason"]
    code, out, _, _ = run_entry(entry, ["status", "--vault", str(root)])
    assert "in the future" in out
