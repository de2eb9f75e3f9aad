from pathlib import Path

from cmem.vault.config import parse_config
from cmem.vault.statements import (
    format_source,
    format_trace,
    normalize,
    parse_statements,
    split_statement,
)

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
