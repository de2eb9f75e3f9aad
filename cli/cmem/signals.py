"""Signals: what a scan looks for in divergent notes (SPEC §2).

Four classes in priority order — correction, preference, decision, recurring — found by cues
(zh and en, extendable in config), never inside code blocks, inline code, URLs or frontmatter.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SIGNAL_CLASSES = ("correction", "preference", "decision", "recurring")
PRIORITY = {name: index + 1 for index, name in enumerate(SIGNAL_CLASSES)}


@dataclass(frozen=True)
class Signal:
    note: str  # vault-relative path
    line: int  # 1-based, in the file as it is on disk
    cls: str  # one of SIGNAL_CLASSES ("class" in JSON)
    cue: str
    excerpt: str  # the line, trimmed to a readable length

    @property
    def priority(self) -> int:
        return PRIORITY[self.cls]

    def to_json(self) -> dict:
        return {"note": self.note, "line": self.line, "class": self.cls, "priority": self.priority, "cue": self.cue, "excerpt": self.excerpt}


@dataclass(frozen=True)
class Deferred:
    note: str
    line: int  # 0 when the whole note is deferred
    reason: str

    def to_json(self) -> dict:
        return {"note": self.note, "line": self.line, "reason": self.reason}


@dataclass
class PendingNote:
    """A divergent note with at least one signal not yet converged."""

    rel: str
    name: str  # wikilink name
    sha256: str
    mtime_ns: int
    signals: list[Signal] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)  # frontmatter tags and inline #tags
    links: list[str] = field(default_factory=list)  # wikilink targets in the body
    confirmed: bool = False  # `converge: true` or #converge

    @property
    def best_priority(self) -> int:
        return min((s.priority for s in self.signals), default=9)
