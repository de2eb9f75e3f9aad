"""`cmem context`: the session-start bundle an agent reads (docs/design.md §8, after seed 003's
reading rules).

The whole resident sublayer; the situational files that match the topic; an index of every
situational file; the pending divergent notes and their signals. Never the archive. When the
convergent layer fits the budget it is all included; over budget, situational files are ranked
by `importance + min(days_since_last_read/30, 5) + uniform(0, 0.5)`, the jitter seeded by the
date and path so the same day gives the same bundle.
"""

from __future__ import annotations

from datetime import datetime

from cmem.cache_store import Kept, KeptByDigest, digest
from cmem.errors import CmemError
from cmem.reading.read_times import load_read_times, record_reads
from cmem.reading.start_memory import memory_facts
from cmem.reading.stored_context import (  # noqa: F401 (re-exported: the bundle's own names)
    END_MARKER,
    MATERIAL_FORMAT,
    MAX_LISTED_OMITTED,
    MAX_PENDING_NOTES,
    MAX_SIGNALS_PER_NOTE,
    Context,
    ContextFile,
    _fit_index,
    _index_line,
    _matches,
    assemble,
    rank_score,
    render_context_markdown,
    stored_material,
    topic_terms,
    wide_count,
)
from cmem.text.tokens import estimate_tokens, wide_chars
from cmem.vault.layers import RESIDENT, SITUATIONAL, Vault
from cmem.vault.notes import read_note

META_CACHE = "context-meta.marshal"


def _load(
    vault: Vault,
    layer: str,
    problems: list[str],
    hidden: list[int],
    memo: KeptByDigest | None = None,
) -> list[tuple]:
    """The layer's files as the bundle sees them: (path, redacted text, summary, importance, tags,
    aliases, tokens, CJK-wide counts of text, path and summary, the text's length as shown) each. What a file's text gives — summary, importance, tags, tokens — is taken from
    `memo` (keyed by a digest of the text, so an edit is a new key) when there: the frontmatter's
    YAML and the token count were most of a warm `context`."""
    from cmem.text.secrets import redact_many

    files = []
    for note_file in vault.list_layer(layer):
        note = read_note(note_file, vault.config.max_note_bytes)
        if not note.usable:
            problems.append(f"{note.rel} {note.skip_reason}")
            continue
        key = digest(note.text)
        known = memo.get(key, "meta") if memo is not None else None
        if not (isinstance(known, tuple) and len(known) == 5):
            known = (*memory_facts(note.meta), estimate_tokens(note.text))
            if memo is not None:
                memo.put(key, "meta", known)
        summary, importance, tags, aliases, tokens = known
        files.append((note.rel, note.text, summary, importance, list(tags), list(aliases), tokens))
    # An agent is a model too: a credential in a memory file reaches it redacted, as in a prompt
    # (all files in one pass: the fixed cost per pass is what a thousand files would pay)
    contents, count = redact_many([row[1] for row in files])
    hidden[0] += count
    return [
        (
            *row[:1],
            content,
            *row[2:],
            (wide_chars(content), wide_count(row[0]), wide_count(row[2])),
            len(content.rstrip("\n")),  # as the bundle shows it (stored_context._body)
        )
        for row, content in zip(files, contents)
    ]


def gather_material(vault: Vault) -> dict:
    """Everything the bundle takes from the vault's files, nothing that depends on the clock or
    on read times (those are `assemble`'s): kept by the full command as a stored result, so a
    warm call answers from it without reading a note (cmem.reading.stored_context)."""
    from cmem.scan.scanner import scan_vault
    from cmem.text.secrets import redact_data, shown

    problems: list[str] = []
    hidden = [0]
    memo = KeptByDigest(Kept(vault.machine_dir / META_CACHE, "context-meta"))
    resident = _load(vault, RESIDENT, problems, hidden, memo)
    situational = _load(vault, SITUATIONAL, problems, hidden, memo)
    memo.save()

    scan = scan_vault(vault)
    # docs/design.md §1: an odd note (BOM, CRLF, undecodable, empty, a conflict copy…) is named once
    problems += [
        f"{odd.rel} {odd.message}"
        for odd in scan.odd
        if not any(p.startswith(odd.rel + " ") for p in problems)
    ]
    # A bundle is read at every session start: pending notes are listed up to a few, the rest
    # are counted (`cmem scan` has them all).
    pending, count = redact_data(
        [
            {
                "note": p.rel,
                "signals": [s.to_json() for s in p.signals[:MAX_SIGNALS_PER_NOTE]],
                "signals_total": len(p.signals),
            }
            for p in scan.pending[:MAX_PENDING_NOTES]
        ]
    )
    hidden[0] += count
    resident_tokens = sum(row[6] for row in resident)
    if resident_tokens > vault.config.resident_max_tokens:
        problems.append(
            f"the resident sublayer ({vault.config.resident_dir}/) is {resident_tokens} tokens, over resident_max_tokens "
            f"({vault.config.resident_max_tokens}); it is always included whole, so the bundle may pass its budget — compress it"
        )
    return {
        "format": MATERIAL_FORMAT,
        "resident": resident,
        "situational": situational,
        "pending": pending,
        "pending_total": len(scan.pending),
        "problems": [shown(problem) for problem in problems],  # the command warns of them as kept
        "redacted": hidden[0],
        "budget_tokens": vault.config.budget_tokens,
    }


def build_context(
    vault: Vault,
    topic: str | None = None,
    budget: int | None = None,
    now: datetime | None = None,
    record: bool = True,
    keep: bool = False,
) -> Context:
    """The bundle. `keep`: store the material for the next call (`cmem context` does; the key is
    taken before the vault is read, so a note changed meanwhile leaves a key that no longer
    matches)."""
    now = now or datetime.now().astimezone()
    pending = None
    if keep:
        from cmem.reading import stored_results

        pending = stored_results.begin(vault, "context", ())
    material = gather_material(vault)
    if keep:
        stored_results.store(pending, *stored_material(material))
    context = assemble(material, topic, budget, load_read_times(vault), now)
    if topic and context.omitted:
        add_topic_excerpts(vault, context, topic)
    if record:
        record_reads(vault, [f.path for f in context.resident + context.situational], now)
    return context


def add_topic_excerpts(vault: Vault, context: Context, topic: str) -> None:
    """Fill the space the budget leaves with the topic's best statements from the files left out
    (from the full-text index), best first, and never past the budget."""
    from cmem.reading.search_index import CONVERGENT, search_scope
    from cmem.text.secrets import redact_secrets, shown

    try:
        hits = search_scope(vault, CONVERGENT, topic, 200, [f.path for f in context.omitted]).hits
    except CmemError as exc:  # no FTS5, an unusable index: the bundle still works without excerpts
        context.problems.append(shown(f"no topic excerpts: {exc}"))
        return

    free = context.budget - context.tokens
    for hit in hits:
        if not hit.line:  # a file's title row: its statements are what an excerpt quotes
            continue
        text, count = redact_secrets(hit.text)
        excerpt = {
            "path": hit.path,
            "line": hit.line,
            "heading": hit.heading,
            "text": text,
            "score": hit.score,
        }
        cost = estimate_tokens(f"- {hit.path}:{hit.line} · {hit.heading} — {text}\n") + (
            12 if not context.excerpts else 0
        )
        if cost > free:
            continue
        context.excerpts.append(excerpt)
        context.redacted += count
        free -= cost
    while context.excerpts and context.tokens > context.budget:
        context.excerpts.pop()
