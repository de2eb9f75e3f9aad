"""The conflict statements a sync left in the convergent layer, for `cmem status`, kept per file.

Finding them meant reading every memory file each time `status` computed afresh, which it does
after any edit (every memory file: a tenth of a status at 10k notes). A file's conflict lines
change only with its content, so each file's answer is kept in the machine folder
(`conflicts.marshal`) under its stat — (mtime, size, inode, ctime), as the listing took it — and
a file is read again only when that stat changed. The racy-git rule applies (`RACY_NS`): an
answer is kept only for a file whose mtime lies that far before the read, so a file changed twice
within its timestamp granularity is read every time until it settles. The file is a cache: a
missing, corrupt or foreign one is rebuilt, and one that cannot be written costs only speed.
"""

from __future__ import annotations

import os
import sys

from cmem.cache_store import Kept, code_stamp, kept_by_stat
from cmem.sync import memory_merge
from cmem.sync.memory_merge import (
    CONFLICT_WORD,
    ConflictStatement,
    conflict_versions,
    is_conflict_statement,
)

CACHE_NAME = "conflicts.marshal"


def find_conflicts(vault) -> list[ConflictStatement]:
    """Every conflict statement in the convergent layer, file by file in listing order."""
    # which lines are conflict statements is memory_merge's rule and this module's reading: an
    # edited cmem of the same version must not reuse what the old code found
    kept = Kept(
        os.path.join(vault.machine_dir, CACHE_NAME),
        "conflicts",
        os.fspath(vault.root),
        code_stamp(memory_merge, sys.modules[__name__]),
    )
    lines_by_file = kept_by_stat(kept, vault.convergent_files(), _lines_of)
    return [
        _statement(rel, number, line)
        for rel, lines in lines_by_file.items()
        for number, line in lines
    ]


def _lines_of(note) -> list[tuple[int, str]] | None:
    """The file's conflict lines (number, line); None when it cannot be read (it is left out)."""
    try:
        return _conflict_lines(note.path.read_text("utf-8", errors="replace"))
    except OSError:
        return None


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
