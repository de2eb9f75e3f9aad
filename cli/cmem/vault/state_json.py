"""`.cmem/state.json`: which notes were converged, by which pass (committed with the vault).

Format (version 1):

    {
      "version": 1,
      "notes": {
        "2026-11-28 随手记.md": {
          "sha256": "…",            # the note's bytes when the pass read it
          "lines": ["a1b2c3d4e5f6", …],  # line_key() of every line converged, so an edited
                                    # note is pending again for its new lines only
          "pass": "20261129-101500-3f2a",
          "time": "2026-11-29T10:15:00+00:00",
          "into": ["converged/core/profile.md"]
        }
      },
      "passes": [
        {"id": "…", "time": "…", "engine": "builtin", "model": null,
         "notes": ["…"], "changed": ["…"], "warnings": 0, "kind": "converge"}
      ]
    }

`passes` keeps the last 200 entries; git keeps the rest. The pass commit's hash is not stored (a
file cannot name the commit that holds it): the commit carries a `Cmem-Pass: <id>` trailer.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from cmem.atomic import write_atomic
from cmem.errors import CmemError

STATE_VERSION = 1
MAX_PASSES = 200


def line_key(line: str) -> str:
    """A short, whitespace-insensitive fingerprint of one line of a note."""
    # split() and strip() know the same whitespace as the regex `\s+` (str.isspace): the same
    # text as re.sub(r"\s+", " ", line.strip()) without a regex on every cue line of a scan
    normal = " ".join(line.split())
    return hashlib.sha1(normal.encode("utf-8")).hexdigest()[:12]


@dataclass
class ConvergedNote:
    sha256: str
    lines: set[str]
    pass_id: str
    time: str
    into: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "sha256": self.sha256,
            "lines": sorted(self.lines),
            "pass": self.pass_id,
            "time": self.time,
            "into": self.into,
        }


@dataclass
class State:
    notes: dict[str, ConvergedNote] = field(default_factory=dict)
    passes: list[dict] = field(default_factory=list)

    @property
    def last_pass(self) -> dict | None:
        return self.passes[-1] if self.passes else None

    def last_of_kind(self, kind: str) -> dict | None:
        for entry in reversed(self.passes):
            if entry.get("kind", "converge") == kind:
                return entry
        return None

    def to_json(self) -> dict:
        return {
            "version": STATE_VERSION,
            "notes": {rel: self.notes[rel].to_json() for rel in sorted(self.notes)},
            "passes": self.passes[-MAX_PASSES:],
        }


def load_state(path: Path) -> State:
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return State()
    except UnicodeDecodeError:
        raise CmemError(
            f"{path} is not UTF-8; restore it from git (`git checkout -- {path.name}`)."
        ) from None
    return parse_state(text, path)


def parse_state(text: str, path: "Path | str") -> State:
    """The state in `text` (read from `path`, named in messages)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CmemError(
            f"{path} is not valid JSON (line {exc.lineno}); restore it from git or run `cmem doctor`."
        ) from None
    if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
        raise CmemError(
            f"{path} has state format {data.get('version') if isinstance(data, dict) else '?'}; this cmem reads version {STATE_VERSION}."
        )
    notes = {}
    for rel, entry in (data.get("notes") or {}).items():
        try:
            notes[rel] = ConvergedNote(
                sha256=entry["sha256"],
                lines=set(entry.get("lines", [])),
                pass_id=entry.get("pass", ""),
                time=entry.get("time", ""),
                into=list(entry.get("into", [])),
            )
        except (KeyError, TypeError, AttributeError):
            raise CmemError(
                f"{path}: the entry for {rel!r} is malformed; run `cmem doctor`."
            ) from None
    return State(notes=notes, passes=list(data.get("passes") or []))


def state_bytes(state: State) -> bytes:
    """Readable and diff-friendly: one line per converged note and per pass, so a pass's commit
    shows which notes it converged rather than hundreds of line fingerprints."""
    data = state.to_json()
    notes = ",\n".join(
        f"  {json.dumps(rel, ensure_ascii=False)}: {json.dumps(entry, ensure_ascii=False)}"
        for rel, entry in data["notes"].items()
    )
    passes = ",\n".join(f"  {json.dumps(entry, ensure_ascii=False)}" for entry in data["passes"])
    text = (
        "{\n"
        f' "version": {data["version"]},\n'
        f' "notes": {{' + (f"\n{notes}\n " if notes else "") + "},\n"
        ' "passes": [' + (f"\n{passes}\n " if passes else "") + "]\n"
        "}\n"
    )
    return text.encode("utf-8")


def save_state(path: Path, state: State) -> bytes:
    data = state_bytes(state)
    write_atomic(path, data)
    return data
