#!/usr/bin/env python3
"""The floor of a one-note pass: the file-system and git work any pass that keeps docs/design.md §3
must do for one new note, with none of cmem's own logic (no cue rules, no engine, no validator).

    python bench/pass_floor.py [--import MODULE,MODULE…] VAULT STATE_FOLDER NOTE MEMORY_FILE

It does, in one process with the standard library's `os` and `subprocess` alone:

0. with `--import`, first import those modules (bench/run.py names the modules a pass loads: the
   floor then holds everything a pass pays but its own work);

1. lock the vault (`flock` on a file in STATE_FOLDER);
2. snapshot the user's edits: `git status` over the repository, then commit NOTE (untracked, as a
   new note is) the way cmem builds a commit without an index: `hash-object -w`, the root tree
   read (`cat-file --batch`) and stored (`hash-object -t tree -w`), `commit-tree`, `update-ref`,
   the real index told (`update-index --index-info`);
3. the scan's listing: a stat of every divergent note, NOTE read;
4. the convergent layer's freshness: a stat of every memory file (the caches are keyed by them);
5. the run record: the prompt quotes every resident file, so each is read and the prompt written
   durably (temporary file, fsync, rename);
6. the journal (the old and new bytes, fsynced), MEMORY_FILE, `.cmem/state.json` and the archive
   checklist each replaced atomically (temporary file, fsync, rename, the folder fsynced), the
   journal removed;
7. the pass's commit: the three blobs stored in one `hash-object -w --stdin-paths`, the trees on
   the way read and stored, `commit-tree`, `update-ref`, `update-index --index-info`.

What a pass writes is a placeholder line (the point is the cost of writing it), so run it on a copy
of the vault that is thrown away. bench/run.py times it against cmem's one-note pass on the same
vault state: the ratio is cmem's own logic (and its imports) over the work no design can skip.
"""

from __future__ import annotations

import fcntl
import importlib
import os
import subprocess
import sys

GIT = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"]


def git(root: str, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(
        [*GIT, "-C", root, *args], input=data, capture_output=True, check=True
    ).stdout


def durable_write(path: str, data: bytes) -> None:
    temporary = f"{path}.floor-tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(temporary, path)
    folder = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def stat_walk(top: str, recursive: bool) -> int:
    count, stack = 0, [top]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                if recursive and entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.name.endswith(".md"):
                    entry.stat(follow_symlinks=False)
                    count += 1
    return count


def read_all(top: str) -> list[bytes]:
    found, stack = [], [top]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.name.endswith(".md"):
                    with open(entry.path, "rb") as handle:
                        found.append(handle.read())
    return found


class Trees:
    """Read a tree through one `cat-file --batch`, store one through `hash-object -t tree`."""

    def __init__(self, root: str):
        self.root = root
        self.reader = subprocess.Popen(
            [*GIT, "-C", root, "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )

    def read(self, name: str) -> list[tuple[bytes, bytes, bytes]]:
        self.reader.stdin.write(name.encode() + b"\n")
        self.reader.stdin.flush()
        header = self.reader.stdout.readline().split()
        data = self.reader.stdout.read(int(header[2]))
        self.reader.stdout.read(1)
        entries, at = [], 0
        while at < len(data):
            space, nul = data.index(b" ", at), data.index(b"\0", at)
            entries.append((data[at:space], data[space + 1 : nul], data[nul + 1 : nul + 21]))
            at = nul + 21
        return entries

    def close(self) -> None:
        self.reader.stdin.close()
        self.reader.wait()


def tree_bytes(entries) -> bytes:
    def key(entry):
        return entry[1] + (b"/" if entry[0] == b"40000" else b"")

    return b"".join(
        mode + b" " + name + b"\0" + sha for mode, name, sha in sorted(entries, key=key)
    )


def commit(root: str, changes: dict[str, str], message: str) -> None:
    """Commit these repository paths (path -> blob id) on HEAD, building only the trees on the way."""
    head = git(root, "rev-parse", "HEAD").decode().strip()
    root_tree = git(root, "rev-parse", "HEAD^{tree}").decode().strip()
    trees = Trees(root)
    try:

        def rebuilt(tree: str, parts: dict[str, str]) -> str:
            entries = {name: (mode, name, sha) for mode, name, sha in trees.read(tree)}
            below: dict[bytes, dict[str, str]] = {}
            for path, blob in parts.items():
                first, _, rest = path.partition("/")
                if rest:
                    below.setdefault(first.encode(), {})[rest] = blob
                else:
                    entries[first.encode()] = (b"100644", first.encode(), bytes.fromhex(blob))
            for name, inner in below.items():
                old = entries.get(name)
                new = rebuilt(old[2].hex(), inner)
                entries[name] = (b"40000", name, bytes.fromhex(new))
            data = tree_bytes(entries.values())
            return (
                git(root, "hash-object", "-t", "tree", "-w", "--stdin", data=data).decode().strip()
            )

        tree = rebuilt(root_tree, changes)
    finally:
        trees.close()
    new = (
        git(root, "commit-tree", tree, "-p", head, "-F", "-", data=message.encode())
        .decode()
        .strip()
    )
    git(root, "update-ref", "-m", message, "HEAD", new, head)
    info = "".join(f"100644 {blob}\t{path}\0" for path, blob in changes.items())
    git(root, "update-index", "-z", "--index-info", data=info.encode())


def main(vault: str, state: str, note: str, memory: str) -> int:
    os.makedirs(state, exist_ok=True)
    lock = os.open(os.path.join(state, "floor.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    # 2. the snapshot of the user's edits
    git(vault, "status", "--porcelain=v1", "-z", "--untracked-files=all")
    with open(os.path.join(vault, note), "rb") as handle:  # read once: the snapshot, the scan
        note_bytes = handle.read()
    note_blob = git(vault, "hash-object", "-w", "--stdin", data=note_bytes)
    commit(vault, {note: note_blob.decode().strip()}, "floor: snapshot")
    # 3. and 4. the listings
    stat_walk(vault, recursive=False)
    stat_walk(os.path.join(vault, "converged"), recursive=True)
    # 5. the run record's prompt
    resident = read_all(os.path.join(vault, "converged", "core"))
    runs = os.path.join(state, "floor-run")
    os.makedirs(runs, exist_ok=True)
    durable_write(os.path.join(runs, "prompt.txt"), b"".join(resident) + note_bytes)
    # 6. the journal and the three files
    targets = [memory, ".cmem/state.json", "archive/ARCHIVE-CHECKLIST.md"]
    old = {}
    for rel in targets:
        try:
            with open(os.path.join(vault, rel), "rb") as handle:
                old[rel] = handle.read()
        except FileNotFoundError:
            old[rel] = b""
    new = {rel: old[rel] + b"- floor line\n" for rel in targets}
    journal = os.path.join(state, "floor-journal")
    durable_write(journal, b"".join(old.values()) + b"".join(new.values()))
    for rel in targets:
        durable_write(os.path.join(vault, rel), new[rel])
    os.unlink(journal)
    # 7. the pass's commit
    blobs = git(vault, "hash-object", "-w", "--stdin-paths", data="\n".join(targets).encode())
    commit(vault, dict(zip(targets, blobs.decode().split())), "floor: pass")
    os.close(lock)
    return 0


if __name__ == "__main__":
    arguments = sys.argv[1:]
    if arguments[:1] == ["--import"]:
        for module in arguments[1].split(","):
            importlib.import_module(module)
        arguments = arguments[2:]
    sys.exit(main(*arguments))
