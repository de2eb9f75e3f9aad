"""`cmem doctor` reports, and `cmem doctor --fix` repairs after confirmation, what an interrupted
run leaves behind (issue 6): a pass journal, an interrupted archive apply, git lock files a killed
git left. Each leftover is made the way it happens — a real SIGKILL at a real step — then
repaired through the CLI, and the vault checked: committed, clean, nothing lost.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import reliability_harness as harness
import reply_variants as rv
from cmem.archive.gate import list_staged
from cmem.converge.pipeline import PassOptions, run_pass
from cmem.steps.lock import vault_lock
from cmem.vault.layers import open_vault
from cmem.vault.state_json import load_state
from support import git
from support import run_cmem as cmem


@pytest.fixture
def vault_root(tmp_path) -> Path:
    root, _ = harness.fresh_vault(harness.make_corpus_template(tmp_path), tmp_path, "vault")
    return root


def interrupted(doctor: subprocess.CompletedProcess) -> list[str]:
    return [line for line in doctor.stdout.splitlines() if "interrupted:" in line]


def managed_status(root: Path) -> str:
    return git(
        root, "status", "--porcelain", "--", "converged", "archive", ".cmem", rv.NOTE, rv.NOTE2
    )


# --- a pass killed mid-way ----------------------------------------------------------------------


@pytest.mark.parametrize("fault", ["replace:1", "applied"])
def test_a_killed_pass_is_reported_and_finished(vault_root, fault):
    killed = cmem(
        "converge", "--engine", "builtin", "--vault", str(vault_root), env={"CMEM_FAULT": fault}
    )
    assert killed.returncode == -signal.SIGKILL
    doctor = cmem("doctor", "--vault", str(vault_root))
    assert any(
        "a pass was interrupted" in line and "--fix" in line for line in interrupted(doctor)
    ), doctor.stdout
    refused = cmem("doctor", "--fix", "--vault", str(vault_root))  # no terminal, no --yes
    assert refused.returncode == 1 and "--yes" in refused.stderr
    fixed = cmem("doctor", "--fix", "--yes", "--json", "--vault", str(vault_root))
    report = json.loads(fixed.stdout)
    assert any("rolled forward" in line for line in report["fixed"]), report
    assert not any(f["check"] == "interrupted" for f in report["findings"])
    assert git(vault_root, "log", "-1", "--format=%s").startswith("cmem: converge")
    assert managed_status(vault_root) == ""
    assert cmem("converge", "--engine", "builtin", "--vault", str(vault_root)).stdout.startswith(
        "nothing to converge"
    )


# --- an archive apply killed mid-way -------------------------------------------------------------


def kill_archive_apply(root: Path, fault: str) -> None:
    done = cmem(
        "archive", "apply", "--all", "--yes", "--vault", str(root), env={"CMEM_FAULT": fault}
    )
    assert done.returncode == -signal.SIGKILL, done.stderr


@pytest.fixture
def staged(vault_root) -> Path:
    result = run_pass(open_vault(vault_root), PassOptions(engine="builtin", now=harness.PASS_NOW))
    assert result.status == "applied" and sorted(result.staged) == [
        "2026-11-28 随手记",
        "2026-11-29 notes",
    ]
    return vault_root


@pytest.mark.parametrize(
    "fault",
    [
        "replace:2",  # killed between the first and the second file of the apply
        "replace:4",  # both notes written at their archive paths, the roots not yet removed
        "applied",  # every file changed, the commit not made
        "git-commit",  # the commit object exists, the branch not moved
    ],
)
def test_an_interrupted_archive_apply_is_reported_and_finished(staged, fault):
    before = {rel: (staged / rel).read_bytes() for rel in (rv.NOTE, rv.NOTE2)}
    kill_archive_apply(staged, fault)
    doctor = cmem("doctor", "--vault", str(staged))
    lines = interrupted(doctor)
    assert (
        len(lines) == 1 and "an archive apply was interrupted" in lines[0] and "--fix" in lines[0]
    ), doctor.stdout
    fixed = cmem("doctor", "--fix", "--yes", "--vault", str(staged))
    assert (
        fixed.returncode == 0
        and "interrupted archive apply" in fixed.stdout
        and "rolled forward" in fixed.stdout
    ), fixed.stdout + fixed.stderr
    assert interrupted(cmem("doctor", "--vault", str(staged))) == []
    message = git(staged, "log", "-1", "--format=%B")
    assert message.startswith("cmem: archive") and "Cmem-Pass:" in message
    assert managed_status(staged) == ""
    # the apply was confirmed, so it is finished whole: every note moved once, bytes kept
    archived = sorted((staged / "archive/2026-11").glob("2026-11-2[89]*.md"))
    assert [p.name for p in archived] == sorted(Path(rel).name for rel in before)
    for path in archived:
        assert path.read_bytes() == before[path.name]
        assert not (staged / path.name).exists()
    vault = open_vault(staged)
    assert list_staged(vault) == []
    state = load_state(vault.state_file)
    assert all(f"archive/2026-11/{p.name}" in state.notes for p in archived)
    head_files = git(
        staged, "-c", "core.quotePath=false", "ls-tree", "-r", "--name-only", "HEAD"
    ).splitlines()
    for name in before:
        assert sum(1 for f in head_files if f.endswith(Path(name).name)) == 1


def test_a_legacy_interrupted_archive_apply_is_finished(staged):
    """cmem 0.1 moved notes with `git mv` before committing, with no journal: such a move staged
    in git with its checklist line still there is finished by doctor --fix."""
    (staged / "archive/2026-11").mkdir(parents=True, exist_ok=True)
    git(staged, "mv", rv.NOTE, f"archive/2026-11/{Path(rv.NOTE).name}")
    lines = interrupted(cmem("doctor", "--vault", str(staged)))
    assert len(lines) == 1 and "1 note" in lines[0], lines
    fixed = cmem("doctor", "--fix", "--yes", "--vault", str(staged))
    assert fixed.returncode == 0 and "finished the interrupted archive apply" in fixed.stdout, (
        fixed.stdout + fixed.stderr
    )
    head_files = git(
        staged, "-c", "core.quotePath=false", "ls-tree", "-r", "--name-only", "HEAD"
    ).splitlines()
    assert f"archive/2026-11/{Path(rv.NOTE).name}" in head_files and rv.NOTE not in head_files
    assert [line.note for line in list_staged(open_vault(staged))] == ["2026-11-29 notes"]


def test_a_note_moved_into_the_archive_by_hand_is_not_called_interrupted(staged):
    (staged / "archive/2026-10").mkdir()
    git(staged, "mv", "private/secrets.md", "archive/2026-10/secrets.md")
    assert interrupted(cmem("doctor", "--vault", str(staged))) == []


# --- git lock files ------------------------------------------------------------------------------


def old(path: Path, minutes: float) -> Path:
    path.write_text("")
    stamp = time.time() - minutes * 60
    os.utime(path, (stamp, stamp))
    return path


def test_a_stale_git_lock_is_removed(vault_root):
    lock = old(vault_root / ".git/index.lock", 10)
    branch_lock = old(vault_root / ".git/refs/heads/main.lock", 10)
    doctor = cmem("doctor", "--vault", str(vault_root))
    assert (
        sum(
            "left by a git that was killed" in line
            for line in interrupted(doctor) + doctor.stdout.splitlines()
        )
        >= 2
    )
    fixed = cmem("doctor", "--fix", "--yes", "--vault", str(vault_root))
    assert fixed.returncode == 0 and not lock.exists() and not branch_lock.exists(), (
        fixed.stdout + fixed.stderr
    )
    assert f"fixed: removed {lock}" in fixed.stdout
    assert cmem("converge", "--engine", "builtin", "--vault", str(vault_root)).returncode == 0


def test_a_fresh_git_lock_is_reported_and_kept(vault_root):
    lock = old(vault_root / ".git/index.lock", 1)
    doctor = cmem("doctor", "--vault", str(vault_root))
    assert any(
        str(lock) in line and "no git process is running" in line
        for line in doctor.stdout.splitlines()
    )
    fixed = cmem("doctor", "--fix", "--yes", "--vault", str(vault_root))
    assert fixed.returncode == 0 and lock.exists() and "fixed:" not in fixed.stdout


@pytest.mark.skipif(
    not os.path.isdir("/proc/self"), reason="finds git processes by their folder in /proc"
)
def test_an_old_git_lock_is_kept_while_a_git_runs_in_the_repository(vault_root):
    lock = old(vault_root / ".git/index.lock", 10)
    waiting_git = subprocess.Popen(
        ["git", "-C", str(vault_root), "cat-file", "--batch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    try:
        time.sleep(0.2)
        doctor = cmem("doctor", "--vault", str(vault_root))
        assert any(
            "a git process is running" in line and str(waiting_git.pid) in line
            for line in doctor.stdout.splitlines()
        ), doctor.stdout
        cmem("doctor", "--fix", "--yes", "--vault", str(vault_root))
        assert lock.exists()
    finally:
        waiting_git.kill()
        waiting_git.wait()


# --- cmem's own lock ----------------------------------------------------------------------------


def test_cmems_own_lock_cannot_go_stale(vault_root, tmp_path):
    """A pass killed while it holds the lock leaves the lock file, not the lock: the next pass runs."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys, time\nfrom cmem.steps.lock import vault_lock\nfrom cmem.vault.layers import open_vault\n"
                f"with vault_lock(open_vault({str(vault_root)!r}).machine_dir):\n    print('held', flush=True)\n    time.sleep(60)\n"
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "held"
    doctor = cmem("doctor", "--vault", str(vault_root))
    assert f"a pass is running (pid {holder.pid}" in doctor.stdout
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert "no pass is running" in cmem("doctor", "--vault", str(vault_root)).stdout
    with vault_lock(open_vault(vault_root).machine_dir):
        pass  # taken at once


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")
@pytest.mark.parametrize(
    "error, counted",
    [(FileNotFoundError, False), (ProcessLookupError, False), (PermissionError, True)],
)
def test_a_git_that_ends_while_it_is_looked_at_is_not_counted(
    vault_root, tmp_path, monkeypatch, error, counted
):
    """git_processes reads a git process's name, then its folder: a process that ended between
    the two (a short git of anything else on the machine) holds no lock and must not make a stale
    lock look in use; one whose folder cannot be read (another user's) still counts."""
    import subprocess

    from cmem.doctor import doctor_fix

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # a real git process, waiting on its stdin, working in another folder
    waiting = subprocess.Popen(
        ["git", "hash-object", "--stdin"], cwd=elsewhere, stdin=subprocess.PIPE
    )
    try:
        for _ in range(100):
            if Path(f"/proc/{waiting.pid}/comm").read_text().strip() == "git":
                break
            time.sleep(0.01)
        assert waiting.pid not in doctor_fix.git_processes(vault_root)  # not in the vault
        real = os.readlink

        def readlink(path, *args, **kwargs):
            if path == f"/proc/{waiting.pid}/cwd":
                raise error(path)
            return real(path, *args, **kwargs)

        monkeypatch.setattr(os, "readlink", readlink)
        assert (waiting.pid in doctor_fix.git_processes(vault_root)) is counted
    finally:
        waiting.communicate(b"")
