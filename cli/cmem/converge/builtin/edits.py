"""The builtin engine's edits to memory lines: a source added to a statement, a statement
rewritten with a trace of its old wording, a line appended under its class's heading, a summary
kept true; each line read back in the vault's formats before it is written (`reads_back`)."""

from __future__ import annotations

import json
import re

from cmem.converge.builtin.corrections import old_sides, substitute
from cmem.converge.builtin.line_words import terms
from cmem.converge.builtin.working_copy import MemoryFile, PassWork, joiner
from cmem.text.folding import fold_case
from cmem.vault.config import Formats
from cmem.vault.statements import (
    WIKILINK,
    Statement,
    find_sources,
    find_traces,
    format_source,
    format_trace,
    normalize,
    split_statement,
)

_LIST_PREFIX = re.compile(r"^\s*(?:(?:[-*+]|\d+[.)])\s+)?(?:\[[ xX]\]\s+)?")


def list_prefix(line: str) -> str:
    """The line's indent, list marker and checkbox ("" when it has none)."""
    match = _LIST_PREFIX.match(line)
    return match.group(0) if match else ""  # every part is optional: it always matches


def _own_source_spans(line: str, formats: Formats) -> list[tuple[int, int]]:
    """Source annotations of the statement itself (one inside a trace belongs to the old words)."""
    traces = [(t.start, t.end) for t in find_traces(line, formats)]
    return [
        (start, end)
        for start, end, _ in find_sources(line, formats)
        if not any(s <= start and end <= e for s, e in traces)
    ]


def add_source(work: PassWork, file: MemoryFile, statement: Statement, name: str) -> bool:
    """The note joins the statement's sources; False (nothing written) when the line would not
    read back with it."""
    if name in statement.sources:
        return True
    index = statement.line_no - 1
    line = file.lines[index]
    spans = _own_source_spans(line, work.formats)
    if spans:
        # Extend the last annotation in its own style (a zh vault may hold an en line).
        start, end = spans[-1]
        annotation = line[start:end]
        # after its last link (the format's own closing bracket may be a "]" too)
        close = [m.end() for m in WIKILINK.finditer(annotation)][-1]
        separator = _separator_of(annotation, work.formats)
        line = (
            line[:start]
            + annotation[:close]
            + separator
            + f"[[{name}]]"
            + annotation[close:]
            + line[end:]
        )
    else:
        formats = work.formats_for(file)
        line = line.rstrip() + joiner(formats.source) + format_source([name], formats)
    olds = [trace.old for trace in statement.traces]
    if not reads_back(work, line, statement.core, [*statement.sources, name], olds):
        return False
    file.edit(index, 1, [line])
    return True


def _separator_of(annotation: str, formats: Formats) -> str:
    from cmem.vault.config import LANGUAGE_DEFAULTS

    for template, separator in [(formats.source, formats.source_separator)] + [
        (d["source"], d["source_separator"]) for d in LANGUAGE_DEFAULTS.values()
    ]:
        if annotation.startswith(template.split("{links}", 1)[0]):
            return separator
    return formats.source_separator


