"""A scan holds the cyclic garbage collector off (`cmem/collector.py`): no collection walks the
entries it makes, none is merely put off until after it, and a caller's own setting is kept."""

from __future__ import annotations

import gc
import shutil
import weakref

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
    monkeypatch.setattr(scanner._Judgement, "assemble", lambda *a, **k: 1 / 0)
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
        # still frozen (an unfreeze makes it 0), and what the block made was not frozen with
        # them (+1000); a frozen object that died meanwhile leaves the count, so not `==`
        assert gc.isenabled() and 0 < gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()
    with collector.held_off():
        junk = [[] for _ in range(5000)]
    assert gc.isenabled() and gc.get_freeze_count() == 0 and gc.get_count()[0] < 100
    del junk


# --- what a process ending by os._exit need not free (`collector.keep`) --------------------


@pytest.fixture
def made(monkeypatch):
    """Weak references to what the next scan makes and is done with: its cache of note entries
    and one of those entries."""
    refs: dict[str, weakref.ref] = {}
    load = scanner._Cache.load.__func__

    def recording(cls, *args, **kwargs):
        cache = load(cls, *args, **kwargs)
        refs["cache"] = weakref.ref(cache)
        return cache

    monkeypatch.setattr(scanner._Cache, "load", classmethod(recording))
    yield refs
    collector.release()


def test_a_scan_frees_what_it_is_done_with_in_a_process_that_ends_normally(sample_vault, made):
    vault = open_vault(sample_vault)
    scan_vault(vault)
    gc.collect()
    assert made["cache"]() is None  # `keep` held nothing: `watch` and the server would grow


def test_a_process_ending_by_exit_keeps_a_scans_leftovers_until_then(sample_vault, made):
    collector.ending_by_exit()
    vault = open_vault(sample_vault)
    scan_vault(vault)
    gc.collect()
    cache = made["cache"]()
    assert cache is not None and cache.notes  # its entries with it, none freed one by one
    entry = weakref.ref(next(iter(cache.notes.values())))
    del cache
    collector.release()  # the full CLI takes over after all: let go
    gc.collect()
    assert made["cache"]() is None and entry() is None


def test_a_light_scan_that_hands_over_to_the_full_cli_lets_go(tmp_path, monkeypatch):
    from cmem import fast

    monkeypatch.chdir(tmp_path)  # no vault here: the full CLI would say so
    assert fast.run_scan(["scan", "--vault", str(tmp_path / "none")]) is None
    assert collector._kept is None
