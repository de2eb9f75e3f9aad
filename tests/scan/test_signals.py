"""Cue detection on single notes: the labelled corpus (precision and recall per class), the
traps, masking of code, URLs, comments, link targets and frontmatter, deferral, and the
confirmation and exclusion flags."""

from __future__ import annotations

import pytest

from cmem.scan import signals as signals_module
from cmem.scan.signals import (
    EXCLUDED,
    ONE_OFF,
    VAGUE,
    VENTING,
    detect_line,
    detect_signals,
    read_flags,
    scan_note,
)
from cmem.text.cues import PRIORITY, SIGNAL_CLASSES, cue_set
from cmem.vault import yaml_reader
from cmem.vault.layers import DIVERGENT, NoteFile
from cmem.vault.notes import read_note
from support import TESTS

CORPUS = TESTS / "corpus"
LABELS = (*SIGNAL_CLASSES, "deferred", "none")


@pytest.fixture
def note_of(tmp_path):
    """note_of(text or bytes, name=…) -> Note, read from a real file the way a scan reads it."""
    counter = {"n": 0}

    def _note(content: str | bytes, name: str | None = None):
        counter["n"] += 1
        name = name or f"case {counter['n']}.md"
        path = tmp_path / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
        return read_note(NoteFile(name, path, DIVERGENT))

    return _note


def outcome(note) -> str:
    """What the scanner makes of a one-case note: a class, 'deferred' or 'none'."""
    hits = scan_note(note).hits
    if not hits:
        return "none"
    best = min(hits, key=lambda hit: (PRIORITY[hit.cls], hit.line))
    return "deferred" if best.kind in (VAGUE, VENTING) else best.cls


def load_corpus(name: str) -> list[tuple[str, str]]:
    cases = []
    for number, raw in enumerate((CORPUS / name).read_text("utf-8").split("\n"), 1):
        if not raw.strip() or raw.startswith("#"):
            continue
        label, text = raw.split("\t", 1)
        assert label in LABELS, f"{name}:{number}: unknown label {label!r}"
        cases.append((label, text.replace("\\n", "\n").replace("\\t", "\t")))
    return cases


def scores(results: list[tuple[str, str, str]]) -> dict[str, tuple[float, float, int]]:
    table = {}
    for label in (*SIGNAL_CLASSES, "deferred"):
        tp = sum(1 for expected, got, _ in results if expected == got == label)
        fp = sum(1 for expected, got, _ in results if got == label != expected)
        fn = sum(1 for expected, got, _ in results if expected == label != got)
        table[label] = (
            tp / (tp + fp) if tp + fp else 1.0,
            tp / (tp + fn) if tp + fn else 1.0,
            tp + fn,
        )
    return table


@pytest.mark.parametrize("corpus", ["zh.tsv", "en.tsv"])
def test_corpus_precision_recall(corpus, note_of):
    cases = load_corpus(corpus)
    assert len(cases) >= 60
    results = [(expected, outcome(note_of(text)), text) for expected, text in cases]
    table = scores(results)
    lines = [
        f"{corpus}: {len(cases)} labelled cases",
        f"  {'class':<11} {'precision':>9} {'recall':>7} {'cases':>6}",
    ]
    lines += [f"  {label:<11} {p:>9.2f} {r:>7.2f} {n:>6}" for label, (p, r, n) in table.items()]
    misses = [
        f"  expected {expected:<10} got {got:<10} {text!r}"
        for expected, got, text in results
        if expected != got
    ]
    report = "\n".join(lines + (["  misclassified:"] + misses if misses else []))
    print("\n" + report)
    for label in SIGNAL_CLASSES:
        precision, recall, _ = table[label]
        assert precision >= 0.9 and recall >= 0.9, f"{label} below 0.9\n{report}"


# --- traps: ordinary words that contain a cue --------------------------------------------

TRAPS = [
    "评测脚本改成并发以后又快又好",
    "鲁迅又名周树人",
    "图形不对称",
    "总觉得哪里不对劲",
    "这样写对不对？",
    "Thanks once again to Chen Wei.",
    "Oh, never mind, it was cached.",
    "Tests are not always deterministic.",
    "The documentation is factually wrong in places.",
    "The always-on display drains the battery.",
    "Set alwaysOn to false.",
    "I like to think I am patient.",
    "Tools like uv and pdm are fast.",
    "I meant to call back.",
    "修改用户名的接口",
    "把 PDF 转换成 Markdown",
    "要不要再试一次",
    "特别再说一句",
    "这种场合更正式",
]


