"""Which warnings about files this machine has shown (issue 44: the same 16 warnings on every
command and in every `cmem log` entry). A warning about a file — Templater code in its
frontmatter, an empty note, a conflict copy — is shown once, when it appears: by the first
`status` printed or pass run after it; `cmem doctor` and `cmem scan` list every one, always. A
warning that goes away (the file fixed) and comes back is shown again.

A record per machine, in the machine folder: one line per warning shown, `path\\tkind\\tmessage`.
Lost, each warning is shown once more, nothing else."""

from __future__ import annotations

import os

from cmem.cache_store import write_cache

RECORD_NAME = "warned"


def _key(rel: str, kind: str, message: str) -> str:
    return "\t".join(" ".join(str(part).split()) for part in (rel, kind, message))


def _keys(odd_files: list) -> list[str]:
    """Keys of `OddFile`s (`vault/notes.py`) or of their `--json` form (`file`, `kind`, `message`)."""
    return [
        _key(odd["file"], odd["kind"], odd["message"])
        if isinstance(odd, dict)
        else _key(odd.rel, odd.kind, odd.message)
        for odd in odd_files
    ]


def _read(machine_dir) -> set[str]:
    try:
        with open(os.path.join(os.fspath(machine_dir), RECORD_NAME), encoding="utf-8") as handle:
            return {line.rstrip("\n") for line in handle if line.strip()}
    except (OSError, UnicodeDecodeError):
        return set()


def fresh_warnings(machine_dir, odd_files: list) -> list:
    """The odd files whose warning this machine has not shown yet."""
    shown = _read(machine_dir)
    return [odd for odd, key in zip(odd_files, _keys(odd_files)) if key not in shown]


def mark_shown(machine_dir, odd_files: list) -> None:
    """Record `odd_files` as the warnings there are now, every one shown: a warning no longer
    there is forgotten, so it is shown again if it comes back."""
    keys = sorted(set(_keys(odd_files)))
    if set(keys) == _read(machine_dir):
        return
    text = "".join(key + "\n" for key in keys)
    write_cache(os.path.join(os.fspath(machine_dir), RECORD_NAME), text.encode("utf-8"))


def shown_once(machine_dir, odd_dicts: list[dict]) -> list[dict]:
    """`status`'s odd files (their `--json` form) each marked `new` or not, and recorded as shown:
    what `status` prints in full is what this machine has not shown before."""
    new = {id(odd) for odd in fresh_warnings(machine_dir, odd_dicts)}
    marked = [{**odd, "new": id(odd) in new} for odd in odd_dicts]
    mark_shown(machine_dir, odd_dicts)
    return marked
