"""Stored results of read commands (`status`, `scan`, `context`'s material, `recall`'s proof that
its indexes are fresh, a plain `converge --emit-prompt`, an idle `sync`), keyed by everything they
depend on: the command prints a stored result while its key still matches (`valid_entry`), and
stores what it computed afresh through `begin` (before it reads the vault) and `store`.

The key is everything the result depends on, compared in full (not hashed, so there are no
collisions to reason about):

- the vault's listing: every folder's mtime (an added, removed or renamed file or folder changes
  it) and every note's (mtime, size, inode, ctime) — except under the archive folder, whose notes
  are checked by folder mtimes alone (an archived note edited in place keeps its old token size
  until `--rescan`: the figure says so, see `reading.status.STALE`);
- cmem's own files (`.cmem/`), the archive checklist, the user config, the unattended-failure
  record and the git files naming the commit (a pass commit, a checkout of an older state);
- the cmem version, the command's parameters, `CMEM_*` variables and today's date.

A stored key is checked by stats alone (`key_holds`): a folder whose mtime, inode and ctime are
unchanged holds the same entries, so no folder is listed again.

Racy-git rule: a result is stored only if every file and folder in its key is older than the
listing by more than the file system's timestamp granularity (`cache_store.settled`); otherwise
an edit in the same tick as the listing could leave the key unchanged, so the next call computes
afresh. A symbolic link anywhere in the walk makes a vault uncacheable (its target's changes are
outside the key). Anything time-dependent (ages, whether a pass is due) is stored as its inputs
and recomputed at print time. A running or interrupted step always computes afresh.
"""

from __future__ import annotations

import marshal
import os

from cmem.cache_store import Kept, settled, stat_key

_SCANDIR_FD = os.scandir in os.supports_fd  # listing a folder by its descriptor (POSIX)
_FOLDER_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_STAT_DIR_FD = os.stat in os.supports_dir_fd  # a name stat'ed relative to its folder (POSIX)
SKIPPED = ("node_modules",)  # besides dot-names: folders cmem never reads (config.NEVER_READ_DIRS)


# --- the key ------------------------------------------------------------------------------------


