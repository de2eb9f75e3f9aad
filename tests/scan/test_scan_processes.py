"""A scan with many files to read splits them over forked processes (`scan/in_processes.py`):
the same entries, guard index and output as one process, a child that fails costs only speed,
and no child outlives the scan."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time

import pytest

from cmem.scan import in_processes, scanner
from cmem.scan.in_processes import PARALLEL_MIN_ITEMS, PROCESSES_VARIABLE
from cmem.vault.layers import DIVERGENT, open_vault
from support import forks_from_now


def _many_notes(root, copies: int = 25) -> None:
    """Copies of the sample vault's divergent notes and topic files under other names: past the
    fork threshold for the notes and for the guard index."""
    for path in sorted(root.glob("*.md")):
        for number in range(copies):
            shutil.copyfile(path, root / f"copy {number} {path.name}")
    topics = sorted((root / "converged" / "topics").glob("*.md"))
    for number in range(-(-PARALLEL_MIN_ITEMS // len(topics))):
        for path in topics:
            shutil.copyfile(path, path.with_name(f"copy {number} {path.name}"))


def _to_read(vault) -> list:
    files = [(file, file.lstat()) for file in vault.list_layer(DIVERGENT)]
    assert len(files) >= PARALLEL_MIN_ITEMS
    return files


def _plain(entries) -> list[dict]:
    """The entries as stored, without the time each was read."""
    return [{k: v for k, v in entry.to_json().items() if k != "r"} for entry in entries]


def _logged_reads(monkeypatch, log, fail_in=None, sleep_in=None, sleep_seconds=60):
    """`_read_entry` that writes which process read each note to `log` (a child's memory is its
    own, a file is shared); it raises in the process `fail_in` picks, and sleeps (a minute) once
    in `sleep_in`'s."""
    real = scanner._read_entry
    parent = os.getpid()
    slept = []

    def read(file, vault, st=None):
        here = "parent" if os.getpid() == parent else "child"
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"{here} {os.getpid()} {file.rel}\n")
        if here == fail_in:
            raise RuntimeError(f"a bug in the {here}")
        if here == sleep_in and not slept:
            slept.append(True)
            time.sleep(sleep_seconds)
        return real(file, vault, st)

    monkeypatch.setattr(scanner, "_read_entry", read)


