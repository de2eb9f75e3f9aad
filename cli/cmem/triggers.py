"""When a pass is due (SPEC §7): deterministic rules, never the model's feeling.

Session-end triggers (`--if-due`) want something pending and the last pass older than
`min_interval_minutes`; scheduled ones (`--if-due --scheduled`, from cron or a systemd timer)
want it older than `schedule_hours`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from cmem.state import State
from cmem.vault import Vault


@dataclass(frozen=True)
class Due:
    due: bool
    reason: str

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


def check_due(vault: Vault, state: State, pending_signals: int, now: datetime | None = None, scheduled: bool = False) -> Due:
    now = now or datetime.now().astimezone()
    if pending_signals == 0:
        return Due(False, "nothing pending")
    last = state.last_of_kind("converge")
    last_time = parse_time(last.get("time")) if last else None
    if last_time is None:
        return Due(True, f"{pending_signals} signal(s) pending and no pass yet")
    if scheduled:
        interval = timedelta(hours=vault.config.schedule_hours)
        label = f"schedule_hours ({vault.config.schedule_hours:g} h)"
    else:
        interval = timedelta(minutes=vault.config.min_interval_minutes)
        label = f"min_interval_minutes ({vault.config.min_interval_minutes} min)"
    age = now - last_time
    if age >= interval:
        return Due(True, f"{pending_signals} signal(s) pending; last pass {format_age(age)} ago, over {label}")
    return Due(False, f"{pending_signals} signal(s) pending, but the last pass was {format_age(age)} ago, under {label}")


def format_age(age: timedelta) -> str:
    seconds = max(0, int(age.total_seconds()))
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 90 * 60:
        return f"{seconds // 60} min"
    if seconds < 36 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.0f} days"
