"""The full-text index behind `cmem recall` and `cmem context` (docs/design.md §8): a cache, never
the truth.

The notes are the truth. The index is SQLite FTS5 (standard library) in the per-machine state
folder — one database for the convergent layer, a separate one for the archive, which is searched
only on request. One row per statement (a list item or paragraph line) with its path, line,
heading and source links, so a search returns the statement, not just the file.

Kept fresh incrementally: a manifest of (mtime, size, inode, ctime, sha256) per file says which
files changed; a structure hash over the sorted paths says cheaply whether files were added,
removed or moved (seed 001's `structureHash`). A missing, corrupt or outdated database is deleted
and rebuilt from the files — losing it costs time, never memory. The FTS5 table is contentless (it
keeps the inverted index, not a second copy of the tokenised text): a statement's old words are
deleted by tokenising its stored line again with the same settings, which is why a change of
settings rebuilds the index.

Chinese has no spaces, so the indexed column is pre-tokenised: CJK runs become their single
characters plus their character bigrams, other text lower-case words (stemmed by FTS5's `porter`
wrapper around `unicode61`). A query's CJK runs become bigrams (a one-character run stays one
character), so a two-character query such as 实习 is one exact token with its own BM25 weight.
`docs/benchmarks.md` compares this with the `trigram` tokenizer, which cannot match a query of
fewer than three characters at all.

sqlite3 is imported inside functions: `cmem --help` never pays for it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from cmem.cache_store import FORMATS, settled
from cmem.errors import CmemError
from cmem.reading.exchanges import exchange_fields, split_questions
from cmem.reading.index_query import (  # the query side, shared with the stored answer
    ARCHIVED,
    COLUMNS,
    CONVERGENT,
    NOTES,
    TITLE_LINE,
    UNMANAGED,
    WEIGHTS,  # noqa: F401 - kept importable from here
    Hit,
    SyncReport,
    display_text,  # noqa: F401 - kept importable from here
    match_expression,  # noqa: F401 - kept importable from here
    query_terms,  # noqa: F401 - kept importable from here
    search_rows,
)
from cmem.text.folding import fold_lower
from cmem.text.words import cjk_spaced
from cmem.vault.layers import ARCHIVE, DIVERGENT, NoteFile, Vault
from cmem.vault.notes import read_note
from cmem.vault.statements import split_statement, statement_lines

INDEX_VERSION = FORMATS["search-index"]
SCOPES = (CONVERGENT, NOTES, ARCHIVED)
# what a line of a note is to the index: a line, a line whose questions the next turn answers, its title
LINE, ASKING, TITLE = 0, 1, 2
PROGRESS_FROM = 200  # notes to index before a build says how far it is
# an indexed file by path: (mtime_ns, size, sha256, checked_ns, change), its stats when last read
_Manifest = dict[str, tuple]

_HEADING = re.compile(r"#{1,6}\s+(.*?)\s*#*\s*$")
# an Obsidian callout's first line, `> [!tip] Dentist`: its title heads the callout's lines
_CALLOUT = re.compile(r">\s*\[!([^\]\s]+)\][+-]?\s*(.*?)\s*$")


class IndexUnavailable(CmemError):
    """This Python's SQLite has no FTS5."""


# --- terms --------------------------------------------------------------------------------


def index_terms(text: str) -> str:
    """The text as the index sees it: CJK runs as single characters and bigrams, each a
    space-separated token; everything else left to unicode61 (words, lower case)."""
    return cjk_spaced(fold_lower(text))


# --- rows -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    path: str
    line: int  # TITLE_LINE for the note's title row
    heading: str
    text: str  # the line as written (the index keeps it: deleting from FTS5 needs the words again)
    sources: tuple[str, ...]
    context: str  # in a conversation, the turn the line answers (kept for the same reason)
    kind: int  # LINE, ASKING or TITLE
    reply: int = 0  # ASKING: the line where the turn that answers it starts


def line_terms(line: str, formats) -> tuple[str, str, str, list[str]]:
    """(core, indexed statement, indexed old wordings, sources) of one statement line."""
    core, sources, traces = split_statement(line, formats)
    history = index_terms(" ".join(trace.old for trace in traces)) if traces else ""
    return core, index_terms(core), history, sources


