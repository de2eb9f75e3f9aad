"""`cmem undo` (docs/design.md §9): a pass and an archive apply are reverted by a new commit; the
pass's notes are pending again and leave the checklist; later commits to the same files refuse
it."""

from __future__ import annotations

import json

import pytest

from cmem.archive.gate import apply_archive, plan_archive
from cmem.archive.undo import apply_undo, plan_undo, revert_checklist
from cmem.converge.pipeline import PassOptions, run_pass
from cmem.errors import CmemError
from cmem.steps.pass_log import list_cmem_commits
from cmem.vault.layers import open_vault
from cmem.vault.state_json import load_state
from history_helpers import CHECKLIST, STATE, fake_pass, git_objects, head, run_main, tick, tree
from support import git

PROFILE = "converged/core/profile.md"
NOTE = "2026-11-28 随手记.md"
PROFILE_TEXT = """---
summary: 我是谁
importance: 8
---
# Profile

- 推他动手而非给鼓励（来源：[[2026-11-20 日记]]）
- 在找北京后端实习（来源：[[2026-11-20 日记]]）
- 喜欢用 Python 写脚本（来源：[[2026-11-20 日记]]）
- 早上效率最高（来源：[[2026-11-20 日记]]）
"""


@pytest.fixture
def vault_root(make_vault):
    return make_vault(
        {
            PROFILE: PROFILE_TEXT,
            NOTE: "# 随手记\n\n- 其实不是北京，我决定改找深圳的 AI Agent 实习。\n- 以后都用 uv 管理 Python 环境，不要再用 pip。\n",
            "archive/2026-11/2026-11-20 日记.md": "推他动手而非给鼓励。在找北京后端实习。喜欢用 Python 写脚本。早上效率最高。\n",
            CHECKLIST: "# Archive checklist\n",
            STATE: '{"version": 1, "notes": {}, "passes": []}\n',
        },
        git=True,
    )


def converge(root):
    result = run_pass(open_vault(root), PassOptions(engine="builtin"))
    assert result.status == "applied", result.errors
    return result


def memory(root) -> dict[str, bytes]:
    return {
        rel: data
        for rel, data in tree(root).items()
        if rel.startswith("converged/") or rel == CHECKLIST
    }


def test_undo_of_a_pass(vault_root):
    before = memory(vault_root)
    result = converge(vault_root)
    assert memory(vault_root) != before and NOTE in load_state(vault_root / STATE).notes
    plan = plan_undo(open_vault(vault_root))
    assert plan.target.sha == result.commit and plan.target.kind == "converge" and not plan.refused
    assert PROFILE in [f.path for f in plan.files] and all(
        f.action in ("restore", "remove") for f in plan.files
    )
    undone = apply_undo(open_vault(vault_root), plan)
    assert memory(vault_root) == before  # memory files and the checklist as before the pass
    state = load_state(vault_root / STATE)
    assert NOTE not in state.notes  # pending again
    assert [p["kind"] for p in state.passes] == ["undo"] and state.passes[0][
        "undoes"
    ] == result.pass_id
    message = git(vault_root, "log", "-1", "--format=%B")
    assert (
        message.startswith("cmem: undo converge")
        and f"This reverts commit {result.commit}" in message
    )
    assert f"Cmem-Undoes: {result.commit}" in message and f"Cmem-Pass: {undone.pass_id}" in message
    assert git(vault_root, "status", "--porcelain").strip() == ""
    commits = list_cmem_commits(open_vault(vault_root))
    assert commits[1].sha == result.commit and commits[1].undone_by == undone.commit
    assert plan_undo(open_vault(vault_root)).target is None  # nothing left to undo


def test_the_undone_notes_are_pending_for_the_scanner(vault_root):
    scan = pytest.importorskip("cmem.scan.scanner")
    converge(vault_root)
    assert NOTE not in [p.rel for p in scan.scan_vault(open_vault(vault_root)).pending]
    apply_undo(open_vault(vault_root), plan_undo(open_vault(vault_root)))
    assert NOTE in [p.rel for p in scan.scan_vault(open_vault(vault_root)).pending]


