"""`vault/globs.py`: the ignore and exclude globs, compiled once, match as fnmatch matches."""

from __future__ import annotations

import fnmatch
import itertools

from cmem.vault.globs import any_glob
from cmem.vault.layers import open_vault

PATTERNS = [
    "*.tmp.md",
    "draft-*",
    "private/**",
    "[!a-c]*.md",
    "x?y.md",
    "*[[]*",
    "日记-*.md",
    "a|b.md",
    "(dup).md",
    ".hidden*",
    "*",
    "",
]
NAMES = [
    "note.md",
    "note.tmp.md",
    "draft-1.md",
    "private/a/b.md",
    "private",
    "apple.md",
    "zebra.md",
    "xzy.md",
    "xy.md",
    "odd [1].md",
    "日记-周一.md",
    "a|b.md",
    "a.md",
    "(dup).md",
    "dup.md",
    ".hidden.md",
    "line\nbreak.md",
    "",
]


def test_any_glob_matches_as_fnmatch_does_for_every_set_of_patterns():
    for count in (0, 1, 2, 3):
        for patterns in itertools.combinations(PATTERNS, count):
            matches = any_glob(patterns)
            for name in NAMES:
                expected = any(fnmatch.fnmatch(name, pattern) for pattern in patterns)
                assert matches(name) == expected, (patterns, name)


def test_excluded_and_ignored_notes_are_left_out_of_the_layers(make_vault):
    root = make_vault(
        {
            "keep.md": "a\n",
            "draft-1.md": "b\n",
            "note.tmp.md": "c\n",
            "private/x.md": "d\n",
        }
    )
    config = root / ".cmem" / "config.yaml"
    config.write_text(
        'divergent:\n  exclude: ["draft-*", "*.tmp.md"]\nignore: ["private/**"]\n', "utf-8"
    )
    vault = open_vault(root)
    assert [note.rel for note in vault.list_layer("divergent")] == ["keep.md"]
    assert vault.is_ignored("private/x.md") and not vault.is_ignored("keep.md")
