"""Validation is bounded and linear in the reply's size (issue 11): it runs under the vault lock,
so a hostile reply must not hold it for minutes.

Work is counted, not timed: the Python lines the parser and validator execute (sys.settrace) for
the same adversarial reply at two sizes. Regex work happens in C, where no counter reaches; so
every pattern of the reading path is checked instead never to nest an unbounded quantifier inside
another (the shape that backtracks with the square or the cube of a line)."""

from __future__ import annotations

import re
import sys

try:  # Python 3.11+
    import re._parser as sre_parse
    from re._constants import MAXREPEAT
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse
    from sre_constants import MAXREPEAT

import pytest

import reply_variants as rv
from cmem.converge.validator import added_lines as lines_module
from cmem.converge.validator import allowed_paths as paths_module
from cmem.converge.validator import response as response_module
from cmem.converge.validator import validate as validate_module
from cmem.converge.validator.response import MAX_RESPONSE_BYTES, parse_response
from cmem.converge.validator.validate import validate_response
from cmem.vault import notes as notes_module
from cmem.vault import statements
from cmem.vault.layers import open_vault


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("linear")
    root = rv.build_corpus_vault(folder / "vault", folder / "outside", git=False)
    vault = open_vault(root)
    return vault, rv.corpus_context(vault)


def _in_profile(*lines: str) -> str:
    return rv.wrap(
        rv.block(rv.PROFILE, rv.PROFILE_TEXT + "\n".join(lines) + "\n"),
        f'<converged note="{rv.NOTE}" into="{rv.PROFILE}"/>\n',
    )


