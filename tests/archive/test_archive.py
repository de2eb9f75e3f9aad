"""The archive gate (docs/design.md §6): staged lines and their states, lenient parsing of
hand-edited lines, ticked-only vs --all, skipping edited notes, name clashes, one commit, nothing
deleted."""

from __future__ import annotations

import json

import pytest

from cmem.archive.gate import (
    CHANGED,
    MISSING,
    READY,
    REFUSED,
    UNPARSED,
    apply_archive,
    list_staged,
    parse_checklist,
    plan_archive,
    remove_checklist_lines,
)
from cmem.errors import CmemError
from cmem.vault.layers import open_vault
from cmem.vault.state_json import load_state
from history_helpers import CHECKLIST, STATE, fake_pass, git_objects, head, run_main, tick, tree
from support import git

A, B, C = "2026-11-27 notes.md", "2026-11-28 随手记.md", "idea - svelte.md"
PROFILE = "converged/core/profile.md"


@pytest.fixture
def staged(make_vault):
    """Three converged notes, staged by one pass and committed."""
    root = make_vault(
        {
            A: "# notes\n\n- switched to uv\n",
            B: "# 随手记\n\n- 我决定改找深圳的实习\n",
            C: "# svelte\n\n- maybe svelte\n",
            PROFILE: "# Profile\n\n- 喜欢 Python（来源：[[2026-11-20 日记]]）\n",
            "archive/2026-11/2026-11-20 日记.md": "喜欢 Python\n",
        },
        git=True,
    )
    fake_pass(
        root,
        [A, B, C],
        {
            PROFILE: "# Profile\n\n- 喜欢 Python（来源：[[2026-11-20 日记]]）\n- 改找深圳（来源：[[2026-11-28 随手记]]）\n"
            "- 改用 uv（来源：[[2026-11-27 notes]]）\n- 也许用 svelte（来源：[[idea - svelte]]）\n"
        },
    )
    return root


def states(root) -> dict[str, str]:
    return {line.note: line.state for line in list_staged(open_vault(root))}


# --- parsing ----------------------------------------------------------------------------------


def test_hand_edited_lines_are_parsed_leniently_and_nothing_is_dropped():
    text = "\n".join(
        [
            "# Archive checklist",
            "Tick a line (`[ ]` → `[x]`) then run `cmem archive apply`.",
            "## 2026-11-29 · pass 20261129-101500-aaaa",
            "- [ ] [[2026-11-27 notes]] → archive/2026-11/2026-11-27 notes.md · into [[profile]] · sha256:0123456789abcdef",
            "-   [X]   [[2026-11-28 随手记]]   →   archive/2026-11/2026-11-28 随手记.md   ·  into [[profile]], [[job-search]]",
            "* [x] [[idea - svelte|Svelte idea]] -> archive/2026-11/idea - svelte.md · sha256:ABCDEF0123456789",
            "1. [ ] [[dive into rust]] → archive/2026-11/dive into rust.md · into [[rust]] · sha256:00000000aaaaaaaa",
            "- [ ] [[plain]]",
            "- [x] a line whose link was deleted → archive/2026-11/x.md",
            "- [[no checkbox]] → archive/2026-11/no checkbox.md",
            "- an ordinary list item, not a staged line",
            "```",
            "- [ ] [[inside a fence]] → archive/x.md",
            "```",
        ]
    )
    lines = parse_checklist(text)
    by_note = {line.note: line for line in lines if line.note}
    assert [line.line_no for line in lines] == [4, 5, 6, 7, 8, 9, 10]
    first = by_note["2026-11-27 notes"]
    assert (
        first.ticked,
        first.target,
        first.into,
        first.digest,
        first.pass_id,
        first.pass_date,
    ) == (
        False,
        "archive/2026-11/2026-11-27 notes.md",
        ["profile"],
        "0123456789abcdef",
        "20261129-101500-aaaa",
        "2026-11-29",
    )
    spaced = by_note["2026-11-28 随手记"]
    assert (
        spaced.ticked
        and spaced.target == "archive/2026-11/2026-11-28 随手记.md"
        and spaced.into == ["profile", "job-search"]
    )
    assert spaced.digest is None
    starred = by_note["idea - svelte"]
    assert (
        starred.ticked
        and starred.target == "archive/2026-11/idea - svelte.md"
        and starred.digest == "abcdef0123456789"
    )
    assert by_note["dive into rust"].target == "archive/2026-11/dive into rust.md"
    assert by_note["dive into rust"].into == ["rust"]
    assert by_note["plain"].target is None and by_note["plain"].state != UNPARSED
    unparsed = [line for line in lines if line.state == UNPARSED]
    assert [line.line_no for line in unparsed] == [9, 10]
    assert all(line.detail for line in unparsed)


