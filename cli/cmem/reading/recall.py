"""`cmem recall QUERY`: BM25 keyword search of the memory (SPEC §8).

The convergent layer by default; the archive only when asked (`--archive`), and the result says
which was searched. Each result is a statement with its path, layer, line, heading, score, a
snippet with the matches marked `**…**`, and its source links. Reading a result records the
file's read time, the anti-recency term of `cmem context`'s ranking.

Most calls find the index already up to date: then `stored_recall` answers from the light entry
path (`cmem.fast`) with sqlite3 and `index_query` alone. The full path stores, with the listing
key of the searched layer (`reading/stored_results.py`), the proof that the index matched the
notes; while that key holds, no note the index depends on changed, so the index still matches.
Both paths build their results and text with the functions below, so they print the same bytes.
The heavy imports (the vault model, the index's upkeep) are inside the functions for that reason.
"""

from __future__ import annotations

import re

from cmem.reading.index_query import ARCHIVED, CONVERGENT, PENDING, Hit, SyncReport, query_terms

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on the light path
if TYPE_CHECKING:
    from datetime import datetime

    from cmem.vault.layers import Vault

SNIPPET_CHARS = 160
MARK_OPEN, MARK_CLOSE = "**", "**"


# Plain classes, not dataclasses: `dataclasses` imports `inspect`, which the light path would pay
# on every call for nothing.
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
            "line": hit.line,
            "heading": hit.heading,
            "text": hit.text,
            "sources": list(hit.sources),
            # a fact a pending note holds: not yet converged into memory
            "pending": hit.layer == PENDING,
        }


