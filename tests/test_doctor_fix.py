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
from cmem.archive import list_staged
from cmem.converge.pipeline import PassOptions, run_pass
from cmem.lock import vault_lock
from cmem.state import load_state
from cmem.vault import open_vault
from conftest import git


def cmem(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k not in ("CMEM_VAULT", "CMEM_LLM", "CMEM_FAULT")}
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "cmem", *args], capture_output=True, text=True, env=full,
                          stdin=subprocess.DEVNULL, timeout=120)


@pytest.fixture
def vault_root(tmp_path) -> Path:
    root, _ = harness.fresh_vault(harness.make_corpus_template(tmp_path), tmp_path, "vault")
    return root


def interrupted(doctor: subprocess.CompletedProcess) -> list[str]:
    return [line for line in doctor.stdout.splitlines() if "interrupted:" in line]


def managed_status(root: Path) -> str:
    return git(root, "status", "--porcelain", "--", "converged", "archive", ".cmem", rv.NOTE, rv.NOTE2)


# --- a pass killed mid-way ----------------------------------------------------------------------


@pytest.mark.parametrize("fault", ["replace:1", "applied"])
def test_a_killed_pass_is_reported_and_finished(vault_root, fault):
    killed = cmem("converge", "--engine", "builtin", "--vault", str(vault_root), env={"CMEM_FAULT": fault})
    assert killed.returncode == -signal.SIGKILL
    doctor = cmem("doctor", "--vault", str(vault_root))
    assert any("a pass was interrupted" in line and "--fix" in line for line in interrupted(doctor)), doctor.stdout
    refused = cmem("doctor", "--fix", "--vault", str(vault_root))  # no terminal, no --yes
    assert refused.returncode == 1 and "--yes" in refused.stderr
    fixed = cmem("doctor", "--fix", "--yes", "--json", "--vault", str(vault_root))
    report = json.loads(fixed.stdout)
    assert any("rolled forward" in line for line in report["fixed"]), report
    assert not any(f["check"] == "interrupted" for f in report["findings"])
    assert git(vault_root, "log", "-1", "--format=%s").startswith("cmem: converge")
    assert managed_status(vault_root) == ""
    assert cmem("converge", "--engine", "builtin", "--vault", str(vault_root)).stdout.startswith("nothing to converge")


# --- an archive apply killed mid-way -------------------------------------------------------------

KILLER = """
import os, signal, sys
import cmem.archive as archive
point, nth = sys.argv[1], int(sys.argv[2])
calls = {"n": 0}
original = getattr(archive, point)
def killed(*args, **kwargs):
    calls["n"] += 1
    if calls["n"] == nth:
        os.kill(os.getpid(), signal.SIGKILL)
    return original(*args, **kwargs)
setattr(archive, point, killed)
from cmem.cli import main
sys.argv = ["cmem", *sys.argv[3:]]
main()
"""