def test_every_state_of_a_staged_line(staged):
    (staged / C).write_text(
        "# svelte\n\n- maybe svelte\n- actually no\n", encoding="utf-8"
    )  # changed
    (staged / A).rename(staged / "renamed.md")  # missing
    with open(staged / CHECKLIST, "a", encoding="utf-8") as handle:
        handle.write("- [x] a line whose link was lost → archive/2026-11/lost.md\n")  # unparsed
    lines = list_staged(open_vault(staged))
    by_note = {line.note: line for line in lines}
    assert by_note["2026-11-28 随手记"].state == READY
    assert by_note["idea - svelte"].state == CHANGED and "edited" in by_note["idea - svelte"].detail
    assert (
        by_note["2026-11-27 notes"].state == MISSING and by_note["2026-11-27 notes"].source is None
    )
    assert by_note[None].state == UNPARSED
    assert by_note["2026-11-28 随手记"].source == B


def test_a_line_without_digest_uses_the_state_and_otherwise_is_not_trusted(staged):
    text = (staged / CHECKLIST).read_text("utf-8")
    text = "\n".join(
        line.split(" · sha256:")[0] if "[[2026-11-28" in line else line for line in text.split("\n")
    )
    text += "- [x] [[never converged]] → archive/2026-11/never converged.md\n"
    (staged / CHECKLIST).write_text(text, encoding="utf-8")
    (staged / "never converged.md").write_text("hello\n", encoding="utf-8")
    result = states(staged)
    assert result["2026-11-28 随手记"] == READY  # state.json has the digest
    assert result["never converged"] == CHANGED  # no digest anywhere: cmem cannot tell


def test_a_missing_note_already_at_its_target_says_so(staged):
    (staged / "archive/2026-11").mkdir(parents=True, exist_ok=True)
    (staged / B).rename(staged / "archive/2026-11" / B)
    line = next(
        line for line in list_staged(open_vault(staged)) if line.note == "2026-11-28 随手记"
    )
    assert line.state == MISSING and "already archived" in line.detail


def test_a_target_outside_the_archive_is_not_followed(staged):
    text = (
        (staged / CHECKLIST)
        .read_text("utf-8")
        .replace("→ archive/2026-11/2026-11-28 随手记.md", "→ ../elsewhere/x.md")
    )
    (staged / CHECKLIST).write_text(text, encoding="utf-8")
    line = next(
        line for line in list_staged(open_vault(staged)) if line.note == "2026-11-28 随手记"
    )
    # refused, not quietly redirected to the pattern's path: the line says to go elsewhere
    assert line.state == REFUSED and "'..'" in line.detail and "nothing is moved" in line.detail
    tick(staged, "2026-11-28 随手记")
    plan = plan_archive(open_vault(staged))
    assert not plan.moves and [s.note for s in plan.skipped] == ["2026-11-28 随手记"]


# --- planning and applying --------------------------------------------------------------------


