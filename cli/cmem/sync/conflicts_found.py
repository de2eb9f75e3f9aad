"""The conflict statements a sync left in the convergent layer, for `cmem status`, kept per file.

Finding them meant reading every memory file each time `status` computed afresh, which it does
after any edit (2,049 files at 10k notes, ~70 ms of a ~730 ms status). A file's conflict lines
change only with its content, so each file's answer is kept in the machine folder
(`conflicts.marshal`) under its stat — (mtime, size, inode, ctime), as the listing took it — and
a file is read again only when that stat changed. The racy-git rule applies (`RACY_NS`): an
answer is kept only for a file whose mtime lies that far before the read, so a file changed twice
within its timestamp granularity is read every time until it settles. The file is a cache: a
missing, corrupt or foreign one is rebuilt, and one that cannot be written costs only speed.
"""

from __future__ import annotations

import os
import time

from cmem import __version__
from cmem.cache_file import RACY_NS, read_stamped, write_stamped
from cmem.sync.memory_merge import (
    CONFLICT_WORD,
    ConflictStatement,
    conflict_versions,
    is_conflict_statement,
)

CACHE_NAME = "conflicts.marshal"
FORMAT = 1  # bump when an entry's shape changes


def find_conflicts(vault) -> list[ConflictStatement]:
    """Every conflict statement in the convergent layer, file by file in listing order."""
    path = os.path.join(vault.machine_dir, CACHE_NAME)
    stamp = f"{__version__} {FORMAT} {os.fspath(vault.root)}"
    known = read_stamped(path, stamp)
    kept: dict[str, tuple] = {}  # rel -> (stat, [(line number, line)])
    found = []
    for note in vault.convergent_files():
        try:
            st = note.lstat()  # the listing's stat when it took one
        except OSError:
            continue
        stat = (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)
        before = known.get(note.rel)
        if isinstance(before, tuple) and len(before) == 2 and before[0] == stat:
            lines = before[1]
        else:
            read_at = time.time_ns()
            try:
                text = note.path.read_text("utf-8", errors="replace")
            except OSError:
                continue
            lines = _conflict_lines(text)
            if st.st_mtime_ns + RACY_NS >= read_at:
                # changed too recently to trust its stat: not kept, read again next time
                found += [_statement(note.rel, n, line) for n, line in lines]
                continue
        kept[note.rel] = (stat, lines)
        found += [_statement(note.rel, n, line) for n, line in lines]
    if kept != known:
        write_stamped(path, stamp, kept)
    return found


def _conflict_lines(text: str) -> list[tuple[int, str]]:
    if CONFLICT_WORD not in text:
        return []  # most files: one substring test
    return [
        (number, line)
        for number, line in enumerate(text.splitlines(), start=1)
        if is_conflict_statement(line)
    ]


def _statement(rel: str, number: int, line: str) -> ConflictStatement:
    return ConflictStatement(rel, number, line, tuple(conflict_versions(line)))