def place_terms(about: str, heading: str) -> str:
    return index_terms(f"{about} {heading}" if heading else about)


def row_columns(
    text: str, heading: str, context: str, kind: int, about: str, formats
) -> tuple[str, str, str, str, str]:
    """The five indexed fields of a row (`index_query.COLUMNS`), from what the rows table keeps:
    the same values insert it and delete it (the FTS5 table keeps no text)."""
    place = place_terms(about, heading)
    if kind == TITLE:
        return "", "", place, "", ""
    core, body, history, _sources = line_terms(text, formats)
    asked = ""
    if kind == ASKING:
        said, questions = split_questions(core)
        body, asked = index_terms(said), index_terms(questions)
    return body, history, place, index_terms(context) if context else "", asked


def _about(note, note_file: NoteFile, with_meta: bool) -> str:
    """What the place field says of a file: its name and its folders' (an adopted vault files a
    note under `Move to Lisbon/` and calls it `Checklist`), and its summary, tags and aliases."""
    about = [note_file.name, *note_file.rel.split("/")[:-1]]
    if with_meta and note.usable:
        meta = note.meta
        for key in ("summary", "tags", "aliases"):
            value = meta.get(key)
            if value:
                about.extend(str(v) for v in (value if isinstance(value, list) else [value]))
    return " ".join(about)


def _text_lines(note, with_code: bool) -> dict[int, str]:
    """The lines a note is searched by: its statements, and for a note (not a memory file) the
    lines of its code blocks too (a command is what a note about it holds); never the agent's
    text a session note quotes (context, not a source)."""
    wanted = dict(statement_lines(note.body, note.body_start))
    if not with_code:
        return wanted
    fence, quoted, previous = "", False, ""
    for line_no in range(note.body_start, len(note.lines) + 1):
        stripped = note.lines[line_no - 1].strip()
        if fence:
            if stripped.startswith(fence):
                fence = ""
            elif stripped and not quoted:
                wanted[line_no] = note.lines[line_no - 1]
        elif stripped.startswith(("```", "~~~")):
            fence, quoted = stripped[:3], previous.startswith("agent, before t")
        if stripped:
            previous = stripped
    return wanted


def note_rows(vault: Vault, note_file: NoteFile, scope: str) -> tuple[list[Row], str, str]:
    """(rows, sha256, about) of one note: a row per line it is searched by (`_text_lines`), each
    with its title and heading and, in a conversation, the turn it answers; a note without such
    a line (empty, unreadable, headings only) has a title row, so its name still finds it."""
    note = read_note(note_file, vault.config.max_note_bytes)
    about_text = _about(note, note_file, with_meta=scope != ARCHIVED)
    title = [Row(note_file.rel, TITLE_LINE, "", note_file.name, (), "", TITLE)]
    if not note.usable:
        return title, note.sha256, about_text
    rows: list[Row] = []
    wanted = _text_lines(note, with_code=scope != CONVERGENT)
    exchanges = exchange_fields(note.lines, note.body_start) if wanted else {}
    heading = callout = ""
    in_fence = False
    for line_no in range(note.body_start, len(note.lines) + 1):
        line = note.lines[line_no - 1]
        stripped = line.lstrip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
        elif not in_fence and stripped.startswith("#"):
            found = _HEADING.match(stripped)
            if found:
                heading = found.group(1)
        if not stripped.startswith(">"):
            callout = ""
        elif found_callout := _CALLOUT.match(stripped):
            callout = found_callout.group(2) or found_callout.group(1)
            following = note.lines[line_no] if line_no < len(note.lines) else ""
            if following.lstrip().startswith(">"):
                continue  # a title with lines under it is their heading, as a `#` heading is
        if line_no not in wanted:
            continue
        core, _body, history, sources = line_terms(line, vault.config.formats)
        if not core and not history:
            continue
        answers, reply = exchanges.get(line_no, ("", 0))
        kind = ASKING if reply else LINE
        under = f"{heading} · {callout}" if heading and callout else heading or callout
        rows.append(Row(note_file.rel, line_no, under, line, tuple(sources), answers, kind, reply))
    # every line's place field holds the title: a title row only where no line stands for it
    return rows or title, note.sha256, about_text


