"""`cmem converge --backlog` (issue 44): the backlog of an adopted folder converges only with a
model and only when a person asks — the plan first (notes, tokens, batches, cost), a confirm
gate, one pass and one commit per batch said as it ends, a stopped run continuing where it
stopped — and never through an unattended trigger."""

from __future__ import annotations

import json
import sys

import pytest

from cmem.converge.backlog_run import Price, parse_price, plan_backlog
from cmem.converge.pass_values import PassOptions
from cmem.errors import CmemError
from cmem.scan.scanner import scan_vault
from cmem.vault.layers import open_vault
from pass_helpers import FAKE, prompts_sent
from support import git, run_cmem

NOTES = 5
MODEL = f"{sys.executable} {FAKE}"


@pytest.fixture
def adopted(tmp_path):
    root = tmp_path / "vault"
    root.mkdir()
    for day in range(1, NOTES + 1):
        (root / f"2025-01-0{day} diary.md").write_text(
            f"Day {day}: walked to the harbour and read.\n" + "More of the day.\n" * 40, "utf-8"
        )
    done = run_cmem("init", str(root), "--lang", "en")
    assert done.returncode == 0, done.stderr
    return root


@pytest.fixture
def model(tmp_path):
    log = tmp_path / "model.log"
    return log, {
        "FAKE_LLM_MODE": "converge",
        "FAKE_LLM_LOG": str(log),
        "FAKE_LLM_COUNTER": str(tmp_path / "calls"),
    }


def _backlog(root, *args, env=None):
    return run_cmem(
        "converge", "--backlog", "--budget", "500", "--vault", str(root), *args, env=env
    )


def test_without_a_model_the_backlog_waits_and_says_so(adopted):
    done = _backlog(adopted, "--yes")
    assert done.returncode == 1 and "only with a model" in done.stderr
    assert len(scan_vault(open_vault(adopted)).backlog) == NOTES
    done = _backlog(adopted, "--yes", "--engine", "builtin")
    assert done.returncode == 1 and "only with a model" in done.stderr


def test_the_plan_first_then_a_confirm_then_visible_batches(adopted, model):
    log, env = model
    refused = _backlog(adopted, "--llm", MODEL, "--price", "3/15", env=env)
    # the plan is shown, and without a terminal nothing starts without --yes
    assert refused.returncode == 1 and "pass --yes" in refused.stderr
    assert f"backlog: {NOTES} notes" in refused.stdout and f"in ~{NOTES} batches" in refused.stdout
    assert "costs ~$" in refused.stdout and not log.exists()
    head = git(adopted, "rev-parse", "HEAD").strip()
    done = _backlog(adopted, "--llm", MODEL, "--yes", env=env)
    assert done.returncode == 0, done.stderr
    assert "cost: give a price" in done.stdout  # no price: tokens only
    for number in range(1, NOTES + 1):
        assert f"batch {number} of {NOTES}: converged 1 note" in done.stdout
    assert "0 notes left" in done.stdout
    commits = git(adopted, "log", "--format=%s", f"{head}..HEAD").splitlines()
    assert sum(s.startswith("cmem: converge") for s in commits) == NOTES
    assert scan_vault(open_vault(adopted)).backlog == []
    assert len(prompts_sent(log)) == NOTES
    # done: another run has nothing left of the backlog and calls no model
    again = _backlog(adopted, "--llm", MODEL, "--yes", env=env)
    assert again.returncode == 0 and "the backlog is empty" in again.stdout
    assert len(prompts_sent(log)) == NOTES


def test_a_run_that_fails_continues_where_it_stopped(adopted, model):
    log, env = model
    failing = _backlog(adopted, "--llm", MODEL, "--yes", env={**env, "FAKE_LLM_FAIL_AT": "3"})
    assert failing.returncode == 1
    assert "batch 3 of" in failing.stderr and "continues where it stopped" in failing.stderr
    first = prompts_sent(log)
    assert len(first) == 3
    assert len(scan_vault(open_vault(adopted)).backlog) == NOTES - 2
    done = _backlog(adopted, "--llm", MODEL, "--yes", "--json", env=env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["left"] == 0 and len(result["batches"]) == NOTES - 2
    # the notes of the two committed batches were not sent again
    later = prompts_sent(log)[3:]
    converged_first = [p.split('<note path="', 1)[1].split('"', 1)[0] for p in first[:2]]
    assert all(rel not in prompt for rel in converged_first for prompt in later)


def test_the_plan_counts_batches_by_the_budget_and_prices_them(adopted):
    vault = open_vault(adopted)
    one = plan_backlog(vault, PassOptions(budget=500), Price(3, 15))
    assert (one.notes, one.batches) == (NOTES, NOTES)
    assert one.cost == pytest.approx((one.prompt_tokens * 3 + one.reply_tokens * 15) / 1e6)
    whole = plan_backlog(vault, PassOptions(budget=200_000))
    assert whole.batches == 1 and whole.cost is None
    assert parse_price("3") == Price(3, 3) and parse_price("$0.5/2") == Price(0.5, 2)
    with pytest.raises(CmemError, match="INPUT/OUTPUT"):
        parse_price("cheap")


def test_no_unattended_trigger_ever_converges_the_backlog(adopted, model, monkeypatch):
    """--if-due, the timer, the watcher and the agent hooks all reach `converge_if_due`; a
    note written since adoption is theirs, the backlog is not."""
    from cmem.converge.pipeline import PassOptions as Options
    from cmem.triggers.agent_session import converge_after
    from cmem.triggers.if_due import converge_if_due
    from cmem.triggers.watch import Watcher

    log, env = model
    for key, value in {**env, "CMEM_LLM": MODEL}.items():
        monkeypatch.setenv(key, value)
    with open(adopted / ".cmem/config.yaml", "a", encoding="utf-8") as handle:
        handle.write("min_interval_minutes: 0\nschedule_hours: 0\n")  # every trigger is due
    fresh = iter(range(100))
    with_model = {"CMEM_LLM": MODEL}

    def new_note() -> None:
        (adopted / f"2026-11-{next(fresh):02d} notes.md").write_text(
            "Actually the boat leaves at nine.\n", "utf-8"
        )

    triggers = [
        lambda: run_cmem("converge", "--if-due", "--vault", str(adopted), env=with_model),
        lambda: run_cmem(
            "converge", "--if-due", "--scheduled", "--vault", str(adopted), env=with_model
        ),
        lambda: converge_if_due(open_vault(adopted), Options(backlog=True)),
        lambda: converge_after(open_vault(adopted), "claude-code"),
        lambda: Watcher(open_vault(adopted), 0, lambda message: None)._converge(),
    ]
    for trigger in triggers:
        new_note()
        calls = len(prompts_sent(log)) if log.exists() else 0
        trigger()
        assert len(prompts_sent(log)) == calls + 1  # each ran a pass with the model
    assert len(scan_vault(open_vault(adopted)).backlog) == NOTES
    assert all("harbour" not in prompt for prompt in prompts_sent(log))
    # and the command line refuses to try
    refused = run_cmem("converge", "--if-due", "--backlog", "--vault", str(adopted))
    assert refused.returncode == 2 and "only when you ask" in refused.stderr
