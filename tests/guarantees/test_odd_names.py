"""File names that are not valid UTF-8 (issue #10): Python hands them over with surrogates, which
crash whatever encodes them — JSON, git, a print. Such a file, wherever it is, is named once as an
odd file (its bad bytes shown as `\\xff`) and skipped: never read as a note, never sent to git or
to the model, and no command crashes on it. Real processes, as a user runs them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import SAMPLE_VAULT, git, git_init, isolated_env

MARKER = "以后都用 BADNAME-MARKER，不要再用 pip"  # a correction cue: read as a note, it would be a signal
BAD = {
    b"bad\xff name.md": "bad\\xff name.md",  # vault root: the divergent layer
    b"converged/core/core\xfe.md": "converged/core/core\\xfe.md",
    b"converged/topics/t\xff.md": "converged/topics/t\\xff.md",
    b"converged/topics/dir\xff": "converged/topics/dir\\xff",  # a folder inside a layer
    b"archive/2026-10/a\xff.md": "archive/2026-10/a\\xff.md",
}
UNMANAGED = {b"attachments/x\xff.md": "attachments/x\\xff.md", b"unmanaged\xff": "unmanaged\\xff"}


def _env(home: Path) -> dict:
    return isolated_env(home, PYTHONIOENCODING="utf-8:strict")


def _add_bad_names(root: Path, names) -> None:
    for raw in names:
        path = os.path.join(os.fsencode(root), raw)
        if raw.endswith(b".md"):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(f"- {MARKER}\n".encode())
        else:
            os.makedirs(path, exist_ok=True)
            with open(os.path.join(path, b"inside.md"), "wb") as handle:
                handle.write(f"- {MARKER}\n".encode())


@pytest.fixture
def odd_vault(tmp_path) -> tuple[Path, Path]:
    """The sample vault with undecodable names in every layer and in unmanaged folders, committed
    (as a user who ran `git add -A` would have them)."""
    root = tmp_path / "vault"
    shutil.copytree(SAMPLE_VAULT, root, symlinks=True)
    _add_bad_names(root, [*BAD, *UNMANAGED])
    git_init(root)
    home = tmp_path / "home"
    home.mkdir()
    return root, home


def _run(root: Path, home: Path, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "cmem", *args, "--vault", str(root)],
        env=_env(home),
        capture_output=True,
        timeout=120,
    )
    out, err = (
        done.stdout.decode("utf-8"),
        done.stderr.decode("utf-8"),
    )  # strict: nothing undecodable is printed
    assert "Traceback" not in err, f"cmem {' '.join(args)}:\n{err}"
    assert "\\udc" not in out + err, "a name reached the output unescaped"
    assert MARKER not in out + err, "a file with an undecodable name was read"
    return subprocess.CompletedProcess(done.args, done.returncode, out, err)


COMMANDS = [
    ("scan",),
    ("scan", "--json"),
    ("status",),
    ("status", "--json"),
    ("context",),
    ("context", "--json"),
    ("recall", "pip"),
    ("recall", "pip", "--json"),
    ("recall", "pip", "--archive", "--json"),
    ("doctor",),
    ("doctor", "--json"),
    ("archive", "list", "--json"),
    ("trace", "pip"),
    ("converge", "--engine", "builtin", "--dry-run"),
    ("converge", "--engine", "builtin", "--dry-run", "--json"),
    ("converge", "--engine", "builtin", "--emit-prompt"),
    ("note", "以后都先写测试"),
    ("note", "再记一条", "--json"),
]


@pytest.mark.parametrize("args", COMMANDS, ids=[" ".join(a) for a in COMMANDS])
def test_no_command_crashes_on_undecodable_names(odd_vault, args):
    root, home = odd_vault
    done = _run(root, home, *args)
    assert done.returncode == 0, done.stderr


def test_they_are_odd_files_named_once_with_the_bytes_escaped(odd_vault):
    root, home = odd_vault
    status = json.loads(_run(root, home, "status", "--json").stdout)
    odd = [entry["file"] for entry in status["odd_files"] if entry["kind"] == "undecodable-name"]
    assert sorted(odd) == sorted(BAD.values())  # the managed folders; unmanaged ones are not walked
    scan = json.loads(_run(root, home, "scan", "--json").stdout)
    assert sorted(o["note"] for o in scan["odd"] if o["kind"] == "undecodable-name") == sorted(
        BAD.values()
    )
    assert not any("\\x" in s["note"] for s in scan["signals"])
    doctor = _run(root, home, "doctor").stdout
    for shown in [*BAD.values(), *UNMANAGED.values()]:
        assert doctor.count(f"odd file: {shown} ") == 1, shown


def test_a_pass_never_reads_or_commits_them(odd_vault):
    root, home = odd_vault
    done = _run(root, home, "converge", "--engine", "builtin")
    assert done.returncode == 0 and "bad\\xff name.md" in done.stdout, done.stdout + done.stderr
    changed = git(root, "-c", "core.quotePath=true", "show", "--name-only", "--format=", "HEAD")
    assert "\\377" not in changed and "\\376" not in changed and changed.strip()
    state = (root / ".cmem/state.json").read_text("utf-8")
    assert "\\udc" not in state and "bad" not in json.loads(state)["notes"]


def test_a_pass_with_untracked_undecodable_names_does_not_crash(tmp_path):
    root = tmp_path / "vault"
    shutil.copytree(SAMPLE_VAULT, root, symlinks=True)
    git_init(root)
    _add_bad_names(root, BAD)  # created after the last commit: git status lists them
    home = tmp_path / "home"
    home.mkdir()
    done = _run(root, home, "converge", "--engine", "builtin")
    assert done.returncode == 0, done.stderr
