import unicodedata
from pathlib import Path

from cmem.vault import statements
from cmem.vault.config import parse_config
from cmem.vault.statements import (
    format_source,
    format_trace,
    normalize,
    parse_statements,
    split_statement,
)
from support import SAMPLE_VAULT

ZH = parse_config({}, Path("c.yaml")).formats
EN = parse_config({"language": "en"}, Path("c.yaml")).formats


def test_nested_trace_and_sources_zh():
    line = "- 在找深圳 AI Agent 实习（更新于 2026-11-29，原为：在找北京后端实习（更新于 2026-10-01，原为：想读研））（来源：[[2026-11-28 随手记]]、[[日记]]）"
    core, sources, traces = split_statement(line, ZH)
    assert core == "在找深圳 AI Agent 实习"
    assert sources == ["2026-11-28 随手记", "日记"]
    assert [t.date for t in traces] == ["2026-11-29"]
    assert traces[0].older[0].old == "想读研"


def test_source_inside_trace_is_not_the_statements_own():
    line = "- Uses uv (updated 2026-11-29, was: uses pip (source: [[old]])) (source: [[2026-11-28 notes|notes]])"
    core, sources, traces = split_statement(line, EN)
    assert core == "Uses uv"
    assert sources == ["2026-11-28 notes"]
    assert traces[0].old == "uses pip (source: [[old]])"


def test_statement_lines_skip_structure():
    body = "# Title\n\n- one\n```\n- not a statement\n```\n| a | b |\n|---|---|\nplain line\n---\n- \n<!-- hidden -->\n"
    assert [s.core for s in parse_statements(body)] == ["one", "| a | b |", "plain line"]


def test_format_round_trip():
    line = "- x " + format_trace("2026-11-29", "y", ZH) + format_source(["a", "b"], ZH)
    core, sources, traces = split_statement(line, ZH)
    assert (core, sources, traces[0].old) == ("x", ["a", "b"], "y")


def test_normalize_ignores_case_space_and_punctuation():
    assert normalize("推他动手，而非给鼓励！") == normalize("推他动手 而非给鼓励")
    assert normalize("Hello,  World.") == normalize("hello world")


