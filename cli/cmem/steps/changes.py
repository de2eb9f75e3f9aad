"""What a step changes, and applying it all or nothing (docs/design.md §3 step 6, §5 "Steps").

A step — a pass, an archive apply, an undo, a repair — is a set of file changes: each path with
the bytes it held when the step read it (None: absent) and the bytes it must hold after (None:
removed). A note moved into the archive is two changes: its new path created with its bytes, its
old path removed. Every target is compared with the bytes the step read, first all together and
again just before each replace or removal: a file that changed on disk (Obsidian's autosave, a
sync client, the user) stops the step, and the files already changed are put back.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from cmem import faults
from cmem.atomic import fsync_dir, write_atomic
from cmem.errors import CmemError
from cmem.regular_files import read_regular
from cmem.steps.lock import notes_lock
from cmem.vault.layers import DIVERGENT, Vault
from cmem.vault.notes import line_end


class SecondWriter(CmemError):
    """A file changed on disk while the step ran; the step wrote nothing."""

    def __init__(self, message: str, rel: str = "") -> None:
        super().__init__(message)
        self.rel = rel  # the file that changed


class ReadOnlyFile(CmemError):
    """A file the step would replace or remove was made read-only; the step wrote nothing."""


@dataclass(frozen=True)
class Change:
    rel: str  # vault-relative path
    old: bytes | None  # what the step read there (None: nothing)
    new: bytes | None  # what it must hold after (None: removed)


@dataclass
class ChangeSet:
    changes: dict[str, Change] = field(default_factory=dict)
    # git modes ("100755": executable) for paths that must not be plain files after the step: a
    # sync keeps the other machine's executable script executable, on disk and in the commit
    modes: dict[str, str] = field(default_factory=dict)

    def write(self, rel: str, new: str | bytes, old: bytes | None) -> None:
        data = new.encode("utf-8") if isinstance(new, str) else new
        if data == old:
            self.changes.pop(rel, None)  # nothing to change
            return
        self.changes[rel] = Change(rel, old, data)

    def remove(self, rel: str, old: bytes | None) -> None:
        if old is None:
            self.changes.pop(rel, None)
            return
        self.changes[rel] = Change(rel, old, None)

    def include(self, rel: str, current: bytes | None) -> None:
        """Commit `rel` as it is now (None: its removal), changing nothing on disk — a path an
        older cmem (or the user) already changed, that this step's commit must hold."""
        self.changes[rel] = Change(rel, current, current)

    def move(self, source: str, target: str, data: bytes) -> None:
        """A note moved: created at `target` (which must not exist), removed at `source`."""
        self.write(target, data, None)
        self.remove(source, data)

    @property
    def paths(self) -> list[str]:
        return sorted(self.changes)

    @property
    def written(self) -> dict[str, bytes | None]:
        """Path → the bytes the commit holds (None: removed)."""
        return {rel: change.new for rel, change in sorted(self.changes.items())}

    def __bool__(self) -> bool:
        return bool(self.changes)

    def __contains__(self, rel: str) -> bool:
        return rel in self.changes

    def ordered(self) -> list[Change]:
        """Writes before removals, so at every moment of a move the note exists somewhere."""
        items = sorted(self.changes.values(), key=lambda c: c.rel)
        return [c for c in items if c.new is not None] + [c for c in items if c.new is None]


def in_line_ends(data: str | bytes, like: bytes | None) -> bytes:
    """`data` with the line ends of `like` (the file as it is on disk now)."""
    data = data.encode("utf-8") if isinstance(data, str) else data
    if like is not None and line_end(like) == b"\r\n":
        data = data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    return data


def same_text(disk: bytes | None, committed: bytes | None) -> bool:
    """The working tree's bytes hold what git committed, line ends aside (autocrlf)."""
    if disk == committed:
        return True
    if disk is None or committed is None:
        return False
    return line_end(disk) == b"\r\n" and disk.replace(b"\r\n", b"\n") == committed.replace(
        b"\r\n", b"\n"
    )


