"""The one YAML reader: the plain-subset fast path agrees with the full load on every block it
answers for (the sample vault's frontmatter, the shapes the benchmark vault writes, odd cases,
and blocks made at random from tricky pieces), and leaves the rest to the parser."""

from __future__ import annotations

import datetime
import random

import pytest

from cmem.resources import sample_vault_dir
from cmem.vault import yaml_reader
from cmem.vault.yaml_reader import (
    _plain_frontmatter,
    parse_frontmatter_block,
    read_frontmatter,
    split_frontmatter,
)


def _agrees(block: str) -> bool:
    """Whether the fast path answered (True) or fell back (False); fails on any disagreement."""
    fast = _plain_frontmatter(block)
    full, error = parse_frontmatter_block(block)
    if fast is None:
        return False
    assert error is None, (block, fast, error)
    assert fast == full, (block, fast, full)
    # equal as values and as types: 1 == 1.0 == True would hide a wrong resolution
    assert [(k, type(v)) for k, v in fast.items()] == [(k, type(v)) for k, v in full.items()]
    for key, value in fast.items():
        if isinstance(value, list):
            assert [type(x) for x in value] == [type(x) for x in full[key]], (block, key)
    return True


def _sample_blocks() -> list[str]:
    blocks = []
    for path in sorted(sample_vault_dir().rglob("*.md")):
        block, _, _ = split_frontmatter(path.read_text("utf-8"))
        if block:
            blocks.append(block)
    return blocks


def test_the_sample_vault_frontmatter_is_read_the_same_and_mostly_without_a_parser():
    blocks = _sample_blocks()
    assert blocks
    answered = [_agrees(block) for block in blocks]
    assert sum(answered) >= len(blocks) - 1  # the fast path is what every ordinary note takes


# What notes carry: the benchmark vault's shapes, Obsidian's own keys, and what people type.
PLAIN = [
    "title: 想法 # comment\nconverge: yes\ntags: [a, 'b']\naliases:\n  - x\ncreated: 2026-11-28 10:30\n",
    'title: "quoted: with colon"\ntags:\n  - job-search\n  - 求职\ndate: 2026-11-28\naliases: []\n',
    "title: plain\ntags: []\nconfidence: 0.7\nlayer: resident\nstatus: draft\n",
    'related:\n  - "[[note a]]"\n  - "[[note b]]"\nsource: "session 12"\n',
    "converge: false\n",
    "converge: true\ntags: converge, other\n",
    "count: 42\nneg: -3\nplus: +5\nzero: 0\n",
    "empty:\nnothing: ~\nnull_word: null\n",
    "list:\n- a\n- b\n",
    "url: https://example.com/a?b=c\n",
    'it: it\'s fine\nsay: a "b" c\n',
    "a: x\na: y\n",  # the last one wins, in both
    "# only a comment\n",
    "on_key: On\noff_key: OFF\nmixed: True\n",
    "title: a [b] c\n",
    "title: C sharp # not C#\n",
    "ratio: 1.50\n",
    "flow: [1, 2.5, yes, ~, 2026-01-02, 'quoted', \"dq\"]\n",
]

