"""Sequences of steps across a crash (tests/sequence_harness.py): a writing step killed at a kill
point, then another command — the notes stay exactly once and no memory is lost.

The default run takes a small sample (one triple per step kind, each with a different next
command); `pytest -m slow` runs every (step, point:n, next command) triple.
"""

import pytest

from sequence_harness import SCENARIOS, run_sequences, summary


def _losses(figures: dict) -> dict:
    return {
        key: figures[key]
        for key in ("notes_lost", "notes_duplicated", "statements_lost", "converged_work_lost")
    }


def test_a_sample_of_sequences_loses_and_duplicates_nothing(tmp_path):
    figures = run_sequences(tmp_path, sample=len(SCENARIOS), seed=10, jobs=2)
    print(summary(figures))
    assert figures["tried"] >= len(SCENARIOS) - 1, figures["not_killed"]
    assert _losses(figures) == dict.fromkeys(_losses(figures), 0), summary(figures)
    assert figures["survived"] == figures["tried"], summary(figures)


@pytest.mark.slow
def test_every_sequence_survives(tmp_path):
    figures = run_sequences(tmp_path)
    print(summary(figures))
    assert figures["tried"] > 500
    assert _losses(figures) == dict.fromkeys(_losses(figures), 0), summary(figures)
    assert figures["survived"] == figures["tried"], summary(figures)
