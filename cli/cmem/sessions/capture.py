"""`cmem capture`: agent transcripts into session notes, one step (SPEC §14).

Each session becomes one note in the sessions folder (a divergent folder), or grows the note it
already has by its new turns only: a turn is known by its identity in the transcript, written into
its block (`note.py`), so capturing the same file again changes nothing, and a resumed session
(the same file grown, or a new file that repeats the old records) adds each turn once. When the
session's note was archived, its new turns start a new note that links the first and goes on
numbering its turns.

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
from datetime import datetime, timedelta
from pathlib import Path

from cmem.command_line import BOUNDS, out_of_bounds
from cmem.errors import Busy, CmemError, UsageError
from cmem.regular_files import read_regular
from cmem.sessions import note as notes
from cmem.sessions.formats import read_transcript
from cmem.sessions.transcript import Session, TranscriptError, Turn, display_path
from cmem.vault.globs import any_glob
from cmem.vault.layers import Vault

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
    config = vault.config
    if folder not in config.extra_divergent and folder not in config.recursive_divergent:
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
        what = f"{session.agent} session {notes.short_id(session.session_id, 8)}"
        where = session.cwd or ""
        if vault.config.sessions_include and not include(where):
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
    known = {turn.key for turn in into.turns}
    turns = list(into.turns) + [turn for turn in other.turns if turn.key not in known]
    turns.sort(key=lambda t: (t.time is None, t.time or datetime.min, t.seq))
    into.turns = [Turn(i, t.role, t.time, t.text, t.key, t.tools) for i, t in enumerate(turns, 1)]
    into.cwd = into.cwd or other.cwd


# --- planning the notes -----------------------------------------------------------------------


@dataclass
class _Existing:
    rel: str
    text: str
    data: bytes
    parsed: notes.SessionNote
    archived: bool


def _session_notes(
    vault: Vault, session: Session, folder: str, record: dict, archive
) -> list[_Existing]:
    """The notes this session already has, live in the sessions folder or archived."""
    short = notes.short_id(session.session_id)
    names: set[str] = set(
        Path(rel).name
        for rel in record["sessions"]
        .get(f"{session.agent}:{session.session_id}", {})
        .get("notes", [])
    )
    base = vault.root / folder
    try:
        names |= {
            entry.name
            for entry in os.scandir(base)
            if entry.name.endswith(".md")
            and f" {session.agent} " in entry.name
            and f" {short}" in entry.name
        }
    except OSError:
        pass
    found: list[_Existing] = []
    for name in sorted(names):
        found += _read_existing(vault, f"{folder}/{name}", session, archived=False)
    archived = archive()
    for rel in archived:
        name = rel.rsplit("/", 1)[-1]
        if f" {session.agent} " in name and f" {short}" in name:
            found += _read_existing(vault, rel, session, archived=True)
    return found


def _read_existing(vault: Vault, rel: str, session: Session, archived: bool) -> list[_Existing]:
    path = vault.root / rel
    try:
        data = read_regular(path)
    except OSError:  # unreadable, or a FIFO (never opened to wait on)
        return []
    text = data.decode("utf-8", errors="replace")
    parsed = notes.read_session_note(text)
    if str(parsed.frontmatter.get("session")) != session.session_id:
        return []
    if str(parsed.frontmatter.get("agent")) != session.agent:
        return []
    return [_Existing(rel, text, data, parsed, archived)]


def _free_name(vault: Vault, folder: str, wanted: str, taken: set[str]) -> str:
    """`wanted`, or `wanted 2`, `wanted 3`… : no two notes of the vault share a name, so a
    wikilink never becomes ambiguous."""
    for counter in range(1, 1000):
        name = wanted if counter == 1 else f"{wanted} {counter}"
        if name not in taken and not (vault.root / folder / f"{name}.md").exists():
            return name
    raise CmemError(f"too many session notes named like {wanted!r}.")


@dataclass
class _Plan:
    changes: object  # ChangeSet
    captured: list[CapturedSession]
    redacted: int = 0
    cut: int = 0
    skipped: list[dict] = field(default_factory=list)


def plan_capture(vault: Vault, sessions: list[Session], folder: str, record: dict) -> _Plan:
    from cmem.steps.changes import ChangeSet

    changes = ChangeSet()
    plan = _Plan(changes, [])
    archived_cache: list[list[str]] = []

    def archive() -> list[str]:
        if not archived_cache:
            try:
                archived_cache.append(vault._archived_rels())
            except (OSError, CmemError):
                archived_cache.append([])
        return archived_cache[0]

    taken: set[str] = set()
    max_chars = vault.config.sessions_max_turn_chars
    for session in sessions:
        existing = _session_notes(vault, session, folder, record, archive)
        recorded = record["sessions"].get(f"{session.agent}:{session.session_id}", {}).get("notes")
        if recorded and not existing:
            # this machine wrote its note, and it is gone (deleted, or moved out of the layers):
            # the user's choice, not something to write again
            plan.skipped.append(
                {
                    "what": f"{session.agent} session {notes.short_id(session.session_id, 8)}",
                    "reason": f"its note {recorded[-1]} was deleted; cmem does not write it again",
                }
            )
            continue
        known = set().union(*(e.parsed.keys for e in existing)) if existing else set()
        fresh = [
            t for t in session.turns if t.role == "user" and notes.turn_digest(t.key) not in known
        ]
        if not fresh:
            continue
        number = max([e.parsed.last_turn for e in existing] + [0])
        live = [e for e in existing if not e.archived]
        target = max(live, key=lambda e: e.parsed.last_turn) if live else None
        by_seq = {t.seq: t for t in session.turns}
        blocks = []
        for turn in fresh:
            number += 1
            before = by_seq.get(turn.seq - 1)
            answered = before if before is not None and before.role == "agent" else None
            rendered = notes.render_turn(number, turn, answered, max_chars)
            plan.redacted += rendered.redacted
            plan.cut += rendered.cut
            blocks.append(rendered.text)
        ended = max((t.time for t in fresh if t.time), default=None)
        if target is not None:
            count = len(target.parsed.user_anchors) + len(fresh)
            text = notes.update_header(target.text, count, ended or session.ended)
            text = text.rstrip("\n") + "\n\n" + "".join(blocks)
            changes.write(target.rel, text, target.data)
            plan.captured.append(
                CapturedSession(
                    session.agent,
                    session.session_id,
                    session.cwd,
                    target.rel,
                    len(fresh),
                    count,
                    False,
                )
            )
            continue
        first = existing[-1].rel.rsplit("/", 1)[-1][:-3] if existing else None
        started_at = (
            session.started if not existing else fresh[0].time
        ) or datetime.now().astimezone()
        name = _free_name(
            vault,
            folder,
            notes.base_name(session, started_at.astimezone()),
            taken | _stems(archive() if existing else []),
        )
        taken.add(name)
        header = notes.render_header(
            session,
            started_at.astimezone(),
            len(fresh),
            session.started if not existing else fresh[0].time,
            session.ended,
            continues=first,
        )
        rel = f"{folder}/{name}.md"
        changes.write(rel, header + "".join(blocks), None)
        plan.captured.append(
            CapturedSession(
                session.agent,
                session.session_id,
                session.cwd,
                rel,
                len(fresh),
                len(fresh),
                True,
                first,
            )
        )
    return plan


def _stems(rels: list[str]) -> set[str]:
    return {rel.rsplit("/", 1)[-1].removesuffix(".md") for rel in rels}


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