@pytest.mark.parametrize("line", TRAPS)
def test_traps_do_not_fire(line):
    assert detect_line(line, cue_set()) is None


@pytest.mark.parametrize(
    "line, cls",
    [
        (
            "不对不对，会议在周四",
            "correction",
        ),  # the first 不对 is a correction, the second is 对不对's
        ("I like strong coffee and early starts", "preference"),
        ("NEVER push to main without a review", "preference"),  # emphasis, not shouting
        ("又熬夜到两点", "recurring"),
        ("Every time I deploy, the cache breaks.", "recurring"),
        ("改用 uv 管理依赖", "decision"),
        (
            "I switched my blog from Ghost to Astro.",
            "decision",
        ),  # the object between verb and from/to
    ],
)
def test_real_cues_fire(line, cls):
    hit = detect_line(line, cue_set())
    assert hit is not None and hit.cls == cls


def test_one_line_gives_one_signal_the_highest_priority():
    hit = detect_line("其实不是 React，我决定改用 Svelte，又一次换框架", cue_set())
    assert (hit.cls, hit.cue) == ("correction", "其实不是")
    hit = detect_line("Switched to uv again; actually, that's wrong, it was pdm", cue_set())
    assert hit.cls == "correction"


def test_english_cues_match_case_insensitively_and_with_curly_apostrophes():
    assert detect_line("I PREFER tabs over spaces", cue_set()).cls == "preference"
    assert detect_line("I don’t like long meetings", cue_set()).cue == "i don't like"


# --- masking -----------------------------------------------------------------------------


def test_never_inside_code_urls_comments_links_or_frontmatter(note_of):
    text = "\n".join(
        [
            "---",
            "summary: 我决定改用 Svelte",
            "tags: [idea]",
            "---",
            "# 笔记",
            "```python",
            "# actually this loop is fast; 其实不是",
            "```",
            "~~~",
            "又失败了",
            "~~~",
            "用 `always allow` 按钮，`我决定` 是代码",
            "见 https://example.com/actually/又 和 www.example.com/我喜欢",
            "<!-- 以后都用英文 -->",
            "<!--",
            "I prefer tabs",
            "-->",
            "读了 [[我决定辞职的那天]]",
            "[链接](https://x.org/never-again)",
        ]
    )
    scanned = scan_note(note_of(text))
    assert scanned.hits == []


def test_text_around_masked_parts_is_still_scanned(note_of):
    text = "```\ncode\n```\n我决定改用 uv，见 `uv sync` 和 https://docs.astral.sh/uv/\n<!-- c\n-->以后都用中文回答\n"
    hits = scan_note(note_of(text)).hits
    assert [(h.line, h.cls) for h in hits] == [(4, "decision"), (6, "preference")]


def test_wikilink_alias_is_the_users_text(note_of):
    hits = scan_note(note_of("见 [[2026-11-28|我决定改用 Svelte 的那天]]\n")).hits
    assert [h.cls for h in hits] == ["decision"]


def test_unclosed_fence_runs_to_the_end(note_of):
    assert scan_note(note_of("正文\n```\n我决定改用 Rust\n又来了\n")).hits == []


# --- deferral -----------------------------------------------------------------------------


def test_one_off_recurring_cue_is_deferred_with_a_reason(note_of):
    signals, deferred = detect_signals(note_of("- 又忘了给年糕买猫粮\n"))
    assert signals == []
    assert deferred[0].kind == ONE_OFF and deferred[0].cls == "recurring" and deferred[0].line == 1
    assert "recurs" in deferred[0].reason


@pytest.mark.parametrize(
    "line",
    [
        "烦死了，我不喜欢开会",
        "我决定明天辞职！！！",
        "Ugh, I hate standups",
        "fml I decided to rewrite it",
        "WHY DOES THE BUILD ALWAYS BREAK ON MONDAYS AGAIN",
    ],
)
def test_venting_is_deferred(line, note_of):
    signals, deferred = detect_signals(note_of(line))
    assert signals == [] and deferred[0].kind == VENTING and "emotional" in deferred[0].reason


def test_an_angry_correction_is_still_a_signal(note_of):
    signals, _ = detect_signals(note_of("不对！！！我住在广州，不是深圳"))
    assert [s.cls for s in signals] == ["correction"]


