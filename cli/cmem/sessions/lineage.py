"""Which notes hold a session's turns already (docs/design.md §14): its own notes, live in the
sessions folder or archived (by their name's short id — the id's end, or its start as older cmem
named them — or by this machine's record, then by their frontmatter); notes planned in this capture
and not written yet; and the notes of the session it goes on from — the one its own notes link, the
one its agent names (a fork), else the note of its agent and project that holds one of its turns (an
agent that resumes under a new id repeats the records it continues). So which of its turns are
new: those no such note holds, by identity, nor word for word at its start, where a fork's copy
of the turns it goes on from stands."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from cmem.errors import CmemError
from cmem.regular_files import read_regular
from cmem.sessions import note as notes
from cmem.sessions.transcript import Session, Turn
from cmem.vault.layers import Vault


@dataclass
class HeldNote:
    """A session note as read: where it is, its bytes and text, what it holds."""

    rel: str
    text: str
    data: bytes
    parsed: notes.SessionNote
    archived: bool

    @property
    def session(self) -> str:
        return str(self.parsed.frontmatter.get("session"))


@dataclass
class HeldNotes:
    """The session notes of a vault, as a capture plans them: those on disk and those planned."""

    vault: Vault
    folder: str
    record: dict  # the machine's record: which notes this machine wrote for which session
    planned: dict[str, str] = field(default_factory=dict)  # new notes planned: rel -> text
    archived: list[str] | None = None

    def archive(self) -> list[str]:
        if self.archived is None:
            try:
                self.archived = self.vault._archived_rels()
            except (OSError, CmemError):
                self.archived = []
        return self.archived

    def of(self, agent: str, session_id: str) -> list[HeldNote]:
        """The notes a session has, on disk or planned."""
        found = session_notes(self.vault, agent, session_id, self.folder, self.record, self.archive)
        return found + [note for note in self.planned_of(agent) if note.session == session_id]

    def planned_of(self, agent: str) -> list[HeldNote]:
        """The notes this capture writes that are not on disk yet."""
        found = []
        for rel, text in self.planned.items():
            if not (self.vault.root / rel).exists():
                parsed = notes.read_session_note(text)
                if str(parsed.frontmatter.get("agent")) == agent:
                    found.append(HeldNote(rel, text, b"", parsed, False))
        return found

    def continued(self, session: Session, existing: list[HeldNote]) -> list[HeldNote]:
        """The notes of the other session this one goes on from: the one its own notes link,
        else the one its agent names, else the note of this agent and project holding its turns."""
        linked = {
            name for e in existing if (name := _link_target(e.parsed.frontmatter.get("continues")))
        }
        if existing:
            own = {stem(e.rel) for e in existing}
            return [
                note for name in sorted(linked - own) for note in self.named(name, session.agent)
            ]
        if session.parent_id and session.parent_id != session.session_id:
            found = self.of(session.agent, session.parent_id)
            if found:
                return found
        return self.holding(session)

    def holding(self, session: Session) -> list[HeldNote]:
        """Another session's notes, of this agent and project, holding one of this session's
        turns."""
        digests = {notes.turn_digest(k) for t in session.turns if t.role == "user" for k in t.keys}
        prefix = f" {session.agent} {notes.project_name(session.cwd)} "
        try:
            names = sorted(
                entry.name
                for entry in os.scandir(self.vault.root / self.folder)
                if entry.name.endswith(".md") and prefix in entry.name
            )
        except OSError:  # no sessions folder yet
            names = []
        candidates = self.planned_of(session.agent)
        for name in names:
            candidates += read_note(self.vault, f"{self.folder}/{name}", session.agent, None, False)
        for note in candidates:
            if note.session != session.session_id and note.parsed.keys & digests:
                return self.of(session.agent, note.session)
        return []

    def named(self, name: str, agent: str) -> list[HeldNote]:
        """The note of this name, live or archived."""
        rels = [f"{self.folder}/{name}.md"]
        rels += [rel for rel in self.archive() if stem(rel) == name]
        found: list[HeldNote] = []
        for rel in rels:
            found += read_note(self.vault, rel, agent, None, archived=rel != rels[0])
        return found[:1]


def _link_target(value) -> str | None:
    text = str(value or "").strip()
    return text[2:-2].split("|")[0] if text.startswith("[[") and text.endswith("]]") else None


def session_notes(
    vault: Vault, agent: str, session_id: str, folder: str, record: dict, archive
) -> list[HeldNote]:
    """The notes a session already has, live in the sessions folder or archived."""
    names: set[str] = {
        Path(rel).name
        for rel in record["sessions"].get(f"{agent}:{session_id}", {}).get("notes", [])
    }
    base = vault.root / folder
    try:
        names |= {
            entry.name
            for entry in os.scandir(base)
            if entry.name.endswith(".md") and notes.may_be_note_of(entry.name, agent, session_id)
        }
    except OSError:
        pass
    found: list[HeldNote] = []
    for name in sorted(names):
        found += read_note(vault, f"{folder}/{name}", agent, session_id, archived=False)
    for rel in archive():
        if notes.may_be_note_of(rel.rsplit("/", 1)[-1], agent, session_id):
            found += read_note(vault, rel, agent, session_id, archived=True)
    return found


def read_note(
    vault: Vault, rel: str, agent: str, session_id: str | None, archived: bool
) -> list[HeldNote]:
    """The session note at `rel`, when it is one of this agent's (and of this session's, when
    one is named)."""
    path = vault.root / rel
    try:
        data = read_regular(path)
    except OSError:  # unreadable, or a FIFO (never opened to wait on)
        return []
    text = data.decode("utf-8", errors="replace")
    parsed = notes.read_session_note(text)
    if session_id is not None and str(parsed.frontmatter.get("session")) != session_id:
        return []
    if str(parsed.frontmatter.get("agent")) != agent:
        return []
    return [HeldNote(rel, text, data, parsed, archived)]


def fresh_turns(vault: Vault, session: Session, held: list[HeldNote]) -> list[Turn]:
    """The user turns no note of the session (nor any note it continues) holds yet. A session
    that goes on from another opens with a copy of that one's turns: as many of its first turns
    as match the other's, word for word and in order, are the other's."""
    users = [t for t in session.turns if t.role == "user"]
    known = set().union(*(e.parsed.keys for e in held)) if held else set()
    others = [e for e in held if e.session != session.session_id]
    copied = 0
    if others:
        words = [w for e in sorted(others, key=lambda e: e.rel) for w in e.parsed.words]
        max_chars = vault.config.sessions_max_turn_chars
        while copied < min(len(words), len(users)):
            if notes.turn_words(users[copied].text, max_chars).text != words[copied]:
                break
            copied += 1
    return [t for t in users[copied:] if not known.intersection(map(notes.turn_digest, t.keys))]


def learnt_identities(session: Session, live: list[HeldNote]) -> dict[str, str]:
    """{digest a note holds: digest of the same turn's identity now} for the session's turns its
    live notes know only by an earlier identity."""
    known = set().union(*(e.parsed.keys for e in live)) if live else set()
    learnt = {}
    for turn in session.turns:
        if not turn.aliases or turn.role != "user":
            continue
        now = notes.turn_digest(turn.key)
        held = [d for d in map(notes.turn_digest, turn.aliases) if d in known]
        if held and now not in known:
            learnt[held[0]] = now
    return learnt


def stem(rel: str) -> str:
    return rel.rsplit("/", 1)[-1].removesuffix(".md")
