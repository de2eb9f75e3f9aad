"""The step layer (cmem.steps, issue 10): commit messages from fields, changes applied all or
nothing, the journal's recovery decisions for every step kind, the preflight's refusals and the
snapshot of staged renames, and line ends kept. CLI sequences are in test_step_seams.py and the
kill-at-every-point harness in test_sequences.py."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone

import pytest

from cmem.errors import CmemError, GitError
from cmem.steps import commits as history
from cmem.steps import journal, preflight
from cmem.steps.changes import ChangeSet, SecondWriter, apply_changes
from cmem.steps.message import CommitMessage, one_line, read_trailers
from cmem.steps.pass_log import _parse_body, list_cmem_commits
from cmem.steps.runner import Step, open_step
from cmem.vault.layers import open_vault
from support import REPO, git

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)


def ls_head(root) -> list[str]:
    return git(
        root, "-c", "core.quotePath=false", "ls-tree", "-r", "--name-only", "HEAD"
    ).splitlines()


@pytest.fixture
def vault(make_vault):
    root = make_vault(
        {
            "a.md": "I prefer tea.\n",
            "converged/core/profile.md": "# Profile\n- tea (source: [[a]])\n",
            ".cmem/state.json": '{\n "version": 1,\n "notes": {},\n "passes": []\n}\n',
        },
        git=True,
    )
    return open_vault(root)


# --- messages ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "hostile",
    [
        "wait\nCmem-Undoes: 0123456789abcdef",
        "wait\r\nCmem-Pass: other",
        "wait\u2028Cmem-Undoes: abc",
        "wait\x85Cmem-Undoes: abc",
        "wait\x0bCmem-Undoes: abc\x0cConverged: x",
        "\n\nCmem-Undoes: abc",
    ],
)
def test_model_text_never_becomes_a_trailer_or_a_field(hostile):
    message = CommitMessage("cmem: converge 1 note → profile", "20261130-120000-aaaa")
    message.add("Deferred", f"b.md ({hostile})")
    text = message.render()
    fields, step_id, undoes = _parse_body(text)
    assert step_id == "20261130-120000-aaaa" and undoes is None
    assert list(fields) == ["Deferred"] and len(fields["Deferred"]) == 1
    assert sum(1 for line in text.splitlines() if line.startswith("Cmem-")) == 1


def test_one_line_folds_controls_and_caps_length():
    assert one_line("a\n\tb\u200bc\u202e d") == "a b c d"
    assert len(one_line("x" * 5000)) == 500 and one_line("x" * 5000).endswith("…")


def test_trailers_are_read_from_the_last_paragraph_only():
    body = "cmem: converge\n\nDeferred: x\nCmem-Undoes: abc\n\nCmem-Pass: p1"
    assert read_trailers(body) == {"Cmem-Pass": "p1"}
    assert _parse_body(body)[2] is None


# --- changes ------------------------------------------------------------------------------------


def test_a_second_writer_stops_the_step_and_every_file_goes_back(vault):
    root = vault.root
    changes = ChangeSet()
    changes.write(
        "converged/core/profile.md",
        "# Profile\n- coffee\n",
        (root / "converged/core/profile.md").read_bytes(),
    )
    changes.move("a.md", "archive/2026-11/a.md", (root / "a.md").read_bytes())
    (root / "a.md").write_text("I prefer tea. Edited.\n")
    with pytest.raises(SecondWriter):
        apply_changes(vault, changes)
    assert (root / "converged/core/profile.md").read_text() == "# Profile\n- tea (source: [[a]])\n"
    assert not (root / "archive/2026-11/a.md").exists() and (root / "a.md").read_text().endswith(
        "Edited.\n"
    )


def test_moves_write_before_they_remove(vault):
    changes = ChangeSet()
    changes.move("a.md", "archive/2026-11/a.md", b"I prefer tea.\n")
    order = [(c.rel, c.new is None) for c in changes.ordered()]
    assert order == [("archive/2026-11/a.md", False), ("a.md", True)]


# --- journal recovery, every step kind ------------------------------------------------------------


def _journaled_archive(vault, apply_first: list[str]) -> str:
    """A journal for an archive move of a.md, with some of its changes applied, as a kill leaves it."""
    root = vault.root
    changes = ChangeSet()
    changes.move("a.md", "archive/2026-11/a.md", (root / "a.md").read_bytes())
    changes.write(
        ".cmem/state.json",
        b'{"version": 1, "notes": {}, "passes": [{"id": "s1", "kind": "archive"}]}\n',
        (root / ".cmem/state.json").read_bytes(),
    )
    message = CommitMessage("cmem: archive 1 note → a", "s1")
    journal.begin(vault, "archive", "s1", changes, message.render())
    for change in changes.ordered():
        if change.rel in apply_first:
            from cmem.steps.changes import put

            put(vault, change.rel, change.new)
    return "s1"


@pytest.mark.parametrize(
    "applied",
    [
        [],
        ["archive/2026-11/a.md"],
        ["archive/2026-11/a.md", "a.md"],
        ["archive/2026-11/a.md", "a.md", ".cmem/state.json"],
    ],
)
def test_an_interrupted_archive_is_rolled_forward_and_the_note_exists_once(vault, applied):
    _journaled_archive(vault, applied)
    done = journal.recover(vault)
    assert [r.action for r in done] == ["rolled forward"] and done[0].kind == "archive"
    root = vault.root
    assert (
        not (root / "a.md").exists()
        and (root / "archive/2026-11/a.md").read_text() == "I prefer tea.\n"
    )
    files = ls_head(root)
    assert "archive/2026-11/a.md" in files and "a.md" not in files
    assert git(root, "status", "--porcelain") == ""
    assert journal.pending_journals(vault) == []


def test_an_edit_to_the_source_rolls_the_archive_back_and_keeps_the_edit(vault):
    _journaled_archive(vault, ["archive/2026-11/a.md"])
    (vault.root / "a.md").write_text("I prefer tea. And more.\n")
    done = journal.recover(vault)
    assert done[0].action == "rolled back" and done[0].conflicts == ["a.md"]
    assert not (vault.root / "archive/2026-11/a.md").exists()
    assert (vault.root / "a.md").read_text() == "I prefer tea. And more.\n"


def test_an_edit_to_the_archived_copy_keeps_the_move_and_the_edit(vault):
    _journaled_archive(vault, ["archive/2026-11/a.md", "a.md"])
    (vault.root / "archive/2026-11/a.md").write_text("I prefer tea. Seen in the archive.\n")
    done = journal.recover(vault)
    assert done[0].action == "rolled forward" and done[0].conflicts == ["archive/2026-11/a.md"]
    assert not (vault.root / "a.md").exists()
    assert (vault.root / "archive/2026-11/a.md").read_text().endswith("Seen in the archive.\n")
    assert "a.md" not in ls_head(vault.root)


def test_a_committed_step_is_only_synced(vault):
    root = vault.root
    changes = ChangeSet()
    changes.write(
        "converged/core/profile.md",
        "# Profile\n- coffee (source: [[a]])\n",
        (root / "converged/core/profile.md").read_bytes(),
    )
    step = Step(vault, "converge", "s2", NOW)
    text = CommitMessage("cmem: converge 1 note → profile", "s2").render()
    journal.begin(vault, "converge", "s2", changes, text)
    apply_changes(vault, changes)
    sha = history.commit_files(root, changes.written, text)
    done = journal.recover(vault)
    assert done[0].action == "already committed" and done[0].commit == sha
    assert step.id == "s2"


def test_a_version_1_pass_journal_is_still_recovered(vault):
    root = vault.root
    changes = ChangeSet()
    changes.write(
        "converged/core/profile.md",
        "# Profile\n- coffee (source: [[a]])\n",
        (root / "converged/core/profile.md").read_bytes(),
    )
    folder = journal.begin(
        vault, "converge", "old1", changes, "cmem: converge\n\nCmem-Pass: old1"
    ).folder
    intent = json.loads((folder / "intent.json").read_text())
    intent["pass_id"] = intent.pop("id")
    del intent["kind"], intent["version"]
    (folder / "intent.json").write_text(json.dumps(intent))
    done = journal.recover(vault)
    assert done[0].action == "rolled forward" and done[0].step_id == "old1"
    assert (root / "converged/core/profile.md").read_text().endswith("coffee (source: [[a]])\n")


# --- preflight ----------------------------------------------------------------------------------


def test_a_staged_rename_is_committed_whole(vault):
    root = vault.root
    git(root, "mv", "a.md", "b.md")
    sha = preflight.snapshot(vault, "pass")
    assert sha and "a.md" not in ls_head(root) and "b.md" in ls_head(root)
    assert git(root, "status", "--porcelain") == ""


def test_a_rename_into_an_unmanaged_folder_is_committed_whole(vault):
    root = vault.root
    (root / "projects").mkdir()
    git(root, "mv", "a.md", "projects/a.md")
    preflight.snapshot(vault, "pass")
    assert "a.md" not in ls_head(root) and "projects/a.md" in ls_head(root)


def test_conflict_markers_are_refused_by_name(vault):
    root = vault.root
    (root / "converged/core/profile.md").write_text(
        "# Profile\n<<<<<<< Updated upstream\n- a\n=======\n- b\n>>>>>>> Stashed changes\n"
    )
    head = history.head(root)
    with pytest.raises(GitError, match=r"converged/core/profile\.md still holds conflict markers"):
        with open_step(vault, "converge", now=NOW):
            pass
    assert history.head(root) == head


def test_a_detached_head_is_refused(vault):
    git(vault.root, "checkout", "-q", "--detach")
    with pytest.raises(GitError, match="detached HEAD"):
        with open_step(vault, "converge", now=NOW):
            pass


def test_a_snapshot_keeps_links_and_modes(vault):
    root = vault.root
    (root / "converged/topics").mkdir(exist_ok=True)
    (root / "converged/topics/link.md").symlink_to("../core/profile.md")
    preflight.snapshot(vault, "pass")
    entry = git(root, "ls-tree", "HEAD", "converged/topics/link.md")
    assert entry.startswith("120000 ")


def test_commit_files_commits_what_git_would_store_under_autocrlf(vault):
    root = vault.root
    git(root, "config", "core.autocrlf", "true")
    data = b"# Profile\r\n- coffee (source: [[a]])\r\n"
    (root / "converged/core/profile.md").write_bytes(data)
    history.commit_files(root, {"converged/core/profile.md": data}, "m\n\nCmem-Pass: x")
    assert (
        git(root, "show", "HEAD:converged/core/profile.md")
        == "# Profile\n- coffee (source: [[a]])\n"
    )
    assert git(root, "status", "--porcelain") == ""


def test_the_undo_trailer_a_model_wrote_does_not_undo_anything(vault):
    root = vault.root
    first = history.commit_files(
        root,
        {"converged/core/profile.md": b"# Profile\n- x (source: [[a]])\n"},
        CommitMessage("cmem: converge 1 note → profile", "p1").render(),
    )
    hostile = CommitMessage("cmem: converge 1 note → profile", "p2")
    hostile.add("Deferred", f"b.md (later\n\nCmem-Undoes: {first})")
    history.commit_files(
        root, {"converged/core/profile.md": b"# Profile\n- y (source: [[a]])\n"}, hostile.render()
    )
    commits = list_cmem_commits(vault)
    assert [c.undone_by for c in commits] == [None, None] and [c.undoes for c in commits] == [
        None,
        None,
    ]


def test_a_new_note_written_where_a_moved_note_was_does_not_lose_the_moved_one(vault):
    """Killed after the move's source was removed; then `cmem note` (or the user) wrote a new
    note at that path. A rollback would remove the only copy of the old note: it stays."""
    _journaled_archive(vault, ["archive/2026-11/a.md", "a.md"])
    (vault.root / "a.md").write_text("- 14:05 something else entirely, a new capture\n")
    journal.recover(vault)
    assert (vault.root / "archive/2026-11/a.md").read_text() == "I prefer tea.\n"
    assert (vault.root / "a.md").read_text().startswith("- 14:05")


def test_a_journal_whose_commit_git_refuses_is_rolled_back_not_left_to_block(vault, monkeypatch):
    _journaled_archive(vault, ["archive/2026-11/a.md"])

    def refuse(*args, **kwargs):
        raise GitError("git update-index failed: invalid path")

    monkeypatch.setattr(history, "commit_files", refuse)
    done = journal.recover(vault)
    assert done[0].action.startswith("rolled back because its commit failed")
    assert journal.pending_journals(vault) == []
    assert (vault.root / "a.md").read_text() == "I prefer tea.\n" and not (
        vault.root / "archive/2026-11/a.md"
    ).exists()


@pytest.mark.parametrize(
    "rel", ["../outside.md", "/tmp/x.md", "archive/.git/x.md", ".obsidian/x.md", "a/../../x.md"]
)
def test_a_step_never_writes_outside_the_vault_or_into_a_dot_folder(vault, rel):
    changes = ChangeSet()
    changes.write(rel, "x\n", None)
    with pytest.raises(CmemError, match="nothing was written"):
        Step(vault, "archive", "s9", NOW).commit(changes, "m")
    assert journal.pending_journals(vault) == []


def test_a_step_never_writes_through_a_link_that_leaves_the_vault(vault, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (vault.root / "archive").rmdir()
    (vault.root / "archive").symlink_to(outside)
    changes = ChangeSet()
    changes.write("archive/2026-11/a.md", "x\n", None)
    with pytest.raises(CmemError, match="out of the vault"):
        Step(vault, "archive", "s9", NOW).commit(changes, "m")
    assert list(outside.iterdir()) == []


def test_status_and_doctor_name_an_interrupted_step(vault):
    from cmem.doctor.checks import run_doctor
    from cmem.reading.status import build_status
    from cmem.render.reports import render_status

    _journaled_archive(vault, ["archive/2026-11/a.md"])
    status = build_status(vault)
    assert status.to_json()["interrupted"] == [{"kind": "archive", "id": "s1"}]
    assert "an interrupted archive apply (s1) is waiting" in render_status(status)
    findings = [f for f in run_doctor(vault) if f.check == "interrupted"]
    assert len(findings) == 1 and "an archive apply was interrupted" in findings[0].message
    journal.recover(vault)
    assert build_status(vault).interrupted == []


def test_doctor_names_state_entries_whose_note_is_gone(vault):
    from cmem.doctor.checks import run_doctor

    (vault.root / ".cmem/state.json").write_text(
        json.dumps(
            {
                "version": 1,
                "passes": [],
                "notes": {
                    "gone.md": {
                        "sha256": "0" * 64,
                        "lines": [],
                        "pass": "p",
                        "time": "2026-11-30T12:00:00+00:00",
                        "into": [],
                    }
                },
            }
        )
    )
    findings = [
        f for f in run_doctor(vault) if f.check == "state" and "no longer exist" in f.message
    ]
    assert len(findings) == 1 and "gone.md" in findings[0].message


def test_a_snapshot_killed_before_the_index_caught_up_is_synced_by_the_next(vault):
    root = vault.root
    (root / "converged/core/profile.md").write_text("# Profile\n- tea, strong (source: [[a]])\n")
    history.commit_files(root, {}, "cmem: snapshot", from_disk=["converged/core/profile.md"])
    git(
        root,
        "update-index",
        "--cacheinfo",
        "100644,"
        + git(root, "rev-parse", "HEAD~1:converged/core/profile.md").strip()
        + ",converged/core/profile.md",
    )  # the index as a kill left it: the old blob
    assert git(root, "status", "--porcelain") != ""
    assert preflight.snapshot(vault, "pass") is None
    assert git(root, "status", "--porcelain") == ""


def test_a_commit_brings_the_index_to_head_on_its_paths_and_leaves_the_users_staging(vault):
    """The real index takes exactly the committed entries (a change, a new file, a removal):
    `git status` is clean for them, and a change the user staged on another path stays staged."""
    root = vault.root
    (root / "b.md").write_text("mine, staged\n")
    git(root, "add", "b.md")
    (root / "a.md").write_text("I prefer green tea.\n")  # an edit the snapshot commits from disk
    history.commit_files(
        root,
        {"converged/core/profile.md": None, "converged/core/new.md": b"# New\n"},
        "cmem: step",
        from_disk=["a.md"],
    )
    (root / "converged/core/profile.md").unlink()
    (root / "converged/core/new.md").write_bytes(b"# New\n")

    assert git(root, "status", "--porcelain").splitlines() == ["A  b.md"]
    assert git(root, "diff", "--cached", "--name-only", "HEAD").split() == ["b.md"]
    staged = git(root, "ls-files", "-s", "--", "converged", "a.md").splitlines()
    assert [line.split("\t")[1] for line in staged] == ["a.md", "converged/core/new.md"]
    assert git(root, "show", "HEAD:a.md") == "I prefer green tea.\n"


def test_a_step_id_quoted_in_another_commit_does_not_count_as_its_commit(vault):
    quoting = CommitMessage("cmem: converge 1 note → profile", "p0")
    quoting.add("Deferred", "b.md (see Cmem-Pass: s1)")
    history.commit_files(
        vault.root,
        {"converged/core/profile.md": b"# Profile\n- x (source: [[a]])\n"},
        quoting.render(),
    )
    _journaled_archive(vault, ["archive/2026-11/a.md"])
    done = journal.recover(vault)
    assert done[0].action == "rolled forward" and "a.md" not in ls_head(vault.root)


def test_the_step_layer_and_its_users_do_not_import_the_pass():
    """steps/ sits below converge/, archive, undo and doctor --fix; those three write through
    it and never reach into converge/ (issue 10)."""
    import ast

    package = REPO / "cli" / "cmem"
    files = [
        package / "archive" / "gate.py",
        package / "archive" / "undo.py",
        package / "doctor" / "doctor_fix.py",
        *sorted((package / "steps").glob("*.py")),
    ]
    offenders = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in getattr(node, "names", [])]
                if isinstance(node, ast.Import)
                else []
            )
            offenders += [
                f"{path.name}: {name}" for name in names if name.startswith("cmem.converge")
            ]
    assert offenders == []


def test_cmem_note_appends_to_a_crlf_note_in_its_own_line_ends(vault, monkeypatch):
    from cmem.scan.scanner import scan_vault
    from cmem.triggers.capture import capture_note

    now = datetime(2026, 11, 30, 9, 5).astimezone()
    name = vault.config.capture_pattern.replace("{date}", "2026-11-30")
    path = vault.root / (name if name.endswith(".md") else name + ".md")
    path.write_bytes(b"# today\r\n\r\n- 08:00 I prefer tea\r\n")
    captured = capture_note(vault, "I prefer green tea", now=now)
    assert (
        path.read_bytes()
        == b"# today\r\n\r\n- 08:00 I prefer tea\r\n- 09:05 I prefer green tea\r\n"
    )
    assert captured.line == 4
    assert not [
        o for o in scan_vault(vault).odd if o.rel == vault.rel(path)
    ]  # CRLF throughout is not odd


def _head_questions(monkeypatch) -> list[list[str]]:
    """The `git rev-parse HEAD HEAD^{tree}` commands commit_files runs from now on: how often a
    commit asks git for its parent instead of knowing it."""
    import subprocess

    seen: list[list[str]] = []
    real_run = subprocess.run

    def spying(args, *rest, **kwargs):
        if isinstance(args, list) and "HEAD^{tree}" in args:
            seen.append(args)
        return real_run(args, *rest, **kwargs)

    monkeypatch.setattr(history.subprocess, "run", spying)
    return seen


def _left_in_git_folder(root) -> list[str]:
    """What a commit could leave in .git beside git's own files: temporary indexes or trees."""
    return sorted(name for name in os.listdir(root / ".git") if name.startswith("cmem-"))


