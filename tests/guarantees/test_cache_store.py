"""cmem.cache_store: the one writer of files cmem may lose (stored results, validators, read times,
the sync record) replaces them whole, and a folder it cannot write costs nothing but the file."""

from __future__ import annotations

import os

import pytest

from cmem.cache_store import write_cache


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


def test_a_kept_file_reads_only_under_its_own_kind_format_and_depends(tmp_path, monkeypatch):
    from cmem import cache_store
    from cmem.cache_store import Kept

    path = tmp_path / "c.marshal"
    Kept(path, "scan", "settings A").write({"a.md": 1})
    assert Kept(path, "scan", "settings A").read() == {"a.md": 1}
    assert Kept(path, "scan", "settings B").read() == {}  # other settings
    assert Kept(path, "conflicts", "settings A").read() == {}  # another cache's file
    with monkeypatch.context() as patch:  # its own patch only: the home stays isolated
        patch.setitem(cache_store.FORMATS, "scan", cache_store.FORMATS["scan"] + 1)
        assert Kept(path, "scan", "settings A").read() == {}  # a format bumped
    monkeypatch.setattr(cache_store, "__version__", "9.9.9")
    reader = Kept(path, "scan", "settings A")
    assert reader.read() == {} and not reader.found  # another cmem
    for damage in (b"", b"\x00garbage", path.read_bytes()[:10]):
        path.write_bytes(damage)
        assert Kept(path, "scan", "settings A").read() == {}
    Kept(None, "scan").write({"x": 1})  # no path: nothing kept, nothing raised
    assert Kept(None, "scan").read() == {}


def test_a_value_marshal_cannot_hold_keeps_the_old_file(tmp_path):
    import datetime

    from cmem.cache_store import Kept

    path = tmp_path / "c.marshal"
    Kept(path, "conflicts").write({"a": 1})
    Kept(path, "conflicts").write({"a": datetime.date(2026, 1, 1)})
    assert Kept(path, "conflicts").read() == {"a": 1}


def test_entries_by_digest_keep_every_part_of_what_a_run_used(tmp_path):
    """A rewrite keeps the entries this run used, each with all its parts (one consumer's part
    is not dropped because this run asked another's); entries no run asked for go."""
    from cmem.cache_store import Kept, KeptByDigest

    path = tmp_path / "d.marshal"
    first = KeptByDigest(Kept(path, "prompt-texts"))
    texts = [f"text {n}" for n in range(16)]
    for text in texts:
        first.put(first.key(text), "tokens", len(text))
        first.put(first.key(text), "terms", text.upper())
    first.save()
    second = KeptByDigest(Kept(path, "prompt-texts"))
    made = []
    for text in texts[:8]:  # half the texts, one part: half the file stale
        assert second.made(second.key(text), "tokens", lambda: made.append(text)) == len(text)
    assert made == []
    second.save()
    third = KeptByDigest(Kept(path, "prompt-texts"))
    assert len(third.entries) == 8
    assert third.get(third.key(texts[0]), "terms") == "TEXT 0"  # the part not asked survived
    assert third.get(third.key(texts[9]), "tokens") is None
    assert third.key("same") is third.key("same")  # digested once in a store's life


def test_parts_are_read_one_at_a_time_and_only_from_the_file_read(tmp_path):
    """A file of entries and parts: `read` leaves the parts on disk, `part` reads one, from the
    file read: one replaced meanwhile never mixes the new file's parts with the old entries."""
    from cmem.cache_store import Kept

    path = tmp_path / "texts.marshal"
    kept = Kept(path, "start-memory-texts", "g1")
    kept.write({"n": 3}, parts=[b"one", b"", "二".encode()])
    reader = Kept(path, "start-memory-texts", "g1")
    assert reader.part(0) is None  # nothing read yet
    assert reader.read() == {"n": 3}
    assert [reader.part(i) for i in range(4)] == [b"one", b"", "二".encode(), None]
    Kept(path, "start-memory-texts", "g1").write({"n": 1}, parts=[b"new"])
    assert reader.part(0) == b"one"  # replaced since: still the parts of the entries read
    assert reader.read() == {"n": 1} and reader.part(0) == b"new"
    assert Kept(path, "start-memory-texts", "g2").read() == {}  # another generation
    plain = Kept(tmp_path / "plain.marshal", "start-memory")
    plain.write({"a": 1})
    assert plain.read() == {"a": 1} and plain.part(0) is None
    (tmp_path / "bad.marshal").write_bytes(b"cmem-kept-parts\n\xff\xff\xff\xff\xff\xff\xff\xffjunk")
    assert Kept(tmp_path / "bad.marshal", "start-memory").read() == {}


@pytest.mark.parametrize("damage", ["cut after the head", "cut in a part", "grown", "a byte"])
def test_a_parts_file_not_as_written_gives_no_wrong_part(tmp_path, damage):
    """A parts file cut short or grown reads as no entries; one whose part's bytes changed gives
    None for that part (each part's CRC-32 is kept in the head), the others as written."""
    from cmem.cache_store import Kept

    path = tmp_path / "texts.marshal"
    parts = [b"first part", "第二部分".encode(), b"third part"]
    Kept(path, "start-memory-texts", "g1").write({"n": 3}, parts=parts)
    data = path.read_bytes()
    size = int.from_bytes(data[16:24], "big")  # the head's length, after the mark
    base = 24 + size  # where the parts start
    damaged = {
        "cut after the head": data[:base],
        "cut in a part": data[: base + len(parts[0]) + 2],
        "grown": data + b"more",
        "a byte": data[: base + 3] + b"X" + data[base + 4 :],  # in the first part
    }[damage]
    path.write_bytes(damaged)
    reader = Kept(path, "start-memory-texts", "g1")
    if damage == "a byte":
        assert reader.read() == {"n": 3} and reader.found
        assert [reader.part(i) for i in range(3)] == [None, *parts[1:]]
    else:
        assert reader.read() == {} and not reader.found and reader.part(1) is None
