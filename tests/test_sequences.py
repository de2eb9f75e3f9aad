"""Sequences of steps across a crash (tests/sequence_harness.py): a writing step killed at a kill
point, then another command — the notes stay exactly once and no memory is lost.

The default run takes a small sample (one triple per step kind, each with a different next
command); `pytest -m slow` runs every (step, point:n, next command) triple. Today's write path
recovers only an interrupted *pass*, and only from the next pass or `doctor --fix`, so both are
expected to fail until the step layer (issue 10) lands; the marks then come off.
"""

import pytest

from sequence_harness import SCENARIOS, run_sequences, summary

TODAY = ("issue 10: only a pass is journaled, and only converge and doctor --fix recover it; an interrupted "
         "archive apply or undo is committed half-done by the next step's preflight snapshot (notes twice in HEAD)")


def _losses(figures: dict) -> dict:
    return {key: figures[key] for key in ("notes_lost", "notes_duplicated", "statements_lost", "converged_work_lost")}


@pytest.mark.xfail(strict=False, reason=TODAY)
def test_a_sample_of_sequences_loses_and_duplicates_nothing(tmp_path):
    figures = run_sequences(tmp_path, sample=len(SCENARIOS), seed=10, jobs=2)
    print(summary(figures))
    assert figures["tried"] >= len(SCENARIOS) - 1, figures["not_killed"]
    assert _losses(figures) == dict.fromkeys(_losses(figures), 0), summary(figures)


@pytest.mark.slow
@pytest.mark.xfail(strict=False, reason=TODAY)
def test_every_sequence_survives(tmp_path):
    figures = run_sequences(tmp_path)
    print(summary(figures))
    assert figures["tried"] > 500
    assert _losses(figures) == dict.fromkeys(_losses(figures), 0), summary(figures)
    assert figures["survived"] == figures["tried"], summary(figures)