def test_a_steps_second_commit_builds_on_the_first_ones_tree_and_nothing_is_left(
    vault, monkeypatch
):
    """Within one step the second commit knows its parent and the parent's tree from the first
    (git is asked once, not twice), commits the same trees as two separate commits would, and
    nothing of cmem's is left in the git folder."""
    root = vault.root
    asked = _head_questions(monkeypatch)
    (root / "converged/core/one.md").write_bytes(b"one\n")  # as a step writes, then commits
    (root / "b.md").write_bytes(b"b\n")
    (root / "converged/core/profile.md").unlink()
    with history.one_repository():
        first = history.commit_files(root, {"converged/core/one.md": b"one\n"}, "cmem: one")
        second = history.commit_files(
            root, {"converged/core/profile.md": None, "b.md": b"b\n"}, "cmem: two"
        )
    assert len(asked) == 1
    assert _left_in_git_folder(root) == []
    assert git(root, "rev-parse", "HEAD~1").strip() == first
    assert git(root, "rev-parse", "HEAD").strip() == second
    assert {"b.md", "converged/core/one.md"} <= set(ls_head(root))
    assert "converged/core/profile.md" not in ls_head(root)
    assert git(root, "diff", "--name-status", first, second).split() == [
        "A", "b.md", "D", "converged/core/profile.md",
    ]  # fmt: skip
    assert (
        git(root, "status", "--porcelain", "--", "converged", "b.md") == ""
    )  # the index caught up


