"""Which commit HEAD and a branch are at, and a remote's URL, read from git's own files without
starting git. The one place cmem reads `.git` by hand (every other question goes to the `git`
command: docs/design.md §1): a commit or a checkout rewrites one of these files, so their stats
key a stored result (`reading/stored_results.py`) and their text names the commit, where a git
process would cost more than the answer (`status`, the idle sync, SessionStart)."""

from __future__ import annotations

import os


def git_location(start: str) -> tuple[str, str, str] | None:
    """(the work tree's top folder, its git folder, the common git folder) of the repository
    holding the folder `start`, from the `.git` found nearest above it: a folder, or a file naming
    one (`gitdir: …`, a linked worktree's or a submodule's; a worktree's `commondir` names the
    folder its config and refs share). None outside any repository; ("top", "", "") when a
    `.git` file names no folder."""
    folder = start
    while True:
        dot = os.path.join(folder, ".git")
        if os.path.isdir(dot):
            return folder, dot, dot
        if os.path.isfile(dot):
            try:
                with open(dot, encoding="utf-8", errors="replace") as handle:
                    line = handle.read().strip()
            except OSError:
                return folder, "", ""
            if not line.startswith("gitdir:"):
                return folder, "", ""
            git_dir = os.path.join(folder, line[len("gitdir:") :].strip())
            common = git_dir
            try:
                with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as handle:
                    common = os.path.join(git_dir, handle.read().strip())
            except OSError:
                pass
            return folder, git_dir, common
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def git_files(root: str) -> list[str]:
    """The files naming the commit HEAD is at: HEAD, the branch's ref, packed-refs (a commit or a
    checkout rewrites one of them)."""
    found = git_location(root)
    if found is None:
        return []
    folder, git_dir, common = found
    if not git_dir:
        return [os.path.join(folder, ".git")]
    files = [os.path.join(git_dir, "HEAD"), os.path.join(common, "packed-refs")]
    try:
        with open(files[0], encoding="utf-8", errors="replace") as handle:
            head = handle.read().strip()
    except OSError:
        return files
    if head.startswith("ref:"):
        ref = head[4:].strip()
        files += [os.path.join(common, ref), os.path.join(git_dir, ref)]
    return files


def head_sha(root: str) -> str | None:
    """The commit HEAD is at, read from the git files (no git process), or None when it cannot
    be told that way (then ask git)."""
    found = git_location(root)
    if found is None or not found[1]:
        return None
    _, git_dir, common = found
    head = _read(os.path.join(git_dir, "HEAD"))
    if head is None:
        return None
    if not head.startswith("ref:"):
        return head if len(head) >= 40 else None
    return read_ref(common, head[4:].strip(), git_dir)


def branch_of_head(git_dir: str) -> str | None:
    """The ref HEAD names (`refs/heads/main`), or None: detached, or unreadable."""
    head = _read(os.path.join(git_dir, "HEAD"))
    return head[4:].strip() if head is not None and head.startswith("ref:") else None


def read_ref(common: str, ref: str, git_dir: str | None = None) -> str | None:
    """A ref's commit as git reads it: the loose file (in `git_dir`, a linked worktree's own
    folder, then in the common folder), else its line in packed-refs; None when it is neither a
    commit id nor found (a symbolic ref, a ref git keeps elsewhere)."""
    value = None
    for folder in (git_dir, common) if git_dir and git_dir != common else (common,):
        value = _read(os.path.join(folder, ref))
        if value is not None:
            break
    if value is None:
        for line in (_read(os.path.join(common, "packed-refs")) or "").splitlines():
            sha, _, name = line.partition(" ")
            if name == ref:
                value = sha
                break
    if value is None or len(value) not in (40, 64) or value.strip("0123456789abcdef"):
        return None
    return value


def remote_url(config_path: str) -> str | None:
    """The URL of the `origin` remote in a git config file (of its only remote when it has no
    `origin`), or None: SessionStart names the project by it without starting git."""
    lines = (_read(config_path) or "").splitlines()
    urls: dict[str, str] = {}
    remote = None
    for line in lines:
        text = line.strip()
        if text.startswith("["):
            header = text.strip("[]").strip()
            kind, _, name = header.partition(" ")
            remote = name.strip().strip('"') if kind.lower() == "remote" else None
            continue
        key, equals, value = text.partition("=")
        if remote is not None and equals and key.strip().lower() == "url":
            urls.setdefault(remote, value.strip().strip('"'))
    return urls.get("origin") or (next(iter(urls.values())) if len(urls) == 1 else None)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return None