# Forms only the parser reads right: the fast path must step aside (or, if it answers, agree).
ODD = [
    "title: [broken\n",
    "meta:\n  owner: me\n",
    "tags: |\n  a b\n",
    "a: &x 1\nb: *x\n",
    "yes: 1\n",
    "1: one\n",
    "title : spaced key\n",
    "when: 10:30\n",
    "hex: 0x1f\n",
    "octal: 017\n",
    "big: 1_000\n",
    "inf: .inf\n",
    "bad_date: 2026-13-45\n",
    "stamp: 2026-11-28 10:30:00\n",
    "stamp2: 2026-11-28T10:30:00Z\n",
    "dash: - x\n",
    "q: ? x\n",
    "colon_end: foo:\n",
    "flow: [a, b]\n- c\n",
    "list:\n  - a\n    - b\n",
    "list:\n  - a\n- b\n",
    "list:\n  - [a, b]\n",
    "list:\n  - k: v\n",
    "list:\n  -\n",
    'esc: "a\\nb"\n',
    "single: 'it''s'\n",
    "tab:\tvalue\n",
    "\tindented: tab\n",
    "nbsp: a\u00a0b\n",
    "sep: a\u2028b\n",
    "merge: <<\n",
    "flow: [&a x]\n",
    "flow: [*a]\n",
    "flow: [- x]\n",
    "flow: [a:b]\n",
    "flow: [a, b,]\n",
    "flow: [ ]\n",
    "flow: {a: 1}\n",
    "tag: !!str 1\n",
    "text: a\ttab inside\n",
    "key: value\n  continued\n",
    "quoted_then: 'a' trailing\n",
    'dq_comment: "a" # c\n',
    "sq_comment: 'a' # c\n",
    "plain_quote_end: it's'\n",
    "percent: %x\n",
    "at: @x\n",
    "backtick: `x`\n",
    "int_key_like: 3\n3: three\n",
    "date_key:\n2026-01-01: x\n",
]


@pytest.mark.parametrize("block", PLAIN)
def test_plain_blocks_are_read_without_a_parser_and_as_the_parser_reads_them(block):
    assert _agrees(block), f"fell back to the parser: {block!r}"


@pytest.mark.parametrize("block", ODD)
def test_odd_blocks_agree_or_fall_back(block):
    _agrees(block)


def test_scalars_are_resolved_as_yaml_1_1_resolves_them():
    data = _plain_frontmatter(
        "a: yes\nb: off\nc: ~\nd: 2026-11-28\ne: 7\nf: 0.5\ng: 2026-11-28 10:30\nh: '7'\n"
    )
    assert data == {
        "a": True,
        "b": False,
        "c": None,
        "d": datetime.date(2026, 11, 28),
        "e": 7,
        "f": 0.5,
        "g": "2026-11-28 10:30",  # no seconds: not a timestamp, a string
        "h": "7",
    }


# Pieces of frontmatter lines, put together at random: keys, separators, values and comments that
# sit on the edge of the plain subset. Seeded, so a failure names a block that can be replayed.
_KEYS = ["title", "tags", "yes", "1", "a b", "k-1", "标签", "x.y", "on", "null", "key "]
_VALUES = [
    "",
    "x",
    "想法",
    "yes",
    "No",
    "ON",
    "~",
    "null",
    "0",
    "-1",
    "+2",
    "007",
    "08",
    "1.5",
    "1.",
    ".5",
    "1e3",
    "1_0",
    "0x1f",
    "10:30",
    "2026-11-28",
    "2026-02-30",
    "2026-11-28 10:30",
    "2026-11-28 10:30:00",
    "'q'",
    '"dq"',
    "'a b' # c",
    '"a" # c',
    "a # c",
    "a#b",
    "a: b",
    "a:b",
    "a:",
    "- a",
    "-a",
    "? a",
    ": a",
    "[a, b]",
    "[]",
    "[ ]",
    "[1, yes, ~]",
    "[a, [b]]",
    "[a,]",
    "['a', \"b\"]",
    "[a b, c]",
    "[&x a]",
    "[*x]",
    "[-a, - b]",
    "{a: 1}",
    "&x a",
    "*x",
    "!t a",
    "|",
    ">",
    "%x",
    "@x",
    "`x`",
    "it's",
    "it's'",
    "a\tb",
    "a\u00a0b",
    "<<",
    "=",
    "a [b]",
    "a ]",
    "http://x.y/z",
    "#",
    " x",
    "x ",
]
_ITEMS = ["x", "'x'", "1", "yes", "- x", "[a]", "k: v", "", "&a x", "*a", "x # c", "2026-01-01"]


