"""Work this process runs in other threads, which a fork waits for first.

A forked child is a copy of the thread that forked: another thread's work (its locks, its
half-made objects) is copied mid-way and never finishes there. cmem forks to split a cold scan over
the cores (`scan/in_processes.py`) and runs one thing in a thread of its own meanwhile: a step's
snapshot (`steps/runner.py: SnapshotMeanwhile`), which the scan of a pass overlaps. Such work is
registered here while it runs, and whoever forks calls `wait_for_threads` first; a thread nobody
registered (`cmem watch`'s observer, a server's workers) still makes the scan keep to one process.

One thread need not be waited for: a pass's status line on a terminal (`render/status_line.py`)
runs until the pass ends, and holds nothing a child would need (it sleeps on an event and writes
with `os.write`), so it is registered as fork-safe and not counted (`threads_beside`).
"""

from __future__ import annotations

from collections.abc import Callable

_waits: list[Callable[[], object]] = []
_safe: list = []  # threading.Thread objects a fork may leave behind


def _register(registry: list, item) -> Callable[[], None]:
    registry.append(item)

    def unregister() -> None:
        if item in registry:
            registry.remove(item)

    return unregister


def wait_before_fork(wait: Callable[[], object]) -> Callable[[], None]:
    """Register `wait` (it returns once the thread's work is done); returns the unregistering."""
    return _register(_waits, wait)


def wait_for_threads() -> None:
    """Wait for every registered thread's work (each unregisters itself when done)."""
    for wait in list(_waits):
        try:
            wait()
        except Exception:
            pass  # its error is its owner's to raise, where it asks for the result


def fork_safe_thread(thread) -> Callable[[], None]:
    """Register `thread` as one a forked child may do without (it holds no lock the child could
    need); returns the unregistering."""
    return _register(_safe, thread)


def threads_beside() -> int:
    """How many threads besides the calling one run and are not fork-safe: a fork is safe at 0."""
    import threading

    return threading.active_count() - 1 - sum(1 for thread in _safe if thread.is_alive())
