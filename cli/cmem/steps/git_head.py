"""Which commit HEAD is at, read from git's own files without starting git (stdlib only, so the
light entry path `cmem.fast` and `status` can use it): a commit or a checkout rewrites one of
these files, so their stats key a stored result and their text names the commit."""

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
    files = git_files(root)
    if len(files) < 2:
        return None
    try:
        with open(files[0], encoding="utf-8", errors="replace") as handle:
            head = handle.read().strip()
    except OSError:
        return None
    if not head.startswith("ref:"):
        return head if len(head) >= 40 else None
    ref = head[4:].strip()
    for path in files[2:]:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                return handle.read().strip() or None
        except OSError:
            continue
    try:
        with open(files[1], encoding="utf-8", errors="replace") as handle:
            for line in handle:
                sha, _, name = line.strip().partition(" ")
                if name == ref:
                    return sha
    except OSError:
        pass
    return None
