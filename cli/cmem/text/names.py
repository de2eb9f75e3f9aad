"""File names as they can be shown (a name read from the disk may hold bytes that are not UTF-8),
and names as they are compared (`name_key`).

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


# What `name_key` removes from an ASCII name: every character `str.isspace` calls space in ASCII
# (the four separators \x1c-\x1f included), hyphens, underscores and slashes.
_ASCII_SEPARATORS = str.maketrans("", "", " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f_-/")
_separators = None  # the same for any text, compiled on first use


def name_key(name: str) -> str:
    """A name as file names, aliases, tags, links and a project's names are compared: NFKC,
    case-folded, without spaces, hyphens, dashes, underscores and slashes (`Tide-Pool` and
    `tidepool` are one name; `潮汐` stays itself)."""
    global _separators
    if name.isascii():
        # NFKC leaves ASCII as it is, and casefold is lower: the common case, without either
        return name.lower().translate(_ASCII_SEPARATORS)
    import re

    from cmem.text.folding import fold

    if _separators is None:
        _separators = re.compile(r"[\s_\-–—/]+")
    return _separators.sub("", fold(name))
