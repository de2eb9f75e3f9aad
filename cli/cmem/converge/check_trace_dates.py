"""Rule 5: a new trace is dated by the note it came from or by the pass, never later."""

from __future__ import annotations

import re

from cmem.converge.checker import Change, ReplyReading, all_traces
from cmem.converge.rules import TRACE_DATES

_DAY = re.compile(r"(?<!\d)(\d{4}-\d{2}-\d{2})(?!\d)")
_FRONTMATTER_DAY = re.compile(r"^(?:date|created|day):\s*['\"]?(\d{4}-\d{2}-\d{2})", re.MULTILINE)


def check_new_traces(reply: ReplyReading, change: Change) -> None:
    """Rule 5: a trace this pass wrote is dated by a note its statement cites (the day the
    change came from) or by the pass, never later than the pass."""
    known = reply.known_traces
    for statement in change.new.statements:
        allowed = None
        for trace in all_traces(statement.traces):
            if reply.trace_id(trace) in known or trace.date == reply.ctx.pass_date:
                continue
            if allowed is None:
                allowed = {
                    day
                    for name in statement.sources
                    for day in note_dates(reply, name)
                    if day <= reply.ctx.pass_date
                }
            if trace.date not in allowed:
                cited = ", ".join(sorted(allowed)) or "none"
                later = " (later than today)" if trace.date > reply.ctx.pass_date else ""
                reply.error(
                    change.path,
                    statement.line_no,
                    TRACE_DATES,
                    f"a new trace is dated {trace.date}{later}; date it by the note the change came from (dates of the notes it cites: {cited}) or {reply.ctx.pass_date}, the date of this pass",
                )


def note_dates(reply: ReplyReading, name: str) -> set[str]:
    """The days a note speaks from: a date in its name, and its frontmatter's `date` or
    `created`."""
    base = name.strip().split("#", 1)[0]
    days = set(_DAY.findall(base))
    text = reply.cited_text(base)
    if text and text.startswith("---"):
        head = text[:2000]
        days.update(_FRONTMATTER_DAY.findall(head))
    return days