def test_ticked_only_then_all(staged):
    tick(staged, "2026-11-28 随手记")
    vault = open_vault(staged)
    plan = plan_archive(vault)
    assert [m.source for m in plan.moves] == [B] and len(plan.not_chosen) == 2
    result = apply_archive(vault, plan)
    assert result.status == "applied"
    assert (staged / "archive/2026-11" / B).exists() and not (staged / B).exists()
    assert (staged / A).exists() and (staged / C).exists()
    checklist = (staged / CHECKLIST).read_text("utf-8")
    assert "[[2026-11-28 随手记]]" not in checklist and "[[2026-11-27 notes]]" in checklist

    everything = plan_archive(open_vault(staged), all_lines=True)
    assert sorted(m.source for m in everything.moves) == [A, C]
    apply_archive(open_vault(staged), everything)
    checklist = (staged / CHECKLIST).read_text("utf-8")
    assert (
        "[[" not in checklist and "## 2026-11-29 · pass" not in checklist
    )  # the emptied section went too
    assert checklist.startswith("# ")  # the header stays


def test_apply_is_one_commit_with_the_trailer_and_history_follows(staged):
    tick(staged, "2026-11-28 随手记", "idea - svelte")
    before = head(staged)
    result = apply_archive(open_vault(staged), plan_archive(open_vault(staged)))
    log = git(staged, "log", "--format=%s", f"{before}..HEAD").splitlines()
    # the user's ticks are committed first (a snapshot), then the archive apply
    assert log[0].startswith("cmem: archive 2 notes") and len(log) == 2 and "snapshot" in log[1]
    message = git(staged, "log", "-1", "--format=%B")
    assert (
        f"Cmem-Pass: {result.pass_id}" in message
        and f"Archived: {B} → archive/2026-11/{B}" in message
    )
    assert git(staged, "status", "--porcelain").strip() == ""
    follow = git(
        staged, "log", "--follow", "--format=%s", "--", f"archive/2026-11/{B}"
    ).splitlines()
    assert follow[-1] == "test: initial"  # the note's history came along
    state = load_state(staged / STATE)
    assert f"archive/2026-11/{B}" in state.notes and B not in state.notes
    assert state.passes[-1]["kind"] == "archive" and state.passes[-1]["id"] == result.pass_id
    assert state.passes[-1]["moves"] == [
        {"from": B, "to": f"archive/2026-11/{B}"},
        {"from": C, "to": f"archive/2026-11/{C}"},
    ]


def test_an_edited_note_is_skipped_and_keeps_its_edit(staged):
    tick(staged, "2026-11-28 随手记", "idea - svelte")
    edited = "# svelte\n\n- maybe svelte\n- 其实不是 svelte，我决定用 solid\n"
    (staged / C).write_text(edited, encoding="utf-8")
    plan = plan_archive(open_vault(staged))
    assert [m.source for m in plan.moves] == [B]
    assert [(s.note, s.state) for s in plan.skipped] == [("idea - svelte", CHANGED)]
    apply_archive(open_vault(staged), plan)
    assert (staged / C).read_text("utf-8") == edited
    assert not (staged / "archive/2026-11" / C).exists()
    assert "[x] [[idea - svelte]]" in (staged / CHECKLIST).read_text("utf-8")  # stays staged


def test_a_name_clash_in_the_archive_gets_a_unique_name_and_a_warning(staged):
    existing = "an older note with the same name\n"
    (staged / "archive/2026-11").mkdir(parents=True, exist_ok=True)
    (staged / "archive/2026-11" / B).write_text(existing, encoding="utf-8")
    git(staged, "add", "-A")
    git(staged, "commit", "-q", "-m", "an older archived note")
    tick(staged, "2026-11-28 随手记")
    plan = plan_archive(open_vault(staged))
    move = plan.moves[0]
    assert move.renamed and move.target == "archive/2026-11/2026-11-28 随手记 (2).md"
    assert any("already exists" in w and "[[2026-11-28 随手记 (2)]]" in w for w in plan.warnings)
    apply_archive(open_vault(staged), plan)
    assert (staged / "archive/2026-11" / B).read_text("utf-8") == existing  # never overwritten
    assert (staged / move.target).read_text("utf-8").startswith("# 随手记")


def test_a_duplicate_name_elsewhere_in_the_vault_is_reported(staged):
    (staged / "templates").mkdir()
    (staged / "templates/idea - svelte.md").write_text("template\n", encoding="utf-8")
    tick(staged, "idea - svelte")
    plan = plan_archive(open_vault(staged))
    assert any("templates/idea - svelte.md" in w and "either" in w for w in plan.warnings)