class KeyWalk:
    """The key of a vault's current state: `KeyWalk(...).result()` is (the key, whether it may be
    stored: no racy entry, no link).

    One walk: folders by mtime, notes by (mtime, size, inode, ctime), folders under `folder_only`
    (vault-relative, e.g. the archive) by folder mtimes alone; `files` stat'ed one by one. Such a
    folder's key also lists its subfolders, so when `known` (a stored key) has the folder with the
    same mtime and inode, its subfolders are taken from there instead of listing its notes again:
    a file or folder added, removed or renamed in it would have moved its mtime. The walk starts
    at `tops` (vault-relative folders; the root by default): `recall` depends on one layer only.
    Given a `listing` dict, every folder listed is kept there (its path → its `os.DirEntry`s), for
    the command to read instead of listing the folder again (`begin`).

    The notes' part is two flat values at the end of the key, not a tuple per note: every note's
    name in walk order joined by "/" (which no name holds), and their four stats as one bytes
    value (the flat list of integers, marshalled). At 50k notes a tuple a note cost more to build,
    store, load and compare than the stat calls themselves (docs/benchmarks.md); two flat values
    load and compare as memory. Each listed folder's entry says how many of the notes are its own,
    so a stored key is checked without listing a folder (`key_holds`). marshal rather than
    `array`: as fast here, any integer size, and built in (`array` loads collections)."""

    def __init__(
        self,
        root: str,
        files: list[str],
        folder_only: list[str],
        known: list | None = None,
        tops: list[str] | tuple[str, ...] = ("",),
        listing: dict | None = None,
    ):
        import time

        self.start = time.time_ns()
        self.root, self.folder_only, self.listing = root, folder_only, listing
        self.key: list = []
        self.newest = 0
        self.plain = True
        for path in files:
            try:
                st = os.stat(path)
            except OSError:
                self.key.append((path,))
                continue
            self.key.append((path, *stat_key(st)))
            self.newest = max(self.newest, st.st_mtime_ns)
        # a names-only folder's entry: (rel, mtime, inode, ctime, its subfolders)
        self.stored = {
            entry[0]: entry
            for entry in known or ()
            if isinstance(entry, tuple) and len(entry) == 5 and isinstance(entry[4], tuple)
        }
        self.names: list[str] = []  # every note stat'ed, in walk order
        self.stats: list[int] = []  # and its (mtime, size, inode, ctime), flat
        self._walk(list(reversed(tops)))

    def result(self) -> tuple[list, bool]:
        key = [*self.key, "/".join(self.names)]
        # version 2: no back-references, whose use depends on object identity (the same stats
        # must give the same bytes in the next process)
        key.append(marshal.dumps(self.stats, 2))
        newest = max(self.newest, max(self.stats[0::4])) if self.stats else self.newest
        return key, self.plain and settled(newest, self.start)

    def _walk(self, stack: list[str]) -> None:
        root, folder_only, listing = self.root, self.folder_only, self.listing
        key, stored, names, stats = self.key, self.stored, self.names, self.stats
        newest, plain = self.newest, self.plain
        while stack:
            rel = stack.pop()
            folder = os.path.join(root, rel) if rel else root
            try:
                st = os.stat(folder)
            except FileNotFoundError:  # a layer folder not made yet: its absence is in the key
                key.append((rel,))
                continue
            newest = max(newest, st.st_mtime_ns)
            names_only = any(rel == base or rel.startswith(base + "/") for base in folder_only)
            if names_only:
                before = stored.get(rel)
                if before is not None and before[1:4] == (
                    st.st_mtime_ns,
                    st.st_ino,
                    st.st_ctime_ns,
                ):
                    # the ctime too: an mtime set back by hand does not hide a change
                    key.append(before)
                    stack.extend(f"{rel}/{name}" if rel else name for name in before[4])
                    continue
            subfolders = []
            notes_before = len(names)
            # by the folder's descriptor, each note's stat resolves its name alone, not its path;
            # a `listing` keeps entries whose paths the command reads
            fd = os.open(folder, _FOLDER_FLAGS) if listing is None and _SCANDIR_FD else None
            try:
                with os.scandir(folder if fd is None else fd) as scanned:
                    entries = list(scanned)
                if listing is not None:
                    listing[folder] = entries
                for entry in entries:
                    name = entry.name
                    if name[0] == "." or name in SKIPPED:
                        continue
                    # the common case first: one call says "a regular file", no stat yet
                    if name.endswith(".md") and entry.is_file(follow_symlinks=False):
                        if not names_only:
                            note = entry.stat()
                            names.append(name)
                            stats += (note.st_mtime_ns, note.st_size, note.st_ino, note.st_ctime_ns)
                    elif entry.is_dir(follow_symlinks=False):
                        subfolders.append(name)
                    elif entry.is_symlink():
                        plain = False
            finally:
                if fd is not None:
                    os.close(fd)
            if names_only:
                key.append((rel, st.st_mtime_ns, st.st_ino, st.st_ctime_ns, tuple(subfolders)))
            else:
                count = len(names) - notes_before  # its notes: the next `count` of `names`
                key.append((rel, st.st_mtime_ns, st.st_ino, st.st_ctime_ns, None, count))
            stack.extend(f"{rel}/{name}" if rel else name for name in subfolders)
        self.newest, self.plain = newest, plain


def key_files(vault) -> list[str]:
    """The files besides the notes a read command's result depends on (see the module doc)."""
    from cmem.steps.git_head import git_files
    from cmem.steps.run_records import FAILED_PASS_FILE
    from cmem.triggers.due import FAILURES_FILE  # not if_due: subprocess, threading
    from cmem.vault.config import user_config_path

    files = []
    try:
        with os.scandir(vault.cmem_dir) as entries:
            files += sorted(entry.path for entry in entries if entry.is_file())
    except OSError:
        pass
    files += [
        str(vault.cmem_dir),
        str(vault.checklist_path),
        str(user_config_path()),
        str(vault.machine_dir / FAILURES_FILE),
        str(vault.machine_dir / FAILED_PASS_FILE),
    ]
    return files + git_files(str(vault.root))


def _context_key(command: str | None, params: tuple | None) -> tuple:
    import time

    # CMEM_* settings, and the variables that move the user config or the repository
    env = tuple(
        sorted(
            (k, v)
            for k, v in os.environ.items()
            if k.startswith("CMEM_")
            or k in ("HOME", "XDG_CONFIG_HOME", "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR")
        )
    )
    return (command, params, env, time.strftime("%Y-%m-%d"))


def still_valid(entry: dict, root: str) -> bool:
    """Whether a stored entry answers for the vault as it is now."""
    return context_matches(entry, root) and listing_matches(entry, root)


def context_matches(entry: dict, root: str) -> bool:
    """The cheap half of `still_valid`: the same cmem, command, parameters, settings, day and
    vault, and no step running or interrupted. No note is looked at."""
    if entry.get("context") != _context_key(entry.get("command"), entry.get("params")):
        return False
    # .get: an entry stored by an older cmem (keyed "state_dir") is simply a miss
    return bool(
        entry.get("root") == root and entry.get("machine_dir") and not _busy(entry["machine_dir"])
    )


