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


def test_a_cold_scan_lists_each_folder_once_and_stats_each_note_once(sample_vault, monkeypatch):
    _more_notes(sample_vault)
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
