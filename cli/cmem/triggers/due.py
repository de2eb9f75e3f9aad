"""The due rule itself (docs/design.md §7), with no vault attached: how many signals are pending,
when the last pass ran, the interval. `cmem.triggers.if_due` applies it to a vault; a stored `status`
(`reading/stored_status.py`) re-applies it at print time, since "due" changes with the clock while
the vault stands still."""

from __future__ import annotations

from datetime import datetime, timedelta

# the machine folder's record of unattended passes that failed (`if_due.record_failure`): named
# here, stdlib only, so the stored results' key (reading/stored_results.py) names the file without
# importing if_due (subprocess, threading) on every read command's miss
FAILURES_FILE = "unattended.json"


class Due:
    """Whether a pass is due, and why. A plain class: `dataclasses` would import `inspect`,
    several milliseconds on the fast path."""

    __slots__ = ("due", "reason")
    due: bool
    reason: str

    def __init__(self, due: bool, reason: str) -> None:
        object.__setattr__(self, "due", due)
        object.__setattr__(self, "reason", reason)

    def __setattr__(self, name, value):
        raise AttributeError("Due is immutable")

    def __eq__(self, other) -> bool:
        return isinstance(other, Due) and (self.due, self.reason) == (other.due, other.reason)

    def __hash__(self) -> int:
        return hash((self.due, self.reason))

    def __repr__(self) -> str:
        return f"Due(due={self.due!r}, reason={self.reason!r})"

    def to_json(self) -> dict:
        return {"due": self.due, "reason": self.reason}


def parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.astimezone()


def format_age(age: timedelta) -> str:
    seconds = max(0, int(age.total_seconds()))
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 90 * 60:
        return f"{seconds // 60} min"
    if seconds < 36 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.0f} days"


def due_rule(
    pending_notes: int, last_time: str | None, interval: timedelta, label: str, now: datetime
) -> Due:
    """Due when a note the pass's engine can take is pending and the last pass (its ISO time,
    None for none yet) is at least `interval` old; `label` names the setting the interval came
    from.

    A last pass dated after `now` (this clock was set back, or `cmem sync` merged in a pass from
    a machine whose clock runs ahead) tells nothing of how long ago it ran: it counts as no
    known pass, so it cannot hold passes off on every machine that syncs; the reason says so,
    and the next pass, dated by this clock, puts the interval back in force."""
    if pending_notes == 0:
        return Due(False, "no pending note the pass's engine can take")
    last = parse_time(last_time)
    notes = f"{pending_notes} note{'s' if pending_notes != 1 else ''} pending"
    if last is None:
        return Due(True, f"{notes} and no pass yet")
    if last > now:
        return Due(
            True,
            f"{notes}; the last pass is dated {last_time}, {format_age(last - now)} in the "
            "future (a clock set back, or another machine's clock): its age is unknown, so it "
            "does not hold the pass off",
        )
    age = now - last
    if age >= interval:
        return Due(True, f"{notes}; last pass {format_age(age)} ago, over {label}")
    return Due(False, f"{notes}, but the last pass was {format_age(age)} ago, under {label}")


def interval_of(
    min_interval_minutes: float, schedule_hours: float, scheduled: bool = False
) -> tuple[timedelta, str]:
    """The interval a due check waits, and the words naming its setting."""
    if scheduled:
        return timedelta(hours=schedule_hours), f"schedule_hours ({schedule_hours:g} h)"
    return timedelta(
        minutes=min_interval_minutes
    ), f"min_interval_minutes ({min_interval_minutes} min)"
