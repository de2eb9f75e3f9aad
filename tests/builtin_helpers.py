"""What the builtin-engine and coverage tests share: the pass date, an English tooling topic file,
the archived notes its statements cite, a selected note built as the scanner gives it, one
builtin pass run and validated (`run`), days of notes converged by real passes (`converge_days`)
and the layer read back (`layer`, `all_traces`). Kept here so no test module imports another."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

from cmem.converge.builtin.engine import builtin_response
from cmem.converge.pipeline import PassOptions, run_pass
from cmem.converge.selection import SelectedNote
from cmem.converge.validator.response import parse_response
from cmem.converge.validator.validate import PassContext, validate_response
from cmem.scan.signals import Signal
from cmem.vault.config import Formats
from cmem.vault.layers import open_vault
from cmem.vault.notes import split_frontmatter
from cmem.vault.statements import parse_statements

DATE = "2026-11-29"

TOOLING_EN = """\
---
summary: Python tooling for side projects
importance: 4
updated: 2026-10-05
tags: [python, tooling]
---
# Python tooling

- Uses pip and venv for projects (source: [[2026-10-05 notes]])
- Pins Python 3.12 for new projects (source: [[2026-10-05 notes]])
- Runs tests with pytest (source: [[2026-10-05 notes]])
"""

OLD_NOTES = {
    "archive/2026-10/2026-10-05 notes.md": "- old\n",
    "archive/2026-10/2026-10-18 随手记.md": "- old\n",
    "archive/2026-10/2026-09-30 日记.md": "- old\n",
}


def note_with(
    root: Path, rel: str, signals: list[tuple[int, str]], tags=(), links=(), mtime_ns: int = 0
) -> SelectedNote:
    """A selected note with the given (line, class) signals, as the scanner would give it."""
    text = (root / rel).read_text("utf-8")
    lines = text.split("\n")
    found = [Signal(rel, line, cls, "cue", lines[line - 1][:80]) for line, cls in signals]
    return SelectedNote(
        rel,
        rel.rsplit("/", 1)[-1].removesuffix(".md"),
        text,
        lines,
        found,
        list(tags),
        list(links),
        mtime_ns=mtime_ns,
    )


def originals_of(root: Path) -> dict[str, str]:
    vault = open_vault(root)
    return {f.rel: f.path.read_text("utf-8") for f in vault.convergent_files()}


def run(root: Path, notes: list[SelectedNote], originals: dict[str, str] | None = None):
    """(response text, {path: new content}, validation) for one builtin pass."""
    vault = open_vault(root)
    originals = originals_of(root) if originals is None else originals
    text = builtin_response(vault, notes, originals, DATE)
    response = parse_response(text)
    assert response.ok, response.errors
    context = PassContext(
        DATE,
        [n.rel for n in notes],
        dict(originals),
        vault.note_names(),
        source_texts={n.name: n.text for n in notes},
    )
    validation = validate_response(vault, response, context)
    assert validation.errors == [], [str(e) for e in validation.errors]
    return text, {block.path: block.content + "\n" for block in response.files}, validation


EN_FORMATS = Formats("(source: {links})", ", ", "(updated {date}, was: {old})")
TOOLING = "converged/topics/tooling.md"


def selected_note(rel: str, text: str, lines: list[tuple[int, str]]) -> SelectedNote:
    split = text.split("\n")
    return SelectedNote(
        rel,
        rel.removesuffix(".md"),
        text,
        split,
        [Signal(rel, n, cls, "cue", split[n - 1]) for n, cls in lines],
    )


def converge_days(root: Path, days: list[tuple[str, dict[str, str]]]) -> list:
    """Each day's notes written (dated that morning) and converged that evening; the results."""
    results = []
    for day, notes in days:
        stamp = datetime.fromisoformat(day).replace(hour=9, tzinfo=timezone.utc).timestamp()
        for order, (name, text) in enumerate(notes.items()):
            (root / f"{name}.md").write_text(text, encoding="utf-8")
            os.utime(root / f"{name}.md", (stamp + order * 60, stamp + order * 60))
        now = datetime.fromisoformat(day).replace(hour=21, tzinfo=timezone.utc)
        result = run_pass(open_vault(root), PassOptions(engine="builtin", now=now))
        assert result.status in ("applied", "nothing"), (day, result.errors)
        results.append(result)
    return results


def layer(root: Path) -> dict[str, list]:
    """Each memory file's statements (read with the vault's formats)."""
    vault = open_vault(root)
    found = {}
    for file in vault.convergent_files():
        text = file.path.read_text("utf-8")
        _, start, _ = split_frontmatter(text)
        body = "\n".join(text.split("\n")[start - 1 :])
        found[file.rel] = parse_statements(body, start, vault.config.formats)
    return found


def all_traces(statement) -> list:
    found, pending = [], list(statement.traces)
    while pending:
        trace = pending.pop(0)
        found.append(trace)
        pending.extend(trace.older)
    return found
