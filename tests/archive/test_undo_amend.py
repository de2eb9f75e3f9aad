"""`git commit --amend` of a pass commit, then `cmem undo`: the step's own writes are taken back
and nothing else. state.json records the blob of each file the pass wrote (`wrote`), so an edit of
the user's folded into the commit stays; a commit whose message lost the `Cmem-Pass` trailer is
still found by the pass's record (issue 35)."""

from __future__ import annotations

import json

import pytest

from cmem.archive.undo import apply_undo, plan_undo
from cmem.converge.pipeline import PassOptions, run_pass
from cmem.errors import CmemError
from cmem.steps.pass_log import list_cmem_commits
from cmem.vault.layers import open_vault
from cmem.vault.state_json import load_state
from history_helpers import CHECKLIST, STATE, run_main
from support import git

PROFILE = "converged/core/profile.md"
NOTE = "2026-11-28 notes.md"
PROFILE_TEXT = """---
summary: who I am
importance: 8
---
# Profile

- Works as a backend developer (source: [[2026-11-20 diary]])
- Drinks coffee in the morning (source: [[2026-11-20 diary]])
- Lives in Hamburg (source: [[2026-11-20 diary]])
- Writes scripts in Python (source: [[2026-11-20 diary]])
"""
USER_LINE = "\n## My own section\n\nWritten by hand, folded into the pass commit by an amend.\n"


@pytest.fixture
def vault_root(make_vault):
    return make_vault(
        {
            PROFILE: PROFILE_TEXT,
            NOTE: "# notes\n\n- Actually I prefer tea over coffee in the morning.\n",
            "archive/2026-11/2026-11-20 diary.md": "Backend developer. Coffee. Hamburg. Python.\n",
            CHECKLIST: "# Archive checklist\n",
            STATE: '{"version": 1, "notes": {}, "passes": []}\n',
        },
        git=True,
    )


def converge(root):
    result = run_pass(open_vault(root), PassOptions(engine="builtin"))
    assert result.status == "applied", result.errors
    assert PROFILE in result.changed
    return result


def amend(root, *args: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "--amend", *(args or ("--no-edit",)))


def test_the_pass_records_the_blob_of_every_file_it_wrote(vault_root):
    result = converge(vault_root)
    (entry,) = load_state(vault_root / STATE).passes
    assert set(entry["wrote"]) == set(result.changed)
    for rel, blob in entry["wrote"].items():
        assert git(vault_root, "rev-parse", f"HEAD:{rel}").strip() == blob


def test_an_edit_amended_into_the_pass_file_survives_undo(vault_root):
    converge(vault_root)
    converged = (vault_root / PROFILE).read_text("utf-8")
    assert "tea" in converged
    with open(vault_root / PROFILE, "a", encoding="utf-8") as handle:
        handle.write(USER_LINE)
    amend(vault_root)
    plan = plan_undo(open_vault(vault_root))
    assert not plan.refused, plan.reasons
    (item,) = [f for f in plan.files if f.path == PROFILE]
    assert item.action == "merge" and "amend" in item.detail
    apply_undo(open_vault(vault_root), plan)
    text = (vault_root / PROFILE).read_text("utf-8")
    assert text == PROFILE_TEXT + USER_LINE  # the pass's change gone, the user's edit kept
    assert git(vault_root, "status", "--porcelain").strip() == ""


def test_another_file_amended_into_the_pass_commit_is_kept(vault_root):
    converge(vault_root)
    (vault_root / "ideas.md").write_text("- a note of my own\n", "utf-8")
    (vault_root / NOTE).write_text("# notes\n\n- edited by hand as well\n", "utf-8")
    amend(vault_root)
    plan = plan_undo(open_vault(vault_root))
    kept = {f.path: f for f in plan.files if f.action == "keep"}
    assert {"ideas.md", NOTE} <= set(kept) and "amend" in kept["ideas.md"].detail
    apply_undo(open_vault(vault_root), plan)
    assert (vault_root / "ideas.md").read_text("utf-8") == "- a note of my own\n"
    assert (vault_root / NOTE).read_text("utf-8") == "# notes\n\n- edited by hand as well\n"
    assert (vault_root / PROFILE).read_text("utf-8") == PROFILE_TEXT


