"""A note's bytes as text (issue 35): a byte-order mark, UTF-16 or UTF-32 without one, Windows-1252
where the bytes are not UTF-8 — named, and never a replacement character."""

from __future__ import annotations

import codecs

import pytest

from cmem.text.encodings import UTF8, decode_note
from cmem.vault.layers import DIVERGENT, NoteFile
from cmem.vault.notes import odd_from_note, read_note

TEXTS = [
    "# notes\n\n- I prefer café crème, not tea\n",
    "# 随手记\n\n- 我决定改用 Svelte（不是 React）\n- 以后都早起\n",
    "---\ntags: [a]\n---\n- Ünïcödé: naïve résumé — “quoted” €5\n",
    "- emoji 🎉 and kana かな and Hangul 한국어\n",
    "x",
]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize(
    "codec, mark, name",
    [
        ("utf-8", codecs.BOM_UTF8, UTF8),
        ("utf-16-le", codecs.BOM_UTF16_LE, "UTF-16 LE"),
        ("utf-16-be", codecs.BOM_UTF16_BE, "UTF-16 BE"),
        ("utf-32-le", codecs.BOM_UTF32_LE, "UTF-32 LE"),
        ("utf-32-be", codecs.BOM_UTF32_BE, "UTF-32 BE"),
    ],
)
def test_a_byte_order_mark_decides(text, codec, mark, name):
    decoded = decode_note(mark + text.encode(codec))
    assert decoded == (text, name, True, None)


@pytest.mark.parametrize("text", TEXTS[:4])
@pytest.mark.parametrize(
    "codec, name",
    [("utf-16-le", "UTF-16 LE"), ("utf-16-be", "UTF-16 BE"), ("utf-32-le", "UTF-32 LE")],
)
def test_wide_text_without_a_mark_is_told_by_its_nuls(text, codec, name):
    decoded = decode_note(text.encode(codec))
    assert decoded.text == text and decoded.encoding == name and not decoded.bom


@pytest.mark.parametrize(
    "raw, text, encoding",
    [
        ("café crème\n".encode("latin-1"), "café crème\n", "Windows-1252 (Latin-1)"),
        ("“smart” quotes — and €\n".encode("cp1252"), "“smart” quotes — and €\n", "Windows-1252"),
        # the five bytes Windows-1252 leaves unassigned are Latin-1's
        (b"a\x81b\x9dc\n", "a\x81b\x9dc\n", "Windows-1252"),
        # a UTF-8 note with a Latin-1 word pasted in keeps both
        ("été ".encode() + "déjà\n".encode("latin-1"), "été déjà\n", "UTF-8, with the bytes"),
        # a UTF-8 note cut inside a character
        ("我喜欢早起".encode()[:-1], "我喜欢早" + "\xe8\xb5", "UTF-8, with the bytes"),
    ],
)
def test_bytes_that_are_not_utf8_are_read_as_windows_1252(raw, text, encoding):
    decoded = decode_note(raw)
    assert decoded.text == text and decoded.encoding.startswith(encoding)
    assert "\ufffd" not in decoded.text


@pytest.mark.parametrize(
    "raw",
    [
        b"I prefer\x00 binary\n",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00",
        bytes(range(256)),
        codecs.BOM_UTF16_LE + b"a\x00b",  # a marked UTF-16 file cut in a character
        codecs.BOM_UTF16_LE + "\x00\x01".encode("utf-16-le"),
    ],
)
def test_binary_is_not_text(raw):
    decoded = decode_note(raw)
    assert decoded.text is None and decoded.problem


def test_plain_utf8_is_plain():
    assert decode_note("我喜欢\n".encode()).is_plain


@pytest.mark.parametrize(
    "data, fragment",
    [
        ("- café\n".encode("latin-1"), "read as Windows-1252"),
        ("- café\n".encode("utf-16"), "read as UTF-16 LE (by its byte-order mark)"),
        ("- café\n".encode("utf-16-be"), "read as UTF-16 BE (no byte-order mark"),
        ("- café\r\n- thé\r\n".encode("utf-16"), "read as UTF-16 LE"),
    ],
)
def test_a_note_read_so_is_named_with_its_encoding_and_never_rewritten(tmp_path, data, fragment):
    path = tmp_path / "n.md"
    path.write_bytes(data)
    note = read_note(NoteFile("n.md", path, DIVERGENT))
    assert note.usable and "\ufffd" not in note.text and "café" in note.text
    assert "\r" not in note.text
    assert any(fragment in problem for problem in note.problems), note.problems
    assert not note.rewritable
    (odd,) = odd_from_note(note)
    assert odd.kind == "encoding" and fragment in odd.message