# --- the database ------------------------------------------------------------------------


def index_file(vault: Vault, scope: str) -> Path:
    return vault.machine_dir / "index" / f"{scope}.sqlite"


def scope_files(vault: Vault, scope: str) -> list[NoteFile]:
    if scope == NOTES:
        files = vault.list_layer(DIVERGENT)
        if vault.config.recall_unmanaged:
            from cmem.vault.unmanaged import unmanaged_notes

            files += [NoteFile(rel, vault.root / rel, UNMANAGED) for rel in unmanaged_notes(vault)]
        return files
    return vault.list_layer(ARCHIVE) if scope == ARCHIVED else vault.convergent_files()


def structure_hash(paths: list[str]) -> str:
    # surrogateescape: a folder name that is not UTF-8 must not stop a search (os.fsencode's way)
    return hashlib.sha256("\n".join(sorted(paths)).encode("utf-8", "surrogateescape")).hexdigest()[
        :16
    ]


def folder_signature(vault: Vault, scope: str, now_ns: int) -> str | None:
    """A hash of every folder of the scope with its mtime and ctime: adding, removing or renaming a file
    changes its folder's mtime, so an equal signature means the same files, found without
    listing them. None when a folder changed within RACY_NS of now (its mtime may change again
    within the same tick): then the files are listed."""
    if scope == NOTES:
        return None  # anywhere in the vault: the files are listed each time
    bases = [vault.config.archive_dir] if scope == ARCHIVED else list(vault.convergent_dirs)
    entries = []
    stack: list[str | Path] = [vault.root / base for base in bases]
    while stack:
        folder = stack.pop()
        try:
            st = os.stat(folder)
            children = [
                e.path
                for e in os.scandir(folder)
                if e.is_dir(follow_symlinks=False) and not e.name.startswith(".")
            ]
        except OSError:
            entries.append(f"{folder}:missing")
            continue
        if not settled(st.st_mtime_ns, now_ns):
            return None
        # the ctime too: an mtime set back by hand (a restore, a sync tool) must not hide a change
        entries.append(f"{folder}:{st.st_mtime_ns}:{st.st_ctime_ns}")
        stack.extend(children)
    return hashlib.sha256(
        "\n".join(sorted(entries)).encode("utf-8", "surrogateescape")
    ).hexdigest()[:16]


def check_fts5() -> None:
    import sqlite3

    try:
        probe = sqlite3.connect(":memory:")
        probe.execute("CREATE VIRTUAL TABLE probe USING fts5(x)")
        probe.close()
    except sqlite3.Error:
        raise IndexUnavailable(
            f"this Python's SQLite ({sqlite3.sqlite_version}) has no FTS5, which `cmem recall` needs; "
            "use a Python built with a full SQLite (python.org, Homebrew, uv and most Linux distributions ship it)."
        ) from None


def _change(st: os.stat_result) -> str:
    """What (mtime, size) misses of a file: its inode and ctime, which every write moves, so an
    edit that keeps the size and sets the mtime back is still indexed (as the scan's cache)."""
    return f"{st.st_ino}:{st.st_ctime_ns}"


_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files(path TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
                   sha256 TEXT NOT NULL, checked_ns INTEGER NOT NULL, about TEXT NOT NULL DEFAULT '',
                   change TEXT NOT NULL DEFAULT '');
CREATE TABLE rows(id INTEGER PRIMARY KEY, path TEXT NOT NULL, line INTEGER NOT NULL,
                  heading TEXT NOT NULL, text TEXT NOT NULL, sources TEXT NOT NULL,
                  context TEXT NOT NULL DEFAULT '', kind INTEGER NOT NULL DEFAULT 0,
                  reply INTEGER NOT NULL DEFAULT 0);
