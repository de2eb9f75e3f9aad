"""A pass's snapshot of the user's edits is taken in a thread while the pass imports and scans
(`steps/runner.py: SnapshotMeanwhile`): it still comes first in everything but time — committed
before the engine is asked and before anything of the pass is written, its error the pass's
error, and no fork made while it runs (`cmem/fork_safety.py`)."""

from __future__ import annotations

import os
import subprocess
import threading
import time

import pytest

from cmem import fork_safety
from cmem.converge import pipeline
from cmem.converge.pipeline import PassOptions, run_pass
from cmem.errors import GitError
from cmem.scan import in_processes
from cmem.steps import preflight
from cmem.vault.layers import open_vault
from pass_helpers import PROFILE
from support import git

CONFLICTED = "<<<<<<< ours\n- 早上写代码\n=======\n- 晚上写代码\n>>>>>>> theirs\n"


def test_the_scan_runs_while_the_snapshot_is_taken(pass_vault, monkeypatch):
    """The snapshot waits until the scan has started: were it taken first, as before, the pass
    would wait for it forever (the event's timeout fails the test instead)."""
    scanning = threading.Event()
    snapshot, scan = preflight.snapshot, pipeline.gather

    def snapshot_after_the_scan_started(vault, before):
        assert scanning.wait(10), "the scan did not start while the snapshot was being taken"
        return snapshot(vault, before)

    def gather(*args, **kwargs):
        scanning.set()
        return scan(*args, **kwargs)

    monkeypatch.setattr(preflight, "snapshot", snapshot_after_the_scan_started)
    monkeypatch.setattr(pipeline, "gather", gather)
    (pass_vault / "2026-11-29 notes.md").write_text("- 其实我更喜欢早上写代码。\n", "utf-8")
    result = run_pass(open_vault(pass_vault), PassOptions(engine="builtin"))
    assert result.status == "applied" and result.snapshot_commit
    assert git(pass_vault, "rev-parse", f"{result.commit}^").strip() == result.snapshot_commit


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
    """Conflict markers stop the snapshot; the scan meanwhile meets an error of its own (no such
    note): the snapshot came first, so its sentence is the one the user reads, and nothing of
    the pass is written."""
    (pass_vault / PROFILE).write_text(CONFLICTED, "utf-8")
    head = git(pass_vault, "rev-parse", "HEAD")
    with pytest.raises(GitError, match=f"{PROFILE} still holds conflict markers"):
        run_pass(open_vault(pass_vault), PassOptions(engine="builtin", only=["no such note"]))
    assert git(pass_vault, "rev-parse", "HEAD") == head
    assert (pass_vault / PROFILE).read_text("utf-8") == CONFLICTED
    assert not fork_safety._waits  # nothing is left registered


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


def test_a_fork_waits_for_registered_work_and_keeps_to_one_process_for_other_threads():
    """Work registered while it runs (a snapshot) is waited for before a scan forks, so the scan
    still uses every core; a thread nobody registered keeps it to one process."""
    done = threading.Event()

    def work():
        time.sleep(0.2)
        done.set()

    thread = threading.Thread(target=work)
    thread.start()
    unregister = fork_safety.wait_before_fork(lambda: (thread.join(), unregister()))
    cores = in_processes.workers(in_processes.PARALLEL_MIN_ITEMS * 4)
    assert done.is_set() and not fork_safety._waits
    if len(os.sched_getaffinity(0)) > 1:
        assert cores > 1
    stray = threading.Event()
    other = threading.Thread(target=stray.wait)
    other.start()
    try:
        assert in_processes.workers(in_processes.PARALLEL_MIN_ITEMS * 4) == 1
    finally:
        stray.set()
        other.join()


def test_a_step_whose_body_never_asks_still_waits_for_its_snapshot_and_raises_its_error(
    pass_vault,
):
    """`open_step` waits for a snapshot taken meanwhile when its body ends, raising or not, and
    under the lock: a body that never asked for it still ends with the snapshot's error."""
    from cmem.steps.lock import is_locked
    from cmem.steps.runner import open_step

    (pass_vault / PROFILE).write_text(CONFLICTED, "utf-8")
    vault = open_vault(pass_vault)
    with pytest.raises(GitError, match="still holds conflict markers"):
        with open_step(vault, "converge", snapshot_meanwhile=True):
            assert is_locked(vault.machine_dir)
    assert not is_locked(vault.machine_dir) and not fork_safety._waits
