"""Issue 35: one note never stops every pass. A note whose failure is its own is quarantined —
named in status, scan, doctor and the pass, with the reason and the way out — and the others
converge."""

from __future__ import annotations

import json

import pytest

from cmem.converge.builtin import engine as builtin_engine
from cmem.converge.pipeline import PassOptions, run_pass
from cmem.doctor.checks import run_doctor
from cmem.reading.status import build_status
from cmem.render.reports import render_status
from cmem.scan.scanner import scan_vault
from cmem.vault.layers import open_vault
from support import git

EN = "language: en\n"


@pytest.mark.parametrize("name", ["C# tips", "a | b", "see [[x]]", "two\nlines", "^block", "x]"])
def test_a_note_no_wikilink_can_cite_is_quarantined_and_the_others_converge(make_vault, name):
    root = make_vault(
        {f"{name}.md": "I prefer tabs over spaces.\n", "ok.md": "I prefer dark themes.\n"},
        config_yaml=EN,
        git=True,
    )
    vault = open_vault(root)
    scan = scan_vault(vault)
    assert [q.note for q in scan.quarantined] == [f"{name}.md"]
    assert [p.rel for p in scan.pending] == ["ok.md"]
    result = run_pass(vault, PassOptions(engine="builtin"))
    assert result.status == "applied" and result.converged == ["ok.md"], result.errors
    assert any("quarantined" in w and "wikilink cannot hold" in w for w in result.warnings)
    status = render_status(build_status(open_vault(root)))
    assert "quarantined:" in status and "rename the note" in status
    assert any(f.check == "quarantined" and f.level == "warn" for f in run_doctor(open_vault(root)))


def _poisoned(monkeypatch, poison: str, how: str = "reply"):
    """The builtin engine, broken for one note: its reply cites a note that does not exist (a
    rejection), or it raises."""
    real = builtin_engine.builtin_response

    def response(vault, notes, writable, pass_date):
        text = real(vault, notes, writable, pass_date)
        if not any(note.rel == poison for note in notes):
            return text
        if how == "raise":
            raise IndexError("list index out of range")
        block = '<file path="converged/topics/poison.md">\n# Poison\n\n- x (source: [[nowhere]])\n</file>\n'
        return text.replace("<convergence>\n", "<convergence>\n" + block, 1)

    monkeypatch.setattr(builtin_engine, "builtin_response", response)


@pytest.mark.parametrize("how", ["reply", "raise"])
def test_a_note_the_builtin_engine_fails_on_is_put_aside_and_the_others_converge(
    make_vault, monkeypatch, how
):
    root = make_vault(
        {
            "bad.md": "I prefer vim keys everywhere.\n",
            "good.md": "I prefer dark themes.\n",
            "also.md": "Actually I live in Porto.\n",
        },
        config_yaml=EN,
        git=True,
    )
    with monkeypatch.context() as patch:  # its own patches only: the home stays isolated
        _poisoned(patch, "bad.md", how)
        result = run_pass(open_vault(root), PassOptions(engine="builtin"))
        assert result.status == "applied", result.errors
        assert sorted(result.converged) == ["also.md", "good.md"]
        assert [q["note"] for q in result.quarantined] == ["bad.md"]
        reason = result.quarantined[0]["reason"]
        assert ("rule 3" in reason) if how == "reply" else ("IndexError" in reason)
        assert "Quarantined: bad.md" in git(root, "log", "-1", "--format=%B")
        entry = json.loads((root / ".cmem/state.json").read_text("utf-8"))["notes"]["bad.md"]
        assert entry["quarantined"] == reason
        # named everywhere, never taken again by the builtin engine while it is as it is
        scan = scan_vault(open_vault(root))
        assert [q.note for q in scan.quarantined] == ["bad.md"]
        assert [(p.rel, p.model_only) for p in scan.pending if p.rel == "bad.md"] == [
            ("bad.md", True)
        ]
        assert run_pass(open_vault(root), PassOptions(engine="builtin")).status == "nothing"
        assert "quarantined: bad.md" in render_status(build_status(open_vault(root)))
        # edited: pending again, and (the engine mended) converged
    (root / "bad.md").write_text("I prefer vim keys in every editor.\n", encoding="utf-8")
    assert scan_vault(open_vault(root)).quarantined == []
    again = run_pass(open_vault(root), PassOptions(engine="builtin"))
    assert again.status == "applied" and again.converged == ["bad.md"], again.errors


def test_when_every_note_fails_the_pass_records_why_and_writes_no_memory(make_vault, monkeypatch):
    root = make_vault({"bad.md": "I prefer vim keys everywhere.\n"}, config_yaml=EN, git=True)
    _poisoned(monkeypatch, "bad.md")
    result = run_pass(open_vault(root), PassOptions(engine="builtin"))
    assert result.status == "applied" and result.changed == [] and result.converged == []
    assert [q["note"] for q in result.quarantined] == ["bad.md"]
    assert git(root, "log", "-1", "--format=%s").strip() == "cmem: defer 1 note"
