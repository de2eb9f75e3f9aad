"""text/scripts: the one CJK definition, and the choices each use makes of it."""

from __future__ import annotations

import re
import sys

from cmem.converge.builtin.line_words import terms
from cmem.converge.builtin.phrasing import is_chinese
from cmem.reading.context import topic_terms
from cmem.scan.recurrence import phrase_keys
from cmem.scan.tone import content_units
from cmem.text.scripts import CJK, cjk_count, han_count, is_cjk, is_han
from cmem.text.tokens import estimate_tokens


def test_han_covers_unified_extension_a_and_compatibility_ideographs():
    for ch in "中\u4e00\u9fff\u3400\u4dbf\uf900":
        assert is_han(ch) and is_cjk(ch), hex(ord(ch))
    assert not is_han("a") and not is_han("é") and not is_han("，")


def test_kana_and_hangul_are_cjk_but_not_han_and_punctuation_is_neither():
    assert is_cjk("か") and is_cjk("カ") and is_cjk("한")
    assert not is_han("か") and not is_han("한")
    assert not is_cjk("，") and not is_cjk("。") and not is_cjk("Ａ")
    assert cjk_count("日本語のテキスト, ok") == 8
    assert han_count("日本語のテキスト, ok") == 3


def test_the_code_point_checks_and_counts_agree_with_the_classes_on_every_code_point():
    """is_han, is_cjk and the counts (made from runs and ranges, not single-character classes)
    answer as the classes HAN and CJK do, for every code point of the first two planes."""
    from cmem.text.scripts import HAN

    han, cjk = re.compile(f"[{HAN}]"), re.compile(f"[{CJK}]")
    every = "".join(chr(code) for code in range(0x20000) if not 0xD800 <= code <= 0xDFFF)
    assert han_count(every) == len(han.findall(every))
    assert cjk_count(every) == len(cjk.findall(every))
    for ch in (
        every[::7] + "\u3400\u4dbf\u4e00\u9fff\uf900\ufaff\u3040\u30ff\uac00\ud7af\u33ff\ufb00"
    ):
        assert is_han(ch) == bool(han.match(ch)) and is_cjk(ch) == bool(cjk.match(ch)), hex(ord(ch))


def test_the_token_estimate_still_counts_punctuation_and_full_width_forms_one_each():
    assert estimate_tokens("你好，世界。") == 6
    assert estimate_tokens("ＡＢ") == 2


def test_extension_a_characters_are_query_terms_for_context():
    # context used U+4E00–U+9FFF only: a topic in Extension A characters found nothing
    assert topic_terms("\u3400\u3401") == ["\u3400\u3401"]


def test_kana_alone_does_not_make_a_line_chinese():
    assert is_chinese("我决定用 uv")
    assert not is_chinese("ひらがなだけ ok")


def test_no_recurrence_key_or_content_unit_straddles_cjk_punctuation():
    # signals used U+2E80–U+9FFF, which holds CJK punctuation: "夜，" was a key and "，" a unit
    assert all("，" not in key for key in phrase_keys("又熬夜，刷题"))
    assert content_units("，，，") == 0
    assert content_units("熬夜") == 2


def test_builtin_terms_are_han_bigrams():
    assert "熬夜" in terms("又熬夜")


def test_is_cjk_answers_as_the_cjk_class_does_for_every_code_point():
    # is_cjk compares code points instead of matching the compiled class (issue 13)
    cjk_char = re.compile(f"[{CJK}]")
    for code in range(sys.maxunicode + 1):
        ch = chr(code)
        assert is_cjk(ch) == (cjk_char.match(ch) is not None), hex(code)
