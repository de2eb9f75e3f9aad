"""The archive's note paths kept by folder stats (`vault/archive_names.py`): a folder is listed
again exactly when its stat moved, so a note moved, renamed or deleted in the archive is never
named after it is gone, and a settled archive is not listed at all. Counted, not timed."""

from __future__ import annotations

import os
import shutil

import pytest

from cmem.vault import archive_names
from cmem.vault.layers import ARCHIVE, Vault, open_vault
from support import HOUR_AGO, settle

FILES = {
    "a.md": "- a divergent note\n",
    "archive/2026-10/old.md": "- old\n",
    "archive/2026-10/older.md": "- older\n",
    "archive/2026-11/diary.md": "- diary\n",
    "archive/2026-11/deep/kept.md": "- nested\n",
    "archive/2026-11/.hidden.md": "- a dot file is no note\n",
    "archive/2026-11/x.sync-conflict-20261128-101010-ABCDEF.md": "- a conflict copy\n",
    "archive/ARCHIVE-CHECKLIST.md": "# Archive checklist\n",
}


@pytest.fixture
def archive(make_vault):
    """A settled vault (its folders dated an hour back) with its machine folder made."""
    root = make_vault(FILES)
    vault = open_vault(root)
    vault.machine_dir.mkdir(parents=True, exist_ok=True)
    settle(root)
    return root


def listed_folders(monkeypatch) -> list[str]:
    """Each folder `Vault.walk_folder` lists, the walk still doing its work."""
    calls = []
    original = Vault.walk_folder

    def counted(self, folder, layer):
        calls.append(self.rel(folder))
        return original(self, folder, layer)

    monkeypatch.setattr(Vault, "walk_folder", counted)
    return calls


def walked(root) -> list[str]:
    """The archive as a full walk lists it: what the cache must always agree with."""
    return [note.rel for note in open_vault(root).list_layer(ARCHIVE)]


def cached(root) -> list[str]:
    return open_vault(root)._archived_rels()


def test_a_settled_archive_is_listed_once_then_read_from_its_folder_stats(archive, monkeypatch):
    expected = walked(archive)
    assert expected == [
        "archive/2026-10/old.md",
        "archive/2026-10/older.md",
        "archive/2026-11/deep/kept.md",
        "archive/2026-11/diary.md",
    ]
    listed = listed_folders(monkeypatch)
    assert cached(archive) == expected
    assert sorted(listed) == [
        "archive",
        "archive/2026-10",
        "archive/2026-11",
        "archive/2026-11/deep",
    ]
    listed.clear()
    assert cached(archive) == expected
    assert listed == []  # every folder's stat matched: no folder listed


@pytest.mark.parametrize(
    "change",
    [
        "delete",
        "move to another month",
        "rename in place",
        "add",
        "rename a month folder",
        "replace a month folder",
        "delete a nested folder",
        "replace a note by a link",
    ],
)
def test_every_change_of_a_name_is_seen_though_the_rest_is_kept(archive, monkeypatch, change):
    cached(archive)  # kept
    folder = archive / "archive" / "2026-11"
    if change == "delete":
        (folder / "diary.md").unlink()
    elif change == "move to another month":
        os.rename(folder / "diary.md", archive / "archive/2026-10/diary.md")
    elif change == "rename in place":
        os.rename(folder / "diary.md", folder / "journal.md")
    elif change == "add":
        (folder / "new.md").write_text("- new\n", encoding="utf-8")
    elif change == "rename a month folder":
        os.rename(folder, archive / "archive" / "2026-12")
    elif change == "replace a month folder":
        # the same name, other notes: a folder put in its place has another inode
        replacement = archive / "elsewhere"
        (replacement / "deep").mkdir(parents=True)
        (replacement / "other.md").write_text("- other\n", encoding="utf-8")
        shutil.rmtree(folder)
        os.rename(replacement, folder)
        for moved in (folder, folder / "deep", folder.parent):  # dated back: its inode tells
            os.utime(moved, (HOUR_AGO, HOUR_AGO))
    elif change == "delete a nested folder":
        shutil.rmtree(folder / "deep")
    elif change == "replace a note by a link":
        (folder / "diary.md").unlink()
        os.symlink(archive / "a.md", folder / "diary.md")
    expected = walked(archive)
    listed = listed_folders(monkeypatch)
    assert cached(archive) == expected
    # the folders that did not change were not listed again
    assert "archive/2026-10" not in listed or change == "move to another month", listed


def test_a_folder_changed_within_the_racy_window_is_listed_every_time(archive, monkeypatch):
    (archive / "archive" / "2026-11" / "fresh.md").write_text("- fresh\n", encoding="utf-8")
    cached(archive)
    expected = walked(archive)
    listed = listed_folders(monkeypatch)
    assert cached(archive) == expected
    # its mtime is now: an edit in the same tick could keep it, so its answer is never kept
    assert listed == ["archive/2026-11"]


