"""A note's bytes as text, whatever encoding an editor saved them in (docs/design.md §1, issue 35).

Everything cmem writes is UTF-8; what it reads may not be. A note is decoded, in this order, by:

- its byte-order mark: UTF-32 (LE, BE), UTF-8, UTF-16 (LE, BE) — the mark is not text;
- no mark and NUL bytes: UTF-32 or UTF-16 without a mark, recognised by where the NULs fall
  (ASCII text in UTF-16 LE has a NUL after every character, in BE before it: markup, spaces and
  line ends make at least a third of a note's characters ASCII) and by decoding to text that
  holds no NUL and no control character; anything else with NULs is binary (so is a UTF-16 note
  without a mark that is nearly all CJK — editors that save UTF-16 write the mark);
- valid UTF-8: as it is (the usual case, and the only one that costs nothing more);
- anything else: UTF-8 where it is valid, and each byte that is not read as Windows-1252 (the
  superset of Latin-1 that editors on Windows save; its five unassigned bytes as Latin-1) — so
  a Latin-1 note reads `café`, and a UTF-8 note with a pasted Latin-1 word keeps both.

Never a replacement character: text that cannot be decoded so (a marked UTF-16 file cut in the
middle of a character) is not text (`Decoded.text` None), and the caller says why. No declared
encoding is read: neither Obsidian nor Markdown editors write one into a note (Emacs and Vim
cookies are for source files), so a note declares only by its byte-order mark.
"""

from __future__ import annotations

import codecs
from collections import namedtuple

UTF8 = "UTF-8"
_CP1252_UNDEFINED = frozenset(b"\x81\x8d\x8f\x90\x9d")
# UTF-16 without a mark: at least this share of its characters is ASCII (their NULs tell it)
_WIDE_ASCII_SHARE = 0.3


class Decoded(namedtuple("Decoded", "text encoding bom problem")):
    """text: the note's text, or None when it is not text; encoding: what it was read as (`UTF8`
    for plain UTF-8); bom: it started with a byte-order mark; problem: why it is not text."""

    __slots__ = ()

    @property
    def is_plain(self) -> bool:
        return self.encoding == UTF8 and not self.bom


_BOMS = (  # longest first: the UTF-32 LE mark starts with the UTF-16 LE one
    (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32 LE"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32 BE"),
    (codecs.BOM_UTF8, "utf-8", UTF8),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16 LE"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16 BE"),
)


def _byte_as_cp1252(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeDecodeError):  # a decoding handler only
        raise error
    bad = error.object[error.start : error.end]
    return (
        "".join(
            bytes([byte]).decode("latin-1" if byte in _CP1252_UNDEFINED else "cp1252")
            for byte in bad
        ),
        error.end,
    )


codecs.register_error("cmem-cp1252", _byte_as_cp1252)


def decode_note(raw: bytes) -> Decoded:
    """The text of a note's bytes (see the module's doc)."""
    if raw[:1] in _MARK_STARTS:
        marked = _marked(raw)
        if marked is not None:
            return marked
    if b"\x00" in raw:
        guessed = _unmarked_wide(raw)
        if guessed is None:
            return Decoded(None, UTF8, False, "contains NUL bytes (a binary file?)")
        return Decoded(guessed[0], guessed[1], False, None)
    text, encoding = _decode_8bit(raw)
    return Decoded(text, encoding, False, None)


_MARK_STARTS = frozenset(mark[:1] for mark, _, _ in _BOMS)


def _marked(raw: bytes) -> Decoded | None:
    for mark, codec, name in _BOMS:
        if raw.startswith(mark):
            if codec == "utf-8":
                text, encoding = _decode_8bit(raw[len(mark) :])
                return Decoded(text, encoding, True, None)
            try:
                text = raw[len(mark) :].decode(codec)
            except UnicodeDecodeError:
                return Decoded(
                    None, name, True, f"starts with a {name} byte-order mark but is not {name} text"
                )
            if "\x00" in text:
                return Decoded(None, name, True, "contains NUL characters (a binary file?)")
            return Decoded(text, name, True, None)
    return None


def _decode_8bit(raw: bytes) -> tuple[str, str]:
    try:
        return raw.decode("utf-8"), UTF8
    except UnicodeDecodeError:
        pass
    text = raw.decode("utf-8", errors="cmem-cp1252")
    if _has_utf8_sequences(raw):
        return text, "UTF-8, with the bytes that are not UTF-8 as Windows-1252"
    return text, "Windows-1252 (Latin-1)"


def _has_utf8_sequences(raw: bytes) -> bool:
    """Whether any valid multi-byte UTF-8 sequence is in `raw` (a mixed note)."""
    text = raw.decode("utf-8", errors="ignore")
    return any(ord(ch) > 0x7F for ch in text)


def _unmarked_wide(raw: bytes) -> tuple[str, str] | None:
    """(text, encoding) of UTF-32 or UTF-16 bytes without a mark, or None: not such text."""
    candidates = []
    if len(raw) % 4 == 0:
        candidates += [("utf-32-le", "UTF-32 LE"), ("utf-32-be", "UTF-32 BE")]
    if len(raw) % 2 == 0:
        zeros_even = raw[0::2].count(0)
        zeros_odd = raw[1::2].count(0)
        # ASCII characters (markup, spaces, line ends: a good share of any note) put their NUL
        # after (LE) or before (BE) them; the other half of the bytes is NUL only for the few
        # characters whose low byte is 00. A stray NUL in 8-bit text is neither.
        enough = _WIDE_ASCII_SHARE * len(raw) / 2
        if zeros_odd >= enough and zeros_odd > 4 * zeros_even:
            candidates.append(("utf-16-le", "UTF-16 LE"))
        if zeros_even >= enough and zeros_even > 4 * zeros_odd:
            candidates.append(("utf-16-be", "UTF-16 BE"))
    for codec, name in candidates:
        try:
            text = raw.decode(codec)
        except UnicodeDecodeError:
            continue
        if _looks_like_text(text):
            return text, name
    return None


def _looks_like_text(text: str) -> bool:
    """No NUL, no control character but tab and line ends, no private or unassigned code
    point that a wrong guess at the width makes of ordinary bytes."""
    import unicodedata

    for ch in text:
        if ch in "\t\n\r":
            continue
        category = unicodedata.category(ch)
        if category in ("Cc", "Cn", "Co", "Cs"):
            return False
    return bool(text.strip())
