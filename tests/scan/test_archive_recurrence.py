"""Archived notes count for recurrence (docs/design.md §2, issue 41): a recurring line is no one-off
when the archive holds it before, whether or not a pass of cmem converged those notes, and an
archived note is read once and kept under its stat, not read on every scan."""

from __future__ import annotations

import os

from cmem.scan import archive_recurrence
from cmem.scan.scanner import scan_vault
from cmem.vault.layers import open_vault
from cmem.vault.state_json import ConvergedNote, State, save_state
from support import HOUR_AGO, settle

GYM = {
    "archive/2026-09/2026-09-03 notes.md": "- Skipped the gym again.\n",
    "archive/2026-09/2026-09-10 notes.md": "- Skipped the gym again, too tired after the shift.\n",
}


def _fates(root, note: str) -> tuple[list, list]:
    result = scan_vault(open_vault(root))
    signals = [(s.line, s.cls) for s in result.signals if s.note == note]
    deferred = [(d.line, d.kind) for d in result.deferred if d.note == note]
    return signals, deferred


def test_a_recurring_line_counts_its_occurrences_in_archived_notes(make_vault):
    root = make_vault(
        {**GYM, "2026-10-01 notes.md": "- Skipped the gym again.\n"}, config_yaml="language: en\n"
    )
    assert _fates(root, "2026-10-01 notes.md") == ([(1, "recurring")], [])
    # without the archive it is a one-off, and waits
    lone = make_vault({"2026-10-01 notes.md": "- Skipped the gym again.\n"})
    assert _fates(lone, "2026-10-01 notes.md") == ([], [(1, "one-off")])


def test_a_chinese_recurring_line_counts_its_archived_occurrences(make_vault):
    root = make_vault(
        {
            "archive/2026-09/2026-09-05 日记.md": "- 又熬夜写代码到三点\n",
            "2026-10-01 日记.md": "- 又熬夜了，明天一定早睡\n",
        }
    )
    assert _fates(root, "2026-10-01 日记.md") == ([(1, "recurring")], [])


def test_an_archived_note_state_json_knows_counts_once(make_vault):
    """A note a pass converged and the archive holds is one note: counted by the keys
    state.json kept, never by its file as well."""
    root = make_vault(
        {
            "archive/2026-09/2026-09-03 notes.md": GYM["archive/2026-09/2026-09-03 notes.md"],
            "2026-10-01 notes.md": "- Skipped the gym again.\n",
        },
        config_yaml="language: en\nsignals:\n  min_recurrence: 3\n",
    )
    done = ConvergedNote("0" * 64, set(), "p1", "2026-09-03T21:00:00+00:00", keys=["gym", "skipp"])
    save_state(open_vault(root).state_file, State(notes={"2026-09-03 notes.md": done}))
    assert _fates(root, "2026-10-01 notes.md") == ([], [(1, "one-off")])  # two notes, not three


def test_an_archived_note_is_read_once_and_again_only_when_it_changed(make_vault, monkeypatch):
    root = make_vault(
        {**GYM, "archive/2026-08/2026-08-01 notes.md": "- Forgot my badge.\n"},
        config_yaml="language: en\n",
    )
    (root / "2026-10-01 notes.md").write_text("- Forgot my badge again.\n", encoding="utf-8")
    settle(root)
    read = []
    real = archive_recurrence.read_note
    monkeypatch.setattr(
        archive_recurrence, "read_note", lambda file, cap: read.append(file.rel) or real(file, cap)
    )
    first = scan_vault(open_vault(root))
    assert sorted(read) == sorted([*GYM, "archive/2026-08/2026-08-01 notes.md"])
    assert [(d.line, d.kind) for d in first.deferred] == [(1, "one-off")]
    read.clear()
    assert scan_vault(open_vault(root)).to_json() == first.to_json() and read == []
    # a note added to the archive, and one edited in place: those two alone are read again
    badge = root / "archive/2026-08/2026-08-01 notes.md"
    badge.write_text("- Forgot my badge again, third time.\n", encoding="utf-8")
    added = root / "archive/2026-09/2026-09-20 notes.md"
    added.write_text("- Skipped the gym again.\n", encoding="utf-8")
    for changed in (badge, added, added.parent):
        os.utime(changed, (HOUR_AGO, HOUR_AGO))  # settled, as `settle` dates them
    found = scan_vault(open_vault(root))
    assert sorted(read) == [
        "archive/2026-08/2026-08-01 notes.md",
        "archive/2026-09/2026-09-20 notes.md",
    ]
    assert [(s.note, s.line, s.cls) for s in found.signals] == [
        ("2026-10-01 notes.md", 1, "recurring")
    ]
