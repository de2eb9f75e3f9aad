"""File names as they can be shown: a name read from the disk may hold bytes that are not UTF-8.

Below everything else (the error messages need it, and the vault model), so it imports nothing
of cmem."""

from __future__ import annotations

import os


def is_undecodable(name: str) -> bool:
    """Whether a name from the disk was not valid UTF-8. Python hands such names over with the
    bad bytes as lone surrogates, which crash anything that encodes them (JSON, git, printing)."""
    if name.isascii():
        return False
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def show_name(name: str) -> str:
    """A name as it can be shown and written to JSON: bytes that are not UTF-8 as `\\xff`."""
    return os.fsencode(name).decode("utf-8", "backslashreplace") if is_undecodable(name) else name
