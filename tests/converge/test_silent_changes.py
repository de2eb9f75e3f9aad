"""Two replies the validator let through silently (issue 43).

A trace whose date is a word (`(updated yesterday, was: …)`) is no trace: kept as statement
text, `cmem trace` never sees the change, so rule 5 refuses it, in either language's trace format
and in a configured one. A statement changed without a trace by a word none of its sources holds
(`I sometimes live in Berlin` for `I live in Berlin`) is warned about, sent back once, and
recorded in the commit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cmem.converge.pipeline import PassOptions, run_pass
from cmem.converge.validator.response import parse_response
from cmem.converge.validator.validate import PassContext, validate_response
from cmem.vault.layers import open_vault
from pass_helpers import FAKE, model_env, prompts_sent
from support import git

FACTS = "converged/topics/home.md"
OLD_NOTE = "archive/2026-10/2026-10-01 notes.md"
NOTE = "2026-11-08 notes.md"
EN = "language: en\nrepair_rounds: 0\n"


def _vault(
    make_vault,
    config: str = EN,
    statement: str = "- I live in Berlin. (source: [[2026-10-01 notes]])\n",
) -> Path:
    return make_vault(
        {
            FACTS: f"# Home\n\n{statement}",
            OLD_NOTE: "I live in Berlin.\n",
            NOTE: "Moved to Lisbon in November.\nThe flat is small but bright.\n",
        },
        config_yaml=config,
        git=True,
    )


def _cmem(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CMEM_")}
    return subprocess.run(
        [sys.executable, "-m", "cmem", *args, "--vault", str(root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


def _reply(statement: str, heading: str = "# Home") -> str:
    return (
        f'<convergence>\n<file path="{FACTS}">\n{heading}\n\n{statement}\n</file>\n'
        f'<converged note="{NOTE}" into="{FACTS}"/>\n</convergence>\n'
    )


def _validate(root: Path, text: str, date: str = "2026-11-29"):
    vault = open_vault(root)
    ctx = PassContext(
        pass_date=date,
        selected=[NOTE],
        originals={FACTS: (root / FACTS).read_text("utf-8")},
        note_names=vault.note_names(),
    )
    return validate_response(vault, parse_response(text), ctx)


WORD_DATES = [
    "- I live in Lisbon. (updated yesterday, was: I live in Berlin.) (source: [[2026-11-08 notes]])",
    "- I live in Lisbon. (updated 29 Nov 2026, was: I live in Berlin.) (source: [[2026-11-08 notes]])",
    "- I live in Lisbon. (updated 2026-11-8, was: I live in Berlin.) (source: [[2026-11-08 notes]])",
    "- 住在里斯本（更新于 昨天，原为：I live in Berlin.）（来源：[[2026-11-08 notes]]）",
    "- 住在里斯本（更新于2026-11-08，原为：I live in Berlin.）（来源：[[2026-11-08 notes]]）",
    # nested: the outer trace reads, the inner one is a word
    "- I live in Lisbon. (updated 2026-11-08, was: I live in Porto (updated last week, was: I live in Berlin.)) (source: [[2026-11-08 notes]])",
]


@pytest.mark.parametrize(
    "statement",
    WORD_DATES,
    ids=["word", "day-month-year", "one-digit-day", "zh-word", "zh-no-space", "nested-word"],
)
def test_a_trace_dated_by_a_word_is_refused_under_rule_5(make_vault, statement):
    root = _vault(make_vault)
    result = _validate(root, _reply(statement))
    assert [(i.rule, i.file) for i in result.errors] == [("5", FACTS)], result.errors
    assert "YYYY-MM-DD" in result.errors[0].message


def test_a_configured_trace_format_is_held_to_the_same_rule(make_vault):
    root = _vault(
        make_vault,
        EN + 'formats:\n  trace: "[changed {date}; before: {old}]"\n',
    )
    good = "- I live in Lisbon. [changed 2026-11-08; before: I live in Berlin.] (source: [[2026-11-08 notes]])"
    assert _validate(root, _reply(good)).ok
    bad = "- I live in Lisbon. [changed last Tuesday; before: I live in Berlin.] (source: [[2026-11-08 notes]])"
    result = _validate(root, _reply(bad))
    assert [i.rule for i in result.errors] == ["5"] and "last Tuesday" in result.errors[0].message


def test_a_trace_dated_by_a_word_is_refused_through_the_cli(make_vault, tmp_path):
    root = _vault(make_vault)
    head = git(root, "rev-parse", "HEAD").strip()
    reply = tmp_path / "reply.xml"
    reply.write_text(_reply(WORD_DATES[0]), encoding="utf-8")
    result = _cmem(root, "converge", "--response", str(reply), "--json")
    assert result.returncode == 1, result.stdout + result.stderr
    errors = json.loads(result.stdout)["errors"]
    assert any("(rule 5)" in e and "yesterday" in e and "YYYY-MM-DD" in e for e in errors), errors
    assert git(root, "rev-parse", "HEAD").strip() == head
    assert "Berlin" in (root / FACTS).read_text("utf-8") and "Lisbon" not in (
        root / FACTS
    ).read_text("utf-8")


def test_a_kept_hand_written_trace_of_a_word_is_left_alone(make_vault):
    """Rule 5 judges the traces a pass writes: a statement already in the file stays as it is."""
    kept = "- I walk to work. (updated recently, was: I cycle.) (source: [[2026-10-01 notes]])"
    root = _vault(
        make_vault, statement=f"- I live in Berlin. (source: [[2026-10-01 notes]])\n{kept}\n"
    )
    assert _validate(
        root,
        _reply(
            f"- I live in Berlin. (source: [[2026-10-01 notes]])\n{kept}\n- The flat in Lisbon is small but bright (source: [[2026-11-08 notes]])"
        ),
    ).ok


FLAT = "- The flat in Lisbon is small but bright (source: [[2026-11-08 notes]])"
SOMETIMES = "- I sometimes live in Berlin. (source: [[2026-10-01 notes]])\n" + FLAT


def test_a_word_no_source_holds_changing_a_statement_without_a_trace_is_warned(make_vault):
    root = _vault(make_vault)
    result = _validate(root, _reply(SOMETIMES))
    assert result.ok
    assert [(w.rule, w.file) for w in result.warnings] == [("untraced", FACTS)]
    assert "sometim" in result.warnings[0].message and result.asked_again == result.warnings
    # words its sources hold, a faithful rewording, or a change with a trace: no warning
    for quiet in (
        "- I live in Berlin, in a flat. (source: [[2026-10-01 notes]], [[2026-11-08 notes]])",
        "- Berlin is where I live. (source: [[2026-10-01 notes]])",
        "- I live in Lisbon. (updated 2026-11-08, was: I live in Berlin.) (source: [[2026-11-08 notes]])",
    ):
        checked = _validate(root, _reply(quiet + "\n" + FLAT))
        assert checked.ok and not checked.warnings, (quiet, checked.errors, checked.warnings)


def test_an_untraced_change_goes_back_once_then_is_applied_with_the_warning_in_the_commit(
    make_vault, monkeypatch, tmp_path
):
    root = _vault(make_vault, EN.replace("repair_rounds: 0", "repair_rounds: 1"))
    log = model_env(monkeypatch, tmp_path, [_reply(SOMETIMES), _reply(SOMETIMES)])
    result = run_pass(open_vault(root), PassOptions(llm=f"{sys.executable} {FAKE}"))
    assert result.status == "applied", result.errors
    first, again = prompts_sent(log)
    assert "changes an old statement without a trace" in again
    message = git(root, "log", "-1", "--format=%B")
    assert "Warning:" in message and "without a trace" in message


def test_an_untraced_change_through_the_cli_is_recorded_in_the_commit(make_vault, tmp_path):
    root = _vault(make_vault)
    reply = tmp_path / "reply.xml"
    reply.write_text(_reply(SOMETIMES), encoding="utf-8")
    result = _cmem(root, "converge", "--response", str(reply), "--json")
    assert result.returncode == 0, result.stderr
    assert any("without a trace" in w for w in json.loads(result.stdout)["warnings"])
    assert "without a trace" in git(root, "log", "-1", "--format=%B")
