"""Checking a parsed reply against the vault before anything is written (SPEC §5).

`validate_response` reads — the vault's resident files, and any convergent file the reply
rewrites that the pass did not hand it in `PassContext.originals` — and never writes. It returns
every error at once (the repair round sends them all back), the warnings, and, only when there
is no error, the exact texts to write. The numbered rules are SPEC §5's (`converge/rules.py`);
each is checked by the module its idea names, and run from `CHANGE_RULES` and `REPLY_RULES`
below, keyed by the rule it checks. Rules 1, 12, 14 and 15 are checked as the reply is read
(`converge/checker.py`):

1. paths inside the convergent layer only (see `paths.py`);
2. frontmatter parses and keeps every key it had;
3. new or changed statements cite a source that resolves to a note; kept ones keep theirs;
4. no old statement (nor any of its traces) disappears without a trace or a `<dropped>`;
5. new traces carry the pass date;
6. the resident sublayer stays within `resident_max_tokens`;
7. `<converged>`/`<deferred>` name only notes of the pass;
8. `<dropped>` (or blanking) removes at most a quarter of a file of two or more statements;
9. every added line is a statement, a blank, a short structural heading or a line the file had;
   frontmatter: only `summary`, `updated`, `tags`, `aliases` added or changed, no YAML anchors;
10. a statement leaves a file only as a move (reported), inside its own rewrite's trace, or in
   `<dropped>`; at most a quarter of the memory layer is lost, nothing moves out of the resident
   layer (both unless `--allow-shrink`);
11. a source is a note (divergent or archived), never a memory file or the checklist;
12. a new file's path is NFC, not a look-alike of a memory file, not named like a note;
13. a situational file stays within `situational_max_tokens`.

Statements are compared by `Statement.key` — the normalised core, without list marker, sources
and traces — so rewording punctuation or moving a source is not a change (digits, signs,
currency and question marks are kept: changing them is).
"""

from __future__ import annotations

from typing import Callable, Union

from cmem.converge.check_accounting import AccountingChecks
from cmem.converge.check_invention import InventionChecks, word_tokens
from cmem.converge.check_losses import LossChecks
from cmem.converge.check_shape import ShapeChecks
from cmem.converge.check_sizes import SizeChecks
from cmem.converge.check_sources import SourceChecks
from cmem.converge.check_trace_dates import TraceDateChecks
from cmem.converge.checker import (
    RESIDENT,
    Change,
    PassContext,
    Validation,
    ended,
    format_issues,
)
from cmem.converge.response import Response
from cmem.converge.rules import (
    ACCOUNTING,
    CITE_NOTES,
    FRONTMATTER,
    MEMORY_WHOLE,
    NOTHING_LOST,
    ONLY_STATEMENTS,
    RESIDENT_SIZE,
    SIZES,
    SOURCES,
    TRACE_DATES,
    RuleId,
)
from cmem.converge.turn_citations import turn_issues
from cmem.vault.layers import Vault

__all__ = [
    "CHANGE_RULES",
    "REPLY_RULES",
    "RESIDENT",
    "PassContext",
    "Validation",
    "format_issues",
    "validate_response",
    "word_tokens",
]


class _Checker(
    ShapeChecks,
    SourceChecks,
    LossChecks,
    TraceDateChecks,
    SizeChecks,
    AccountingChecks,
    InventionChecks,
):
    """Every rule's checks on one reply (each module adds its own to `CheckerBase`)."""


def _turn_citations(checker: _Checker, change: Change, changes: list[Change]) -> None:
    """A statement citing a session turn cites one that exists and is the user's (SPEC §14)."""
    known = change.base.keys if change.base else set()
    for line, agents, message in turn_issues(change.new.statements, known, checker.cited_text):
        checker.error(change.path, line, CITE_NOTES if agents else SOURCES, message)


# A warning's name (`rules.WARNINGS`) keys a check that only warns.
RuleKey = Union[RuleId, str]
ChangeRule = Callable[[_Checker, Change, list[Change]], None]
ReplyRule = Callable[[_Checker, list[Change]], None]

# Each file block of the reply, in this order: the rule → its check.
CHANGE_RULES: dict[RuleKey, ChangeRule] = {
    FRONTMATTER: lambda checker, change, changes: checker.check_frontmatter(change),
    ONLY_STATEMENTS: lambda checker, change, changes: checker.check_lines(change),
    SOURCES: lambda checker, change, changes: checker.check_sources(change),
    CITE_NOTES: _turn_citations,
    NOTHING_LOST: lambda checker, change, changes: checker.check_removals(change, changes),
    TRACE_DATES: lambda checker, change, changes: checker.check_new_traces(change, changes),
}
# Then the reply as a whole, in this order.
REPLY_RULES: dict[RuleKey, ReplyRule] = {
    MEMORY_WHOLE: lambda checker, changes: checker.check_layer_loss(changes),
    "dropped": lambda checker, changes: checker.check_dropped_entries(changes),
    RESIDENT_SIZE: lambda checker, changes: checker.check_resident_size(changes),
    SIZES: lambda checker, changes: checker.check_situational_size(changes),
    ACCOUNTING: lambda checker, changes: checker.check_notes(changes),
    "invention": lambda checker, changes: checker.check_invention(changes),
}


def validate_response(vault: Vault, response: Response, ctx: PassContext) -> Validation:
    result = Validation(errors=list(response.errors), warnings=list(response.warnings))
    checker = _Checker(vault, response, ctx, result)
    changes = checker.load_changes()
    for change in changes:
        for check_change in CHANGE_RULES.values():
            check_change(checker, change, changes)
    for check_reply in REPLY_RULES.values():
        check_reply(checker, changes)
    if result.ok:
        for change in changes:
            if change.base is None or change.new.text != ended(change.base.text):
                result.writes[change.path] = change.new.text
                result.bases[change.path] = None if change.base is None else change.base.text
    return result
