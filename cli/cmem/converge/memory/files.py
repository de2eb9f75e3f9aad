"""The memory files as a pass reads them: every convergent file's text and bytes, which of them
cmem may rewrite, which someone else edited since the last pass, and the notes edited while the
pass ran."""

from __future__ import annotations

import os
from pathlib import Path

from cmem.converge.selection import Selection
from cmem.steps import commits as history
from cmem.steps.changes import current_bytes
from cmem.vault.layers import Vault
from cmem.vault.notes import line_end
from cmem.vault.state_json import State


def hand_edited_files(vault: Vault, state: State) -> set[str]:
    """Convergent files changed by someone else since the last pass: the user's word."""
    last = state.last_of_kind("converge")
    if not last:
        return set()
    # The files nobody committed are asked for while the last pass's commit is found and
    # diffed, not in three git processes one after another.
    added = history.GitBeside(
        vault.root, "ls-files", "--others", "--exclude-standard", "--", *vault.convergent_dirs
    )
    try:
        commit = history.find_pass_commit(vault.root, last["id"])
        if commit is None:
            return set()
        # against the working tree, so a dry run or --emit-prompt (no snapshot commit) sees them too
        changed = history.run_git(
            vault.root,
            "diff",
            "--name-only",
            "--relative",
            commit.sha,
            "--",
            *vault.convergent_dirs,
            check=False,
        )
    finally:
        found = added.result()  # waited for whatever happens: no process is left behind
    return {line.strip() for line in (changed.stdout + found.stdout).splitlines() if line.strip()}


def read_originals(vault: Vault) -> tuple[dict[str, str], dict[str, bytes]]:
    """Every convergent file's text (for the prompt and validator) and bytes (for the
    second-writer check). A file cmem may not rewrite is still shown, and the validator refuses
    writes to it; a file it cannot read is left alone (the scan names it): never shown, and the
    validator refuses writes to it too."""
    texts, raws = {}, {}
    for note in vault.convergent_files():
        try:
            raw = _file_bytes(note.location)
        except PermissionError:  # this file only is left out of the pass
            continue
        if raw is None:  # gone since the listing
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:  # shown as a note is read, never with U+FFFD (not rewritten)
            text = _decoded_memory(raw)
        raws[note.rel] = raw
        texts[note.rel] = text.replace("\r\n", "\n") if b"\r" in raw else text
    return texts, raws


def _decoded_memory(raw: bytes) -> str:
    """A memory file that is not UTF-8, as `text/encodings.py` reads a note."""
    from cmem.text.encodings import decode_note

    decoded = decode_note(raw)
    if decoded.text is None:
        return raw.decode("utf-8", errors="replace")  # binary: protected from writes anyway
    return decoded.text.removeprefix("\ufeff")


_CHUNK = 1 << 16


def _file_bytes(location: str | os.PathLike) -> bytes | None:
    """`steps/changes.py: current_bytes`, the same answers, in plain system calls: an `open()`
    builds a buffered file object and asks the file's size and type first, which for the 2,049
    memory files of a large vault was twice the time of the reads themselves."""
    try:
        # not blocking: a FIFO put where a memory file was listed reads as empty, never waits
        fd = os.open(location, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except IsADirectoryError:  # open(…, "rb") refuses a folder, os.open does not: read says so
        return current_bytes(Path(location))
    try:
        chunks: list[bytes] = []
        while True:
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                return b"".join(chunks) if len(chunks) != 1 else chunks[0]
            chunks.append(chunk)
    except IsADirectoryError:
        return current_bytes(Path(location))  # a folder where a file was: its own answer
    finally:
        os.close(fd)


def rewritable(raw: bytes) -> bool:
    """cmem rewrites only files it can write back as they were encoded: UTF-8 without a BOM,
    one kind of line end, no NUL (docs/design.md §1). Others are shown to the engine but protected from
    writes."""
    return unwritable_reason(raw) is None


def unwritable_reason(raw: bytes) -> str | None:
    if raw.startswith(b"\xef\xbb\xbf"):
        return "starts with a byte-order mark"
    if b"\r" in raw and line_end(raw) != b"\r\n":
        return "mixes line ends (CRLF and LF, or a lone CR)"
    if b"\x00" in raw:
        return "contains NUL bytes"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return "is not valid UTF-8"
    return None


def changed_inputs(vault: Vault, selection: Selection) -> list[str]:
    """Notes edited (Obsidian's autosave) while the model ran. The pass never writes a note; it
    converged the version it read, state.json keeps that version's digest, so the lines added
    since stay pending for the next pass, and the checklist will not archive the edited note."""
    import hashlib

    warnings = []
    for note in selection.notes:
        raw = current_bytes(vault.root / note.rel)
        if raw is None:
            warnings.append(
                f"{note.rel} was moved or deleted while the pass ran; the pass used the version it read"
            )
        elif hashlib.sha256(raw).hexdigest() != note.sha256:
            warnings.append(
                f"{note.rel} changed while the pass ran; the pass used the version it read, your new lines wait for the next pass"
            )
    return warnings
