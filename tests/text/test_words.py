"""`text/words.py`: the one module that splits text into words and terms (issue 45)."""

from __future__ import annotations

import random
import re

from cmem.converge.validator.check_invention import word_tokens
from cmem.reading.index_query import query_terms
from cmem.text.scripts import CJK
from cmem.text.words import script_parts, word_runs, words_and_bigrams


def test_script_parts_are_each_word_runs_cjk_split():
    rng = random.Random(13)
    alphabet = ["a", "b", "中", "文", "ア", "한", "1", "x", "ｘ", "。", " ", "_", "・"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        expected = [
            (part, bool(re.fullmatch(f"[{CJK}]+", part)))
            for run in word_runs(text)
            for part in re.split(f"([{CJK}]+)", run)
            if part
        ]
        assert script_parts(text) == expected, text


def test_search_terms_and_overlap_words_are_one_split():
    """A recall query's terms and the invention check's words: the same words and bigrams, each
    leaving out its own function words."""
    text = "用uv管理依赖, not pip"
    assert words_and_bigrams(text) == ["用", "uv", "管理", "理依", "依赖", "not", "pip"]
    assert query_terms(text) == ["用", "uv", "管理", "理依", "依赖", "pip"]
    assert word_tokens(text) == {"用", "uv", "管理", "理依", "依赖", "pip"}


def test_a_mark_inside_the_kana_block_is_no_search_term():
    """`・` (and `゠`) sit in the kana block but are punctuation: a query term of one alone is a
    phrase FTS5 finds in no row, so a query holding one never matched all its terms."""
    assert query_terms("uv・python") == ["uv", "python"]
    assert query_terms("ジョン・スミス") == ["ジョ", "ョン", "スミ", "ミス"]
