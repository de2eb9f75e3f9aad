"""A commit's tree, made from its parent's tree and the paths that change, without an index.

cmem commits exactly the paths a step names (`commits.commit_files`). It used to build each commit
on a temporary index: `read-tree` of HEAD's whole tree, `update-index`, `write-tree`. Each of those
reads or writes an index entry for every file of the repository, for one changed file, twice
a pass. Here only the trees on the way from the root to a changed
path are read (one `cat-file --batch` process, asked one tree at a time) and only the trees that
change are written (one `hash-object -t tree` for all of them): the cost follows the depth
and width of those folders, not the size of the vault.

The result is the tree `write-tree` gives for the same changes, applied as `update-index
--index-info` applies them, in order: a path whose folder is a file in the parent replaces that
file, a file replaces a folder of the same name, and a folder left empty disappears. git hashes the
trees it stores; each id is checked against the one computed here, so a mismatch stops the commit
before any ref moves.
"""

from __future__ import annotations

import hashlib
import os
import subprocess

from cmem.errors import GitError

_TREE = b"40000"
_NOT_NAMES = (b"", b".", b"..")


class _Reader:
    """`git cat-file --batch`, asked for one object at a time by id."""

    def __init__(self, argv: list[str], env: dict):
        self.argv, self.env = argv, env
        self.process: subprocess.Popen[bytes] | None = None

    def tree(self, sha: str) -> dict:
        if self.process is None:
            self.process = subprocess.Popen(
                [*self.argv, "cat-file", "--batch"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=self.env,
            )
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None  # both are pipes
        stdin.write(sha.encode("ascii") + b"\n")
        stdin.flush()
        header = stdout.readline().split()
        if len(header) != 3 or header[1] != b"tree":
            raise GitError(f"git cat-file: {sha} is not a tree the repository holds")
        size = int(header[2])
        body = stdout.read(size + 1)[:size]  # and the newline after it
        if len(body) != size:
            raise GitError(f"git cat-file stopped while reading tree {sha}")
        try:
            return _parse(body, len(sha) // 2)
        except ValueError:
            raise GitError(f"git cat-file: tree {sha} is damaged") from None

    def close(self) -> None:
        if self.process is not None:
            for pipe in (self.process.stdin, self.process.stdout):
                if pipe is not None:
                    pipe.close()
            self.process.wait()


def _parse(body: bytes, id_bytes: int) -> dict:
    """name → (mode, id) for a leaf, or ("tree", id) for a folder not read yet."""
    entries, at = {}, 0
    while at < len(body):
        space = body.index(b" ", at)
        nul = body.index(b"\0", space)
        mode, name = body[at:space], body[space + 1 : nul]
        sha = body[nul + 1 : nul + 1 + id_bytes].hex()
        at = nul + 1 + id_bytes
        # git writes "40000"; an old tool's "040000" is the same folder (written back canonical)
        entries[name] = ("tree", sha) if int(mode, 8) == 0o40000 else (mode, sha)
    return entries


class _Folder:
    """A tree read (or made) to be changed: its entries, and the id it had when read."""

    __slots__ = ("entries", "was")

    def __init__(self, entries: dict, was: str | None = None):
        self.entries, self.was = entries, was


def tree_with(
    argv: list[str],
    env: dict,
    parent_tree: str | None,
    entries: list[tuple[str, str | None, str]],
    algorithm: str,
) -> str:
    """The id of `parent_tree` (None: the empty tree) with `entries` applied in order: (mode,
    blob id or None to remove, repository path). `argv` runs git in the repository; `algorithm`
    is its object format's hash ("sha1", "sha256"). Every new tree is stored before this
    returns."""
    reader = _Reader(argv, env)
    try:
        root = _Folder(reader.tree(parent_tree), parent_tree) if parent_tree else _Folder({})
        for mode, blob, path in entries:
            names = os.fsencode(path).split(b"/")
            if any(name in _NOT_NAMES or name.lower() == b".git" for name in names):
                # git's index refuses such a path (`verify_path`); a tree must not hold one
                raise GitError(
                    f"cmem will not commit {path!r}: a path with an empty, '.', '..' or '.git' "
                    "part cannot be in a git tree."
                )
            if blob is None:
                _remove(root, names, reader)
            else:
                _put(root, names, (mode.encode("ascii"), blob), reader)
    finally:
        reader.close()
    new: list[tuple[str, bytes]] = []
    tree = _store(root, algorithm, new, is_root=True)
    assert tree is not None  # the root is always a tree
    _write(argv, env, new)
    return tree


def _subtree(folder: _Folder, name: bytes, reader: _Reader) -> _Folder | None:
    found = folder.entries.get(name)
    if isinstance(found, _Folder):
        return found
    if isinstance(found, tuple) and found[0] == "tree":
        folder.entries[name] = loaded = _Folder(reader.tree(found[1]), found[1])
        return loaded
    return None


def _put(root: _Folder, names: list[bytes], leaf: tuple[bytes, str], reader: _Reader) -> None:
    folder = root
    for name in names[:-1]:
        found = _subtree(folder, name, reader)
        if found is None:  # a file of that name gives way, as in the index
            folder.entries[name] = found = _Folder({})
        folder = found
    folder.entries[names[-1]] = leaf  # a folder of that name gives way, as in the index


def _remove(root: _Folder, names: list[bytes], reader: _Reader) -> None:
    folder = root
    for name in names[:-1]:
        found = _subtree(folder, name, reader)
        if found is None:
            return  # not there: nothing to remove
        folder = found
    found = folder.entries.get(names[-1])
    if isinstance(found, tuple) and found[0] != "tree":
        del folder.entries[names[-1]]  # only a file: the index holds no entry for a folder


def _store(
    folder: _Folder, algorithm: str, new: list[tuple[str, bytes]], is_root: bool = False
) -> str | None:
    """The folder's tree id, with each tree that is not stored yet added to `new`; None for an
    empty folder (git keeps none), but the root is always a tree."""
    rows = []
    for name, value in folder.entries.items():
        if isinstance(value, _Folder):
            sha = _store(value, algorithm, new)
            if sha is not None:
                rows.append((name + b"/", _TREE, name, sha))
        elif value[0] == "tree":
            rows.append((name + b"/", _TREE, name, value[1]))
        else:
            rows.append((name, value[0], name, value[1]))
    if not rows and not is_root:
        return None
    rows.sort()  # git's order: a folder sorts as if its name ended in "/"
    body = b"".join(mode + b" " + name + b"\0" + bytes.fromhex(sha) for _, mode, name, sha in rows)
    sha = hashlib.new(algorithm, b"tree %d\0" % len(body) + body).hexdigest()
    if sha != folder.was:
        new.append((sha, body))
    return sha


def _write(argv: list[str], env: dict, trees: list[tuple[str, bytes]]) -> None:
    """Store the trees, checking each id git gives: one `hash-object -t tree -w` for all of
    them, from files in a temporary folder outside the vault (a pass's commit writes ~6: one
    process for all, not one each)."""
    if not trees:
        return
    import tempfile

    with tempfile.TemporaryDirectory(prefix="cmem-trees-") as folder:
        paths = []
        for number, (_, body) in enumerate(trees):
            path = os.path.join(folder, str(number))
            with open(path, "wb") as handle:
                handle.write(body)
            paths.append(path)
        result = subprocess.run(
            [*argv, "hash-object", "-t", "tree", "-w", "--no-filters", "--", *paths],
            capture_output=True,
            env=env,
        )
    if result.returncode != 0:
        detail = result.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"git hash-object: {detail[-1] if detail else result.returncode}")
    written = result.stdout.decode("ascii", "replace").split()
    for number, (sha, _) in enumerate(trees):
        stored = written[number] if number < len(written) else "(none)"
        if stored != sha:
            raise GitError(f"git stored tree {stored} where cmem made {sha}")
