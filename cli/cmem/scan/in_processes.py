"""Many files' work split over the machine's cores, in forked processes.

A cold scan (the first one, or after the cues or the config changed) reads every divergent note,
and a first scan also reads every convergent file for the guard index: at 10k notes that is most
of its time, and each file's work is independent of the others'. From `PARALLEL_MIN_ITEMS` files
on, one process per core works on the list: this one and forked children, each taking the next
chunk of it as it finishes one (`map_in_processes`); a child sends its results back, encoded
(marshal), through a pipe. A bare fork: a process pool cost four times as much to start. Measured
on two idle cores: 0.74x the wall time of one process for a 10k and a 50k cold scan; with both
cores busy, about the same as one (docs/benchmarks.md).

A child never writes a file and ends by `os._exit`, so it neither runs this process's exit
handlers nor flushes the output buffers it inherited. A child that fails costs only speed: the
chunks it took are worked here. An error here (a bug, Ctrl-C) kills and reaps the children at once.
`CMEM_SCAN_PROCESSES` caps the processes (1: this process alone).
"""

from __future__ import annotations

import marshal
import os
from collections.abc import Callable

# Below this many files a fork costs more than it saves; a process per half of it at most.
PARALLEL_MIN_ITEMS = 200
PROCESSES_VARIABLE = "CMEM_SCAN_PROCESSES"
# The processes take the items a chunk at a time (`map_in_processes`): chunks of at least this many
# items (fewer, larger ones cost more waiting at the end), at most _MAX_CHUNKS of them, as each
# one's number is one byte.
_MIN_CHUNK = 8
_MAX_CHUNKS = 255


