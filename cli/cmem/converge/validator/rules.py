"""The rulebook (docs/design.md §5, "One rulebook"): the numbered rules a reply must keep.

The validator cites these numbers in every rejection, and both prompts
(`prompts/converge.en.md`, `.zh.md`) state each rule under the same number with an example that
passes it; `tests/converge/test_rulebook.py` holds the three together. Adding a rule: a number
here, its check citing it in the `converge/validator/check_….py` module of its idea, registered
under the number in that module's `CHANGE_RULES` or `REPLY_RULES`, and its text and example in
both prompts.

Warnings are not rules: they never reject a reply, and they are named by a word (`WarningName`).
"""

from __future__ import annotations

from typing import Literal, get_args

RuleId = Literal[
    "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16"
]

PATHS: RuleId = "1"
FRONTMATTER: RuleId = "2"
SOURCES: RuleId = "3"
NOTHING_LOST: RuleId = "4"
TRACE_DATES: RuleId = "5"
RESIDENT_SIZE: RuleId = "6"
ACCOUNTING: RuleId = "7"
DROP_LITTLE: RuleId = "8"
ONLY_STATEMENTS: RuleId = "9"
MEMORY_WHOLE: RuleId = "10"
CITE_NOTES: RuleId = "11"
NEW_FILES: RuleId = "12"
SIZES: RuleId = "13"
ONE_REPLY: RuleId = "14"
COMPLETE_FILES: RuleId = "15"
QUOTED: RuleId = "16"

RULES: dict[RuleId, str] = {
    PATHS: "paths inside the convergent layer",
    FRONTMATTER: "frontmatter parses and keeps its keys",
    SOURCES: "every new or changed statement cites a note that exists",
    NOTHING_LOST: "nothing is lost: a trace keeps every word, or a merge, a drop, a move",
    TRACE_DATES: "a trace is dated YYYY-MM-DD, by its note or today, never later",
    RESIDENT_SIZE: "the resident files stay under their cap",
    ACCOUNTING: "notes converged (and cited) or deferred; a reply that accounts for none is refused",
    DROP_LITTLE: "at most a quarter of a file of four or more statements dropped",
    ONLY_STATEMENTS: "only sourced statements, blanks and short headings; four frontmatter keys",
    MEMORY_WHOLE: "nothing moves out of the resident layer; at most a quarter of memory lost",
    CITE_NOTES: "a source is a note, never a memory file or the checklist",
    NEW_FILES: "a new file is named like no memory file and no note",
    SIZES: "topic files and the reply stay under their caps",
    ONE_REPLY: "exactly one <convergence> element of well-formed blocks",
    COMPLETE_FILES: "every file block complete: no elision, control or replacement characters",
    QUOTED: "a statement from a note not in the user's own words says so in its source",
}

# Warnings: named by a word, never a number; a reply with only these is applied.
WarningName = Literal[
    "invention", "untraced", "unknown", "unaccounted", "converged", "dropped", "format"
]
INVENTION: WarningName = "invention"  # few of a statement's words are in the notes it cites
UNTRACED: WarningName = "untraced"  # a statement changed without a trace, by words no source holds
UNKNOWN: WarningName = "unknown"  # an element, attribute or entry of the reply is ignored
UNACCOUNTED: WarningName = "unaccounted"  # a note of the pass not judged: it stays pending
CONVERGED: WarningName = "converged"  # a note said converged into a file that does not cite it
DROPPED: WarningName = "dropped"  # a <dropped> entry names nothing the reply removes
FORMAT: WarningName = "format"  # the reply's form was mended (a fence removed, a reason missing)

WARNINGS: tuple[WarningName, ...] = get_args(WarningName)
# Warnings whose statements go back to the model once (a repair round) before they are applied.
ASKED_AGAIN: tuple[WarningName, ...] = (INVENTION, UNTRACED)
