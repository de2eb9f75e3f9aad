"""Commit messages built from structured fields (docs/design.md §5 "Steps").

A cmem commit message is a subject, one `Key: value` line per field, and a final paragraph of
trailers (`Cmem-Pass: <id>`, and for an undo `Cmem-Undoes: <sha>`) that `cmem log`, `undo` and
`trace` read back. Values come from notes and from the model (a note's name, a deferral's
reason, a warning), so each is folded onto one line of printable text: nothing a model writes can
start a line of its own, so it can never add a field or a trailer.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Protocol

STEP_TRAILER = "Cmem-Pass"
UNDOES_TRAILER = "Cmem-Undoes"
MAX_VALUE_CHARS = 500

# Every character that may end a line somewhere (\n, \r, \v, \f, \x1c-\x1e, NEL, U+2028/9) or
# is otherwise a control or format character (bidi overrides, zero-width joiners…).
_SPACES = re.compile(r"\s+")


def one_line(text: object, limit: int = MAX_VALUE_CHARS) -> str:
    """`text` as one line of printable characters: line breaks and control characters become
    spaces, runs of spaces one, the whole cut to `limit` characters with an ellipsis."""
    value = str(text)
    cleaned = "".join(
        " " if (unicodedata.category(ch)[0] == "C" or ch in "\u2028\u2029\x85") else ch
        for ch in value
    )
    cleaned = _SPACES.sub(" ", cleaned).strip()
    if len(cleaned) > limit:
        cleaned = cleaned[: limit - 1].rstrip() + "…"
    return cleaned


@dataclass
class CommitMessage:
    subject: str
    step_id: str
    fields: list[tuple[str, str]] = field(default_factory=list)
    undoes: str | None = None  # undo: the commit it reverts
    preamble: str | None = None  # a sentence before the fields (an undo's "This reverts commit …")

    def add(self, key: str, value: object) -> None:
        self.fields.append((key, one_line(value)))

    def render(self) -> str:
        lines = [one_line(self.subject, 200), ""]
        if self.preamble:
            lines += [one_line(self.preamble), ""]
        lines += [f"{key}: {one_line(value)}" for key, value in self.fields]
        trailers = [f"{STEP_TRAILER}: {one_line(self.step_id, 80)}"]
        if self.undoes:
            trailers.append(f"{UNDOES_TRAILER}: {one_line(self.undoes, 80)}")
        if self.fields:
            lines.append("")
        return "\n".join(lines + trailers)

    def __str__(self) -> str:
        return self.render()


def read_trailers(body: str) -> dict[str, str]:
    """The trailers of a cmem commit message: `Key: value` lines of its last paragraph only, so a
    line further up (from an older cmem that copied text verbatim) cannot pose as one."""
    paragraphs = [p for p in body.strip("\n").split("\n\n") if p.strip()]
    if not paragraphs:
        return {}
    trailers: dict[str, str] = {}
    for line in paragraphs[-1].splitlines():
        key, sep, value = line.partition(":")
        if sep and key in (STEP_TRAILER, UNDOES_TRAILER):
            trailers[key] = value.strip()
    return trailers


def line_ranges(lines: list[int]) -> str:
    """3,4,5,9 as "3-5, 9"."""
    runs: list[list[int]] = []
    for number in sorted(lines):
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


class PassFields(Protocol):
    """What a pass's message is made of: `converge/pass_values.py: PassResult` has them."""

    converged: list[str]
    deferred: list[dict]
    merged: list[dict]
    quarantined: list[dict]
    changed: list[str]
    moved: list[dict]
    engine: str | None
    model: str | None
    warnings: list[str]


def pass_message(result: PassFields, step_id: str) -> CommitMessage:
    """A pass's commit message, built from fields (its trailer names the step, `step_id`): a
    note's name, a deferral's reason and a warning are folded onto one line each, so a model
    cannot add a trailer or a field."""
    names = (
        ", ".join(
            path.rsplit("/", 1)[-1].removesuffix(".md")
            for path in result.changed
            if not path.startswith((".cmem/",))
        )
        or "no files"
    )
    count = len(result.converged)
    subject = f"cmem: converge {count} note{'s' if count != 1 else ''} → {names}"
    if not count and (result.deferred or result.quarantined):
        waiting = len({d["note"] for d in [*result.deferred, *result.quarantined]})
        subject = f"cmem: defer {waiting} note{'s' if waiting != 1 else ''}"
    message = CommitMessage(subject, step_id)
    for rel in result.converged:
        message.add("Converged", rel)
    for deferred in result.deferred:
        lines = deferred.get("lines")
        where = f" lines {line_ranges(lines)}" if lines else ""
        message.add("Deferred", f"{deferred['note']}{where} ({deferred['reason']})")
    for merge in result.merged:
        message.add("Merged", f"{merge['statement']} → {merge['into']} ({merge['file']})")
    for aside in result.quarantined:
        message.add("Quarantined", f"{aside['note']} ({aside['reason']})")
    for rel in result.changed:
        message.add("Changed", rel)
    for move in result.moved:
        message.add("Moved", f"{move['statement']} ({move['from']} → {', '.join(move['to'])})")
    message.add("Engine", f"{result.engine}" + (f" ({result.model})" if result.model else ""))
    for warning in result.warnings:
        message.add("Warning", warning)
    return message
