"""The cold scan's work, counted rather than timed: above a threshold the notes are read in
several processes with the very result a single process gives, in the same order; and one scan
lists each folder once and stats each note once."""

from __future__ import annotations

import marshal
import os
import shutil
import sys
from collections import Counter

import pytest

from cmem.scan import scanner as scan_module
from cmem.scan.scanner import CACHE_NAME, scan_vault
from cmem.vault.layers import DIVERGENT, open_vault

OLD = 1_700_000_000 * 10**9
linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="notes are read in forked processes on Linux only"
)


def _more_notes(root, copies: int = 4) -> None:
    """Copies of the sample vault's divergent notes under other names: enough notes to share,
    and key phrases that recur across them."""
    notes = sorted(root.glob("*.md"))
    for number in range(copies):
        for path in notes:
            shutil.copyfile(path, root / f"copy {number} {path.name}")
    for number, path in enumerate(sorted(root.rglob("*.md"))):
        stamp = OLD + number * 10**9  # long ago (entries trusted at once), and all different
        os.utime(path, ns=(stamp, stamp))


def _spy(monkeypatch) -> list:
    """Records what each call of _read_in_processes returned."""
    calls = []
    real = scan_module._read_in_processes

    def spy(*args):
        entries = real(*args)
        calls.append(entries)
        return entries

    monkeypatch.setattr(scan_module, "_read_in_processes", spy)
    return calls


@linux_only
def test_processes_give_the_single_process_result_in_order(sample_vault, monkeypatch):
    _more_notes(sample_vault)
    calls = _spy(monkeypatch)
    vault = open_vault(sample_vault)
    single = scan_vault(vault)
    assert calls == []  # under the threshold: a small vault stays in one process
    assert single.notes_read == single.notes_scanned > 40 and single.signals and single.deferred
    (vault.machine_dir / CACHE_NAME).unlink()  # cold again

    monkeypatch.setattr(scan_module, "PARALLEL_MIN_READS", 4)
    if hasattr(os, "sched_getaffinity"):
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    shared = scan_vault(open_vault(sample_vault))
    assert len(calls) == 1  # the processes did read the notes
    assert shared.notes_read == single.notes_read
    assert shared.to_json() == single.to_json()
    # what they read was cached as a single process caches it: a warm scan agrees
    warm = scan_vault(open_vault(sample_vault))
    assert warm.notes_read == 0 and warm.to_json() == single.to_json()


@linux_only
def test_a_failing_child_costs_only_speed(sample_vault, monkeypatch):
    _more_notes(sample_vault)
    single = scan_vault(open_vault(sample_vault)).to_json()
    (open_vault(sample_vault).machine_dir / CACHE_NAME).unlink()
    monkeypatch.setattr(scan_module, "PARALLEL_MIN_READS", 4)
    if hasattr(os, "sched_getaffinity"):
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2})
    monkeypatch.setattr(os, "cpu_count", lambda: 3)

    class Broken:  # the children cannot send their entries back; the parent still decodes
        loads = staticmethod(marshal.loads)

        @staticmethod
        def dumps(value):
            raise ValueError("cannot send")

    monkeypatch.setattr(scan_module, "marshal", Broken)
    calls = _spy(monkeypatch)
    result = scan_vault(open_vault(sample_vault))
    assert len(calls) == 1
    assert result.to_json() == single


def test_workers_only_with_enough_notes_and_cores(monkeypatch):
    monkeypatch.setattr(sys, "platform", "linux")
    if hasattr(os, "sched_getaffinity"):
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)))
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    floor = scan_module.PARALLEL_MIN_READS
    assert scan_module._workers(floor - 1) == 1
    assert scan_module._workers(floor) == 2  # each process gets at least half the floor
    assert scan_module._workers(floor * 100) == 8  # never more than the cores
    if hasattr(os, "sched_getaffinity"):
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert scan_module._workers(floor * 100) == 1


def test_a_cold_scan_lists_each_folder_once_and_stats_each_note_once(sample_vault, monkeypatch):
    _more_notes(sample_vault, copies=1)
    vault = open_vault(sample_vault)
    listed, stats = Counter(), Counter()
    real_scandir, real_stat = os.scandir, os.stat

    def scandir(path="."):
        listed[os.fspath(path)] += 1
        return real_scandir(path)

    def stat(path, *args, **kwargs):
        if os.fspath(path).endswith(".md"):
            stats[os.fspath(path)] += 1
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "stat", stat)
    result = scan_vault(vault)
    monkeypatch.undo()

    root = str(sample_vault)
    assert result.notes_read > 0
    # the divergent root, the convergent folders (the guard) and the archive (odd names)
    assert {root, f"{root}/converged/core", f"{root}/archive"} <= set(listed)
    assert [folder for folder, times in listed.items() if times > 1] == []
    assert stats and max(stats.values()) == 1
    divergent = {str(file.location) for file in open_vault(sample_vault).list_layer(DIVERGENT)}
    assert len(divergent) > 10 and divergent <= set(stats)
