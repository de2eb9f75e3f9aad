"""`cmem trace`: how a statement or a topic evolved — "how I used to think" (docs/design.md §8).

A statement keeps its old wordings inside dated traces, nested when it changes again:

    方向：Agent 基础设施（更新于 2026-10-20，原为：RAG 应用开发（更新于 2026-10-05，原为：大模型微调））

unfolds, oldest first, into the versions 大模型微调 (until 2026-10-05) → RAG 应用开发 (2026-10-05)
→ Agent 基础设施 (2026-10-20, now). Each version is matched to the commit that first wrote it —
one walk over the file's history (`git log -p`), looking for the commit whose added lines first
hold the trace (or, for the oldest wording, its text) — and through the commit's `Cmem-Pass`
trailer to the pass. When history does not reach that far (a vault adopted with its memory
already written), a pass recorded in state.json on the trace's date is named instead.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from cmem.errors import CmemError
from cmem.steps import commits as history
from cmem.vault.layers import RESIDENT, SITUATIONAL, NoteFile, Vault
from cmem.vault.notes import read_note
from cmem.vault.state_json import load_state
from cmem.vault.statements import normalize, split_statement, statement_lines


@dataclass
class Version:
    text: str  # the wording, without sources and traces
    since: str | None  # the date it became the wording; None: before recorded history
    until: str | None = None  # the date it was replaced; None: it is the current wording
    sources: list[str] = field(default_factory=list)
    pass_id: str | None = None  # the pass that wrote it
    commit: str | None = None  # the commit that wrote it
    commit_subject: str | None = None
    commit_date: str | None = None
    # pass: a cmem commit wrote it · state: state.json records a pass that day (history is younger) ·
    # hand: a commit that is not a pass · imported: it was there when the file entered history
    origin: str | None = None

    @property
    def current(self) -> bool:
        return self.until is None

    def to_json(self) -> dict:
        return {
            "text": self.text,
            "since": self.since,
            "until": self.until,
            "sources": self.sources,
            "pass": self.pass_id,
            "commit": self.commit,
            "origin": self.origin,
            "current": self.current,
        }


@dataclass
class StatementHistory:
    path: str
    line: int
    text: str  # the whole line as it is in the file
    heading: str | None
    versions: list[Version]

    @property
    def changed(self) -> bool:
        return len(self.versions) > 1

    @property
    def first_date(self) -> str | None:
        dates = [d for v in self.versions for d in (v.since, v.until, v.commit_date) if d]
        return min(dates) if dates else None

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "line": self.line,
            "text": self.text,
            "heading": self.heading,
            "versions": [v.to_json() for v in self.versions],
        }


@dataclass
class TraceResult:
    target: str
    mode: str  # file | topic
    files: list[str]
    statements: list[StatementHistory]
    title: str | None = None  # file mode: the file's summary or first heading

    def to_json(self) -> dict:
        return {
            "target": self.target,
            "mode": self.mode,
            "files": self.files,
            "title": self.title,
            "statements": [s.to_json() for s in self.statements],
        }


# --- the chain of versions in one line --------------------------------------------------------


def unfold(line: str, formats=None) -> list[tuple[Version, str | None]]:
    """(version, needle) pairs, oldest first. The needle is the text that appeared in the file
    when that version was written: the trace holding the previous wording, or, for the oldest
    wording, the wording itself."""
    core, sources, traces = split_statement(line, formats)
    older: list[tuple[Version, str | None]] = []
    for trace in traces:
        chain = unfold(trace.old, formats)
        if chain:
            chain[-1][0].until = trace.date
        older.extend(chain)
    older.sort(key=lambda pair: pair[0].until or "9999")
    if traces:
        newest = max(traces, key=lambda t: t.date)
        version = Version(core, newest.date, None, sources)
        needle = line[newest.start : newest.end]
    else:
        version = Version(core, None, None, sources)
        needle = core
    return older + [(version, needle)]


# --- history of a file ------------------------------------------------------------------------


@dataclass
class _Revision:
    sha: str
    date: str
    subject: str
    pass_id: str | None
    added: str  # the lines this commit added to the file, joined


def file_revisions(vault: Vault, rel: str) -> list[_Revision]:
    """The file's commits, oldest first, with the lines each added (following renames)."""
    result = history.run_git(
        vault.root,
        "--literal-pathspecs",
        "log",
        "--follow",
        "-p",
        "-U0",
        "--no-color",
        "--no-ext-diff",
        "--relative",
        f"--format=%x1e%H%x1f%cI%x1f%s%x1f%(trailers:key={history.PASS_TRAILER},valueonly,separator=%x2C)%x1f",
        "--",
        rel,
        check=False,
    )
    revisions = []
    for chunk in result.stdout.split("\x1e")[1:]:
        parts = chunk.split("\x1f", 4)
        if len(parts) < 5:
            continue
        added = "\n".join(
            line[1:]
            for line in parts[4].split("\n")
            if line.startswith("+") and not line.startswith("+++")
        )
        pass_id = parts[3].strip().split(",")[0].strip() or None
        revisions.append(
            _Revision(parts[0].strip(), parts[1].strip()[:10], parts[2], pass_id, added)
        )
    revisions.reverse()
    return revisions


