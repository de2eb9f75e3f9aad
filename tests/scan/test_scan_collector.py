"""A scan holds the cyclic garbage collector off (`cmem/collector.py`): no collection walks the
entries it makes, none is merely put off until after it, and a caller's own setting is kept."""

from __future__ import annotations

import gc
import shutil

import pytest

from cmem import collector
from cmem.scan import scanner
from cmem.scan.scanner import scan_vault
from cmem.vault.layers import open_vault


@pytest.fixture
def collections():
    """The collections that run from now on, by generation."""
    seen: list[int] = []

    def note(phase, info):
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(note)
    threshold = gc.get_threshold()
    gc.set_threshold(700, 10, 10)  # Python's default, which `cmem.fast` raises
    try:
        yield seen
    finally:
        gc.callbacks.remove(note)
        gc.set_threshold(*threshold)


def _many(root, copies: int = 40) -> None:
    for path in sorted(root.glob("*.md")):
        for number in range(copies):
            shutil.copyfile(path, root / f"copy {number} {path.name}")


def test_a_cold_scan_runs_no_collection_and_leaves_none_owed(
    sample_vault, collections, monkeypatch
):
    monkeypatch.setenv("CMEM_SCAN_PROCESSES", "1")  # the collections of this process, all of them
    _many(sample_vault)
    vault = open_vault(sample_vault)
    collections.clear()
    result = scan_vault(vault)
    assert result.notes_read > 300 and result.signals
    assert collections == []  # at the default threshold, a scan this size made dozens
    assert gc.isenabled()
    assert gc.get_count()[0] < 700  # what the scan made was moved on, not left to the next one
    # and what it made, in the oldest generation, is still collected when it becomes garbage
    del result
    gc.collect()


def test_the_collector_runs_again_after_a_scan_even_one_that_fails(sample_vault, monkeypatch):
    vault = open_vault(sample_vault)
    monkeypatch.setattr(scanner, "_assemble", lambda *a, **k: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        scan_vault(vault)
    assert gc.isenabled()


def test_held_off_keeps_what_the_caller_set():
    gc.disable()
    try:
        with collector.held_off():
            assert not gc.isenabled()
        assert not gc.isenabled()  # off before, off after
    finally:
        gc.enable()
    kept = [object() for _ in range(10)]
    box = [kept]
    gc.freeze()  # a caller's frozen objects stay frozen
    try:
        frozen = gc.get_freeze_count()
        with collector.held_off():
            assert not gc.isenabled()
            box.append([[] for _ in range(1000)])
        assert gc.isenabled() and gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
    with collector.held_off():
        junk = [[] for _ in range(5000)]
    assert gc.isenabled() and gc.get_freeze_count() == 0 and gc.get_count()[0] < 100
    del junk
