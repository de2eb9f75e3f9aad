"""cmem's own commits, read back as history: `cmem log`, `cmem diff`, and the commits `cmem undo`
and `cmem trace` need.

Every commit cmem makes for a pass, an archive apply or an undo carries a `Cmem-Pass: <id>`
trailer; its message lists the notes and files in `Key: value` lines (`Converged:`, `Changed:`,
`Archived:`, `Engine:`, `Warning:`…). Git is the record; `state.json`'s `passes` list adds what a
message does not say (the model) and keeps working when history was squashed.

A pass that failed, was refused or was interrupted has no commit: its run record's
`outcome.json` (written by the pipeline) puts it in `cmem log` beside the others, with its
reason, how many times the engine was asked, the run record and any snapshot commit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from cmem.errors import CmemError
from cmem.steps import commits as history
from cmem.steps.message import UNDOES_TRAILER, read_trailers
from cmem.vault.layers import Vault
from cmem.vault.state_json import load_state

STATE_REL = ".cmem/state.json"

_FIELD = re.compile(r"^([A-Z][A-Za-z-]*):\s?(.*)$")
_KIND = re.compile(r"^cmem:\s+(\w+)")

# what a cmem commit did; "pass": a cmem commit of a kind this cmem does not know
CommitKind = Literal["converge", "archive", "undo", "capture", "repair", "pass"]
# a subject's word → its kind (`doctor --fix` restores a file as git had it: a repair)
_SUBJECT_KINDS: dict[str, CommitKind] = {
    "converge": "converge",
    "archive": "archive",
    "undo": "undo",
    "capture": "capture",
    "restore": "repair",
}
FailedStatus = Literal["failed", "refused", "interrupted"]


@dataclass(frozen=True)
class FileChange:
    status: str  # A, M, D, R (renamed), C, T
    path: str  # the path after the commit
    old_path: str | None = None  # renames: the path before

    def to_json(self) -> dict:
        return {"status": self.status, "path": self.path, "from": self.old_path}


@dataclass
class CmemCommit:
    sha: str
    time: str  # committer date, ISO 8601
    subject: str
    body: str
    pass_id: str
    kind: CommitKind
    fields: dict[str, list[str]] = field(default_factory=dict)
    files: list[FileChange] = field(default_factory=list)
    undoes: str | None = None  # the commit an undo reverted
    undone_by: str | None = None  # the undo commit that reverted this one
    engine: str | None = None
    model: str | None = None
    # found by state.json's record of the step, not by the trailer its message lost (an amend)
    trailer_lost: bool = False

    @property
    def short(self) -> str:
        return self.sha[:8]

    @property
    def notes(self) -> list[str]:
        if self.kind == "archive":
            return [value.split(" → ", 1)[0] for value in self.fields.get("Archived", [])]
        return list(self.fields.get("Converged", []))

    @property
    def warnings(self) -> list[str]:
        return list(self.fields.get("Warning", []))

    @property
    def memory_files(self) -> list[str]:
        """Paths the commit touched, without cmem's bookkeeping (state.json)."""
        return [change.path for change in self.files if change.path != STATE_REL]

    def to_json(self) -> dict:
        return {
            "id": self.pass_id,
            "kind": self.kind,
            "commit": self.sha,
            "time": self.time,
            "subject": self.subject,
            "notes": self.notes,
            "files": [c.to_json() for c in self.files if c.path != STATE_REL],
            "engine": self.engine,
            "model": self.model,
            "warnings": self.warnings,
            "deferred": self.fields.get("Deferred", []),
            "skipped": self.fields.get("Skipped", []),
            "undone_by": self.undone_by,
            "undoes": self.undoes,
            "trailer_lost": self.trailer_lost,
        }


_ESCAPES = {
    ord("n"): b"\n",
    ord("t"): b"\t",
    ord("r"): b"\r",
    ord("a"): b"\a",
    ord("b"): b"\b",
    ord("f"): b"\f",
    ord("v"): b"\v",
    ord('"'): b'"',
    ord("\\"): b"\\",
}


def _unquote(path: str) -> str:
    """Git C-quotes a path holding `"`, `\\` or control characters even with core.quotePath off."""
    if len(path) < 2 or path[0] != '"' or path[-1] != '"':
        return path
    data, out, index = path[1:-1].encode("utf-8"), bytearray(), 0
    while index < len(data):
        byte = data[index]
        if byte == 0x5C and index + 1 < len(data):
            following = data[index + 1]
            if 0x30 <= following <= 0x37:
                out.append(int(data[index + 1 : index + 4], 8) & 0xFF)
                index += 4
                continue
            out += _ESCAPES.get(following, bytes([following]))
            index += 2
            continue
        out.append(byte)
        index += 1
    return out.decode("utf-8", "replace")