def _normalize_as_before(text: str) -> str:
    """normalize() as it was before full-width signs were narrowed first (issue 13)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    if any(mark in text for mark in ".-\u2212\u2013"):
        text = statements._NUMBER_MARKS.sub(
            lambda m: statements._DECIMAL if m.group() == "." else statements._MINUS, text
        )
    return text.translate(statements._DROP)


def test_narrowing_full_width_signs_first_changes_no_key():
    wide = [chr(code) for code in range(0xFF01, 0xFF5F)]
    cases = [
        "推他动手，而非给鼓励！（真的？）：是；",
        "价格：３．５元，－２度；ＡＢＣ？",
        *wide,
        *(w + "\u0301\u0323" for w in wide),  # combining marks after the sign
        *("e" + w + "\u0301" for w in wide),
        *(
            line
            for path in sorted(SAMPLE_VAULT.rglob("*.md"))
            for line in path.read_text("utf-8").splitlines()
        ),
    ]
    assert [normalize(case) for case in cases] == [_normalize_as_before(case) for case in cases]


def test_a_chinese_line_passes_nfkc_quick_check_once_its_signs_are_narrowed():
    # the quick check is what spares the full normalisation, ~100x its cost (issue 13)
    line = "我决定以后周会改到周二上午（不是周一），大家觉得呢？好：就这样；走！"
    assert not unicodedata.is_normalized("NFKC", line)
    assert unicodedata.is_normalized("NFKC", statements._narrow_punctuation(line))


def test_the_number_marks_pattern_matches_where_its_lookbehind_first_form_does():
    """`_NUMBER_MARKS` starts with its signs so `re` searches for them alone; it must mark the
    same decimal points and minus signs as the plain form, whose lookbehinds come first."""
    import random
    import re

    plain = re.compile(r"(?<=\d)\.(?=\d)|(?<![\w.])[-\u2212\u2013](?=\d)")
    alphabet = list("a1_.-\u2212\u2013 9é中\n,")
    chooser = random.Random(13)
    for _ in range(20_000):
        text = "".join(chooser.choice(alphabet) for _ in range(chooser.randint(0, 10)))
        found = [m.span() for m in statements._NUMBER_MARKS.finditer(text)]
        assert found == [m.span() for m in plain.finditer(text)], text
    assert statements.normalize("3.12 vs 31.2, -5 vs 5, a-5, x.5") == (
        "3\u221912vs31\u22192\u22125vs5a5x5"
    )


def test_dropping_the_common_signs_first_drops_what_the_table_drops():
    """`_drop` takes the common signs out first and leaves letters, digits and `?` without
    asking the table: it must give `text.translate(_DROP)` for any text."""
    import random
    import sys

    # the signs it takes out first are ones the table drops (ASCII's: all of them)
    ascii_drops = bytes(code for code in range(128) if statements._DROP[code] is None)
    assert ascii_drops == statements._ASCII_DROPS
    assert all(statements._DROP[ord(sign)] is None for sign in statements._CJK_DROPS)
    # what lets it skip the table: every character `isalnum` accepts is a letter or a number
    # (categories L and N), which the table keeps, in this Python's Unicode database
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        if char.isalnum():
            assert unicodedata.category(char)[0] in "LN", hex(code)
    chooser = random.Random(13)
    # every category: letters, marks, numbers, each kind of punctuation and symbol, spaces,
    # controls, format characters (zero-width), surrogates, private use, unassigned
    samples = [chr(chooser.randrange(sys.maxunicode + 1)) for _ in range(3000)]
    alphabet = [
        *map(chr, range(128)),
        *statements._CJK_DROPS,
        *"，：（）？！…～＄aZ9é中あ한İßﬁ٣Ⅻ½₂$€+<=>|~?∙−–-.\u0301\u200b\u2028\u3000\ud800\ue000\U0001f600",
        *samples,
    ]
    cases = ["", "?", "??", "a?", "中文？", "价格：３．５元", "İstanbul ß ﬁ", " \t\n"]
    for _ in range(20_000):
        cases.append("".join(chooser.choice(alphabet) for _ in range(chooser.randint(0, 12))))
    cases += [
        line
        for path in sorted(SAMPLE_VAULT.rglob("*.md"))
        for line in path.read_text("utf-8").splitlines()
    ]
    for case in cases:
        assert statements._drop(case) == case.translate(statements._DROP), repr(case)


def test_a_line_without_any_provenance_prefix_splits_as_the_full_parse_does(monkeypatch):
    """`split_statement` skips the trace and source parse when no prefix of either occurs in the
    line: it must give what the full parse gives, for the built-in and configured formats."""
    import random

    from cmem.vault.config import Formats

    custom = Formats(
        source="<<from {links}>>", source_separator="; ", trace="[[[@{date} was {old}]]]"
    )
    bare = Formats(source="{links}", source_separator=",", trace="{date} was {old}")
    pieces = [
        *"abc 中文 -*+1.)[]()（）：，x",
        "(updated ",
        "（更新于 ",
        ", was: ",
        "，原为：",
        "(source: ",
        "（来源：",
        "<<from ",
        ">>",
        "[[[@",
        " was ",
        "]]]",
        " was ",
        "[[note]]",
        "[[a|b]]",
        "2026-11-29",
        "- ",
        "1. ",
        "- [x] ",
        "\u3000",
    ]
    chooser = random.Random(13)
    lines = [
        "".join(chooser.choice(pieces) for _ in range(chooser.randint(0, 14))) for _ in range(6000)
    ]
    lines += [
        line
        for path in sorted(SAMPLE_VAULT.rglob("*.md"))
        for line in path.read_text("utf-8").splitlines()
    ]
    for formats in (None, ZH, EN, custom, bare):
        fast = [split_statement(line, formats) for line in lines]
        with monkeypatch.context() as patched:
            patched.setattr(statements, "_may_hold_provenance", lambda text, formats: True)
            full = [split_statement(line, formats) for line in lines]
        assert fast == full
        # the lines hold both, or the comparison would test the shortcut alone
        assert any(sources for _, sources, _ in full) and any(traces for _, _, traces in full)


# --- every format the config accepts reads back (issue 35) ----------------------------------


def _formats(**values):
    return parse_config({"formats": values}, Path("c.yaml")).formats


def test_a_source_with_no_closing_text_is_its_prefix_and_a_run_of_links():
    dash = _formats(source="— {links}")
    line = format_source(["2026-12-04 notes", "v2.0 plan"], dash)
    core, sources, _ = split_statement(f"- I prefer tea over coffee {line}", dash)
    assert (core, sources) == ("I prefer tea over coffee", ["2026-12-04 notes", "v2.0 plan"])
    # the prefix inside the words is no source: only one followed by links is
    core, sources, _ = split_statement("- Tea — green — over coffee — [[n]]", dash)
    assert (core, sources) == ("Tea — green — over coffee", ["n"])


def test_a_source_of_a_name_holding_brackets_or_dots_reads_back():
    for formats in (EN, ZH, _formats(source="src: {links}."), _formats(source="[from {links}]")):
        names = ["Bob's notes (work)", "v2.0 plan", "a.b.c", "note :)"]
        line = "- I prefer tea " + format_source(names, formats)
        assert split_statement(line, formats)[:2] == ("I prefer tea", names), formats


def test_traces_of_a_custom_format_nest_and_are_read_at_every_depth():
    formats = _formats(source="[from {links}]", trace="[changed {date}, was: {old}]")
    inner = format_trace("2026-12-01", "I use fish", formats)
    outer = format_trace("2026-12-05", f"I use zsh {inner}", formats)
    line = f"- I use bash {outer} " + format_source(["n"], formats)
    core, sources, traces = split_statement(line, formats)
    assert (core, sources) == ("I use bash", ["n"])
    assert traces[0].date == "2026-12-05"
    assert [(t.date, t.old) for t in traces[0].older] == [("2026-12-01", "I use fish")]
