"""Each folding function of `text/folding.py` on the texts where foldings part ways: ASCII, CJK
full-width and half-width forms, Turkish dotted I, German ß, ligatures, combining accents and
mixed whitespace."""

from __future__ import annotations

import pytest

from cmem.text.folding import fold, fold_case, fold_lower, fold_path, nfc, nfkc, strip_marks

ASCII = "Hello World"
WIDE = "ＡＰＩ\u3000ｷｰ"  # full-width Latin, an ideographic space, half-width katakana
TURKISH = "İstanbul"  # U+0130, capital I with a dot above
GERMAN = "Straße"
LIGATURE = "ﬁle"  # U+FB01
COMBINING = "Cafe\u0301"  # e and a combining acute accent
SPACES = "a\u00a0b\u3000c\td\ne"  # no-break space, ideographic space, tab, newline

CASES = {
    fold: {
        ASCII: "hello world",
        WIDE: "api キー",
        TURKISH: "i\u0307stanbul",
        GERMAN: "strasse",
        LIGATURE: "file",
        COMBINING: "caf\u00e9",
        SPACES: "a b c\td\ne",
    },
    fold_case: {
        ASCII: "hello world",
        WIDE: "ａｐｉ\u3000ｷｰ",
        TURKISH: "i\u0307stanbul",
        GERMAN: "strasse",
        LIGATURE: "file",  # full case folding splits the ligature, NFKC or not
        COMBINING: "cafe\u0301",
        SPACES: SPACES,
    },
    fold_lower: {
        ASCII: "hello world",
        WIDE: "api キー",
        TURKISH: "i\u0307stanbul",
        GERMAN: "straße",
        LIGATURE: "file",
        COMBINING: "caf\u00e9",
        SPACES: "a b c\td\ne",
    },
    fold_path: {
        ASCII: "hello world",
        WIDE: "ａｐｉ\u3000ｷｰ",
        TURKISH: "i\u0307stanbul",
        GERMAN: "strasse",
        LIGATURE: "file",
        COMBINING: "caf\u00e9",
        SPACES: SPACES,
    },
    nfkc: {
        ASCII: ASCII,
        WIDE: "API キー",
        TURKISH: TURKISH,
        GERMAN: GERMAN,
        LIGATURE: "file",
        COMBINING: "Caf\u00e9",
        SPACES: "a b c\td\ne",
    },
    nfc: {
        ASCII: ASCII,
        WIDE: WIDE,
        TURKISH: TURKISH,
        GERMAN: GERMAN,
        LIGATURE: LIGATURE,
        COMBINING: "Caf\u00e9",
        SPACES: SPACES,
    },
    strip_marks: {
        ASCII: ASCII,
        WIDE: "API キー",
        TURKISH: "Istanbul",
        GERMAN: GERMAN,
        LIGATURE: "file",
        COMBINING: "Cafe",
        SPACES: "a b c\td\ne",
    },
}


@pytest.mark.parametrize(
    ("function", "text", "expected"),
    [
        (function, text, expected)
        for function, table in CASES.items()
        for text, expected in table.items()
    ],
    ids=lambda value: getattr(value, "__name__", None) or ascii(value)[:14],
)
def test_each_folding_on_each_kind_of_text(function, text, expected):
    assert function(text) == expected


def test_the_foldings_part_where_their_docstrings_say():
    """The reasons the module keeps several foldings, each as one comparison."""
    assert fold("Straße") == fold("STRASSE") and fold_lower("Straße") != fold_lower("STRASSE")
    assert fold("ＡＰＩ") == fold("api") and fold_case("ＡＰＩ") != fold_case("api")
    assert fold_path("Cafe\u0301") == fold_path("CAFÉ") and fold_path("Ａ") != fold_path("a")
    assert nfkc("ＡＰＩ") == "API"  # case kept for text quoted back
    assert strip_marks(fold("Éte\u0301")) == "ete"


def test_every_function_of_the_module_is_tested():
    import cmem.text.folding as module

    public = {
        name
        for name, value in vars(module).items()
        if callable(value) and not name.startswith("_") and value.__module__ == module.__name__
    }
    assert public == {function.__name__ for function in CASES}