def _random_block(rng: random.Random) -> str:
    lines = []
    for _ in range(rng.randint(1, 5)):
        roll = rng.random()
        if roll < 0.15:
            lines.append(rng.choice(["# comment", "", "  # indented comment"]))
            continue
        key = rng.choice(_KEYS)
        if roll < 0.4:
            lines.append(f"{key}:")
            indent = rng.choice(["", "  ", "    "])
            for _ in range(rng.randint(0, 3)):
                step = indent if rng.random() < 0.9 else rng.choice(["", "  ", "   "])
                lines.append(f"{step}- {rng.choice(_ITEMS)}".rstrip())
        else:
            lines.append(f"{key}: {rng.choice(_VALUES)}".rstrip())
    return "\n".join(lines) + "\n"


def test_random_blocks_of_tricky_pieces_agree_or_fall_back():
    rng = random.Random(15)
    answered = sum(_agrees(_random_block(rng)) for _ in range(3000))
    assert (
        answered > 300
    )  # the comparison must cover blocks the fast path answers, not only fallbacks


def test_the_scanner_reads_plain_frontmatter_without_the_parser(monkeypatch):
    def no_yaml(block):
        raise AssertionError("the parser ran for plain frontmatter")

    monkeypatch.setattr(yaml_reader, "parse_frontmatter_block", no_yaml)
    assert read_frontmatter("converge: yes\ntags: [a]\n") == (
        {"converge": True, "tags": ["a"]},
        None,
    )


def test_what_the_fast_path_declines_gets_the_full_load_and_its_problem():
    assert read_frontmatter("meta:\n  owner: me\n") == ({"meta": {"owner": "me"}}, None)
    data, problem = read_frontmatter("title: [broken\n")
    assert data == {} and "not valid YAML" in problem
    data, problem = read_frontmatter("a: &x 1\nb: *x\n")
    assert data == {} and "anchor or alias" in problem
    # a block near the size limit is measured by the full path, which refuses it
    data, problem = read_frontmatter("summary: " + "x" * 70_000 + "\n")
    assert data == {} and "over the limit" in problem


def test_a_note_split_keeps_its_body_start():
    assert split_frontmatter("---\na: 1\n---\nbody\n") == ("a: 1\n", 4, None)
    assert split_frontmatter("---\na: 1\n") == (
        None,
        1,
        "frontmatter is not closed by a '---' line",
    )
    assert split_frontmatter("no frontmatter\n") == (None, 1, None)


def test_a_value_the_constructor_refuses_is_a_named_problem_not_a_crash():
    # PyYAML raises ValueError, not a YAMLError, for an impossible date: once it escaped
    data, problem = parse_frontmatter_block("date: 2026-13-45\n")
    assert data == {} and "not valid YAML" in problem and "month" in problem
    assert read_frontmatter("date: 2026-02-30\ntags: [a]\n")[1].startswith("frontmatter is not")


def test_a_plain_block_is_judged_free_of_hazards_as_the_event_scan_judges_it(monkeypatch):
    """`frontmatter_hazard` takes a block the plain reader reads as free of anchors, aliases and
    deep nesting without importing yaml; on every block here it says what YAML's events say."""
    rng = random.Random(13)
    # blocks of 5-12 keys hold more than 8 colons, dashes and brackets: past the quick test
    blocks = PLAIN + ODD + [_long_block(rng) for _ in range(1500)]
    blocks += ["a: &x 1\nb: *x\n", "tags: [&a x, *a]\n" * 3, "k: [[[[[[[[[x]]]]]]]]]\n"]
    fast = [yaml_reader.frontmatter_hazard(block) for block in blocks]
    with monkeypatch.context() as patched:
        patched.setattr(yaml_reader, "_plain_frontmatter", lambda block: None)
        by_events = [yaml_reader.frontmatter_hazard(block) for block in blocks]
    assert fast == by_events

    def past_the_quick_test(b: str) -> bool:
        openers = b.count("[") + b.count("{") + b.count(":") + b.count("- ")
        return "&" in b or "*" in b or openers > yaml_reader.MAX_FRONTMATTER_DEPTH

    shortcut = [b for b in blocks if past_the_quick_test(b) and _plain_frontmatter(b) is not None]
    assert len(shortcut) > 50  # the shortcut was taken often, not only the fallback compared
    assert sum(found is not None for found in fast) > 20  # and hazards were there to find


