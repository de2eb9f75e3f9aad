"""Rule 5: a new trace is dated by the note it came from or by the pass, never later; an
annotation shaped like a trace whose date is no YYYY-MM-DD day is no trace, and refused."""

from __future__ import annotations

import re

from cmem.converge.validator.reply_reading import (
    Change,
    ChangeRule,
    ReplyReading,
    ReplyRule,
    RuleKey,
    all_traces,
    short_text,
)
from cmem.converge.validator.rules import TRACE_DATES
from cmem.vault.statements import misread_traces

_DAY = re.compile(r"(?<!\d)(\d{4}-\d{2}-\d{2})(?!\d)")
_FRONTMATTER_DAY = re.compile(r"^(?:date|created|day):\s*['\"]?(\d{4}-\d{2}-\d{2})", re.MULTILINE)


def check_new_traces(reply: ReplyReading, change: Change) -> None:
    """Rule 5: a trace this pass wrote is dated by a note its statement cites (the day the
    change came from) or by the pass, never later than the pass."""
    known = reply.known_traces
    base_keys = change.base.keys if change.base else set()
    for statement in change.new.statements:
        if statement.key not in base_keys:
            _check_misread(reply, change, statement.line_no, statement.text)
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


def _check_misread(reply: ReplyReading, change: Change, line_no: int, text: str) -> None:
    """A trace-shaped annotation whose date does not parse stays statement text: `cmem trace`
    would never see the change it records."""
    for date in misread_traces(text, reply.formats):
        example = reply.formats.trace.replace("{date}", reply.ctx.pass_date).replace("{old}", "…")
        reply.error(
            change.path,
            line_no,
            TRACE_DATES,
            f"the trace dated {short_text(date, 30)!r} is not read as a trace: its date must be "
            f"YYYY-MM-DD, written as {example} (the date of the note the change came from, or "
            "of this pass)",
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


# The rules this module checks, each under its id, in the order they run: on each file block,
# then on the reply as a whole (`validate.py` runs the modules in `RULE_MODULES` order).
CHANGE_RULES: dict[RuleKey, ChangeRule] = {
    TRACE_DATES: check_new_traces,
}
REPLY_RULES: dict[RuleKey, ReplyRule] = {}
