"""`cmem status` from its stored result, while nothing it depends on changed
(`reading/stored_results.py`: the key and the racy-timestamp rule). What depends on the clock —
the ages of the newest and oldest memory files, whether a pass is due, the last sync, the agent
hooks' last runs — is stored as its inputs and recomputed here on every call."""

from __future__ import annotations

from datetime import datetime


def stored_status(vault) -> tuple[dict, str] | None:
    """(status data as `build_status(...).to_json()` shows it, the machine folder) from the
    stored result for the vault `vault` names (None: the current folder's), or None when there
    is none to trust."""
    from cmem.reading.stored_results import find_root, valid_entry

    root = find_root(None if vault is None else str(vault))
    entry = None if root is None else valid_entry(root, "status", ())
    if entry is None:
        return None
    return refresh_status(entry["payload"]), entry["machine_dir"]


def refresh_status(payload: dict, now: datetime | None = None) -> dict:
    """A stored status with its time-dependent figures recomputed for `now`."""
    from datetime import timedelta

    from cmem.triggers.due import due_rule

    now = now or datetime.now().astimezone()
    data, clock = payload["data"], payload["clock"]
    for end in ("newest", "oldest"):
        if data["convergent_age"][end] is not None and clock.get(end + "_ns") is not None:
            data["convergent_age"][end]["age_seconds"] = round(
                now.timestamp() - clock[end + "_ns"] / 1e9
            )
    pending = data["pending"].get("workable", 0)
    due = due_rule(
        pending,
        clock["last_time"],
        timedelta(seconds=clock["interval_seconds"]),
        clock["interval_label"],
        now,
    )
    data["due"] = due.to_json()
    if "machine_dir" in clock:  # the last sync: rewritten by every sync, so read now
        from cmem.sync.record import read_record
        from cmem.text.secrets import shown_data
        from cmem.triggers.hook_record import hooks_status

        # redacted as the stored fields were when the status was made (a remote's URL, an
        # error a hook recorded), so the text rendered from them all is not redacted again
        data["last_sync"], data["agent_hooks"] = shown_data(
            [
                read_record(clock["machine_dir"], now.timestamp()),
                hooks_status(clock["machine_dir"], now.timestamp()),
            ]
        )
    return data
