"""The name of a topic file the builtin engine creates (SPEC §4, §5 rule 12, issue 35).

A topic file is named by what it is about: the line's subject ("Shell"), else the note's first
specific tag, else the line's first words. Never by a note's links — a daily note's template
links the days around it, and `[[2026-12-04]]` is no topic — and never as a note is named (a
source `[[name]]` would no longer say which one it means), as a date, a year or a number, or
like an existing memory file but for case, Unicode form or look-alike letters (that file is the
one to write to).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from cmem.converge.paths import skeleton
from cmem.converge.words import slug

# Only digits and separators: a date (2026-12-04), a month, a year, a number.
_NO_WORDS = re.compile(r"[\d\W_]*")


def names_a_topic(name: str) -> bool:
    """Whether a file name (a slug) says what a topic is: it holds a letter."""
    return bool(name) and not _NO_WORDS.fullmatch(name)


def topic_name(
    titles: Iterable[str],
    folder: str,
    existing: dict[str, str],
    is_note_name: Callable[[str], bool],
    usable: Callable[[str], bool],
) -> tuple[str, str]:
    """(path, title) of the topic file for the first title that makes a good name: an existing
    file of that name (or of a name looking the same) when it is `usable`, else a new path named
    like no note and no memory file. `existing` maps each memory file's skeleton to its path."""
    titles = list(titles)
    for title in titles:
        name = slug(title)
        if not names_a_topic(name) or is_note_name(name) or is_note_name(title):
            continue
        rel = f"{folder}/{name}.md"
        same = existing.get(skeleton(rel))
        if same is not None:
            if usable(same):
                return same, title
            continue
        return rel, title
    # every title names a note, a date or an unusable file: number the first good one
    base = next((slug(t) for t in titles if names_a_topic(slug(t))), "topic")
    title = base.replace("-", " ")
    for number in range(2, 1000):
        rel = f"{folder}/{base}-{number}.md"
        if skeleton(rel) not in existing and not is_note_name(f"{base}-{number}"):
            return rel, title
    raise AssertionError("no free topic name")  # a thousand taken names: not a real vault
