"""Many files' work split over the machine's cores, in forked processes.

A cold scan (the first one, or after the cues or the config changed) reads every divergent note,
and a first scan also reads every convergent file for the guard index: at 10k notes that is most
of its time, and each file's work is independent of the others'. From `PARALLEL_MIN_ITEMS` files
on, the list is cut in one slice per core: this process works through the first, a forked child
each other one and sends its results back, encoded (marshal), through a pipe. A bare fork: a
process pool cost four times as much to start. Measured on two idle cores: 0.74x the wall time of
one process for a 10k and a 50k cold scan; with both cores busy, about the same as one
(docs/benchmarks.md).

A child never writes a file and ends by `os._exit`, so it neither runs this process's exit
handlers nor flushes the output buffers it inherited. A child that fails costs only speed: its
slice is worked here. An error here (a bug, Ctrl-C) kills and reaps the children at once.
`CMEM_SCAN_PROCESSES` caps the processes (1: this process alone).
"""

from __future__ import annotations

import marshal
import os
from collections.abc import Callable

# Below this many files a fork costs more than it saves; each process takes at least half of it.
PARALLEL_MIN_ITEMS = 200
PROCESSES_VARIABLE = "CMEM_SCAN_PROCESSES"


def workers(count: int) -> int:
    """How many processes share `count` files: one per core this process may run on, at least
    PARALLEL_MIN_ITEMS / 2 files each, at most `CMEM_SCAN_PROCESSES` (0 or unset: no cap); one
    when a fork is not safe: it copies the calling thread alone, and `cmem watch` (its file
    watcher) or a server's worker threads may run beside the scan."""
    if count < PARALLEL_MIN_ITEMS or not hasattr(os, "fork"):
        return 1
    limit = os.environ.get(PROCESSES_VARIABLE, "").strip()
    cap = int(limit) if limit.isascii() and limit.isdigit() and int(limit) > 0 else None
    if limit and cap is None and limit != "0":
        _say_once(
            f"cmem: {PROCESSES_VARIABLE}={limit!r} is not a whole number of processes; "
            "the scan uses every core (set 1 for one process)"
        )
    import threading

    if threading.active_count() > 1:
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    processes = min(cores or 1, count // (PARALLEL_MIN_ITEMS // 2))
    return max(1, min(processes, cap) if cap else processes)


_said: set[str] = set()


def _say_once(message: str) -> None:
    """A setting's problem on stderr, once a process (a scan may split its work twice)."""
    if message not in _said:
        _said.add(message)
        import sys

        print(message, file=sys.stderr)


def map_in_processes(
    items: list,
    work: Callable,
    encode: Callable = lambda result: result,
    decode: Callable = lambda data: data,
    processes: int | None = None,
    meanwhile: Callable[[], object] | None = None,
) -> list:
    """`[work(item) for item in items]`, in order, in `processes` processes (default: `workers`).
    `encode` turns a result into what marshal can carry, `decode` turns it back. `meanwhile`,
    other work of this process's, runs once its own slice is done, while the children may still
    work on theirs (a forked child runs slower than this process: it copies the pages it
    touches), and after the items when there are no children."""
    processes = workers(len(items)) if processes is None else processes
    if processes <= 1:
        results = [work(item) for item in items]
        if meanwhile is not None:
            meanwhile()
        return results
    step = -(-len(items) // processes)
    slices = [items[start : start + step] for start in range(0, len(items), step)]
    children = []  # (pid, the read end of its pipe, its slice)
    try:
        for part in slices[1:]:
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child
                code = 1
                try:
                    os.close(read_end)
                    data = marshal.dumps([encode(work(item)) for item in part])
                    with os.fdopen(write_end, "wb") as out:
                        out.write(data)
                    code = 0
                finally:
                    os._exit(code)
            os.close(write_end)  # before the next fork: EOF comes when this child closes it
            children.append((pid, read_end, part))
        results = [work(item) for item in slices[0]]
        if meanwhile is not None:
            meanwhile()
        while children:
            pid, read_end, part = children.pop(0)
            try:
                with os.fdopen(read_end, "rb") as source:
                    data = source.read()
            finally:
                _, status = os.waitpid(pid, 0)
            try:
                if status != 0:
                    raise ValueError("the child failed")
                results += [decode(item) for item in marshal.loads(data)]
            except (EOFError, ValueError, TypeError, KeyError):
                results += [work(item) for item in part]
        return results
    finally:
        # only after an exception here (a bug, Ctrl-C): stop and reap the children left
        for pid, read_end, _ in children:
            os.close(read_end)
            try:
                os.kill(pid, 9)  # SIGKILL: its work is thrown away with this scan
            except OSError:
                pass
            os.waitpid(pid, 0)
