"""A step journal is bound to its repository and to the commit it started from (issue 35).

The journal lives in the machine folder, named by the vault's path. A vault deleted and cloned
again at the same path found the dead folder's journal of an interrupted pass there: the next
pass "rolled it forward", wrote a statement citing a note the clone does not have, and `sync`
pushed it. Now a journal records the repository it was written for (an id kept in the
repository's own git folder, which a clone does not carry) and its start commit; recovery rolls
forward or back only a journal that matches — one that does not is set aside (kept for
inspection, named once in a notice and by `cmem doctor`), never applied. Real git, a real bare
remote, real `cmem` processes killed with the crash tests' fault points."""

from __future__ import annotations

import json
import shutil

import pytest

from cmem.vault.layers import open_vault
from support import git, run_cmem
from trigger_helpers import NOTE, pass_commits, trigger_vault

SECOND = "2026-12-01 more.md"
SECOND_TEXT = "- I decided to switch to Vue at work.\n"


def pushed_vault(make_vault, tmp_path):
    """A vault with a first pass, pushed to a bare remote."""
    root = trigger_vault(make_vault)
    done = run_cmem("--vault", str(root), "converge", "--engine", "builtin", "--quiet")
    assert done.returncode == 0, done.stderr
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(root, "remote", "add", "origin", str(remote))
    git(root, "push", "-q", "-u", "origin", "main")
    return root, remote


def interrupt_a_pass(root, point: str = "applied") -> None:
    """A pass over a note only this copy has, killed after it wrote: a journal is left."""
    (root / SECOND).write_text(SECOND_TEXT, "utf-8")
    killed = run_cmem(
        "--vault", str(root), "converge", "--engine", "builtin", "--quiet", fault=point
    )
    assert killed.returncode == -9, killed.stderr
    assert pending(root), "the kill left no journal"


def pending(root) -> list[str]:
    folder = open_vault(root).journal_dir
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def set_aside(root) -> list[str]:
    folder = open_vault(root).machine_dir / "journal-set-aside"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def reclone(root, remote) -> None:
    shutil.rmtree(root)
    git(root.parent, "clone", "-q", "-b", "main", str(remote), str(root))


def memory_text(root) -> str:
    return "".join(
        p.read_text("utf-8") for p in sorted((root / "converged").rglob("*.md")) if p.is_file()
    )


@pytest.mark.parametrize("point", ["journal-written", "applied", "git-commit:2"])
@pytest.mark.parametrize(
    "argv",
    [
        ["converge", "--engine", "builtin"],
        ["sync"],
        ["undo", "--yes"],
        ["doctor", "--fix", "--yes"],
    ],
)
def test_a_recloned_vault_sets_the_dead_folders_journal_aside(make_vault, tmp_path, point, argv):
    root, remote = pushed_vault(make_vault, tmp_path)
    interrupt_a_pass(root, point)
    journal_id = pending(root)[0]
    reclone(root, remote)
    clone_head = git(root, "rev-parse", "HEAD")
    done = run_cmem("--vault", str(root), *argv)
    said = done.stdout + done.stderr
    assert "set aside" in said and journal_id in said, said
    assert "rolled forward" not in said and "rolled back" not in said
    assert pending(root) == [] and set_aside(root) == [journal_id]
    # never applied: nothing of the dead pass is in the clone, its history or the remote
    assert not (root / SECOND).exists()
    assert "2026-12-01 more" not in memory_text(root)
    log = git(root, "log", "--all", "--format=%B")
    assert "2026-12-01 more" not in log
    if argv[0] != "undo":  # (undo reverts the clone's own last pass, as asked)
        assert git(root, "rev-parse", "HEAD") == clone_head
    assert "2026-12-01 more" not in git(remote, "log", "--all", "--format=%B")
    # named by doctor for as long as it is kept, and in a notice only once
    findings = json.loads(run_cmem("--vault", str(root), "doctor", "--json").stdout)["findings"]
    named = [f for f in findings if journal_id in f["message"]]
    assert named and "set aside" in named[0]["message"] and named[0]["level"] == "warn"
    again = run_cmem("--vault", str(root), "converge", "--engine", "builtin")
    assert "set aside" not in again.stdout + again.stderr


def test_a_journal_of_this_repository_is_still_rolled_forward(make_vault, tmp_path):
    """The binding takes nothing from the crash guarantees: the same folder, the same repository
    (a copy of it moved with its machine folder, as the sequence harness does, included)."""
    root, _ = pushed_vault(make_vault, tmp_path)
    interrupt_a_pass(root, "applied")
    done = run_cmem("--vault", str(root), "converge", "--engine", "builtin")
    assert done.returncode == 0, done.stderr
    assert "rolled forward" in done.stdout + done.stderr
    assert pending(root) == [] and set_aside(root) == []
    assert len(pass_commits(root)) == 2 and "Vue" in memory_text(root)


def test_a_journal_whose_start_commit_is_gone_is_set_aside(make_vault, tmp_path):
    """The same repository, but its branch reset below the commit the step started from
    (`git reset --hard` to an older commit, the interrupted pass's base dropped): rolling it
    forward would commit it on top of history it was not made on."""
    root, _ = pushed_vault(make_vault, tmp_path)
    interrupt_a_pass(root, "journal-written")
    journal_id = pending(root)[0]
    git(root, "checkout", "-q", "--", ".")
    git(root, "clean", "-qfd")
    first = git(root, "rev-list", "--max-parents=0", "HEAD").strip()
    git(root, "reset", "-q", "--hard", first)
    git(root, "reflog", "expire", "--expire=now", "--all")
    git(root, "gc", "-q", "--prune=now")
    done = run_cmem("--vault", str(root), "converge", "--engine", "builtin")
    said = done.stdout + done.stderr
    assert "set aside" in said and journal_id in said, said
    assert set_aside(root) == [journal_id]


def test_an_older_journal_without_a_binding_is_recovered_as_before(make_vault, tmp_path):
    """A journal an earlier cmem wrote (no repository, no start commit) is recovered as it
    always was: an upgrade in the middle of a crash loses nothing."""
    root, _ = pushed_vault(make_vault, tmp_path)
    interrupt_a_pass(root, "applied")
    intent_file = open_vault(root).journal_dir / pending(root)[0] / "intent.json"
    intent = json.loads(intent_file.read_text("utf-8"))
    intent.pop("repository"), intent.pop("start")
    intent["version"] = 2
    intent_file.write_text(json.dumps(intent), "utf-8")
    done = run_cmem("--vault", str(root), "converge", "--engine", "builtin")
    assert done.returncode == 0 and "rolled forward" in done.stdout + done.stderr
    assert set_aside(root) == [] and len(pass_commits(root)) == 2
    assert "Vue" in memory_text(root) and NOTE.removesuffix(".md") in memory_text(root)


def test_doctor_names_a_foreign_journal_before_anything_sets_it_aside(make_vault, tmp_path):
    """`cmem doctor` (which only reads) says the journal belongs to another copy and that
    `--fix` sets it aside, instead of offering to finish it."""
    root, remote = pushed_vault(make_vault, tmp_path)
    interrupt_a_pass(root, "applied")
    journal_id = pending(root)[0]
    reclone(root, remote)
    findings = json.loads(run_cmem("--vault", str(root), "doctor", "--json").stdout)["findings"]
    named = [f for f in findings if journal_id in f["message"]]
    assert len(named) == 1, findings
    assert "another copy" in named[0]["message"] and "sets it aside" in named[0]["message"]
    assert "finishes it" not in named[0]["message"]
    assert pending(root) == [journal_id] and set_aside(root) == []
