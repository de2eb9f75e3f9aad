"""The shared test helpers can fail: a snapshot sees every kind of write, the runner isolates."""

from __future__ import annotations

import os
import subprocess

from support import git_init, run_cmem, snapshot, write_files


def test_a_snapshot_sees_a_byte_a_link_a_commit_and_with_folders_an_empty_folder(tmp_path):
    root = tmp_path / "v"
    write_files(root, {"a.md": "one\n", "sub/b.md": "two\n"})
    os.symlink("a.md", root / "link.md")
    git_init(root)
    before = snapshot(root)
    assert set(before) >= {"a.md", "sub/b.md", "link.md", ".git/HEAD", "<HEAD>"}
    (root / "a.md").write_text("one!\n", "utf-8")
    assert snapshot(root) != before
    (root / "a.md").write_text("one\n", "utf-8")
    os.remove(root / "link.md")
    os.symlink("sub/b.md", root / "link.md")
    assert snapshot(root)["link.md"] == b"link:sub/b.md"
    os.remove(root / "link.md")
    os.symlink("a.md", root / "link.md")
    assert snapshot(root) == before
    (root / "empty").mkdir()
    assert snapshot(root) == before  # files and links only, by default
    assert snapshot(root, folders=True)["empty"] == b"<folder>"
    subprocess.run(["git", "-C", str(root), "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    assert snapshot(root)["<HEAD>"] != before["<HEAD>"]


def test_a_snapshot_never_opens_a_fifo_and_names_several_roots_by_their_path(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    write_files(one, {"x.md": "x\n"})
    write_files(two, {"x.md": "y\n"})
    os.mkfifo(one / "pipe")
    both = snapshot(one, two)
    assert both[f"{one}/pipe"] == b"<special>"
    assert both[f"{one}/x.md"] == b"x\n" and both[f"{two}/x.md"] == b"y\n"


def test_run_cmem_leaves_the_callers_cmem_variables_out(tmp_path, monkeypatch):
    monkeypatch.setenv("CMEM_VAULT", str(tmp_path / "nowhere"))
    done = run_cmem("status", "--json", cwd=tmp_path)
    assert done.returncode == 1 and "nowhere" not in done.stderr, done.stderr
    given = run_cmem("status", env={"CMEM_VAULT": str(tmp_path / "nowhere")}, cwd=tmp_path)
    assert given.returncode == 1 and "nowhere" in given.stderr, given.stderr