CREATE INDEX rows_path ON rows(path);
CREATE VIRTUAL TABLE entries USING fts5(body, history, place, context, asked, content='', tokenize='porter unicode61 remove_diacritics 2');
"""


class Index:
    """One scope's index. Use `open_index`; every method may raise sqlite3.DatabaseError, which
    `open_index`'s callers turn into a rebuild."""

    def __init__(self, vault: Vault, scope: str, path: Path | None):
        import sqlite3

        self.vault, self.scope, self.path = vault, scope, path
        self.layer_for = None
        self.db = sqlite3.connect(
            str(path) if path else ":memory:", timeout=10, isolation_level=None
        )
        self.db.execute("PRAGMA journal_mode=WAL" if path else "PRAGMA journal_mode=MEMORY")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.fresh = False
        if not self._valid():  # an older version, another scope or other settings: rebuilt
            self._create()

    def _valid(self) -> bool:
        tables = {
            row[0] for row in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        if not {"meta", "files", "rows", "entries"} <= tables:
            return False
        meta = dict(self.db.execute("SELECT key, value FROM meta"))
        return (
            meta.get("version") == str(INDEX_VERSION)
            and meta.get("scope") == self.scope
            and meta.get("config") == self._config_key()
        )

    def _config_key(self) -> str:
        """The settings the rows depend on: a change rebuilds the index."""
        c = self.vault.config
        key = json.dumps(
            [
                c.resident_dir,
                c.situational_dir,
                c.archive_dir,
                c.checklist_name,
                list(c.ignore),
                c.formats.source,
                c.formats.trace,
                c.max_note_bytes,
                c.recall_unmanaged,
            ],
            ensure_ascii=False,
        )
        return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]

    def _create(self) -> None:
        names = [
            row[0]
            for row in self.db.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'entries_%'"
            )
        ]
        for name in names:
            self.db.execute(f'DROP TABLE IF EXISTS "{name}"')
        self.db.executescript(_SCHEMA)
        self.db.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            [
                ("version", str(INDEX_VERSION)),
                ("scope", self.scope),
                ("config", self._config_key()),
                ("structure", ""),
                ("folders", ""),
            ],
        )
        self.fresh = True

    def close(self) -> None:
        self.db.close()

    def meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    # --- sync ----------------------------------------------------------------------------

    def sync(self, rebuilt: str | None = None, progress=None) -> SyncReport:
        """Bring the index up to date with the files, by their stats: only a changed file is read
        again. `progress(done, total)` is called while a build indexes many notes."""
        started = time.perf_counter()
        report = SyncReport(self.scope, rebuilt=rebuilt or ("created" if self.fresh else None))
        now_ns = time.time_ns()
        manifest: _Manifest = {
            row[0]: row[1:]
            for row in self.db.execute(
                "SELECT path, mtime_ns, size, sha256, checked_ns, change FROM files"
            )
        }
        folders = folder_signature(self.vault, self.scope, now_ns)
        candidates, structure, gone = self._list_files(manifest, folders, report)
        changed = self._changed_files(candidates, manifest)
        self.db.execute("BEGIN IMMEDIATE")
        try:
            for path in gone:
                self._drop(path)
                report.removed += 1
            for done, (note_file, st) in enumerate(changed):
                if progress is not None and len(changed) >= PROGRESS_FROM:
                    progress(done, len(changed))
                self._index_file(note_file, st, manifest.get(note_file.rel), now_ns, report)
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('structure', ?)", (structure,))
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('folders', ?)", (folders or "",))
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        report.files = len(candidates)
        report.rows = self.db.execute("SELECT count(*) FROM rows").fetchone()[0]
        report.seconds = time.perf_counter() - started
        return report

    def _list_files(
        self, manifest: _Manifest, folders: str | None, report: SyncReport
    ) -> tuple[list[tuple[str, str | Path, NoteFile | None]], str | None, list[str]]:
        """The files in scope (rel, path, NoteFile when listed), the structure hash of their
        paths, and the indexed paths that are gone; the manifest stands for the listing while no
        folder has changed."""
        gone: list[str] = []
        if folders is not None and folders == self.meta("folders") and self.meta("structure"):
            # No folder changed since the last sync, so no file was added, removed or renamed: the
            # manifest's paths are the files (a stat each still catches edits in place).
            root = os.path.join(os.fspath(self.vault.root), "")
            candidates: list[tuple[str, str | Path, NoteFile | None]] = [
                (rel, root + rel, None) for rel in manifest
            ]  # plain strings: a Path a file costs more than the stat
            report.listed = False
            return candidates, self.meta("structure"), gone
        files = scope_files(self.vault, self.scope)
        candidates = [(f.rel, f.path, f) for f in files]
        paths = [f.rel for f in files]
        structure = structure_hash(paths)
        if structure != self.meta("structure"):  # files added, removed or moved
            present = set(paths)
            gone = [path for path in manifest if path not in present]
        return candidates, structure, gone

    def _changed_files(
        self, candidates: list[tuple[str, str | Path, NoteFile | None]], manifest: _Manifest
    ) -> list[tuple[NoteFile, os.stat_result]]:
        """The files whose stats differ from the manifest's (or not yet settled when indexed)."""
        changed: list[tuple[NoteFile, os.stat_result]] = []
        for rel, path, note_file in candidates:
            try:
                st = os.stat(path, follow_symlinks=False)
            except OSError:
                continue
            known = manifest.get(rel)
            if (
                known
                and known[0] == st.st_mtime_ns
                and known[1] == st.st_size
                and known[4] == _change(st)
                and settled(st.st_mtime_ns, known[3])
            ):
                continue
            changed.append(
                (
                    note_file
                    or NoteFile(
                        rel,
                        Path(path),
                        ARCHIVE if self.scope == ARCHIVED else self.vault.layer_of(rel) or "",
                    ),
                    st,
                )
            )
        return changed

    def _index_file(
        self,
        note_file: NoteFile,
        st: os.stat_result,
        known: tuple | None,
        now_ns: int,
        report: SyncReport,
    ) -> None:
        """Index one changed file again; a file whose bytes are the same only gets its stats."""
        rows, sha, about = note_rows(self.vault, note_file, self.scope)
        if known and known[2] == sha and sha:
            self.db.execute(
                "UPDATE files SET mtime_ns=?, size=?, checked_ns=?, change=? WHERE path=?",
                (st.st_mtime_ns, st.st_size, now_ns, _change(st), note_file.rel),
            )
            return
        if known or not self.fresh:  # another process may have indexed it since our manifest
            self._drop(note_file.rel)
        if known:
            report.updated += 1
        else:
            report.added += 1
        self._insert(rows, about)
        self.db.execute(
            "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?)",
            (note_file.rel, st.st_mtime_ns, st.st_size, sha, now_ns, about, _change(st)),
        )

    def _drop(self, path: str) -> None:
        # The FTS5 table keeps no copy of the text (that halves the index): deleting from it takes
        # the same words again, recomputed from the stored line with the same settings (a change of
        # settings rebuilds the index, see _config_key).
        found = self.db.execute("SELECT about FROM files WHERE path=?", (path,)).fetchone()
        about = found[0] if found else ""
        formats = self.vault.config.formats
        self.db.executemany(
            f"INSERT INTO entries(entries, rowid, {', '.join(COLUMNS)}) "
            "VALUES ('delete', ?, ?, ?, ?, ?, ?)",
            [
                (row_id, *row_columns(line, heading, context, kind, about, formats))
                for row_id, line, heading, context, kind in self.db.execute(
                    "SELECT id, text, heading, context, kind FROM rows WHERE path=?", (path,)
                ).fetchall()
            ],
        )
        self.db.execute("DELETE FROM rows WHERE path=?", (path,))
        self.db.execute("DELETE FROM files WHERE path=?", (path,))

    def _insert(self, rows: list[Row], about: str) -> None:
        if not rows:
            return
        first = (self.db.execute("SELECT max(id) FROM rows").fetchone()[0] or 0) + 1
        self.db.executemany(
            "INSERT INTO rows(id, path, line, heading, text, sources, context, kind, reply) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    first + i,
                    r.path,
                    r.line,
                    r.heading,
                    r.text,
                    json.dumps(r.sources, ensure_ascii=False) if r.sources else "[]",
                    r.context,
                    r.kind,
                    r.reply,
                )
                for i, r in enumerate(rows)
            ],
        )
        formats = self.vault.config.formats
        self.db.executemany(
            f"INSERT INTO entries(rowid, {', '.join(COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?)",
            [
                (first + i, *row_columns(r.text, r.heading, r.context, r.kind, about, formats))
                for i, r in enumerate(rows)
            ],
        )

    # --- search --------------------------------------------------------------------------

    def search(self, query: str, limit: int = 10, paths: list[str] | None = None) -> list[Hit]:
        """Ranked lines (`index_query.search_rows`, which the stored answer calls too); a note's
        layer as `layer_for` names it (`recall.note_layer`), else the file's own layer."""
        return search_rows(
            self.db,
            query,
            limit,
            paths,
            self.layer_for or (lambda path: self.vault.layer_of(path) or "convergent"),
        )