class Recall:
    __slots__ = ("query", "scope", "results", "sync", "problems")

    def __init__(
        self,
        query: str,
        scope: str,  # convergent | archive
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


def recall_memory(
    vault: Vault,
    query: str,
    archive: bool = False,
    limit: int = 10,
    record: bool = True,
    now: datetime | None = None,
    rebuild: bool = False,
) -> Recall:
    from cmem.reading.read_times import record_reads
    from cmem.reading.search_index import delete_index, index_file, search_scope

    if not query_terms(query):
        from cmem.errors import UsageError

        raise UsageError(
            'nothing to search for: give words to recall, e.g. cmem recall 实习 or cmem recall "python tooling".'
        )
    scope = ARCHIVED if archive else CONVERGENT
    if rebuild:
        delete_index(index_file(vault, scope))
    pending = _begin_stored(vault, scope)  # before the index is synced: see stored_results.begin
    searched = search_scope(vault, scope, query, limit)
    hits, problems = list(searched.hits), list(searched.problems)
    if scope == CONVERGENT and vault.config.recall_unmanaged:
        # recall.include_unmanaged: the notes no layer reads, from an index of their own, merged by
        # score (the same tokenizer and weights; each index has its own word statistics)
        from cmem.reading.search_index import UNMANAGED

        other = search_scope(vault, UNMANAGED, query, limit)
        hits = sorted(hits + other.hits, key=lambda h: -h.score)[:limit]
        problems += other.problems
    waiting: list[str] = []
    if scope == CONVERGENT:
        # what waits in pending notes: found too, marked as not yet converged (SPEC §2)
        from cmem.scan.scanner import scan_vault

        waiting = sorted(p.rel for p in scan_vault(vault).pending)
        if waiting:
            other = search_scope(vault, PENDING, query, limit, waiting)
            hits = merge_hits(hits, other.hits, limit)
            problems += other.problems
    if pending is not None and not problems:
        from cmem.reading import stored_results

        report = searched.sync
        stored_results.store(
            pending,
            {
                "index": str(index_file(vault, scope)),
                "files": report.files,
                "rows": report.rows,
                "layers": (vault.config.resident_dir, vault.config.situational_dir),
                "pending": {"index": str(index_file(vault, PENDING)), "notes": waiting},
            },
        )
    terms = query_terms(query)
    results = [_result(hit, terms) for hit in hits]
    if record and scope == CONVERGENT:
        record_reads(
            vault,
            list(
                dict.fromkeys(
                    r.hit.path for r in results if r.hit.layer not in ("unmanaged", PENDING)
                )
            ),
            now,
        )
    return Recall(query, scope, results, searched.sync, problems)


def _begin_stored(vault: Vault, scope: str) -> dict | None:
    """The listing key of what the scope's index depends on, or None where the light path would
    not give the same answer: the unmanaged notes are anywhere in the vault, and nested layer
    folders or `ignore` patterns make a hit's layer more than a prefix test."""
    from cmem.reading import stored_results

    config = vault.config
    if vault._layers_nest or config.ignore or (scope == CONVERGENT and config.recall_unmanaged):
        return None
    if scope == ARCHIVED:  # archived notes by folder mtimes, as `status` keys them
        tops, folder_only = (config.archive_dir,), [config.archive_dir]
    else:
        # memory files and notes one by one (an edit in place must reach the index, and which
        # notes are pending changes with them), the archive by its folders
        tops, folder_only = ("",), [config.archive_dir]
    return stored_results.begin(vault, "recall", (scope,), tops=tops, folder_only=folder_only)


def stored_recall(request: dict) -> str | None:
    """What `cmem recall` prints, answered from the index while the stored proof of its freshness
    still holds (None: the full command runs). `request` as `cmem.fast.parse_recall` makes it."""
    import sqlite3
    import time

    from cmem.reading import stored_results
    from cmem.reading.index_query import search_rows

    started = time.perf_counter()
    query = " ".join(request["query"])
    if not query_terms(query):
        return None  # the full command explains
    scope = ARCHIVED if request["archive"] else CONVERGENT
    root = stored_results.find_root(request["vault"])
    if root is None:
        return None
    entry = stored_results.valid_entry(root, "recall", (scope,))
    if entry is None:
        return None
    payload = entry["payload"]
    resident, situational = payload["layers"]

    def layer_for(path: str) -> str:  # Vault.layer_of for a path the index holds
        if scope == ARCHIVED:
            return "archive"
        if path.startswith(resident + "/"):
            return "resident"
        return "situational" if path.startswith(situational + "/") else "convergent"

    # read only: a missing or damaged database is the full command's to rebuild
    db = sqlite3.connect(f"file:{payload['index']}?mode=ro", uri=True, timeout=10)
    try:
        hits = search_rows(db, query, request["limit"], None, layer_for)
    finally:
        db.close()
    waiting = (payload.get("pending") or {}).get("notes") or []
    if scope == CONVERGENT and waiting:
        db = sqlite3.connect(f"file:{payload['pending']['index']}?mode=ro", uri=True, timeout=10)
        try:
            found = search_rows(db, query, request["limit"], waiting, lambda path: PENDING)
        finally:
            db.close()
        hits = merge_hits(hits, found, request["limit"])
    terms = query_terms(query)
    results = [_result(hit, terms) for hit in hits]
    if scope == CONVERGENT:
        from datetime import datetime

        # read_times.record_reads_in's work, without its imports (pathlib, typing)
        from cmem.reading.stored_context import record_reads

        paths = list(dict.fromkeys(r.hit.path for r in results if r.hit.layer != PENDING))
        record_reads(entry["machine_dir"], paths, datetime.now().astimezone())
    sync = SyncReport(scope, payload["files"], payload["rows"], listed=False)
    sync.seconds = time.perf_counter() - started
    recall = Recall(query, scope, results, sync)
    if request["json"]:
        import json

        return json.dumps(recall.to_json(), ensure_ascii=False, indent=2) + "\n"
    if request["no_color"]:
        from cmem.render.reports import set_color

        set_color(False)
    return render_recall(recall) + "\n"


def merge_hits(memory: list[Hit], waiting: list[Hit], limit: int) -> list[Hit]:
    """Memory's hits first, then the pending notes' (their scores come from another index, so
    they are not ranked against memory): a quarter of the places, at least one, are kept for
    what waits, and any place memory leaves."""
    if not waiting:
        return memory[:limit]
    kept = min(len(waiting), max(limit - len(memory), max(1, limit // 4)))
    return [*memory[: limit - kept], *waiting[:kept]]


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


def render_recall(recall: Recall) -> str:
    """Text for people: one block per result, matches painted (bold yellow on a terminal)."""
    from cmem.render.reports import paint

    where = (
        "the archive"
        if recall.scope == ARCHIVED
        else "the convergent layer (add --archive to search archived notes)"
    )
    if recall.scope != ARCHIVED and any(r.hit.layer == "unmanaged" for r in recall.results):
        where = "the convergent layer and the notes no layer reads (recall.include_unmanaged)"
    if recall.scope != ARCHIVED and any(r.hit.layer == PENDING for r in recall.results):
        where = where.replace("the convergent layer", "the convergent layer and the pending notes")
    if not recall.results:
        where = where.replace("the convergent layer", "the convergent layer or the pending notes")
        return f"no statement matches “{recall.query}” in {where}"
    out = [
        paint(
            f"{len(recall.results)} result{'s' if len(recall.results) != 1 else ''} for “{recall.query}” in {where}",
            "bold",
        ),
        "",
    ]
    for result in recall.results:
        hit = result.hit
        heading = f" · {hit.heading}" if hit.heading else ""
        layer = "pending note, not yet converged" if hit.layer == PENDING else hit.layer
        out.append(
            paint(f"{hit.path}:{hit.line}", "cyan")
            + paint(f"  [{layer}{heading}] score {hit.score:.2f}", "dim")
        )
        text, position, pieces = result.plain, 0, []
        for start, end in result.spans:
            pieces += [text[position:start], paint(text[start:end], "bold", "yellow")]
            position = end
        pieces.append(text[position:])
        out.append("  " + "".join(pieces))
        if hit.sources:
            out.append(paint("  sources: " + ", ".join(f"[[{s}]]" for s in hit.sources), "dim"))
    return "\n".join(out)
