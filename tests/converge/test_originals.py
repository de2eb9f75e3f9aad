"""The pass reads every memory file (`pipeline.read_originals`) with plain system calls: each
answer is the one `steps/changes.py: current_bytes` gives, whatever the file holds or is; and
keeps their bytes between passes under each file's stat (`converge/memory_bytes.py`)."""

from __future__ import annotations

import marshal
import os
import random
from pathlib import Path

import pytest

from cmem import cache_file
from cmem.converge.memory_bytes import CACHE_NAME, memory_bytes, text_digest
from cmem.converge.pipeline import _file_bytes, read_originals
from cmem.steps.changes import ChangeSet, SecondWriter, apply_changes, current_bytes
from cmem.vault.layers import open_vault


def test_plain_reads_give_what_current_bytes_gives(tmp_path):
    rng = random.Random(13)
    cases = {
        "empty.md": b"",
        "crlf.md": b"# T\r\n\r\n- a\r\n",
        "not-utf8.md": b"- caf\xe9\n",
        "nul.md": b"a\x00b\n",
        "exact.md": b"x" * (1 << 16),
        "large.md": bytes(rng.randrange(256) for _ in range(300_000)),
        "zh.md": "- 其实我更喜欢早上写代码。\n".encode() * 5000,
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "folder.md").mkdir()
    (tmp_path / "plain").write_bytes(b"x")
    names = [*cases, "folder.md", "missing.md", "plain/below.md"]
    for name in names:
        location = str(tmp_path / name)
        assert _file_bytes(location) == current_bytes(location), name
    assert _file_bytes(str(tmp_path / "large.md")) == cases["large.md"]


def test_the_originals_are_the_files_as_read(make_vault):
    files = {
        "converged/core/profile.md": "# P\n\n- 其实我更喜欢早上写代码。\n",
        "converged/topics/crlf.md": "# C\r\n\r\n- uses uv\r\n",
        "converged/topics/plain.md": "# Plain\n\n- uses uv\n" * 2000,
    }
    root = make_vault(files)
    (root / "converged/topics/latin1.md").write_bytes(b"- caf\xe9\n")
    texts, raws = read_originals(open_vault(root))
    for rel in [*files, "converged/topics/latin1.md"]:
        raw = (root / rel).read_bytes()
        assert raws[rel] == raw
        if rel.endswith("latin1.md"):  # not UTF-8: read as a note is, never with U+FFFD
            assert texts[rel] == "- café\n"
        else:
            assert texts[rel] == raw.decode("utf-8").replace("\r\n", "\n")


def test_the_digest_kept_with_each_file_is_the_digest_of_its_text(make_vault):
    """Kept beside a file's bytes, its text's digest is what hashing the text would give —
    read or kept, UTF-8 or not, CRLF or BOM — and a file whose text is not its bytes has none
    kept (its text is hashed when asked)."""
    import hashlib

    from cmem.converge import statement_words

    files = {
        "converged/core/profile.md": "# P\n\n- 其实我更喜欢早上写代码。\n",
        "converged/topics/crlf.md": "# C\r\n\r\n- uses uv\r\n",
        "converged/topics/bom.md": "\ufeff# B\n\n- uses uv\n",
        "converged/topics/plain.md": "# Plain\n\n- uses uv\n",
    }
    root = make_vault(files)
    (root / "converged/topics/latin1.md").write_bytes(b"- caf\xe9\n")
    _settled(root, *files, "converged/topics/latin1.md")
    for attempt in ("read", "kept"):
        statement_words.forget_digests()
        digests: dict = {}
        raws = memory_bytes(open_vault(root), _file_bytes, digests)
        assert set(digests) == {
            "converged/core/profile.md",
            "converged/topics/bom.md",
            "converged/topics/plain.md",
        }, attempt
        texts, _ = read_originals(open_vault(root))
        hashed = []
        real = statement_words.digest_of_bytes
        statement_words.digest_of_bytes = lambda data: hashed.append(data) or real(data)
        try:
            for rel, text in texts.items():
                truth = hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()
                assert statement_words.digest_of(text) == truth, (attempt, rel)
                assert digests.get(rel, truth) == truth and raws[rel] == (root / rel).read_bytes()
        finally:
            statement_words.digest_of_bytes = real
        # the originals' texts were not hashed again, but the two that are not their bytes
        assert len(hashed) == 2, attempt
    assert text_digest(b"- caf\xe9\n") == b"" and text_digest(b"a\r\nb") == b""
    statement_words.forget_digests()


# --- kept between passes (converge/memory_bytes.py) ---------------------------------------------


def _settled(root, *rels) -> None:
    """Set the files' mtimes a minute back: past the racy window, as files of earlier days are."""
    for rel in rels:
        path = root / rel
        past = path.stat().st_mtime - 60
        os.utime(path, (past, past))


def _reads(vault) -> tuple[dict[str, bytes], list[str]]:
    """memory_bytes on a fresh listing, and the files it read."""
    read = []

    def counting(location):
        read.append(Path(location).relative_to(vault.root).as_posix())
        return _file_bytes(location)

    return memory_bytes(vault, counting), read


@pytest.fixture
def memory(make_vault):
    files = {
        "converged/core/profile.md": "# P\n\n- 其实我更喜欢早上写代码。\n",
        "converged/topics/a.md": "# A\n\n- uses uv\n",
        "converged/topics/b.md": "# B\r\n\r\n- uses ruff\r\n",
    }
    root = make_vault(files)
    _settled(root, *files)
    return root, sorted(files)


def _truth(root, rels) -> dict[str, bytes]:
    return {rel: (root / rel).read_bytes() for rel in rels}


