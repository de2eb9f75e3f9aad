"""Which paths a model may write (docs/design.md §5, rule 1): an allow-list, not a deny-list.

A path from a reply is accepted only if it is a plain relative POSIX path to a `.md` file inside
the resident or situational folder, and no existing component of it on disk is a symbolic link.
Everything else — absolute paths, `..`, backslashes, hidden folders (`.git/`, `.obsidian/`),
control characters, Unicode look-alikes of `/`, `\\` and `.` — is refused before any other check
looks at the content, so nothing else in cmem ever has to be careful with these strings.
"""

from __future__ import annotations

import os
import re
import unicodedata

from cmem.text.folding import fold, nfc, nfkc, strip_marks
from cmem.vault.layers import RESIDENT, SITUATIONAL, Vault, is_sync_conflict

# Characters that render like a path separator or a dot but have no NFKC decomposition to one.
# (Those that do — U+FF0F ／, U+FF0E ．, U+2024 ․, U+FE52 ﹒, U+2026 … — are caught by NFKC.)
_LOOKALIKES = {
    "\u2215": "/",  # DIVISION SLASH
    "\u2044": "/",  # FRACTION SLASH
    "\u2571": "/",  # BOX DRAWINGS LIGHT DIAGONAL
    "\u29f8": "/",  # BIG SOLIDUS
    "\u1735": "/",  # PHILIPPINE SINGLE PUNCTUATION
    "\u0337": "/",  # COMBINING SHORT SOLIDUS OVERLAY
    "\u0338": "/",  # COMBINING LONG SOLIDUS OVERLAY
    "\u2216": "\\",  # SET MINUS
    "\u29f5": "\\",  # REVERSE SOLIDUS OPERATOR
    "\u29f9": "\\",  # BIG REVERSE SOLIDUS
    "\u0701": ".",  # SYRIAC SUPRALINEAR FULL STOP
    "\u0702": ".",  # SYRIAC SUBLINEAR FULL STOP
    "\ua60e": ".",  # VAI FULL STOP
    "\u2e31": ".",  # WORD SEPARATOR MIDDLE DOT
}
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:")
_MAX_NAME_BYTES = 255


def show_path(path: str) -> str:
    """A path as it can be shown safely: control and invisible characters as `\\uXXXX`."""
    return "".join(
        ch
        if ch.isprintable() and not unicodedata.category(ch).startswith("C")
        else f"\\u{ord(ch):04x}"
        for ch in path
    )


def _lookalike(ch: str) -> str | None:
    if ch in "/.\\":
        return None
    if ch in _LOOKALIKES:
        return _LOOKALIKES[ch]
    folded = nfkc(ch)
    return next((target for target in "/\\." if target in folded), None)


def _character_problem(path: str) -> str | None:
    for ch in path:
        if unicodedata.category(ch).startswith("C"):
            return f"contains the control or invisible character U+{ord(ch):04X}"
        target = _lookalike(ch)
        if target:
            name = unicodedata.name(ch, "unnamed")
            return f"contains U+{ord(ch):04X} ({name}), a look-alike of {target!r}"
    return None


def _shape_problem(path: str) -> str | None:
    if "\\" in path:
        return "contains a backslash; separate folders with '/'"
    if path.startswith(("/", "~")) or _WINDOWS_DRIVE.match(path):
        return "is absolute; give a path relative to the vault"
    parts = path.split("/")
    if ".." in parts:
        return "contains '..'"
    if any(part in ("", ".") for part in parts):
        return "has an empty or '.' component"
    if any(part.startswith(".") for part in parts):
        return "has a hidden component (like .git/ or .obsidian/), which cmem never writes"
    if any(part != part.strip() for part in parts):
        return "has a component that starts or ends with a space"
    if not path.endswith(".md"):
        return "is not a Markdown file (.md)"
    if any(len(part.encode("utf-8")) > _MAX_NAME_BYTES for part in parts):
        return f"has a name longer than {_MAX_NAME_BYTES} bytes"
    if is_sync_conflict(parts[-1]):
        return "is named like a sync-conflict copy"
    return None