def listing_matches(entry: dict, root: str) -> bool:
    """The other half: every file and folder of the key as it was stored."""
    if not _STAT_DIR_FD:  # no name can be stat'ed relative to its folder: walked again
        key, _ = KeyWalk(
            root,
            entry["files"],
            entry["folder_only"],
            entry["key"],
            entry.get("tops", ("",)),
        ).result()
        return key == entry["key"]
    try:
        return key_holds(root, entry["files"], entry["key"])
    except (KeyError, TypeError, ValueError, IndexError):
        return False  # an entry of another shape: the real command stores a new one


def key_holds(root: str, files: list[str], key: list) -> bool:
    """Whether a `KeyWalk` made now would give `key` (made by one, stored), without listing a
    folder: every file's stat, every folder's (mtime, inode, ctime) and every note's stat, each
    as the key holds it. A folder whose mtime and inode are unchanged holds the same entries (an
    entry added, removed or renamed in it moves its mtime; its ctime moves too, so an mtime set
    back by hand is still seen), so its notes are the names the key gives it and its subfolders
    are the folders after it; a note is stat'ed by its name, relative to its folder's descriptor.
    At 50k notes this is ~2/3 of the walk, whose listing of every folder cost the rest; a
    mismatch stops at once."""
    *entries, joined, stored_stats = key
    if len(entries) < len(files):
        return False
    for path, expected in zip(files, entries):
        try:
            found: tuple = (path, *stat_key(os.stat(path)))
        except OSError:
            found = (path,)
        if found != expected:
            return False
    names = joined.split("/") if joined else []
    stats: list[int] = []
    at = 0
    stat = os.stat
    for folder_entry in entries[len(files) :]:
        rel = folder_entry[0]
        folder = os.path.join(root, rel) if rel else root
        try:
            fd = os.open(folder, _FOLDER_FLAGS)
        except FileNotFoundError:
            if folder_entry != (rel,):
                return False
            continue
        except OSError:
            return False
        try:
            st = os.fstat(fd)
            if folder_entry[1:4] != (st.st_mtime_ns, st.st_ino, st.st_ctime_ns):
                return False
            if len(folder_entry) == 6:  # a listed folder: its notes, one stat each
                count = folder_entry[5]
                for name in names[at : at + count]:
                    note = stat(name, dir_fd=fd, follow_symlinks=False)
                    stats += (note.st_mtime_ns, note.st_size, note.st_ino, note.st_ctime_ns)
                at += count
        except OSError:  # a note gone, a folder unreadable
            return False
        finally:
            os.close(fd)
    return at == len(names) and marshal.dumps(stats, 2) == stored_stats


def _busy(machine_dir: str) -> bool:
    """A pass running (its lock held) or a step a killed process left (a journal): the command
    reports those afresh, and the vault is about to change anyway."""
    from pathlib import Path

    from cmem.steps.lock import is_locked

    try:
        if os.listdir(os.path.join(machine_dir, "journal")):
            return True
    except OSError:
        pass
    return is_locked(Path(machine_dir))


# --- where entries live -------------------------------------------------------------------------


def find_root(explicit: str | None) -> str | None:
    """The vault root as cmem.vault.layers.find_vault_root resolves it, or None (then the command
    opens the vault, which explains what is wrong)."""
    from cmem.vault.machine import vault_root_above

    chosen = explicit or os.environ.get("CMEM_VAULT")
    if chosen:
        root = os.path.expanduser(chosen)
        return os.path.realpath(root) if os.path.isdir(os.path.join(root, ".cmem")) else None
    return vault_root_above(os.getcwd())


def results_dir() -> str:
    """Per machine, next to every vault's machine folder: `$XDG_STATE_HOME/cmem/results`."""
    from cmem.private import state_root  # 0700, tightened once when an older cmem left it open

    return os.path.join(state_root(), "results")


def entry_path(root: str, command: str, params: tuple) -> str:
    """Where the entry for `command` with `params` in the vault at `root` is kept: named by two
    checksums of those, not a digest (`hashlib` loads OpenSSL on every stored answer); two that
    share a name only take turns, each entry naming what it answers (`load_entry`)."""
    from zlib import adler32, crc32

    name = repr((root, command, params)).encode("utf-8", "surrogateescape")
    return os.path.join(results_dir(), f"{crc32(name):08x}{adler32(name):08x}{ENTRY_SUFFIX}")


ENTRY_SUFFIX = ".marshal"
ENTRY_NAME_LENGTH = 16 + len(ENTRY_SUFFIX)  # as `entry_path` names them