def test_a_corrupt_or_foreign_cache_is_rebuilt(archive, monkeypatch):
    vault = open_vault(archive)
    path = vault.machine_dir / archive_names.CACHE_NAME
    cached(archive)
    assert path.exists()
    for damage in (b"not marshal", path.read_bytes()[:40], b"\xe9" * 10):
        path.write_bytes(damage)
        assert cached(archive) == walked(archive)
    # other settings (another checklist name) make every kept answer foreign
    (archive / ".cmem" / "config.yaml").write_text(
        "archive:\n  checklist: OTHER-CHECKLIST.md\n", encoding="utf-8"
    )
    expected = walked(archive)
    listed = listed_folders(monkeypatch)
    assert cached(archive) == expected
    assert "archive/ARCHIVE-CHECKLIST.md" in expected  # a note now
    assert sorted(listed) == [
        "archive",
        "archive/2026-10",
        "archive/2026-11",
        "archive/2026-11/deep",
    ]


def test_without_a_machine_folder_nothing_is_written(make_vault):
    root = make_vault(FILES)
    settle(root)
    vault = open_vault(root)
    assert cached(root) == walked(root)
    assert not vault.machine_dir.exists()


def test_note_names_agree_with_the_full_walk_after_changes(archive):
    def full(root):
        names: dict[str, list[str]] = {}
        vault = open_vault(root)
        for layer in ("divergent", "resident", "situational", ARCHIVE):
            for note in vault.list_layer(layer):
                names.setdefault(note.name, []).append(note.rel)
        return names

    assert open_vault(archive).note_names() == full(archive)
    (archive / "archive/2026-10/old.md").unlink()
    (archive / "archive/2026-11/a.md").write_text("- same name as a divergent note\n", "utf-8")
    assert open_vault(archive).note_names() == full(archive)
    assert open_vault(archive).note_names()["a"] == ["a.md", "archive/2026-11/a.md"]


# --- the archive's odd names, kept the same way (`notes.find_odd_names`) -------------------------


def odd_names(root) -> list[tuple[str, str]]:
    from cmem.vault.notes import find_odd_names

    return [(o.rel, o.kind) for o in find_odd_names(open_vault(root))]


def odd_names_walked(root) -> list[tuple[str, str]]:
    """What a live walk of every folder finds: the archive listed in this reading first, so
    `find_odd_names` reads the listings, not what folder stats keep."""
    from cmem.vault.notes import find_odd_names

    vault = open_vault(root)
    with vault.listed_once():
        vault.list_layer(ARCHIVE)
        return [(o.rel, o.kind) for o in find_odd_names(vault)]


def folders_listed(monkeypatch) -> list[str]:
    calls = []
    original = Vault.list_folder

    def counted(self, folder):
        calls.append(self.rel(folder))
        return original(self, folder)

    monkeypatch.setattr(Vault, "list_folder", counted)
    return calls


def test_the_archive_odd_names_are_kept_by_folder_stats(archive, monkeypatch):
    expected = odd_names_walked(archive)
    assert ("archive/2026-11/x.sync-conflict-20261128-101010-ABCDEF.md", "sync-conflict") in (
        expected
    )
    listed = folders_listed(monkeypatch)
    assert odd_names(archive) == expected
    assert {f for f in listed if f.startswith("archive")} == {
        "archive",
        "archive/2026-10",
        "archive/2026-11",
        "archive/2026-11/deep",
    }
    listed.clear()
    assert odd_names(archive) == expected
    assert not [f for f in listed if f.startswith("archive")]  # every stat matched


@pytest.mark.parametrize(
    "change",
    [
        "a conflict copy appears",
        "a conflict copy is merged away",
        "a note becomes a link",
        "a placeholder appears in a nested folder",
        "an undecodable name appears",
        "a month folder is renamed",
    ],
)
def test_every_odd_name_that_comes_or_goes_in_the_archive_is_seen(archive, change):
    assert odd_names(archive) == ODD_BEFORE  # and kept
    folder = archive / "archive" / "2026-11"
    if change == "a conflict copy appears":
        (archive / "archive/2026-10/old (conflicted copy).md").write_text("- x\n", "utf-8")
    elif change == "a conflict copy is merged away":
        (folder / "x.sync-conflict-20261128-101010-ABCDEF.md").unlink()
    elif change == "a note becomes a link":
        (archive / "archive/2026-10/old.md").unlink()
        os.symlink(archive / "a.md", archive / "archive/2026-10/old.md")
    elif change == "a placeholder appears in a nested folder":
        (folder / "deep" / ".later.md.icloud").write_bytes(b"")
    elif change == "an undecodable name appears":
        os.close(os.open(os.fsencode(folder) + b"/caf\xe9.md", os.O_CREAT | os.O_WRONLY, 0o644))
    elif change == "a month folder is renamed":
        os.rename(folder, archive / "archive" / "2026-12")
    found = odd_names(archive)
    assert found == odd_names_walked(archive)
    assert found != ODD_BEFORE, change  # each change alters them: the kept answer was not used


# the archive fixture's odd names before any change
ODD_BEFORE = [("archive/2026-11/x.sync-conflict-20261128-101010-ABCDEF.md", "sync-conflict")]
