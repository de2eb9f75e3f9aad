"""Note counts and token sizes of each layer, for `cmem status` and `cmem context`.

Token counts need the text, and the archive may hold tens of thousands of notes, so sizes are
cached in the machine folder keyed by the path and its stat (mtime, size, inode, ctime, as every
stat-keyed cache of cmem): an unchanged vault is measured by a stat walk alone. A file changed
within `RACY_NS` of its measure is measured again next time (git's racy rule). The cache is only a
cache: missing or corrupt, it is rebuilt.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass

from cmem.atomic import write_atomic
from cmem.cache_file import RACY_NS
from cmem.text.tokens import estimate_tokens
from cmem.vault.layers import LAYERS, NoteFile, Vault

CACHE_NAME = "sizes-cache.json"
CACHE_VERSION = 2  # 2: [mtime, size, tokens, inode, ctime]


@dataclass(frozen=True)
class LayerSize:
    notes: int
    tokens: int
    newest: tuple[str, int] | None = None  # (path, mtime_ns) of the most recently changed note
    oldest: tuple[str, int] | None = None

    def to_json(self) -> dict:
        return {"notes": self.notes, "tokens": self.tokens}


def measure_layers(vault: Vault, layers: tuple[str, ...] = LAYERS) -> dict[str, LayerSize]:
    path = vault.machine_dir / CACHE_NAME
    cache = _load(path)
    fresh: dict[str, list] = {}
    result = {}
    racy_after = time.time_ns() - RACY_NS
    for layer in layers:
        notes = tokens = 0
        newest = oldest = None
        for note in vault.list_layer(layer):
            measured = _measure(note, cache, vault.config.max_note_bytes)
            if measured is None:
                continue
            if measured[0] < racy_after:  # else not kept: measured again next time
                fresh[note.rel] = measured
            notes += 1
            tokens += measured[2]
            if newest is None or measured[0] > newest[1]:
                newest = (note.rel, measured[0])
            if oldest is None or measured[0] < oldest[1]:
                oldest = (note.rel, measured[0])
        result[layer] = LayerSize(notes, tokens, newest, oldest)
    # keep entries of layers not measured this time
    for rel, entry in cache.items():
        if rel not in fresh and vault.layer_of(rel) not in layers:
            fresh[rel] = entry
    if fresh != cache:
        try:
            write_atomic(
                path, json.dumps({"version": CACHE_VERSION, "files": fresh}, ensure_ascii=False)
            )
        except OSError:
            pass  # a read-only machine folder only costs speed
    return result


def _load(path) -> dict:
    try:
        data = json.loads(path.read_text("utf-8"))
        if data.get("version") == CACHE_VERSION and isinstance(data.get("files"), dict):
            return data["files"]
    except (OSError, ValueError, AttributeError):
        pass
    return {}


def _measure(note: NoteFile, cache: dict, max_bytes: int) -> list | None:
    try:
        st = os.stat(note.location, follow_symlinks=False)
    except OSError:
        return None
    entry = cache.get(note.rel)
    stat = [st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns]
    if isinstance(entry, list) and len(entry) == 5 and entry[:2] + entry[3:] == stat:
        return entry
    if st.st_size > max_bytes:
        return [st.st_mtime_ns, st.st_size, 0, st.st_ino, st.st_ctime_ns]
    try:
        with open(note.location, "rb") as handle:
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size, estimate_tokens(text), st.st_ino, st.st_ctime_ns]
