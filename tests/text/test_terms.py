"""text/terms: one place for stop words; the accidental gaps between the old lists are closed."""

from __future__ import annotations

from cmem.converge.builtin.line_words import terms
from cmem.converge.validator.validate import word_tokens
from cmem.scan.recurrence import phrase_keys
from cmem.scan.tone import content_units
from cmem.text.terms import EN_FILLER, EN_GRAMMAR, EN_KEY_STOP, EN_STOP


def test_every_english_list_leaves_out_the_grammar_words():
    for stop in (EN_STOP, EN_FILLER, EN_KEY_STOP):
        assert stop >= EN_GRAMMAR


def test_the_builtin_engine_no_longer_takes_the_or_pronouns_for_topics():
    # words.EN_STOP had no "the", "his", "her", "their": two lines shared a topic through them
    assert terms("the plan for their move") == frozenset({"plan", "move"})


def test_a_line_of_grammar_words_says_nothing_to_the_scan():
    # signals' list had "i" and "you" but not "we", "they", "with": "with them" counted 4 units
    assert content_units("with them") == 0
    assert content_units("we will") == 0
    assert content_units("deploy friday") == 4


def test_each_caller_keeps_what_it_leaves_in():
    # the validator leaves out grammar only: "always" and "never" still carry a statement
    assert {"always", "never", "uv"} <= word_tokens("always use uv, never pip")
    # recurrence keys drop time words the builtin engine keeps
    assert "today" in terms("deploy today") and "today" not in phrase_keys("deploy today")


def test_bigrams_and_the_one_character_run_each_caller_keeps():
    from cmem.reading.context import topic_terms
    from cmem.reading.search_index import query_terms
    from cmem.text.terms import bigrams

    assert bigrams("熬夜刷题") == ["熬夜", "夜刷", "刷题"]
    assert bigrams("熬") == []
    # a one-character query is still a query, in recall and in context
    assert query_terms("猫") == ["猫"] and topic_terms("猫") == ["猫"]
    assert "夜" not in word_tokens("熬夜") and "猫" in word_tokens("猫")


def test_a_recall_query_leaves_out_its_function_words_en_and_zh():
    from cmem.reading.index_query import query_terms
    from cmem.text.terms import is_query_stop

    assert query_terms("How long has Melanie been married?") == ["long", "melanie", "married"]
    assert query_terms("What is Jon's dog called") == ["jon", "dog", "called"]
    assert query_terms("我的猫叫什么") == ["猫叫", "叫什"]
    assert [t for t in ("了解", "的确", "去了", "我们", "什么", "猫") if is_query_stop(t)] == [
        "去了",
        "我们",
        "什么",
    ]
    # a query of function words alone keeps them: it is still a query
    assert query_terms("what did") == ["what", "did"]
