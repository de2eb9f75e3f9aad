"""Where the builtin engine puts a line: the statement it repeats (`find_duplicate`), the one
it changes (`best_match`: the most shared words, weighted by rarity), and the file it belongs to
(`route`: the class's resident file, the topic the note names, the line's subject, the topic
sharing the most words, or a new topic)."""

from __future__ import annotations

import math
import re
from collections.abc import Set

from cmem.converge.builtin.corrections import holds, old_sides, side_words, specific
from cmem.converge.builtin.line_words import name_key, old_side_terms, slug, terms
from cmem.converge.builtin.phrasing import subject_of
from cmem.converge.builtin.slots import HOME, slot_names, slots_of
from cmem.converge.builtin.working_copy import METHODOLOGY, PROFILE, MemoryFile, PassWork, new_file
from cmem.converge.memory.statement_words import probe
from cmem.converge.selection import SelectedNote
from cmem.scan.signals import Signal
from cmem.vault.statements import Statement, normalize

_MERGE_MIN, _MERGE_EXTRA = 6, 4  # normalised characters


def find_duplicate(
    work: PassWork, text: str, preferred: set[str], exact_only: bool
) -> tuple[MemoryFile, Statement] | None:
    """A statement saying the same: equal once normalised, holding the new line, or held by it
    with at most a few characters more ("…了", "always …"). A line that adds a clause is not a
    duplicate: merging it would lose the clause from memory once the note is archived."""
    key = normalize(text)
    files = sorted(
        work.files.values(), key=lambda f: (bool(f.problem), f.rel not in preferred, f.rel)
    )
    for file in files:
        # the kept keys, so that only a file holding the duplicate is parsed
        if exact_only:  # equality alone: looked up without splitting the file into its keys
            index = file.words(work).index_of(key)
            if index is not None:
                return file, file.statements(work.formats)[index]
            continue
        for index, old in enumerate(file.words(work).keys):
            if old == key:
                return file, file.statements(work.formats)[index]
            if exact_only or min(len(old), len(key)) < _MERGE_MIN:
                continue
            if key in old or (old in key and _adds_nothing(key.replace(old, "", 1))):
                return file, file.statements(work.formats)[index]
    return None


# Cue words a line may wrap around a statement memory already holds ("I prefer …", "以后都…").
_CUE_WORDS = re.compile(
    r"^(?:iprefer|ilike|ialways|fromnowon|idecidedto|idecided|我喜欢|我更喜欢|以后都|以后|我决定|决定)"
)


_NEGATION = re.compile(r"不|别|没|无|非|never|not|no|dont")


def _adds_nothing(extra: str) -> bool:
    """Whether what a new line has beyond an old statement is only cue words or a few
    characters — never a negation, which would turn the statement around."""
    rest = _CUE_WORDS.sub("", extra)
    return len(rest) <= _MERGE_EXTRA and not _NEGATION.search(rest)


def best_match(
    work: PassWork, note: SelectedNote, text: str, preferred: set[str]
) -> tuple[MemoryFile, Statement] | None:
    """The statement an explicit change replaces, if the line is about it; else None and the
    line is added. When the line names an old side ("not 2", "from uv to", "不是北京"), only a
    statement holding it may be replaced, and one holding only a number or a common word of it
    must share another word with the line (`corrections.holds`, `specific`); without an old
    side, a statement must share two words with the line, or fill the same slot (`slots`: "I
    moved to Munich" → "I live in Berlin", "I switched to uv" → the statement naming pipenv).
    Among those: most shared words, rare words weighing more, words of the old side double, the
    files the note names first.

    Only statements sharing a word with the line can pass those rules, so they are found through
    each file's word index (`FileWords.postings`) instead of scoring every statement; how rare a
    word is still counts every statement. A line filling a slot may replace a statement
    sharing no word: a move looks at them all, a tool's kind at the statements naming a tool of
    that kind. A statement this note wrote is replaced only when
    the line names it by its old side (a correction of a correction in one note)."""
    sides = old_sides(text)
    new_terms, old_terms = terms(text), old_side_terms(text)
    for side in sides:
        new_terms = new_terms | side_words(side)
    slots = slots_of(text)
    files = work.writable(preferred)
    frequency: dict[str, int] = dict.fromkeys(new_terms, 0)
    # the line's words, then the names of the tools of its kinds (a statement naming one fills
    # the slot; where one lives is said in any words): one look-up a file for both
    kind_names = [name for name in slot_names(slots) if name not in new_terms]
    probes = [probe(word) for word in [*new_terms, *kind_names]]
    written = _written_by(work, note)
    total, shared_by = _candidates(work, files, probes, frequency, HOME in slots)
    best, best_score = None, 0.0
    # in the order of a full scan: on a tie the earlier wins (named files, then resident, path)
    for place, index in sorted(shared_by):
        work.compared += 1
        shared = shared_by[(place, index)]
        file = files[place]
        named = file.rel in preferred
        core = file.statements(work.formats)[index].core
        mine = file.rel in written and file.words(work).keys[index] in written[file.rel]
        same_slot = bool(slots & slots_of(core))
        held = [side for side in sides if holds(core, side)]
        if sides:
            # "not 2": the statement holding 2 and another word of the line, never any "2"
            about = any(specific(side) or shared - side_words(side) for side in held)
            if not about and not (same_slot and not mine):
                continue
        elif mine or (len(shared) < 2 and not same_slot):
            continue
        score = sum(
            (1 + math.log(max(total, 1) / max(frequency.get(w, 0), 1)))
            * (2 if w in old_terms else 1)
            for w in sorted(shared)
        )
        score += 3 if same_slot else 0
        score += 4 * len(held)
        score *= 1.5 if named else 1
        if score > best_score:
            best, best_score = (file, index), score
    return None if best is None else (best[0], best[0].statements(work.formats)[best[1]])


