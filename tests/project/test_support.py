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


def test_a_test_that_undoes_the_home_isolation_fails(tmp_path):
    """`monkeypatch.undo()` undoes the autouse isolation too (conftest.py: `isolated_home`), and
    what runs after it writes state into the real HOME and needs a global git identity: the
    fixture fails such a test at teardown. Run here as a plugin over a probe test of its own."""
    import sys

    from support import TESTS

    probe = tmp_path / "test_probe.py"
    probe.write_text(
        "def test_undoes(monkeypatch):\n"
        "    monkeypatch.setenv('X_PROBE', '1')\n"
        "    monkeypatch.undo()\n\n\n"
        "def test_scoped(monkeypatch):\n"
        "    with monkeypatch.context() as patch:\n"
        "        patch.setenv('X_PROBE', '1')\n",
        encoding="utf-8",
    )
    env = dict(os.environ, PYTHONPATH=str(TESTS), HOME=str(tmp_path / "real-home"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-n",
            "0",
            "-p",
            "conftest",
            "-p",
            "no:cacheprovider",
            str(probe),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    assert "2 passed, 1 error" in done.stdout, done.stdout  # the error: test_undoes, at teardown
    assert "ERROR" in done.stdout and "test_undoes" in done.stdout
    assert "undid the home isolation" in done.stdout


def test_no_test_calls_monkeypatch_undo():
    from support import TESTS

    found = [
        f"{path.relative_to(TESTS)}:{number}"
        for path in sorted(TESTS.rglob("*.py"))
        for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1)
        if "monkeypatch.undo()" in line and '"' not in line and "'" not in line
    ]
    assert found == [], "use `with monkeypatch.context() as patch:` instead: " + ", ".join(found)


def test_no_test_starts_just_before_midnight():
    """The clock read is faked: 30 s before a local midnight waits 31 s, the noon does not wait."""
    import time

    from support import MIDNIGHT_MARGIN, seconds_to_midnight, wait_out_midnight

    noon = time.mktime((2026, 12, 3, 12, 0, 0, 0, 0, -1))
    assert seconds_to_midnight(noon) == 12 * 3600
    slept: list[float] = []
    assert wait_out_midnight(lambda: noon, slept.append) == 0.0 and slept == []
    late = time.mktime((2026, 12, 3, 23, 59, 30, 0, 0, -1))
    assert wait_out_midnight(lambda: late, slept.append) == 31.0 and slept == [31.0]
    edge = time.mktime((2026, 12, 31, 23, 58, 0, 0, 0, -1))  # the year's end too
    assert seconds_to_midnight(edge) == MIDNIGHT_MARGIN


def test_the_longest_modules_run_first_and_each_is_named_right(request):
    """conftest.py's LONGEST_FIRST names test files that exist, and this session's collection
    (whatever part of the suite it is) holds their tests first, in the list's order, each whole."""
    from conftest import LONGEST_FIRST
    from support import TESTS

    assert [name for name in LONGEST_FIRST if not (TESTS / name).is_file()] == []
    order = [item.path.relative_to(TESTS).as_posix() for item in request.session.items]
    listed = [name for name in order if name in LONGEST_FIRST]
    assert order[: len(listed)] == listed
    assert listed == sorted(listed, key=LONGEST_FIRST.index)
