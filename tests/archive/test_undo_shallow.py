"""`undo` in a shallow clone (issue 43): the pass's parent is not in the clone, and undo said the
pass "is the first commit of the repository". It says the history is shallow and how to deepen
it; deepened, the same undo works. Real git clones, real processes."""

from __future__ import annotations

from support import git, run_cmem


def test_undo_in_a_shallow_clone_says_so_and_works_once_deepened(tmp_path):
    origin = tmp_path / "origin"
    assert run_cmem("init", str(origin), "--lang", "en").returncode == 0
    (origin / "2026-01-01 tea.md").write_text("- actually I prefer tea over coffee\n")
    done = run_cmem("converge", "--engine", "builtin", "--vault", str(origin))
    assert done.returncode == 0, done.stderr
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{origin}", str(clone))
    assert git(clone, "rev-parse", "--is-shallow-repository").strip() == "true"

    done = run_cmem("undo", "--yes", "--vault", str(clone))
    assert done.returncode == 1
    assert "first commit" not in done.stderr
    assert "history is shallow" in done.stderr and "git fetch --unshallow" in done.stderr
    assert git(clone, "status", "--porcelain") == ""

    git(clone, "fetch", "-q", "--unshallow")
    done = run_cmem("undo", "--yes", "--vault", str(clone))
    assert done.returncode == 0, done.stderr
    assert not (clone / "converged/core/profile.md").exists()
