"""The last sync, kept per machine: when, how it ended, with which remote (issue 16).

`status` shows it ("last sync 5 min ago: up to date"). It lives in the machine folder
(`Vault.machine_dir`), not in `.cmem/state.json`: that file travels through git, so two machines
recording their syncs there would make the very conflict sync exists to avoid.

Stdlib `os` and `time` only: the light sync path (`cmem.sync.idle`) writes it too. The format is
a few `key: value` lines, readable by a person:

    time: 2026-11-30T19:20:00+0000
    at: 1764530400.0
    outcome: up to date
    remote: origin/main
    detail:
"""

from __future__ import annotations

import os
import time

from cmem.cache_store import write_cache

RECORD_NAME = "last-sync"
# how a sync ended: nothing to fetch or push; the other machines' commits brought in (and maybe
# this one's pushed); this machine's commits pushed; the remote out of reach; cmem said no
OUTCOMES = ("up to date", "merged", "pushed", "offline", "refused")


def record_path(machine_dir: str | os.PathLike) -> str:
    return os.path.join(os.fspath(machine_dir), RECORD_NAME)


def write_record(
    machine_dir: str | os.PathLike,
    outcome: str,
    remote: str,
    detail: str = "",
    at: float | None = None,
) -> None:
    """Replace the record, atomically (temp file and rename: a reader sees the old record or the
    new one). Not fsynced: a record lost to a power cut only shows an older sync. A record that
    cannot be written never fails the sync."""
    at = time.time() if at is None else at
    fields = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(at)),
        "at": repr(float(at)),
        "outcome": outcome,
        "remote": remote,
        "detail": detail,
    }
    # one line each: a newline inside a value (a multi-line git error) must not start a new key
    text = "".join(f"{key}: {' '.join(str(value).split())}\n" for key, value in fields.items())
    write_cache(record_path(machine_dir), text.encode("utf-8", "surrogateescape"))


def read_record(machine_dir: str | os.PathLike, now: float | None = None) -> dict | None:
    """The last sync as `status --json` shows it (its age for `now`), or None: no sync yet on
    this machine, or a record that cannot be read."""
    fields = {}
    try:
        with open(record_path(machine_dir), encoding="utf-8", errors="replace") as handle:
            for line in handle:
                key, sep, value = line.rstrip("\n").partition(": ")
                if sep:
                    fields[key] = value
        at = float(fields["at"])
    except (OSError, KeyError, ValueError):
        return None
    if fields.get("outcome") not in OUTCOMES:
        return None
    now = time.time() if now is None else now
    return {
        "time": fields.get("time", ""),
        "age_seconds": max(0, round(now - at)),
        "outcome": fields["outcome"],
        "remote": fields.get("remote", ""),
        "detail": fields.get("detail") or None,
    }


def outcome_of(result) -> str:
    """A finished sync's outcome (a `cmem.sync.remote.SyncResult`)."""
    if result.status == "offline":
        return "offline"
    if result.merged:
        return "merged"
    if result.pushed:
        return "pushed"
    return "up to date"