def workers(count: int) -> int:
    """How many processes share `count` files: one per core this process may run on, no more than
    one per PARALLEL_MIN_ITEMS / 2 files, at most `CMEM_SCAN_PROCESSES` (0 or unset: no cap); one
    when a fork is not safe: it copies the calling thread alone, and `cmem watch` (its file
    watcher) or a server's worker threads may run beside the scan. Threads of this process's
    own work that can be waited for (`cmem/fork_safety.py`) are waited for first."""
    if count < PARALLEL_MIN_ITEMS or not hasattr(os, "fork"):
        return 1
    limit = os.environ.get(PROCESSES_VARIABLE, "").strip()
    cap = int(limit) if limit.isascii() and limit.isdigit() and int(limit) > 0 else None
    if limit and cap is None and limit != "0":
        _say_once(
            f"cmem: {PROCESSES_VARIABLE}={limit!r} is not a whole number of processes; "
            "the scan uses every core (set 1 for one process)"
        )
    from cmem.fork_safety import threads_beside, wait_for_threads

    wait_for_threads()  # a step's snapshot, taken while the pass scans: done before any fork
    if threads_beside():
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
    other work of this process's, runs here first, while the children start on the items, and
    after the items when there are no children.

    The items are cut in up to 255 chunks whose numbers wait in a pipe, one byte each; every
    process takes the next number as it finishes a chunk (a one-byte read is never split between
    two readers). So the processes end together, whatever each one's speed: halves fixed in
    advance left one waiting for the other by up to ~50 ms of a 10k cold scan's ~250, because a
    forked child runs a quarter slower than this process (it copies the pages it touches) and
    the machine's other work falls unevenly on the two."""
    processes = workers(len(items)) if processes is None else processes
    if processes <= 1:
        results = [work(item) for item in items]
        if meanwhile is not None:
            meanwhile()
        return results
    size = max(_MIN_CHUNK, -(-len(items) // _MAX_CHUNKS))
    chunks = [items[start : start + size] for start in range(0, len(items), size)]
    tasks, tasks_in = os.pipe()
    try:
        os.write(tasks_in, bytes(range(len(chunks))))  # under PIPE_BUF (512): never blocks
    finally:
        os.close(tasks_in)  # a reader then sees the end once every number is taken
    done: dict[int, list] = {}  # chunk number -> its results
    children = []  # (pid, the read end of its pipe)
    try:
        for _ in range(processes - 1):
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child
                code = 1
                try:
                    os.close(read_end)
                    data = marshal.dumps(
                        [
                            (number, [encode(work(item)) for item in chunks[number]])
                            for number in _taken(tasks)
                        ]
                    )
                    with os.fdopen(write_end, "wb") as out:
                        out.write(data)
                    code = 0
                finally:
                    os._exit(code)
            os.close(write_end)  # before the next fork: EOF comes when this child closes it
            children.append((pid, read_end))
        if meanwhile is not None:
            meanwhile()
        for number in _taken(tasks):
            done[number] = [work(item) for item in chunks[number]]
        while children:
            pid, read_end = children.pop(0)
            try:
                with os.fdopen(read_end, "rb") as source:
                    data = source.read()
            finally:
                status = _reap(pid)
            try:
                if status != 0:
                    raise ValueError("the child failed")
                sent = {
                    number: [decode(item) for item in part] for number, part in marshal.loads(data)
                }
            except (EOFError, ValueError, TypeError, KeyError):
                continue  # its chunks are worked here, below
            done.update(sent)
        results = []
        for number, chunk in enumerate(chunks):
            found = done.get(number)
            results += found if found is not None else [work(item) for item in chunk]
        return results
    finally:
        os.close(tasks)
        # only after an exception here (a bug, Ctrl-C): stop and reap the children left
        for pid, read_end in children:
            os.close(read_end)
            try:
                os.kill(pid, 9)  # SIGKILL: its work is thrown away with this scan
            except OSError:
                pass
            _reap(pid)


def _reap(pid: int) -> int:
    """Wait for a child; its exit status, or 0 when the kernel reaped it already (SIGCHLD
    ignored, a disposition a parent process may hand down): then whether what it sent decodes
    says whether it finished."""
    try:
        return os.waitpid(pid, 0)[1]
    except ChildProcessError:
        return 0


def _taken(tasks: int):
    """The chunk numbers this process takes from the shared pipe, until none are left."""
    while True:
        byte = os.read(tasks, 1)
        if not byte:
            return
        yield byte[0]


class Beside:
    """One piece of work (`run_beside`) done by a forked child while this process goes on: the
    run record of a pass whose engine does not read the prompt is written so, beside the engine
    and the validator (at 10k notes its prompt, ~1.3 MB quoting 506 resident files, took ~60 ms
    to assemble and write). The child writes files of its own only (never the vault, never this
    process's output), finishes its work on Ctrl-C, lets go of the vault lock at once (the lock
    lasts as long as this process) and reaches no crash-test kill point (`cmem/faults.py`: the
    crash tests kill the step itself). `wait` reaps it: True if the work was done."""

    def __init__(self, pid: int):
        self.pid = pid
        self.done: bool | None = None

    def wait(self) -> bool:
        if self.done is None:
            try:
                _, status = os.waitpid(self.pid, 0)
            except ChildProcessError:  # reaped already (SIGCHLD ignored): its work is unknown
                status = -1
            self.done = status == 0
        return self.done


def run_beside(work: Callable[[], object]) -> Beside | None:
    """Start `work` in a forked child; None when a fork is not safe or not possible (another
    thread runs: the child would copy it half-way), and the caller does the work itself."""
    from cmem.fork_safety import threads_beside, wait_for_threads

    if not hasattr(os, "fork"):
        return None
    wait_for_threads()
    if threads_beside():
        return None
    try:
        pid = os.fork()
    except OSError:  # no process to be had (a limit, memory): the caller does the work
        return None
    if pid:
        return Beside(pid)
    code = 1
    try:
        import signal

        from cmem import faults
        from cmem.steps.lock import close_inherited_locks

        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C stops the pass, not its record
        close_inherited_locks()
        faults.stop_here()
        work()
        code = 0
    except BaseException:
        pass  # the parent does the work itself (`Beside.wait` says it was not done)
    finally:
        os._exit(code)  # no exit handlers, no flush of the output buffers it inherited
