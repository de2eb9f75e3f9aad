"""A pass's snapshot of the user's edits comes first: committed before the engine is asked and
before anything of the pass is written, its error the pass's error."""

from __future__ import annotations

import subprocess

import pytest

from cmem.converge import pipeline
from cmem.converge.pipeline import PassOptions, run_pass
from cmem.errors import GitError
from cmem.vault.layers import open_vault
from pass_helpers import PROFILE
from support import git

CONFLICTED = "<<<<<<< ours\n- 早上写代码\n=======\n- 晚上写代码\n>>>>>>> theirs\n"


def test_the_snapshot_is_committed_before_the_engine_is_asked(pass_vault, monkeypatch):
    seen = []
    original = pipeline.check_replies

    def check_replies(*args, **kwargs):
        seen.append(git(pass_vault, "log", "-1", "--format=%s").strip())
        return original(*args, **kwargs)

    monkeypatch.setattr(pipeline, "check_replies", check_replies)
    (pass_vault / "2026-11-29 notes.md").write_text("- 其实我更喜欢早上写代码。\n", "utf-8")
    result = run_pass(open_vault(pass_vault), PassOptions(engine="builtin"))
    assert result.status == "applied"
    assert seen and seen[0].startswith("cmem: snapshot before")


def test_the_snapshots_error_is_the_passs_error(pass_vault):
    """Conflict markers stop the snapshot; the scan would meet an error of its own (no such
    note): the snapshot comes first, so its sentence is the one the user reads, and nothing of
    the pass is written."""
    (pass_vault / PROFILE).write_text(CONFLICTED, "utf-8")
    head = git(pass_vault, "rev-parse", "HEAD")
    with pytest.raises(GitError, match=f"{PROFILE} still holds conflict markers"):
        run_pass(open_vault(pass_vault), PassOptions(engine="builtin", only=["no such note"]))
    assert git(pass_vault, "rev-parse", "HEAD") == head
    assert (pass_vault / PROFILE).read_text("utf-8") == CONFLICTED


def test_a_pass_with_nothing_to_converge_still_commits_the_users_edits(pass_vault):
    (pass_vault / PROFILE).write_text(
        (pass_vault / PROFILE).read_text("utf-8") + "- 手写的一条（来源：[[2026-11-20 日记]]）\n",
        "utf-8",
    )
    (pass_vault / "2026-11-28 随手记.md").unlink()
    result = run_pass(open_vault(pass_vault), PassOptions(engine="builtin"))
    assert result.status == "nothing"
    assert result.snapshot_commit == git(pass_vault, "rev-parse", "HEAD").strip()
    assert not subprocess.run(
        ["git", "-C", str(pass_vault), "status", "--porcelain"], capture_output=True, text=True
    ).stdout.strip()
