"""The archive's note paths, kept by folder stats in the machine folder (`archive-names.marshal`);
its odd names (`notes.find_odd_names`: conflict copies, placeholders, links, undecodable names)
the same way (`archive-odd-names.marshal`), by `kept_walk`.

The validator resolves a memory statement's sources against every note's name, and a source may
cite an archived note, so each pass needed the archive's names: at 10k notes a walk of ~7k
archived files, most of the validator's start. A note's name only changes with a folder's own
stat: adding, removing or renaming an entry moves its folder's mtime, and moving or replacing
the folder itself changes its inode or ctime. So each folder's answer (its subfolders, its notes)
is kept under its (mtime, inode, ctime); a folder whose stat still matches is not listed again,
one that changed (or was never seen) is listed as `Vault.walk_folder` lists it. A note can
therefore never be cited after it was moved or deleted: its folder changed.

Only folders whose mtime lies more than RACY_NS in the past are kept: a folder changed again
within its file system's timestamp granularity could keep the same mtime (git's "racy clean"
problem), so it is listed on every call until it has settled. (A recent ctime alone is no such
risk: the next change of an entry moves the mtime away from the old one kept.) The file is a cache (a missing,
corrupt or foreign one is rebuilt), a `cmem.cache_store.Kept`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from cmem.cache_store import Kept, settled

CACHE_NAME = "archive-names.marshal"
ODD_NAMES = "archive-odd-names.marshal"

# One folder listed: (its subfolders, its answers), vault-relative; None when it cannot be listed.
Listing = Callable[[str], "tuple[list[str], list] | None"]


def archived_rels(
    root: Path, base: str, machine_dir: Path, fingerprint: str, walk_folder: Listing
) -> list[str]:
    """The notes below the folder `base` (vault-relative), sorted: what `walk_folder` finds walking
    from it, each folder listed only when its stat changed since the last call. `fingerprint`:
    what an answer depends on besides the folder's stat (the settings and the code that decide
    which files are notes: `Vault.note_names` makes it). The vault's layers call this (it imports
    none of them), so the file tells nothing `Vault.walk_folder` would not."""
    return sorted(kept_walk(root, base, machine_dir / CACHE_NAME, fingerprint, walk_folder))


def kept_walk(root: Path, base: str, path: Path, fingerprint: str, walk_folder: Listing) -> list:
    """The answers `walk_folder` gives for `base` and the folders below it (walking on into the
    subfolders it names), in walk order, each folder's kept at `path` under its (mtime, inode,
    ctime) and `fingerprint`, and listed again only when that stat changed."""
    cache = Kept(path, "archive-names", os.fspath(root), fingerprint)
    known = cache.read()
    start = time.time_ns()
    kept: dict[str, tuple] = {}  # folder → (mtime, inode, ctime, subfolders, answers)
    answers: list = []
    stack = [base]
    while stack:
        folder = stack.pop()
        try:
            st = os.stat(os.path.join(root, folder))
        except OSError:
            continue  # gone (or never made): nothing listed, nothing kept
        stat = (st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
        entry = known.get(folder)
        if not (isinstance(entry, tuple) and len(entry) == 5 and entry[:3] == stat):
            listed = walk_folder(folder)
            if listed is None:
                continue
            entry = (*stat, tuple(listed[0]), tuple(listed[1]))
        if settled(st.st_mtime_ns, start):  # else a change in the same tick could hide
            kept[folder] = entry
        stack.extend(entry[3])
        answers.extend(entry[4])
    if kept != known and path.parent.is_dir():  # never make the machine folder for it
        cache.write(kept)
    return answers
