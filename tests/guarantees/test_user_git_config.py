"""cmem's own git commands are immune to the user's line-end settings (issue 43): with
`core.autocrlf=true` and `core.safecrlf=true` in the user's global git config, `init` failed
half-done ("LF would be replaced by CRLF in .cmem/backlog.json") and every pass failed on a file
cmem wrote. Every git command cmem runs carries `core.safecrlf=false` (`SAFE_GIT_OPTIONS`); the
conversion itself still applies, so blobs are stored as git would store them (a CRLF checkout
keeps LF in the repository: `tests/steps/test_step_seams.py`, g).

Real git with a real `~/.gitconfig` in the test's own HOME, real cmem processes.
"""

from __future__ import annotations

import subprocess

import pytest

from support import git, run_cmem

SETTINGS = {
    "autocrlf-true": {"core.autocrlf": "true", "core.safecrlf": "true"},
    "autocrlf-input": {"core.autocrlf": "input", "core.safecrlf": "true"},
    "eol-crlf-text-auto": {
        "core.eol": "crlf",
        "core.safecrlf": "true",
        "attributes": "* text=auto",
    },
}


@pytest.mark.parametrize("name", SETTINGS)
def test_every_step_works_under_the_user_s_line_end_settings(tmp_path, isolated_home, name):
    settings = dict(SETTINGS[name])
    attributes = settings.pop("attributes", None)
    if attributes:
        (isolated_home / "attributes").write_text(attributes + "\n")
        settings["core.attributesFile"] = str(isolated_home / "attributes")
    for key, value in settings.items():
        subprocess.run(["git", "config", "--global", key, value], check=True)

    root = tmp_path / "vault"
    root.mkdir()
    (root / "2026-01-01 tea.md").write_text("- actually I prefer tea over coffee\n")
    done = run_cmem("init", str(root), "--lang", "en")
    assert done.returncode == 0, done.stderr
    assert "cmem: init vault" in git(root, "log", "--format=%s")

    def cmem(*args: str) -> str:
        done = run_cmem(*args, "--vault", str(root))
        assert done.returncode == 0, (args, done.stderr)
        return done.stdout

    (root / "2026-01-02 uv.md").write_text("- I decided to use uv from now on\n")
    cmem("converge", "--engine", "builtin")  # the adopted note's cue line and the new note
    cmem("note", "I prefer short notes")
    cmem("archive", "apply", "--all", "--yes")
    cmem("undo", "--yes")
    cmem("converge", "--engine", "builtin")
    cmem("doctor")
    subjects = git(root, "log", "--format=%s")
    assert subjects.count("cmem: converge") == 2 and "cmem: undo archive" in subjects
    assert git(root, "status", "--porcelain", "--", ".cmem", "converged", "archive") == ""
    assert git(root, "fsck", "--no-progress") == ""

    # a second machine through a remote: sync merges and pushes under the same settings
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(root), str(remote))
    git(root, "remote", "add", "origin", str(remote))
    git(root, "fetch", "-q", "origin")
    git(root, "branch", "-q", "-u", f"origin/{git(root, 'branch', '--show-current').strip()}")
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    (other / "2026-01-03 fish.md").write_text("- actually I prefer fish over bash\n")
    done = run_cmem("converge", "--engine", "builtin", "--vault", str(other))
    assert done.returncode == 0, done.stderr
    assert run_cmem("sync", "--vault", str(other)).returncode == 0
    done = run_cmem("sync", "--vault", str(root))
    assert done.returncode == 0, done.stderr
    assert (root / "2026-01-03 fish.md").exists()