def rewrite_with_trace(
    work: PassWork,
    file: MemoryFile,
    statement: Statement,
    text: str,
    name: str,
    raw: str | None = None,
) -> str | None:
    """The new words, then a trace quoting the old ones with their own traces, dated by the note
    the change came from (never after the pass), then the sources: the old wording's and the
    note's, so every note the statement came from stays cited. When the line corrects one part
    of the statement ("3 sessions a week, not 2", "不是 X，是 Y", "from pipenv to uv"), the new
    part goes in place of the old one inside it (`corrections.substitute`) instead. Returns the
    new statement's words, or None (nothing written) when the line would not read back."""
    index = statement.line_no - 1
    line = file.lines[index]
    prefix = list_prefix(line)
    old = line
    for start, end in sorted(_own_source_spans(line, work.formats), reverse=True):
        old = old[:start] + old[end:]
    old = " ".join(old[len(prefix) :].split())
    swap = substitute(statement.core, text, raw or text, old_sides(raw or text))
    if swap:
        text = swap[0]
    formats = work.formats_for(file)
    gone = work.sources_of_gone(file, normalize(text)) if normalize(text) != statement.key else []
    sources = list(dict.fromkeys([*statement.sources, *gone, name]))
    day = work.trace_date(name, old)
    if day is None:
        return None
    new = (
        prefix
        + text
        + joiner(formats.trace)
        + format_trace(day, old, formats)
        + joiner(formats.source)
        + format_source(sources, formats)
    )
    if not reads_back(work, new, text, sources, [old]):
        return None
    file.edit(index, 1, [new])
    sources_stay_with_the_words(work, file, statement)
    _refresh_summary(work, file, statement.core, text, swap[1:] if swap else None)
    return text


def sources_stay_with_the_words(work: PassWork, file: MemoryFile, changed: Statement) -> None:
    """A statement just changed may have a twin saying its old words (two statements that came
    to say the same): the twin that stays takes the changed one's sources, since the validator
    holds the words memory keeps to every note they came from (rule 3)."""
    twins = [s for s in file.statements(work.formats) if s.key == changed.key]
    if not twins:
        return
    for name in changed.sources:
        twin = next(s for s in file.statements(work.formats) if s.key == changed.key)
        if name not in twin.sources:
            add_source(work, file, twin, name)


def _refresh_summary(
    work: PassWork, file: MemoryFile, old: str, new: str, part: tuple[str, str] | None
) -> None:
    """A file's `summary:` after one of its statements changed: the words it quoted from the
    old statement, or the part a correction replaced, are replaced the same way, so the index
    never shows what memory no longer says. A summary that quotes neither is left alone (it says
    what the file is about, not what a statement says); a summary of several lines too."""
    summary = file.meta.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        return
    fresh = summary
    for before, after in ((old, new), part or ("", "")):
        if not before:
            continue
        # whole words only: "uv" is no part of "uvicorn"
        place = re.compile(rf"(?<![\w.+#-]){re.escape(before)}(?![\w+#-]|\.\d)")
        if place.search(summary):
            fresh = place.sub(lambda _: after, summary)
            break
    if fresh == summary:
        return
    last = file.body_start - 3  # the frontmatter's last line, `---` being lines[0]
    for at in range(1, last + 1):
        match = re.match(r"^(summary[ \t]*:[ \t]*)(.*?)([ \t]+#.*)?$", file.lines[at])
        if not match:
            continue
        if match.group(2)[:1] in ("|", ">", "") or (
            at < last and file.lines[at + 1][:1] in (" ", "\t")
        ):
            return  # a block or folded value: not one line to edit
        file.edit(
            at,
            1,
            [f"{match.group(1)}{json.dumps(fresh, ensure_ascii=False)}{match.group(3) or ''}"],
        )
        file.meta = {**file.meta, "summary": fresh}
        return


_CLASS_HEADINGS = {
    "en": {
        "preference": "Preferences",
        "correction": "Facts",
        "decision": "Decisions",
        "recurring": "Patterns",
    },
    "zh": {
        "preference": "偏好",
        "correction": "事实",
        "decision": "决定",
        "recurring": "反复出现的模式",
    },
}