_PIECES = ["'q: x'", '"a: b"', "8", "2026-11-28", "[a, b, 'c']", "yes", "x # c", "plain words"]
_PIECES += ["[]", "", "a &b", "x*y"]
_HAZARDS = ["&a x", "*a", "[&a x]", "[*a]", "{a: 1}", "- x", "[[x]]", "!!str x", "&a [*b]"]


def _long_block(rng: random.Random) -> str:
    """5-12 keys, now and then a piece only the parser reads (an anchor, an alias, nesting)."""

    def piece() -> str:
        return rng.choice(_HAZARDS if rng.random() < 0.06 else _PIECES)

    lines = []
    for i in range(rng.randint(5, 12)):
        if rng.random() < 0.2:
            lines.append(f"k{i}:")
            lines += [f"  - {piece()}".rstrip() for _ in range(rng.randint(1, 3))]
        else:
            lines.append(f"k{i}: {piece()}".rstrip())
    return "\n".join(lines) + "\n"


def test_lines_read_once_a_run_give_each_note_its_own_values():
    """`_line_form` keeps each distinct line's reading for the run: the same lines in another
    note, or in another place, must read as they would there, and no two notes share a list."""
    first = _plain_frontmatter("tags:\n  - a\n  - b\naliases: [x, y]\n")
    second = _plain_frontmatter("tags:\n  - a\n  - b\naliases: [x, y]\n")
    assert first == second == {"tags": ["a", "b"], "aliases": ["x", "y"]}
    first["tags"].append("c")
    first["aliases"].append("z")
    assert _plain_frontmatter("tags:\n  - a\n  - b\naliases: [x, y]\n") == second
    assert second == {"tags": ["a", "b"], "aliases": ["x", "y"]}
    # an item line after a key with a value, or at another indentation, is not plain there
    assert _plain_frontmatter("tags: x\n  - a\n") is None
    assert _plain_frontmatter("tags:\n  - a\n    - b\n") is None
    assert _agrees("tags:\n- a\n") and _agrees("tags:\n  - a\n")


def test_the_closing_line_is_found_as_in_a_copy_of_the_text_after_the_opening():
    """`split_frontmatter` searches the text from offset 4 rather than a copy of `text[4:]`:
    it must split every text as the search in the copy did."""
    import re

    def split_in_copy(text: str):
        if not text.startswith("---\n") and text != "---":
            return None, 1, None
        end = re.search(r"^(---|\.\.\.)[ \t]*$", text[4:], re.MULTILINE)
        if end is None:
            return None, 1, "frontmatter is not closed by a '---' line"
        block = text[4 : 4 + end.start()]
        return block, block.count("\n") + 3, None

    pieces = ["---", "...", "\n", " ", "\t", "a: 1", "-", "x---", "中"]
    rng = random.Random(13)
    texts = ["", "---", "---\n", "---\n---", "----\n---\n", "---\n...\n", "---\n a\n--- \nb"]
    for _ in range(20_000):
        texts.append("---\n" + "".join(rng.choice(pieces) for _ in range(rng.randint(0, 8))))
    for text in texts:
        assert split_frontmatter(text) == split_in_copy(text), repr(text)


def test_a_quoted_scalar_reads_back_as_its_text_with_either_loader():
    """Every character YAML can carry, one by one and together, through PyYAML's C loader and its
    pure one: the written form is the text again, never folded, refused or cut at a `#`."""
    import yaml

    texts = [chr(code) for code in range(0x2100)] + ["\U0001f600", "\ufeff", "\ufffd"]
    texts += ['a: "b" # c', "\\n", "- item", "yes", "~", "2026-11-30", "x\n\ny", "".join(texts)]
    loaders = [yaml.SafeLoader] + ([yaml.CSafeLoader] if hasattr(yaml, "CSafeLoader") else [])
    for text in texts:
        written = yaml_reader.quoted_scalar(text)
        assert "\n" not in written and "\x85" not in written
        for loader in loaders:
            assert yaml.load(f"key: {written}\n", Loader=loader) == {"key": text}, repr(text)