def test_undo_of_an_archive_apply(vault_root):
    converge(vault_root)
    tick(vault_root, "2026-11-28 随手记")
    note_bytes = (vault_root / NOTE).read_bytes()
    apply_archive(open_vault(vault_root), plan_archive(open_vault(vault_root)))
    assert not (vault_root / NOTE).exists()
    # the month folder is the apply's own (today's), not the note's
    (archived,) = (vault_root / "archive").glob(f"*/{NOTE}")
    month = f"archive/{archived.parent.name}"
    checklist_before_apply = git(vault_root, "show", f"HEAD~1:{CHECKLIST}")
    plan = plan_undo(open_vault(vault_root))
    assert plan.target.kind == "archive"
    assert [(f.action, f.from_path, f.path) for f in plan.files] == [
        ("move-back", f"{month}/{NOTE}", NOTE)
    ]
    apply_undo(open_vault(vault_root), plan)
    assert (vault_root / NOTE).read_bytes() == note_bytes and not (
        vault_root / month / NOTE
    ).exists()
    assert (vault_root / CHECKLIST).read_text(
        "utf-8"
    ) == checklist_before_apply  # the ticked line is back
    state = load_state(vault_root / STATE)
    assert NOTE in state.notes and f"{month}/{NOTE}" not in state.notes
    follow = git(vault_root, "log", "--follow", "--format=%s", "--", NOTE).splitlines()
    assert follow[0].startswith("cmem: undo archive") and follow[-1] == "test: initial"


def test_undo_twice_steps_back_through_the_archive_and_the_pass(vault_root):
    before = memory(vault_root)
    objects = git_objects(vault_root)
    converge(vault_root)
    tick(vault_root, "2026-11-28 随手记")
    apply_archive(open_vault(vault_root), plan_archive(open_vault(vault_root)))
    apply_undo(open_vault(vault_root), plan_undo(open_vault(vault_root)))
    second = plan_undo(open_vault(vault_root))
    assert second.target.kind == "converge" and not second.refused
    apply_undo(open_vault(vault_root), second)
    assert memory(vault_root) == before and (vault_root / NOTE).exists()
    assert objects <= git_objects(vault_root)  # nothing is ever deleted from history


def test_undo_refused_after_a_later_hand_edit(vault_root, monkeypatch, capsys):
    result = converge(vault_root)
    edited = (vault_root / PROFILE).read_text("utf-8") + "- 我自己加的一行\n"
    (vault_root / PROFILE).write_text(edited, encoding="utf-8")
    git(vault_root, "commit", "-qam", "my own edit")
    plan = plan_undo(open_vault(vault_root))
    assert plan.target.sha == result.commit and plan.refused
    assert PROFILE in plan.later and any("my own edit" in c for c in plan.later[PROFILE])
    assert any(PROFILE in reason and "my own edit" in reason for reason in plan.reasons)
    with pytest.raises(CmemError, match="--force"):
        apply_undo(open_vault(vault_root), plan)
    before = tree(vault_root), head(vault_root)
    code, _, err = run_main(monkeypatch, capsys, "--vault", str(vault_root), "undo", "--yes")
    assert code == 1 and "my own edit" in err and "--force" in err
    assert (tree(vault_root), head(vault_root)) == before


def test_force_keeps_a_later_edit_that_does_not_overlap(make_vault):
    old = "# Profile\n\n- one（来源：[[n]]）\n- two（来源：[[n]]）\n- three（来源：[[n]]）\n- four（来源：[[n]]）\n- five（来源：[[n]]）\n"
    root = make_vault(
        {
            PROFILE: old,
            "note.md": "- 我决定 TWO\n",
            STATE: '{"version": 1, "notes": {}, "passes": []}\n',
        },
        git=True,
    )
    fake_pass(
        root,
        ["note.md"],
        {PROFILE: old.replace("- two（", "- TWO（更新于 2026-11-29，原为：two）（")},
    )
    hand = (root / PROFILE).read_text("utf-8").replace("- five（", "- FIVE by hand（")
    (root / PROFILE).write_text(hand, encoding="utf-8")
    git(root, "commit", "-qam", "hand edit at the end")
    assert plan_undo(open_vault(root)).refused
    forced = plan_undo(open_vault(root), force=True)
    assert not forced.refused and [f.action for f in forced.files] == ["merge"]
    apply_undo(open_vault(root), forced)
    assert (root / PROFILE).read_text("utf-8") == old.replace("- five（", "- FIVE by hand（")