def drop_older_names(folder: str) -> None:
    """Remove the entries an older cmem named otherwise (a sha256 prefix): none is read again,
    and a stored `context` material is megabytes. Temp files in flight are not entries."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if name.endswith(ENTRY_SUFFIX) and len(name) != ENTRY_NAME_LENGTH:
            try:
                os.unlink(os.path.join(folder, name))
            except OSError:
                pass


def valid_entry(root: str, command: str, params: tuple) -> dict | None:
    """The entry stored for `command` with `params` in the vault at `root`, if it still answers
    for the vault as it is now (`still_valid`); else None, and the real command runs."""
    found = valid_kept(root, command, params)
    return None if found is None else found[0]


def valid_kept(root: str, command: str, params: tuple) -> tuple[dict, Kept] | None:
    """`valid_entry`, with the file it was read from, whose parts (`store`'s) it reads on demand."""
    kept = Kept(entry_path(root, command, params), "stored-results")
    entry = _entry_for(kept.read(), root, command, params)
    return None if entry is None or not still_valid(entry, root) else (entry, kept)


def load_entry(root: str, command: str, params: tuple) -> dict | None:
    """The entry stored for `command` with `params` in the vault at `root`, valid or not."""
    return _entry_for(
        Kept(entry_path(root, command, params), "stored-results").read(), root, command, params
    )


def _entry_for(entry: dict, root: str, command: str, params: tuple) -> dict | None:
    """`entry` if it is the one asked for (another's may share its file name)."""
    if entry.get("root") != root or entry.get("command") != command:
        return None
    return entry if entry.get("params") == params else None


# --- storing, from the real command -------------------------------------------------------------


def begin(
    vault,
    command: str,
    params: tuple,
    extra_files: tuple[str, ...] = (),
    tops: tuple[str, ...] = ("",),
    folder_only: list[str] | None = None,
) -> dict | None:
    """Called by a read command before it reads the vault: the key as it is now (None: do not
    store). Taken first, so a note changed while the command runs leaves a key that no longer
    matches. `params`: the arguments the result depends on (what the command answers with it passes too);
    `extra_files`: more files the result depends on (`cmem sync`'s: git's index and config);
    `tops` and `folder_only` as `KeyWalk` takes them (default: the whole vault, the archive
    by folder mtimes)."""
    from cmem.vault.layers import OWN_FILES

    if vault.own_files_problem(OWN_FILES):
        return None  # a `.cmem/` linked out of the vault: the full command says so every time
    try:
        root = str(vault.root)
        files = key_files(vault) + list(extra_files)
        if folder_only is None:
            folder_only = [vault.config.archive_dir]
        # the folders listed here kept for a read-only command, not listed by it again: on a
        # miss, one walk of the vault serves the key and the command (Vault.remember_listings)
        listing: dict | None = {} if "_listings" in vault.__dict__ and tops == ("",) else None
        walk = KeyWalk(root, files, folder_only, tops=tops, listing=listing)
        key, storable = walk.result()
        if listing is not None:
            vault.__dict__["_scandirs"] = listing
            # and the key, whose folder entries each pair a folder's stat with its listing
            # (`reading/sizes.py` keeps the archive's size under the archive's part of it)
            vault.__dict__["_listing_key"] = (key, walk.start, tuple(folder_only))
    except Exception:
        return None
    if not storable:
        return None
    return {**_pending(command, params, root, vault, files, folder_only, tops), "key": key}


def _pending(command, params, root, vault, files, folder_only, tops) -> dict:
    return {
        "context": _context_key(command, params),
        "command": command,
        "params": params,
        "root": root,
        "machine_dir": str(vault.machine_dir),
        "files": files,
        "folder_only": folder_only,
        "tops": tops,
    }


def printed(text: str) -> dict:
    """A payload of what a command printed, for `commands/common.py: show_stored` to print again:
    as UTF-8 bytes, which load and print without being decoded and encoded once more; as text when
    it holds what UTF-8 cannot encode (a lone surrogate from a name that was not UTF-8), which
    the stream's error handler then prints as the command printed it."""
    try:
        return {"stdout": text.encode("utf-8")}
    except UnicodeEncodeError:
        return {"stdout": text}


def store(pending: dict | None, payload: dict, parts: list[bytes] | None = None) -> None:
    """Called by the read command with what it printed (or what to print from): kept for the next
    call whose key matches, with `parts` after it, each read alone (`valid_kept`, `Kept.part`).
    Never fails the command."""
    if pending is None or _busy(pending["machine_dir"]):
        return
    try:
        kept = Kept(
            entry_path(pending["root"], pending["command"], pending["params"]), "stored-results"
        )
        kept.write(dict(pending, payload=payload), parts=parts)
        drop_older_names(results_dir())  # on a miss, the slow call: a listing costs it nothing felt
    except Exception:
        pass
