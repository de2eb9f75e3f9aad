"""The archive's size in `status` comes from its folders' mtimes while none changed
(`reading/sizes.py`), as a stored status checks it: no archived note is stat'ed when only other
layers moved. Adding, removing or renaming an archived note, or a folder of them, is seen; an
archived note edited in place keeps its old tokens until `--rescan` (the figure is labelled).
Each case is checked against a state folder without any cache, through the function and the
command alike."""

from __future__ import annotations

import json
import os

from typer.testing import CliRunner

from cmem.cli import app
from cmem.reading import sizes
from cmem.reading.sizes import measure_layers
from cmem.vault.layers import ARCHIVE, open_vault
from support import HOUR_AGO, settle

NOTE = "# archived\n\n" + "an archived line of text " * 20 + "\n"


def _vault(make_vault):
    root = make_vault(
        {
            "a.md": "# a\n\nI prefer tabs over spaces in every project\n",
            "converged/core/profile.md": "- tabs\n",
            "archive/2026-10/one.md": NOTE,
            "archive/2026-10/two.md": NOTE + "more\n",
            "archive/2026-11/three.md": NOTE,
        }
    )
    settle(root)
    return root


def _fresh(root, monkeypatch, tmp_path, name: str):
    """The sizes measured with a machine folder of its own: nothing kept from before."""
    with monkeypatch.context() as patch:  # its own setting only: the home stays isolated
        patch.setenv("XDG_STATE_HOME", str(tmp_path / f"fresh-{name}"))
        return measure_layers(open_vault(root))


def _archived_notes_measured(monkeypatch) -> list[str]:
    """The archived notes each later measurement stat'ed or read (through kept_by_stat)."""
    seen: list[str] = []
    real = sizes.kept_by_stat

    def spy(kept, files, *args, **kwargs):
        files = list(files)
        seen.extend(note.rel for note in files if note.layer == ARCHIVE)
        return real(kept, files, *args, **kwargs)

    monkeypatch.setattr(sizes, "kept_by_stat", spy)
    return seen


def test_an_unchanged_archive_is_not_measured_again(make_vault, monkeypatch):
    root = _vault(make_vault)
    first = measure_layers(open_vault(root))
    assert first[ARCHIVE].notes == 3
    seen = _archived_notes_measured(monkeypatch)
    (root / "a.md").write_text("# a\n\nI prefer spaces now, always\n", "utf-8")
    again = measure_layers(open_vault(root))
    assert seen == []
    assert again[ARCHIVE] == first[ARCHIVE]
    assert again["divergent"] != first["divergent"]


def test_notes_added_removed_renamed_or_in_a_new_folder_are_counted(
    make_vault, monkeypatch, tmp_path
):
    root = _vault(make_vault)
    measure_layers(open_vault(root))
    changes = [
        lambda: (root / "archive/2026-10/four.md").write_text(NOTE * 2, "utf-8"),
        lambda: (root / "archive/2026-10/one.md").unlink(),
        lambda: os.rename(root / "archive/2026-11/three.md", root / "archive/2026-11/3.md"),
        lambda: (root / "archive/2026-12").mkdir(),
        lambda: (root / "archive/2026-12/five.md").write_text(NOTE, "utf-8"),
        lambda: (root / "archive/2026-10/sub").mkdir(),
        lambda: (root / "archive/2026-10/sub/six.md").write_text(NOTE * 3, "utf-8"),
    ]
    for number, change in enumerate(changes):
        change()  # nothing else touched: only the changed folder's stat tells
        kept = measure_layers(open_vault(root))[ARCHIVE]
        assert kept == _fresh(root, monkeypatch, tmp_path, str(number))[ARCHIVE], number
        settle(root)  # and kept again, outside the racy window, for the next change
        measure_layers(open_vault(root))