def test_force_refuses_edits_that_overlap_the_pass(make_vault):
    old = "# Profile\n\n- one（来源：[[n]]）\n- two（来源：[[n]]）\n"
    root = make_vault({PROFILE: old, "note.md": "- x\n"}, git=True)
    fake_pass(root, ["note.md"], {PROFILE: old.replace("- two", "- TWO")})
    (root / PROFILE).write_text(old.replace("- two", "- TWO, by hand"), encoding="utf-8")
    git(root, "commit", "-qam", "hand edit on the same line")
    forced = plan_undo(open_vault(root), force=True)
    assert forced.refused and any("overlap" in b for b in forced.blocked)


def test_uncommitted_edits_block_undo_even_with_force(vault_root):
    converge(vault_root)
    (vault_root / PROFILE).write_text("typed in Obsidian a second ago\n", encoding="utf-8")
    plan = plan_undo(open_vault(vault_root), force=True)
    assert plan.refused and any("not committed" in b for b in plan.blocked)


def test_a_file_the_pass_created_is_removed_and_stays_in_git(make_vault):
    root = make_vault({"note.md": "- 我决定用 uv\n"}, git=True)
    topic = "converged/topics/python.md"
    commit = fake_pass(root, ["note.md"], {topic: "# Python\n\n- 用 uv（来源：[[note]]）\n"})
    plan = plan_undo(open_vault(root))
    assert [(f.action, f.path) for f in plan.files] == [("remove", topic)]
    apply_undo(open_vault(root), plan)
    assert not (root / topic).exists()
    assert git(root, "show", f"{commit}:{topic}").startswith("# Python")


def test_later_ticks_survive_undoing_a_later_pass(make_vault):
    root = make_vault({"a.md": "- 我决定 a\n", "b.md": "- 我决定 b\n"}, git=True)
    fake_pass(
        root,
        ["a.md"],
        {PROFILE: "# P\n\n- a（来源：[[a]]）\n"},
        pass_id="20261128-100000-aaaa",
        date="2026-11-28",
    )
    fake_pass(
        root,
        ["b.md"],
        {PROFILE: "# P\n\n- a（来源：[[a]]）\n- b（来源：[[b]]）\n"},
        pass_id="20261129-100000-bbbb",
    )
    tick(root, "a")  # uncommitted, as Obsidian leaves it
    apply_undo(open_vault(root), plan_undo(open_vault(root)))
    checklist = (root / CHECKLIST).read_text("utf-8")
    assert (
        "- [x] [[a]]" in checklist
        and "[[b]]" not in checklist
        and "pass 20261129-100000-bbbb" not in checklist
    )
    state = load_state(root / STATE)
    assert "a.md" in state.notes and "b.md" not in state.notes
    assert [p["id"] for p in state.passes][:1] == ["20261128-100000-aaaa"]


def test_revert_checklist_matches_reformatted_lines_and_restores_removed_ones():
    before = "# C\n\n## 2026-11-28 · pass a\n- [x] [[old]] → archive/2026-11/old.md · sha256:1111111111111111\n"
    after = "# C\n\n## 2026-11-29 · pass b\n- [ ] [[new]] → archive/2026-11/new.md · sha256:2222222222222222\n"
    current = after.replace("- [ ] [[new]] →", "*  [X]  [[new]]  →")
    reverted = revert_checklist(current, after, before)
    assert "[[new]]" not in reverted and "pass b" not in reverted
    assert "## 2026-11-28 · pass a\n- [x] [[old]]" in reverted
    assert revert_checklist(after, after, before) == before


def test_nothing_to_undo(vault_root, monkeypatch, capsys):
    assert plan_undo(open_vault(vault_root)).target is None
    code, out, _ = run_main(monkeypatch, capsys, "--vault", str(vault_root), "undo", "--yes")
    assert code == 0 and "nothing to undo" in out
    code, out, _ = run_main(monkeypatch, capsys, "--vault", str(vault_root), "undo", "--json")
    assert code == 0 and json.loads(out)["status"] == "nothing"


def test_cli_undo_needs_yes_without_a_terminal(vault_root, monkeypatch, capsys):
    converge(vault_root)
    before = tree(vault_root), head(vault_root)
    code, _, err = run_main(monkeypatch, capsys, "--vault", str(vault_root), "undo")
    assert code == 1 and "--yes" in err
    assert (tree(vault_root), head(vault_root)) == before
    code, out, _ = run_main(
        monkeypatch, capsys, "--vault", str(vault_root), "undo", "--yes", "--json"
    )
    data = json.loads(out)
    assert (
        code == 0
        and data["status"] == "undone"
        and data["target"]["kind"] == "converge"
        and data["commit"]
    )
