"""The run record of a pass whose engine does not read the prompt (the builtin engine, a response
file) is assembled and written by a forked child while the pass asks the engine, validates and
commits (`converge/pipeline.py: record_run_beside`, `scan/in_processes.py: run_beside`): the same
record, there when the pass returns, written by the pass itself when the child could not; the
child survives a Ctrl-C, holds no lock and reaches no crash-test kill point."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from cmem import faults
from cmem.converge import pipeline
from cmem.converge.pipeline import PassOptions, run_pass
from cmem.scan.in_processes import run_beside
from cmem.steps.lock import is_locked, vault_lock
from cmem.vault.layers import open_vault
from pass_helpers import NOTE


def _writers(monkeypatch, fail_in_child: bool = False) -> None:
    """`_record_run` leaves a file naming the process it ran in (`_writer_pids` reads them)."""
    original = pipeline._record_run
    parent = os.getpid()

    def recording(vault, record, *args):
        (record.folder / f"written-by-{os.getpid()}").write_text("", "utf-8")
        if fail_in_child and os.getpid() != parent:
            raise OSError("the child could not write")
        return original(vault, record, *args)

    monkeypatch.setattr(pipeline, "_record_run", recording)


def _writer_pids(run_dir: str) -> set[int]:
    return {int(p.name.rsplit("-", 1)[1]) for p in Path(run_dir).glob("written-by-*")}


def test_the_builtin_passs_record_is_written_by_a_child_and_is_there_when_it_returns(
    pass_vault, monkeypatch
):
    vault = open_vault(pass_vault)
    emitted = run_pass(vault, PassOptions(engine="builtin", emit_prompt=True)).prompt
    _writers(monkeypatch)
    result = run_pass(vault, PassOptions(engine="builtin"))
    assert result.status == "applied"
    writers = _writer_pids(result.run_dir)
    assert writers and os.getpid() not in writers  # a child wrote it
    record = Path(result.run_dir)
    # the prompt a model would have been given, as --emit-prompt prints it
    assert (record / "prompt.txt").read_text("utf-8") == emitted
    assert '"engine": "builtin"' in (record / "run.json").read_text("utf-8")


def test_a_child_that_cannot_write_leaves_the_record_to_the_pass(pass_vault, monkeypatch):
    _writers(monkeypatch, fail_in_child=True)
    result = run_pass(open_vault(pass_vault), PassOptions(engine="builtin"))
    assert result.status == "applied"
    writers = _writer_pids(result.run_dir)
    assert os.getpid() in writers and len(writers) == 2  # the child tried, the pass wrote it
    record = Path(result.run_dir)
    assert NOTE.removesuffix(".md") in (record / "prompt.txt").read_text("utf-8")


def test_a_model_reads_the_prompt_so_its_record_is_written_before_it_is_asked(
    pass_vault, monkeypatch, tmp_path
):
    from pass_helpers import VALID, llm_options, model_env

    model_env(monkeypatch, tmp_path, [VALID])
    _writers(monkeypatch)
    result = run_pass(open_vault(pass_vault), llm_options())
    assert result.rounds == 1  # asked once (accepted or not, its record was written first)
    assert _writer_pids(result.run_dir) == {os.getpid()}


def test_the_child_finishes_its_work_through_a_ctrl_c(tmp_path):
    done = tmp_path / "done"
    beside = run_beside(lambda: (time.sleep(0.3), done.write_text("yes", "utf-8")))
    assert beside is not None
    os.kill(beside.pid, signal.SIGINT)
    assert beside.wait() and done.read_text("utf-8") == "yes"


def test_the_child_lets_go_of_the_lock_with_the_process_that_took_it(tmp_path):
    started = tmp_path / "started"
    with vault_lock(tmp_path, "test"):
        beside = run_beside(lambda: (started.write_text("", "utf-8"), time.sleep(0.5)))
        assert beside is not None
        while not started.exists():
            time.sleep(0.01)
    assert not is_locked(tmp_path)  # the child still runs, and holds no lock
    assert beside.wait()


def test_the_child_reaches_no_kill_point(tmp_path, monkeypatch):
    from cmem.atomic import write_atomic

    monkeypatch.setenv("CMEM_FAULT", "temp-write")
    target = tmp_path / "written"
    beside = run_beside(lambda: write_atomic(target, b"kept"))
    assert beside is not None and beside.wait()  # not killed at its temp-write
    assert target.read_bytes() == b"kept"
    assert not faults._stopped  # this process still reaches its points


def test_a_failing_child_reports_it_and_no_fork_while_another_thread_runs(tmp_path):
    import threading

    def fail():
        raise RuntimeError("no")

    beside = run_beside(fail)
    assert beside is not None and beside.wait() is False
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert run_beside(lambda: None) is None
    finally:
        stop.set()
        other.join()


def test_no_process_to_be_had_leaves_the_record_to_the_pass(pass_vault, monkeypatch):
    """A fork that fails (a process limit, no memory) is no failure of the pass: it writes its
    record itself."""

    def no_fork():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    _writers(monkeypatch)
    result = run_pass(open_vault(pass_vault), PassOptions(engine="builtin"))
    assert result.status == "applied"
    assert _writer_pids(result.run_dir) == {os.getpid()}


def test_a_child_reaped_elsewhere_leaves_the_record_to_the_pass(pass_vault, monkeypatch):
    """With SIGCHLD ignored (inherited from a parent that set it), the kernel reaps the child
    and waitpid has nothing to wait for: the pass writes the record itself, no error."""
    real = os.waitpid

    def reaped(pid, options):
        real(pid, options)
        raise ChildProcessError(10, "No child processes")

    monkeypatch.setattr(os, "waitpid", reaped)
    _writers(monkeypatch)
    result = run_pass(open_vault(pass_vault), PassOptions(engine="builtin"))
    assert result.status == "applied"
    assert os.getpid() in _writer_pids(result.run_dir)
    assert NOTE.removesuffix(".md") in (Path(result.run_dir) / "prompt.txt").read_text("utf-8")
