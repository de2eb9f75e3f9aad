"""A FIFO, socket or device named `*.md` anywhere cmem walks (issue 43): opening a FIFO blocks
until something writes to it, so one such file hung status, context (the SessionStart hook),
recall, doctor and converge — converge holding the lock. Only regular files are opened; the
others are named, as odd files, and left as they are.

Real processes with a real FIFO (`os.mkfifo`) and a real socket; each command runs under
`run_cmem`'s timeout, which only turns a hang into a failure (no time is asserted).
"""

from __future__ import annotations

import json
import os
import socket
import stat
from datetime import date

import pytest

from support import copy_vault, run_cmem, vault_template

WHERE = ["converged/core", "converged/topics", "archive/2026-01", ".", "sessions"]
COMMANDS = [
    ["status"],
    ["scan"],
    ["context"],
    ["recall", "tea"],
    ["recall", "tea", "--archive"],
    ["doctor"],
    ["trace", "tea"],
    ["archive", "list"],
    ["converge", "--engine", "builtin"],
    ["archive", "apply", "--all", "--yes"],
    ["undo", "--yes"],
    ["note", "I prefer short notes"],
]


def _converged_once(root) -> None:
    assert run_cmem("init", str(root), "--lang", "en").returncode == 0
    (root / "2026-01-01 tea.md").write_text("- actually I prefer tea over coffee\n")
    assert cmem(root, "converge", "--engine", "builtin").returncode == 0
    (root / "2026-01-02 uv.md").write_text("- I decided to use uv from now on\n")


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return vault_template(tmp_path_factory, _converged_once)


@pytest.fixture
def vault(template, tmp_path):
    return copy_vault(template, tmp_path / "vault")


def cmem(root, *args: str):
    return run_cmem(*args, "--vault", str(root))


def odd_files(root) -> dict[str, str]:
    done = cmem(root, "status", "--json")
    assert done.returncode == 0, done.stderr
    return {odd["file"]: odd["message"] for odd in json.loads(done.stdout)["odd_files"]}


@pytest.mark.parametrize("where", WHERE)
def test_a_fifo_named_like_a_note_is_named_and_never_opened(vault, where):
    folder = vault / where
    folder.mkdir(parents=True, exist_ok=True)
    fifo = folder / "pipe.md"
    os.mkfifo(fifo)
    rel = os.path.normpath(os.path.join(where, "pipe.md"))
    assert odd_files(vault)[rel] == "is a FIFO, not a regular file; cmem never opens it"
    for command in COMMANDS:
        done = cmem(vault, *command)  # a hang is run_cmem's timeout: the test fails
        assert done.returncode == 0, (command, done.stderr)
        assert "Traceback" not in done.stderr, command
    hook = run_cmem("hook", "run", "session-start", "--agent", "claude-code", cwd=vault)
    assert hook.returncode == 0 and "additionalContext" in hook.stdout, hook.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # left as it is


def test_a_socket_in_memory_is_named_and_the_pass_goes_on(vault, tmp_path):
    path = vault / "converged/topics/sock.md"
    # a socket's path must be short (108 bytes): bind from inside its folder
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    here = os.getcwd()
    try:
        os.chdir(path.parent)
        server.bind(path.name)
    finally:
        os.chdir(here)
    try:
        assert odd_files(vault)["converged/topics/sock.md"].startswith("is a socket")
        for command in (["context"], ["doctor"], ["converge", "--engine", "builtin"]):
            done = cmem(vault, *command)
            assert done.returncode == 0 and "Traceback" not in done.stderr, command
    finally:
        server.close()


def test_today_s_capture_note_as_a_fifo_is_refused_in_one_sentence(vault):
    fifo = vault / f"{date.today().isoformat()} notes.md"
    os.mkfifo(fifo)
    done = cmem(vault, "note", "a line")
    if not stat.S_ISFIFO(os.lstat(fifo).st_mode):
        pytest.skip("midnight passed between the FIFO and the note")
    assert done.returncode == 1 and done.stderr == (
        f"error: {fifo.name} is a FIFO, not a regular file; cmem will not write to it.\n"
    )


def test_a_checklist_that_is_a_fifo_stops_no_reader_and_is_one_sentence_to_a_writer(vault):
    checklist = vault / "archive/ARCHIVE-CHECKLIST.md"
    checklist.unlink()
    os.mkfifo(checklist)
    assert "archive/ARCHIVE-CHECKLIST.md" in odd_files(vault)
    for command in (["scan"], ["context"]):
        assert cmem(vault, *command).returncode == 0, command
    for command in (["archive", "list"], ["converge", "--engine", "builtin"]):
        done = cmem(vault, *command)
        assert done.returncode == 1 and done.stderr == (
            f"error: {checklist}: is a FIFO, not a regular file.\n"
        ), command
