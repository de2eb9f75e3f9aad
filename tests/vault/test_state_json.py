"""line_key: the fingerprint state.json keeps of every converged line. It is stored in the vault
and read back on other machines and by later cmem versions, so its value may never change."""

from __future__ import annotations

import re
import sys

from cmem.vault.state_json import line_key


def test_line_key_values_are_fixed():
    # the values state.json files already hold: a change would make converged lines pending again
    assert line_key("- 我决定改用 Svelte") == "3f449b6e4fa5"
    assert line_key("  a\t b \u3000c  ") == line_key("a b c") == "6b3f339c67bb"
    assert line_key("") == "da39a3ee5e6b"


def test_line_key_folds_exactly_the_whitespace_the_regex_did():
    # line_key once ran re.sub(r"\s+", " ", line.strip()); split() and join must agree with it
    # on every code point that is whitespace to either
    space = re.compile(r"\s+")
    spaces = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace() or space.match(chr(c))]
    for ch in spaces:
        line = f"{ch}x{ch}{ch}y {ch}"
        assert " ".join(line.split()) == space.sub(" ", line.strip()), hex(ord(ch))