def _reaped(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


@pytest.mark.parametrize("workers", [2, 3])
def test_notes_read_in_processes_give_the_entries_one_process_gives(
    sample_vault, tmp_path, monkeypatch, workers
):
    _many_notes(sample_vault)
    vault = open_vault(sample_vault)
    files = _to_read(vault)
    alone = [scanner._read_entry(file, vault, st) for file, st in files]
    log = tmp_path / "reads.log"
    _logged_reads(monkeypatch, log)
    pids = forks_from_now(monkeypatch)

    forked = scanner._read_entries(files, vault, workers)

    assert _plain(forked) == _plain(alone)
    reads = log.read_text(encoding="utf-8").splitlines()
    assert sorted(line.split(" ", 2)[2] for line in reads) == sorted(f.rel for f, _ in files)
    assert len({line.split()[1] for line in reads}) == workers  # each process read its slice
    assert len(pids) == workers - 1 and all(_reaped(pid) for pid in pids)


def test_the_guard_index_read_in_processes_is_the_one_process_reads(sample_vault, monkeypatch):
    _many_notes(sample_vault)
    vault = open_vault(sample_vault)
    files = [(file, file.lstat()) for file in vault.convergent_files()]
    assert len(files) >= PARALLEL_MIN_ITEMS
    alone = [scanner._convergent_entry(file, vault, st) for file, st in files]
    pids = forks_from_now(monkeypatch)

    forked = scanner._convergent_entries(files, vault, 2)

    assert [{k: v for k, v in e.items() if k != "r"} for e in forked] == [
        {k: v for k, v in e.items() if k != "r"} for e in alone
    ]
    assert any(entry["statements"] for entry in forked)
    assert len(pids) == 1 and _reaped(pids[0])


def test_a_child_that_fails_costs_only_speed(sample_vault, tmp_path, monkeypatch):
    _many_notes(sample_vault)
    vault = open_vault(sample_vault)
    files = _to_read(vault)
    alone = [scanner._read_entry(file, vault, st) for file, st in files]
    log = tmp_path / "reads.log"
    _logged_reads(monkeypatch, log, fail_in="child")
    pids = forks_from_now(monkeypatch)

    forked = scanner._read_entries(files, vault, 2)

    assert _plain(forked) == _plain(alone)  # the child's slice was read here instead
    parent_reads = [line for line in log.read_text().splitlines() if line.startswith("parent")]
    assert len(parent_reads) == len(files)
    assert pids and all(_reaped(pid) for pid in pids)


def test_children_the_kernel_reaped_already_still_give_their_entries(sample_vault, monkeypatch):
    """SIGCHLD ignored (a disposition a parent process may hand down): the kernel reaps the
    children and waitpid has nothing to wait for; what they sent still counts, no error."""
    import signal

    _many_notes(sample_vault)
    vault = open_vault(sample_vault)
    files = _to_read(vault)
    alone = [scanner._read_entry(file, vault, st) for file, st in files]
    previous = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        forked = scanner._read_entries(files, vault, 2)
    finally:
        signal.signal(signal.SIGCHLD, previous)
    assert _plain(forked) == _plain(alone)


def test_an_error_here_stops_and_reaps_the_children(sample_vault, tmp_path, monkeypatch):
    """A bug (or Ctrl-C) in this process's slice ends the scan with that error at once: the
    children, still busy (asleep here for a minute), are killed and reaped, not waited for."""
    _many_notes(sample_vault)
    vault = open_vault(sample_vault)
    files = _to_read(vault)
    _logged_reads(monkeypatch, tmp_path / "reads.log", fail_in="parent", sleep_in="child")
    pids = forks_from_now(monkeypatch)
    started = time.monotonic()

    with pytest.raises(RuntimeError, match="a bug in the parent"):
        scanner._read_entries(files, vault, 2)

    assert pids and all(_reaped(pid) for pid in pids)
    assert time.monotonic() - started < 50  # not the child's minute: it was killed


def test_other_work_runs_here_first_and_before_the_children_are_collected(
    sample_vault, tmp_path, monkeypatch
):
    """`meanwhile` (the scan's guard index and odd names) runs once, in this process, before it
    takes any item (the children start on them meanwhile) and before it waits for any child;
    in one process, once after the items."""
    _many_notes(sample_vault)
    vault = open_vault(sample_vault)
    files = _to_read(vault)
    log = tmp_path / "reads.log"
    _logged_reads(monkeypatch, log)
    events: list[str] = []
    real_waitpid = os.waitpid

    def waitpid(pid, options):
        events.append("wait")
        return real_waitpid(pid, options)

    monkeypatch.setattr(os, "waitpid", waitpid)

    def meanwhile():
        lines = log.read_text().splitlines() if log.exists() else []
        events.append(
            f"meanwhile in {os.getpid()}, {sum(line.startswith('parent') for line in lines)}"
        )

    scanner._read_entries(files, vault, 2, meanwhile)
    assert events == [f"meanwhile in {os.getpid()}, 0", "wait"]

    events.clear()
    log.unlink()
    assert len(scanner._read_entries(files[:3], vault, None, meanwhile)) == 3
    assert events == [f"meanwhile in {os.getpid()}, 3"]


def test_a_slow_process_takes_fewer_items(sample_vault, tmp_path, monkeypatch):
    """The items are taken a chunk at a time, not cut in halves beforehand: a child held up on
    its first item (a busy core) ends with that one chunk, and this process reads the rest."""
    _many_notes(sample_vault)
    vault = open_vault(sample_vault)
    files = _to_read(vault)
    alone = [scanner._read_entry(file, vault, st) for file, st in files]
    log = tmp_path / "reads.log"
    _logged_reads(monkeypatch, log, sleep_in="child", sleep_seconds=3)

    shared = scanner._read_entries(files, vault, 2)

    assert _plain(shared) == _plain(alone)
    readers = [line.split()[0] for line in log.read_text().splitlines()]
    chunk = max(in_processes._MIN_CHUNK, -(-len(files) // in_processes._MAX_CHUNKS))
    assert readers.count("child") == chunk
    assert readers.count("parent") == len(files) - chunk


def test_an_error_in_the_other_work_stops_and_reaps_the_children(
    sample_vault, tmp_path, monkeypatch
):
    _many_notes(sample_vault)
    vault = open_vault(sample_vault)
    files = _to_read(vault)
    _logged_reads(monkeypatch, tmp_path / "reads.log", sleep_in="child")
    pids = forks_from_now(monkeypatch)
    started = time.monotonic()

    def meanwhile():
        raise RuntimeError("a bug in the guard index")

    with pytest.raises(RuntimeError, match="guard index"):
        scanner._read_entries(files, vault, 2, meanwhile)

    assert pids and all(_reaped(pid) for pid in pids)
    assert time.monotonic() - started < 50


def test_how_many_processes_share_the_reads(monkeypatch):
    monkeypatch.delenv(PROCESSES_VARIABLE, raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    half = PARALLEL_MIN_ITEMS // 2
    assert in_processes.workers(PARALLEL_MIN_ITEMS - 1) == 1  # a fork costs more than it saves
    assert in_processes.workers(PARALLEL_MIN_ITEMS) == 2
    assert in_processes.workers(3 * half) == 3
    assert in_processes.workers(100 * PARALLEL_MIN_ITEMS) == 4  # one per core
    for cap, workers in (("1", 1), ("3", 3), ("64", 4), ("0", 4), ("two", 4), ("", 4)):
        monkeypatch.setenv(PROCESSES_VARIABLE, cap)
        assert in_processes.workers(100 * PARALLEL_MIN_ITEMS) == workers, cap
    monkeypatch.delenv(PROCESSES_VARIABLE)
    # another thread (cmem watch, cmem mcp): a fork would copy this thread alone
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    assert in_processes.workers(100 * PARALLEL_MIN_ITEMS) == 1


def test_a_setting_that_is_not_a_number_is_said_once_and_every_core_used(monkeypatch, capsys):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    monkeypatch.setattr(in_processes, "_said", set())
    for good in ("1", "0", "3", ""):
        monkeypatch.setenv(PROCESSES_VARIABLE, good)
        in_processes.workers(100 * PARALLEL_MIN_ITEMS)
    assert capsys.readouterr().err == ""
    monkeypatch.setenv(PROCESSES_VARIABLE, "two")
    assert in_processes.workers(100 * PARALLEL_MIN_ITEMS) == 2
    assert in_processes.workers(100 * PARALLEL_MIN_ITEMS) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"{PROCESSES_VARIABLE}='two' is not a whole number" in err


def _cold_scan(vault, home, log, processes: str | None) -> str:
    """`cmem scan --json`, as installed, with no stored result or scan cache; every fork it
    makes is written to `log`."""
    from support import isolated_env

    state = home / "state" / "cmem"
    if state.is_dir():
        shutil.rmtree(state)
    code = (
        "import os, sys\n"
        "real = os.fork\n"
        "def fork():\n"
        f"    open({str(log)!r}, 'a').write('fork\\n')\n"
        "    return real()\n"
        "os.fork = fork\n"
        f"sys.argv = ['cmem', 'scan', '--json', '--vault', {str(vault)!r}]\n"
        "from cmem.fast import main\n"
        "main()\n"
    )
    extra = {PROCESSES_VARIABLE: processes} if processes else {}
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=isolated_env(home, **extra),
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_a_cold_scan_prints_the_same_in_one_process_or_several(sample_vault, tmp_path):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one core: a scan never forks")
    _many_notes(sample_vault)
    home = tmp_path / "home"
    alone_log, forked_log = tmp_path / "alone.log", tmp_path / "forked.log"

    alone = _cold_scan(sample_vault, home, alone_log, "1")
    forked = _cold_scan(sample_vault, home, forked_log, None)

    assert not alone_log.exists()
    assert forked_log.read_text().count("fork") >= 2  # the notes, and the guard index
    assert forked == alone and '"signals"' in forked
