"""A commit's tree without an index (`cmem/steps/git_trees.py`, issue 13): for any parent tree and
any changes, the tree is the one git's own index gives (`read-tree`, `update-index --index-info`,
`write-tree`), including its corner cases — a path through a file, a file over a folder, a folder
left empty, modes, names that are not UTF-8 — in SHA-1 and SHA-256 repositories; and it reads and
writes only the trees on the way to a change."""

from __future__ import annotations

import os
import random
import subprocess

import pytest

from cmem.errors import GitError
from cmem.steps import commits as history
from cmem.steps.git_trees import tree_with
from support import git

NAMES = ["a", "a.md", "a-b", "a0", "b", "Ab", "x y", "é", "笔记", "z"]


def _run(root, *args, data: bytes | None = None, env=None) -> str:
    return (
        subprocess.run(
            ["git", "-C", str(root), *args], input=data, capture_output=True, check=True, env=env
        )
        .stdout.decode("utf-8", "surrogateescape")
        .strip()
    )


def _repo(tmp_path, object_format: str = "sha1"):
    root = tmp_path / f"repo-{object_format}"
    args = ["init", "-q"] + (
        [f"--object-format={object_format}"] if object_format != "sha1" else []
    )
    subprocess.run(["git", *args, str(root)], check=True, capture_output=True)
    return root


def _blob(root, text: str) -> str:
    return _run(root, "hash-object", "-w", "--stdin", data=text.encode())


def _by_index(root, parent_tree: str | None, entries) -> str:
    """The oracle: what git's index makes of the same changes."""
    index = root / ".git" / "oracle-index"
    index.unlink(missing_ok=True)
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    if parent_tree:
        _run(root, "read-tree", parent_tree, env=env)
    else:
        _run(root, "read-tree", "--empty", env=env)
    info = history._index_info(
        entries, len(_run(root, "hash-object", "-t", "tree", "--stdin", data=b""))
    )
    _run(root, "update-index", "-z", "--index-info", data=info, env=env)
    return _run(root, "write-tree", env=env)


def _argv(root) -> list[str]:
    return ["git", "-C", str(root)]


def _random_path(rng: random.Random) -> str:
    depth = rng.choice([1, 1, 2, 2, 3, 4])
    return "/".join(rng.choice(NAMES) for _ in range(depth))


def _random_entries(root, rng: random.Random, known: list[str], id_bytes: int) -> list:
    entries = []
    for _ in range(rng.randint(1, 8)):
        roll = rng.random()
        path = rng.choice(known) if known and roll < 0.5 else _random_path(rng)
        if roll < 0.25 and known:
            entries.append(("0", None, path))  # a removal (sometimes of a folder, a no-op)
            continue
        mode = rng.choice(["100644", "100644", "100644", "100755", "120000", "160000"])
        if mode == "160000":  # a submodule's commit: named, never stored here
            sha = bytes(rng.randrange(256) for _ in range(id_bytes)).hex()
            entries.append((mode, sha, path))
            continue
        entries.append((mode, _blob(root, f"{path} {rng.random()}"), path))
    return entries


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_any_changes_make_the_tree_gits_index_makes(tmp_path, object_format):
    root = _repo(tmp_path, object_format)
    algorithm = "sha256" if object_format == "sha256" else "sha1"
    rng = random.Random(f"trees-{object_format}")
    tree = None
    for case in range(40):
        known = (
            _run(root, "ls-tree", "-r", "-t", "--name-only", "-z", tree).split("\0") if tree else []
        )
        known = [path for path in known if path]
        entries = _random_entries(root, rng, known, 32 if algorithm == "sha256" else 20)
        expected = _by_index(root, tree, entries)
        made = tree_with(_argv(root), dict(os.environ), tree, entries, algorithm)
        assert made == expected, (case, entries)
        # every tree it names is stored and sound
        _run(root, "ls-tree", "-r", "-t", made)
        tree = made
    assert len(tree) == (64 if object_format == "sha256" else 40)


