"""`cmem note TEXT`: quick capture — one timestamped line appended to today's note in the
divergent layer (SPEC §9)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from cmem.atomic import write_atomic
from cmem.errors import CmemError, UsageError
from cmem.regular_files import special_kind
from cmem.vault.layers import DIVERGENT, Vault
from cmem.vault.notes import line_end, read_text_exact


@dataclass(frozen=True)
class Captured:
    rel: str
    line: int
    created: bool
    text: str


# One captured line at most (as a session turn is by default: sessions.max_turn_chars).
NOTE_MAX_CHARS = 4000


def capture_note(vault: Vault, text: str, now: datetime | None = None) -> Captured:
    text = " ".join(text.split())  # one line: a capture never breaks the note's structure
    if not text:
        raise UsageError('nothing to note: give the text to capture, e.g. cmem note "以后都用 uv".')
    if len(text) > NOTE_MAX_CHARS:  # `cmem note` and the MCP `note` tool alike
        raise UsageError(
            f"a note line takes at most {NOTE_MAX_CHARS:,} characters, not {len(text):,}; "
            "write longer text into a note of its own in the vault."
        )
    now = now or datetime.now().astimezone()
    name = vault.config.capture_pattern.replace(
        "{date}", now.strftime("%Y-%m-%d")
    )  # a plain name: config checks it
    if not name.endswith(".md"):
        name += ".md"
    folder = vault.root / vault.config.capture_folder if vault.config.capture_folder else vault.root
    path = _unarchived_name(vault, folder, name, now.strftime("%Y-%m-%d"))
    rel = vault.rel(path)
    line = f"- {now.strftime('%H:%M')} {text}\n"
    if path.is_symlink():
        raise CmemError(f"{rel} is a symbolic link; cmem does not write through links.")
    vault.confined(rel, DIVERGENT)  # the capture folder may be a link out of the vault
    kind = special_kind(path.stat().st_mode) if path.exists() else None
    if kind:  # opened, a FIFO would block the command until something reads it
        raise CmemError(f"{rel} is {kind}, not a regular file; cmem will not write to it.")
    if path.exists():
        try:
            raw, current = read_text_exact(path)
        except UnicodeDecodeError:
            raise CmemError(
                f"{rel} is not valid UTF-8; cmem will not append to it (fix its encoding first)."
            ) from None
        crlf = line_end(raw) == b"\r\n"
        if raw.startswith(b"\xef\xbb\xbf") or (b"\r" in raw and not crlf):
            raise CmemError(
                f"{rel} has a byte-order mark or mixed line ends; cmem will not rewrite it."
            )
        if b"\x00" in raw:
            raise CmemError(
                f"{rel} contains NUL bytes (a binary file?); cmem will not append to it."
            )
        current = current.replace(
            "\r\n", "\n"
        )  # a CRLF checkout (core.autocrlf) gets CRLF lines back
        new = current + ("\n" if current and not current.endswith("\n") else "") + line
        appended = new[len(current) :]
        # Append rather than replace when nothing else wrote in between: an editor holding the
        # file open sees a plain append, and no byte of the user's note is rewritten.
        with open(path, "ab") as handle:
            handle.write((appended.replace("\n", "\r\n") if crlf else appended).encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        created = False
    else:
        heading = f"# {Path(name).stem}\n\n"
        new = heading + line
        write_atomic(path, new)
        created = True
    line_no = new.count("\n")
    return Captured(rel=rel, line=line_no, created=created, text=text)


def _unarchived_name(vault: Vault, folder: Path, name: str, date: str) -> Path:
    """Today's capture note, unless today's note was already converged and archived: a second
    note of the same name would make its wikilinks ambiguous, so it becomes `… 2.md`."""
    from cmem.archive.checklist import archive_target

    stem = name[:-3]
    for counter in range(1, 100):
        candidate = name if counter == 1 else f"{stem} {counter}.md"
        path = folder / candidate
        if (
            path.exists()
            or not (
                vault.root
                / archive_target(
                    vault.config.archive_dir, vault.config.archive_pattern, candidate, date
                )
            ).exists()
        ):
            return path
    raise CmemError(f"too many capture notes named like {name!r} today.")
