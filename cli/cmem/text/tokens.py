"""The one token estimate used everywhere (docs/design.md §12).

CJK characters (Han, kana, Hangul, full-width forms) count one token each; all other text counts
one token per four characters, rounded up. Models tokenise differently; this estimate is stable,
cheap, and errs on the side of more tokens for Chinese text. Every budget figure is one of these
functions or a sum made by `tokens_of`; `bench/layout.py` counts estimates made anywhere else.

No import at module level: a stored `context` sums its lines' counts with `tokens_of`.
"""

from __future__ import annotations

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    if not text:
        return 0
    return tokens_of(len(text), wide_chars(text))


def wide_chars(text: str) -> int:
    """How many characters of `text` count a token each (`text/scripts.py: CJK_WIDE`)."""
    if text.isascii():
        return 0
    from cmem.text.scripts import CJK_WIDE_CHAR

    return len(CJK_WIDE_CHAR.findall(text))


def tokens_of(length: int, wide: int) -> int:
    """The estimate of a text of `length` characters, `wide` of them CJK-wide: for a text whose
    counts are summed as it is made, never scanned whole (the context bundle's budget loop)."""
    return wide + (length - wide + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN
