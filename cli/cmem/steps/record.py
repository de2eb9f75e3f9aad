"""The step record: what `.cmem/state.json` keeps of each step in its `passes` list.

One typed record for every step kind, so a pass, an archive apply, an undo and a repair are
written (and read back by `cmem log`) with the same fields.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

# What a person calls each step kind, in messages ("an interrupted archive apply …").
STEP_NAMES = {
    "converge": "pass",
    "archive": "archive apply",
    "undo": "undo",
    "sync": "sync",
    "capture": "capture",
    "repair": "repair",
}


def step_name(kind: str) -> str:
    return STEP_NAMES.get(kind, "step")


def a_step(kind: str) -> str:
    """The name with its article: "a pass", "an archive apply", "an undo"."""
    name = step_name(kind)
    return ("an " if name[0] in "aeiou" else "a ") + name


def new_step_id(now: datetime) -> str:
    """Sortable by time, unique enough for one vault: `20261130-141502-3fa9`. (`os.urandom` is
    what `secrets.token_hex` reads; `secrets` imports base64, hmac and random with it.)"""
    return now.strftime("%Y%m%d-%H%M%S-") + os.urandom(2).hex()


@dataclass
class StepRecord:
    id: str
    kind: Literal["converge", "archive", "undo"]  # a repair, a capture, a sync record none
    time: str  # ISO 8601, seconds
    notes: list[str] = field(
        default_factory=list
    )  # the notes the step converged, moved or gave back
    changed: list[str] = field(default_factory=list)  # the files it changed
    engine: str | None = None
    model: str | None = None
    warnings: int = 0
    moves: list[tuple[str, str]] = field(default_factory=list)  # archive: (from, to)
    undoes: str | None = None  # undo: the step id it reverted
    commit: str | None = None  # undo: the commit it reverted
    # the blob each file it wrote was committed as (None: removed): undo takes back only these
    wrote: dict[str, str | None] = field(default_factory=dict)

    def to_json(self) -> dict:
        data: dict[str, object] = {
            "id": self.id,
            "time": self.time,
            "engine": self.engine,
            "model": self.model,
            "notes": list(self.notes),
            "changed": list(self.changed),
            "warnings": self.warnings,
            "kind": self.kind,
        }
        if self.kind == "archive":
            data["moves"] = [{"from": source, "to": target} for source, target in self.moves]
        if self.kind == "undo":
            data["undoes"], data["commit"] = self.undoes, self.commit
        if self.wrote:
            data["wrote"] = dict(self.wrote)
        return data
