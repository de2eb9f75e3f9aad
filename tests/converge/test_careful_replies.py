"""Issue 33's bar: a model's replies pass on the first try unless they break a rule the prompt
states. `tests/replies/careful/` holds replies written by a careful model that read nothing but
the prompt of each scenario (`tests/careful_scenarios.py`) — clause-only traces, paraphrased
corrections, partial deferrals, merges, a note in another language than the vault — and each is
applied through the real pass, first time, accounting for every note."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from careful_scenarios import SCENARIOS, build
from cmem.converge.pipeline import PassOptions, run_pass
from cmem.scan.scanner import scan_vault
from cmem.vault.layers import open_vault
from support import TESTS

CAREFUL = TESTS / "replies" / "careful"
REPLIES = sorted(CAREFUL.glob("*/*.txt"))


def test_every_scenario_has_its_replies():
    assert {path.parent.name for path in REPLIES} == set(SCENARIOS)
    assert all(len(list((CAREFUL / name).glob("*.txt"))) >= 3 for name in SCENARIOS)


@pytest.mark.parametrize("reply", REPLIES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_careful_models_reply_passes_first_time(tmp_path, reply: Path):
    name = reply.parent.name
    root = tmp_path / name
    build(root, name)
    now = datetime.fromisoformat(SCENARIOS[name]["date"] + "T18:00:00+00:00")
    vault = open_vault(root)
    selected = {p.rel for p in scan_vault(vault).pending}
    result = run_pass(
        vault, PassOptions(response_text=reply.read_text("utf-8"), now=now, engine="llm")
    )
    assert result.status == "applied", "\n".join(result.errors)
    assert result.rounds == 1
    accounted = set(result.converged) | {d["note"] for d in result.deferred}
    assert accounted == selected
    # nothing is sent again unchanged
    assert scan_vault(open_vault(root)).pending == []