def current_bytes(path: Path) -> bytes | None:
    """The file's bytes, None when there is none; a FIFO, socket or device is refused unopened
    (`regular_files.NotRegularFile`), never waited on."""
    try:
        return read_regular(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except IsADirectoryError:
        return (
            b"\0<a folder>"  # never equal to a file's bytes: a folder where a file was is a change
        )


def check_confined(vault: Vault, rel: str) -> None:
    """A step writes only inside the vault, inside the path's own layer, outside dot-folders and
    not through a symbolic link that leaves either (cmem.vault.layers.Vault.path_problem). `.cmem/`
    holds only cmem's own files, whose paths are fixed (the state and the backlog's record):
    written only while neither `.cmem/` nor the file is a link out of the vault. Checked for
    every path before the journal is written, and again just before each replace (`_check`)."""
    if rel.split("/", 1)[0] == vault.cmem_dir.name:
        _check_own_file(vault, rel)
    if rel in (vault.rel(vault.state_file), vault.rel(vault.cmem_dir / "backlog.json")):
        return
    problem = vault.path_problem(rel, vault.layer_of(rel))
    if problem:
        raise CmemError(f"{rel} {problem}; nothing was written.")


def check_tracked(vault: Vault, rel: str) -> None:
    """A sync writes what the other machine committed, so any path the repository may track —
    but still only inside the vault: never `..`, never into `.git/`, never through a symbolic
    link on the way."""
    parts = rel.split("/")
    if (
        not rel
        or rel.startswith("/")
        or any(part in ("", ".", "..") for part in parts)
        or parts[0] == ".git"
    ):
        raise CmemError(f"{rel} is not a plain path inside the vault; nothing was written.")
    current = vault.root
    for part in parts[:-1]:
        current = current / part
        if current.is_symlink():
            raise CmemError(
                f"{rel} goes through the symbolic link {vault.rel(current)}; nothing was written."
            )


def read_only_problem(vault: Vault, change: Change) -> str | None:
    """Why the step must not replace or remove this file, or None. A file made read-only (no
    write bit for its owner: `chmod 0444`), on a read-only file system, or that this user
    cannot write is the user's word that it stays as it is — a rename would replace it all the
    same (only its folder's write bit counts), and root passes every permission check."""
    if change.old is None or change.new == change.old:
        return None  # created, or committed as it is: nothing on disk is replaced
    path = vault.root / change.rel
    try:
        st = os.lstat(path)
    except OSError:
        return None  # gone: the second-writer check says so
    if not stat.S_ISREG(st.st_mode):
        return None
    if not st.st_mode & stat.S_IWUSR:
        return f"{change.rel} is read-only (mode {stat.S_IMODE(st.st_mode):04o})"
    if os.access(path, os.W_OK):
        return None
    try:
        read_only_fs = bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        read_only_fs = False
    return f"{change.rel} is {'on a read-only file system' if read_only_fs else 'not writable by this user'}"


def check_writable(vault: Vault, changes: ChangeSet) -> None:
    """Every file the step would replace or remove may be: checked for all of them before the
    journal is written, so a refused step writes nothing at all."""
    problems = [p for p in (read_only_problem(vault, c) for c in changes.ordered()) if p]
    if problems:
        raise ReadOnlyFile(_read_only_sentence(problems))


def _read_only_sentence(problems: list[str]) -> str:
    return (
        f"{'; '.join(problems)}: cmem never replaces or removes a file made read-only, so "
        "nothing was written; make it writable (`chmod u+w`) to let cmem change it."
    )


def _check_own_file(vault: Vault, rel: str) -> None:
    from cmem.steps.preflight import own_files_sentence

    problem = vault.own_files_problem((rel.split("/", 1)[1],) if "/" in rel else ())
    if problem:
        raise CmemError(own_files_sentence(problem, f"{rel} was not written, nor anything else"))


def _check(vault: Vault, change: Change) -> None:
    path = vault.root / change.rel
    if change.rel.split("/", 1)[0] == vault.cmem_dir.name:
        _check_own_file(vault, change.rel)  # `.cmem/` made a link while the step ran
    problem = read_only_problem(vault, change)
    if problem:  # made read-only while the step ran
        raise ReadOnlyFile(_read_only_sentence([problem]))
    if path.is_symlink():
        raise SecondWriter(
            f"{change.rel} became a symbolic link while the step ran; nothing was written.",
            change.rel,
        )
    if current_bytes(path) != change.old:
        raise SecondWriter(
            f"{change.rel} changed on disk while the step ran (another editor or a sync client wrote it); "
            "your edit wins: nothing was written, run the command again.",
            change.rel,
        )


@contextmanager
def notes_held(vault: Vault, rels: Iterable[str], purpose: str = "step") -> Iterator[None]:
    """The notes lock (steps/lock.py), held while a step writes, moves or restores a divergent
    note: a `cmem note` never appends between the step's check of a note and its change."""
    if any(vault.layer_of(rel) == DIVERGENT for rel in rels):
        with notes_lock(vault.machine_dir, purpose):
            yield
    else:
        yield


def apply_changes(vault: Vault, changes: ChangeSet) -> list[str]:
    """Make every change or none. Returns the paths changed."""
    with notes_held(vault, changes.paths):
        return _apply(vault, changes)


def _apply(vault: Vault, changes: ChangeSet) -> list[str]:
    order = changes.ordered()
    for change in order:
        _check(vault, change)
    done: list[Change] = []
    try:
        for change in order:
            # again, as late as it can be: for a write, once the new bytes are written and
            # synced, just before the rename (an editor's save during that write, milliseconds
            # on a loaded disk, was replaced unseen when the check came before it)
            if change.new != change.old:
                _put_checked(vault, change)
            else:
                _check(vault, change)
            if change.new is not None and change.rel in changes.modes:
                set_mode(vault, change.rel, changes.modes[change.rel])
            done.append(change)
            faults.point("replace")
    except BaseException:
        _roll_back(vault, done)
        raise
    return [change.rel for change in done]


def _put_checked(vault: Vault, change: Change) -> None:
    """`change` made, its target compared with what the step read just before; a file the step
    creates is created only where none is, so one made meanwhile is never replaced."""
    try:
        put(
            vault,
            change.rel,
            change.new,
            before_replace=lambda: _check(vault, change),
            exclusive=change.old is None,
        )
    except FileExistsError:
        raise SecondWriter(
            f"{change.rel} was created on disk while the step ran (another editor or a sync client "
            "wrote it); yours stays: nothing was written, run the command again.",
            change.rel,
        ) from None


def put(
    vault: Vault,
    rel: str,
    data: bytes | None,
    before_replace: Callable[[], object] | None = None,
    exclusive: bool = False,
) -> None:
    """Make `rel` hold `data` (atomically), or remove it (None). `before_replace` runs just
    before the file is replaced or removed (`write_atomic`); `exclusive` creates it only where
    no file is."""
    path = vault.root / rel
    if data is not None:
        write_atomic(path, data, before_replace=before_replace, exclusive=exclusive)
        return
    if before_replace is not None:
        before_replace()
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    fsync_dir(path.parent)


def set_mode(vault: Vault, rel: str, mode: str) -> None:
    """The file's executable bits as git's `mode` says ("100755" executable, else not), set the
    way git checks a file out: x wherever r is."""
    path = vault.root / rel
    current = os.stat(path).st_mode & 0o777
    wanted = current | ((current & 0o444) >> 2) if mode == "100755" else current & ~0o111
    if wanted != current:
        os.chmod(path, wanted)


def _roll_back(vault: Vault, done: list[Change]) -> None:
    # Restore what existed before removing what the step created: a moved note is never nowhere.
    undo = sorted(done, key=lambda c: c.old is None)
    for change in undo:
        if current_bytes(vault.root / change.rel) != change.new:
            continue  # someone wrote after us: theirs stays
        put(vault, change.rel, change.old)
