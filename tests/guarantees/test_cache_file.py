"""cmem.cache_file: the one writer of files cmem may lose (stored results, validators, read times,
the sync record) replaces them whole, and a folder it cannot write costs nothing but the file."""

from __future__ import annotations

import os

import pytest

from cmem.cache_file import write_cache


def test_a_file_is_replaced_whole_and_its_stat_returned(tmp_path):
    path = tmp_path / "deep" / "er" / "entry.marshal"
    first = write_cache(str(path), b"old")
    assert path.read_bytes() == b"old" and first.st_size == 3
    second = write_cache(str(path), b"newer")
    assert path.read_bytes() == b"newer"
    now = os.stat(path)
    assert (second.st_size, second.st_mtime_ns, second.st_ino) == (
        now.st_size,
        now.st_mtime_ns,
        now.st_ino,
    )
    assert sorted(p.name for p in path.parent.iterdir()) == ["entry.marshal"]  # no temp left


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_leaves_the_old_file_and_no_temp(tmp_path):
    folder = tmp_path / "machine"
    folder.mkdir()
    path = folder / "last-sync"
    path.write_bytes(b"kept")
    folder.chmod(0o555)
    try:
        assert write_cache(str(path), b"lost") is None
        assert path.read_bytes() == b"kept" and os.listdir(folder) == ["last-sync"]
    finally:
        folder.chmod(0o755)


def test_a_failed_replace_removes_its_temp(tmp_path, monkeypatch):
    path = tmp_path / "read-times.json"

    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    assert write_cache(str(path), b"{}") is None
    assert list(tmp_path.iterdir()) == []