def append_statement(
    work: PassWork,
    file: MemoryFile,
    text: str,
    name: str,
    cls: str | None = None,
    earlier: list[str] | tuple[str, ...] = (),
) -> bool:
    """A new statement citing `name` (after the `earlier` notes it also rests on); False
    (nothing written) when it would not read back as written."""
    resident = file.rel.startswith(work.config.resident_dir + "/")
    formats = work.formats_for(
        file, "" if resident else text
    )  # resident files are in the vault's language
    names = list(dict.fromkeys([*work.sources_of_gone(file, normalize(text)), *earlier, name]))
    line = f"- {text}{joiner(formats.source)}{format_source(names, formats)}"
    if not reads_back(work, line, text, names, []):
        return False
    if resident and cls in _CLASS_HEADINGS["en"]:
        # resident files keep one heading per class: a decision never lands under "weaknesses"
        language = (
            work.config.language
            if work.custom_formats
            else "zh"
            if formats.source.startswith("（")
            else "en"
        )
        _append_under(work, file, f"## {_CLASS_HEADINGS[language][cls]}", line)
        return True
    index, blank_first = _insertion_point(work, file, terms(text))
    file.edit(index, 0, ["", line] if blank_first else [line])
    return True


def _append_under(work: PassWork, file: MemoryFile, heading: str, line: str) -> None:
    """After the last line of the section `heading` (any level, any case), or a new section at
    the file's end."""
    top = file.body_start - 1
    wanted = fold_case(heading.lstrip("#").strip())
    for index in range(top, len(file.lines)):
        match = re.match(r"(#{1,6})\s+(.*?)\s*$", file.lines[index])
        if match and fold_case(match.group(2)) == wanted:
            level = len(match.group(1))
            end = index + 1
            while end < len(file.lines):
                other = re.match(r"(#{1,6})\s", file.lines[end])
                if other and len(other.group(1)) <= level:
                    break
                end += 1
            while end > index + 1 and not file.lines[end - 1].strip():
                end -= 1
            file.edit(end, 0, [line])
            return
    tail = [] if not file.lines or not file.lines[-1].strip() else [""]
    file.edit(len(file.lines), 0, [*tail, heading, "", line])


def _insertion_point(
    work: PassWork, file: MemoryFile, new_terms: frozenset[str]
) -> tuple[int, bool]:
    """After the last statement of the section sharing the most words (the last section on a
    tie); the file's end when it has no statements yet."""
    statements = file.statements(work.formats)
    if not statements:
        blank_first = (
            bool(file.lines) and file.lines[-1].strip() != "" and not file.lines[-1].startswith("#")
        )
        return len(file.lines), blank_first
    sections: dict[int, list[Statement]] = {}
    top = file.body_start - 1  # a `# comment` in the frontmatter is no heading
    for statement in statements:
        heading = next(
            (
                i
                for i in range(statement.line_no - 2, top - 1, -1)
                if re.match(r"#{1,6}\s", file.lines[i])
            ),
            -1,
        )
        sections.setdefault(heading, []).append(statement)

    def overlap(item: tuple[int, list[Statement]]) -> tuple[int, int]:
        heading, members = item
        words = set(terms(file.lines[heading])) if heading >= 0 else set()
        for statement in members:
            words |= terms(statement.core)
        return len(new_terms & words), heading

    _, members = max(sections.items(), key=overlap)
    index = members[-1].line_no  # the line after the section's last statement
    in_table = file.lines[index - 1].lstrip().startswith("|")
    while in_table and index < len(file.lines) and file.lines[index].lstrip().startswith("|"):
        index += 1
    return index, in_table


def reads_back(
    work: PassWork, line: str, core: str, sources: list[str], traces: list[str] | None
) -> bool:
    """Whether a line the engine writes reads back as it meant it, in the vault's formats: these
    words, these sources, these top-level traces (None: any), and no raw HTML (rule 9). A
    statement whose words hold the start of a source or trace annotation, or brackets that end a
    trace early, would otherwise reach the validator with a source it does not cite or a trace
    it did not keep."""
    from cmem.converge.validator.added_lines import holds_html

    if holds_html(line):
        return False
    got_core, got_sources, got_traces = split_statement(line, work.formats)
    # a source citing a session turn (`note#^t5`, docs/design.md §14) reads back as its note
    wanted = [source.split("#", 1)[0] for source in sources]
    if normalize(got_core) != normalize(core) or list(got_sources) != wanted:
        return False
    return traces is None or [t.old for t in got_traces] == traces
