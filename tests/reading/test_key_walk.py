"""A scan's stored answer is keyed by one walk of the vault (`stored_results.KeyWalk`), taken
before the scan reads anything it covers: a memory file changed while the scan runs leaves a key
that no longer matches, so the light path never prints an answer older than the vault."""

from __future__ import annotations

import os

from cmem.reading.scan_output import scan_output, stored_scan
from cmem.reading.stored_results import KeyWalk
from cmem.scan import scan_cache, scanner
from cmem.vault import notes
from cmem.vault.layers import open_vault
from support import HOUR_AGO, settle


def test_the_key_is_taken_before_any_note_is_read(sample_vault, monkeypatch):
    settle(sample_vault)
    events: list[str] = []
    real_walk, real_read = KeyWalk._walk, notes.read_note

    def walk(self, stack):
        events.append("key")
        real_walk(self, stack)

    def read(file, *args, **kwargs):
        events.append(file.layer)
        return real_read(file, *args, **kwargs)

    monkeypatch.setattr(KeyWalk, "_walk", walk)
    monkeypatch.setattr(scan_cache, "read_note", read)
    machine = open_vault(sample_vault).machine_dir
    for name in (scanner.CACHE_NAME, scanner.GUARD_NAME):
        (machine / name).unlink(missing_ok=True)  # every note and memory file read again
    scan_output(open_vault(sample_vault).remember_listings(), True)
    assert events.count("key") == 1  # one walk
    assert events[0] == "key" and {"divergent", "resident", "situational"} <= set(events[1:])


def test_a_memory_file_changed_while_the_scan_runs_is_a_miss(sample_vault, monkeypatch):
    """A line pasted back from memory waits as "already in" the file that holds it. The memory
    file gains that line while the scan runs (after its key was taken, before the guard reads
    it): the answer is not printed again from the store, and the next scan sees the new file."""
    settle(sample_vault)
    topic = sample_vault / "converged" / "topics" / "python-tooling.md"
    line = "- I decided to use ruff for every lint from now on"
    note = sample_vault / "lint.md"
    note.write_text(f"{line}\n", "utf-8")
    os.utime(note, (HOUR_AGO, HOUR_AGO))
    os.utime(sample_vault, (HOUR_AGO, HOUR_AGO))
    (open_vault(sample_vault).machine_dir / scanner.GUARD_NAME).unlink(missing_ok=True)
    real_read = notes.read_note

    def read(file, *args, **kwargs):
        if file.layer == "situational" and "ruff for every lint" not in topic.read_text("utf-8"):
            topic.write_text(topic.read_text("utf-8") + f"{line}\n", "utf-8")
            os.utime(topic, (HOUR_AGO + 5, HOUR_AGO + 5))
        return real_read(file, *args, **kwargs)

    monkeypatch.setattr(scan_cache, "read_note", read)
    assert stored_scan(sample_vault, True) is None  # nothing stored yet
    scan_output(open_vault(sample_vault).remember_listings(), True)
    monkeypatch.setattr(scan_cache, "read_note", real_read)
    assert (
        stored_scan(sample_vault, True) is None
    )  # the key holds the file's stat from before the change
    out = scan_output(open_vault(sample_vault).remember_listings(), True)
    assert f"already in converged/topics/{topic.name}" in out
    stored = stored_scan(sample_vault, True)
    assert stored is not None  # the key matches the vault as it is now
    text = stored.decode("utf-8") if isinstance(stored, bytes) else stored
    assert text == out + "\n"