def test_a_vault_in_a_folder_of_a_larger_repository_commits_under_that_folder(tmp_path):
    from support import git_init

    outer = tmp_path / "outer"
    (outer / "code").mkdir(parents=True)
    (outer / "code" / "main.py").write_text("print(1)\n")
    vault = outer / "notes" / "vault"
    (vault / "converged" / "core").mkdir(parents=True)
    (vault / "a.md").write_text("a\n")
    git_init(outer)
    before = git(outer, "rev-parse", "HEAD:code").strip()
    (vault / "converged" / "core" / "p.md").write_bytes(b"# p\n")
    history.commit_files(vault, {"converged/core/p.md": b"# p\n"}, "cmem: p")
    assert git(outer, "show", "HEAD:notes/vault/converged/core/p.md") == "# p\n"
    assert git(outer, "show", "HEAD:notes/vault/a.md") == "a\n"
    assert git(outer, "rev-parse", "HEAD:code").strip() == before  # untouched, not rewritten
    assert git(outer, "status", "--porcelain") == ""


def test_a_folder_emptied_disappears_and_the_root_may_be_empty(tmp_path):
    root = _repo(tmp_path)
    one = _blob(root, "one")
    first = tree_with(_argv(root), dict(os.environ), None, [("100644", one, "a/b/c.md")], "sha1")
    assert _run(root, "ls-tree", "-r", "--name-only", first) == "a/b/c.md"
    emptied = tree_with(_argv(root), dict(os.environ), first, [("0", None, "a/b/c.md")], "sha1")
    assert emptied == _run(root, "hash-object", "-t", "tree", "--stdin", data=b"")
    assert _run(root, "ls-tree", emptied) == ""


def test_names_that_are_not_utf8_round_trip(tmp_path):
    root = _repo(tmp_path)
    name = os.fsdecode(b"caf\xe9 notes.md")  # Latin-1 bytes: not UTF-8
    entries = [("100644", _blob(root, "x"), f"dir/{name}")]
    made = tree_with(_argv(root), dict(os.environ), None, entries, "sha1")
    assert made == _by_index(root, None, entries)
    listed = subprocess.run(
        ["git", "-C", str(root), "ls-tree", "-r", "-z", "--name-only", made],
        capture_output=True,
        check=True,
    ).stdout
    assert listed == b"dir/caf\xe9 notes.md\0"


def test_only_the_trees_on_the_way_to_a_change_are_read_and_written(tmp_path, monkeypatch):
    """A change in one folder reads its ancestors and writes them, never its siblings."""
    root = _repo(tmp_path)
    entries = [
        ("100644", _blob(root, f"n{i}"), f"{folder}/sub{i % 3}/n{i}.md")
        for i, folder in enumerate(["p", "q", "r"] * 10)
    ]
    base = tree_with(_argv(root), dict(os.environ), None, entries, "sha1")
    change = [("100644", _blob(root, "changed"), "q/sub1/n4.md")]
    started: list[list[str]] = []
    requested: list[bytes] = []
    real_popen = subprocess.Popen

    class Spy(real_popen):
        def __init__(self, argv, *args, **kwargs):
            started.append(list(argv))
            super().__init__(argv, *args, **kwargs)
            if "cat-file" in argv:
                write = self.stdin.write
                self.stdin.write = lambda data: (requested.append(data), write(data))[1]

    with monkeypatch.context() as patch:  # its own patch only: the home stays isolated
        patch.setattr(subprocess, "Popen", Spy)
        made = tree_with(_argv(root), dict(os.environ), base, change, "sha1")
    assert made == _by_index(root, base, change)
    assert sum("cat-file" in argv for argv in started) == 1  # one reader for every tree
    assert len(requested) == 3  # the root, q and q/sub1: nothing else of 13 trees
    (writing,) = [argv for argv in started if "hash-object" in argv]  # one process for all
    assert len(writing[writing.index("--") + 1 :]) == 3  # the same three trees, rewritten