# --- opening, with repair ----------------------------------------------------------------


@dataclass
class Searched:
    hits: list[Hit]
    sync: SyncReport
    problems: list[str] = field(default_factory=list)


def search_scope(
    vault: Vault,
    scope: str,
    query: str,
    limit: int = 10,
    paths: list[str] | None = None,
    layer_for=None,
    progress=None,
) -> Searched:
    """Bring the scope's index up to date with the files, then search it. A corrupt database is
    deleted and rebuilt from the files, once; an unwritable machine folder gets an index in memory.
    `layer_for(path)` names a hit's layer; `progress(done, total)` hears how a build goes."""
    import sqlite3

    check_fts5()
    path = index_file(vault, scope)
    problems: list[str] = []
    rebuilt = None
    for attempt in range(2):
        index = None
        try:
            index = _open(vault, scope, path, problems)
            index.layer_for = layer_for
            if index.fresh and index.path and scope == NOTES:  # an older cmem's two note indexes
                for older in ("pending", "unmanaged"):
                    delete_index(path.with_name(f"{older}.sqlite"))
            report = index.sync(rebuilt, progress)
            hits = index.search(query, limit, paths)
            return Searched(hits, report, problems)
        except (
            sqlite3.DatabaseError,
            UnicodeDecodeError,
        ) as exc:  # garbage where text was: corrupt too
            if attempt or (index is not None and index.path is None):
                raise CmemError(
                    f"the {scope} index at {path} could not be rebuilt ({exc}); delete it and try again."
                ) from None
            rebuilt = f"rebuilt: the database was unreadable ({exc})"
            problems.append(
                f"the {scope} index at {path} was unreadable ({exc}); rebuilt it from the notes"
            )
            delete_index(path)
        finally:
            if index is not None:
                index.close()
    raise AssertionError("unreachable")


