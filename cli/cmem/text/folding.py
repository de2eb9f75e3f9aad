"""Text folding: the one place cmem turns text into the form it compares (issue 45).

Each function names the folding it does. `fold` is the comparison form of words and statements;
the others differ from it on purpose, each for the reason in its docstring. Callers that do more
(a statement's key drops punctuation, a name's key drops separators) do it after folding here.
Knows nothing else of cmem.
"""

from __future__ import annotations

import unicodedata


def fold(text: str) -> str:
    """NFKC, then case-folded: full-width, ligatures and case no longer tell two texts apart
    (`ＡＰＩ`, `ﬁle`, `Straße` read as `api`, `file`, `strasse`)."""
    return unicodedata.normalize("NFKC", text).casefold()


def fold_case(text: str) -> str:
    """Case-folded only, no NFKC: names compared as their owner compares them (Obsidian's
    links, a heading, a file on a case-insensitive disk), where `Ａ` and `A` stay two."""
    return text.casefold()


def fold_lower(text: str) -> str:
    """NFKC, then lower case: a query as SQLite FTS5's `unicode61` tokenizer folds the index,
    which casefold would miss (`ß` stays `ß` there, never `ss`)."""
    return unicodedata.normalize("NFKC", text).lower()


def fold_path(path: str) -> str:
    """NFC, then case-folded: paths as a case-insensitive file system compares them, which
    knows canonical equivalence but not NFKC's (`Ａ` and `A` are two files there)."""
    return unicodedata.normalize("NFC", path).casefold()


def nfkc(text: str) -> str:
    """NFKC, case kept: full-width forms and ligatures narrowed where the text is quoted back
    or matched by position, so its case must survive."""
    return unicodedata.normalize("NFKC", text)


def nfc(text: str) -> str:
    """NFC: the form a file name is written in (`é` one character, not `e` and a mark)."""
    return unicodedata.normalize("NFC", text)


def strip_marks(text: str) -> str:
    """NFKD with its combining marks dropped: `café` reads as `cafe` (for look-alike names)."""
    return "".join(
        ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch)
    )
