"""The conflict statements `status` shows, found file by file and kept under each file's stat: a
changed file is read again, an unchanged one is not, a file changed within the timestamp
granularity is never trusted, and a damaged cache is rebuilt."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from cmem.sync.conflicts_found import CACHE_NAME, find_conflicts
from cmem.vault.layers import open_vault
from support import settle

CONFLICT = "- ⚠ conflict (2026-11-30): tea, strong ⟷ tea, weak (source: [[a]])\n"


@pytest.fixture
def vault(make_vault):
    root = make_vault(
        {
            "a.md": "I like tea.\n",
            "converged/core/profile.md": "# Profile\n- tea (source: [[a]])\n" + CONFLICT,
            "converged/topics/food.md": "# Food\n- rice (source: [[a]])\n",
            "converged/topics/drinks.md": "# Drinks\n- water (source: [[a]])\n",
        }
    )
    settle(root)  # an hour old: past the racy window
    return root


def _reads(monkeypatch) -> list[str]:
    """The memory files read from now on (opening the vault reads its config too)."""
    read = []
    real = Path.read_text

    def read_text(self, *args, **kwargs):
        if self.suffix == ".md":
            read.append(self.name)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", read_text)
    return read


def _found(root) -> list[tuple[str, int, str]]:
    return [(c.path, c.line, c.versions) for c in find_conflicts(open_vault(root))]


def test_conflicts_are_found_and_unchanged_files_are_not_read_again(vault, monkeypatch):
    first = _found(vault)
    assert first == [("converged/core/profile.md", 3, ("tea, strong", "tea, weak (source: [[a]])"))]
    reads = _reads(monkeypatch)
    assert _found(vault) == first
    assert reads == []  # every file's stat matched its kept answer


def test_an_edited_file_is_read_again(vault, monkeypatch):
    _found(vault)
    drinks = vault / "converged/topics/drinks.md"
    drinks.write_text("# Drinks\n" + CONFLICT, encoding="utf-8")
    hour_ago = time.time() - 3600
    os.utime(drinks, (hour_ago, hour_ago))  # an mtime set back: the ctime still moved
    profile = vault / "converged/core/profile.md"
    profile.write_text("# Profile\n- tea, strong (source: [[a]])\n", encoding="utf-8")
    reads = _reads(monkeypatch)

    found = _found(vault)

    assert [path for path, _, _ in found] == ["converged/topics/drinks.md"]
    assert sorted(reads) == ["drinks.md", "profile.md"]


def test_a_file_changed_within_the_racy_window_is_read_every_time(vault, monkeypatch):
    _found(vault)
    food = vault / "converged/topics/food.md"
    food.write_text("# Food\n" + CONFLICT, encoding="utf-8")  # just now
    assert ("converged/topics/food.md", 2) in [(p, n) for p, n, _ in _found(vault)]
    reads = _reads(monkeypatch)
    _found(vault)
    _found(vault)
    assert reads == ["food.md", "food.md"]


@pytest.mark.parametrize("damage", [b"", b"not marshal", None])
def test_a_damaged_or_foreign_cache_is_rebuilt(vault, damage):
    first = _found(vault)
    cache = open_vault(vault).machine_dir / CACHE_NAME
    assert cache.is_file()
    if damage is None:  # another cmem's cache: another stamp
        import marshal

        data = marshal.loads(cache.read_bytes())
        data["stamp"] = "cmem 0.0.0 0 elsewhere"
        data["entries"] = {rel: (entry[0], []) for rel, entry in data["entries"].items()}
        cache.write_bytes(marshal.dumps(data))
    else:
        cache.write_bytes(damage)
    assert _found(vault) == first


def test_what_older_code_found_is_not_reused(vault, monkeypatch):
    """The answers depend on memory_merge's rule: its file's stat is part of the cache's stamp,
    so an edited or upgraded cmem of the same version reads every file again."""
    from cmem.sync import conflicts_found, memory_merge

    first = _found(vault)
    reads = _reads(monkeypatch)
    real = conflicts_found.code_stamp
    monkeypatch.setattr(
        conflicts_found,
        "code_stamp",
        lambda *modules: real(*modules) + (("edited",) if memory_merge in modules else ()),
    )
    assert _found(vault) == first
    assert sorted(reads) == ["drinks.md", "food.md", "profile.md"]


def test_an_unwritable_cache_costs_only_speed(vault, monkeypatch):
    from cmem import cache_store

    # a full disk
    monkeypatch.setattr(cache_store, "write_cache", lambda path, data, mode=0o666: None)
    assert _found(vault) == _found(vault) != []