def kill_archive_apply(root: Path, point: str, nth: int = 1) -> None:
    done = subprocess.run([sys.executable, "-c", KILLER, point, str(nth), "archive", "apply", "--all", "--yes", "--vault", str(root)],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr


@pytest.fixture
def staged(vault_root) -> Path:
    result = run_pass(open_vault(vault_root), PassOptions(engine="builtin", now=harness.PASS_NOW))
    assert result.status == "applied" and sorted(result.staged) == ["2026-11-28 随手记", "2026-11-29 notes"]
    return vault_root


@pytest.mark.parametrize(("point", "nth", "moved"), [
    ("_move", 2, 1),  # killed between the first and the second move
    ("_rewrite_checklist_and_state", 1, 2),  # every note moved, checklist and state not yet written
    ("commit_exact", 1, 2),  # everything written, the commit not made
])
def test_an_interrupted_archive_apply_is_reported_and_finished(staged, point, nth, moved):
    before = {rel: (staged / rel).read_bytes() for rel in (rv.NOTE, rv.NOTE2)}
    kill_archive_apply(staged, point, nth)
    doctor = cmem("doctor", "--vault", str(staged))
    lines = interrupted(doctor)
    assert len(lines) == 1 and f"{moved} note" in lines[0] and "--fix" in lines[0], doctor.stdout
    fixed = cmem("doctor", "--fix", "--yes", "--vault", str(staged))
    assert fixed.returncode == 0 and "fixed: finished the interrupted archive apply" in fixed.stdout, fixed.stdout + fixed.stderr
    assert interrupted(cmem("doctor", "--vault", str(staged))) == []
    message = git(staged, "log", "-1", "--format=%B")
    assert message.startswith("cmem: archive") and "Cmem-Pass:" in message and "doctor --fix" in message
    assert managed_status(staged) == ""
    # every note kept its bytes, wherever it is now; moved ones left the checklist, the others wait
    archived = sorted((staged / "archive/2026-11").glob("2026-11-2[89]*.md"))
    assert len(archived) == moved
    for path in archived:
        assert path.read_bytes() == before[path.name]
    vault = open_vault(staged)
    waiting = [line.note for line in list_staged(vault)]
    assert len(waiting) == 2 - moved and all(line.state == "ready" for line in list_staged(vault))
    state = load_state(vault.state_file)
    assert all(f"archive/2026-11/{p.name}" in state.notes for p in archived)
    if moved < 2:  # the rest can still be archived as usual
        assert cmem("archive", "apply", "--all", "--yes", "--vault", str(staged)).returncode == 0
        assert list_staged(open_vault(staged)) == []


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
    assert sum("left by a git that was killed" in line for line in interrupted(doctor) + doctor.stdout.splitlines()) >= 2
    fixed = cmem("doctor", "--fix", "--yes", "--vault", str(vault_root))
    assert fixed.returncode == 0 and not lock.exists() and not branch_lock.exists(), fixed.stdout + fixed.stderr
    assert f"fixed: removed {lock}" in fixed.stdout
    assert cmem("converge", "--engine", "builtin", "--vault", str(vault_root)).returncode == 0


def test_a_fresh_git_lock_is_reported_and_kept(vault_root):
    lock = old(vault_root / ".git/index.lock", 1)
    doctor = cmem("doctor", "--vault", str(vault_root))
    assert any(str(lock) in line and "no git process is running" in line for line in doctor.stdout.splitlines())
    fixed = cmem("doctor", "--fix", "--yes", "--vault", str(vault_root))
    assert fixed.returncode == 0 and lock.exists() and "fixed:" not in fixed.stdout


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="finds git processes by their folder in /proc")
def test_an_old_git_lock_is_kept_while_a_git_runs_in_the_repository(vault_root):
    lock = old(vault_root / ".git/index.lock", 10)
    waiting_git = subprocess.Popen(["git", "-C", str(vault_root), "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.2)
        doctor = cmem("doctor", "--vault", str(vault_root))
        assert any("a git process is running" in line and str(waiting_git.pid) in line for line in doctor.stdout.splitlines()), doctor.stdout
        cmem("doctor", "--fix", "--yes", "--vault", str(vault_root))
        assert lock.exists()
    finally:
        waiting_git.kill()
        waiting_git.wait()


# --- cmem's own lock ----------------------------------------------------------------------------


def test_cmems_own_lock_cannot_go_stale(vault_root, tmp_path):
    """A pass killed while it holds the lock leaves the lock file, not the lock: the next pass runs."""
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time\nfrom cmem.lock import vault_lock\nfrom cmem.vault import open_vault\n"
        f"with vault_lock(open_vault({str(vault_root)!r}).state_dir):\n    print('held', flush=True)\n    time.sleep(60)\n")],
        stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    doctor = cmem("doctor", "--vault", str(vault_root))
    assert f"a pass is running (pid {holder.pid}" in doctor.stdout
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert "no pass is running" in cmem("doctor", "--vault", str(vault_root)).stdout
    with vault_lock(open_vault(vault_root).state_dir):
        pass  # taken at once