def test_settled_files_are_read_once_and_given_as_they_are(memory):
    root, rels = memory
    first, read = _reads(open_vault(root))
    assert first == _truth(root, rels) and sorted(read) == rels
    cache = Path(open_vault(root).machine_dir) / CACHE_NAME
    assert cache.stat().st_mode & 0o777 == 0o600  # a copy of the memory: its owner's only
    again, read = _reads(open_vault(root))
    assert again == _truth(root, rels) and read == []
    assert list(again) == [f.rel for f in open_vault(root).convergent_files()]  # listing order


def test_an_edit_is_read_again_even_with_its_mtime_set_back(memory):
    root, rels = memory
    _reads(open_vault(root))
    path = root / "converged/topics/a.md"
    st = path.stat()
    path.write_text("# A\n\n- uses pip\n")  # the same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # the ctime still moved
    got, read = _reads(open_vault(root))
    assert read == ["converged/topics/a.md"]
    assert got == _truth(root, rels)


def test_a_file_just_written_is_read_every_time_until_it_settles(memory):
    root, rels = memory
    _reads(open_vault(root))
    (root / "converged/topics/b.md").write_text("# B\n\n- uses black\n")
    for _ in range(2):
        got, read = _reads(open_vault(root))
        assert read == ["converged/topics/b.md"] and got == _truth(root, rels)
    _settled(root, "converged/topics/b.md")
    _reads(open_vault(root))
    assert _reads(open_vault(root))[1] == []


def test_files_removed_and_added_are_gone_and_read(memory):
    root, rels = memory
    _reads(open_vault(root))
    (root / "converged/topics/a.md").unlink()
    (root / "converged/topics/c.md").write_text("# C\n\n- new\n")
    got, read = _reads(open_vault(root))
    rels = [r for r in rels if not r.endswith("a.md")] + ["converged/topics/c.md"]
    assert read == ["converged/topics/c.md"] and got == _truth(root, rels)


@pytest.mark.parametrize("damage", [b"", b"not marshal", "foreign"])
def test_a_damaged_or_foreign_cache_is_rebuilt(memory, damage):
    root, rels = memory
    vault = open_vault(root)
    _reads(vault)
    cache = Path(vault.machine_dir) / CACHE_NAME
    if damage == "foreign":  # another vault's, or another format's
        cache.write_bytes(marshal.dumps({"stamp": "1 /elsewhere", "entries": {}}))
    else:
        cache.write_bytes(damage)
    got, read = _reads(open_vault(root))
    assert got == _truth(root, rels) and sorted(read) == rels
    assert _reads(open_vault(root))[1] == []


def test_a_cache_that_cannot_be_written_costs_only_speed(memory, monkeypatch):
    root, rels = memory
    monkeypatch.setattr(cache_file, "write_cache", lambda path, data, mode=0o666: None)
    for _ in range(2):
        got, read = _reads(open_vault(root))
        assert got == _truth(root, rels) and sorted(read) == rels


def test_kept_bytes_that_went_stale_make_a_pass_refuse_not_overwrite(memory):
    """What is kept never decides a write: the second-writer check compares the disk with the
    bytes the pass started from. A cache holding other bytes under the file's stat (made by hand:
    it cannot happen outside the racy window) makes the write refuse, and the file keeps the
    user's bytes."""
    root, _ = memory
    vault = open_vault(root)
    _reads(vault)
    cache = Path(vault.machine_dir) / CACHE_NAME
    data = marshal.loads(cache.read_bytes())
    stat, _ = data["entries"]["converged/topics/a.md"]
    stale = b"# A\n\n- stale\n"
    data["entries"]["converged/topics/a.md"] = (stat, (stale, text_digest(stale)))
    cache.write_bytes(marshal.dumps(data))
    texts, raws = read_originals(open_vault(root))
    assert raws["converged/topics/a.md"] == b"# A\n\n- stale\n"
    changes = ChangeSet()
    changes.write("converged/topics/a.md", b"# A\n\n- rewritten\n", raws["converged/topics/a.md"])
    with pytest.raises(SecondWriter):
        apply_changes(open_vault(root), changes)
    assert (root / "converged/topics/a.md").read_text() == "# A\n\n- uses uv\n"


def test_a_few_files_out_of_date_do_not_rewrite_the_copy_many_do(make_vault):
    """Every pass finds the file its predecessor wrote out of date: reading it again costs less
    than rewriting the whole copy (5 MB at 10k notes), so up to `STALE_FILES` (or an eighth of
    the layer) are read again instead; past that the copy is rewritten."""
    from cmem.converge.memory_bytes import STALE_FILES

    files = {f"converged/topics/t{n:03d}.md": f"# T{n}\n\n- fact {n}\n" for n in range(600)}
    root = make_vault(files)
    _settled(root, *files)
    _reads(open_vault(root))
    cache = Path(open_vault(root).machine_dir) / CACHE_NAME
    written = cache.stat().st_mtime_ns
    edited = sorted(files)[:3]
    for rel in edited:
        (root / rel).write_text("# edited\n\n- changed\n")
    _settled(root, *edited)
    for _ in range(2):  # read again each time, the copy left as it was
        got, read = _reads(open_vault(root))
        assert sorted(read) == edited and got == _truth(root, sorted(files))
        assert cache.stat().st_mtime_ns == written
    many = sorted(files)[: STALE_FILES + 1]
    for rel in many:
        (root / rel).write_text("# edited again\n\n- changed again\n")
    _settled(root, *many)
    got, read = _reads(open_vault(root))
    assert sorted(read) == many and got == _truth(root, sorted(files))
    assert cache.stat().st_mtime_ns != written  # rewritten: the next pass reads none
    assert _reads(open_vault(root))[1] == []
