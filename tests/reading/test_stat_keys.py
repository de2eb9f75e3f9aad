"""Every cache that keeps an answer under a file's stat keys it on (mtime, size, inode, ctime).

(mtime, size) alone misses an edit that keeps the size and sets the mtime back — `touch -r`,
`rsync -t`, a backup restore, a tool that puts times back — which only the ctime tells (git's
index keeps the ctime for the same reason). The scan's caches are tested in
`scan/test_scan.py`, the stored answers in `surfaces/test_stored_answers.py`; these are the layer sizes of
`status` and `context` and the index of `recall`. `test_stored_sequences.py` checks the rule
across random sequences of changes.
"""

from __future__ import annotations

import os

from cmem.reading.recall import recall_memory
from cmem.reading.sizes import measure_layers
from cmem.vault.layers import open_vault

OLD = 1_700_000_000 * 10**9  # long before the test: every answer is kept (the racy rule)


def _same_size_edit(path, old: str, new: str) -> None:
    """Replace `old` by `new` (the same UTF-8 size) and put the file's mtime back."""
    before = path.stat()
    text = path.read_text("utf-8")
    assert len(old.encode("utf-8")) == len(new.encode("utf-8")) and old in text
    path.write_text(text.replace(old, new), "utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def _settle(root) -> None:
    for path in root.rglob("*.md"):
        os.utime(path, ns=(OLD, OLD))


def test_layer_sizes_follow_an_edit_that_keeps_size_and_mtime(make_vault):
    root = make_vault({"a.md": "# a\n\n" + "abc " * 40 + "\n"})
    _settle(root)
    vault = open_vault(root)
    before = measure_layers(vault)["divergent"].tokens
    assert measure_layers(vault)["divergent"].tokens == before  # from the cache
    _same_size_edit(root / "a.md", "abc " * 40, "中 " * 40)  # three bytes each, more tokens
    after = measure_layers(open_vault(root))["divergent"].tokens
    assert after != before


def test_layer_sizes_of_a_file_written_just_now_are_measured_again(make_vault):
    """The racy rule: a file whose mtime is within RACY_NS of its measure is not kept, so a
    second write in the same timestamp tick (same mtime, same size, even the same ctime on a
    coarse clock) is measured."""
    root = make_vault({"a.md": "# a\n\n" + "abc " * 40 + "\n"})
    vault = open_vault(root)
    measure_layers(vault)
    cache = vault.machine_dir / "layer-sizes.marshal"
    assert not cache.exists() or b"a.md" not in cache.read_bytes()


def test_recall_finds_a_word_after_an_edit_that_keeps_size_and_mtime(make_vault):
    topic = "converged/topics/fruit.md"
    root = make_vault({topic: "# fruit\n\n- kumquat season starts in winter\n"})
    _settle(root)
    vault = open_vault(root)
    assert recall_memory(vault, "kumquat", record=False).results
    _same_size_edit(root / topic, "kumquat", "loquats")
    vault = open_vault(root)
    assert recall_memory(vault, "loquats", record=False).results
    assert not recall_memory(vault, "kumquat", record=False).results


def test_an_index_of_the_version_before_is_rebuilt(make_vault):
    """Version 4 of the recall index had three fields and no title rows: its rows cannot be
    deleted with the five fields of version 5, so it is rebuilt from the notes, once."""
    import sqlite3

    from cmem.reading.search_index import CONVERGENT, index_file

    topic = "converged/topics/fruit.md"
    root = make_vault({topic: "# fruit\n\n- kumquat season starts in winter\n"})
    _settle(root)
    vault = open_vault(root)
    assert recall_memory(vault, "kumquat", record=False).results
    path = index_file(vault, CONVERGENT)
    with sqlite3.connect(path) as db:  # as version 4 left it
        db.execute("UPDATE meta SET value='4' WHERE key='version'")
    first = recall_memory(open_vault(root), "kumquat", record=False)
    assert first.results and first.sync.rebuilt == "created"
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT value FROM meta WHERE key='version'").fetchone() == ("5",)
    again = recall_memory(open_vault(root), "kumquat", record=False)
    assert again.sync.rebuilt is None and again.results


def test_the_json_sizes_cache_of_before_is_removed(make_vault):
    root = make_vault({"a.md": "# a\n"})
    vault = open_vault(root)
    vault.machine_dir.mkdir(parents=True, exist_ok=True)
    before = vault.machine_dir / "sizes-cache.json"
    before.write_text('{"version": 2, "files": {}}', "utf-8")
    assert measure_layers(vault)["divergent"].notes == 1
    assert not before.exists()