def test_nothing_is_ever_deleted(staged):
    (staged / C).write_text("# svelte\n\n- edited after staging\n", encoding="utf-8")
    with open(staged / CHECKLIST, "a", encoding="utf-8") as handle:
        handle.write("- [x] broken line without a link\n")
    before_files = tree(staged)
    before_objects = git_objects(staged)
    apply_archive(open_vault(staged), plan_archive(open_vault(staged), all_lines=True))
    after_files = tree(staged)
    assert before_objects <= git_objects(staged)
    contents_after = set(after_files.values())
    for rel, data in before_files.items():
        if rel in (CHECKLIST, STATE):
            continue  # rewritten; their old bytes are git objects, checked above
        assert data in contents_after, f"{rel}'s bytes are gone"
    assert "- [x] broken line without a link" in after_files[CHECKLIST].decode()


def test_dry_plan_writes_nothing_and_a_change_after_the_plan_stops_the_apply(staged):
    tick(staged, "2026-11-28 随手记")
    git(staged, "commit", "-qam", "ticks")
    snapshot = tree(staged), head(staged)
    plan = plan_archive(open_vault(staged))
    assert (tree(staged), head(staged)) == snapshot
    (staged / B).write_text(
        "# 随手记\n\n- edited between the plan and the apply\n", encoding="utf-8"
    )
    with pytest.raises(CmemError, match="changed since the plan"):
        apply_archive(open_vault(staged), plan)
    assert (staged / B).exists() and not (staged / "archive/2026-11" / B).exists()


def test_a_note_git_does_not_track_yet_is_moved_and_committed(make_vault):
    root = make_vault({PROFILE: "# Profile\n"}, git=True)
    (root / "fresh.md").write_text("# fresh\n- 我决定用 uv\n", encoding="utf-8")
    # the fake pass does not commit the note itself
    fake_pass(root, ["fresh.md"], {PROFILE: "# Profile\n- 用 uv（来源：[[fresh]]）\n"}, stage=True)
    assert git(root, "ls-files", "fresh.md").strip() == ""
    tick(root, "fresh")
    vault = open_vault(root)
    # the apply's preflight commits the user's pending edits (this note too) before moving it
    apply_archive(vault, plan_archive(vault))
    assert git(root, "ls-files", "archive/2026-11/fresh.md").strip() == "archive/2026-11/fresh.md"
    assert not (root / "fresh.md").exists()


def test_remove_checklist_lines_keeps_the_users_text():
    text = "# header\n\nprose\n\n## 2026-11-29 · pass a\n- [x] [[one]]\n\n## 2026-11-30 · pass b\n- [ ] [[two]]\n\n## my own notes\n"
    assert (
        remove_checklist_lines(text, {6})
        == "# header\n\nprose\n\n## 2026-11-30 · pass b\n- [ ] [[two]]\n\n## my own notes\n"
    )


# --- CLI --------------------------------------------------------------------------------------


def test_cli_list_json_shape(staged, monkeypatch, capsys):
    (staged / C).write_text("edited\n", encoding="utf-8")
    code, out, _ = run_main(
        monkeypatch, capsys, "--vault", str(staged), "archive", "list", "--json"
    )
    assert code == 0
    data = json.loads(out)
    assert {"note", "target", "ticked", "state"} <= set(data["staged"][0])
    assert {entry["note"]: entry["state"] for entry in data["staged"]} == {
        "2026-11-27 notes": "ready",
        "2026-11-28 随手记": "ready",
        "idea - svelte": "changed",
    }


def test_cli_list_text(staged, monkeypatch, capsys):
    code, out, _ = run_main(monkeypatch, capsys, "--vault", str(staged), "archive", "list")
    assert code == 0 and "3 staged, 0 ticked" in out and "archive/2026-11/idea - svelte.md" in out


