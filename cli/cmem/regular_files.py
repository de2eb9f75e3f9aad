"""A vault's files read so that no one file can stop a command: only a regular file is opened
(opening a FIFO named `x.md` blocks until something writes to it, a device may do anything), and
a file that cannot be read raises an `OSError` naming it, which the caller turns into a warning
and a file left alone, never into a stopped step."""

from __future__ import annotations

import errno
import os
import stat

_SPECIAL = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


def special_kind(mode: int) -> str | None:
    """ "a FIFO", "a socket", … for a file that is neither regular, a folder nor a link; else None."""
    return _SPECIAL.get(stat.S_IFMT(mode))


class NotRegularFile(OSError):
    """A FIFO, socket or device where a file was expected: refused before it is opened."""

    def __init__(self, path: str | os.PathLike[str], kind: str):
        super().__init__(errno.EINVAL, f"is {kind}, not a regular file", os.fspath(path))


def open_regular(path: str | os.PathLike[str]) -> int:
    """A descriptor of the regular file at `path`, open for reading. Its stat is checked before
    the open, and again on the descriptor (opened without blocking: a file swapped for a FIFO
    in between is refused, not waited on)."""
    kind = special_kind(os.stat(path).st_mode)
    if kind:
        raise NotRegularFile(path, kind)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    kind = special_kind(os.fstat(fd).st_mode)
    if kind:
        os.close(fd)
        raise NotRegularFile(path, kind)
    return fd


def read_regular(path: str | os.PathLike[str]) -> bytes:
    """The bytes of the regular file at `path` (`open_regular`'s refusals, or the read's error)."""
    fd = open_regular(path)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def reason_of(exc: OSError) -> str:
    """The words for a file whose read raised `exc`, after its name: "cannot be read (Permission
    denied)", "is a FIFO, not a regular file"."""
    if isinstance(exc, NotRegularFile):
        return str(exc.strerror)
    return f"cannot be read ({exc.strerror or exc})"


def unreadable_reason(path: str | os.PathLike[str]) -> str | None:
    """Why the file at `path` cannot be read ("cannot be read (Permission denied)", "is a FIFO,
    not a regular file"), or None: a file that can, a folder, a link (taken as a link) or no
    file at all."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISDIR(st.st_mode) or stat.S_ISLNK(st.st_mode):
        return None
    try:
        os.close(open_regular(path))
    except FileNotFoundError:
        return None
    except OSError as exc:
        return reason_of(exc)
    return None
