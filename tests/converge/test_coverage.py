"""No signal is lost (issue 12): every signal line of a note a pass marks converged is in a
statement, a trace, or stays pending — and the pass says which."""

from __future__ import annotations

from builtin_helpers import EN_FORMATS as EN
from builtin_helpers import TOOLING
from builtin_helpers import selected_note as _note
from cmem.converge.coverage import PENDING, STATEMENT, TRACE, line_fates, summary
from cmem.converge.pipeline import PassOptions, run_pass
from cmem.scan.scanner import scan_vault
from cmem.vault.layers import open_vault


def test_fates_statement_trace_and_pending():
    text = "I switched to uv for managing virtualenvs.\nI switched from uv to poetry for managing virtualenvs.\nI prefer tabs over spaces.\n"
    note = _note("n.md", text, [(1, "decision"), (2, "decision"), (3, "preference")])
    layer = {
        TOOLING: "# Tooling\n\n- Uses poetry for managing virtualenvs (updated 2026-11-03, was: Uses uv for managing virtualenvs) (source: [[n]])\n"
    }
    fates = line_fates([note], ["n.md"], layer, EN)
    assert [(f.line, f.where) for f in fates] == [(1, TRACE), (2, STATEMENT), (3, PENDING)]
    assert summary(fates) == "signal lines: 1 in statements, 1 in traces, 1 left pending"


def test_a_statement_must_cite_the_note_to_cover_it():
    note = _note("n.md", "I prefer tabs over spaces.\n", [(1, "preference")])
    layer = {TOOLING: "- Prefers tabs over spaces (source: [[other]])\n"}
    assert [f.where for f in line_fates([note], ["n.md"], layer, EN)] == [PENDING]
    assert line_fates([note], [], layer, EN) == []  # a deferred note is not judged


def test_uv_then_poetry_across_passes(make_vault):
    """The issue's case, through real passes: poetry ends up in memory, uv in the trace."""
    root = make_vault(
        {
            TOOLING: "---\nsummary: Python tooling\ntags: [python, tooling]\n---\n# Python tooling\n\n- Uses pipenv for managing virtualenvs (source: [[old]])\n",
            "archive/old.md": "- pipenv\n",
            "2026-11-01 notes.md": "I switched to uv for managing virtualenvs.\n",
        },
        config_yaml="language: en\n",
        git=True,
    )
    first = run_pass(open_vault(root), PassOptions(engine="builtin"))
    assert first.status == "applied" and [f.where for f in first.lines] == [STATEMENT]
    (root / "2026-11-03 notes.md").write_text(
        "I switched from uv to poetry for managing virtualenvs.\n", "utf-8"
    )
    second = run_pass(open_vault(root), PassOptions(engine="builtin"))
    assert second.status == "applied", second.errors
    tooling = (root / TOOLING).read_text("utf-8")
    body = [line for line in tooling.split("\n") if line.startswith("- ")]
    assert len(body) == 1 and "poetry" in body[0].split("(updated")[0]
    assert "was: " in body[0] and "uv" in body[0] and "pipenv" in body[0]
    assert scan_vault(open_vault(root)).pending == []


def test_a_models_converged_note_is_judged_by_its_accounting_not_its_words(make_vault):
    """Issue 33: a model that converges a note (and cites it) has judged all of it, in its own
    words: a line it did not restate is its judgement, not a loss — nothing is left pending, no
    "stays pending" warning, and the note is never sent again unchanged."""
    root = make_vault(
        {
            "n.md": "I prefer tabs over spaces.\nI decided to use fish as my shell.\n",
            "converged/core/profile.md": "# Profile\n",
        },
        config_yaml="language: en\n",
        git=True,
    )
    reply = (
        '<convergence>\n<file path="converged/core/profile.md">\n# Profile\n- Prefers tabs over spaces (source: [[n]])\n</file>\n'
        '<converged note="n.md" into="converged/core/profile.md"/>\n</convergence>\n'
    )
    result = run_pass(open_vault(root), PassOptions(response_text=reply))
    assert result.status == "applied", result.errors
    assert result.lines == [] and not any("pending" in w for w in result.warnings)
    scan = scan_vault(open_vault(root))
    assert scan.pending == [] and scan.signals == []
    again = run_pass(open_vault(root), PassOptions(response_text=reply))
    assert again.status == "nothing", again.message


def test_a_line_the_builtin_engine_cannot_place_waits_for_a_model(make_vault, monkeypatch):
    """The builtin engine's statements are extractive, so its word check stands: a cue line it
    placed nowhere is deferred for a model, named in the pass, and not sent to it again."""
    root = make_vault(
        {"n.md": "I prefer tabs over spaces.\n", "converged/core/profile.md": "# Profile\n"},
        config_yaml="language: en\n",
        git=True,
    )
    from cmem.converge import pipeline

    real = pipeline.plan_pass

    def forget_one(vault, inputs, validation, *rest):  # as if it had placed the line nowhere
        planned = real(vault, inputs, validation, *rest)
        fates = [type(f)(f.note, f.line, f.cls, PENDING, "") for f in planned.lines]
        return type(planned)(**{**planned.__dict__, "lines": fates})

    monkeypatch.setattr(pipeline, "plan_pass", forget_one)
    result = run_pass(open_vault(root), PassOptions(engine="builtin"))
    monkeypatch.setattr(pipeline, "plan_pass", real)
    assert result.status == "applied", result.errors
    scan = scan_vault(open_vault(root))
    assert [(p.rel, p.why, p.model_only) for p in scan.pending] == [("n.md", "unjudged", True)]
    assert run_pass(open_vault(root), PassOptions(engine="builtin")).status == "nothing"
    assert "no statement for this line" in next(d.reason for d in scan.deferred if d.line == 1)


def test_a_recurring_event_merged_into_its_pattern_is_covered():
    note = _note("d.md", "面试前一晚又熬夜刷题，老毛病\n", [(1, "recurring")])
    layer = {
        "converged/core/methodology.md": "- 熬夜到两点（2 次：2026-11-24、2026-11-25）（来源：[[c]]、[[d]]）\n"
    }
    assert [f.where for f in line_fates([note], ["d.md"], layer, EN)] == [STATEMENT]


def test_a_one_off_line_of_a_converged_note_waits_in_scan_and_joins_its_pattern_later(make_vault):
    import os

    root = make_vault(
        {
            "2026-11-01 notes.md": "I prefer tabs over spaces.\nSkipped breakfast again before the standup.\n"
        },
        config_yaml="language: en\n",
        git=True,
    )
    first = run_pass(open_vault(root), PassOptions(engine="builtin"))
    assert first.status == "applied" and first.converged == ["2026-11-01 notes.md"]
    deferred = scan_vault(open_vault(root)).deferred
    assert [(d.note, d.line) for d in deferred] == [
        ("2026-11-01 notes.md", 2)
    ]  # not swallowed by the converged note
    later = root / "2026-11-02 notes.md"
    later.write_text("Skipped breakfast again.\n", "utf-8")
    os.utime(later, (2_000_000_000, 2_000_000_000))
    second = run_pass(open_vault(root), PassOptions(engine="builtin"))
    assert second.status == "applied", second.errors
    methodology = (root / "converged/core/methodology.md").read_text("utf-8")
    assert (
        "(2 times: 2026-11-01, 2026-11-02) (source: [[2026-11-01 notes]], [[2026-11-02 notes]])"
        in methodology
    )
    assert scan_vault(open_vault(root)).pending == []