# Each builds a reply of about n characters that once cost more than linear work.
ADVERSARIAL = {
    "dots then a letter (the elision pattern)": lambda n: _in_profile("." * n + "x"),
    "'rest' then spaces (the elision pattern)": lambda n: _in_profile("rest" + " " * n + "x"),
    "repeated English trace openers": lambda n: _in_profile(
        "- x" + "(updated 2026-11-29, was: " * (n // 26)
    ),
    "repeated Chinese trace openers": lambda n: _in_profile(
        "- x" + "（更新于 2026-11-29，原为：" * (n // 16)
    ),
    "repeated source openers": lambda n: _in_profile("- x" + "(source: [[a]]" * (n // 14)),
    "traces nested 64 deep, many times": lambda n: _in_profile(
        *["- x" + "(updated 2026-11-29, was: y" * 64 + ")" * 64] * (n // 1850)
    ),
    "many sources and traces on one line": lambda n: _in_profile(
        "- x" + "(source: [[2026-11-28 随手记]])(updated 2026-11-29, was: z)" * (n // 60)
    ),
    "unclosed brackets": lambda n: _in_profile("- " + "（(" * (n // 2)),
    "unclosed quotes in tags": lambda n: (
        "<convergence>\n" + "<a 'x<b 'x" * (n // 10) + "\n</convergence>\n"
    ),
    "unclosed <dropped> elements": lambda n: (
        "<convergence>\n" + '<dropped file="x">' * (n // 18) + "</dropped>\n</convergence>\n"
    ),
    "quoted <convergence> tags on one line": lambda n: "x " + "<convergence>" * (n // 13),
    "many statements": lambda n: _in_profile(
        *[f"- s{i} (source: [[2026-11-28 随手记]])" for i in range(n // 40)]
    ),
    "many file blocks": lambda n: rv.wrap(
        *[
            rv.block(f"converged/topics/t{i}.md", "- a (source: [[2026-11-28 随手记]])\n")
            for i in range(n // 80)
        ]
    ),
    "many <converged> into one file": lambda n: rv.wrap(
        rv.block(rv.PROFILE, rv.PROFILE_TEXT),
        *[f'<converged note="{rv.NOTE}" into="{rv.PROFILE}"/>\n'] * (n // 60),
    ),
}


def _work(function) -> int:
    """Python lines executed by `function()` (and everything it calls)."""
    count = 0

    def tracer(frame, event, arg):
        nonlocal count
        count += 1
        return tracer

    sys.settrace(tracer)
    try:
        function()
    finally:
        sys.settrace(None)
    return count


# Cases whose every line is parsed in Python are traced at a quarter of the size (tracing costs
# about a microsecond a line); the rest get a 1 MB reply.
HEAVY = {"traces nested 64 deep, many times", "unclosed brackets", "many statements"}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_validation_work_grows_linearly_with_an_adversarial_reply(corpus, name):
    vault, ctx = corpus
    build = ADVERSARIAL[name]
    size = 250_000 if name in HEAVY else 1_000_000
    small, large = build(size // 4), build(size)
    assert len(large) >= 3.5 * len(small)
    validate_response(
        vault, parse_response(small), ctx
    )  # first-use costs (caches, imports) are not the reply's
    work = [
        _work(lambda text=text: validate_response(vault, parse_response(text), ctx))
        for text in (small, large)
    ]
    ratio = work[1] / work[0]
    # four times the input, about four times the work (quadratic would be 16)
    assert ratio <= 5.5, f"{name}: {work[0]} → {work[1]} lines ({ratio:.1f}×)"


def test_a_4mb_reply_is_validated_and_a_larger_one_is_refused_unread(corpus):
    vault, ctx = corpus
    line = "- s (source: [[2026-11-28 随手记]])(updated 2026-11-29, was: " * 3 + "x" + "…" * 40
    body = [line] * (4_000_000 // (len(line.encode()) + 1) - 20)
    text = _in_profile(*body)
    size = len(text.encode())
    assert 3_900_000 < size <= MAX_RESPONSE_BYTES
    validation = validate_response(vault, parse_response(text), ctx)
    assert not validation.ok and validation.writes == {}
    over = text + "x" * (MAX_RESPONSE_BYTES - size + 1)
    work = _work(lambda: parse_response(over))
    refused = parse_response(over)
    assert [e.rule for e in refused.errors] == [
        "13"
    ] and "over the limit of 4000000" in refused.errors[0].message
    assert work < 100  # refused before a single line of it is read


def _unbounded_inside_unbounded(parsed, inside: bool = False) -> bool:
    for op, value in parsed:
        name = str(op)
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, sub = value
            unbounded = high == MAXREPEAT
            if unbounded and inside:
                return True
            if _unbounded_inside_unbounded(sub, inside or unbounded):
                return True
        elif name == "SUBPATTERN":
            if _unbounded_inside_unbounded(value[-1], inside):
                return True
        elif name == "BRANCH":
            if any(_unbounded_inside_unbounded(branch, inside) for branch in value[1]):
                return True
        elif name in ("ASSERT", "ASSERT_NOT"):
            if _unbounded_inside_unbounded(value[1], inside):
                return True
    return False


def _patterns(module) -> dict[str, re.Pattern]:
    return {
        f"{module.__name__}.{name}": value
        for name, value in vars(module).items()
        if isinstance(value, re.Pattern)
    }


def test_no_pattern_on_the_reading_path_nests_unbounded_quantifiers():
    modules = (
        response_module,
        validate_module,
        statements,
        lines_module,
        paths_module,
        notes_module,
    )
    found = {name: pattern for module in modules for name, pattern in _patterns(module).items()}
    assert len(found) >= 20
    nested = [
        name
        for name, pattern in found.items()
        if _unbounded_inside_unbounded(sre_parse.parse(pattern.pattern, pattern.flags))
    ]
    assert nested == []
    # and the check itself sees the shapes that backtrack
    for bad in (r"(a+)+", r"(?:x|y*)*", r"((?:[^<>]|\"[^\"]*\")*)>"):
        assert _unbounded_inside_unbounded(sre_parse.parse(bad)), bad


def test_a_1mb_single_line_statement_in_a_topic_file_is_refused_by_the_topic_cap(corpus):
    vault, ctx = corpus
    line = "- " + "以后都用 uv 管理 Python 环境，" * 50_000 + "（来源：[[2026-11-28 随手记]]）"
    assert len(line.encode()) > 1_000_000
    path = "converged/topics/tools.md"
    text = rv.wrap(
        rv.block(path, "# Tools\n\n" + line + "\n"),
        f'<converged note="{rv.NOTE}" into="{path}"/>\n',
    )
    validation = validate_response(vault, parse_response(text), ctx)
    assert [(e.rule, e.file) for e in validation.errors] == [("13", path)]
    assert "situational_max_tokens" in validation.errors[0].message and validation.writes == {}