def _candidates(
    work: PassWork,
    files: list[MemoryFile],
    probes: list[tuple[str, bytes]],
    frequency: dict[str, int],
    home: bool,
) -> tuple[int, dict[tuple[int, int], set[str]]]:
    """The statements that may be rewritten, counted, and those a line may replace: (file's
    place, statement index) → the line's words each holds; every statement when the line says
    where one lives. Counts in `frequency` the statements holding each of the line's words."""
    total = 0
    shared_by: dict[tuple[int, int], set[str]] = {}
    for place, file in enumerate(files):
        words = file.words(work)
        barred = set(words.empty)
        total += words.count - len(barred)
        for word, indexes in words.holding_each(probes):
            shares = word in frequency
            for index in indexes:
                if index not in barred:
                    found = shared_by.setdefault((place, index), set())
                    if shares:
                        frequency[word] += 1
                        found.add(word)
        if home:
            for index in range(words.count):
                if index not in barred:
                    shared_by.setdefault((place, index), set())
    return total, shared_by


def _written_by(work: PassWork, note: SelectedNote) -> dict[str, set[str]]:
    """The statement keys this note wrote in this pass, by file."""
    written: dict[str, set[str]] = {}
    for rel, key, by in work.written:
        if by == note.rel:
            written.setdefault(rel, set()).add(key)
    return written


NO_SUBJECT = (
    "no subject to file it under (a topic is never named from a clause); it waits for a model"
)


def route(
    work: PassWork, note: SelectedNote, signal: Signal, text: str, named: list[str]
) -> MemoryFile | None:
    """The file a line joins: its class's resident file, or for a decision the topic the note
    names, the line's subject, the topic sharing most words, a new topic named for what the
    line is about, a topic sharing any word; None when nothing names a topic (`NO_SUBJECT`)."""
    if signal.cls == "recurring":
        return work.resident_file(METHODOLOGY)
    if signal.cls != "decision":
        return work.resident_file(PROFILE)
    situational_dir = work.config.situational_dir + "/"
    for rel in named:
        if rel.startswith(situational_dir):
            return work.files[rel]
    return (
        _subject_topic(work, text)
        or _best_topic(work, text)
        or _new_topic(work, note, text)
        or _best_topic(work, text, least=1.0)
    )


def _subject_topic(work: PassWork, text: str) -> MemoryFile | None:
    """The topic file named after the line's subject (file name, title, alias or tag)."""
    subject = subject_of(text)
    if not subject:
        return None
    key = name_key(subject)
    for file in work.situational():
        if file.problem:
            continue
        title = next(
            (line[2:] for line in file.lines[file.body_start - 1 :] if line.startswith("# ")), ""
        )
        if key in file.keys or name_key(title) == key or name_key(slug(subject)) in file.keys:
            return file
    return None


def _weight(words: Set[str]) -> float:
    """English words weigh 1.5, CJK bigrams 1: a shared three-character Chinese word gives two
    bigrams and should not outweigh two shared English words."""
    return sum(1.5 if word.isascii() else 1.0 for word in words)


def _best_topic(work: PassWork, text: str, least: float = 3) -> MemoryFile | None:
    new_terms = terms(text)
    best, best_score = None, 0.0
    for file in work.situational():
        if file.problem:
            continue
        # every word of its statements: the keys of its word index
        words = set(terms(str(file.meta.get("summary") or ""))) | file.words(work).words()
        score = _weight(new_terms & words)
        if score >= least and score > best_score:
            best, best_score = file, score
    return best


_GENERIC_TAGS = {
    name_key(t)
    for t in "daily journal diary 日记 随手记 笔记 note notes idea ideas inbox todo meeting converge noconverge private draft 草稿 想法".split()
}


def _new_topic(work: PassWork, note: SelectedNote, text: str) -> MemoryFile | None:
    """The topic file of the line's subject, else of the note's first specific tag or link to
    no note, else of the noun phrase the line is about (`topic_names`): never a clause, a note's
    name, a date or a year; None when none of them names a topic."""
    from cmem.converge.builtin.topic_names import subject_phrase, topic_name
    from cmem.converge.validator.allowed_paths import skeleton

    subject = subject_of(text)
    tags = [
        t.replace("-", " ").replace("_", " ").replace("/", " ").strip()
        for t in note.tags
        if name_key(t) not in _GENERIC_TAGS
    ]
    # a link to a day, a week or a dated note ([[2026-12-04]], [[2026-W49]], [[2026-12-06 日记]],
    # which may not exist yet) names no topic
    links = [
        link
        for link in note.links
        if re.search(r"[^\W\d_]{2}", link) and not re.search(r"\d{4}|\d\d?[-./]\d\d?", link)
    ]
    titles = [t for t in [subject or "", *tags, *links, subject_phrase(text)] if t]
    existing = {skeleton(rel): rel for rel in work.files}
    found = topic_name(
        titles,
        work.config.situational_dir,
        existing,
        work.is_note_name,
        lambda rel: not work.files[rel].problem,
    )
    if found is None:
        return None
    rel, title = found
    if rel not in work.files:
        # summarised by its name, never by a statement's words: a rewrite cannot make it stale
        summary = title if len(title) <= 80 else title[:79] + "…"
        name = rel.rsplit("/", 1)[-1].removesuffix(".md")
        work.files[rel] = new_file(
            rel, summary, 5, work.date, title[:1].upper() + title[1:], [name]
        )
    return work.files[rel]
