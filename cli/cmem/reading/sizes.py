"""Note counts and token sizes of each layer, for `cmem status` and `cmem context`.

Token counts need the text, and the archive may hold tens of thousands of notes, so each note's
(mtime, tokens) is kept in the machine folder under its stat (`cache_file.kept_by_stat`: the
mtime, size, inode and ctime, and the racy rule): an unchanged vault is measured by a stat walk
alone. The cache is only a cache: missing or corrupt, it is rebuilt.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from cmem.cache_file import code_stamp, kept_by_stat
from cmem.text import tokens as token_estimate
from cmem.text.tokens import estimate_tokens
from cmem.vault.layers import LAYERS, NoteFile, Vault

CACHE_NAME = "layer-sizes.marshal"
FORMAT = 1  # bump when an entry's shape changes
BEFORE = "sizes-cache.json"  # the JSON cache cmem kept before this one: removed when seen


@dataclass(frozen=True)
class LayerSize:
    notes: int
    tokens: int
    newest: tuple[str, int] | None = None  # (path, mtime_ns) of the most recently changed note
    oldest: tuple[str, int] | None = None

    def to_json(self) -> dict:
        return {"notes": self.notes, "tokens": self.tokens}


def measure_layers(vault: Vault) -> dict[str, LayerSize]:
    """Every layer's size; one cache keeps the notes of all of them (a cache for some layers
    would drop the others' notes)."""
    listed = {layer: vault.list_layer(layer) for layer in LAYERS}
    max_bytes = vault.config.max_note_bytes
    machine = os.fspath(vault.machine_dir)
    measured = kept_by_stat(
        os.path.join(machine, CACHE_NAME),
        # over max_note_bytes a note counts 0 tokens; the estimate is cmem's own code
        (FORMAT, os.fspath(vault.root), max_bytes, code_stamp(token_estimate)),
        [note for notes in listed.values() for note in notes],
        lambda note: _measure(note, max_bytes),
        valid=lambda answer: isinstance(answer, tuple) and len(answer) == 2,
    )
    try:
        os.unlink(os.path.join(machine, BEFORE))
    except OSError:
        pass  # gone already (or never there)
    result = {}
    for layer, notes in listed.items():
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
        result[layer] = LayerSize(count, tokens, newest, oldest)
    return result


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
