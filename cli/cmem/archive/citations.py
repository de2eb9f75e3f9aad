"""Whether memory still holds what a staged note was converged into (issue 35).

`cmem archive apply` moves a note only while the convergent layer, as it is on disk now, still
holds its statements: a statement (or a trace inside one) cites `[[name]]` — with or without a
`#…` fragment or an alias — in every file the pass converged it into. A file that no longer
cites it is excused in two cases only:

- the citation left it through cmem's own, validated work: the commit that removed it carries a
  `Cmem-Pass` trailer (a later pass rewrote the statement with a trace citing the newer note,
  merged or moved it; an undo took it back);
- another memory file, not one it was converged into, cites it now (the statements were moved,
  by a pass or by hand).

Everything else — an editor saving an old buffer over a memory file, a statement deleted or
rewritten by hand, a file removed, a pass rolled back after its checklist line was ticked — left
the note's content held nowhere but the note itself; archiving it would leave it only in the
archive, which is never read. Such a line is `uncited`: refused with the reason, and the note is
pending again (`gate.apply_archive` drops its state.json entry in the archive step's commit).

A memory file that cannot be read (no read permission, not a regular file) tells nothing either
way: the notes that went into it (and a note recorded nowhere) wait, staged, with their state
kept, until it can be read (`unreadable`).

Only files that lost a citation cost a look at git; the usual line costs one read of each
memory file per command.
"""

from __future__ import annotations

from cmem.vault.layers import Vault
from cmem.vault.notes import read_note
from cmem.vault.statements import find_sources, statement_lines

# How far back the commits that touched one memory file are followed to find the one that
# removed a citation; a removal further back than this is not excused.
_MAX_COMMITS = 200


def _link_name(name: str) -> str:
    """`folder/name.md` and `name` both name the note `name` (as the checklist reads links)."""
    name = name.strip().rsplit("/", 1)[-1]
    return name[:-3] if name.endswith(".md") else name


def cited_names(text: str, formats) -> set[str]:
    """The note names the statements of a memory file's text cite, in their sources and in the
    sources kept inside their traces."""
    names: set[str] = set()
    if "[[" not in text:
        return names
    for _, line in statement_lines(text):
        if "[[" not in line:
            continue
        for _start, _end, found in find_sources(line, formats):
            names.update(_link_name(name) for name in found)
    return names


class Citations:
    """Which memory files cite which notes, on disk now (read once per command), and, for a
    file that lost a citation, who removed it (git)."""

    def __init__(self, vault: Vault):
        self.vault = vault
        self._by_file: dict[str, set[str]] | None = None
        self._unreadable: dict[str, str] = {}  # memory files that cannot be read, with why
        self._losses: dict[tuple[str, str, str], str | None] = {}

    @property
    def by_file(self) -> dict[str, set[str]]:
        if self._by_file is None:
            formats = self.vault.config.formats
            limit = self.vault.config.max_note_bytes
            self._by_file = {}
            for file in self.vault.convergent_files():
                note = read_note(file, limit)
                self._by_file[file.rel] = cited_names(note.text, formats) if note.usable else set()
                if note.skip_reason and note.skip_reason != "is empty":  # empty: cites nothing
                    self._unreadable[file.rel] = note.skip_reason
        return self._by_file

    def unreadable(self, into: list[str]) -> str | None:
        """ "<file> <why>" for a memory file the note went into (any, when `into` is empty) that
        cannot be read: whether it still cites the note cannot be told."""
        self.by_file  # noqa: B018 (reads every file once)
        for rel in into or sorted(self._unreadable):
            if rel in self._unreadable:
                return f"{rel} {self._unreadable[rel]}"
        return None

    def files_citing(self, name: str) -> list[str]:
        return sorted(rel for rel, names in self.by_file.items() if name in names)

    def problem(self, name: str, into: list[str], pass_id: str, recorded: bool) -> str | None:
        """Why memory no longer holds what note `name` was converged into (files `into`, by
        pass `pass_id`; `recorded`: state.json has its entry), or None while it does."""
        citing = self.files_citing(name)
        if not recorded:
            if citing:
                return None
            return (
                f"no memory file cites [[{name}]], and state.json does not record it as converged"
            )
        if not into:
            return None if citing else f"no memory file cites [[{name}]] any more"
        if any(rel not in into for rel in citing):
            return None  # its statements moved to another memory file
        for rel in into:
            if rel in citing:
                continue
            why = self.unvalidated_loss(rel, name, pass_id)
            if why:
                return f"{rel} no longer cites [[{name}]] ({why})"
        return None

    def unvalidated_loss(self, rel: str, name: str, pass_id: str) -> str | None:
        """How `rel` lost its citation of `name` when it was not cmem's own commit that removed
        it (a phrase for the reason), or None when it was."""
        key = (rel, name, pass_id)
        if key not in self._losses:
            self._losses[key] = self._find_loss(rel, name, pass_id)
        return self._losses[key]

    def _find_loss(self, rel: str, name: str, pass_id: str) -> str | None:
        from cmem.errors import CmemError
        from cmem.steps.message import STEP_TRAILER, read_trailers
        from cmem.steps.pass_log import read_blob

        formats = self.vault.config.formats
        vault = self.vault

        def cites_at(commit: str) -> bool:
            blob = read_blob(vault, commit, rel)
            return blob is not None and name in cited_names(_text(blob), formats)

        if cites_at("HEAD"):
            on_disk = "deleted" if not (vault.root / rel).exists() else "edited"
            return f"{on_disk} on disk since the last commit, not by a cmem pass"
        try:
            commits = _commits_touching(vault, rel)
        except CmemError:
            return "its history cannot be read to tell who removed it"
        for sha, body in commits:
            trailers = read_trailers(body)
            if pass_id and trailers.get(STEP_TRAILER) == pass_id:
                return f"the pass {pass_id} that converged it wrote no statement citing it here"
            if not cites_at(f"{sha}^"):
                continue  # it did not cite it before this commit either: look further back
            if trailers.get(STEP_TRAILER):
                return None  # a pass (or an undo) rewrote or moved it, validated
            subject = body.strip().split("\n", 1)[0]
            return f"removed by commit {sha[:8]} {subject!r}, not by a cmem pass"
        return "the pass's statements are gone"


def _text(blob: bytes) -> str:
    return blob.decode("utf-8", errors="replace").lstrip("\ufeff").replace("\r\n", "\n")


def _commits_touching(vault: Vault, rel: str) -> list[tuple[str, str]]:
    """(sha, message) of the commits that changed `rel`, newest first (merges left out: what
    they bring was changed by a commit on one side)."""
    from cmem.steps.commits import run_git

    out = run_git(
        vault.root,
        "--literal-pathspecs",
        "log",
        "--no-merges",
        f"-n{_MAX_COMMITS}",
        "--format=%x1e%H%x1f%B",
        "--",
        rel,
    ).stdout
    commits = []
    for chunk in out.split("\x1e")[1:]:
        sha, _, body = chunk.partition("\x1f")
        commits.append((sha.strip(), body))
    return commits
