"""A scan's key is walked in two parts (`stored_results.KeyWalk`): the notes' folders first, the
convergent layer and the archive when the scan first lists them. The
key is the one a single walk takes; each part is taken before what it covers is read; a memory
file changed between the two parts is stored as read, and the stored answer then matches."""

from __future__ import annotations

import os

import pytest

from cmem import fast
from cmem.reading import stored_results
from cmem.reading.scan_output import scan_output
from cmem.reading.stored_results import KeyWalk, key_files
from cmem.scan import scan_cache, scanner
from cmem.vault import notes
from cmem.vault.layers import open_vault
from support import HOUR_AGO, settle

LATER = ("converged/core", "converged/topics", "archive")


@pytest.mark.parametrize(
    "later", [(), LATER, ("archive",), ("converged",), ("converged/topics", "nowhere")]
)
def test_a_key_walked_in_two_parts_is_the_key_of_one_walk(sample_vault, later):
    (sample_vault / "converged" / "topics" / "deep").mkdir()
    (sample_vault / "converged" / "topics" / "deep" / "x.md").write_text("# x\n", "utf-8")
    root = os.path.realpath(sample_vault)
    vault = open_vault(root)
    files = key_files(vault)
    whole = KeyWalk(root, files, ["archive"], later=later).result()
    walk = KeyWalk(root, files, ["archive"], listing={}, later=later)
    assert walk.result() == whole
    parted = KeyWalk(root, files, ["archive"], listing={}, later=later)
    parted.rest()
    parted.rest()  # once only
    assert parted.result() == whole
    # every folder and note is in it, whatever waited
    one = KeyWalk(root, files, ["archive"]).result()[0]
    assert set(_folders(whole[0])) == set(_folders(one))
    assert sorted(whole[0][-2].split("/")) == sorted(one[-2].split("/"))


def _folders(key: list) -> list[str]:
    return [e[0] for e in key if isinstance(e, tuple) and len(e) == 5 and not e[0].startswith("/")]


def test_each_part_of_the_key_is_taken_before_what_it_covers_is_read(sample_vault, monkeypatch):
    """The memory files are read (by the guard) only after the key's part for them is taken."""
    settle(sample_vault)
    events: list[str] = []
    real_rest, real_read = KeyWalk.rest, notes.read_note

    def rest(self):
        if self.left is not None:
            events.append("rest")
        real_rest(self)

    def read(file, *args, **kwargs):
        events.append(file.layer)
        return real_read(file, *args, **kwargs)

    monkeypatch.setattr(KeyWalk, "rest", rest)
    monkeypatch.setattr(scan_cache, "read_note", read)
    (open_vault(sample_vault).machine_dir / scanner.GUARD_NAME).unlink(missing_ok=True)
    scan_output(open_vault(sample_vault).remember_listings(), True)
    assert "rest" in events
    first_memory_read = min(
        index for index, layer in enumerate(events) if layer in ("resident", "situational")
    )
    assert events.index("rest") < first_memory_read


def test_a_memory_file_changed_between_the_two_parts_is_stored_as_read(sample_vault, monkeypatch):
    """A line pasted back from memory waits as "already in" the file that holds it. The memory
    file gains that line after the scan's first part of the key was taken and before the second:
    the scan reads the new file, its key holds the new file's stat, and the stored answer (which
    the light path then prints) is the answer of a scan of the vault as it now is."""
    settle(sample_vault)
    topic = sample_vault / "converged" / "topics" / "python-tooling.md"
    line = "- I decided to use ruff for every lint from now on"
    note = sample_vault / "lint.md"
    note.write_text(f"{line}\n", "utf-8")
    os.utime(note, (HOUR_AGO, HOUR_AGO))
    os.utime(sample_vault, (HOUR_AGO, HOUR_AGO))
    real_rest = KeyWalk.rest

    def rest(self):
        if self.left is not None and "ruff for every lint" not in topic.read_text("utf-8"):
            topic.write_text(topic.read_text("utf-8") + f"{line}\n", "utf-8")
            os.utime(topic, (HOUR_AGO + 5, HOUR_AGO + 5))
        real_rest(self)

    monkeypatch.setattr(KeyWalk, "rest", rest)
    argv = ["scan", "--json", "--vault", str(sample_vault)]
    assert fast.answer(argv) is None  # nothing stored yet
    out = scan_output(open_vault(sample_vault).remember_listings(), True)
    assert f"already in converged/topics/{topic.name}" in out
    monkeypatch.setattr(KeyWalk, "rest", real_rest)
    stored = fast.answer(argv)
    assert stored is not None  # the key matched the vault as it is now
    text = stored.decode("utf-8") if isinstance(stored, bytes) else stored
    assert text == out + "\n"
    # and a memory file changed after the scan is a miss again
    topic.write_text(topic.read_text("utf-8") + "- one more\n", "utf-8")
    os.utime(topic, (HOUR_AGO + 9, HOUR_AGO + 9))
    assert fast.answer(argv) is None


def test_a_walk_the_scan_never_finished_is_finished_when_stored(sample_vault, monkeypatch):
    """A scan that lists none of the later folders (no memory files, say): `store` takes the
    rest of the key, and the stored answer matches."""
    settle(sample_vault)
    vault = open_vault(sample_vault).remember_listings()
    pending = stored_results.begin(vault, "scan", (True, False), later=LATER)
    assert pending is not None and "walk" in pending and "key" not in pending
    assert vault.__dict__.pop("_rest_of_walk") is not None  # never run by the command
    stored_results.store(pending, stored_results.printed("{}"))
    entry = stored_results.load_entry(
        stored_results.entry_path(pending["root"], "scan", (True, False))
    )
    assert entry is not None and "walk" not in entry and entry["later"] == LATER
    assert stored_results.still_valid(entry, pending["root"])