def _attribute(
    version: Version,
    needle: str | None,
    revisions: list[_Revision],
    passes_by_date: dict[str, list[dict]],
    rel: str,
) -> None:
    """Name the commit (and pass) that wrote this version, and say how sure that is (`origin`)."""
    found = None
    if needle and len(normalize(needle)) >= 2:
        found = next((r for r in revisions if needle in r.added), None)
    if found is not None and found.pass_id:
        version.commit, version.commit_subject, version.commit_date = (
            found.sha,
            found.subject,
            found.date,
        )
        version.origin, version.pass_id = "pass", found.pass_id
        version.since = version.since or found.date
        return
    if version.since:
        # A trace dated before the history that holds it: the pass state.json recorded that day.
        candidates = passes_by_date.get(version.since, [])
        chosen = next(
            (p for p in candidates if rel in (p.get("changed") or [])),
            candidates[0] if candidates else None,
        )
        if chosen:
            version.origin, version.pass_id = "state", chosen.get("id")
            return
    if found is None:
        return
    version.commit, version.commit_subject, version.commit_date = (
        found.sha,
        found.subject,
        found.date,
    )
    later_than_known = (version.since and found.date > version.since) or (
        version.until and found.date > version.until
    )
    if found is revisions[0] or later_than_known:
        version.origin = "imported"  # it was already there when the file entered history
    else:
        version.origin = "hand"
        version.since = version.since or found.date


# --- the two modes ----------------------------------------------------------------------------


def trace_target(vault: Vault, target: str) -> TraceResult:
    """A file (path or note name) in the convergent layer: every statement's history, in file
    order. Anything else is a topic: the matching statements across the layer, oldest first."""
    note_file = resolve_file(vault, target)
    if note_file is not None:
        return trace_file(vault, note_file)
    return trace_topic(vault, target)


def resolve_file(vault: Vault, target: str) -> NoteFile | None:
    candidates = [Path(target)]
    if not target.endswith(".md"):
        candidates.append(Path(target + ".md"))
    for candidate in candidates:
        for path in (
            [candidate]
            if candidate.is_absolute()
            else [Path.cwd() / candidate, vault.root / candidate]
        ):
            if path.is_file():
                try:
                    rel = Path(os.path.relpath(path.resolve(), vault.root.resolve())).as_posix()
                except ValueError:
                    continue
                if rel.startswith("../"):
                    raise CmemError(f"{target} is outside the vault {vault.root}.")
                layer = vault.layer_of(rel)
                return NoteFile(rel, vault.root / rel, layer or "unmanaged")
    name = target.removesuffix(".md")
    matches = [f for f in vault.convergent_files() if f.name == name]
    if len(matches) > 1:
        raise CmemError(
            f"{len(matches)} memory files are named {name!r} ({', '.join(m.rel for m in matches)}); give the path."
        )
    return matches[0] if matches else None


def _passes_by_date(vault: Vault) -> dict[str, list[dict]]:
    try:
        passes = load_state(vault.state_file).passes
    except CmemError:
        return {}
    by_date: dict[str, list[dict]] = {}
    for entry in passes:
        if entry.get("kind", "converge") == "converge" and entry.get("time"):
            by_date.setdefault(entry["time"][:10], []).append(entry)
    return by_date


def _file_statements(
    vault: Vault, note_file: NoteFile
) -> tuple[list[tuple[int, str, str | None]], str | None]:
    """(line number, line, heading) of every statement, and the file's title."""
    note = read_note(note_file, vault.config.max_note_bytes)
    if not note.usable:
        raise CmemError(f"{note_file.rel} {note.skip_reason}.")
    heading, title = (
        None,
        note.meta.get("summary") if isinstance(note.meta.get("summary"), str) else None,
    )
    headings = {}
    for number, line in enumerate(note.lines, start=1):
        if number >= note.body_start and re.match(r"#{1,6}\s", line):
            headings[number] = line.lstrip("#").strip()
    result = []
    for number, line in statement_lines(note.body, note.body_start):
        heading = next((headings[n] for n in sorted(headings, reverse=True) if n < number), None)
        result.append((number, line, heading))
    if title is None and headings:
        title = headings[min(headings)]
    return result, title


def _histories(
    vault: Vault, note_file: NoteFile, keep
) -> tuple[list[StatementHistory], str | None]:
    lines, title = _file_statements(vault, note_file)
    chosen = [(n, line, h) for n, line, h in lines if keep(line)]
    if not chosen:
        return [], title
    revisions = file_revisions(vault, note_file.rel)
    by_date = _passes_by_date(vault)
    histories = []
    for number, line, heading in chosen:
        pairs = unfold(line, vault.config.formats)
        for version, needle in pairs:
            _attribute(version, needle, revisions, by_date, note_file.rel)
        histories.append(
            StatementHistory(note_file.rel, number, line, heading, [v for v, _ in pairs])
        )
    return histories, title


def trace_file(vault: Vault, note_file: NoteFile) -> TraceResult:
    histories, title = _histories(vault, note_file, lambda line: True)
    return TraceResult(note_file.rel, "file", [note_file.rel], histories, title)


def trace_topic(vault: Vault, topic: str) -> TraceResult:
    words = [w for w in (normalize(word) for word in topic.split()) if w]
    if not words:
        raise CmemError(
            "give a memory file (a path or a name such as `profile`) or some keywords to trace."
        )

    def keep(line: str) -> bool:
        flat = normalize(line)
        return all(word in flat for word in words)

    histories: list[StatementHistory] = []
    files = []
    for note_file in vault.list_layer(RESIDENT) + vault.list_layer(SITUATIONAL):
        try:
            found, _ = _histories(vault, note_file, keep)
        except CmemError:
            continue  # an unreadable file is `cmem doctor`'s business, not a reason to fail a search
        if found:
            files.append(note_file.rel)
            histories.extend(found)
    histories.sort(key=lambda h: (h.first_date or "9999", h.path, h.line))
    return TraceResult(topic, "topic", files, histories)