def _parse_files(text: str) -> list[FileChange]:
    changes = []
    for line in text.strip("\n").splitlines():
        parts = line.split("\t")
        if len(parts) < 2 or not parts[0]:
            continue
        status = parts[0][0]
        if status in "RC" and len(parts) >= 3:
            changes.append(FileChange(status, _unquote(parts[2]), _unquote(parts[1])))
        else:
            changes.append(FileChange(status, _unquote(parts[1])))
    return changes


def _parse_body(body: str) -> tuple[dict[str, list[str]], str, str | None]:
    fields: dict[str, list[str]] = {}
    for line in body.splitlines()[1:]:
        match = _FIELD.match(line)
        if match:
            fields.setdefault(match.group(1), []).append(match.group(2).strip())
    # the trailers are read from the message's last paragraph only: a field value above them
    # (older cmem copied model text verbatim) cannot pose as a trailer
    trailers = read_trailers(body)
    for key in (history.PASS_TRAILER, UNDOES_TRAILER):
        fields.pop(key, None)
    return fields, trailers.get(history.PASS_TRAILER, ""), trailers.get(UNDOES_TRAILER)


def _engine(fields: dict[str, list[str]]) -> tuple[str | None, str | None]:
    engines = fields.get("Engine")
    value = engines[0] if engines else None
    if not value:
        return None, None
    match = re.match(r"^(\S+)(?:\s+\((.*)\))?$", value)
    return (match.group(1), match.group(2)) if match else (value, None)


def list_cmem_commits(vault: Vault, limit: int | None = None) -> list[CmemCommit]:
    """cmem's commits, newest first, with what undid what."""
    # --no-merges: a sync's merge commit is not a step to undo or list; the commits it brought in are
    args = [
        "log",
        "--no-merges",
        "--topo-order",  # the graph's order: a clock set back never lists a step before its parent
        f"--grep=^{history.PASS_TRAILER}: ",
        "-M",
        "--name-status",
        "--relative",
        "--no-color",
        "--format=%x1e%H%x1f%cI%x1f%B%x1f",
    ]
    if limit:
        args.append(f"-n{limit}")
    result = history.run_git(vault.root, *args, check=False)
    if result.returncode != 0:
        return []  # no commits yet
    try:
        passes = load_state(vault.state_file).passes
    except CmemError:
        passes = []  # the commits alone: their messages say what a record would add
    commits = _with_lost_trailers(vault, _parse_log(result.stdout), passes, args, limit)
    _link_undos(commits)
    _enrich(commits, passes)
    return commits


def _parse_log(output: str) -> list[CmemCommit]:
    commits = []
    for chunk in output.split("\x1e")[1:]:
        parts = chunk.split("\x1f")
        if len(parts) < 4:
            continue
        sha, time, body, files = parts[0].strip(), parts[1].strip(), parts[2].strip("\n"), parts[3]
        fields, pass_id, undoes = _parse_body(body)
        subject = body.splitlines()[0] if body else ""
        kind_match = _KIND.match(subject)
        kind = _SUBJECT_KINDS.get(kind_match.group(1), "pass") if kind_match else "pass"
        engine, model = _engine(fields)
        commits.append(
            CmemCommit(
                sha,
                time,
                subject,
                body,
                pass_id,
                kind,
                fields,
                _parse_files(files),
                undoes,
                None,
                engine,
                model,
            )
        )
    return commits


# Steps whose commit is looked for by state.json's record when no commit carries their trailer:
# at most this many, newest first (each costs one `git log -S` over state.json's history).
_LOST_TRAILER_SEARCHES = 5