@pytest.mark.parametrize(
    "line", ["不对。", "我决定了", "I like it.", "Actually, no.", "其实不是这样", "- 10:32 又来了"]
)
def test_vague_lines_are_deferred(line, note_of):
    signals, deferred = detect_signals(note_of(line))
    assert signals == [] and deferred[0].kind == VAGUE and "vague" in deferred[0].reason


# --- confirmation and exclusion -----------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "---\nconverge: true\n---\n又想把博客捡起来了\n不对。\n",
        "又想把博客捡起来了\n不对。\n\n#converge\n",
        "---\ntags: [blog, converge]\n---\n又想把博客捡起来了\n不对。\n",
    ],
)
def test_confirmed_note_turns_deferred_lines_into_signals(text, note_of):
    signals, deferred = detect_signals(note_of(text))
    assert deferred == []
    assert sorted(s.cls for s in signals) == ["correction", "recurring"]  # the class is kept


@pytest.mark.parametrize(
    "text, why",
    [
        ("---\nconverge: false\n---\n我决定改用 Svelte\n", "converge: false"),
        ("我决定改用 Svelte\n#noconverge\n", "#noconverge"),
        ("---\ntags:\n  - diary\n  - noconverge\n---\n我决定改用 Svelte\n", "#noconverge"),
    ],
)
def test_excluded_note_is_one_deferred_entry(text, why, note_of):
    signals, deferred = detect_signals(note_of(text))
    assert signals == []
    assert [(d.line, d.kind) for d in deferred] == [(0, EXCLUDED)] and why in deferred[0].reason


def test_converge_tag_inside_code_does_not_count(note_of):
    signals, deferred = detect_signals(
        note_of("又想把博客捡起来了\n`#converge`\n```\n#converge\n```\n")
    )
    assert signals == [] and deferred[0].kind == ONE_OFF


def test_flags_are_read_without_yaml_for_plain_frontmatter(note_of, monkeypatch):
    def no_yaml(block):
        raise AssertionError("YAML parsed on the hot path")

    monkeypatch.setattr(yaml_reader, "parse_frontmatter_block", no_yaml)
    note = note_of(
        "---\ntitle: 想法 # comment\nconverge: yes\ntags: [a, 'b']\naliases:\n  - x\ncreated: 2026-11-28 10:30\n---\nbody\n"
    )
    flags = read_flags(note)
    assert flags.confirmed and flags.tags == ["a", "b"] and flags.problem is None


def test_unusual_frontmatter_falls_back_to_yaml(note_of):
    flags = read_flags(
        note_of("---\nconverge: true\nmeta:\n  owner: me\ntags: |\n  a b\n---\nbody\n")
    )
    assert flags.confirmed and flags.tags == ["a", "b"] and flags.problem is None


def test_invalid_frontmatter_is_reported_not_fatal(note_of):
    note = note_of("---\ntitle: [broken\n---\n我决定改用 Svelte\n")
    scanned = scan_note(note)
    assert "not valid YAML" in scanned.flags.problem
    assert [h.cls for h in scanned.hits] == ["decision"]


def test_tags_and_links_of_a_note_with_signals(note_of):
    text = "---\ntags: [job-search]\n---\n我决定只投 Agent 岗位 [[job-search]] [[面试|复盘]] #求职 #2026\n`#not-a-tag` C# [[a#b]]\n"
    scanned = scan_note(note_of(text))
    assert scanned.flags.tags == ["job-search", "求职"]
    assert scanned.links == ["job-search", "面试", "a"]


# --- configured cues and odd inputs --------------------------------------------------------


def test_configured_cues_are_added(note_of):
    extra = {"preference": ("gotta use",), "recurring": ("又双叒",)}
    hit = detect_line("gotta use tabs in Makefiles", cue_set(extra))
    assert hit.cls == "preference" and hit.cue == "gotta use"
    assert detect_line("forgotta use", cue_set(extra)) is None  # English cues keep word boundaries
    signals, deferred = detect_signals(note_of("今天又双叒迟到了"), extra)
    assert deferred[0].cue == "又双叒" and deferred[0].cls == "recurring"


def test_crlf_and_bom_notes_keep_their_line_numbers(note_of):
    note = note_of("\ufeff# t\r\n\r\n我决定改用 Svelte\r\n".encode("utf-8"))
    signals, _ = detect_signals(note)
    assert [(s.line, s.cls) for s in signals] == [(3, "decision")]


