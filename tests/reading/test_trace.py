"""`cmem trace` (docs/design.md §8): a statement's nested traces unfold into dated versions, oldest
first, each tied to the pass that wrote it; a topic gathers matching statements across the layer."""

from __future__ import annotations

import json

import pytest

from cmem.errors import CmemError
from cmem.reading.trace import trace_target, unfold
from cmem.vault.layers import open_vault
from history_helpers import fake_pass, run_main

JOBS = "converged/topics/job-search.md"
V0 = "- 方向：大模型微调（来源：[[a]]）\n"
V1 = "- 方向：RAG 应用开发（更新于 2026-10-05，原为：大模型微调）（来源：[[b]]）\n"
V2 = "- 方向：Agent 基础设施（更新于 2026-10-20，原为：RAG 应用开发（更新于 2026-10-05，原为：大模型微调））（来源：[[c]]）\n"
HEAD = "---\nsummary: 找实习\n---\n# 找工作\n\n## 目标\n\n"
STEADY = "- 城市：深圳（来源：[[a]]）\n"


@pytest.fixture
def evolving(make_vault, monkeypatch):
    """A topic file whose direction changed twice, each change a pass on its own date."""
    root = make_vault({"a.md": "- a\n", "b.md": "- b\n", "c.md": "- c\n"}, git=True)
    for note, body, pass_id, date in (
        ("a.md", V0 + STEADY, "20261001-100000-aaaa", "2026-10-01"),
        ("b.md", V1 + STEADY, "20261005-100000-bbbb", "2026-10-05"),
        ("c.md", V2 + STEADY, "20261020-100000-cccc", "2026-10-20"),
    ):
        monkeypatch.setenv("GIT_COMMITTER_DATE", f"{date}T10:00:00+00:00")
        monkeypatch.setenv("GIT_AUTHOR_DATE", f"{date}T10:00:00+00:00")
        fake_pass(root, [note], {JOBS: HEAD + body}, pass_id=pass_id, date=date, stage=False)
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    monkeypatch.delenv("GIT_AUTHOR_DATE")
    return root


def test_unfold_nested_traces_oldest_first():
    versions = [v for v, _ in unfold(V2.strip())]
    assert [(v.text, v.since, v.until) for v in versions] == [
        ("大模型微调", None, "2026-10-05"),
        ("RAG 应用开发", "2026-10-05", "2026-10-20"),
        ("方向：Agent 基础设施", "2026-10-20", None),
    ]
    assert versions[-1].sources == ["c"] and versions[-1].current


def test_trace_a_file_with_nested_traces(evolving):
    result = trace_target(open_vault(evolving), JOBS)
    assert result.mode == "file" and result.title == "找实习"
    direction, city = result.statements
    assert direction.heading == "目标" and direction.changed and not city.changed
    assert [(v.text, v.since, v.until, v.pass_id, v.origin) for v in direction.versions] == [
        ("大模型微调", "2026-10-01", "2026-10-05", "20261001-100000-aaaa", "pass"),
        ("RAG 应用开发", "2026-10-05", "2026-10-20", "20261005-100000-bbbb", "pass"),
        ("方向：Agent 基础设施", "2026-10-20", None, "20261020-100000-cccc", "pass"),
    ]
    assert all(v.commit for v in direction.versions)
    assert (
        city.versions[0].pass_id == "20261001-100000-aaaa"
        and city.versions[0].since == "2026-10-01"
    )


def test_trace_by_name_and_text_timeline(evolving, monkeypatch, capsys):
    code, out, _ = run_main(monkeypatch, capsys, "--vault", str(evolving), "trace", "job-search")
    assert code == 0
    assert "1 of 2 statements changed over time" in out
    lines = out.splitlines()
    order = [
        next(i for i, line in enumerate(lines) if text in line)
        for text in ("大模型微调", "RAG 应用开发", "Agent 基础设施")
    ]
    assert order == sorted(order)
    assert "now" in lines[order[2]] and "2026-10-20" in lines[order[2]]
    assert "pass 20261005-100000-bbbb" in out and "from [[c]]" in out
    assert "\x1b[" not in out  # NO_COLOR in tests: plain text


def test_trace_json(evolving, monkeypatch, capsys):
    code, out, _ = run_main(monkeypatch, capsys, "--vault", str(evolving), "trace", JOBS, "--json")
    data = json.loads(out)
    assert code == 0 and data["mode"] == "file" and data["files"] == [JOBS]
    versions = data["statements"][0]["versions"]
    assert [v["since"] for v in versions] == ["2026-10-01", "2026-10-05", "2026-10-20"]
    assert {"text", "since", "until", "sources", "pass", "commit", "origin", "current"} <= set(
        versions[0]
    )


def test_trace_a_topic_across_files_oldest_first(sample_vault):
    result = trace_target(open_vault(sample_vault), "深圳")
    assert result.mode == "topic"
    assert set(result.files) == {"converged/core/profile.md", "converged/topics/job-search.md"}
    first = result.statements[0]
    assert (
        first.path == "converged/core/profile.md" and first.versions[0].text == "在找北京后端实习"
    )
    # the sample vault's history starts after its passes: state.json names the pass of that day
    assert (
        first.versions[-1].pass_id == "20261020-213000-a1b2"
        and first.versions[-1].origin == "state"
    )
    dates = [s.first_date or "9999" for s in result.statements]
    assert dates == sorted(dates)


def test_trace_a_topic_with_several_words_and_no_match(sample_vault, monkeypatch, capsys):
    result = trace_target(open_vault(sample_vault), "Agent 实习")
    assert result.statements and all(
        "agent" in s.text.casefold() and "实习" in s.text for s in result.statements
    )
    code, out, _ = run_main(
        monkeypatch, capsys, "--vault", str(sample_vault), "trace", "no", "such", "thing"
    )
    assert code == 0 and "nothing in the memory files mentions" in out


def test_a_file_outside_the_vault_is_an_error(evolving, tmp_path):
    outside = tmp_path / "elsewhere.md"
    outside.write_text("- x\n", encoding="utf-8")
    with pytest.raises(CmemError, match="outside the vault"):
        trace_target(open_vault(evolving), str(outside))