def _disk_problem(vault: Vault, path: str) -> str | None:
    """No existing component may be a link, and the real path must stay in the real layer folder."""
    current = vault.root
    for part in path.split("/"):
        current = current / part
        if os.path.islink(current):
            return f"goes through the symbolic link {vault.rel(current)}; cmem never writes through links"
        if not os.path.lexists(current):
            break
    layer_dir = (
        vault.config.resident_dir
        if vault.layer_of(path) == RESIDENT
        else vault.config.situational_dir
    )
    real_layer = os.path.realpath(vault.root / layer_dir)
    real_target = os.path.realpath(vault.root / path)
    if not real_target.startswith(real_layer + os.sep):
        return f"resolves outside {layer_dir}/"
    if os.path.isdir(real_target):
        return "is a folder"
    if os.path.lexists(real_target) and not os.path.isfile(real_target):
        return "is not a regular file"  # a FIFO would block the read that comes next
    return None


def convergent_path_problem(vault: Vault, path: str) -> str | None:
    """Why a model may not write `path`, or None when it is a convergent file it may write."""
    if not path:
        return "is empty"
    problem = _character_problem(path) or _shape_problem(path)
    if problem:
        return problem
    if vault.layer_of(path) not in (RESIDENT, SITUATIONAL):
        return f"is outside the convergent layer ({vault.config.resident_dir}/ and {vault.config.situational_dir}/)"
    return _disk_problem(vault, path)


# --- look-alike names (docs/design.md §5, rule 12) -----------------------------------------------------

# Letters of other scripts drawn like Latin ones (a small part of Unicode's confusables list:
# the ones a keyboard or a model produces), and digits drawn like letters.
_CONFUSABLES = str.maketrans(
    {
        "а": "a",
        "в": "b",
        "е": "e",
        "ё": "e",
        "к": "k",
        "м": "m",
        "н": "h",
        "о": "o",
        "р": "p",
        "с": "c",
        "т": "t",
        "у": "y",
        "х": "x",
        "і": "i",
        "ї": "i",
        "ј": "j",
        "ѕ": "s",
        "ԁ": "d",
        "ӏ": "l",
        "ԛ": "q",
        "ԝ": "w",
        "һ": "h",
        "α": "a",
        "β": "b",
        "ε": "e",
        "ι": "i",
        "κ": "k",
        "ν": "v",
        "ο": "o",
        "ρ": "p",
        "τ": "t",
        "υ": "u",
        "χ": "x",
        "ı": "i",
        "ł": "l",
        "ℓ": "l",
        "ɡ": "g",
        "ɑ": "a",
        "0": "o",
        "1": "l",
        "|": "l",
        "ｌ": "l",
    }
)


def skeleton(path: str) -> str:
    """A path as it looks: NFKC, case folded, look-alike letters mapped to one form, marks
    dropped. Two paths with one skeleton are one name to a reader (and one file on a
    case-insensitive file system)."""
    return strip_marks(fold(path)).translate(_CONFUSABLES)


def lookalike_problem(path: str, existing: list[str]) -> str | None:
    """Why a new memory file's path is too close to an existing one, or None."""
    if nfc(path) != path:
        return f"is not in Unicode NFC form (write it as {show_path(nfc(path))!r})"
    if path in existing:
        return None
    shape = skeleton(path)
    for other in existing:
        if other != path and skeleton(other) == shape:
            return f"differs from the existing memory file {show_path(other)} only by case, Unicode form or look-alike characters; write to that file"
    return None


def note_stem_problem(path: str, note_shapes: dict[str, str]) -> str | None:
    """Why a new memory file may not have this name: its stem looks like a note's name
    (divergent or archived; `note_shapes` maps a name's skeleton to the name), so `[[name]]`
    would no longer say which one a source means."""
    name = note_shapes.get(skeleton(path.rsplit("/", 1)[-1].removesuffix(".md")))
    if name is not None:
        stem = path.rsplit("/", 1)[-1].removesuffix(".md")
        return (
            f"is named like the note [[{name}]] (names compare without case, accents or look-alike "
            f"letters); a source [[{name}]] would become ambiguous — add a word, e.g. {stem}-topic.md"
        )
    return None
