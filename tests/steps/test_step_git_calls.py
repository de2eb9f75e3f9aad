"""The git processes one step starts (issue 13): where the repository is, its git folder and
whether git knows who commits are asked once per step, not once per caller (a one-note pass
asked 3, 5 and 4 times); outside a step each call still asks git. Counted, not timed."""

from __future__ import annotations

import subprocess
from collections import Counter

from cmem.converge.pipeline import PassOptions, run_pass
from cmem.steps import commits
from cmem.vault.layers import open_vault

LOCATING = ("rev-parse --show-toplevel", "rev-parse --absolute-git-dir")


def _git_commands(monkeypatch) -> Counter:
    """Each git command run from here on, by its words after git's own options."""
    seen: Counter = Counter()
    original = subprocess.run

    def run(argv, *args, **kwargs):
        if argv and argv[0] == "git":
            words = list(argv[1:])
            while words and words[0] in ("-c", "-C"):
                words = words[2:]
            # the subcommand; for the questions asked of it, the question too
            asked = words[:2] if words[:1] in (["rev-parse"], ["config"]) else words[:1]
            seen[" ".join(asked)] += 1
        return original(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", run)
    return seen


def test_a_pass_locates_its_repository_once(pass_vault, monkeypatch):
    seen = _git_commands(monkeypatch)
    result = run_pass(open_vault(pass_vault), PassOptions(engine="builtin"))
    assert result.status == "applied" and result.commit
    assert [seen[command] for command in LOCATING] == [1, 1], seen
    # the test environment names the author: git's config is not asked who commits
    assert seen["config user.name"] == seen["config user.email"] == 0, seen
    # HEAD names a branch: its file in the git folder says so, no symbolic-ref
    assert seen["symbolic-ref"] == 0, seen
    # each commit asks for its parent and the parent's tree in one process
    assert seen["rev-parse HEAD"] == seen["commit-tree"] and seen["rev-parse --verify"] == 0, seen


def test_without_an_author_in_the_environment_git_is_asked_once_a_step(pass_vault, monkeypatch):
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL"):
        monkeypatch.delenv(name, raising=False)
    seen = _git_commands(monkeypatch)
    (pass_vault / "2026-11-29 notes.md").write_text("- 其实我更喜欢早上写代码。\n", "utf-8")
    result = run_pass(open_vault(pass_vault), PassOptions(engine="builtin"))
    assert result.status == "applied" and result.snapshot_commit  # two commits in one step
    assert seen["commit-tree"] == 2, seen
    # asked once for both commits (the e-mail only when a name is known: here none is)
    assert seen["config user.name"] == 1 and seen["config user.email"] <= 1, seen


def test_outside_a_step_git_is_asked_each_time(tmp_path):
    outer, inner = tmp_path / "outer", tmp_path / "outer" / "inner"
    inner.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(outer)], check=True)
    assert commits.toplevel(inner) == outer.resolve()
    subprocess.run(["git", "init", "-q", str(inner)], check=True)
    assert commits.toplevel(inner) == inner.resolve()  # nothing remembered the first answer
    with commits.one_repository():
        assert commits.git_dir(inner) == (inner / ".git").resolve()
        assert commits.git_dir(inner) == (inner / ".git").resolve()
    assert commits._remembered is None  # the step's memory ends with it


def test_what_head_names_is_read_from_its_file_and_from_git_where_the_file_cannot_tell(
    tmp_path, monkeypatch
):
    root = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    seen = _git_commands(monkeypatch)
    assert commits.head_is_a_branch(root) and seen["symbolic-ref"] == 0
    subprocess.run(["git", "-C", str(root), "checkout", "-q", "--detach"], check=True)
    assert not commits.head_is_a_branch(root) and seen["symbolic-ref"] == 0
    # a reftable repository's HEAD file is a placeholder: then git answers
    (root / ".git" / "HEAD").write_text("ref: refs/heads/.invalid\n", "utf-8")
    commits.head_is_a_branch(root)
    assert seen["symbolic-ref"] == 1
    unborn = tmp_path / "unborn"
    subprocess.run(["git", "init", "-q", str(unborn)], check=True)
    assert commits._head_and_tree(unborn) == (None, None)  # a first commit has no parent
