"""`cmem log` and `cmem diff` (docs/design.md §9): cmem's commits read back as history."""

from __future__ import annotations

import json

import pytest

from cmem.archive.gate import apply_archive, plan_archive
from cmem.archive.undo import apply_undo, plan_undo
from cmem.errors import CmemError
from cmem.render.history import render_diff
from cmem.render.reports import set_color
from cmem.steps.pass_log import find_cmem_commit, list_cmem_commits, pass_diff
from cmem.vault.layers import open_vault
from history_helpers import fake_pass, run_main, tick
from support import git

PROFILE = "converged/core/profile.md"


@pytest.fixture
def history_vault(make_vault):
    root = make_vault({"a.md": "- 我决定 a\n", "b.md": "- 我决定 b\n", PROFILE: "# P\n"}, git=True)
    fake_pass(
        root,
        ["a.md"],
        {PROFILE: "# P\n\n- a（来源：[[a]]）\n"},
        pass_id="20261101-100000-aaaa",
        date="2026-11-01",
    )
    git(root, "commit", "-q", "--allow-empty", "-m", "an unrelated commit of the user's")
    fake_pass(
        root,
        ["b.md"],
        {PROFILE: "# P\n\n- a（来源：[[a]]）\n- b（来源：[[b]]）\n"},
        pass_id="20261102-100000-bbbb",
        date="2026-11-02",
    )
    tick(root, "a")
    apply_archive(open_vault(root), plan_archive(open_vault(root)))
    return root


def test_log_lists_passes_and_archive_applies_newest_first(history_vault):
    commits = list_cmem_commits(open_vault(history_vault))
    assert [c.kind for c in commits] == ["archive", "converge", "converge"]
    archive, second, first = commits
    assert archive.notes == ["a.md"] and archive.fields["Archived"] == [
        "a.md → archive/2026-11/a.md"
    ]
    assert (
        second.pass_id == "20261102-100000-bbbb"
        and second.notes == ["b.md"]
        and second.engine == "builtin"
    )
    assert PROFILE in second.memory_files and ".cmem/state.json" not in second.memory_files
    assert first.time and first.sha


def test_log_json_limit_and_undone(history_vault, monkeypatch, capsys):
    apply_undo(open_vault(history_vault), plan_undo(open_vault(history_vault)))
    code, out, _ = run_main(monkeypatch, capsys, "--vault", str(history_vault), "log", "--json")
    entries = json.loads(out)["passes"]
    assert code == 0 and [e["kind"] for e in entries] == ["undo", "archive", "converge", "converge"]
    assert (
        entries[1]["undone_by"] == entries[0]["commit"]
        and entries[0]["undoes"] == entries[1]["commit"]
    )
    assert {"id", "kind", "commit", "time", "notes", "files", "engine", "model", "warnings"} <= set(
        entries[2]
    )
    code, out, _ = run_main(
        monkeypatch, capsys, "--vault", str(history_vault), "log", "--limit", "1", "--json"
    )
    assert len(json.loads(out)["passes"]) == 1
    code, out, _ = run_main(monkeypatch, capsys, "--vault", str(history_vault), "log")
    assert code == 0 and "(undone)" in out and "20261102-100000-bbbb" in out and "moved" in out


def test_log_of_a_vault_without_passes(make_vault, monkeypatch, capsys):
    root = make_vault({}, git=True)
    code, out, _ = run_main(monkeypatch, capsys, "--vault", str(root), "log")
    assert code == 0 and "no passes yet" in out


def test_find_a_pass_by_id_prefix_or_commit(history_vault):
    vault = open_vault(history_vault)
    assert find_cmem_commit(vault).kind == "archive"
    assert find_cmem_commit(vault, "20261101").pass_id == "20261101-100000-aaaa"
    commit = find_cmem_commit(vault, "20261102-100000-bbbb")
    assert find_cmem_commit(vault, commit.sha[:7]).sha == commit.sha
    with pytest.raises(CmemError, match="matches 2 passes"):
        find_cmem_commit(vault, "2026110")
    with pytest.raises(CmemError, match="no cmem pass"):
        find_cmem_commit(vault, "nope")


def test_diff_shows_the_memory_files_and_the_checklist_not_the_state(history_vault):
    result = pass_diff(open_vault(history_vault), "20261102")
    assert f"+++ b/{PROFILE}" in result.diff and "+- b（来源：[[b]]）" in result.diff
    assert "ARCHIVE-CHECKLIST.md" in result.diff and "state.json" not in result.diff
    archive = pass_diff(open_vault(history_vault))
    assert "rename from a.md" in archive.diff and "rename to archive/2026-11/a.md" in archive.diff


def test_cli_diff_is_plain_off_a_terminal_and_coloured_on_one(history_vault, monkeypatch, capsys):
    code, out, _ = run_main(
        monkeypatch, capsys, "--vault", str(history_vault), "diff", "20261102-100000-bbbb"
    )
    assert code == 0 and "+- b（来源：[[b]]）" in out and "\x1b[" not in out
    set_color(True)  # click strips colour off a terminal, so the renderer is checked directly
    try:
        coloured = render_diff(pass_diff(open_vault(history_vault), "20261102-100000-bbbb"))
    finally:
        set_color(None)
    assert "\x1b[32m+- b（来源：[[b]]）" in coloured
    code, _, err = run_main(monkeypatch, capsys, "--vault", str(history_vault), "diff", "nope")
    assert code == 1 and "cmem log" in err