def test_a_commit_made_by_someone_else_mid_step_is_read_again_not_overwritten(vault, monkeypatch):
    """When HEAD moved after the step's first commit (the user committed meanwhile), the tree
    the step remembers is not HEAD's: the next commit asks git again and keeps the user's
    commit."""
    root = vault.root
    asked = _head_questions(monkeypatch)
    with history.one_repository():
        history.commit_files(root, {"converged/core/one.md": b"one\n"}, "cmem: one")
        (root / "mine.md").write_text("the user's own\n")
        git(root, "add", "mine.md")
        git(root, "commit", "-q", "-m", "mine")
        history.commit_files(root, {"converged/core/two.md": b"two\n"}, "cmem: two")
    assert len(asked) == 2
    assert {"mine.md", "converged/core/one.md", "converged/core/two.md"} <= set(ls_head(root))
    assert git(root, "log", "--format=%s", "-3").splitlines() == ["cmem: two", "mine", "cmem: one"]
    assert _left_in_git_folder(root) == []


def test_a_failed_commit_in_a_step_moves_nothing_and_the_next_builds_on_head(vault, monkeypatch):
    root = vault.root
    with history.one_repository():
        first = history.commit_files(root, {"converged/core/one.md": b"one\n"}, "cmem: one")
        with monkeypatch.context() as patch:  # its own patch only: the home stays isolated
            patch.setattr(
                history.faults, "point", lambda name: (_ for _ in ()).throw(OSError(name))
            )
            with pytest.raises(OSError):
                history.commit_files(root, {"converged/core/two.md": b"two\n"}, "cmem: two")
        assert git(root, "rev-parse", "HEAD").strip() == first
        history.commit_files(root, {"converged/core/three.md": b"3\n"}, "cmem: three")
    assert _left_in_git_folder(root) == []
    assert git(root, "rev-parse", "HEAD~1").strip() == first
    assert "converged/core/two.md" not in ls_head(root)
    assert "converged/core/three.md" in ls_head(root)


