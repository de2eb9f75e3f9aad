"""Text is split into words in one module, `cli/cmem/text/words.py`, and tokens are estimated in
one, `cli/cmem/text/tokens.py` (issue 45): no other module applies a word pattern, and no other
function divides a character count by the characters a token holds."""

from __future__ import annotations

import shutil

import pytest

from support import REPO

PACKAGE = REPO / "cli" / "cmem"


def _copy(tmp_path):
    copy = tmp_path / "cmem"
    shutil.copytree(
        PACKAGE,
        copy,
        ignore=shutil.ignore_patterns("__pycache__", "prompts", "vault_schema", "sample_vault"),
    )
    return copy


def _append(path, code: str) -> int:
    """`code` added at the end of a module; the number of its last line."""
    text = path.read_text("utf-8") + "\n\n" + code
    path.write_text(text, "utf-8")
    return len(text.splitlines())


def test_the_words_module_is_the_one_tokeniser_module(layout):
    assert layout.WORDS_MODULE == "cmem.text.words"
    assert list(layout.tokenisers(PACKAGE)) == [layout.WORDS_MODULE]


def test_no_token_estimate_outside_the_tokens_module(layout):
    assert layout.TOKENS_MODULE == "cmem.text.tokens"
    assert layout.token_estimates(PACKAGE) == []


@pytest.mark.parametrize(
    "split",
    [
        r"re.findall(r'\w+', text)",
        r"re.findall(r'[^\W_]+', text)",
        r"re.split(r'(?<![a-z])[a-z][a-z0-9-]*', text)",
        "HAN_RUN.findall(text)",  # a CJK run of text/scripts.py, imported by name
        "_KEY.finditer(text)",  # a compiled pattern of the module
        "words.pattern(words.KEY_WORD).findall(text)",  # one of text/words.py's, used outside it
    ],
)
def test_a_word_split_written_beside_it_is_found(layout, tmp_path, split):
    """The rule can fail: a copy of the package with one word split added elsewhere is caught."""
    copy = _copy(tmp_path)
    _append(
        copy / "vault" / "moment.py",
        "import re\nfrom cmem.text import words\nfrom cmem.text.scripts import HAN_RUN\n"
        f"_KEY = re.compile(r'[a-z][a-z]+')\n\n\ndef split_again(text):\n    return {split}\n",
    )
    found = layout.tokenisers(copy)
    assert found.get("cmem.vault.moment") == ["split_again"], found


@pytest.mark.parametrize(
    "split",
    [
        "re.findall(r'[A-Za-z]', text)",  # letters counted, not words
        r"re.findall(r'\[\[([^\]]+)\]\]', text)",  # links
        r"re.split(r'\s*,\s*', text)",  # a list's items
        "re.findall(r'[a-z]*x', text)",  # nothing of a word need match
    ],
)
def test_other_patterns_are_no_word_split(layout, tmp_path, split):
    copy = _copy(tmp_path)
    _append(copy / "vault" / "moment.py", f"import re\n\n\ndef other(text):\n    return {split}\n")
    assert "cmem.vault.moment" not in layout.tokenisers(copy)


@pytest.mark.parametrize(
    "estimate",
    [
        "(len(text) + 3) // 4",
        "len(text) / 4",
        "cjk + (length - cjk + 3) // 4",
        "len(text) // CHARS_PER_TOKEN",
    ],
)
def test_a_token_estimate_written_beside_it_is_found(layout, tmp_path, estimate):
    copy = _copy(tmp_path)
    last = _append(
        copy / "reading" / "sizes.py", f"def cost(text, cjk=0, length=0):\n    return {estimate}\n"
    )
    assert layout.token_estimates(copy) == [f"cmem.reading.sizes.cost:{last}"]


def test_a_quarter_of_something_else_is_no_token_estimate(layout, tmp_path):
    copy = _copy(tmp_path)
    _append(copy / "reading" / "sizes.py", "def quarter(total):\n    return total // 4\n")
    assert layout.token_estimates(copy) == []
