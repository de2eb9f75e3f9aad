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
          "into": ["converged/core/profile.md"],   # empty: the note was only deferred
          "deferred": {"f6e5d4c3b2a1": "one vague mention; wait for it to recur"},
          "engine": "llm",           # who judged it: "llm" (a model, or a --response) or
                                    # "builtin", which reads cue lines only
          "unjudged": 3,            # content lines no engine judged (the builtin engine's
                                    # non-cue lines): they wait for a model
          "keys": ["gym", "skip"],  # recurrence key phrases of its cue lines: counted
                                    # after the note is archived
          "deferred_keys": ["gym"]  # key phrases of its deferred lines: a pending note that
                                    # shares them brings them back
        }
      },
      "passes": [
        {"id": "…", "time": "…", "engine": "builtin", "model": null,
         "notes": ["…"], "changed": ["…"], "warnings": 0, "kind": "converge"}
      ]
    }

An entry means a pass *accounted for* the note as it was (`sha256`): its lines were converged
(`lines`), deferred with a reason (`deferred`), or left for a model (`unjudged`). Fields added
after version 1 was first written are optional, so an older state reads as "converged by a
model, nothing deferred".

`passes` keeps the last 200 entries; git keeps the rest. The pass commit's hash is not stored (a
file cannot name the commit that holds it): the commit carries a `Cmem-Pass: <id>` trailer.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
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


MODEL, BUILTIN = "llm", "builtin"  # ConvergedNote.engine


@dataclass
class ConvergedNote:
    """What the passes made of one note: see the module docstring."""

    sha256: str
    lines: set[str]
    pass_id: str
    time: str
    into: list[str] = field(default_factory=list)
    deferred: dict[str, str] = field(default_factory=dict)  # line_key -> reason
    engine: str = MODEL
    unjudged: int = 0
    keys: list[str] = field(default_factory=list)
    deferred_keys: list[str] = field(default_factory=list)  # key phrases of its deferred lines
    # why the builtin engine cannot converge it as it is now: no builtin pass takes it again
    # until it changes (a model still may)
    quarantined: str = ""

    @property
    def converged(self) -> bool:
        """Some of it went into memory (a note only deferred has no `into`)."""
        return bool(self.into)

    @property
    def waits(self) -> bool:
        """Lines of it still wait for a judgement: no engine judged them (`unjudged`), or the
        builtin engine, which reads cue lines only, deferred them for a model."""
        return bool(self.unjudged) or (self.engine == BUILTIN and bool(self.deferred))

    @property
    def waiting_lines(self) -> int:
        return self.unjudged + (len(self.deferred) if self.engine == BUILTIN else 0)

    def to_json(self) -> dict:
        data: dict[str, object] = {
            "sha256": self.sha256,
            "lines": sorted(self.lines),
            "pass": self.pass_id,
            "time": self.time,
            "into": self.into,
        }
        # the fields after version 1's first form are written only when they say something, so
        # a state of notes converged by a model reads as it always did
        if self.deferred:
            data["deferred"] = dict(sorted(self.deferred.items()))
        if self.engine != MODEL:
            data["engine"] = self.engine
        if self.unjudged:
            data["unjudged"] = self.unjudged
        if self.keys:
            data["keys"] = sorted(self.keys)
        if self.deferred_keys:
            data["deferred_keys"] = sorted(self.deferred_keys)
        if self.quarantined:
            data["quarantined"] = self.quarantined
        return data

    @classmethod
    def from_json(cls, entry: dict) -> ConvergedNote:
        """Raises KeyError, TypeError, AttributeError or ValueError for a malformed entry."""
        deferred = entry.get("deferred") or {}
        if not isinstance(deferred, dict):
            raise TypeError("deferred")
        return cls(
            sha256=entry["sha256"],
            lines=set(entry.get("lines", [])),
            pass_id=entry.get("pass", ""),
            time=entry.get("time", ""),
            into=list(entry.get("into", [])),
            deferred={str(key): str(reason) for key, reason in deferred.items()},
            engine=str(entry.get("engine") or MODEL),
            unjudged=int(entry.get("unjudged") or 0),
            keys=[str(key) for key in entry.get("keys") or []],
            deferred_keys=[str(key) for key in entry.get("deferred_keys") or []],
            quarantined=str(entry.get("quarantined") or ""),
        )


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


def parse_state(text: str, path: Path | str) -> State:
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
            notes[rel] = ConvergedNote.from_json(entry)
        except (KeyError, TypeError, AttributeError, ValueError):
            raise CmemError(
                f"{path}: the entry for {rel!r} is malformed; run `cmem doctor`."
            ) from None
    return State(notes=notes, passes=list(data.get("passes") or []))


def merge_states(base: State, ours: State, theirs: State) -> State:
    """Two writers' states as one, from the state both started from: every note entry either
    side added or changed (one changed on both sides: the newer, with both sides' converged
    lines, targets and key phrases), every pass record of both. `cmem sync` merges two
    machines' state.json so, and a pass its own changes into a state.json a pull or another
    pass rewrote while its model thought."""
    notes = {}
    for rel in dict.fromkeys([*ours.notes, *theirs.notes, *base.notes]):
        was, mine, other = (s.notes.get(rel) for s in (base, ours, theirs))
        if mine == other or other == was:
            chosen = mine
        elif mine == was:
            chosen = other
        elif mine is None or other is None:
            chosen = mine or other  # removed on one side, converged again on the other: converged
        else:
            newer, older = (mine, other) if mine.time >= other.time else (other, mine)
            chosen = replace(
                newer,
                lines=set(newer.lines) | set(older.lines),
                into=list(dict.fromkeys([*newer.into, *older.into])),
                keys=sorted(set(newer.keys) | set(older.keys)),
            )
        if chosen is not None:
            notes[rel] = chosen
    # the records both started from in their order, then each side's new ones, oldest first: a
    # clock set back on one machine never puts a new record before an older one. Times have
    # one-second steps; within a second, the other side's records (already landed) come first
    known = {_pass_key(entry): entry for entry in base.passes}
    added: dict[str, dict] = {}
    for entry in [*theirs.passes, *ours.passes]:
        if _pass_key(entry) not in known:
            added.setdefault(_pass_key(entry), entry)
    ordered = sorted(added.values(), key=lambda e: str(e.get("time", "")))
    return State(notes, [*known.values(), *ordered][-MAX_PASSES:])


def _pass_key(entry: dict) -> str:
    return entry.get("id") or repr(entry)


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