def _with_lost_trailers(
    vault: Vault, commits: list[CmemCommit], passes: list, args: list[str], limit: int | None
) -> list[CmemCommit]:
    """The commits of passes and archive applies that state.json records but whose message no
    longer carries the `Cmem-Pass` trailer (`git commit --amend` with a new message), found as the
    commit that added the step's id to state.json, marked `trailer_lost`."""
    known = {c.pass_id for c in commits}
    # with a limit, a step older than the oldest commit listed is not missing, only not listed
    oldest = _instant(commits[-1].time) if limit and len(commits) >= limit else float("-inf")
    missing = [
        entry
        for entry in reversed(passes)
        if entry.get("kind") in ("converge", "archive")
        and isinstance(entry.get("id"), str)
        and entry["id"] not in known
        and _instant(str(entry.get("time") or "")) > oldest
    ][:_LOST_TRAILER_SEARCHES]
    found = []
    by_id = {entry.get("id"): entry for entry in passes if isinstance(entry, dict)}
    for undo in commits:
        # an undo names the commit it reverted; one without its trailer is shown beside it
        if undo.undoes and not any(c.sha.startswith(undo.undoes) for c in commits):
            reverted = (by_id.get(undo.pass_id) or {}).get("undoes")
            found += _lost_trailer_commit(vault, args, undo.undoes, reverted, None)
    for entry in missing:
        search = history.run_git(
            vault.root,
            "log",
            "--no-merges",
            "--reverse",
            "--format=%H",
            f"-S{entry['id']}",
            "--",
            STATE_REL,
            check=False,
        )
        shas = search.stdout.split()
        if search.returncode != 0 or not shas:
            continue  # squashed or reset away: state.json's record is all there is
        kind: CommitKind = "archive" if entry["kind"] == "archive" else "converge"
        found += _lost_trailer_commit(vault, args, shas[0], entry["id"], kind)
    listed = {c.sha for c in commits}
    found = [c for i, c in enumerate(found) if c.sha not in listed | {f.sha for f in found[:i]}]
    if not found:
        return commits
    # newest first, in the graph's order as git log lists them
    position = _graph_positions(vault)
    merged = sorted(commits + found, key=lambda c: position.get(c.sha, len(position)))
    return merged[:limit] if limit else merged


def _graph_positions(vault: Vault) -> dict[str, int]:
    """Each commit's place in HEAD's history, children before their parents."""
    listed = history.run_git(vault.root, "rev-list", "--topo-order", "HEAD", check=False)
    return {sha: index for index, sha in enumerate(listed.stdout.split())}


def _lost_trailer_commit(
    vault: Vault, args: list[str], sha: str, pass_id: str | None, kind: CommitKind | None
) -> list[CmemCommit]:
    """The one commit `sha`, read as a step of `pass_id` whose message lost its trailer; its
    kind as state.json records it, else as its subject says (a new message: a pass)."""
    shown = history.run_git(
        vault.root,
        *[a for a in args if not a.startswith(("--grep", "-n"))],
        "-n1",
        sha,
        check=False,
    )
    commits = (
        [c for c in _parse_log(shown.stdout) if not c.pass_id] if shown.returncode == 0 else []
    )
    for commit in commits:
        commit.pass_id, commit.trailer_lost = pass_id or "", True
        commit.kind = kind or (commit.kind if commit.kind != "pass" else "converge")
    return commits


def _link_undos(commits: list[CmemCommit]) -> None:
    by_sha = {c.sha: c for c in commits}
    for commit in commits:
        if commit.undoes:
            target = by_sha.get(commit.undoes) or next(
                (c for c in commits if c.sha.startswith(commit.undoes)), None
            )
            if target is not None:
                target.undone_by = commit.sha


def _enrich(commits: list[CmemCommit], passes: list) -> None:
    """Fill in what the message leaves out from state.json's record of the pass."""
    by_id = {entry.get("id"): entry for entry in passes}
    for commit in commits:
        entry = by_id.get(commit.pass_id)
        if not entry:
            continue
        commit.engine = commit.engine or entry.get("engine")
        commit.model = commit.model or entry.get("model")
        if commit.kind == "pass" and entry.get("kind"):
            commit.kind = entry["kind"]
        if not commit.notes and entry.get("notes") and commit.kind == "converge":
            commit.fields["Converged"] = list(entry["notes"])


@dataclass
class FailedPass:
    """A converge pass that ended without a commit of its own."""

    pass_id: str
    time: str
    status: FailedStatus
    reason: str
    rounds: int
    run: str
    snapshot_commit: str | None = None
    engine: str | None = None
    model: str | None = None
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    kind: str = "converge"

    def to_json(self) -> dict:
        return {
            "id": self.pass_id,
            "kind": self.kind,
            "status": self.status,
            "commit": None,
            "time": self.time,
            "reason": self.reason,
            "rounds": self.rounds,
            "run": self.run,
            "snapshot_commit": self.snapshot_commit,
            "engine": self.engine,
            "model": self.model,
            "notes": self.notes,
            "errors": self.errors,
        }


