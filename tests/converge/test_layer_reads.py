"""A one-note pass reads of the memory layer only what can matter to it: the coverage check
parses the files citing a converged note or holding a trace, the validator's known traces the
files holding one, however many other files the layer has (counted, not timed)."""

from __future__ import annotations

from builtin_helpers import EN_FORMATS as EN
from builtin_helpers import OLD_NOTES, TOOLING, TOOLING_EN, note_with, run
from builtin_helpers import selected_note as _note
from cmem.converge import coverage
from cmem.converge.coverage import STATEMENT, TRACE, line_fates
from cmem.converge.validator import reply_reading as checker

QUIET = "# Garden\n\n- Waters the garden every Sunday (source: [[old]])\n"


def counted(monkeypatch, module) -> list[int]:
    calls = []
    original = module.parse_statements
    monkeypatch.setattr(
        module, "parse_statements", lambda *a, **k: calls.append(1) or original(*a, **k)
    )
    return calls


def test_coverage_parses_only_files_citing_the_note_or_holding_a_trace(monkeypatch):
    text = "I switched to uv for managing virtualenvs.\nI switched from uv to poetry for managing virtualenvs.\n"
    note = _note("n.md", text, [(1, "decision"), (2, "decision")])
    layer = {
        TOOLING: "# Tooling\n\n- Uses poetry for managing virtualenvs (source: [[n]])\n",
        "converged/topics/old.md": "# Old\n\n- Uses pdm (updated 2026-11-03, was: Uses uv for managing virtualenvs) (source: [[x]])\n",
    }
    layer.update({f"converged/topics/quiet-{i}.md": QUIET for i in range(300)})
    calls = counted(monkeypatch, coverage)
    fates = line_fates([note], ["n.md"], layer, EN)
    assert [(f.line, f.where, f.file) for f in fates] == [
        (1, TRACE, "converged/topics/old.md"),
        (2, STATEMENT, TOOLING),
    ]
    assert len(calls) == 2  # not 302


def test_known_traces_parse_no_file_without_a_trace(make_vault, monkeypatch):
    counts = {}
    for quiet in (1, 200):
        files = {f"converged/topics/quiet-{i}.md": QUIET for i in range(quiet)}
        root = make_vault(
            {
                "converged/topics/python-tooling.md": TOOLING_EN,
                "n.md": "- Switched from pip to uv for projects\n",
                **OLD_NOTES,
                **files,
            },
            config_yaml="language: en\n",
        )
        with monkeypatch.context() as patch:  # its own patches only: the home stays isolated
            calls = counted(patch, checker)
            run(root, [note_with(root, "n.md", [(1, "decision")])])
            counts[quiet] = len(calls)
    assert counts[1] == counts[200]