def test_a_commit_git_refuses_a_blob_for_leaves_nothing_behind(vault, monkeypatch):
    """A blob git refuses to store fails the step's second commit before any tree is made:
    nothing is left in .git, and the next commit works."""
    root = vault.root
    with history.one_repository():
        history.commit_files(root, {"converged/core/one.md": b"one\n"}, "cmem: one")
        real_run = history.subprocess.run

        def refusing(args, *rest, **kwargs):
            if isinstance(args, list) and "hash-object" in args:
                raise OSError("no room for the blob")
            return real_run(args, *rest, **kwargs)

        with monkeypatch.context() as patch:  # its own patch only: the home stays isolated
            patch.setattr(history.subprocess, "run", refusing)
            with pytest.raises(OSError):
                history.commit_files(root, {"converged/core/two.md": b"two\n"}, "cmem: two")
    assert _left_in_git_folder(root) == []
    history.commit_files(root, {"converged/core/three.md": b"3\n"}, "cmem: three")
    assert "converged/core/three.md" in ls_head(root)
    assert "converged/core/two.md" not in ls_head(root)


def _reaped(python: str) -> int:
    import subprocess

    child = subprocess.Popen([python, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_commit_removes_the_temporary_indexes_a_killed_process_left(vault):
    """An earlier version's process killed mid-commit left `cmem-index-<pid>-<thread>` in the
    git folder: a commit removes those whose process is gone and that are over an hour old; a running process's, a recent one (another pid namespace may own it) and any other
    file are kept."""
    import os
    import sys
    import time

    folder = vault.root / ".git"
    dead = _reaped(sys.executable)
    hour_ago = time.time() - history.LEFT_INDEX_SECONDS - 60
    left = folder / f"cmem-index-{dead}-140001-0a1b2c3d"
    left_before = folder / f"cmem-index-{dead}-140004"  # as cmem named them before the token
    recent = folder / f"cmem-index-{dead}-140002"
    running = folder / f"cmem-index-{os.getppid()}-140003"  # the test runner's parent runs
    other = folder / "cmem-index-notes"  # not a pid: not ours to judge
    huge = folder / f"cmem-index-{'9' * 30}-1"  # no such pid can be asked: kept, no crash
    for path in (left, left_before, recent, running, other, huge):
        path.write_bytes(b"DIRC")
    for path in (left, left_before, running, other, huge):
        os.utime(path, (hour_ago, hour_ago))
    history.commit_files(vault.root, {"converged/core/one.md": b"one\n"}, "cmem: one")
    assert not left.exists() and not left_before.exists()
    assert recent.exists() and running.exists() and other.exists() and huge.exists()
    assert "converged/core/one.md" in ls_head(vault.root)


def test_an_edit_saved_while_the_new_bytes_are_written_is_not_replaced(vault, monkeypatch):
    """The step compares a file with what it read just before it writes; an editor's append that
    lands while the new bytes are written and synced (milliseconds, longer on a loaded disk) was
    then replaced unseen. It is compared again just before the rename: the edit wins, the step
    stops, and every file goes back."""
    root = vault.root
    profile = root / "converged/core/profile.md"
    changes = ChangeSet()
    changes.write("converged/core/another.md", "# Another\n", None)
    changes.write("converged/core/profile.md", "# Profile\n- coffee\n", profile.read_bytes())
    written = [change.rel for change in changes.ordered()]
    real_point = history.faults.point
    synced: list[str] = []

    def append_during_the_profiles_write(name):
        # "fsync": a temp file is written and synced, its rename not yet made
        if name == "fsync":
            synced.append(written[len(synced)])
            if synced[-1] == "converged/core/profile.md":
                with open(profile, "a", encoding="utf-8") as handle:
                    handle.write("- mine\n")
        return real_point(name)

    monkeypatch.setattr(history.faults, "point", append_during_the_profiles_write)
    with pytest.raises(SecondWriter, match=r"converged/core/profile\.md"):
        apply_changes(vault, changes)
    assert "converged/core/profile.md" in synced  # the append came during its write
    assert profile.read_text() == "# Profile\n- tea (source: [[a]])\n- mine\n"
    assert not (root / "converged/core/another.md").exists()  # written, then taken back
    assert not list(root.rglob("*.cmem-tmp"))