def list_failed_passes(vault: Vault) -> list[FailedPass]:
    """Passes whose run record says they ended without applying, newest first."""
    import json

    from cmem.steps.run_records import runs_dir

    base = runs_dir(vault)
    found = []
    for outcome in sorted(base.glob("*/outcome.json")) if base.is_dir() else []:
        try:
            data = json.loads(outcome.read_text("utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or data.get("status") not in (
            "failed",
            "refused",
            "interrupted",
        ):
            continue
        found.append(
            FailedPass(
                outcome.parent.name,
                str(data.get("time") or ""),
                data["status"],
                str(data.get("reason") or ""),
                int(data.get("rounds") or 0),
                str(outcome.parent),
                data.get("snapshot_commit"),
                data.get("engine"),
                data.get("model"),
                list(data.get("notes") or []),
                list(data.get("errors") or []),
            )
        )
    return sorted(found, key=lambda f: _instant(f.time), reverse=True)


def _instant(iso: str) -> float:
    from datetime import datetime

    try:
        return datetime.fromisoformat(iso).timestamp()
    except (TypeError, ValueError):
        return 0.0


def build_log(vault: Vault, limit: int | None = None) -> list[CmemCommit | FailedPass]:
    """cmem's commits and the passes that ended without one, newest first: the commits in the
    graph's order (a clock set back between two passes does not swap them), each failed pass
    (which has only its time) before the first commit not newer than it."""
    failed = list_failed_passes(vault)
    entries: list[CmemCommit | FailedPass] = []
    for commit in list_cmem_commits(vault, limit):
        while failed and _instant(failed[0].time) >= _instant(commit.time):
            entries.append(failed.pop(0))
        entries.append(commit)
    entries += failed
    return entries[:limit] if limit else entries


def find_cmem_commit(vault: Vault, ref: str | None = None) -> CmemCommit:
    """A cmem commit by pass id (or a unique prefix), commit hash prefix, or `last` / None for
    the newest."""
    commits = list_cmem_commits(vault)
    if not commits:
        raise CmemError("no cmem pass in this vault's history yet; run `cmem converge` first.")
    if ref in (None, "", "last", "HEAD"):
        return commits[0]
    exact = [c for c in commits if c.pass_id == ref or c.sha == ref]
    if exact:
        return exact[0]
    matches = [
        c
        for c in commits
        if c.pass_id.startswith(ref) or (len(ref) >= 4 and c.sha.startswith(ref.lower()))
    ]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise CmemError(
            f"{ref!r} matches {len(matches)} passes ({', '.join(c.pass_id for c in matches[:5])}); give more of the id."
        )
    raise CmemError(f"no cmem pass or commit matches {ref!r}; `cmem log` lists them.")


@dataclass
class PassDiff:
    commit: CmemCommit
    diff: str  # unified diff of the memory files, the moved notes and the checklist


def pass_diff(vault: Vault, ref: str | None = None) -> PassDiff:
    """The change one cmem commit made, as `git show` would print it, without state.json (cmem's
    bookkeeping: `git show` has it)."""
    commit = find_cmem_commit(vault, ref)
    result = history.run_git(
        vault.root,
        "show",
        "--format=",
        "--no-color",
        "--no-ext-diff",
        "-M",
        "--relative",
        commit.sha,
        "--",
        ".",
        f":(exclude){STATE_REL}",
    )
    return PassDiff(commit, result.stdout)


# --- reading files at a commit --------------------------------------------------------------------


def read_blob(vault: Vault, commit: str, path: str) -> bytes | None:
    """The bytes of `path` (vault-relative) at `commit`, or None where it did not exist."""
    return read_object(vault, f"{commit}:./{path}")


def read_object(vault: Vault, spec: str) -> bytes | None:
    """The bytes of the blob `spec` names (`commit:./path`, or a blob's id: what a step wrote
    before an amend replaced its commit), or None where git has none."""
    import subprocess

    result = subprocess.run(
        [
            "git",
            *history.SAFE_GIT_OPTIONS,
            "-C",
            str(vault.root),
            "cat-file",
            "blob",
            spec,
        ],
        capture_output=True,
        env=history._env(),
    )
    return result.stdout if result.returncode == 0 else None
