"""`.cmem/backlog.json`: the notes an adopted folder held when `cmem init` adopted it (SPEC §2).

Adopting a folder of years of notes must not make all of them pending at once (a token bomb for
the first unattended pass). `init` records each divergent note's digest here; while a note is
unchanged since, it is pending only through its cue lines, and the rest of it is the *backlog*:
`cmem status` reports its size, and `cmem converge --backlog` converges it when the user asks.
A note edited after adoption is simply a changed note. The file is committed: every machine that
syncs the vault agrees on what the backlog is.

    {"version": 1, "adopted": "2026-12-02T10:00:00+00:00",
     "notes": {"2019-04-01 diary.md": "3f2a9c1b…", …}}     # sha256 prefix of the note's bytes
"""

from __future__ import annotations

import hashlib
import json

from cmem.atomic import write_atomic

BACKLOG_FILE = "backlog.json"
BACKLOG_VERSION = 1
DIGEST_CHARS = 16


def backlog_path(vault):
    return vault.cmem_dir / BACKLOG_FILE


def load_backlog(vault) -> dict[str, str]:
    """Note path → the sha256 prefix it had when adopted; {} when nothing was adopted. A broken
    file is read as no backlog: every note is then simply pending, which loses nothing."""
    try:
        data = json.loads(backlog_path(vault).read_bytes())
    except (OSError, ValueError):
        return {}
    notes = data.get("notes") if isinstance(data, dict) else None
    if not isinstance(notes, dict):
        return {}
    return {str(rel): str(digest) for rel, digest in notes.items()}


def in_backlog(backlog: dict[str, str], rel: str, sha256: str) -> bool:
    digest = backlog.get(rel)
    return digest is not None and sha256.startswith(digest)


def write_backlog(cmem_dir, notes: dict[str, bytes], adopted: str) -> int:
    """Record `notes` (path → bytes) as the adopted backlog; returns how many."""
    digests = {
        rel: hashlib.sha256(raw).hexdigest()[:DIGEST_CHARS] for rel, raw in sorted(notes.items())
    }
    body = ",\n".join(
        f"  {json.dumps(rel, ensure_ascii=False)}: {json.dumps(digest)}"
        for rel, digest in digests.items()
    )
    text = (
        "{\n"
        f' "version": {BACKLOG_VERSION},\n'
        f' "adopted": {json.dumps(adopted)},\n'
        ' "notes": {' + (f"\n{body}\n " if body else "") + "}\n"
        "}\n"
    )
    write_atomic(cmem_dir / BACKLOG_FILE, text)
    return len(digests)
