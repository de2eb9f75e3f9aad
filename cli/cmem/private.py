"""The machine's state folder, kept private (issue 35): `$XDG_STATE_HOME/cmem/` and everything
under it — caches, run records, stored results, journals, locks, logs, backups — holds copies of
note and memory text, so every folder in it is 0700 and every file 0600.

Every writer makes its folders with `make_dirs` and its files 0600 (`atomic.write_atomic` and
`cache_store.write_cache` do both for what they write there; a lock, a log or an index opened by
hand sets its mode itself). A state folder an older cmem left readable by others (0755 folders,
0644 files) is tightened whole the first time a process of this cmem uses it — `state_root`,
which every path into the folder is built from, checks the folder's own mode once a process: a
folder this cmem made is 0700, so a looser one is an older cmem's, and everything under it is
set right before anything else reads or writes there.

`os` alone: the stored answers and the agent hooks build their paths with it.
"""

from __future__ import annotations

import os

FOLDER_MODE = 0o700
FILE_MODE = 0o600
_OPEN = 0o077  # what a folder or file of the state folder must not grant

_checked: str | None = None  # the state root this process checked (it follows $XDG_STATE_HOME)


def state_base() -> str:
    """`$XDG_STATE_HOME`, else `~/.local/state` (the XDG base directory specification)."""
    return os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )


def state_root() -> str:
    """`$XDG_STATE_HOME/cmem`: made 0700 when missing, and tightened whole, once a process,
    when an older cmem left it open."""
    global _checked
    root = os.path.join(state_base(), "cmem")
    if _checked == root:
        return root
    try:
        st = os.stat(root)
    except FileNotFoundError:
        try:
            _make_chain(root)
        except OSError:
            return root  # a read-only home: every writer meets the error itself
    except OSError:
        return root  # cannot even be looked at: every writer meets the error itself
    else:
        if st.st_mode & _OPEN:
            tighten(root)
    _checked = root
    return root


def tighten(top: str) -> int:
    """Every folder under `top` (and `top`) 0700 and every file 0600; links are not followed
    and are left as they are. Returns how many entries were changed."""
    changed = 0
    for folder, dirs, files in os.walk(top):
        for name in dirs:
            changed += _chmod(os.path.join(folder, name), FOLDER_MODE)
        for name in files:
            changed += _chmod(os.path.join(folder, name), FILE_MODE)
    return changed + _chmod(top, FOLDER_MODE)


def _chmod(path: str, mode: int) -> int:
    try:
        st = os.lstat(path)
        if (st.st_mode & 0o170000) == 0o120000:  # a symbolic link: its target is not ours
            return 0
        if st.st_mode & 0o777 == mode:
            return 0
        os.chmod(path, mode)
        return 1
    except OSError:
        return 0  # gone meanwhile, or not ours: nothing cmem can do about it here


def is_private(path: str | os.PathLike) -> bool:
    """Whether `path` lies in the state folder (by its absolute path; no link is resolved)."""
    root = os.path.join(state_base(), "cmem")
    location = os.path.abspath(os.fspath(path))
    return location == root or location.startswith(root + os.sep)


def make_dirs(folder: str | os.PathLike) -> None:
    """`os.makedirs(folder, exist_ok=True)`, each folder it makes 0700 (the state folder's, and
    the missing ones above it: the XDG specification asks 0700 of those too); an existing one
    in the state folder that grants others anything is tightened."""
    folder = os.fspath(folder)
    if is_private(folder):
        state_root()  # an older cmem's open folder is tightened before it is written in
    if not _make_chain(folder) and is_private(folder):
        _chmod(folder, FOLDER_MODE)


def _make_chain(folder: str) -> int:
    """Make `folder` and the missing folders above it, each 0700; how many were made."""
    missing = []
    current = os.path.abspath(folder)
    while not os.path.isdir(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for path in reversed(missing):
        _make(path)
    return len(missing)


def _make(path: str) -> None:
    try:
        os.mkdir(path, FOLDER_MODE)
    except FileExistsError:
        if not os.path.isdir(path):
            raise
        return
    _chmod(path, FOLDER_MODE)  # the umask may have cut the mode; nothing else may widen it


def open_private(path: str | os.PathLike, flags: int) -> int:
    """`os.open(path, flags | O_CREAT, 0o600)`, and the file set to 0600 when an older cmem made
    it wider (a lock or a log kept across versions)."""
    fd = os.open(path, flags | os.O_CREAT, FILE_MODE)
    try:
        if os.fstat(fd).st_mode & _OPEN:
            os.fchmod(fd, FILE_MODE)
    except OSError:
        pass
    return fd
