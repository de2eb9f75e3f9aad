"""`cmem capture`: agent transcripts into session notes, one step (docs/design.md §14).

Each session becomes one note in the sessions folder (a divergent folder), or grows the note it
already has by its new turns only: a turn is known by its identity in the transcript, written into
its block (`note.py`), so capturing the same file again changes nothing, and a resumed session
(the same file grown, or a new file that repeats the old records) adds each turn once. When the
session's note was archived, its new turns start a new note that links the first and goes on
numbering its turns. A session resumed under a new id (a fork: its agent names the session it
goes on from, or it repeats turns another note holds) gets a note of its own that links the note
it continues; the turns that note holds — by identity, or word for word from its start, as a
fork's copy of them opens the new session — are not written again.

A session that is not the user speaking is never captured, and is listed as skipped with why: a
subagent's transcript, or a pass's own model call (its first message is the pass's prompt).

The notes are written as one step (`steps/`: the lock, a journal, all or nothing, one commit
`cmem: capture …`), planned first without the lock, so a capture with nothing new neither waits
for a pass nor commits anything. A capture killed before its commit leaves the journal the next
command finishes, or nothing at all; what it had read is recorded in the machine folder only
after the commit, so the next capture reads those files again.

With no file named, the agents' own folders are searched (`discover.py`) for transcripts changed
within `--since`; a file whose size and time the record already holds is not read again.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from cmem.bounds import BOUNDS, out_of_bounds
from cmem.errors import Busy, CmemError, UsageError
from cmem.sessions import note as notes
from cmem.sessions.formats import read_transcript
from cmem.sessions.lineage import HeldNote, HeldNotes, fresh_turns, learnt_identities, stem
from cmem.sessions.transcript import Session, TranscriptError, Turn, display_path
from cmem.vault.globs import any_glob
from cmem.vault.layers import Vault

if TYPE_CHECKING:
    from cmem.steps.changes import ChangeSet

RECORD = "sessions.json"  # in the machine folder: what was read, and which note each session has
DEFAULT_SINCE = timedelta(days=7)


@dataclass
class CapturedSession:
    agent: str
    session_id: str
    project: str | None
    note: str  # vault-relative
    added: int  # user turns written now
    turns: int  # user turns the note holds
    created: bool
    continues: str | None = None  # the archived note this one goes on from

    def to_json(self) -> dict:
        return {
            "agent": self.agent,
            "session": self.session_id,
            "project": self.project,
            "note": self.note,
            "added": self.added,
            "turns": self.turns,
            "created": self.created,
            "continues": self.continues,
        }


@dataclass
class CaptureResult:
    status: str = "nothing"  # captured | nothing
    sessions: list[CapturedSession] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)  # {"what", "reason"}
    warnings: list[str] = field(default_factory=list)
    transcripts: int = 0
    redacted: int = 0
    cut: int = 0
    commit: str | None = None

    @property
    def added(self) -> int:
        return sum(s.added for s in self.sessions)

    def to_json(self) -> dict:
        return {
            "status": self.status,
            "sessions": [s.to_json() for s in self.sessions],
            "added": self.added,
            "transcripts": self.transcripts,
            "skipped": self.skipped,
            "warnings": self.warnings,
            "redacted": self.redacted,
            "cut": self.cut,
            "commit": self.commit,
        }


def parse_duration(text: str) -> timedelta:
    """`90m`, `24h`, `7d`, `2w` (a bare number is days)."""
    import re

    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", text or "")
    if not match:
        raise UsageError(f"--since takes a duration like 90m, 24h, 7d or 2w, not {text!r}.")
    unit = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "": 86400}[match.group(2)]
    seconds = float(match.group(1)) * unit
    if out_of_bounds("capture --since", seconds):  # one reaching before year 1 was a traceback
        low, high = BOUNDS["capture --since"]
        raise UsageError(
            f"--since takes a duration from {low / 60:g}m to {high / 86400:g}d, not {text!r}."
        )
    return timedelta(seconds=seconds)


def sessions_folder(vault: Vault) -> str:
    """The configured folder, once it is sure to be read as divergent."""
    folder = vault.config.sessions_folder
    if vault.layer_of(f"{folder}/x.md") != "divergent":
        raise CmemError(
            f"the sessions folder {folder!r} is not a divergent folder, so its notes would never be read: "
            f"add {folder} to divergent.extra_folders in .cmem/config.yaml (a vault made by `cmem init` "
            "since sessions exist has it), or set sessions.folder to one that is."
        )
    vault.confined(f"{folder}/x.md", "divergent")
    return folder


# --- the record in the machine folder -------------------------------------------------------


def load_record(vault: Vault) -> dict:
    try:
        data = json.loads((vault.machine_dir / RECORD).read_text("utf-8"))
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    data.setdefault("files", {})
    data.setdefault("sessions", {})
    return data


def save_record(vault: Vault, record: dict) -> None:
    from cmem.atomic import write_atomic

    vault.machine_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(
        vault.machine_dir / RECORD,
        json.dumps(record, ensure_ascii=False, indent=1) + "\n",
        mode=0o600,
    )


def _file_state(path: Path, complete: int) -> dict | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "read": complete}


def _unchanged(record: dict, path: Path) -> bool:
    held = record["files"].get(str(path))
    state = _file_state(path, 0)
    return bool(
        held
        and state
        and held.get("size") == state["size"]
        and held.get("mtime_ns") == state["mtime_ns"]
        and held.get("read") == state["size"]
    )


# --- reading the transcripts ------------------------------------------------------------------


@dataclass
class _Read:
    sessions: list[Session]
    files: dict[str, dict]  # path -> state to record once committed


def _read_all(
    vault: Vault,
    paths: list[Path] | None,
    agent: str | None,
    since: timedelta | None,
    cwd: str | None,
    result: CaptureResult,
    now: datetime,
) -> _Read:
    record = load_record(vault)
    named = paths is not None
    listed: list[tuple[Path, str | None]]
    if paths is not None:
        listed = [(Path(p).expanduser(), agent) for p in paths]
    else:
        from cmem.sessions.discover import transcripts

        window = since or DEFAULT_SINCE
        agents = (agent,) if agent else None
        listed = list(transcripts(agents, (now - window).timestamp()))
    merged: dict[tuple[str, str], Session] = {}
    files: dict[str, dict] = {}
    for path, fmt in listed:
        if not named and _unchanged(record, path):
            continue
        if named and not path.is_file():
            raise TranscriptError(f"no transcript at {display_path(path)} (no such file).")
        try:
            found, source = read_transcript(path, fmt)
        except TranscriptError as exc:
            if named:
                raise
            result.warnings.append(str(exc))
            continue
        result.transcripts += 1
        if source.broken_lines:
            result.warnings.append(
                f"{source.display}: {source.broken_lines} line(s) were not JSON and were skipped"
            )
        state = _file_state(path, source.complete_bytes)
        if state is not None:
            files[str(path)] = state
        for session in found:
            if session.cwd is None and cwd:
                session.cwd = cwd
            key = (session.agent, session.session_id)
            if key in merged:
                _merge(merged[key], session)
            else:
                merged[key] = session
    kept = []
    include = any_glob([os.path.expanduser(p) for p in vault.config.sessions_include])
    exclude = any_glob([os.path.expanduser(p) for p in vault.config.sessions_exclude])
    for session in merged.values():
        what = f"{session.agent} session {session.session_id}"
        where = session.cwd or ""
        if session.skip:
            result.skipped.append({"what": what, "reason": session.skip})
        elif vault.config.sessions_include and not include(where):
            result.skipped.append(
                {"what": what, "reason": f"{where or 'no project'} is not in sessions.include"}
            )
        elif exclude(where):
            result.skipped.append({"what": what, "reason": f"{where} is in sessions.exclude"})
        elif named and since and session.ended and session.ended < now - since:
            result.skipped.append({"what": what, "reason": "it ended before --since"})
        else:
            kept.append(session)
    return _Read(kept, files)


def _merge(into: Session, other: Session) -> None:
    """The same session read from two files (a resumed session's new file): each turn once."""
    known = {key for turn in into.turns for key in turn.keys}
    turns = list(into.turns) + [t for t in other.turns if not known.intersection(t.keys)]
    turns.sort(key=lambda t: (t.time is None, t.time or datetime.min, t.seq))
    into.turns = [
        Turn(i, t.role, t.time, t.text, t.key, t.tools, t.aliases) for i, t in enumerate(turns, 1)
    ]
    into.cwd = into.cwd or other.cwd
    into.parent_id = into.parent_id or other.parent_id
    into.skip = into.skip or other.skip


# --- planning the notes -----------------------------------------------------------------------


@dataclass
class _Plan:
    changes: ChangeSet
    captured: list[CapturedSession]
    redacted: int = 0
    cut: int = 0
    skipped: list[dict] = field(default_factory=list)


@dataclass
class _Planning:
    """What planning every session's note shares: the notes as planned so far, their names."""

    notes: HeldNotes
    plan: _Plan
    taken: set[str] = field(default_factory=set)  # names planned in this capture

    @property
    def vault(self) -> Vault:
        return self.notes.vault

    @property
    def folder(self) -> str:
        return self.notes.folder

    def write(self, rel: str, text: str, old: bytes | None) -> None:
        self.plan.changes.write(rel, text, old)
        self.notes.planned[rel] = text


def plan_capture(vault: Vault, sessions: list[Session], folder: str, record: dict) -> _Plan:
    from cmem.steps.changes import ChangeSet

    planning = _Planning(HeldNotes(vault, folder, record), _Plan(ChangeSet(), []))
    for session in _in_order(sessions):
        _plan_session(planning, session)
    return planning.plan


def _in_order(sessions: list[Session]) -> list[Session]:
    """Earliest first (of two that start alike, as a fork and its copied turns do, the one that
    ended first), and a session after the one it goes on from: the one continued has its note
    planned by the time the one continuing looks for it."""
    latest = datetime.max.replace(tzinfo=timezone.utc)
    ordered = sorted(sessions, key=lambda s: (s.started or latest, s.ended or latest))
    ids = {s.session_id for s in ordered}
    first = [s for s in ordered if s.parent_id not in ids]
    return first + [s for s in ordered if s.parent_id in ids]


def _plan_session(planning: _Planning, session: Session) -> None:
    """The session's new turns, appended to its live note or written into a new one."""
    existing = planning.notes.of(session.agent, session.session_id)
    recorded = planning.notes.record["sessions"].get(f"{session.agent}:{session.session_id}", {})
    if recorded.get("notes") and not existing:
        # this machine wrote its note, and it is gone (deleted, or moved out of the layers):
        # the user's choice, not something to write again
        planning.plan.skipped.append(
            {
                "what": f"{session.agent} session {session.session_id}",
                "reason": f"its note {recorded['notes'][-1]} was deleted; cmem does not write it again",
            }
        )
        return
    continued = planning.notes.continued(session, existing)
    fresh = fresh_turns(planning.vault, session, existing + continued)
    live = [e for e in existing if not e.archived]
    learnt = _learn_identities(planning, session, live, write=not fresh)
    if not fresh:
        return
    blocks = _blocks(planning, session, fresh, max([e.parsed.last_turn for e in existing] + [0]))
    if live:
        _append(planning, session, live, fresh, blocks, learnt)
    else:
        _new_note(planning, session, existing or continued, fresh, blocks, bool(existing))


def _learn_identities(
    planning: _Planning, session: Session, live: list[HeldNote], write: bool
) -> dict[str, str]:
    """A turn its notes hold under an earlier identity gets its identity now in its block too
    (written here when no new turn is, else with them)."""
    learnt = learnt_identities(session, live)
    for note in live:
        if learnt and note.parsed.keys & learnt.keys():
            note.text = notes.add_identities(note.text, learnt)
            if write:
                planning.write(note.rel, note.text, note.data)
                turns = len(note.parsed.user_anchors)
                planning.plan.captured.append(
                    CapturedSession(
                        session.agent, session.session_id, session.cwd, note.rel, 0, turns, False
                    )
                )
    return learnt


def _append(
    planning: _Planning,
    session: Session,
    live: list[HeldNote],
    fresh: list[Turn],
    blocks: str,
    learnt: dict[str, str],
) -> None:
    """The new turns at the end of the session's live note."""
    target = max(live, key=lambda e: e.parsed.last_turn)
    count = len(target.parsed.user_anchors) + len(fresh)
    ended = max((t.time for t in fresh if t.time), default=None) or session.ended
    text = notes.update_header(target.text, count, ended)
    for note in live:
        if note is not target and learnt and note.parsed.keys & learnt.keys():
            planning.write(note.rel, note.text, note.data)
    planning.write(target.rel, text.rstrip("\n") + "\n\n" + blocks, target.data)
    planning.plan.captured.append(
        CapturedSession(
            session.agent, session.session_id, session.cwd, target.rel, len(fresh), count, False
        )
    )


def _new_note(
    planning: _Planning,
    session: Session,
    goes_on: list[HeldNote],
    fresh: list[Turn],
    blocks: str,
    own: bool,
) -> None:
    """A new note for the new turns, linking the note it goes on from: the session's own,
    archived (`own`), or the one of the session it continues."""
    first = stem(goes_on[-1].rel) if goes_on else None
    began = fresh[0].time if own else session.started
    started = (began or datetime.now().astimezone()).astimezone()
    mine = {stem(e.rel) for e in goes_on} if own else set()
    name = _note_name(planning, session, started, mine)
    header = notes.render_header(
        session, started, len(fresh), began, session.ended, continues=first
    )
    rel = f"{planning.folder}/{name}.md"
    planning.write(rel, header + blocks, None)
    planning.plan.captured.append(
        CapturedSession(
            session.agent, session.session_id, session.cwd, rel, len(fresh), len(fresh), True, first
        )
    )


def _blocks(planning: _Planning, session: Session, fresh: list[Turn], number: int) -> str:
    """The fresh turns' blocks, numbered on from `number`."""
    max_chars = planning.vault.config.sessions_max_turn_chars
    by_seq = {t.seq: t for t in session.turns}
    blocks = []
    for turn in fresh:
        number += 1
        before = by_seq.get(turn.seq - 1)
        answered = before if before is not None and before.role == "agent" else None
        rendered = notes.render_turn(number, turn, answered, max_chars)
        planning.plan.redacted += rendered.redacted
        planning.plan.cut += rendered.cut
        blocks.append(rendered.text)
    return "".join(blocks)


def _note_name(planning: _Planning, session: Session, started: datetime, own: set[str]) -> str:
    """Date, agent, project and the end of the session id, as long as it must be for no other
    session's note to have the name; a second note of the same session gets `2`, `3`…: no two
    notes of the vault share a name, so a wikilink never becomes ambiguous."""
    full = len(notes.short_id(session.session_id, 64))
    for length in sorted({min(n, full) for n in (4, 6, 8, 12, full)}):
        name = notes.base_name(session, started, length)
        if not _name_used(planning, name):
            return _claim(planning, name)
        if name in own:
            break
    wanted = notes.base_name(session, started)
    for counter in range(2, 1000):
        name = f"{wanted} {counter}"
        if not _name_used(planning, name):
            return _claim(planning, name)
    raise CmemError(f"too many session notes named like {wanted!r}.")


def _name_used(planning: _Planning, name: str) -> bool:
    if name in planning.taken or (planning.vault.root / planning.folder / f"{name}.md").exists():
        return True
    return any(stem(rel) == name for rel in planning.notes.archive())


def _claim(planning: _Planning, name: str) -> str:
    planning.taken.add(name)
    return name


# --- the step ---------------------------------------------------------------------------------


def capture_transcripts(
    vault: Vault,
    paths: list[Path] | None = None,
    agent: str | None = None,
    since: timedelta | None = None,
    cwd: str | None = None,
    now: datetime | None = None,
    wait_seconds: float = 30.0,
) -> CaptureResult:
    """Capture the named transcripts (or, with none, the agents' folders since `since`)."""
    now = now or datetime.now().astimezone()
    folder = sessions_folder(vault)
    result = CaptureResult()
    read = _read_all(vault, paths, agent, since, cwd, result, now)
    record = load_record(vault)
    plan = plan_capture(vault, read.sessions, folder, record)
    if plan.changes:
        plan = _commit(vault, read.sessions, folder, result, wait_seconds)
    record = load_record(vault)  # again: another capture may have written it meanwhile
    record["files"].update(read.files)
    for captured in plan.captured:
        entry = record["sessions"].setdefault(f"{captured.agent}:{captured.session_id}", {})
        entry["notes"] = sorted(set(entry.get("notes", [])) | {captured.note})
    record["last_capture"] = now.isoformat(timespec="seconds")
    save_record(vault, record)
    result.sessions = plan.captured
    result.skipped += plan.skipped
    result.redacted, result.cut = plan.redacted, plan.cut
    result.status = "captured" if plan.captured else "nothing"
    return result


def _commit(
    vault: Vault, sessions: list[Session], folder: str, result: CaptureResult, wait: float
) -> _Plan:
    from cmem.steps.runner import open_step

    deadline = time.monotonic() + wait
    while True:
        try:
            with open_step(vault, "capture", purpose="capture") as step:
                plan = plan_capture(vault, sessions, folder, load_record(vault))  # as it is now
                result.commit = step.commit(plan.changes, commit_message(plan, step.id))
                return plan
        except Busy:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.5)


def commit_message(plan: _Plan, step_id: str):
    from cmem.steps.message import CommitMessage

    turns = sum(c.added for c in plan.captured)
    count = len(plan.captured)
    names = ", ".join(c.note.rsplit("/", 1)[-1].removesuffix(".md") for c in plan.captured[:3])
    more = f" and {count - 3} more" if count > 3 else ""
    message = CommitMessage(
        f"cmem: capture {turns} turn{'s' if turns != 1 else ''} of {count} session{'s' if count != 1 else ''} → {names}{more}",
        step_id,
    )
    for captured in plan.captured:
        message.add("Captured", f"{captured.note} (+{captured.added})")
    if plan.redacted:
        message.add("Redacted", plan.redacted)
    return message
