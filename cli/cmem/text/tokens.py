"""The one token estimate used everywhere (docs/design.md §12).

CJK characters (Han, kana, Hangul, full-width forms) count one token each; all other text counts
one token per four characters, rounded up. Models tokenise differently; this estimate is stable,
cheap, and errs on the side of more tokens for Chinese text.
"""

from __future__ import annotations

from cmem.text.scripts import CJK_WIDE_CHAR


def estimate_tokens(text: str) -> int:
    if not text:
        return 0
    if text.isascii():
        return (len(text) + 3) // 4
    cjk = len(CJK_WIDE_CHAR.findall(text))
    other = len(text) - cjk
    return cjk + (other + 3) // 4