def test_a_tree_git_stores_under_another_id_stops_the_commit(tmp_path):
    """The ids are computed here, to name each new tree in its parent: one git disagrees with is
    an error, before any commit could name it; so is a tree made for the other hash."""
    from cmem.steps.git_trees import _write

    root = _repo(tmp_path)
    body = b"100644 a.md\0" + bytes.fromhex(_blob(root, "x"))
    with pytest.raises(GitError, match="where cmem made " + "0" * 40):
        _write(_argv(root), dict(os.environ), [("0" * 40, body)])
    entries = [("100644", _blob(root, "x"), "a/b.md")]
    with pytest.raises(GitError, match="hash-object"):
        tree_with(_argv(root), dict(os.environ), None, entries, "sha256")


@pytest.mark.parametrize(
    "path", [".git/hooks/post-commit", "a/.GIT/x", "a/../b.md", "a//b.md", "./a"]
)
def test_a_path_gits_index_refuses_is_refused_and_nothing_is_stored(tmp_path, path):
    root = _repo(tmp_path)
    entries = [("100644", _blob(root, "x"), path)]
    # git's index leaves such a path out, and says so only on stderr: the commit would quietly
    # lack it; cmem stops instead
    assert _by_index(root, None, entries) == _run(
        root, "hash-object", "-t", "tree", "--stdin", data=b""
    )
    objects = sorted(p.name for p in (root / ".git" / "objects").rglob("*") if p.is_file())
    with pytest.raises(GitError, match="will not commit"):
        tree_with(_argv(root), dict(os.environ), None, entries, "sha1")
    assert sorted(p.name for p in (root / ".git" / "objects").rglob("*") if p.is_file()) == objects


def test_a_sha256_repositorys_first_commits_and_a_removal(tmp_path):
    """An unborn branch's first commit names the null id of the repository's length (40 zeros
    fail in a SHA-256 one), and so does a removal in the real index."""
    root = _repo(tmp_path, "sha256")
    (root / "a.md").write_bytes(b"a\n")
    (root / "b.md").write_bytes(b"b\n")
    first = history.commit_files(root, {"a.md": b"a\n", "b.md": b"b\n"}, "cmem: first")
    assert first and len(first) == 64
    (root / "b.md").unlink()
    history.commit_files(root, {"b.md": None}, "cmem: second")
    assert git(root, "ls-tree", "-r", "--name-only", "HEAD").split() == ["a.md"]
    assert git(root, "status", "--porcelain") == ""  # the removal is not left staged


def test_a_damaged_tree_is_an_error_naming_it(tmp_path):
    root = _repo(tmp_path)
    damaged = _run(root, "hash-object", "-t", "tree", "-w", "--literally", "--stdin", data=b"x")
    with pytest.raises(GitError, match=f"{damaged} is damaged"):
        tree_with(
            _argv(root), dict(os.environ), damaged, [("100644", _blob(root, "x"), "a")], "sha1"
        )


def test_a_parent_tree_the_repository_lacks_is_an_error_naming_it(tmp_path):
    root = _repo(tmp_path)
    missing = "1" * 40
    with pytest.raises(GitError, match=missing):
        tree_with(_argv(root), dict(os.environ), missing, [], "sha1")


def test_commit_files_leaves_no_temporary_file_in_the_git_folder(make_vault):
    root = make_vault({"a.md": "x\n", "converged/core/p.md": "# p\n"}, git=True)
    before = sorted(os.listdir(root / ".git"))
    (root / "converged/core/one.md").write_bytes(b"one\n")  # as a step writes, then commits
    (root / "b.md").write_bytes(b"b\n")
    (root / "converged/core/p.md").unlink()
    with history.one_repository():
        history.commit_files(root, {"converged/core/one.md": b"one\n"}, "cmem: one")
        history.commit_files(root, {"converged/core/p.md": None, "b.md": b"b\n"}, "cmem: two")
    assert sorted(os.listdir(root / ".git")) == before
    assert git(root, "status", "--porcelain", "--", "converged", "b.md") == ""
