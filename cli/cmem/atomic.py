"""Durable, atomic file replacement: temp file in the same folder, fsync, rename, fsync the folder.

A reader (Obsidian, an agent, a sync client) sees either the old bytes or the new ones, never a
half-written file, and after a power cut the rename is on disk.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from cmem import faults
from cmem.private import FILE_MODE, is_private, make_dirs

# `Callable` only names an annotation (never evaluated): read commands import this module, and
# importing collections.abc for it would cost each of them
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


TEMP_SUFFIX = ".cmem-tmp"
# A file name's longest on the file systems cmem meets (NAME_MAX: ext4, APFS, NTFS in UTF-16
# units, ZFS), and what `mkstemp` adds between the prefix and the suffix.
NAME_MAX = 255
_RANDOM = 8


def temp_prefix(name: str) -> str:
    """`.<name>.`, the target's name cut (at a character) so that the whole temp name fits in
    NAME_MAX bytes whatever the target's length: a legal 243-byte name (80 CJK characters) made
    a temp name too long for the folder, and its write failed."""
    room = NAME_MAX - len(TEMP_SUFFIX) - _RANDOM - 2  # the two dots
    if len(os.fsencode(name)) <= room:
        return f".{name}."
    kept, size = [], 0
    for character in name:  # whole characters: a cut one is no valid name on APFS
        size += len(os.fsencode(character))
        if size > room:
            break
        kept.append(character)
    return f".{''.join(kept)}."


def fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return  # some filesystems do not allow opening folders; the rename is still atomic
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomic(
    path: Path,
    data: bytes | str,
    *,
    mode: int | None = None,
    before_replace: Callable[[], object] | None = None,
    exclusive: bool = False,
) -> None:
    """Replace `path` with `data` atomically. Text is written as UTF-8 with `\\n` line ends.
    `before_replace` runs once the new bytes are on disk, just before the rename: a check that
    raises there leaves `path` as it is (the step layer compares the file with what it read, so
    an editor's save during the write and fsync, milliseconds, is not replaced). `exclusive`
    creates `path` only if nothing is there, raising FileExistsError otherwise: a file another
    writer created meanwhile is never replaced."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    path = Path(path)
    folder = path.parent
    if is_private(path):
        # the machine's state folder holds copies of note text: folders 0700, files 0600
        make_dirs(folder)
        mode = FILE_MODE if mode is None else mode & FILE_MODE
    else:
        folder.mkdir(parents=True, exist_ok=True)
    if mode is None:
        try:
            mode = os.stat(path).st_mode & 0o777
        except FileNotFoundError:
            mode = 0o644
    import tempfile  # here, not at the top: read commands import this module and never write

    try:
        fd, tmp_name = tempfile.mkstemp(
            prefix=temp_prefix(path.name), suffix=TEMP_SUFFIX, dir=folder
        )
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            faults.point("temp-write")
            os.fsync(handle.fileno())
        faults.point("fsync")
        os.chmod(tmp_name, mode)
        if before_replace is not None:
            before_replace()
        if exclusive:
            _link_new(tmp_name, path)
        else:
            os.replace(tmp_name, path)
        faults.point("rename")
    except BaseException as exc:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError) and exc.filename in (None, tmp_name):
            # a full disk fails the write or fsync of the temp file: name the file being replaced
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    fsync_dir(folder)


# What link() says on a file system that has no hard links (FAT, some network and FUSE mounts).
_NO_HARD_LINKS = {
    getattr(errno, name)
    for name in ("EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS", "EMLINK")
    if hasattr(errno, name)
}


def _link_new(tmp_name: str, path: Path) -> None:
    """The temp file given the name `path` only if no file has it (a hard link never replaces),
    then its temp name removed."""
    try:
        os.link(tmp_name, path)
    except OSError as exc:
        if exc.errno not in _NO_HARD_LINKS:
            raise
        # a file system without hard links: O_EXCL still never replaces, though a reader may
        # see the file before its bytes
        with open(tmp_name, "rb") as source, open(path, "xb") as target:
            target.write(source.read())
            target.flush()
            os.fsync(target.fileno())
    os.unlink(tmp_name)
