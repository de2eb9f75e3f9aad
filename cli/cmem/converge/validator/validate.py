"""Checking a parsed reply against the vault before anything is written (docs/design.md §5).

`validate_response` reads — the vault's resident files, and any convergent file the reply
rewrites that the pass did not hand it in `PassContext.originals` — and never writes. It returns
every error at once (the repair round sends them all back), the warnings, and, only when there
is no error, the exact texts to write. The numbered rules are docs/design.md §5's (`rules.py`); each is
checked by a function of the `check_….py` module its idea names, over one `ReplyReading`
(`reply_reading.py`), and registered under the rule it checks in that module's `CHANGE_RULES` or
`REPLY_RULES`, which `RULE_MODULES` below gathers in order. Rules 1, 12, 14 and 15 are checked as
the reply is read (`reply_reading.py`):

1. paths inside the convergent layer only (see `allowed_paths.py`);
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
13. a situational file stays within `situational_max_tokens`;
16. a new or changed statement taken from a note that is not the user's own words (a web clip,
   a template) marks that source `quoted from`.

Statements are compared by `Statement.key` — the normalised core, without list marker, sources
and traces — so rewording punctuation or moving a source is not a change (digits, signs,
currency and question marks are kept: changing them is).
"""

from __future__ import annotations

from cmem.converge.validator import (
    check_accounting,
    check_invention,
    check_losses,
    check_shape,
    check_sizes,
    check_sources,
    check_trace_dates,
)
from cmem.converge.validator.check_invention import word_tokens
from cmem.converge.validator.reply_reading import (
    RESIDENT,
    ChangeRule,
    PassContext,
    ReplyReading,
    ReplyRule,
    RuleKey,
    Validation,
    ended,
    format_issues,
)
from cmem.converge.validator.response import Response
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

# The rules' modules, in the order their checks run; each registers its checks under their rule
# in its own `CHANGE_RULES` and `REPLY_RULES`.
RULE_MODULES = (
    check_shape,
    check_sources,
    check_losses,
    check_trace_dates,
    check_sizes,
    check_accounting,
    check_invention,
)
# Each file block of the reply, in this order: the rule → its check.
CHANGE_RULES: dict[RuleKey, ChangeRule] = {
    rule: check for module in RULE_MODULES for rule, check in module.CHANGE_RULES.items()
}
# Then the reply as a whole, in this order.
REPLY_RULES: dict[RuleKey, ReplyRule] = {
    rule: check for module in RULE_MODULES for rule, check in module.REPLY_RULES.items()
}


def validate_response(vault: Vault, response: Response, ctx: PassContext) -> Validation:
    result = Validation(errors=list(response.errors), warnings=list(response.warnings))
    reply = ReplyReading(vault, response, ctx, result)
    changes = reply.read_changes()
    for change in changes:
        for check_change in CHANGE_RULES.values():
            check_change(reply, change)
    for check_reply in REPLY_RULES.values():
        check_reply(reply)
    if result.ok:
        for change in changes:
            if change.base is None or change.new.text != ended(change.base.text):
                result.writes[change.path] = change.new.text
                result.bases[change.path] = None if change.base is None else change.base.text
    return result
