"""Note counts and token sizes of each layer, for `cmem status`.

Token counts need the text, and the archive may hold tens of thousands of notes, so each note's
(mtime, tokens) is kept in the machine folder under its stat (`cache_store.kept_by_stat`: the
mtime, size, inode and ctime, and the racy rule): an unchanged vault is measured by a stat walk
alone. The archive's notes are kept in a file of their own, with the archive's size and the key
of its folders (their mtimes, as a stored status checks them: `stored_results.KeyWalk`).
While no archive folder changed, its size is that one, without a note stat'ed: adding, removing
or renaming a note moves its folder's mtime, and an archived note edited in place keeps its old
size until `--rescan` (`reading.status.STALE`; the status says so). The caches are only caches:
missing or corrupt, they are rebuilt.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from cmem.cache_store import Kept, code_stamp, kept_by_stat, settled
from cmem.text import tokens as token_estimate
from cmem.text.tokens import estimate_tokens
from cmem.vault.layers import ARCHIVE, LAYERS, NoteFile, Vault

CACHE_NAME = "layer-sizes.marshal"  # the notes of every layer but the archive
ARCHIVE_NOTES = "archive-sizes.marshal"  # the archive's notes
ARCHIVE_SIZE = "archive-size.marshal"  # the archive's size and the key of its folders
BEFORE = "sizes-cache.json"  # the JSON cache cmem kept before this one: removed when seen


@dataclass(frozen=True)
class LayerSize:
    notes: int
    tokens: int
    newest: tuple[str, int] | None = None  # (path, mtime_ns) of the most recently changed note
    oldest: tuple[str, int] | None = None

    def to_json(self) -> dict:
        return {"notes": self.notes, "tokens": self.tokens}


def measure_layers(vault: Vault, rescan: bool = False) -> dict[str, LayerSize]:
    """Every layer's size. The archive's comes from its last measurement while none of its
    folders changed, unless `rescan`."""
    max_bytes = vault.config.max_note_bytes
    machine = os.fspath(vault.machine_dir)
    # over max_note_bytes a note counts 0 tokens; the estimate is cmem's own code
    stamp = (os.fspath(vault.root), max_bytes, code_stamp(token_estimate))
    listed = {layer: vault.list_layer(layer) for layer in LAYERS if layer != ARCHIVE}
    # one cache keeps the notes of all these layers (a cache for some would drop the others')
    measured = kept_by_stat(
        Kept(os.path.join(machine, CACHE_NAME), "layer-sizes", *stamp),
        [note for notes in listed.values() for note in notes],
        lambda note: _measure(note, max_bytes),
        valid=_valid,
    )
    try:
        os.unlink(os.path.join(machine, BEFORE))
    except OSError:
        pass  # gone already (or never there)
    sizes = {layer: _size(notes, measured) for layer, notes in listed.items()}
    archive = None if rescan else _archive_unchanged(vault, machine, stamp)
    sizes[ARCHIVE] = archive if archive is not None else _measure_archive(vault, machine, stamp)
    return {layer: sizes[layer] for layer in LAYERS}


def _valid(answer) -> bool:
    return isinstance(answer, tuple) and len(answer) == 2


def _size(notes: list[NoteFile], measured: dict) -> LayerSize:
    count = tokens = 0
    newest = oldest = None
    for note in notes:
        found = measured.get(note.rel)
        if found is None:
            continue  # gone since the listing, or unreadable
        mtime, note_tokens = found
        count += 1
        tokens += note_tokens
        if newest is None or mtime > newest[1]:
            newest = (note.rel, mtime)
        if oldest is None or mtime < oldest[1]:
            oldest = (note.rel, mtime)
    return LayerSize(count, tokens, newest, oldest)


def _archive_key(vault: Vault, known: list | None = None) -> tuple[list, bool]:
    """The archive's folders as a stored status keys them: each folder's (mtime, inode, ctime,
    subfolders), a folder unchanged since `known` not listed again; and whether they may be kept
    (none changed within the racy window, no symbolic link). From the key this command took
    first when it has one (`stored_results.begin`): its entries pair each folder's stat with the
    listing this command reads, so the archive is not listed twice."""
    from cmem.reading.stored_results import KeyWalk

    archive_dir = vault.config.archive_dir
    taken = vault.__dict__.get("_listing_key")
    if taken is not None and taken[2] == (archive_dir,):
        key, started, _ = taken
        part = _archive_part(key, archive_dir)
        newest = max((entry[1] for entry in part if len(entry) == 5), default=0)
        return part, bool(part) and settled(newest, started)
    key, storable = KeyWalk(
        os.fspath(vault.root), [], [archive_dir], known=known, tops=(archive_dir,)
    ).result()
    return _archive_part(key, archive_dir), storable


def _archive_part(key: list, archive_dir: str) -> list:
    """The entries of a listing key for the archive folder and the folders below it."""
    below = archive_dir + "/"
    return [
        entry
        for entry in key
        if isinstance(entry, tuple)
        and entry
        and isinstance(entry[0], str)
        and (entry[0] == archive_dir or entry[0].startswith(below))
    ]


def _archive_size(vault: Vault, machine: str, stamp: tuple) -> Kept:
    return Kept(os.path.join(machine, ARCHIVE_SIZE), "layer-sizes", *stamp, _layout(vault))


def _archive_unchanged(vault: Vault, machine: str, stamp: tuple) -> LayerSize | None:
    """The archive's size as last measured, if none of its folders changed since; else None."""
    kept = _archive_size(vault, machine, stamp).read()
    key, size = kept.get("key"), kept.get("size")
    if not isinstance(key, list) or not isinstance(size, tuple) or len(size) != 4:
        return None
    try:
        now, _ = _archive_key(vault, key)
    except OSError:
        return None
    return LayerSize(*size) if now == key else None


def _measure_archive(vault: Vault, machine: str, stamp: tuple) -> LayerSize:
    """The archive measured note by note (each note's answer kept under its stat), and its size
    kept with the key of its folders, taken first: a change during the walk leaves a key that no
    longer matches. A key that may not be kept (a folder changed within the racy window, a
    symbolic link) keeps none: the next status measures again."""
    try:
        key, storable = _archive_key(vault)
    except OSError:
        key, storable = None, False
    notes = vault.list_layer(ARCHIVE)
    max_bytes = vault.config.max_note_bytes
    measured = kept_by_stat(
        Kept(os.path.join(machine, ARCHIVE_NOTES), "layer-sizes", *stamp),
        notes,
        lambda note: _measure(note, max_bytes),
        valid=_valid,
    )
    size = _size(notes, measured)
    _archive_size(vault, machine, stamp).write(
        {
            "key": key if storable else None,
            "size": (size.notes, size.tokens, size.newest, size.oldest),
        }
    )
    return size


def _layout(vault: Vault) -> str:
    """Every setting that decides which files the archive layer holds (its folder, the checklist,
    the other layers' folders, the ignore globs): another layout is another archive."""
    config = vault.config
    return repr(
        (
            config.archive_dir,
            vault.checklist_rel,
            config.resident_dir,
            config.situational_dir,
            config.extra_divergent,
            config.recursive_divergent,
            config.ignore,
        )
    )


def _measure(note: NoteFile, max_bytes: int) -> tuple[int, int] | None:
    """(mtime, estimated tokens) of one note; None when it cannot be read."""
    try:
        st = note.lstat()  # the listing's stat, as kept_by_stat keys it
        if st.st_size > max_bytes:
            return (st.st_mtime_ns, 0)
        with open(note.location, "rb") as handle:
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    return (st.st_mtime_ns, estimate_tokens(text))
