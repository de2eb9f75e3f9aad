"""`cmem recall` and its index: ranking on a labelled query set (zh and en), Chinese two-character
queries, an index that is only a cache (deleted, corrupted, edited notes), the archive only on
request, read times, and `cmem context` filling a tight budget with the topic's statements."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cmem.cli import app
from cmem.reading.context import build_context
from cmem.reading.read_times import load_read_times
from cmem.reading.recall import recall_memory
from cmem.reading.search_index import CONVERGENT, index_file, query_terms, search_scope
from cmem.vault.layers import open_vault
from recall_labelled import EXTRA_FILES, QUERIES, is_right
from support import write_files

runner = CliRunner()


@pytest.fixture
def labelled_vault(sample_vault):
    write_files(sample_vault, EXTRA_FILES)
    return sample_vault


def top(vault, query, **kwargs):
    results = recall_memory(vault, query, record=False, **kwargs).results
    return results[0] if results else None


def test_labelled_queries_rank_the_right_statement_first(labelled_vault, capsys):
    vault = open_vault(labelled_vault)
    misses = []
    for query, path, fragment in QUERIES:
        first = top(vault, query)
        if not (first and is_right(first.hit.path, first.hit.text, path, fragment)):
            misses.append((query, first.hit.text if first else None))
    precision = 1 - len(misses) / len(QUERIES)
    zh = [q for q, _, _ in QUERIES if not q.isascii()]
    with capsys.disabled():
        print(
            f"\nrecall precision@1: {precision:.3f} on {len(QUERIES)} labelled queries ({len(zh)} with Chinese); misses: {misses}"
        )
    assert len(QUERIES) >= 20 and len(zh) >= 10
    assert precision >= 0.85, misses


def test_a_two_character_chinese_query_finds_its_statement(labelled_vault):
    vault = open_vault(labelled_vault)
    assert query_terms("房租") == ["房租"]
    first = top(vault, "房租")
    assert first.hit.path == "converged/topics/finance.md" and "房租每月 3200 元" in first.hit.text
    assert first.snippet.startswith("**房租**每月")
    assert "来源" not in first.snippet and first.hit.sources == ("2026-10-18 随手记",)
    assert top(vault, "猫").hit.text.startswith("养了一只猫")  # one character works too


def test_query_text_is_never_fts_syntax(labelled_vault):
    vault = open_vault(labelled_vault)
    for query in [
        '"unbalanced',
        "ruff AND OR NOT",
        "NEAR(ruff pytest)",
        "py*",
        "col:ruff",
        "^ruff",
        "-- ; DROP TABLE rows",
    ]:
        recall_memory(vault, query, record=False)  # no sqlite error reaches the user
    assert top(vault, "ruff AND").hit.path == "converged/topics/python-tooling.md"


def test_index_is_rebuilt_when_deleted(labelled_vault):
    vault = open_vault(labelled_vault)
    assert recall_memory(vault, "咖啡").sync.rebuilt == "created"
    assert recall_memory(vault, "咖啡").sync.rebuilt is None
    for path in index_file(vault, CONVERGENT).parent.iterdir():
        path.unlink()
    again = recall_memory(vault, "咖啡")
    assert again.sync.rebuilt == "created" and "咖啡一天最多两杯" in again.results[0].hit.text
    forced = runner.invoke(
        app, ["recall", "咖啡", "--rebuild", "--json", "--vault", str(labelled_vault)]
    )
    assert json.loads(forced.output)["index"]["rebuilt"] == "created"


@pytest.mark.parametrize("where", ["header", "middle", "truncated"])
def test_index_survives_garbage_bytes(labelled_vault, where):
    vault = open_vault(labelled_vault)
    recall_memory(vault, "咖啡")
    path = index_file(vault, CONVERGENT)
    # fold the WAL into the main file so the damage is where the data is
    import sqlite3

    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    data = bytearray(path.read_bytes())
    if where == "header":
        data[:100] = os.urandom(100)
    elif where == "middle":
        for offset in range(1024, len(data), 1024):
            data[offset : offset + 64] = b"\xff" * 64
    else:
        data = data[: len(data) // 3]
    path.write_bytes(bytes(data))
    result = recall_memory(vault, "咖啡")
    assert "咖啡一天最多两杯" in result.results[0].hit.text
    if where == "header":
        assert result.sync.rebuilt and result.problems


def test_an_edited_note_is_found_by_its_new_words_after_one_call(labelled_vault):
    vault = open_vault(labelled_vault)
    assert top(vault, "咖啡")
    target = labelled_vault / "converged/topics/health.md"
    text = target.read_text("utf-8")
    target.write_text(text.replace("咖啡一天最多两杯", "绿茶一天最多三杯"), encoding="utf-8")
    first = top(vault, "绿茶")
    assert first and "绿茶一天最多三杯" in first.hit.text
    assert all("咖啡" not in r.hit.text for r in recall_memory(vault, "咖啡", record=False).results)
    # the FTS5 table keeps no text: its old words were deleted exactly, none linger in the index
    import sqlite3

    db = sqlite3.connect(index_file(vault, CONVERGENT))
    assert db.execute(
        """SELECT count(*) FROM entries WHERE entries MATCH '"咖啡"'"""
    ).fetchone() == (0,)
    assert db.execute(
        """SELECT count(*) FROM entries WHERE entries MATCH '"绿茶"'"""
    ).fetchone() == (1,)
    db.close()


def test_a_same_size_edit_in_the_same_second_is_seen(labelled_vault):
    vault = open_vault(labelled_vault)
    target = labelled_vault / "converged/topics/home-lab.md"
    assert top(vault, "restic")
    stat = target.stat()
    target.write_text(
        target.read_text("utf-8").replace("restic", "borgs"), encoding="utf-8"
    )  # same length
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same mtime and size as indexed
    first = top(vault, "borgs")
    assert first and "borgs" in first.hit.text


def _age_folders(root, seconds=3600):
    for folder in [root / "converged", *(p for p in (root / "converged").rglob("*") if p.is_dir())]:
        stat = folder.stat()
        os.utime(folder, ns=(stat.st_atime_ns, stat.st_mtime_ns - seconds * 10**9))


def test_unchanged_folders_spare_the_listing_but_not_the_edits(labelled_vault):
    vault = open_vault(labelled_vault)
    top(vault, "房租")
    _age_folders(labelled_vault)
    # the memory index's shortcut (the notes' index lists the vault's notes each time)
    assert search_scope(vault, CONVERGENT, "房租").sync.listed is True  # the new signature
    quiet = search_scope(vault, CONVERGENT, "房租")
    assert quiet.sync.listed is False and quiet.hits
    target = labelled_vault / "converged/topics/finance.md"
    target.write_text(target.read_text("utf-8").replace("房租每月", "月租每月"), encoding="utf-8")
    edited = search_scope(vault, CONVERGENT, "月租")
    assert edited.sync.listed is False and edited.sync.updated == 1
    assert "月租每月" in edited.hits[0].text
    write_files(
        labelled_vault,
        {
            "converged/topics/pets.md": "# Pets\n\n- 年糕每天要吃两顿猫粮（来源：[[2026-09-30 日记]]）\n"
        },
    )
    added = search_scope(vault, CONVERGENT, "猫粮")
    assert added.sync.listed is True and added.sync.added == 1
    assert added.hits[0].path == "converged/topics/pets.md"


def test_a_changed_setting_rebuilds_the_index(labelled_vault):
    vault = open_vault(labelled_vault)
    top(vault, "房租")
    (labelled_vault / ".cmem/config.yaml").write_text(
        "ignore: ['converged/topics/finance.md']\n", encoding="utf-8"
    )
    changed = recall_memory(open_vault(labelled_vault), "房租", record=False)
    assert changed.sync.rebuilt == "created" and not changed.results


def test_added_removed_and_moved_files(labelled_vault):
    vault = open_vault(labelled_vault)
    top(vault, "房租")
    (labelled_vault / "converged/topics/finance.md").rename(
        labelled_vault / "converged/topics/money.md"
    )
    write_files(
        labelled_vault,
        {
            "converged/topics/pets.md": "# Pets\n\n- 年糕每天要吃两顿猫粮（来源：[[2026-09-30 日记]]）\n"
        },
    )
    (labelled_vault / "converged/topics/reading.md").unlink()
    result = recall_memory(vault, "房租", record=False)
    assert result.results[0].hit.path == "converged/topics/money.md"
    assert (result.sync.added, result.sync.removed) == (2, 2)
    assert top(vault, "猫粮").hit.path == "converged/topics/pets.md"
    assert not recall_memory(vault, "三体", record=False).results
    import sqlite3

    db = sqlite3.connect(index_file(vault, CONVERGENT))
    assert db.execute(
        """SELECT count(*) FROM entries WHERE entries MATCH '"三体" OR "刘慈欣"'"""
    ).fetchone() == (0,)
    # 房租 is in money.md's summary, so in the place of its 4 statements; finance.md's 4 are gone
    assert db.execute(
        """SELECT count(*) FROM entries WHERE entries MATCH '"房租"'"""
    ).fetchone() == (4,)
    db.close()


def test_the_archive_only_when_asked(labelled_vault):
    vault = open_vault(labelled_vault)
    # "function calling" is in the memory and in an archived note
    default = recall_memory(vault, "降级 超时", record=False)
    assert default.scope == "vault" and all(
        not r.hit.path.startswith("archive/") for r in default.results
    )
    archived = recall_memory(vault, "降级 超时", archive=True, record=False)
    assert archived.scope == "archive" and archived.results
    assert all(
        r.hit.path.startswith("archive/") and r.hit.layer == "archive" for r in archived.results
    )
    assert all(r.hit.path != vault.checklist_rel for r in archived.results)
    text = runner.invoke(app, ["recall", "降级", "--vault", str(labelled_vault)]).output
    assert "add --archive" in text
    text = runner.invoke(
        app, ["recall", "降级", "--archive", "--vault", str(labelled_vault)]
    ).output
    assert "in the archive" in text and "archive/2026-10/" in text


def test_recall_records_read_times_of_memory_files_only(labelled_vault):
    vault = open_vault(labelled_vault)
    recall_memory(vault, "房租")
    recall_memory(vault, "降级", archive=True)
    times = load_read_times(vault)
    assert "converged/topics/finance.md" in times
    assert not any(path.startswith("archive/") for path in times)


def test_recall_cli_json_and_text(labelled_vault):
    result = runner.invoke(
        app, ["recall", "ruff", "--json", "--limit", "2", "--vault", str(labelled_vault)]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["searched"] == "vault" and len(data["results"]) <= 2
    first = data["results"][0]
    assert set(first) >= {"path", "score", "snippet", "layer", "line", "sources"}
    assert (
        first["layer"] == "situational"
        and "**ruff**" in first["snippet"]
        and first["sources"] == ["2026-10-05 notes"]
    )
    text = runner.invoke(app, ["recall", "ruff", "--vault", str(labelled_vault)]).output
    assert (
        "converged/topics/python-tooling.md:11" in text and "sources: [[2026-10-05 notes]]" in text
    )
    empty = runner.invoke(app, ["recall", "--vault", str(labelled_vault), "--", "***"])
    assert empty.exit_code != 0


def test_an_unwritable_state_folder_still_recalls(labelled_vault, monkeypatch):
    vault = open_vault(labelled_vault)
    blocker = vault.machine_dir / "index"
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("a file where the folder should be")
    result = recall_memory(vault, "房租", record=False)
    assert result.results and any("in memory" in p for p in result.problems)


def test_missing_fts5_is_one_clear_error(labelled_vault, monkeypatch):
    import sqlite3

    from cmem.errors import CmemError
    from cmem.reading import search_index as index

    class NoFts(sqlite3.Connection):
        def execute(self, sql, *args):
            if "fts5" in sql.lower():
                raise sqlite3.OperationalError("no such module: fts5")
            return super().execute(sql, *args)

    real_connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: real_connect(*a, factory=NoFts, **k))
    with pytest.raises(CmemError, match="no FTS5"):
        index.search_scope(open_vault(labelled_vault), CONVERGENT, "房租")


def test_help_imports_neither_sqlite3_nor_mcp():
    code = "import sys; sys.argv = ['cmem', '--help']; from cmem.cli import main; main()"
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True
    )
    modules = {
        line.split("|")[-1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert (
        "sqlite3" not in modules
        and "mcp" not in modules
        and "cmem.reading.search_index" not in modules
    )


def _big_topic(n: int) -> str:
    lines = ["---", "summary: 很长的面试题库", "importance: 2", "---", "# 题库", ""]
    lines += [
        f"- 第 {i} 题：讲讲调度服务里第 {i} 种限流策略的取舍（来源：[[2026-10-19 面试复盘]]）"
        for i in range(n)
    ]
    lines.insert(8, "- 限流用令牌桶，突发流量先排队再丢弃（来源：[[2026-10-19 面试复盘]]）")
    return "\n".join(lines) + "\n"


def test_context_over_budget_includes_the_topics_statements_and_says_what_was_left_out(
    labelled_vault,
):
    write_files(labelled_vault, {"converged/topics/questions.md": _big_topic(300)})
    vault = open_vault(labelled_vault)
    everything = build_context(vault, record=False, budget=10**6)
    budget = everything.tokens - 2000
    context = build_context(vault, topic="令牌桶 限流", budget=budget, record=False)
    assert "converged/topics/questions.md" in [f.path for f in context.omitted]
    assert context.excerpts and context.excerpts[0]["path"] == "converged/topics/questions.md"
    assert "令牌桶" in context.excerpts[0]["text"]
    assert context.tokens <= budget
    data = context.to_json()
    assert data["excerpts"] and data["tokens"] <= budget
    from cmem.reading.context import render_context_markdown

    text = render_context_markdown(context)
    assert "in the files left out (excerpts)" in text and 'cmem recall "令牌桶 限流"' in text
    # without a topic: no excerpts, still the hint
    plain = build_context(vault, budget=budget, record=False)
    assert plain.omitted and not plain.excerpts


@pytest.mark.parametrize("topic", [None, "令牌桶 限流", "房租"])
def test_context_stays_within_the_budget(labelled_vault, topic):
    write_files(labelled_vault, {"converged/topics/questions.md": _big_topic(300)})
    vault = open_vault(labelled_vault)
    fixed = build_context(vault, budget=100, record=False).tokens  # the always-included part alone
    for budget in range(fixed + 50, fixed + 6000, 350):
        context = build_context(vault, topic=topic, budget=budget, record=False)
        assert context.tokens <= budget, (budget, context.tokens)


def test_context_that_fits_is_unchanged(labelled_vault):
    vault = open_vault(labelled_vault)
    context = build_context(vault, topic="房租", budget=10**6, record=False)
    assert not context.omitted and not context.excerpts


def test_warm_search_takes_milliseconds(labelled_vault):
    """Not a timing assertion (docs/design.md §12: speed is measured by bench/recall.py); only that
    a warm call does no indexing work."""
    vault = open_vault(labelled_vault)
    search_scope(vault, CONVERGENT, "房租")
    warm = search_scope(vault, CONVERGENT, "房租").sync
    assert (warm.added, warm.updated, warm.removed, warm.rebuilt) == (0, 0, 0, None)


def test_doctor_reports_and_fix_rebuilds_an_unreadable_index(labelled_vault):
    from cmem.reading.search_index import index_problem

    vault = open_vault(labelled_vault)
    recall_memory(vault, "房租")
    assert index_problem(vault, CONVERGENT) is None
    path = index_file(vault, CONVERGENT)
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    path.write_bytes(b"\x00garbage" * 4096)
    assert "unreadable" in index_problem(vault, CONVERGENT)
    report = runner.invoke(app, ["doctor", "--json", "--vault", str(labelled_vault)])
    assert any(
        "search index" in f["message"] and "doctor --fix" in f["message"]
        for f in json.loads(report.output)["findings"]
    )
    fixed = runner.invoke(app, ["doctor", "--fix", "--yes", "--vault", str(labelled_vault)])
    assert "rebuilt the convergent search index" in fixed.output, fixed.output
    assert index_problem(vault, CONVERGENT) is None
    assert "房租每月" in recall_memory(vault, "房租").results[0].hit.text


def test_recall_finds_what_waits_in_a_pending_note_marked_as_not_converged(make_vault):
    """Issue 33: a fact a pending note holds is found, after memory's own hits, and marked; once
    the note is converged it is memory's statement that answers."""
    root = make_vault(
        {
            "converged/core/profile.md": "# Profile\n\n- Lives in Lisbon (source: [[old]])\n",
            "old.md": "I live in Lisbon.\n",
            ".cmem/state.json": '{"version": 1, "notes": {}, "passes": []}\n',
            "2026-12-01 notes.md": "Moved to Berlin last week, near the canal.\n",
        },
        config_yaml="language: en\n",
        git=True,
    )
    recall = recall_memory(open_vault(root), "Berlin")
    (result,) = recall.results
    assert result.hit.path == "2026-12-01 notes.md" and result.to_json()["pending"] is True
    from cmem.reading.recall import render_recall

    assert "pending note, not yet converged" in render_recall(recall)
    both = recall_memory(open_vault(root), "Lisbon OR Berlin").results
    assert next(r.hit.layer for r in both) != "pending"  # memory first


def test_a_snippet_never_shows_only_a_trace(make_vault):
    old = "a very long old wording about the city where I used to live and work, " * 3
    line = (
        f"- Lives in Berlin now (updated 2026-11-08, was: Lives in Lisbon, {old}) (source: [[n]])"
    )
    root = make_vault(
        {"converged/core/profile.md": f"# Profile\n\n{line}\n", "n.md": "x\n"},
        config_yaml="language: en\n",
        git=True,
    )
    (result,) = recall_memory(open_vault(root), "Lisbon").results
    assert result.plain.startswith("Lives in Berlin now")