def _open(vault: Vault, scope: str, path: Path, problems: list[str]) -> Index:
    try:
        from cmem.private import make_dirs, open_private

        make_dirs(path.parent)
        if path.exists() and not os.access(path, os.W_OK):
            raise PermissionError(path)
        # made 0600 before SQLite opens it: its WAL and shared-memory files take the database's mode
        os.close(open_private(path, os.O_RDWR))
        return Index(vault, scope, path)
    except (OSError, PermissionError) as exc:
        problems.append(
            f"cannot write the index at {path} ({exc}); searching an index built in memory"
        )
        return Index(vault, scope, None)


def delete_index(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            os.unlink(f"{path}{suffix}")
        except FileNotFoundError:
            pass


def index_size(vault: Vault, scope: str) -> int:
    path = index_file(vault, scope)
    return sum(os.path.getsize(f"{path}{s}") for s in ("", "-wal") if os.path.exists(f"{path}{s}"))


def index_problem(vault: Vault, scope: str) -> str | None:
    """Why the scope's index cannot be used as it is (for `cmem doctor`), or None. A missing index
    is no problem: the next search builds it."""
    import sqlite3

    path = index_file(vault, scope)
    if not path.exists():
        return None
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
        try:
            result = db.execute("PRAGMA quick_check").fetchone()
            if not result or result[0] != "ok":
                return f"fails SQLite's check ({result[0] if result else 'no answer'})"
            db.execute("SELECT count(*) FROM rows").fetchone()
        finally:
            db.close()
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
        return f"is unreadable ({exc})"
    return None


def rebuild_index(vault: Vault, scope: str) -> SyncReport:
    """Delete the scope's index and build it again from the notes."""
    delete_index(index_file(vault, scope))
    return search_scope(vault, scope, "", 0).sync