def test_cli_apply_without_a_terminal_and_without_yes_refuses(staged, monkeypatch, capsys):
    tick(staged, "2026-11-28 随手记")
    before = tree(staged), head(staged)
    code, out, err = run_main(monkeypatch, capsys, "--vault", str(staged), "archive", "apply")
    assert code == 1 and "--yes" in err
    assert (tree(staged), head(staged)) == before


def test_cli_apply_on_a_terminal_asks(staged, monkeypatch):
    import sys

    from typer.testing import CliRunner

    import cmem.cli as cli
    import cmem.commands.common as common

    tick(staged, "2026-11-28 随手记")

    class Terminal:
        def isatty(self):
            return True

    class TerminalSys:  # the confirm gate's view of sys: stdin is a terminal
        stdin = Terminal()

        def __getattr__(self, name):
            return getattr(sys, name)

    monkeypatch.setattr(common, "sys", TerminalSys())
    answers = iter([False, True])
    monkeypatch.setattr("typer.confirm", lambda *args, **kwargs: next(answers))
    runner = CliRunner()
    declined = runner.invoke(cli.app, ["--vault", str(staged), "archive", "apply"])
    assert declined.exit_code == 1 and (staged / B).exists()
    accepted = runner.invoke(cli.app, ["--vault", str(staged), "archive", "apply"])
    assert (
        accepted.exit_code == 0
        and not (staged / B).exists()
        and "archived 1 note" in accepted.output
    )


def test_cli_apply_yes_json_and_dry_run(staged, monkeypatch, capsys):
    code, out, _ = run_main(
        monkeypatch,
        capsys,
        "--vault",
        str(staged),
        "archive",
        "apply",
        "--all",
        "--dry-run",
        "--json",
    )
    assert code == 0 and json.loads(out)["status"] == "dry-run" and (staged / A).exists()
    code, out, _ = run_main(
        monkeypatch, capsys, "--vault", str(staged), "archive", "apply", "--yes", "--json"
    )
    assert code == 0 and json.loads(out)["status"] == "nothing"  # nothing ticked
    code, out, _ = run_main(
        monkeypatch, capsys, "--vault", str(staged), "archive", "apply", "--all", "--yes", "--json"
    )
    data = json.loads(out)
    assert code == 0 and data["status"] == "applied" and len(data["moved"]) == 3 and data["commit"]
    assert {m["to"] for m in data["moved"]} == {f"archive/2026-11/{n}" for n in (A, B, C)}


def test_the_archive_keeps_a_notes_folder_and_files_it_by_its_own_date():
    """Issue 44: `Journal/Daily/2024-04-30.md` went to `archive/<the pass's month>/2024-04-30.md`,
    out of its folder. The folder is kept (names, and so wikilinks, unchanged) and the month
    is the note's own."""
    from cmem.archive.checklist import archive_target, filing_date

    daily = "03 - AREAS/Journal/Daily/2024/04/2024-04-30.md"
    assert (
        archive_target("archive", "{yyyy}-{mm}/{name}", daily, "2024-04-30")
        == "archive/2024-04/03 - AREAS/Journal/Daily/2024/04/2024-04-30.md"
    )
    assert archive_target("archive", "{yyyy}-{mm}/{name}", "idea.md", "2026-11-28") == (
        "archive/2026-11/idea.md"
    )
    assert archive_target("old", "{folder}/{yyyy}/{name}", daily, "2024-04-30") == (
        "old/03 - AREAS/Journal/Daily/2024/04/2024/2024-04-30.md"
    )
    assert archive_target("old", "{folder}/{yyyy}/{name}", "idea.md", "2024-04-30") == (
        "old/2024/idea.md"
    )
    # the date: the note's name, else its frontmatter, else its file time, else the pass's
    assert filing_date("2024-04-30", "", None, "2026-12-03") == "2024-04-30"
    assert filing_date("standup", "date: 2023-02-01\n", None, "2026-12-03") == "2023-02-01"
    assert filing_date("standup", "", 1_700_000_000 * 10**9, "2026-12-03").startswith("2023-11")
    assert filing_date("standup", "", None, "2026-12-03") == "2026-12-03"
