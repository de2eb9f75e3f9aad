"""A statement may cite one turn of a session note, `[[note#^t5]]` (the block reference Obsidian
opens; `[[note]]#^t5`, as docs/design.md §14 writes it, is read the same). The validator asks here whether
that block exists in the note and, in a session note, whether it is one of the user's turns: the
agent's text in a session note is context, never a source (rule 11, "cite notes, not memory":
the user's words; a block that does not exist is a source that resolves to nothing, rule 3).

In any other note a cited block only has to exist (a `^id` at the end of a line, or alone on
one): everything in a note the user wrote is the user's. Statements parse their sources with
`vault.statements.WIKILINK`, which reads `[[note#^t5]]` as a source of "note", so rule 3 checks
the note and this module only its block.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import lru_cache

from cmem.sessions.note import read_session_note

# [[name#^id]] or [[name#^id|alias]], and [[name]]#^id / [[name|alias]]#^id
_INSIDE = re.compile(r"\[\[([^\[\]|#\n]+)#\^([A-Za-z0-9-]+)(?:\|[^\[\]\n]*)?\]\]")
_AFTER = re.compile(r"\[\[([^\[\]|#\n]+)(?:\|[^\[\]\n]*)?\]\]#\^([A-Za-z0-9-]+)")


_read = lru_cache(maxsize=32)(read_session_note)  # a note cited by many statements is read once


def turn_refs(text: str) -> list[tuple[str, str]]:
    """(note name, block id) of every block a line cites, in order."""
    found = [(m.start(), m.group(1).strip(), m.group(2)) for m in _INSIDE.finditer(text)]
    found += [(m.start(), m.group(1).strip(), m.group(2)) for m in _AFTER.finditer(text)]
    return [(name, block) for _, name, block in sorted(found)]


def block_problem(note_text: str, block: str) -> str | None:
    """Why `^block` is not a source in this note (None: it is one)."""
    parsed = _read(note_text)
    if parsed.is_session:
        match = re.fullmatch(r"t(\d+)", block)
        number = int(match.group(1)) if match else None
        if number in parsed.user_anchors:
            return None
        if number in parsed.other_anchors:
            return "is not one of the user's turns (the agent's text is context, not a source)"
        return f"names no turn of that session note (its turns are ^t1 to ^t{parsed.last_turn})"
    if re.search(rf"(?m)(?:^|\s)\^{re.escape(block)}[ \t]*$", note_text):
        return None
    return "names no block of that note"


def turn_issues(
    statements: Iterable, known: set[str], note_text: Callable[[str], str | None]
) -> list[tuple[int, bool, str]]:
    """(line, whether the block is the agent's, message) for each new or changed statement citing
    a block that is not a source.
    `known`: the keys of statements the file already had (their sources are not the reply's
    doing); `note_text(name)`: a cited note's text, None when it resolves to no note (rule 3)."""
    issues = []
    for statement in statements:
        if statement.key in known:
            continue
        for name, block in turn_refs(statement.text):
            text = note_text(name)
            if text is None:
                continue
            problem = block_problem(text, block)
            if problem:
                agents = problem.startswith("is not one of the user's turns")
                issues.append((statement.line_no, agents, f"[[{name}#^{block}]] {problem}"))
    return issues
