"""No signal is lost (docs/design.md §4): after a pass, where did each signal line of a converged note go?

A note marked converged leaves the pending queue, so a signal line the engine did not carry into
memory would vanish silently (the uv → poetry case of issue 12). This module looks for every
signal line of every converged note in the convergent layer as the pass leaves it:

- **statement**: a statement citing the note shares enough of the line's content words (an
  engine may strip cue words, resolve dates or summarise, so equality is too strict);
- **trace**: an evolution trace anywhere quotes enough of it (a later line of the same pass
  changed it again);
- **deferred**: the engine itself deferred the line, with its reason (`deferred_by_engine`):
  that reason is its account, and the pass names it once;
- **pending**: neither. The pipeline then leaves that line out of the note's converged lines,
  so it stays pending and `cmem scan` shows it, and the pass summary names it.

It reads words, not meaning: a model that translates a line into another language is not seen
as covering it, and the line simply waits for another pass — a false alarm, never a loss.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from cmem.converge.builtin.line_words import quote_line, terms
from cmem.converge.builtin.phrasing import statement_text
from cmem.converge.selection import SelectedNote
from cmem.scan.recurrence import phrase_keys
from cmem.scan.signals import Signal
from cmem.vault.config import Formats
from cmem.vault.notes import note_date, split_frontmatter
from cmem.vault.statements import Trace, may_hold_traces, parse_statements

STATEMENT, TRACE, PENDING = "statement", "trace", "pending"
DEFERRED = "deferred"  # the engine deferred it, with its reason: one account, not a loss


@dataclass(frozen=True)
class LineFate:
    note: str  # vault-relative path
    line: int
    cls: str
    where: str  # statement | trace | pending
    file: str = ""  # the convergent file holding it

    def to_json(self) -> dict:
        return {
            "note": self.note,
            "line": self.line,
            "class": self.cls,
            "where": self.where,
            "file": self.file,
        }


@dataclass(frozen=True)
class _Held:
    file: str
    words: frozenset[str]
    sources: frozenset[str]
    history: frozenset[str] = (
        frozenset()
    )  # with the words of its traces: a rewrite splits a line's words between them
    keys: frozenset[str] = frozenset()  # its recurrence key phrases (recurrence.phrase_keys)


def _layer(files: dict[str, str], formats: Formats) -> tuple[list[_Held], list[_Held]]:
    """(statements, traces) of the whole layer, as content words."""
    statements, traces = [], []
    for rel, text in sorted(files.items()):
        _, start, _ = split_frontmatter(text)
        body = "\n".join(text.split("\n")[start - 1 :])
        for statement in parse_statements(body, start, formats):
            history = set(terms(statement.core))
            pending: list[Trace] = list(statement.traces)
            while pending:
                trace = pending.pop()
                traces.append(_Held(rel, terms(trace.old), frozenset()))
                history |= terms(trace.old)
                pending.extend(trace.older)
            keys = frozenset(phrase_keys(statement.core.lower()))
            statements.append(
                _Held(
                    rel,
                    terms(statement.core),
                    frozenset(statement.sources),
                    frozenset(history),
                    keys,
                )
            )
    return statements, traces


def _share(line: frozenset[str], held: frozenset[str], fraction: float) -> bool:
    if not line:
        return False
    return len(line & held) >= max(1.0, fraction * len(line))


def line_fates(
    notes: list[SelectedNote], converged: list[str], layer: dict[str, str], formats: Formats
) -> list[LineFate]:
    """The fate of each signal line (one per line) of each converged note. `layer` maps every
    convergent file to its text after the pass."""
    # Only two kinds of file can hold a line's fate: one citing a converged note (a source is
    # a wikilink, `[[name]]`) and one holding a trace. Reading the others (most of a large
    # layer, although the pass touched one file) would find nothing, so they are not parsed.
    names = [re.escape(note.name.strip()) for note in notes if note.rel in converged]
    cites = re.compile(r"\[\[\s*(?:" + "|".join(names) + r")\s*[\]|#]") if names else None
    relevant = {
        rel: text
        for rel, text in layer.items()
        if (cites is not None and cites.search(text)) or may_hold_traces(text, formats)
    }
    statements, traces = _layer(relevant, formats)
    fates = []
    for note in notes:
        if note.rel not in converged:
            continue
        cited = [h for h in statements if note.name in h.sources]
        seen: set[int] = set()
        for signal in sorted(note.signals, key=lambda s: (s.line, s.priority)):
            if signal.line in seen:
                continue
            seen.add(signal.line)
            where, file = _place_of(note, signal, cited, traces)
            fates.append(LineFate(note.rel, signal.line, signal.cls, where, file))
    return fates


def _place_of(
    note: SelectedNote, signal: Signal, cited: list[_Held], traces: list[_Held]
) -> tuple[str, str]:
    """Where one signal line of a converged note went, and the file holding it: `cited` are the
    statements citing the note, `traces` every trace of the layer."""
    raw = note.lines[signal.line - 1] if 0 < signal.line <= len(note.lines) else signal.excerpt
    quoted = quote_line(raw, set())
    words = terms(quoted)
    # the words as the builtin engine restates them ("last month" → "since 2026-10")
    restated = terms(statement_text(quoted, note_date(note.name, date(2000, 1, 1))))
    where, file = PENDING, ""
    if not words and cited:
        where, file = STATEMENT, cited[0].file  # nothing to compare: the note is cited
    else:
        # a statement keeps the subject and drops cue words, hedges and the old side
        # ("from uv", "not Lisbon"): a third of the words will do; a trace must quote half.
        # The better of the two wins: a line a later line changed again is in its trace.
        best_statement = max(cited, key=lambda h: len(words & h.words), default=None)
        best_trace = max(
            traces,
            key=lambda h: max(len(words & h.words), len(restated & h.words)),
            default=None,
        )
        in_statement = (
            len(words & best_statement.words)
            if best_statement and _share(words, best_statement.words, 1 / 3)
            else 0
        )
        in_trace = 0
        if best_trace and (
            _share(words, best_trace.words, 1 / 2) or _share(restated, best_trace.words, 1 / 2)
        ):
            in_trace = max(len(words & best_trace.words), len(restated & best_trace.words))
        if best_statement and in_statement and in_statement >= in_trace:
            where, file = STATEMENT, best_statement.file
        elif best_trace and in_trace:
            where, file = TRACE, best_trace.file
        else:
            # restated, or a correction whose new side is in the statement and old side
            # in its trace ("不是北京，是深圳" → "在找深圳后端实习（…原为：在找北京后端实习）")
            hit = next(
                (
                    h
                    for h in cited
                    if _share(restated, h.words, 1 / 3) or _share(words, h.history, 1 / 2)
                ),
                None,
            )
            if hit is None and signal.cls == "recurring":
                # an event merged into its pattern shares the key phrase the scanner counted
                keys = set(phrase_keys(quoted.lower()))
                hit = next((h for h in cited if keys & h.keys), None)
            if hit is not None:
                where, file = STATEMENT, hit.file
    return where, file


def summary(fates: list[LineFate]) -> str:
    """One line for the pass report: how many signal lines went where."""
    return "signal lines: " + where_lines_went(fates)


def where_lines_went(fates: list[LineFate]) -> str:
    """ "2 in statements, 1 in traces" (and how many were left pending, if any)."""
    counts = {STATEMENT: 0, TRACE: 0, DEFERRED: 0, PENDING: 0}
    for fate in fates:
        counts[fate.where] += 1
    parts = [f"{counts[STATEMENT]} in statements", f"{counts[TRACE]} in traces"]
    if counts[DEFERRED]:
        parts.append(f"{counts[DEFERRED]} deferred")
    if counts[PENDING]:
        parts.append(f"{counts[PENDING]} left pending")
    return ", ".join(parts)


def deferred_by_engine(fates: list[LineFate], deferred: dict[str, set[int]]) -> list[LineFate]:
    """The fates with each line the engine deferred (`deferred`: note → its lines) marked so:
    its reason is its account, never a second one saying it was placed nowhere."""
    return [
        LineFate(f.note, f.line, f.cls, DEFERRED) if f.line in deferred.get(f.note, ()) else f
        for f in fates
    ]