def test_an_amend_that_overlaps_the_pass_change_is_refused_and_nothing_moves(vault_root):
    converge(vault_root)
    text = (vault_root / PROFILE).read_text("utf-8")
    line = next(x for x in text.splitlines() if "tea" in x)
    (vault_root / PROFILE).write_text(text.replace(line, line + " — and green tea"), "utf-8")
    amend(vault_root)
    head = git(vault_root, "rev-parse", "HEAD").strip()
    on_disk = (vault_root / PROFILE).read_bytes()
    plan = plan_undo(open_vault(vault_root))
    assert plan.refused and any(PROFILE in reason for reason in plan.reasons)
    with pytest.raises(CmemError, match=r"profile\.md"):
        apply_undo(open_vault(vault_root), plan)
    assert git(vault_root, "rev-parse", "HEAD").strip() == head
    assert (vault_root / PROFILE).read_bytes() == on_disk


def test_an_amend_with_a_new_message_is_still_found_and_undone(vault_root):
    result = converge(vault_root)
    with open(vault_root / PROFILE, "a", encoding="utf-8") as handle:
        handle.write(USER_LINE)
    amend(vault_root, "-m", "tidy my profile")
    assert "Cmem-Pass" not in git(vault_root, "log", "-1", "--format=%B")
    commits = list_cmem_commits(open_vault(vault_root))
    found = commits[0]
    assert found.pass_id == result.pass_id and found.trailer_lost and found.kind == "converge"
    assert found.sha == git(vault_root, "rev-parse", "HEAD").strip()
    plan = plan_undo(open_vault(vault_root))
    assert plan.target is not None and plan.target.sha == found.sha and not plan.refused
    undone = apply_undo(open_vault(vault_root), plan)
    assert (vault_root / PROFILE).read_text("utf-8") == PROFILE_TEXT + USER_LINE
    state = load_state(vault_root / STATE)
    assert NOTE not in state.notes  # pending again
    assert [p["kind"] for p in state.passes] == ["undo"]
    # and the undo is linked to it: nothing more to undo
    commits = list_cmem_commits(open_vault(vault_root))
    assert commits[0].sha == undone.commit
    assert commits[1].sha == found.sha and commits[1].undone_by == undone.commit
    assert plan_undo(open_vault(vault_root)).target is None


def test_cmem_log_and_undo_on_the_command_line_after_an_amend(vault_root, monkeypatch, capsys):
    result = converge(vault_root)
    amend(vault_root, "-m", "my own message")
    code, out, err = run_main(monkeypatch, capsys, "--vault", str(vault_root), "log", "--json")
    assert code == 0, err
    entries = json.loads(out)
    entries = entries.get("passes", entries) if isinstance(entries, dict) else entries
    mine = [e for e in entries if e.get("id") == result.pass_id]
    assert mine and mine[0]["trailer_lost"] is True
    code, out, err = run_main(monkeypatch, capsys, "--vault", str(vault_root), "undo", "--yes")
    assert code == 0, err
    assert "no cmem pass" not in out + err and "trailer" in out
    assert (vault_root / PROFILE).read_text("utf-8") == PROFILE_TEXT


def test_a_pass_of_an_older_cmem_is_undone_by_the_files_it_recorded(vault_root):
    """An older cmem recorded the files a pass changed, not their blobs: a file the amend added is
    still kept, and the pass's own file is restored."""
    converge(vault_root)
    state = json.loads((vault_root / STATE).read_text("utf-8"))
    for entry in state["passes"]:
        entry.pop("wrote", None)
    (vault_root / STATE).write_text(json.dumps(state, indent=2) + "\n", "utf-8")
    (vault_root / "ideas.md").write_text("- mine\n", "utf-8")
    amend(vault_root)
    plan = plan_undo(open_vault(vault_root))
    actions = {f.path: f.action for f in plan.files}
    assert actions["ideas.md"] == "keep" and actions[PROFILE] == "restore"
    apply_undo(open_vault(vault_root), plan)
    assert (vault_root / "ideas.md").read_text("utf-8") == "- mine\n"
    assert (vault_root / PROFILE).read_text("utf-8") == PROFILE_TEXT
