"""Python's cyclic garbage collector, held off while a scan builds what it keeps.

`cmem.fast` already makes the collector run every 50,000 net new container objects, not 700.
A cold scan at 10k notes still makes more than that: its entries and hits, the child's decoded
results, the assembled signals, all of them kept until the command ends, none of them cyclic
garbage (what a scan drops is freed by reference counting). The one collection they set off
walks all of them: 16-30 ms of the scanning process, landing wherever the count runs over,
often after the notes are read, when nothing runs beside it.

`held_off` disables the collector for a scan (its forked children inherit that) and, at the end,
moves what the scan made to the oldest generation without walking it (`gc.freeze` then
`gc.unfreeze`: two list splices, and the young count back to zero), so the collection does not
merely come later. Long-running callers (`watch`, the MCP server) collect between scans.

Freeing is work too. A cold scan run by the light entry path (`cmem.fast: run_scan`) ends the
process by `os._exit` once its output is out, which frees nothing; but what the scan was done
with is freed earlier, one object at a time, as each function returns: its note entries, the
guard's statements, the key's listing, the result (at 50k notes ~25 ms after the notes are read,
~5 ms at 10k). A process that will end so says `ending_by_exit()`, and `keep` then holds those
until the end. Everywhere else (the full CLI, `watch`, the MCP server) `keep` does nothing.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def held_off():
    if not gc.isenabled():
        yield  # a caller that turned it off keeps it off
        return
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:  # never thaw what a caller froze on purpose
            gc.freeze()
            gc.unfreeze()
        gc.enable()


# Not None once this process ends by `os._exit` (`ending_by_exit`): what `keep` was given.
_kept: list | None = None


def ending_by_exit() -> None:
    """This process ends by `os._exit`: from now on `keep` holds what it is given until then."""
    global _kept
    if _kept is None:
        _kept = []


def keep(*objects) -> None:
    """Hold `objects` until an `os._exit` that `ending_by_exit` announced, instead of letting them
    be freed when the caller returns; nothing, in a process that ends otherwise."""
    if _kept is not None:
        _kept.extend(objects)


def release() -> None:
    """The process will not end by `os._exit` after all (the full CLI takes over): let go."""
    global _kept
    _kept = None
