"""Recurring patterns as the builtin engine keeps them (docs/design.md §4): one statement with its count and
dates, updated in place.

`熬夜到两点（3 次：2026-11-01、2026-11-03、2026-11-05）` / `Skipped the gym (3 times: 2026-12-01,
2026-12-02, 2026-12-03)`. When a new day joins it, the count changes — a change of a number, so
rule 4 wants the old count kept: the statement gets one trace holding only the count it had
(`(updated 2026-12-04, was: 3 times)`), which keeps every word of the old statement, since the old
dates are all still in the new one. The trace it had before nests inside that one, so a pattern
carries one trace however often it recurs, and each step of it is a few characters.
"""

from __future__ import annotations

import re

from cmem.converge.builtin.phrasing import is_chinese
from cmem.converge.builtin.sentences import drop_at_edges

RECURRING_CUES = re.compile(
    r"[，,；;]?\s*(?:老毛病了?|老是|总是|每次都|每回都|一再|又一次|又)\s*[，,；;]?"
    r"|\b(?:(?:once |yet )?again|as usual|every (?:single )?time|over and over|time and again|for the nth time|same mistake)\b[,;]?",
    re.IGNORECASE,
)
COUNT = re.compile(r"\s*[（(](\d+) (次|times?)[：:]\s*([0-9、, -]+)[)）]\s*$")


def pattern_base(raw: str) -> str:
    """A recurring line without its recurrence cues: what keeps happening. A cue inside a
    clause stays (`sentences.drop_at_edges`), so the words left read as a sentence."""
    text = drop_at_edges(raw, RECURRING_CUES).strip(" ，,；;。.!！")
    return text or raw


def pattern_text(base: str, dates: list[str], zh: bool | None = None) -> str:
    """The pattern statement's words: what happens, then how often and when."""
    dates = sorted(set(dates))
    zh = is_chinese(base) if zh is None else zh
    if zh:
        return f"{base}（{len(dates)} 次：{'、'.join(dates)}）"
    return f"{base} ({len(dates)} time{'s' if len(dates) != 1 else ''}: {', '.join(dates)})"


def counted(core: str) -> tuple[str, int, list[str], bool] | None:
    """(what happens, the count, the dates, whether written in Chinese) of a pattern
    statement's words, or None when they hold no count."""
    match = COUNT.search(core)
    if not match:
        return None
    dates = [d.strip() for d in re.split(r"[、,]", match.group(3)) if d.strip()]
    return core[: match.start()], int(match.group(1)), dates, match.group(2) == "次"


def count_clause(count: int, zh: bool) -> str:
    """The words of a count alone, as a trace keeps the count a pattern had."""
    if zh:
        return f"{count} 次"
    return f"{count} time{'s' if count != 1 else ''}"
