"""`archive apply` moves a note only while memory still holds what it was converged into (issue
35): a statement, or a trace inside one, citing it in every memory file it went into, as the
convergent layer is on disk now. A citation that left through cmem's own commits (a later pass
rewrote or moved the statement) is fine; any other way memory stops citing the note makes its
line `uncited`: refused with the reason, and the note pending again, in the archive step's own
commit."""

from __future__ import annotations

import json

import pytest

from cmem.archive.gate import READY, UNCITED, apply_archive, list_staged, plan_archive
from cmem.vault.layers import open_vault
from cmem.vault.state_json import load_state
from history_helpers import CHECKLIST, STATE, fake_pass, head, tick
from support import copy_vault, git, run_cmem, vault_template

PROFILE = "converged/core/profile.md"
TOPIC = "converged/topics/work.md"
A, B = "2026-11-20 notes.md", "2026-11-28 notes.md"


def cmem(root, *args, **kwargs):
    return run_cmem("--vault", str(root), *args, **kwargs)


def json_of(root, *args) -> dict:
    result = cmem(root, *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def tick_all(root) -> None:
    path = root / CHECKLIST
    path.write_text(path.read_text("utf-8").replace("- [ ]", "- [x]"), encoding="utf-8")


def head_state(root) -> dict:
    return json.loads(git(root, "show", f"HEAD:{STATE}"))


def pending_notes(root) -> set[str]:
    return {signal["note"] for signal in json_of(root, "scan")["signals"]}


def _corrected(root) -> str:
    """`cmem init` and two builtin passes: a preference, then its correction (a rewrite with a
    trace, citing both notes); the profile as the first pass left it — an editor's old buffer."""
    assert run_cmem("init", str(root), "--lang", "en").returncode == 0
    (root / A).write_text("# notes\n\n- I prefer working from Paris\n", encoding="utf-8")
    assert cmem(root, "converge", "--engine", "builtin").returncode == 0
    old_buffer = (root / PROFILE).read_text("utf-8")
    (root / B).write_text(
        "# notes\n\n- actually, I prefer working from Berlin, not Paris\n", encoding="utf-8"
    )
    assert cmem(root, "converge", "--engine", "builtin").returncode == 0
    profile = (root / PROFILE).read_text("utf-8")
    assert "Berlin" in profile and "[[2026-11-28 notes]]" in profile
    assert "[[2026-11-20 notes]]" in profile  # the rewrite keeps the old wording's source
    return old_buffer


@pytest.fixture(scope="module")
def corrected(tmp_path_factory):
    """(the template vault, its old buffer), made once for the module."""
    buffer = []
    template = vault_template(tmp_path_factory, lambda root: buffer.append(_corrected(root)))
    return template, buffer[0]


@pytest.fixture
def real_vault(corrected, tmp_path):
    """A copy of the corrected vault, and the profile as its first pass left it."""
    template, old_buffer = corrected
    return copy_vault(template, tmp_path / "vault"), old_buffer


def test_an_editor_saving_an_old_buffer_after_a_pass_keeps_the_note_out_of_the_archive(
    real_vault,
):
    root, old_buffer = real_vault
    (root / PROFILE).write_text(old_buffer, encoding="utf-8")  # the correction is gone
    tick_all(root)
    listed = {line["note"]: line for line in json_of(root, "archive", "list")["staged"]}
    assert listed["2026-11-28 notes"]["state"] == UNCITED
    assert "profile.md no longer cites [[2026-11-28 notes]]" in listed["2026-11-28 notes"]["detail"]
    assert listed["2026-11-20 notes"]["state"] == READY  # the old buffer cites it: it is held

    result = json_of(root, "archive", "apply", "--yes")
    assert [move["from"] for move in result["moved"]] == [A]
    assert [s["note"] for s in result["skipped"]] == ["2026-11-28 notes"]
    assert result["skipped"][0]["state"] == UNCITED
    assert result["pending_again"] == [B]
    assert (root / B).exists()  # not moved: the correction lives only in it now
    # pending again, in the archive step's own commit
    assert B not in head_state(root)["notes"]
    assert "Pending-again: 2026-11-28 notes.md" in git(root, "log", "-1", "--format=%B")
    assert B in pending_notes(root)
    assert json_of(root, "status")["pending"]["notes"] >= 1
    # the next pass converges it again: memory holds the correction, and it can be archived
    assert cmem(root, "converge", "--engine", "builtin").returncode == 0
    assert "Berlin" in (root / PROFILE).read_text("utf-8")
    tick_all(root)
    again = json_of(root, "archive", "apply", "--yes")
    assert [move["from"] for move in again["moved"]] == [B]


def test_a_pass_killed_after_writing_and_rolled_back_after_its_line_was_ticked(tmp_path):
    root = tmp_path / "vault"
    assert run_cmem("init", str(root), "--lang", "en").returncode == 0
    (root / A).write_text("# notes\n\n- I prefer working from Paris\n", encoding="utf-8")
    killed = cmem(root, "converge", "--engine", "builtin", fault="applied")
    assert killed.returncode == -9
    assert "[[2026-11-20 notes]]" in (root / CHECKLIST).read_text("utf-8")
    tick_all(root)  # the user ticks the dead pass's line
    # the next command rolls the pass back (keeping the user's checklist edit) and refuses it
    result = cmem(root, "archive", "apply", "--yes", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["moved"] == [] and data["skipped"][0]["state"] == UNCITED
    assert (root / A).exists() and not list((root / "archive").rglob(A))
    assert A in pending_notes(root)
    listed = json_of(root, "archive", "list")["staged"]
    assert [line["state"] for line in listed] == [UNCITED]


def test_a_note_superseded_by_a_later_pass_is_still_archived(real_vault):
    root, _ = real_vault
    result = json_of(root, "archive", "apply", "--all", "--yes")
    assert sorted(move["from"] for move in result["moved"]) == [A, B]
    assert result["skipped"] == [] and result["pending_again"] == []


def test_dry_run_and_list_change_nothing(real_vault):
    root, old_buffer = real_vault
    (root / PROFILE).write_text(old_buffer, encoding="utf-8")
    tick_all(root)
    before = head(root)
    dry = json_of(root, "archive", "apply", "--yes", "--dry-run")
    assert dry["skipped"][0]["state"] == UNCITED
    json_of(root, "archive", "list")
    assert head(root) == before and B in load_state(root / STATE).notes


def test_a_step_that_only_makes_notes_pending_again_moves_nothing_and_asks_nothing(real_vault):
    root, old_buffer = real_vault
    (root / PROFILE).write_text(old_buffer, encoding="utf-8")
    tick(root, "2026-11-28 notes")
    # no terminal and no --yes: a move would be refused; this step moves nothing
    result = cmem(root, "archive", "apply")
    assert result.returncode == 0, result.stderr
    assert "pending again" in result.stdout and "2026-11-28 notes.md" in result.stdout
    assert git(root, "log", "-1", "--format=%s").startswith("cmem: archive nothing; 1 note")
    assert B not in head_state(root)["notes"] and A in head_state(root)["notes"]
    # undo takes the step back: the entry returns
    assert cmem(root, "undo", "--yes").returncode == 0
    assert B in head_state(root)["notes"]


# --- the general rule, in process, with real git ----------------------------------------------


@pytest.fixture
def two_files(make_vault):
    """Note A converged by one pass into the profile and a topic file, each citing it."""
    root = make_vault(
        {
            A: "# notes\n\n- I decided to use uv\n- I prefer tea\n",
            PROFILE: "# Profile\n",
            TOPIC: "# Work\n",
        },
        git=True,
    )
    fake_pass(
        root,
        [A],
        {
            PROFILE: "# Profile\n\n- Prefers tea (source: [[2026-11-20 notes]])\n",
            TOPIC: "# Work\n\n- Uses uv (source: [[2026-11-20 notes]])\n",
        },
    )
    return root


def line_of(root):
    (line,) = list_staged(open_vault(root))
    return line


def write(root, rel, text):
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text, encoding="utf-8")


def commit_by_hand(root, message="my edit"):
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


@pytest.mark.parametrize(
    "change, why",
    [
        # one file of two reverted by an editor, uncommitted
        (lambda r: write(r, TOPIC, "# Work\n"), "work.md no longer cites"),
        # the same, committed by the user's own git commit
        (
            lambda r: (write(r, TOPIC, "# Work\n"), commit_by_hand(r)),
            "removed by commit",
        ),
        # a memory file deleted
        (lambda r: (r / PROFILE).unlink(), "deleted on disk"),
        # its source rewritten by hand to another note
        (
            lambda r: write(r, PROFILE, "# Profile\n\n- Prefers tea (source: [[other]])\n"),
            "profile.md no longer cites",
        ),
        # the source annotation removed, the words kept
        (lambda r: write(r, PROFILE, "# Profile\n\n- Prefers tea\n"), "profile.md no longer"),
        # both files emptied
        (
            lambda r: (write(r, PROFILE, "# Profile\n"), write(r, TOPIC, "# Work\n")),
            "no longer cites",
        ),
    ],
)
def test_any_way_memory_stops_citing_the_note_refuses_it(two_files, change, why):
    root = two_files
    change(root)
    line = line_of(root)
    assert line.state == UNCITED and why in line.detail
    tick(root, "2026-11-20 notes")
    vault = open_vault(root)
    plan = plan_archive(vault)
    assert plan.moves == [] and [s.source for s in plan.pending_again] == [A]
    apply_archive(vault, plan)
    assert (root / A).exists()
    assert A not in head_state(root)["notes"]


@pytest.mark.parametrize(
    "change",
    [
        # nothing changed
        lambda r: None,
        # cited with a block fragment and an alias
        lambda r: write(
            r, PROFILE, "# Profile\n\n- Prefers tea (source: [[2026-11-20 notes#^t3|the note]])\n"
        ),
        # moved by hand into another memory file
        lambda r: (
            write(r, PROFILE, "# Profile\n"),
            write(r, "converged/core/habits.md", "- Prefers tea (source: [[2026-11-20 notes]])\n"),
        ),
        # the old statement kept only inside a trace that still holds its source
        lambda r: write(
            r,
            PROFILE,
            "# Profile\n\n- Prefers coffee (updated 2026-11-30, was: Prefers tea (source: "
            "[[2026-11-20 notes]])) (source: [[2026-11-20 notes]])\n",
        ),
        # a hand edit that rewords but keeps the source
        lambda r: write(r, PROFILE, "# Profile\n\n- Drinks tea (source: [[2026-11-20 notes]])\n"),
    ],
)
def test_memory_that_still_cites_the_note_lets_it_move(two_files, change):
    change(two_files)
    assert line_of(two_files).state == READY


def test_a_later_pass_that_rewrote_the_statement_citing_another_note_lets_it_move(two_files):
    root = two_files
    write(root, B, "# notes\n\n- actually I prefer coffee\n")
    fake_pass(
        root,
        [B],
        {
            PROFILE: "# Profile\n\n- Prefers coffee (updated 2026-11-30, was: tea) "
            "(source: [[2026-11-28 notes]])\n"
        },
        pass_id="20261130-101500-bbbb",
        date="2026-11-30",
    )
    by_note = {line.note: line.state for line in list_staged(open_vault(root))}
    assert by_note == {"2026-11-20 notes": READY, "2026-11-28 notes": READY}


def test_a_note_cited_again_between_plan_and_step_is_rechecked(two_files):
    root = two_files
    tick(root, "2026-11-20 notes")
    vault = open_vault(root)
    plan = plan_archive(vault)
    assert [m.source for m in plan.moves] == [A]
    write(root, TOPIC, "# Work\n")  # reverted after the plan was shown
    from cmem.errors import CmemError

    with pytest.raises(CmemError, match="memory changed since the plan was made"):
        apply_archive(vault, plan)
    assert (root / A).exists()
