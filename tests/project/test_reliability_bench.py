"""bench/reliability.py renders every row of docs/reliability.md and judges the targets (a smoke
test on made-up figures; the real figures come from running the script)."""

from __future__ import annotations

import argparse
import importlib.util

from support import REPO

BENCH = REPO / "bench" / "reliability.py"


def load():
    spec = importlib.util.spec_from_file_location("reliability_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sequences(duplicated: int = 0) -> dict:
    return {
        "command": "python tests/sequence_harness.py",
        "tried": 10,
        "survived": 10 - bool(duplicated),
        "notes_lost": 0,
        "notes_duplicated": duplicated,
        "sequences_losing_a_note": 0,
        "sequences_duplicating_a_note": bool(duplicated),
        "statements_lost": 0,
        "sequences_losing_a_statement": 0,
        "converged_work_lost": 0,
        "sequences_losing_converged_work": 0,
        "not_killed": [],
        "by_pair": {"archive → converge": {"tried": 10, "survived": 10 - bool(duplicated)}},
        "failures_by_kind": {"note duplicated": 1} if duplicated else {},
        "examples": {"note duplicated": "archive replace:2 → converge: [note duplicated] …"}
        if duplicated
        else {},
        "scenarios": {"archive": {"error": None, "points": {"replace": 2}}},
        "seconds": 3.0,
        "jobs": 2,
        "sample": None,
        "failing": ["archive replace:2 → converge: [note duplicated] …"] if duplicated else [],
    }


def figures(lost: int = 0) -> dict:
    phases = {"before": 1, "during": 1, "after": 1, "late": 1}
    replies = {
        "tried": 10,
        "rejected": 10,
        "applied": 0,
        "applied_partly": 0,
        "wrote_outside_allowed": 0,
        "unexpected": [],
    }
    return {
        "crash": {
            "kill_points": ["replace"],
            "trials": 3,
            "survived": 3,
            "fsck_clean": 3,
            "next_run_ok": 3,
            "problems": [],
        },
        "sequences": sequences(),
        "writers": {
            "trials": 4,
            "edits_lost": lost,
            "skipped_writes": 1,
            "skipped_reported": 1,
            "inputs_changed_warned": 1,
            "unreported": 0,
            "partial": 0,
            "by_phase": phases,
            "problems": ["x"] if lost else [],
        },
        "hostile": replies,
        "valid": dict(replies, rejected=0, applied=10),
        "validator": {"hostile_accepted": [], "valid_rejected": []},
        "hung": {
            "cases": 2,
            "within_limit": 2,
            "worst_seconds_over_timeout": 1.0,
            "worst": {"case": "hang"},
            "orphans": 0,
            "locks_left": 0,
            "vaults_changed": 0,
            "peak_rss_mb": 30,
        },
        "index_lock": {"seconds": 5.1, "exit": 1, "names_the_lock": True, "message": "error: …"},
        "hand_written": {"hostile": 56, "valid": 4},
        "seconds": 12.0,
    }


def test_the_report_has_every_row_and_the_command():
    bench = load()
    args = argparse.Namespace(quick=True)
    report = bench.render(figures(), args, 20, 20, 1)
    assert "python bench/reliability.py --quick" in report
    for row in (
        "Crash consistency",
        "Step sequences",
        "python tests/sequence_harness.py",
        "Second writers",
        "index.lock",
        "Hostile replies",
        "Valid replies",
        "Misbehaving model",
    ):
        assert row in report
    assert "**NO**" not in report and bench.all_at_target(figures())


def test_a_lost_edit_is_off_target():
    bench = load()
    assert not bench.all_at_target(figures(lost=1))
    assert "**NO**" in bench.render(figures(lost=1), argparse.Namespace(quick=False), 200, None, 3)


def test_a_duplicated_note_in_a_sequence_is_off_target():
    bench = load()
    duplicated = dict(figures(), sequences=sequences(duplicated=3))
    assert not bench.all_at_target(duplicated)
    report = bench.render(duplicated, argparse.Namespace(quick=False), 200, None, 3)
    assert (
        "**NO**" in report
        and "Step sequences that failed" in report
        and "note duplicated" in report
    )


def test_the_hand_kept_issue_sections_survive_a_rewrite(tmp_path):
    """The `## Issue …` sections are written by people: the script keeps each whole, and no
    other section."""
    bench = load()
    page = tmp_path / "reliability.md"
    page.write_text(
        "# Reliability figures\n\n## What each trial does\n\n- measured\n\n"
        "## Issue 35: one note\n\n| Fault | Rule |\n| --- | --- |\n| a | b |\n\n"
        "<!-- hostile-by-rule:start -->\n## The hand-written hostile corpus\n\nrows\n"
        "## Issue 40: another\n\ntext\n",
        "utf-8",
    )
    assert bench.issue_sections(page) == [
        "## Issue 35: one note\n\n| Fault | Rule |\n| --- | --- |\n| a | b |",
        "## Issue 40: another\n\ntext",
    ]
    kept = bench.issue_sections(REPO / "docs" / "reliability.md")
    assert any("test_undo_amend" in text for text in kept)
