"""The recurring lines of archived notes (docs/design.md §2: "the same key phrase recurs in another
note (archived notes count)"): "skipped the gym again" is no one-off when the archive holds it
twice.

A note a pass converged carries its key phrases in `state.json` after it is archived, so only
the archived notes no pass accounted for (an adopted vault's archive, notes moved there by hand)
are read for theirs — once: each note's answer is kept under its stat in the machine folder
(`archive-recurrence.marshal`, `cache_store.kept_by_stat`), so a pass reads only the archived
notes added or edited since, and the scan asks at all only when a recurring line would
otherwise wait as a one-off.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime

from cmem.scan.signals import scan_note
from cmem.vault.layers import ARCHIVE, NoteFile, Vault
from cmem.vault.notes import note_date, read_note

CACHE_NAME = "archive-recurrence.marshal"


@dataclass(frozen=True)
class ArchivedRecurrence:
    """An archived note holding a recurring line: its path, its day and the key phrases."""

    rel: str
    day: str  # YYYY-MM-DD: the date in its name, else its mtime's
    keys: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.rel.rsplit("/", 1)[-1].removesuffix(".md")


def archived_recurrences(vault: Vault, known: Iterable[str] = ()) -> list[ArchivedRecurrence]:
    """Every archived note holding a recurring line, with that line's key phrases; the notes
    whose file names are `known` (state.json counts them by the keys it kept) are not read."""
    import sys

    from cmem.cache_store import Kept, code_stamp, kept_by_stat
    from cmem.scan import scan_cache

    config = vault.config
    skip = set(known)
    files = [
        NoteFile(rel, vault.root / rel, ARCHIVE)
        for paths in vault.note_names().values()
        for rel in paths
        if vault.layer_of(rel) == ARCHIVE and rel.rsplit("/", 1)[-1] not in skip
    ]

    def keys_of(file: NoteFile) -> tuple[str, tuple[str, ...]]:
        note = read_note(file, config.max_note_bytes)
        if not note.usable:
            return "", ()
        hits = scan_note(note, config.extra_cues, config.formats).hits
        keys = sorted({key for hit in hits if hit.cls == "recurring" for key in hit.keys})
        return _day(file.name, note.mtime_ns), tuple(keys)

    # what decides a note's keys besides its bytes: the cues, the settings, this code
    version = code_stamp(sys.modules[__name__], sys.modules[scan_note.__module__])
    cache = Kept(
        vault.machine_dir / CACHE_NAME,
        "archive-recurrence",
        str(vault.root),
        repr(version),
        scan_cache.scan_fingerprint(vault),
    )
    found = kept_by_stat(cache, sorted(files, key=lambda f: f.rel), keys_of)
    return [ArchivedRecurrence(rel, day, tuple(keys)) for rel, (day, keys) in found.items() if keys]


def _day(name: str, mtime_ns: int) -> str:
    fallback = datetime.fromtimestamp(mtime_ns / 1e9).date() if mtime_ns else date(1970, 1, 1)
    return note_date(name, fallback).isoformat()
