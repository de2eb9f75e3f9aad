"""The recall index's query side, stdlib only: a query's terms, the FTS5 MATCH string, the ranked
SQL and the hits it returns.

Split from `search_index.py` so that `cmem recall` can be answered by the light entry path
(`cmem.fast` → `reading/recall.py: stored_recall`) with `sqlite3` and this module alone, without
the vault model, YAML or the note reader that keeping the index fresh needs. `search_index.Index`
searches through the same `search_rows`, so both paths rank and shape hits the same way.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import namedtuple

CONVERGENT, ARCHIVED = "convergent", "archive"
UNMANAGED = "unmanaged"  # recall.include_unmanaged: notes no layer reads, indexed read only
# the divergent notes, indexed so recall finds a fact a pending note holds (shown as not yet
# converged): its hits are limited to the notes pending when the search runs
PENDING = "pending"
# Column weights for bm25(): the statement itself, the old wordings in its traces, and where it
# sits (file name, heading, summary, tags). A match in the statement counts most.
WEIGHTS = (1.0, 0.4, 0.5)

_WORD = re.compile(r"[^\W_]+")
_LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")


class SyncReport:
    """What keeping an index fresh did. A plain class, not a dataclass: the light `cmem recall`
    imports this module, and `dataclasses` imports `inspect`."""

    __slots__ = (
        "scope",
        "files",
        "rows",
        "added",
        "updated",
        "removed",
        "rebuilt",
        "listed",
        "seconds",
    )

    def __init__(
        self,
        scope: str,
        files: int = 0,
        rows: int = 0,
        added: int = 0,
        updated: int = 0,
        removed: int = 0,
        rebuilt: str | None = None,  # why the database was (re)built from scratch, if it was
        listed: bool = True,  # False when unchanged folders let the manifest stand for the listing
        seconds: float = 0.0,
    ):
        self.scope, self.files, self.rows = scope, files, rows
        self.added, self.updated, self.removed = added, updated, removed
        self.rebuilt, self.listed, self.seconds = rebuilt, listed, seconds

    def __eq__(self, other) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"SyncReport({fields})"

    def to_json(self) -> dict:
        return {
            "scope": self.scope,
            "files": self.files,
            "rows": self.rows,
            "added": self.added,
            "updated": self.updated,
            "removed": self.removed,
            "rebuilt": self.rebuilt,
            "listed": self.listed,
            "seconds": round(self.seconds, 4),
        }


class Hit(namedtuple("Hit", "path layer line heading text sources score")):
    """One ranked statement; `score` is -bm25: higher is better."""

    __slots__ = ()


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def query_terms(query: str) -> list[str]:
    """A query's terms: words, and the bigrams of each CJK run (one character stays one)."""
    text = _fold(query)
    if text.isascii():  # no CJK run: the CJK tables are not even imported (a light recall)
        return list(dict.fromkeys(_WORD.findall(text)))
    from cmem.text.scripts import CJK_RUN
    from cmem.text.terms import bigrams

    terms: list[str] = []
    position = 0
    for match in CJK_RUN.finditer(text):
        terms.extend(_WORD.findall(text[position : match.start()]))
        run = match.group()
        terms.extend(bigrams(run) or [run])
        position = match.end()
    terms.extend(_WORD.findall(text[position:]))
    return list(dict.fromkeys(terms))


def match_expression(terms: list[str], operator: str) -> str:
    """An FTS5 MATCH string; every term is quoted, so no query text is FTS5 syntax."""
    return f" {operator} ".join('"' + term.replace('"', '""') + '"' for term in terms)


def display_text(line: str) -> str:
    return _LIST_MARKER.sub("", line).strip()


def search_rows(db, query: str, limit: int, paths: list[str] | None, layer_for) -> list[Hit]:
    """BM25-ranked statements from an open index database. Rows holding every term come first;
    when they are fewer than `limit`, rows holding some of them follow (a Chinese query's bigrams
    that straddle two words, or one word the memory spells differently, must not hide the rest).
    `layer_for(path)` names a hit's layer."""
    terms = query_terms(query)
    if not terms:
        return []
    hits: list[Hit] = []
    seen: set[int] = set()
    operators = ["AND", "OR"] if len(terms) > 1 else ["AND"]
    for operator in operators:
        if len(hits) >= limit:
            break
        for row_id, hit in _query(
            db, match_expression(terms, operator), limit + len(seen), paths, layer_for
        ):
            if row_id not in seen and len(hits) < limit:
                seen.add(row_id)
                hits.append(hit)
    return hits


def _query(db, expression: str, limit: int, paths: list[str] | None, layer_for):
    if paths is None:
        # rank the matches inside FTS5 first and join only the best: a frequent word matches
        # a large share of the rows, and joining them all costs more than ranking them
        sql = (
            "SELECT rows.id, rows.path, rows.line, rows.heading, rows.text, rows.sources, best.score FROM "
            "(SELECT rowid, bm25(entries, ?, ?, ?) AS score FROM entries WHERE entries MATCH ? ORDER BY score LIMIT ?) AS best "
            "JOIN rows ON rows.id = best.rowid ORDER BY best.score, rows.path, rows.line"
        )
        params: list = [*WEIGHTS, expression, limit]
    else:
        sql = (
            "SELECT rows.id, rows.path, rows.line, rows.heading, rows.text, rows.sources, bm25(entries, ?, ?, ?) AS score "
            f"FROM entries JOIN rows ON rows.id = entries.rowid WHERE entries MATCH ? AND rows.path IN ({','.join('?' * len(paths))}) "
            "ORDER BY score, rows.path, rows.line LIMIT ?"
        )
        params = [*WEIGHTS, expression, *paths, limit]
    for row_id, path, line, heading, text, sources, rank in db.execute(sql, params):
        yield (
            row_id,
            Hit(
                path,
                layer_for(path),
                line,
                heading,
                display_text(text),
                tuple(json.loads(sources)),
                round(-rank, 4),
            ),
        )
