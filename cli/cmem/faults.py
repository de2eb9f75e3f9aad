"""Fault injection for the crash tests (issue: reliability).

`CMEM_FAULT=<point>[:<n>]` makes the process SIGKILL itself the n-th time it reaches `<point>`,
so a test can stop a pass between any two steps of its apply and commit and check that the vault
is as it was before the pass or as it is after it. `CMEM_FAULT_LOG=<file>` appends the name of
every point reached, one per line, so a harness learns how often an undisturbed run reaches each
point without killing it once per occurrence. Unset (always, outside tests), a point costs two
environment lookups.
"""

from __future__ import annotations

import os
import signal

POINTS = (
    "journal-written",  # the intent and both versions of every file are durable
    "temp-write",  # a temp file is written, not yet fsynced
    "fsync",  # the temp file is durable, not yet renamed
    "rename",  # renamed into place, folder not yet fsynced
    "replace",  # the n-th file of a pass replaced, the others not yet
    "applied",  # every file replaced, nothing staged in git
    "git-add",  # the pass's tree is written, no commit yet
    "git-commit",  # the commit object is written, the branch not yet moved
    "committed",  # the commit exists, the journal is not yet removed
)

_reached: dict[str, int] = {}


def point(name: str) -> None:
    log = os.environ.get("CMEM_FAULT_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(name + "\n")
    spec = os.environ.get("CMEM_FAULT")
    if not spec:
        return
    target, _, nth = spec.partition(":")
    if target != name:
        return
    _reached[name] = _reached.get(name, 0) + 1
    if _reached[name] == int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)
