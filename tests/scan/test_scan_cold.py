"""The cold scan's work, counted rather than timed: one scan lists each folder once and stats
each note once."""

from __future__ import annotations

import os
import shutil
from collections import Counter

from cmem.scan.scanner import scan_vault
from cmem.vault.layers import DIVERGENT, open_vault


def _more_notes(root, copies: int = 1) -> None:
    """Copies of the sample vault's divergent notes under other names."""
    for path in sorted(root.glob("*.md")):
        for number in range(copies):
            shutil.copyfile(path, root / f"copy {number} {path.name}")


class _Entry:
    """An `os.DirEntry` that counts its stat: a DirEntry keeps the stat it took, so only its
    first call (whichever way it follows links: a plain file's are one) is a system call."""

    def __init__(self, entry, stats: Counter):
        self._entry, self._stats, self._taken = entry, stats, False
        self.name, self.path = entry.name, entry.path

    def stat(self, *, follow_symlinks=True):
        if not self._taken and self.name.endswith(".md"):
            self._stats[self.path] += 1
        self._taken = True
        return self._entry.stat(follow_symlinks=follow_symlinks)

    def __getattr__(self, name):
        return getattr(self._entry, name)

    def __fspath__(self):
        return self.path


class _Listing(list):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _count(monkeypatch) -> tuple[Counter, Counter]:
    """Folders listed and notes stat'ed (by `os.stat` or a listing's entry), from now on."""
    listed, stats = Counter(), Counter()
    real_scandir, real_stat = os.scandir, os.stat

    def scandir(path="."):
        listed[os.fspath(path)] += 1
        with real_scandir(path) as entries:
            return _Listing(_Entry(entry, stats) for entry in entries)

    def stat(path, *args, **kwargs):
        if os.fspath(path).endswith(".md"):
            stats[os.fspath(path)] += 1
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "stat", stat)
    return listed, stats


def test_a_cold_scan_lists_each_folder_once_and_stats_each_note_once(sample_vault, monkeypatch):
    _more_notes(sample_vault)
    vault = open_vault(sample_vault)
    with monkeypatch.context() as patch:  # its own patches only: the home stays isolated
        listed, stats = _count(patch)
        result = scan_vault(vault)

    root = str(sample_vault)
    assert result.notes_read > 0
    # the divergent root, the convergent folders (the guard) and the archive (odd names)
    assert {root, f"{root}/converged/core", f"{root}/archive"} <= set(listed)
    assert [folder for folder, times in listed.items() if times > 1] == []
    assert stats and max(stats.values()) == 1
    divergent = {str(file.location) for file in open_vault(sample_vault).list_layer(DIVERGENT)}
    assert len(divergent) > 10 and divergent <= set(stats)


def test_after_a_read_commands_listing_key_the_scan_stats_no_note_again(sample_vault, monkeypatch):
    """`cmem scan` takes its stored-result key first, which stats every note in one walk; the
    scan and the guard then take those stats from the walk's entries instead of their own."""
    from cmem.reading import stored_results

    _more_notes(sample_vault)
    vault = open_vault(sample_vault).remember_listings()
    with monkeypatch.context() as patch:  # its own patches only: the home stays isolated
        listed, stats = _count(patch)
        stored_results.begin(vault, "scan", (False, False))  # None: files just written, racy
        walked = Counter(stats)
        result = scan_vault(vault)
    convergent = {str(file.location) for file in vault.convergent_files()}
    assert result.notes_read > 10 and convergent  # every divergent note read, the guard built
    assert set(walked) >= convergent | {str(f.location) for f in vault.list_layer(DIVERGENT)}
    assert stats == walked  # not one note stat'ed again by the scan
    assert [folder for folder, times in listed.items() if times > 1] == []
    # the same result as a scan that stats each note itself
    (vault.machine_dir / "scan-cache.marshal").unlink()
    (vault.machine_dir / "guard-index.marshal").unlink()
    assert scan_vault(open_vault(sample_vault)).to_json() == result.to_json()
