"""Unattended triggers (docs/design.md §7): `converge --if-due` (not due, due, busy, the re-check
under the lock), the three-failures stop, review mode, `--background` (detached, survives SIGHUP,
logs one line per outcome), and the trust gate through the CLI. Real `cmem` processes throughout."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import datetime, timedelta

import pytest

from cmem.converge.pipeline import PassOptions
from cmem.steps.lock import is_locked, vault_lock
from cmem.triggers.if_due import (
    FAILURE_LIMIT,
    check_due,
    converge_if_due,
    load_failures,
    next_due_at,
)
from cmem.vault.layers import open_vault
from cmem.vault.state_json import load_state
from support import TESTS
from trigger_helpers import (
    CMEM,
    CONFIG,
    builtin_reply,
    gated_model,
    log_lines,
    outcomes,
    pass_commits,
    run_cmem,
    trigger_vault,
    wait_for,
)

FAKE = TESTS / "fake_llm.py"


def test_not_due_when_nothing_is_pending_exits_0_quietly(make_vault):
    root = trigger_vault(make_vault, note=False)
    done = run_cmem("--vault", str(root), "converge", "--if-due", "--quiet")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert outcomes(root) == ["not-due"] and "no pending note" in log_lines(root)[0]
    loud = run_cmem("--vault", str(root), "converge", "--if-due")
    assert loud.returncode == 0 and loud.stderr.startswith("not due: no pending note")


def test_due_runs_one_pass_and_logs_its_commit(make_vault):
    root = trigger_vault(make_vault)
    done = run_cmem("--vault", str(root), "converge", "--if-due", "--quiet")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    commits = pass_commits(root)
    assert len(commits) == 1
    line = log_lines(root)[-1]
    assert "\tapplied\t" in line and f"commit={commits[0][:12]}" in line and "pass=" in line


def test_interval_rule_and_next_due_time(make_vault):
    root = trigger_vault(make_vault, config="language: en\nmin_interval_minutes: 60\n")
    assert run_cmem("--vault", str(root), "converge", "--if-due").returncode == 0
    assert len(pass_commits(root)) == 1  # no pass yet: due at once
    (root / "2026-12-01 more.md").write_text("- I decided to switch to Vue at work.\n", "utf-8")
    done = run_cmem("--vault", str(root), "converge", "--if-due", "--json")
    data = json.loads(done.stdout)
    assert data["status"] == "not-due" and "min_interval_minutes (60 min)" in data["reason"]
    assert len(pass_commits(root)) == 1
    vault = open_vault(root)
    state = load_state(vault.state_file)
    last = datetime.fromisoformat(state.passes[-1]["time"])
    assert next_due_at(vault, state) == last + timedelta(minutes=60)
    assert check_due(vault, state, 1, now=last + timedelta(minutes=61)).due
    scheduled = run_cmem("--vault", str(root), "converge", "--if-due", "--scheduled", "--json")
    assert "schedule_hours (24 h)" in json.loads(scheduled.stdout)["reason"]


def test_busy_exits_0_and_is_silent(make_vault):
    root = trigger_vault(make_vault)
    vault = open_vault(root)
    with vault_lock(vault.machine_dir, "test"):
        loud = run_cmem("--vault", str(root), "converge", "--if-due")
        quiet = run_cmem("--vault", str(root), "converge", "--if-due", "--quiet")
    # unattended runs are quiet on a held lock with or without --quiet (`git gc --auto`)
    assert (loud.returncode, loud.stdout, loud.stderr) == (0, "", "")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    assert outcomes(root) == ["busy", "busy"] and pass_commits(root) == []


def test_a_trigger_that_waited_behind_a_pass_rechecks_under_the_lock(make_vault):
    root = trigger_vault(make_vault)
    vault = open_vault(root)
    assert converge_if_due(vault, PassOptions()).status == "applied"
    (root / "2026-12-01 more.md").write_text("- I decided to switch to Vue at work.\n", "utf-8")
    (root / ".cmem/config.yaml").write_text("language: en\nmin_interval_minutes: 60\n", "utf-8")
    vault = open_vault(root)
    options = PassOptions()
    calls = []
    # Simulate the race: the first check says due (as it did before the other pass ended)…
    import cmem.triggers.if_due as triggers

    real = triggers.due_now

    def first_due_then_real(*args, **kwargs):
        calls.append(1)
        return triggers.Due(True, "was due") if len(calls) == 1 else real(*args, **kwargs)

    triggers.due_now = first_due_then_real
    try:
        outcome = converge_if_due(vault, options)
    finally:
        triggers.due_now = real
    # …and the gate, asked under the lock, sees the pass that just happened.
    assert outcome.status == "not-due" and "min_interval_minutes" in outcome.reason
    assert len(calls) == 2 and len(pass_commits(root)) == 1


def test_eight_concurrent_triggers_with_a_slow_model_give_one_pass(make_vault, tmp_path):
    root = trigger_vault(make_vault)
    env = dict(
        os.environ,
        CMEM_LLM=f"{sys.executable} {FAKE}",
        FAKE_LLM_MODE="slow",
        FAKE_LLM_DELAY="1.5",
        FAKE_LLM_REPLY=builtin_reply(root, tmp_path),
        FAKE_LLM_LOG=str(tmp_path / "fake.log"),
    )
    processes = [
        subprocess.Popen(
            [*CMEM, "--vault", str(root), "converge", "--if-due", "--quiet"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    results = [(process.wait(timeout=120), *process.communicate()) for process in processes]
    assert [code for code, _, _ in results] == [0] * 8, results
    assert all(out == "" and err == "" for _, out, err in results), results
    assert len(pass_commits(root)) == 1
    assert (tmp_path / "fake.log").read_text("utf-8").count("\n") == 1  # the model ran once
    seen = outcomes(root)
    assert (
        len(seen) == 8
        and seen.count("applied") == 1
        and set(seen) <= {"applied", "busy", "not-due"}
    )
    print(f"\ntriggers-to-passes: 8 triggers -> 1 pass; outcomes {sorted(seen)}")


def failing_env(tmp_path) -> dict:
    return dict(
        os.environ,
        CMEM_LLM=f"{sys.executable} {FAKE}",
        FAKE_LLM_MODE="fail",
        FAKE_LLM_LOG=str(tmp_path / "fake.log"),
    )


def model_calls(tmp_path) -> int:
    path = tmp_path / "fake.log"
    return path.read_text("utf-8").count("\n") if path.exists() else 0


def test_three_unattended_failures_stop_until_a_person_runs_converge_or_doctor(
    make_vault, tmp_path
):
    root = trigger_vault(make_vault)
    env = failing_env(tmp_path)
    if_due = ("--vault", str(root), "converge", "--if-due", "--quiet")
    for attempt in range(1, FAILURE_LIMIT + 1):
        done = run_cmem(*if_due, env=env)
        assert done.returncode == 1 and "rate limit" in done.stderr
        assert load_failures(open_vault(root)).failures == attempt
    stopped = run_cmem(*if_due, env=env)
    assert (
        stopped.returncode == 1 and model_calls(tmp_path) == FAILURE_LIMIT
    )  # the model was not asked again
    assert (
        "stopped after 3 failures" in stopped.stderr
        and "`cmem converge`" in stopped.stderr
        and "`cmem doctor`" in stopped.stderr
    )
    assert outcomes(root) == ["failed"] * 3 + ["stopped"]

    doctor = run_cmem("--vault", str(root), "doctor", "--json", env=env)
    finding = next(f for f in json.loads(doctor.stdout)["findings"] if f["check"] == "unattended")
    assert (
        finding["level"] == "warn"
        and "3 failures" in finding["message"]
        and "reset" in finding["message"]
    )
    assert load_failures(open_vault(root)).failures == 0
    assert (
        run_cmem(*if_due, env=env).returncode == 1 and model_calls(tmp_path) == FAILURE_LIMIT + 1
    )  # trying again

    for _ in range(FAILURE_LIMIT - 1):
        run_cmem(*if_due, env=env)
    assert load_failures(open_vault(root)).stopped
    person = run_cmem(
        "--vault", str(root), "converge", env=env
    )  # a person's pass: they see the error
    assert person.returncode == 1 and "rate limit" in person.stderr
    assert load_failures(open_vault(root)).failures == 0
    assert run_cmem(*if_due, env=env).stderr.count("stopped") == 0


def test_success_resets_the_failure_count(make_vault, tmp_path):
    root = trigger_vault(make_vault)
    run_cmem("--vault", str(root), "converge", "--if-due", env=failing_env(tmp_path))
    assert load_failures(open_vault(root)).failures == 1
    assert (
        run_cmem("--vault", str(root), "converge", "--if-due", "--engine", "builtin").returncode
        == 0
    )
    assert load_failures(open_vault(root)).failures == 0 and len(pass_commits(root)) == 1


def test_review_mode_unattended_runs_only_propose(make_vault):
    root = trigger_vault(make_vault, config=CONFIG + "review: true\n")
    first = json.loads(run_cmem("--vault", str(root), "converge", "--if-due", "--json").stdout)
    assert first["status"] == "proposed" and pass_commits(root) == []
    second = json.loads(run_cmem("--vault", str(root), "converge", "--if-due", "--json").stdout)
    assert second["status"] == "not-due" and "waiting for review" in second["reason"]
    assert outcomes(root) == ["proposed", "not-due"]


def test_background_detaches_survives_sighup_and_logs_the_outcome(make_vault, tmp_path):
    root = trigger_vault(make_vault)
    command, gate = gated_model(root, tmp_path)
    env = dict(os.environ, CMEM_LLM=command)
    started = run_cmem(
        "--vault", str(root), "converge", "--if-due", "--background", "--json", env=env
    )
    assert started.returncode == 0
    info = json.loads(started.stdout)
    assert info["status"] == "started" and info["log"].endswith("cmem.log")
    child = info["pid"]
    # The launcher has returned; the pass is still running, held at the model's gate.
    waiting = tmp_path / "gate.waiting"
    wait_for(waiting.exists, what="the detached pass to reach the model")
    vault = open_vault(root)
    assert is_locked(vault.machine_dir) and pass_commits(root) == []
    assert os.getsid(child) == child != os.getsid(0)  # its own session: no terminal to lose
    os.kill(child, signal.SIGHUP)  # what closing the terminal would send
    gate.touch()
    wait_for(lambda: pass_commits(root), what="the background pass's commit")
    wait_for(lambda: "applied" in outcomes(root), what="the outcome line")
    line = log_lines(root)[-1]
    assert "trigger=if-due/background" in line and f"commit={pass_commits(root)[0][:12]}" in line


def test_background_rejects_flags_that_write_nothing(make_vault):
    root = trigger_vault(make_vault)
    done = run_cmem("--vault", str(root), "converge", "--background", "--dry-run")
    assert done.returncode == 2 and pass_commits(root) == []
    assert run_cmem("--vault", str(root), "converge", "--scheduled").returncode == 2


def test_a_person_asking_for_background_gets_a_logged_pass(make_vault):
    root = trigger_vault(make_vault, config="language: en\nmin_interval_minutes: 600\n")
    assert run_cmem("--vault", str(root), "converge", "--background", "--quiet").returncode == 0
    wait_for(lambda: outcomes(root), what="the outcome line")
    assert outcomes(root) == ["applied"] and "trigger=background" in log_lines(root)[0]


# --- the trust gate through the CLI ------------------------------------------------------


def test_trust_gate_through_the_cli(make_vault, tmp_path):
    command = f"{sys.executable} {FAKE}"
    root = trigger_vault(
        make_vault, config=f'language: en\nmin_interval_minutes: 0\nllm:\n  command: "{command}"\n'
    )
    env = dict(os.environ, FAKE_LLM_MODE="fail", FAKE_LLM_LOG=str(tmp_path / "fake.log"))
    refused = run_cmem("--vault", str(root), "converge", env=env)
    assert (
        refused.returncode == 1 and "`cmem trust`" in refused.stderr and command in refused.stderr
    )
    assert model_calls(tmp_path) == 0

    unattended = run_cmem("--vault", str(root), "converge", "--if-due", "--quiet", env=env)
    assert (
        unattended.returncode == 1
        and "`cmem trust`" in log_lines(root)[-1]
        and model_calls(tmp_path) == 0
    )

    trusted = run_cmem("--vault", str(root), "trust", "--yes", env=env)
    assert trusted.returncode == 0 and command in trusted.stdout and "trusted" in trusted.stdout
    again = json.loads(run_cmem("--vault", str(root), "trust", "--json", env=env).stdout)
    assert again["action"] == "already-trusted" and len(again["command_sha256"]) == 64
    ran = run_cmem("--vault", str(root), "converge", env=env)
    assert "rate limit" in ran.stderr and model_calls(tmp_path) == 1  # trusted: the command ran

    (root / ".cmem/config.yaml").write_text(
        f'language: en\nllm:\n  command: "{command} --other"\n', "utf-8"
    )
    changed = run_cmem("--vault", str(root), "converge", env=env)
    assert (
        changed.returncode == 1
        and "changed since you trusted it" in changed.stderr
        and model_calls(tmp_path) == 1
    )
    assert (
        json.loads(run_cmem("--vault", str(root), "trust", "--json", "--yes", env=env).stdout)[
            "action"
        ]
        == "retrusted"
    )
    revoked = run_cmem("--vault", str(root), "trust", "--revoke", env=env)
    assert revoked.returncode == 0 and "revoked" in revoked.stdout
    assert "`cmem trust`" in run_cmem("--vault", str(root), "converge", env=env).stderr
    assert model_calls(tmp_path) == 1


def test_trust_with_no_command_says_so(make_vault):
    root = trigger_vault(make_vault)
    done = run_cmem("--vault", str(root), "trust")
    assert done.returncode == 0 and "nothing to trust" in done.stdout


def test_status_reports_stopped_unattended_runs(make_vault, tmp_path):
    root = trigger_vault(make_vault)
    for _ in range(FAILURE_LIMIT):
        run_cmem("--vault", str(root), "converge", "--if-due", env=failing_env(tmp_path))
    data = json.loads(run_cmem("--vault", str(root), "status", "--json").stdout)
    assert data["unattended"]["stopped"] is True and data["unattended"]["failures"] == 3
    text = run_cmem("--vault", str(root), "status").stdout
    assert "unattended passes are stopped" in text


@pytest.mark.parametrize("outcome_status", ["applied", "not-due"])
def test_log_lines_are_one_per_outcome_and_tab_separated(make_vault, outcome_status):
    root = trigger_vault(make_vault, note=outcome_status == "applied")
    converge_if_due(open_vault(root), PassOptions())
    lines = log_lines(root)
    assert len(lines) == 1
    fields = lines[0].split("\t")
    datetime.fromisoformat(fields[0])
    assert fields[1] == outcome_status and fields[2] == "trigger=if-due"
