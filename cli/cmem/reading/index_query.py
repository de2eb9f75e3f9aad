"""The recall index's query side, stdlib only: a query's terms, the FTS5 MATCH string, the ranked
SQL and the hits it returns.

Split from `search_index.py` so that `cmem recall` can be answered from stored indexes
(`reading/recall.py: stored_recall`) with `sqlite3` and this module alone, without
the vault model, YAML or the note reader that keeping the index fresh needs. `search_index.Index`
searches through the same `search_rows`, so both paths rank and shape hits the same way.
"""

from __future__ import annotations

import json
import re
from collections import namedtuple

from cmem.text.folding import fold_lower
from cmem.text.words import words_and_bigrams

CONVERGENT, ARCHIVED = "convergent", "archive"
# every note outside memory and the archive, in one index: the divergent notes (a pending one is
# marked as not yet converged) and the notes no layer reads (`recall.include_unmanaged`)
NOTES = "notes"
# the layers a note's hit is shown under
PENDING, DIVERGENT_NOTE, UNMANAGED = "pending", "divergent", "unmanaged"
# bm25() weights of the fields: the line; its traces' old wordings; where it sits (title, folders,
# heading, summary, tags); the turn it answers; the questions a next turn answers (the reply holds
# the fact, so a question's words count less in the question than in its reply's context)
WEIGHTS = (1.0, 0.4, 0.5, 0.9, 0.45)
COLUMNS = ("body", "history", "place", "context", "asked")
TITLE_LINE = 0  # a note's title row: found by its name alone (an empty note titled "Git-Crypt")
# candidates a search weighs before it groups them by note: one note's many matching lines must
# not crowd out every other note's best one
CANDIDATES = 5

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


class Hit(namedtuple("Hit", "path layer line heading text sources score matched context")):
    """One ranked line; `score` is -bm25 (higher is better), `matched` how many of the query's
    terms it holds (`_matched`), `context` the turn it answers in a conversation ("" if none)."""

    __slots__ = ()


def query_terms(query: str) -> list[str]:
    """A query's terms: words, and the bigrams of each CJK run (one character stays one); its
    function words left out (`text/terms.py: is_query_stop`) unless nothing else is left."""
    from cmem.text.terms import is_query_stop

    terms = list(dict.fromkeys(words_and_bigrams(fold_lower(query))))
    content = [term for term in terms if not is_query_stop(term)]
    return content or terms


def match_expression(terms: list[str], operator: str) -> str:
    """An FTS5 MATCH string; every term is quoted, so no query text is FTS5 syntax."""
    return f" {operator} ".join('"' + term.replace('"', '""') + '"' for term in terms)


def display_text(line: str) -> str:
    return _LIST_MARKER.sub("", line).strip()


def search_rows(db, query: str, limit: int, paths: list[str] | None, layer_for) -> list[Hit]:
    """Ranked lines from an open index database: the more of the query's terms a line holds (in
    any field), the higher; then BM25. Rows holding every term are asked for first, then rows
    holding some (a Chinese query's bigrams that straddle two words, or one word spelled
    differently, must not hide the rest). A question and the turn that answers it are one unit
    (`_as_exchanges`). More candidates than `limit` come back, for `rank_hits` to group by note.
    `layer_for(path)` names a hit's layer."""
    terms = query_terms(query)
    if not terms or limit < 1:
        return []
    wanted = limit * CANDIDATES
    found: dict[int, list] = {}
    operators = ["AND", "OR"] if len(terms) > 1 else ["AND"]
    for operator in operators:
        if len(found) >= wanted:
            break
        for row in _query(db, match_expression(terms, operator), wanted, paths):
            found.setdefault(row[0], list(row))
    _as_exchanges(db, found)
    matched = _matched(db, terms, list(found))
    for row_id, row in found.items():
        row[_MATCHED] = matched.get(row_id, 0.0)
    _as_exchanges(db, found, again=True)
    hits = [
        Hit(
            path,
            layer_for(path),
            line,
            heading,
            display_text(text),
            tuple(json.loads(sources)),
            round(score, 4),
            count,
            context,
        )
        for _id, path, line, heading, text, sources, context, _reply, score, count in found.values()
    ]
    hits.sort(key=lambda h: (-h.matched, -h.score, h.path, h.line))
    return hits[:wanted]


