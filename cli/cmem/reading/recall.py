"""`cmem recall QUERY`: keyword (BM25) search of the whole vault, memory first (docs/design.md §8).

By default recall searches memory (the convergent layer) and every note outside it: the divergent
notes (a pending one is marked "not yet converged") and the notes no layer reads, an adopted
vault's own folders (`recall.include_unmanaged`, on unless turned off). The archive is searched
only when asked (`--archive`), and the result says which was searched. A line holding more of the
query's words ranks higher; at the same count memory's statements come first; each note's best
line comes before any note's second (`index_query.rank_hits`). Each result is a line with its
path, layer, line number, heading, score, a snippet with the matches marked `**…**`, the note's
title, and its source links. Reading a memory file's result records the file's read time, the
anti-recency term of `cmem context`'s ranking.

Most calls find the indexes already up to date: then `stored_recall` answers with sqlite3 and
`index_query` alone, without the vault model. The full path stores, with the listing
key of the searched files (`reading/stored_results.py`), the proof that the indexes matched the
notes; while that key holds, no note the indexes depend on changed, so they still match.
Both paths build their results and text with the functions below, so they print the same bytes.
The heavy imports (the vault model, the index's upkeep) are inside the functions for that reason.
"""

from __future__ import annotations

import re

from cmem.reading.index_query import (
    ARCHIVED,
    CONVERGENT,
    DIVERGENT_NOTE,
    NOTES,
    PENDING,
    TITLE_LINE,
    UNMANAGED,
    Hit,
    SyncReport,
    query_terms,
    rank_hits,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, for the annotations alone
if TYPE_CHECKING:
    from datetime import datetime

    from cmem.vault.layers import Vault

SNIPPET_CHARS = 160
MARK_OPEN, MARK_CLOSE = "**", "**"
VAULT = "vault"  # what a recall without --archive searched: memory, then the notes
MEMORY_LAYERS = ("resident", "situational", "convergent")


# Plain classes with slots: a call makes one per hit.
class RecallResult:
    __slots__ = ("hit", "snippet", "spans", "plain")

    def __init__(self, hit: Hit, snippet: str, spans: list[tuple[int, int]], plain: str):
        self.hit = hit
        self.snippet = snippet  # the matches wrapped in ** **
        self.spans = spans  # the same matches as offsets into `plain`
        self.plain = plain  # the snippet without marks

    def to_json(self) -> dict:
        hit = self.hit
        return {
            "path": hit.path,
            "score": hit.score,
            "snippet": self.snippet,
            "layer": hit.layer,
            "line": hit.line,  # 0: the note's title matched, not a line of it
            "title": note_title(hit.path),
            "heading": hit.heading,
            "text": hit.text,
            "answers": hit.context,  # in a conversation, the turn this line answers
            "matched": hit.matched,
            "sources": list(hit.sources),
            # a fact a pending note holds: not yet converged into memory
            "pending": hit.layer == PENDING,
        }


class Recall:
    __slots__ = ("query", "scope", "results", "sync", "problems")

    def __init__(
        self,
        query: str,
        scope: str,  # vault | archive
        results: list[RecallResult],
        sync: SyncReport,
        problems: list[str] | None = None,
    ):
        self.query = query
        self.scope = scope
        self.results = results
        self.sync = sync
        self.problems = [] if problems is None else problems

    def to_json(self) -> dict:
        return {
            "query": self.query,
            "searched": self.scope,
            "results": [r.to_json() for r in self.results],
            "index": self.sync.to_json(),
        }


def note_title(path: str) -> str:
    """A note's title as Obsidian shows it: its file name without `.md`."""
    name = path.rsplit("/", 1)[-1]
    return name[:-3] if name.endswith(".md") else name


def note_layer(pending: list[str] | set[str], divergent: list[str] | set[str]):
    """`layer_for` of the notes' index: pending, divergent (converged already) or unmanaged."""
    pending, divergent = set(pending), set(divergent)

    def layer_for(path: str) -> str:
        if path in pending:
            return PENDING
        return DIVERGENT_NOTE if path in divergent else UNMANAGED

    return layer_for


def recall_memory(
    vault: Vault,
    query: str,
    archive: bool = False,
    limit: int = 10,
    record: bool = True,
    now: datetime | None = None,
    rebuild: bool = False,
    progress=None,
) -> Recall:
    """Search the vault (memory, then notes) or, with `archive`, the archive. `progress(done,
    total)` hears how a first build of a big index goes."""
    from cmem.reading.read_times import record_reads
    from cmem.reading.search_index import delete_index, index_file, search_scope

    if not query_terms(query):
        from cmem.errors import UsageError

        raise UsageError(
            'nothing to search for: give words to recall, e.g. cmem recall 实习 or cmem recall "python tooling".'
        )
    scopes = (ARCHIVED,) if archive else (CONVERGENT, NOTES)
    if rebuild:
        for scope in scopes:
            delete_index(index_file(vault, scope))
    # the key is taken before the index is synced: see stored_results.begin
    pending = _begin_stored(vault, scopes[0])
    if archive:
        searched = search_scope(vault, ARCHIVED, query, limit, progress=progress)
        hits, problems, sync = rank_hits([], searched.hits, limit), searched.problems, searched.sync
        payload: dict = {"index": str(index_file(vault, ARCHIVED))}
    else:
        memory = search_scope(vault, CONVERGENT, query, limit, progress=progress)
        waiting, divergent = _divergent_notes(vault)
        notes = search_scope(
            vault, NOTES, query, limit, None, note_layer(waiting, divergent), progress
        )
        hits = rank_hits(memory.hits, notes.hits, limit)
        problems, sync = memory.problems + notes.problems, _together(memory.sync, notes.sync)
        payload = {
            "index": str(index_file(vault, CONVERGENT)),
            "notes_index": str(index_file(vault, NOTES)),
            "layers": (vault.config.resident_dir, vault.config.situational_dir),
            "pending": waiting,
            "divergent": divergent,
        }
    if pending is not None and not problems:
        from cmem.reading import stored_results

        stored_results.store(pending, {**payload, "files": sync.files, "rows": sync.rows})
    terms = query_terms(query)
    results = [_result(hit, terms) for hit in hits]
    if record and not archive:
        memory_paths = [r.hit.path for r in results if r.hit.layer in MEMORY_LAYERS]
        record_reads(vault, list(dict.fromkeys(memory_paths)), now)
    return Recall(query, ARCHIVED if archive else VAULT, results, sync, problems)


def _divergent_notes(vault: Vault) -> tuple[list[str], list[str]]:
    """(the pending notes, every divergent note): the notes' index marks them apart."""
    from cmem.scan.scanner import scan_vault
    from cmem.vault.layers import DIVERGENT

    waiting = sorted(p.rel for p in scan_vault(vault).pending)
    return waiting, sorted(f.rel for f in vault.list_layer(DIVERGENT))


def _together(memory: SyncReport, notes: SyncReport) -> SyncReport:
    """One report of the two indexes a recall of the vault kept fresh."""
    return SyncReport(
        VAULT,
        memory.files + notes.files,
        memory.rows + notes.rows,
        memory.added + notes.added,
        memory.updated + notes.updated,
        memory.removed + notes.removed,
        memory.rebuilt or notes.rebuilt,
        memory.listed or notes.listed,
        memory.seconds + notes.seconds,
    )


def _begin_stored(vault: Vault, scope: str) -> dict | None:
    """The listing key of what the searched indexes depend on, or None where the stored answer
    would not be the same: nested layer folders or `ignore` patterns make a hit's layer more
    than a prefix test."""
    from cmem.reading import stored_results

    config = vault.config
    if vault._layers_nest or config.ignore:
        return None
    if scope == ARCHIVED:  # archived notes by folder mtimes, as `status` keys them
        tops, folder_only = (config.archive_dir,), [config.archive_dir]
    else:
        # every note one by one (an edit in place must reach the index, and which notes are
        # pending changes with them), the archive by its folders
        tops, folder_only = ("",), [config.archive_dir]
    # Obsidian's settings name the templates folder, which recall leaves out
    settings = tuple(
        str(vault.root / ".obsidian" / name)
        for name in ("templates.json", "plugins/templater-obsidian/data.json")
    )
    return stored_results.begin(
        vault,
        "recall",
        (ARCHIVED if scope == ARCHIVED else VAULT,),
        settings,
        tops=tops,
        folder_only=folder_only,
    )


def stored_recall(vault, query: str, archive: bool, limit: int) -> Recall | None:
    """`cmem recall` for the vault `vault` names (None: the current folder's), answered from the
    indexes while the stored proof of their freshness still holds; None: `recall_memory` runs."""
    import sqlite3
    import time

    from cmem.reading import stored_results

    started = time.perf_counter()
    if not query_terms(query):
        return None  # recall_memory explains
    scope = ARCHIVED if archive else VAULT
    root = stored_results.find_root(None if vault is None else str(vault))
    entry = None if root is None else stored_results.valid_entry(root, "recall", (scope,))
    if entry is None:
        return None
    payload = entry["payload"]
    try:
        hits = _stored_hits(payload, query, archive, limit)
    except sqlite3.Error:  # an index deleted or damaged: `recall_memory` rebuilds it
        return None
    terms = query_terms(query)
    results = [_result(hit, terms) for hit in hits]
    if not archive:
        from datetime import datetime

        # read_times.record_reads_in's work, with the machine folder alone
        from cmem.reading.stored_context import record_reads

        paths = list(dict.fromkeys(r.hit.path for r in results if r.hit.layer in MEMORY_LAYERS))
        record_reads(entry["machine_dir"], paths, datetime.now().astimezone())
    sync = SyncReport(scope, payload["files"], payload["rows"], listed=False)
    sync.seconds = time.perf_counter() - started
    return Recall(query, scope, results, sync)


def _stored_hits(payload: dict, query: str, archive: bool, limit: int) -> list[Hit]:
    """The ranked hits from the stored indexes, memory first (`rank_hits`)."""
    if archive:
        return rank_hits(
            [], _search_file(payload["index"], query, limit, lambda p: "archive"), limit
        )
    resident, situational = payload["layers"]

    def memory_layer(path: str) -> str:  # Vault.layer_of for a path the index holds
        if path.startswith(resident + "/"):
            return "resident"
        return "situational" if path.startswith(situational + "/") else "convergent"

    memory = _search_file(payload["index"], query, limit, memory_layer)
    layer_for = note_layer(payload["pending"], payload["divergent"])
    return rank_hits(memory, _search_file(payload["notes_index"], query, limit, layer_for), limit)


def _search_file(path: str, query: str, limit: int, layer_for) -> list[Hit]:
    """`search_rows` on an index database opened read only: a missing or damaged one is
    `recall_memory`'s to rebuild (sqlite3's error says so to `stored_recall`)."""
    import sqlite3

    from cmem.reading.index_query import search_rows

    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        return search_rows(db, query, limit, None, layer_for)
    finally:
        db.close()


def match_spans(text: str, terms: list[str]) -> list[tuple[int, int]]:
    """Where the query's terms occur in `text`: CJK terms as substrings, words at a word start
    (so `interview` marks `interviews`, which the stemmed index matched)."""
    spans = []
    folded = text.lower()
    for term in terms:
        if not term:
            continue
        if term.isascii():
            stem = term[:-1] if len(term) > 4 and term.endswith("s") else term
            pattern = re.compile(r"(?<![^\W_])" + re.escape(stem) + r"[^\W_]*")
        else:
            pattern = re.compile(re.escape(term))
        spans += [(m.start(), m.end()) for m in pattern.finditer(folded)]
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _without_sources(text: str) -> str:
    """The statement as a snippet shows it: its sources are listed apart."""
    if "[[" not in text:  # every source names its notes as [[links]]: none to strip
        return text.strip()
    from cmem.vault.statements import find_sources, find_traces

    traces = [(t.start, t.end) for t in find_traces(text)]
    for start, end, _names in reversed(find_sources(text)):
        if not any(s <= start and end <= e for s, e in traces):
            text = text[:start] + text[end:]
    return text.strip()


def _current_end(text: str) -> int:
    """Where the statement's current wording ends: at its first trace (or the text's end)."""
    if "(" not in text and "（" not in text:
        return len(text)
    from cmem.vault.statements import find_traces

    traces = find_traces(text)
    return min((t.start for t in traces), default=len(text))


def _result(hit: Hit, terms: list[str]) -> RecallResult:
    from cmem.text.secrets import redact_secrets

    # what recall returns goes to a terminal or an agent: a credential in memory is shown redacted
    hit = hit._replace(text=redact_secrets(hit.text)[0])
    text = _without_sources(hit.text)
    spans = match_spans(text, terms)
    start, end = 0, len(text)
    if len(text) > SNIPPET_CHARS:
        first = spans[0][0] if spans else 0
        # a snippet starts in the statement itself, never inside a trace: shown alone, an old
        # wording reads as the current one
        first = min(first, _current_end(text))
        start = max(0, min(first - SNIPPET_CHARS // 3, len(text) - SNIPPET_CHARS))
        start = min(start, _current_end(text))
        end = start + SNIPPET_CHARS
    plain = ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")
    shift = 1 if start else 0
    shown = [
        (max(s, start) - start + shift, min(e, end) - start + shift)
        for s, e in spans
        if e > start and s < end
    ]
    marked, position = [], 0
    for s, e in shown:
        marked += [plain[position:s], MARK_OPEN, plain[s:e], MARK_CLOSE]
        position = e
    marked.append(plain[position:])
    return RecallResult(hit, "".join(marked), shown, plain)


LAYER_NAMES = {
    PENDING: "pending note, not yet converged",
    DIVERGENT_NOTE: "divergent note",
    UNMANAGED: "note",
}
ANSWERS_CHARS = 80


def render_recall(recall: Recall) -> str:
    """Text for people: one block per result, matches painted (bold yellow on a terminal)."""
    from cmem.render.reports import paint

    where = (
        "the archive"
        if recall.scope == ARCHIVED
        else "memory and notes (add --archive to search archived notes)"
    )
    if not recall.results:
        return f"nothing matches “{recall.query}” in {where}"
    count = len(recall.results)
    out = [
        paint(f"{count} result{'s' if count != 1 else ''} for “{recall.query}” in {where}", "bold")
    ]
    out.append("")
    for result in recall.results:
        hit = result.hit
        title = hit.line == TITLE_LINE
        where_in = " · title" if title else f" · {hit.heading}" if hit.heading else ""
        layer = LAYER_NAMES.get(hit.layer, hit.layer)
        out.append(
            paint(hit.path if title else f"{hit.path}:{hit.line}", "cyan")
            + paint(f"  [{layer}{where_in}] score {hit.score:.2f}", "dim")
        )
        if hit.context:
            asked = (
                hit.context
                if len(hit.context) <= ANSWERS_CHARS
                else "…" + hit.context[-ANSWERS_CHARS:]
            )
            out.append(paint(f"  answering: {asked}", "dim"))
        text, position, pieces = result.plain, 0, []
        for start, end in result.spans:
            pieces += [text[position:start], paint(text[start:end], "bold", "yellow")]
            position = end
        pieces.append(text[position:])
        out.append("  " + "".join(pieces))
        if hit.sources:
            out.append(paint("  sources: " + ", ".join(f"[[{s}]]" for s in hit.sources), "dim"))
    return "\n".join(out)
