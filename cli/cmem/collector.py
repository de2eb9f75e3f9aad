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