def _as_exchanges(db, found: dict[int, list], again: bool = False) -> None:
    """A question whose next turn answers it and that turn are one unit of search: the reply
    takes the better of the two ranks and the question comes right after it, so the line shown
    first is the one that holds the fact ("How long have you been married?" → "5 years
    already!"). First call: the replies of the questions found are fetched; `again`: the ranks
    are shared once each row's matched count is known."""
    by_line = {(row[_PATH], row[_LINE]): row for row in found.values()}
    for row in list(found.values()):
        where = (row[_PATH], row[_REPLY])
        if not row[_REPLY]:
            continue
        reply = by_line.get(where)
        if reply is None and not again:
            sql = f"SELECT {_SELECT} FROM rows WHERE path=? AND line=?"
            fetched = db.execute(sql, where).fetchone()
            if fetched is None:
                continue
            reply = by_line[where] = found[fetched[0]] = [*fetched, row[_SCORE], 0.0]
        if again and reply is not None:
            best = max((reply[_MATCHED], reply[_SCORE]), (row[_MATCHED], row[_SCORE]))
            reply[_MATCHED], reply[_SCORE] = best
            row[_MATCHED], row[_SCORE] = best[0], best[1] - 0.001  # right after its reply


def _matched(db, terms: list[str], row_ids: list[int]) -> dict[int, float]:
    """How many of `terms` each of `row_ids` holds: a term in the line itself (or its history,
    its exchange) counts one, a term only in where the line sits (title, folders, heading) a half,
    since every line of a note shares those. FTS5 tells, row by row: a seek into each term's
    list, cheaper than reading a frequent term's whole list to intersect it."""
    sql = "SELECT 1 FROM entries WHERE entries MATCH ? AND rowid = ?"
    own = "{" + " ".join(c for c in COLUMNS if c != "place") + "} : "
    quoted = [match_expression([term], "AND") for term in terms]
    counts = {}
    for row_id in row_ids:
        count = 0.0
        for term in quoted:
            if db.execute(sql, (own + term, row_id)).fetchone():
                count += 1.0
            elif db.execute(sql, (term, row_id)).fetchone():
                count += 0.5
        counts[row_id] = count
    return counts


_SELECT = (
    "rows.id, rows.path, rows.line, rows.heading, rows.text, rows.sources, rows.context, rows.reply"
)
# a candidate row: the columns of _SELECT, then its score and its matched count
_PATH, _LINE, _REPLY, _SCORE, _MATCHED = 1, 2, 7, 8, 9


def _query(db, expression: str, limit: int, paths: list[str] | None):
    weights = ", ".join("?" * len(WEIGHTS))
    if paths is None:
        # rank the matches inside FTS5 first and join only the best: a frequent word matches
        # a large share of the rows, and joining them all costs more than ranking them
        sql = (
            f"SELECT {_SELECT}, best.score FROM "
            f"(SELECT rowid, bm25(entries, {weights}) AS score FROM entries WHERE entries MATCH ? "
            "ORDER BY score LIMIT ?) AS best "
            "JOIN rows ON rows.id = best.rowid ORDER BY best.score, rows.path, rows.line"
        )
        params: list = [*WEIGHTS, expression, limit]
    else:
        sql = (
            f"SELECT {_SELECT}, bm25(entries, {weights}) AS score "
            "FROM entries JOIN rows ON rows.id = entries.rowid WHERE entries MATCH ? "
            f"AND rows.path IN ({','.join('?' * len(paths))}) "
            "ORDER BY score, rows.path, rows.line LIMIT ?"
        )
        params = [*WEIGHTS, expression, *paths, limit]
    for *row, rank in db.execute(sql, params):
        yield (*row, -rank, 0)  # the score (higher is better) and, later, the matched count


def rank_hits(memory: list[Hit], notes: list[Hit], limit: int) -> list[Hit]:
    """One list from memory's hits and the notes' (each as `search_rows` ranked them): the more
    query terms a line holds, the higher; at the same count memory's statements come first (each
    index's BM25 is its own, so memory and notes are never ranked on one scale); and each note's
    best line comes before any note's second one (one note must not fill every slot; a memory
    file's statements are each a fact, so they are not grouped)."""
    ranked = [(hit, True) for hit in memory] + [(hit, False) for hit in notes]
    ranked.sort(key=lambda pair: -pair[0].matched)  # stable: memory first at the same count
    firsts: list[Hit] = []
    rest: list[Hit] = []
    seen: set[str] = set()
    for hit, in_memory in ranked:
        (rest if hit.path in seen and not in_memory else firsts).append(hit)
        seen.add(hit.path)
    return (firsts + rest)[:limit]