def test_long_line_excerpt_is_trimmed_around_the_cue():
    line = "前情提要" * 100 + "，我决定改用 Svelte，" + "后话" * 100
    hit = detect_line(line, cue_set())
    assert len(hit.excerpt) <= signals_module.MAX_EXCERPT + 2 and "我决定" in hit.excerpt


def test_notes_without_cues_skip_line_work(note_of, monkeypatch):
    calls = []
    monkeypatch.setattr(signals_module, "detect_line", lambda *a, **k: calls.append(a))
    scan_note(note_of("今天天气不错\n" * 200))
    assert calls == []


def test_the_tag_pattern_finds_what_its_lookbehind_first_form_finds():
    """`_TAG` starts with `#` so `re` searches for that character alone; it must find the same
    tags at the same places as the plain form, whose lookbehind comes first."""
    import random
    import re

    plain = re.compile(r"(?<![\w#&/])#([^\s#\[\](){}<>,.;:!?\"'`，。；：！？、（）「」]+)")
    alphabet = list("ab1_#&/ .,:!?[]()'`\"\t\n，。中é")
    chooser = random.Random(13)
    for _ in range(20_000):
        text = "".join(chooser.choice(alphabet) for _ in range(chooser.randint(0, 12)))
        found = [(m.span(), m.group(1)) for m in signals_module._TAG.finditer(text)]
        assert found == [(m.span(), m.group(1)) for m in plain.finditer(text)], text
    assert [m.group(1) for m in signals_module._TAG.finditer("#a x#b &#c /#d ##e #f")] == [
        "a",
        "f",
    ]


def test_content_units_count_as_with_the_cjk_class():
    """`content_units` tokenises with one non-ASCII character per token and counts the CJK ones,
    instead of compiling the CJK class: the same count as the tokeniser built on that class."""
    import random
    import re

    from cmem.scan import tone
    from cmem.text.scripts import CJK
    from cmem.text.terms import EN_FILLER, ZH_UNIT_STOP

    tokens = re.compile(rf"[a-z0-9][a-z0-9'_-]*|[{CJK}]")

    def reference(text: str, enough: int = 1 << 30) -> int:
        units = 0
        text = tone._TIMES.sub(" ", text) if ":" in text or "-" in text else text
        for match in tokens.finditer(text):
            token = match.group()
            if len(token) == 1 and not token.isascii():
                units += token not in ZH_UNIT_STOP
            elif token not in EN_FILLER and not token.isdigit():
                units += 2
            if units >= enough:
                break
        return units

    pieces = [
        "熬夜",
        "的",
        "了",
        "，",
        "。",
        "é",
        "ｔ",
        "かな",
        "한",
        "the",
        "build",
        "12:30",
        "3",
        " ",
        "-",
        "'",
        "“",
    ]
    chooser = random.Random(13)
    for _ in range(5_000):
        text = "".join(chooser.choice(pieces) for _ in range(chooser.randint(0, 10)))
        for enough in (2, 1 << 30):
            assert tone.content_units(text, enough) == reference(text, enough), text


def test_the_chinese_venting_markers_are_found_as_by_testing_each():
    """`_holds_zh_marker` looks for a marker's first character before the marker: it must say
    what testing every marker says, on lines with markers, their first characters alone, and
    pieces of them."""
    import random

    from cmem.scan import tone

    pieces = [
        *tone._VENTING_ZH,
        *(m[0] for m in tone._VENTING_ZH),
        *(m[1:] for m in tone._VENTING_ZH),
    ]
    pieces += ["我", "好", "要", "真", "心", "，", "又", "ugh", " ", "é", "\U0001f600"]
    chooser = random.Random(13)
    lines = ["", "我", "好烦", "烦好", "心态很好", "我真服", "啊啊", "啊啊啊"]
    for _ in range(20_000):
        lines.append("".join(chooser.choice(pieces) for _ in range(chooser.randint(0, 6))))
    for line in lines:
        assert tone._holds_zh_marker(line) == any(m in line for m in tone._VENTING_ZH), line


def test_a_note_has_blocks_as_the_three_searches_say():
    """`_has_blocks` looks for one character before each opener: it must say what searching
    for the three openers says."""
    import random

    from cmem.scan import signals

    pieces = ["`", "``", "```", "~", "~~~", "<", "<!", "<!--", "-->", "a", "\n", "中"]
    chooser = random.Random(13)
    for _ in range(20_000):
        text = "".join(chooser.choice(pieces) for _ in range(chooser.randint(0, 6)))
        plain = "```" in text or "~~~" in text or "<!--" in text
        assert signals._has_blocks(text) == plain, text
