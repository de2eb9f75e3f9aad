"""A stored listing key is checked without listing a folder (`reading/stored_results.py:
key_holds`): after any change a person or a tool makes, it says "holds" exactly when a walk made
now (`KeyWalk`, which lists every folder) gives the same key."""

from __future__ import annotations

import os
import random
import shutil

import pytest

from cmem.reading.stored_results import KeyWalk, key_holds


def _tree(root) -> list[str]:
    """Two layers of notes with subfolders, and the files besides notes a key holds."""
    for folder in ("top", "top/sub", "top/sub/deep", "other"):
        os.makedirs(root / folder, exist_ok=True)
    for index, folder in enumerate(("top", "top", "top/sub", "top/sub/deep", "other", "other")):
        (root / folder / f"note {index}.md").write_text(f"- note {index}\n", "utf-8")
    (root / "top" / "picture.png").write_bytes(b"\x89PNG")
    (root / "config.yaml").write_text("language: en\n", "utf-8")
    return [str(root / "config.yaml"), str(root / "missing.yaml")]


def _walk(root, files: list[str]) -> list:
    return KeyWalk(str(root), files, [], tops=("top", "other", "not made yet")).result()[0]


def _notes(root) -> list:
    return sorted(p for p in root.rglob("*.md") if p.is_file() and not p.is_symlink())


MUTATIONS = {
    "nothing": lambda root, pick: None,
    "append to a note": lambda root, pick: pick(_notes(root)).open("a").write("- more\n"),
    "same size, mtime set back": lambda root, pick: _same_size(pick(_notes(root))),
    "a note added": lambda root, pick: (root / "top" / "sub" / "new.md").write_text("- x\n"),
    "a note removed": lambda root, pick: pick(_notes(root)).unlink(),
    "a note renamed": lambda root, pick: (lambda p: p.rename(p.with_name("renamed.md")))(
        pick(_notes(root))
    ),
    "a subfolder added": lambda root, pick: (root / "top" / "sub" / "newer").mkdir(),
    "a subfolder removed": lambda root, pick: shutil.rmtree(root / "top" / "sub" / "deep"),
    "a folder renamed": lambda root, pick: (root / "top" / "sub").rename(root / "top" / "moved"),
    "a folder's mode changed": lambda root, pick: os.chmod(root / "top" / "sub", 0o700),
    "a picture added": lambda root, pick: (root / "other" / "photo.jpg").write_bytes(b"\xff"),
    "a dot file added": lambda root, pick: (root / "other" / ".hidden.md").write_text("x"),
    "a layer folder made": lambda root, pick: (root / "not made yet").mkdir(),
    "a note replaced by a link": lambda root, pick: _linked(pick(_notes(root))),
    "a note replaced by a folder": lambda root, pick: _folder(pick(_notes(root))),
    "the config edited": lambda root, pick: (root / "config.yaml").write_text("language: zh\n"),
    "a missing file made": lambda root, pick: (root / "missing.yaml").write_text("x: 1\n"),
}


def _same_size(path) -> None:
    st = os.stat(path)
    text = path.read_text("utf-8")
    path.write_text(text[::-1], "utf-8")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _linked(path) -> None:
    path.unlink()
    path.symlink_to(path.parent)


def _folder(path) -> None:
    path.unlink()
    path.mkdir()


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_a_stored_key_holds_exactly_when_a_new_walk_gives_it(tmp_path, mutation):
    for seed in range(3):
        root = tmp_path / f"{mutation}-{seed}"
        files = _tree(root)
        stored = _walk(root, files)
        assert key_holds(str(root), files, stored)
        MUTATIONS[mutation](root, random.Random(seed).choice)
        now = _walk(root, files)
        assert key_holds(str(root), files, stored) == (now == stored), mutation
        if mutation != "nothing":
            assert now != stored, f"the walk itself should see {mutation!r}"


def test_a_key_of_another_shape_does_not_hold(tmp_path):
    files = _tree(tmp_path)
    stored = _walk(tmp_path, files)
    assert not key_holds(str(tmp_path), files, stored[:-1] + [b"other stats"])
    assert not key_holds(str(tmp_path), files + ["one more"], stored)