def test_a_note_edited_in_place_keeps_its_size_until_a_rescan(make_vault, monkeypatch, tmp_path):
    root = _vault(make_vault)
    before = measure_layers(open_vault(root))[ARCHIVE]
    path = root / "archive/2026-10/one.md"
    path.write_text(NOTE * 4, "utf-8")  # in place: its folder's mtime does not move
    os.utime(path, (HOUR_AGO + 60, HOUR_AGO + 60))
    assert measure_layers(open_vault(root))[ARCHIVE] == before  # labelled: may be stale
    rescanned = measure_layers(open_vault(root), rescan=True)[ARCHIVE]
    assert rescanned.tokens > before.tokens
    assert rescanned == _fresh(root, monkeypatch, tmp_path, "rescan")[ARCHIVE]
    assert measure_layers(open_vault(root))[ARCHIVE] == rescanned  # and kept from then on


def test_a_folder_changed_within_the_racy_window_is_not_trusted(make_vault, monkeypatch):
    """A folder whose mtime is too recent to rule out a second change in the same tick keeps no
    size: the next status measures the archive again."""
    root = _vault(make_vault)
    (root / "archive/2026-10/four.md").write_text(NOTE, "utf-8")  # the folder's mtime: now
    measure_layers(open_vault(root))
    seen = _archived_notes_measured(monkeypatch)
    measure_layers(open_vault(root))
    assert "archive/2026-10/four.md" in seen


def test_another_archive_folder_in_the_config_is_measured_afresh(make_vault, monkeypatch, tmp_path):
    root = _vault(make_vault)
    measure_layers(open_vault(root))
    (root / "old").mkdir()
    (root / "old/x.md").write_text(NOTE, "utf-8")
    (root / ".cmem/config.yaml").write_text("layers:\n  archive: old\n", "utf-8")
    kept = measure_layers(open_vault(root))[ARCHIVE]
    assert kept.notes == 1 and kept == _fresh(root, monkeypatch, tmp_path, "config")[ARCHIVE]


def test_a_setting_that_changes_which_files_the_archive_holds_is_measured_afresh(
    make_vault, monkeypatch, tmp_path
):
    """An ignore glob (or the checklist's name, another layer's folder) changes the archive's
    notes without moving a folder's mtime: the kept size is for another layout."""
    root = _vault(make_vault)
    assert measure_layers(open_vault(root))[ARCHIVE].notes == 3
    (root / ".cmem/config.yaml").write_text('ignore: ["archive/2026-10/**"]\n', "utf-8")
    kept = measure_layers(open_vault(root))[ARCHIVE]  # no archive folder touched
    assert kept.notes == 1 and kept == _fresh(root, monkeypatch, tmp_path, "ignore")[ARCHIVE]


def _status(root, *extra: str) -> dict:
    result = CliRunner().invoke(
        app, ["status", "--json", *extra, "--vault", str(root)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["layers"][ARCHIVE]


def test_the_status_command_counts_from_its_own_listing_and_rescans_on_request(make_vault):
    """Through `cmem status` (the key it takes first gives the archive's folders): a note moved
    into the archive is counted; an edit in place shows with --rescan, and is kept after it."""
    root = _vault(make_vault)
    before = _status(root)
    assert before["notes"] == 3
    (root / "archive/2026-11/four.md").write_text(NOTE, "utf-8")
    settle(root)
    assert _status(root)["notes"] == 4
    path = root / "archive/2026-11/four.md"
    path.write_text(NOTE * 5, "utf-8")
    os.utime(path, (HOUR_AGO + 60, HOUR_AGO + 60))
    stale = _status(root)
    assert stale["notes"] == 4 and stale["tokens"] < _status(root, "--rescan")["tokens"]
    assert _status(root)["tokens"] > before["tokens"] * 4 / 3


def test_the_status_command_keeps_no_size_for_a_folder_changed_just_now(make_vault, monkeypatch):
    root = _vault(make_vault)
    (root / "archive/2026-10/four.md").write_text(NOTE, "utf-8")  # the folder's mtime: now
    assert _status(root)["notes"] == 4
    seen = _archived_notes_measured(monkeypatch)
    assert _status(root)["notes"] == 4
    assert "archive/2026-10/four.md" in seen  # measured again: its folder was too recent
    settle(root)
    seen.clear()
    _status(root)
    _status(root)
    assert seen.count("archive/2026-10/four.md") == 1  # settled: kept after one more measure
