"""`cmem recall QUERY`: BM25 keyword search of the memory (SPEC §8).

The convergent layer by default; the archive only when asked (`--archive`), and the result says
which was searched. Each result is a statement with its path, layer, line, heading, score, a
snippet with the matches marked `**…**`, and its source links. Reading a result records the
file's read time, the anti-recency term of `cmem context`'s ranking.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from cmem.errors import UsageError
from cmem.reading.read_times import record_reads
from cmem.reading.search_index import (
    ARCHIVED,
    CONVERGENT,
    Hit,
    SyncReport,
    delete_index,
    index_file,
    query_terms,
    search_scope,
)
from cmem.vault.layers import Vault

SNIPPET_CHARS = 160
MARK_OPEN, MARK_CLOSE = "**", "**"


@dataclass
class RecallResult:
    hit: Hit
    snippet: str  # the matches wrapped in ** **
    spans: list[tuple[int, int]]  # the same matches as offsets into `plain`
    plain: str  # the snippet without marks

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
        }


@dataclass
class Recall:
    query: str
    scope: str  # convergent | archive
    results: list[RecallResult]
    sync: SyncReport
    problems: list[str] = field(default_factory=list)

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
    if not query_terms(query):
        raise UsageError(
            'nothing to search for: give words to recall, e.g. cmem recall 实习 or cmem recall "python tooling".'
        )
    scope = ARCHIVED if archive else CONVERGENT
    if rebuild:
        delete_index(index_file(vault, scope))
    searched = search_scope(vault, scope, query, limit)
    hits, problems = list(searched.hits), list(searched.problems)
    if scope == CONVERGENT and vault.config.recall_unmanaged:
        # recall.include_unmanaged: the notes no layer reads, from an index of their own, merged by
        # score (the same tokenizer and weights; each index has its own word statistics)
        from cmem.reading.search_index import UNMANAGED

        other = search_scope(vault, UNMANAGED, query, limit)
        hits = sorted(hits + other.hits, key=lambda h: -h.score)[:limit]
        problems += other.problems
    terms = query_terms(query)
    results = [_result(hit, terms) for hit in hits]
    if record and scope == CONVERGENT:
        record_reads(
            vault,
            list(dict.fromkeys(r.hit.path for r in results if r.hit.layer != "unmanaged")),
            now,
        )
    return Recall(query, scope, results, searched.sync, problems)


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
    from cmem.vault.statements import find_sources, find_traces

    traces = [(t.start, t.end) for t in find_traces(text)]
    for start, end, _names in reversed(find_sources(text)):
        if not any(s <= start and end <= e for s, e in traces):
            text = text[:start] + text[end:]
    return text.strip()


def _result(hit: Hit, terms: list[str]) -> RecallResult:
    import dataclasses

    from cmem.text.secrets import redact_secrets

    # what recall returns goes to a terminal or an agent: a credential in memory is shown redacted
    hit = dataclasses.replace(hit, text=redact_secrets(hit.text)[0])
    text = _without_sources(hit.text)
    spans = match_spans(text, terms)
    start, end = 0, len(text)
    if len(text) > SNIPPET_CHARS:
        first = spans[0][0] if spans else 0
        start = max(0, min(first - SNIPPET_CHARS // 3, len(text) - SNIPPET_CHARS))
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
    if not recall.results:
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
        out.append(
            paint(f"{hit.path}:{hit.line}", "cyan")
            + paint(f"  [{hit.layer}{heading}] score {hit.score:.2f}", "dim")
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
