"""Rules 2 and 9: a file block's frontmatter parses and keeps its keys, and every line it
adds is a statement, a blank, a short heading or a line the file had."""

from __future__ import annotations

import re

from cmem.converge.validator.added_lines import frontmatter_problems, unaccounted_lines
from cmem.converge.validator.reply_reading import (
    MAX_FILE_BLOCKS,
    Change,
    ChangeRule,
    ReplyReading,
    ReplyRule,
    RuleKey,
)
from cmem.converge.validator.rules import FRONTMATTER, ONLY_STATEMENTS
from cmem.vault.yaml_reader import frontmatter_hazard, read_frontmatter


def check_frontmatter(reply: ReplyReading, change: Change) -> None:
    new = change.new
    if new.frontmatter_problem:
        reply.error(change.path, 1, FRONTMATTER, f"the {new.frontmatter_problem}")
        return
    if new.frontmatter and frontmatter_hazard(new.frontmatter):
        reply.error(change.path, 1, ONLY_STATEMENTS, f"the {frontmatter_hazard(new.frontmatter)}")
        return
    # the plain subset first (what the scanner reads notes with): it gives what the full load
    # gives, and a one-note pass then never imports yaml for `key: value` lines
    data, problem = read_frontmatter(new.frontmatter)
    if problem:
        where = re.search(r"line (\d+)", problem)
        reply.error(change.path, int(where.group(1)) if where else 1, FRONTMATTER, problem)
        return
    for why in frontmatter_problems(
        change.base.frontmatter if change.base else None,
        new.frontmatter,
        data,
        change.base is None,
    ):
        reply.error(change.path, 1, ONLY_STATEMENTS, f"the frontmatter {why}")
    if change.base is None:
        return
    before, _ = read_frontmatter(change.base.frontmatter)
    lost = [str(key) for key in before if key not in data]
    if lost:
        reply.error(
            change.path,
            1,
            FRONTMATTER,
            f"the frontmatter lost the key{'s' if len(lost) > 1 else ''} {', '.join(lost)}; keep every key the file had",
        )


def check_lines(reply: ReplyReading, change: Change) -> None:
    before = {line.strip() for line in change.base.text.split("\n")} if change.base else set()
    statements = {s.line_no for s in change.new.statements}
    for number, why in unaccounted_lines(
        change.new.text, change.new.body_start, statements, before
    )[:MAX_FILE_BLOCKS]:
        if number not in reply.content_lines.get(change.path, set()):
            reply.error(
                change.path,
                number,
                ONLY_STATEMENTS,
                f"{why} (only sourced statements, blank lines and short headings are written)",
            )


# The rules this module checks, each under its id, in the order they run: on each file block,
# then on the reply as a whole (`validate.py` runs the modules in `RULE_MODULES` order).
CHANGE_RULES: dict[RuleKey, ChangeRule] = {
    FRONTMATTER: check_frontmatter,
    ONLY_STATEMENTS: check_lines,
}
REPLY_RULES: dict[RuleKey, ReplyRule] = {}
