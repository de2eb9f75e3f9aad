"""Rules 3, 11 and 16: a new or changed statement cites a source that resolves to a note (never a
memory file or the checklist), a kept statement keeps the sources it had, and a statement taken
from a note that is not the user's own words says so in its source."""

from __future__ import annotations

from cmem.converge.validator.reply_reading import (
    Change,
    ChangeRule,
    ReplyReading,
    ReplyRule,
    RuleKey,
    short_text,
)
from cmem.converge.validator.rules import CITE_NOTES, QUOTED, SOURCES
from cmem.converge.validator.turn_citations import turn_issues
from cmem.vault.quoted import marked_quoted
from cmem.vault.statements import Statement, format_source


def check_sources(reply: ReplyReading, change: Change) -> None:
    base_keys = change.base.keys if change.base else set()
    elided = reply.content_lines.get(change.path, set())
    for statement in change.new.statements:
        if statement.line_no in elided:
            continue
        if statement.key not in base_keys and not statement.sources:
            reply.error(
                change.path,
                statement.line_no,
                SOURCES,
                f"statement has no source: {short_text(statement.core)!r}; cite the note it came from as {format_source(['…'], reply.formats)}",
            )
        for name in statement.sources:
            if _kept_source(reply, change, statement, name):
                continue
            targets = reply.targets(name)
            if not targets:
                reply.error(
                    change.path,
                    statement.line_no,
                    SOURCES,
                    f"the source [[{name}]] resolves to no note",
                )
            elif not any(reply.is_note(path) for path in targets):
                reply.error(
                    change.path,
                    statement.line_no,
                    CITE_NOTES,
                    f"the source [[{name}]] is {targets[0]}, a memory file or the checklist, not a note; cite the note the statement came from",
                )
    check_kept_sources(reply, change)


def _kept_source(reply: ReplyReading, change: Change, statement: Statement, name: str) -> bool:
    """A source the statement already had is not the reply's doing, even if broken."""
    if change.base is None:
        return False
    return any(old.key == statement.key and name in old.sources for old in change.base.statements)


def check_kept_sources(reply: ReplyReading, change: Change) -> None:
    """A statement kept as it was keeps its sources: provenance is what makes memory checkable."""
    if change.base is None:
        return
    new_sources: dict[str, set[str]] = {}
    first_line: dict[str, int] = {}
    for statement in change.new.statements:
        new_sources.setdefault(statement.key, set()).update(statement.sources)
        first_line.setdefault(statement.key, statement.line_no)
    for old in change.base.statements:
        if old.key not in new_sources:
            continue
        lost = [
            name
            for name in old.sources
            if name not in new_sources[old.key] and reply.resolves(name)
        ]
        if lost:
            line = first_line[old.key]
            links = ", ".join(f"[[{name}]]" for name in lost)
            reply.error(
                change.path,
                line,
                SOURCES,
                f"the statement {short_text(old.core)!r} lost its source {links}; keep the sources of statements you keep",
            )


def check_quoted(reply: ReplyReading, change: Change) -> None:
    """A new or changed statement resting on a note of the pass that is not the user's own words
    (a web clip, a template: `vault/quoted.py`) marks that source `quoted from [[…]]`."""
    quoted = reply.ctx.quoted
    if not quoted:
        return
    base_keys = change.base.keys if change.base else set()
    for statement in change.new.statements:
        if statement.key in base_keys:
            continue
        for name in statement.sources:
            if name in quoted and not marked_quoted(statement.text, name):
                reply.error(
                    change.path,
                    statement.line_no,
                    QUOTED,
                    f"{short_text(statement.core)!r} rests on [[{name}]], {quoted[name]}: not the "
                    f"user's own words; say so in its source, `quoted from [[{name}]]`, and write "
                    "what the source says, not the user's view",
                )


def check_turn_citations(reply: ReplyReading, change: Change) -> None:
    """A statement citing a session turn cites one that exists and is the user's (docs/design.md §14)."""
    known = change.base.keys if change.base else set()
    for line, agents, message in turn_issues(change.new.statements, known, reply.cited_text):
        reply.error(change.path, line, CITE_NOTES if agents else SOURCES, message)


# The rules this module checks, each under its id, in the order they run: on each file block,
# then on the reply as a whole (`validate.py` runs the modules in `RULE_MODULES` order).
CHANGE_RULES: dict[RuleKey, ChangeRule] = {
    SOURCES: check_sources,
    QUOTED: check_quoted,
    CITE_NOTES: check_turn_citations,
}
REPLY_RULES: dict[RuleKey, ReplyRule] = {}
