"""`.cmem/backlog.json`: the notes an adopted folder held when `cmem init` adopted it
(docs/design.md §2).

Adopting a folder of years of notes must not make all of them pending at once (a token bomb for
the first unattended pass). `init` records each divergent note's digest here; while a note is
unchanged since, it is pending only through its cue lines, and the rest of it is the *backlog*:
`cmem status` reports its size, and `cmem converge --backlog` converges it when the user asks.
A note edited after adoption is simply a changed note. The file is committed: every machine that
syncs the vault agrees on what the backlog is.

It also records the divergent folders it covers. Widening them later (`03 - AREAS/**` added to
`divergent.extra_folders`, as `status` suggests) brings in notes that are as old as the adoption:
a note of a folder the record does not cover, no pass has seen and written before the config was
last edited is backlog too, not new — so the hooks do not start on 967 notes at once. The next
pass that commits records those notes and the folders (`widened_record`); a vault whose record
names no folders (made before this) is not compared.

    {"version": 1, "adopted": "2026-12-02T10:00:00+00:00",
     "folders": ["", "journal/**", "sessions"],
     "notes": {"2019-04-01 diary.md": "3f2a9c1b…", …}}     # sha256 prefix of the note's bytes
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass

from cmem.atomic import write_atomic

BACKLOG_FILE = "backlog.json"
BACKLOG_VERSION = 1
DIGEST_CHARS = 16


@dataclass(frozen=True)
class BacklogRecord:
    notes: dict[str, str]  # note path → the sha256 prefix it had when it became backlog
    folders: tuple[str, ...] | None  # the divergent inputs covered; None: not recorded
    adopted: str = ""
    config_mtime_ns: int = 0  # the config's last edit: notes written since are new

    def newly_read(self, rel: str, mtime_ns: int, sessions_folder: str) -> bool:
        """Whether a note no pass has seen lies in a folder read since the record was made, and
        predates the config edit that widened the folders (a session note is always new)."""
        if self.folders is None or rel in self.notes:
            return False
        folder = rel.rpartition("/")[0]
        if folder == sessions_folder or folder.startswith(sessions_folder + "/"):
            return False
        return not covers(self.folders, rel) and mtime_ns <= self.config_mtime_ns


def backlog_path(vault):
    return vault.cmem_dir / BACKLOG_FILE


def read_record(vault) -> BacklogRecord:
    """The record; a missing or broken file reads as no backlog and no folders: every note is
    then simply pending, which loses nothing."""
    try:
        data = json.loads(backlog_path(vault).read_bytes())
    except (OSError, ValueError):
        data = None
    data = data if isinstance(data, dict) else {}
    notes = data.get("notes")
    folders = data.get("folders")
    try:
        config_mtime = os.stat(vault.cmem_dir / "config.yaml").st_mtime_ns
    except OSError:
        config_mtime = 0
    return BacklogRecord(
        {str(rel): str(digest) for rel, digest in notes.items()} if isinstance(notes, dict) else {},
        tuple(str(f) for f in folders) if isinstance(folders, list) else None,
        str(data.get("adopted") or ""),
        config_mtime,
    )


def load_backlog(vault) -> dict[str, str]:
    """Note path → the sha256 prefix it had when adopted; {} when nothing was adopted."""
    return read_record(vault).notes


def in_backlog(backlog: dict[str, str], rel: str, sha256: str) -> bool:
    digest = backlog.get(rel)
    return digest is not None and sha256.startswith(digest)


def input_folders(config) -> tuple[str, ...]:
    """The divergent inputs as the record keeps them: "" (the vault root), `folder`, `folder/**`."""
    return ("",) + tuple(
        f"{folder}/**" if folder in config.recursive_divergent else folder
        for folder in config.extra_divergent
    )


def covers(folders: tuple[str, ...], rel: str) -> bool:
    folder = rel.rpartition("/")[0]
    for entry in folders:
        if entry.endswith("/**"):
            base = entry[:-3]
            if folder == base or folder.startswith(base + "/"):
                return True
        elif folder == entry:
            return True
    return False


def widened_record(vault, record: BacklogRecord, widened: dict[str, str]) -> str | None:
    """backlog.json's new text once the folders changed (with `widened`, path → sha256, the
    notes they brought in), or None when it stays as it is."""
    folders = input_folders(vault.config)
    if record.folders is None or (tuple(record.folders) == folders and not widened):
        return None
    notes = dict(record.notes)
    notes.update({rel: digest[:DIGEST_CHARS] for rel, digest in widened.items()})
    return backlog_text(notes, record.adopted, folders)


def backlog_text(digests: dict[str, str], adopted: str, folders: tuple[str, ...]) -> str:
    body = ",\n".join(
        f"  {json.dumps(rel, ensure_ascii=False)}: {json.dumps(digest)}"
        for rel, digest in sorted(digests.items())
    )
    return (
        "{\n"
        f' "version": {BACKLOG_VERSION},\n'
        f' "adopted": {json.dumps(adopted)},\n'
        f' "folders": {json.dumps(list(folders), ensure_ascii=False)},\n'
        ' "notes": {' + (f"\n{body}\n " if body else "") + "}\n"
        "}\n"
    )


def write_backlog(cmem_dir, notes: dict[str, bytes], adopted: str, folders: tuple[str, ...]) -> int:
    """Record `notes` (path → bytes) as the adopted backlog of `folders`; returns how many."""
    digests = {rel: hashlib.sha256(raw).hexdigest()[:DIGEST_CHARS] for rel, raw in notes.items()}
    write_atomic(cmem_dir / BACKLOG_FILE, backlog_text(digests, adopted, folders))
    return len(digests)
