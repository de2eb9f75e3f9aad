"""Three-way merges that understand memory (docs/design.md §13): what `cmem sync` does with a file
both machines changed since they last met.

A memory file is merged **per statement**, not per line of text. Each statement is a unit known
by its oldest wording — a rewrite keeps the old wording in its trace, so `X（更新于 …，原为：Y）`
is still the statement `Y` — and is resolved on its own:

- changed on one side only (a new statement, a rewrite with its trace, a removal): that side's;
- the same statement rewritten differently on both sides — with traces, or edited in place by
  hand (the new wording stands alone where the old one stood, or shares most of its words): a
  *conflict statement* holding both
  versions, each with its sources and traces, for `cmem status` to show and the next pass to
  resolve (`- ⚠ conflict (2026-11-30): <one version> ⟷ <the other>`);
- removed on one side and rewritten on the other: the rewrite (no statement is lost).

Where the units sit — headings, blank lines, prose — is merged by git itself (`git merge-file`)
on a skeleton in which each statement line is replaced by its unit's name, so a rewrite is no
change at all for git. Both sides adding lines at the same place (two passes appending to one
section) is not a conflict: both are kept. Text outside statements changed differently on both
sides is a real conflict: `MergeConflict`, naming the file; markers are never written.

Frontmatter is merged key by key. The same generic engine (`merge_units`) merges the archive
checklist per note.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from cmem.errors import CmemError
from cmem.steps.commits import SAFE_GIT_OPTIONS
from cmem.vault.statements import find_sources, normalize, split_statement, statement_lines
from cmem.vault.yaml_reader import flow_list_line, read_frontmatter, split_frontmatter

CONFLICT_WORD = "⚠ conflict"
CONFLICT_SEPARATOR = " ⟷ "
_CONFLICT = re.compile(r"^(\s*(?:[-*+]\s+)?)⚠ conflict \((\d{4}-\d{2}-\d{2})\): ")
_LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_PLACEHOLDER = (
    "\x1ecmem-unit:"  # a record separator: no note starts a line with it, and git reads it as text
)
_MARKER_SIZE = 41  # conflict markers no note will hold at the start of a line


class MergeConflict(CmemError):
    """Both sides changed the same text outside statements; nothing was merged."""


@dataclass
class MergedText:
    text: str
    conflicts: list[str] = field(default_factory=list)  # conflict statements written
    notices: list[str] = field(default_factory=list)  # what was decided on the user's behalf


# --- conflict statements --------------------------------------------------------------------------


def is_conflict_statement(line: str) -> bool:
    return _CONFLICT.match(line) is not None


def conflict_statement(ours: str, theirs: str, date: str) -> str:
    """One statement holding both versions (each with its own sources and traces)."""
    marker = _LIST_MARKER.match(ours)
    prefix = marker.group(0) if marker else "- "
    return f"{prefix}{CONFLICT_WORD} ({date}): {_body(ours)}{CONFLICT_SEPARATOR}{_body(theirs)}"


def conflict_versions(line: str) -> list[str]:
    """The versions a conflict statement holds (a version may itself be a conflict's)."""
    match = _CONFLICT.match(line)
    if not match:
        return [line]
    return line[match.end() :].split(CONFLICT_SEPARATOR)


def _body(line: str) -> str:
    match = _CONFLICT.match(line)
    if match:
        return line[match.end() :]
    return _LIST_MARKER.sub("", line, count=1).strip()


def statement_root(line: str, formats=None) -> str:
    """The statement's oldest wording: what it was before every rewrite in its traces."""
    if is_conflict_statement(line):
        line = conflict_versions(line)[0]
    core, _, traces = split_statement(line, formats)
    depth = 0
    while traces and depth < 50:  # traces nest; a pathological line must not recurse forever
        oldest = min(traces, key=lambda trace: trace.date)
        core, _, traces = split_statement(oldest.old, formats)
        depth += 1
    return core


# --- the generic engine ---------------------------------------------------------------------------


def merge_units(
    rel: str,
    base: str,
    ours: str,
    theirs: str,
    unit_of: Callable[[str], str | None],
    resolve: Callable[[str, str | None, str | None, str | None], str | None],
) -> str:
    """Merge three texts whose lines `unit_of` names (None: plain text). Each unit's line is
    chosen by `resolve(unit, base, ours, theirs)` (None: the unit is gone); where units and
    plain text sit is merged by `git merge-file`."""
    skeletons, values = [], []
    for text in (base, ours, theirs):
        skeleton, value = _skeleton(text, unit_of)
        skeletons.append(skeleton)
        values.append(value)
    merged = _merge_skeletons(rel, *skeletons)
    base_values, our_values, their_values = values
    names = list(dict.fromkeys([*our_values, *their_values, *base_values]))
    chosen = {
        name: resolve(name, base_values.get(name), our_values.get(name), their_values.get(name))
        for name in names
    }
    out: list[str] = []
    placed: set[str] = set()
    for line in merged:
        if line.startswith(_PLACEHOLDER):
            name = line[len(_PLACEHOLDER) :]
            unit_line = chosen.get(name)
            if name in placed or unit_line is None:
                continue
            placed.add(name)
            out.append(unit_line)
        else:
            out.append(line)
    # A unit one side removed (git dropped its line) that the other side changed is kept: it
    # goes after the unit that precedes it on the side that kept it.
    for name, kept in chosen.items():
        if kept is None or name in placed:
            continue
        side = skeletons[1] if name in our_values else skeletons[2]
        index = side.index(_PLACEHOLDER + name)
        anchor = next(
            (
                chosen.get(prev[len(_PLACEHOLDER) :])
                for prev in reversed(side[:index])
                if prev.startswith(_PLACEHOLDER) and prev[len(_PLACEHOLDER) :] in placed
            ),
            None,
        )
        position = out.index(anchor) + 1 if anchor in out else len(out)
        out.insert(position, kept)
        placed.add(name)
    return "\n".join(out)


def _skeleton(text: str, unit_of: Callable[[str], str | None]) -> tuple[list[str], dict[str, str]]:
    lines = text.split("\n")
    seen: dict[str, int] = {}
    skeleton, values = [], {}
    for line in lines:
        key = unit_of(line)
        if key is None:
            skeleton.append(line)
            continue
        seen[key] = seen.get(key, 0) + 1
        name = f"{hashlib.sha1(key.encode('utf-8')).hexdigest()[:16]}#{seen[key]}"  # the n-th unit with that key
        values[name] = line
        skeleton.append(_PLACEHOLDER + name)
    return skeleton, values


def _merge_skeletons(rel: str, base: list[str], ours: list[str], theirs: list[str]) -> list[str]:
    output = merge_file(["\n".join(base), "\n".join(ours), "\n".join(theirs)], diff3=True)
    return _resolve_hunks(rel, output.split("\n"))


def merge_file(texts: list[str], diff3: bool = False) -> str:
    """`git merge-file -p` of (base, ours, theirs); conflicts are left marked (markers of
    `_MARKER_SIZE` characters) for the caller to resolve or refuse."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="cmem-merge-") as folder:
        paths = []
        for name, text in zip(("base", "ours", "theirs"), texts):
            path = os.path.join(folder, name)
            with open(path, "w", encoding="utf-8", newline="", errors="surrogateescape") as handle:
                handle.write(text)
            paths.append(path)
        args = ["git", *SAFE_GIT_OPTIONS, "merge-file", "-p", f"--marker-size={_MARKER_SIZE}"] + (
            ["--diff3"] if diff3 else []
        )
        result = subprocess.run(
            [*args, paths[1], paths[0], paths[2]], capture_output=True, cwd=folder
        )
        if result.returncode < 0 or result.returncode > 127:
            raise CmemError(
                f"git merge-file failed: {result.stderr.decode('utf-8', 'replace').strip()}"
            )
        return result.stdout.decode("utf-8", "surrogateescape")


def has_markers(text: str) -> bool:
    return any(line.startswith("<" * _MARKER_SIZE) for line in text.split("\n"))


def diff3_parts(lines: list[str]) -> list:
    """A `merge_file(..., diff3=True)` output as plain lines and (ours, base, theirs) hunks."""
    parts: list = []
    index = 0
    start, middle, split, end = (
        "<" * _MARKER_SIZE,
        "|" * _MARKER_SIZE,
        "=" * _MARKER_SIZE,
        ">" * _MARKER_SIZE,
    )
    while index < len(lines):
        line = lines[index]
        if not line.startswith(start):
            parts.append(line)
            index += 1
            continue
        ours: list[str] = []
        base: list[str] = []
        theirs: list[str] = []
        part = "ours"
        index += 1
        while index < len(lines) and not lines[index].startswith(end):
            current = lines[index]
            if current.startswith(middle):
                part = "base"
            elif current == split:
                part = "theirs"
            else:
                {"ours": ours, "base": base, "theirs": theirs}[part].append(current)
            index += 1
        index += 1  # the closing marker
        parts.append((ours, base, theirs))
    return parts


def _resolve_hunks(rel: str, lines: list[str]) -> list[str]:
    """Resolve each conflict hunk of a diff3 merge: when neither side changed the base's plain
    text (they only added or moved units, or added text), keep ours then what theirs added;
    when one side changed it, that side's text and what the other added; when both changed it
    differently, a real conflict."""
    out: list[str] = []
    for part in diff3_parts(lines):
        if isinstance(part, str):
            out.append(part)
            continue
        ours, base, theirs = part
        plain = [text for text in base if text.strip() and not text.startswith(_PLACEHOLDER)]
        ours_rewrote = any(text not in ours for text in plain)
        theirs_rewrote = any(text not in theirs for text in plain)
        if ours_rewrote and theirs_rewrote:
            raise MergeConflict(
                f"{rel}: both machines changed the same text differently (outside statements) — "
                "nothing was merged; edit it on one machine, commit, and sync again."
            )
        if theirs_rewrote:  # only theirs changed the text here: theirs first, then what ours added
            ours, theirs = theirs, ours
        out.extend(ours)
        for text in theirs:
            if text.strip() and (text in ours or text in plain):
                continue
            if not text.strip() and (not out or not out[-1].strip()):
                continue
            if text.startswith("#") and out and out[-1].strip():
                out.append("")  # a heading theirs added starts its own block
            out.append(text)
    return out


# --- memory files ---------------------------------------------------------------------------------


def merge_memory(
    rel: str, base: str | None, ours: str, theirs: str, date: str, formats=None
) -> MergedText:
    """Merge a memory file both sides changed (or both created: `base` None)."""
    result = MergedText("")
    end = "\r\n" if "\r\n" in ours else "\n"
    base_fm, base_body = _split((base or "").replace("\r\n", "\n"))
    our_fm, our_body = _split(ours.replace("\r\n", "\n"))
    their_fm, their_body = _split(theirs.replace("\r\n", "\n"))
    front = merge_frontmatter(rel, base_fm, our_fm, their_fm, result.notices)
    statement_set: set[str] = set()
    for body in (base_body, our_body, their_body):
        statement_set.update(line for _, line in statement_lines(body))

    def root_key(line: str) -> str:
        return "s:" + (normalize(statement_root(line, formats)) or line.strip())

    # A base statement edited without a trace is one unit with its new wording, not two: two
    # machines editing it differently (by hand, in Obsidian) meet in `resolve` as one statement
    # changed two ways, a conflict statement, never as both wordings kept side by side.
    edited = _edited_statements(base_body, (our_body, their_body), root_key, formats)

    def unit_of(line: str) -> str | None:
        if line not in statement_set:
            return None
        return edited.get(line) or root_key(line)

    def resolve(name: str, b: str | None, o: str | None, t: str | None) -> str | None:
        if o == t:
            return o
        if o == b:
            return t
        if t == b:
            return o
        if o is None or t is None:
            kept = o if o is not None else t
            assert kept is not None  # o == t, both gone, returned above
            result.notices.append(
                f"{rel}: a statement removed on one machine and changed on the other was kept: {_body(kept)}"
            )
            return kept
        if is_conflict_statement(o) and _body(t) in conflict_versions(o):
            return o  # theirs is one of the versions ours already holds in conflict
        if is_conflict_statement(t) and _body(o) in conflict_versions(t):
            return t
        same = _same_wording(o, t, formats)
        if same is not None:
            return same
        later = _later_rewrite(o, t, formats)
        if later is not None:
            return later
        line = conflict_statement(o, t, date)
        result.conflicts.append(line)
        return line

    body = merge_units(rel, base_body, our_body, their_body, unit_of, resolve)
    text = (f"---\n{front}---\n" if front is not None else "") + body
    result.text = text.replace("\n", end) if end != "\n" else text
    return result


_EDIT_SIMILARITY = 0.5  # how alike an old and a new wording must be to be one edited statement


def _edited_statements(
    base: str, sides: tuple[str, ...], key_of: Callable[[str], str], formats
) -> dict[str, str]:
    """New wording → the base statement's unit, for each statement a side rewrote in place
    without a trace: the base statement is gone from that side, and in its place (the same run of
    changed statements, as `difflib` pairs the two sides' statements) stands a new one — the only
    one there, or one that shares most of its words. A removal beside unrelated additions is not
    an edit."""
    import difflib

    base_lines = [line for _, line in statement_lines(base)]
    base_keys = [key_of(line) for line in base_lines]
    known = set(base_keys)
    edited: dict[str, str] = {}
    for side in sides:
        side_lines = [line for _, line in statement_lines(side)]
        side_keys = [key_of(line) for line in side_lines]
        present = set(side_keys)
        matcher = difflib.SequenceMatcher(None, base_keys, side_keys, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag != "replace":
                continue
            gone = [i for i in range(i1, i2) if base_keys[i] not in present]
            new = [j for j in range(j1, j2) if side_keys[j] not in known]
            if len(gone) == 1 and len(new) == 1:  # one line replaced by one: edited in place
                edited.setdefault(side_lines[new[0]], base_keys[gone[0]])
                continue
            for i in gone:
                old_core = normalize(split_statement(base_lines[i], formats)[0])
                best, best_ratio = None, _EDIT_SIMILARITY
                for j in new:
                    new_core = normalize(split_statement(side_lines[j], formats)[0])
                    ratio = difflib.SequenceMatcher(None, old_core, new_core).ratio()
                    if ratio >= best_ratio:
                        best, best_ratio = j, ratio
                if best is not None:
                    new.remove(best)
                    edited.setdefault(side_lines[best], base_keys[i])
    return edited


def _same_wording(ours: str, theirs: str, formats) -> str | None:
    """Two lines saying the same thing with different sources: ours, with every source of both."""
    our_core, our_sources, our_traces = split_statement(ours, formats)
    their_core, their_sources, their_traces = split_statement(theirs, formats)
    if normalize(our_core) != normalize(their_core):
        return None
    if [t.old for t in their_traces] != [t.old for t in our_traces] and their_traces:
        return None  # different histories: a person must choose
    missing = [name for name in their_sources if name not in our_sources]
    if not missing:
        return ours
    spans = [
        span
        for span in find_sources(ours, formats)
        if not any(t.start <= span[0] and span[1] <= t.end for t in our_traces)
    ]
    if not spans:
        return None
    start, end_at, _ = spans[-1]
    annotation = ours[start:end_at]
    last_link = annotation.rfind("]]")
    links = "".join(f"{_separator(annotation)}[[{name}]]" for name in missing)
    return (
        ours[:start]
        + annotation[: last_link + 2]
        + links
        + annotation[last_link + 2 :]
        + ours[end_at:]
    )


def _later_rewrite(ours: str, theirs: str, formats) -> str | None:
    """One side rewrote the statement again after reaching the other side's wording (two passes
    made the same rewrite, then one went further): the further one, whose trace holds the other."""
    our_core, their_core = (normalize(split_statement(line, formats)[0]) for line in (ours, theirs))
    if their_core and their_core in _older_wordings(ours, formats):
        return ours
    if our_core and our_core in _older_wordings(theirs, formats):
        return theirs
    return None


def _older_wordings(line: str, formats, depth: int = 0) -> set[str]:
    found: set[str] = set()
    if depth > 50:
        return found
    for trace in split_statement(line, formats)[2]:
        found.add(normalize(split_statement(trace.old, formats)[0]))
        found |= _older_wordings(trace.old, formats, depth + 1)
    return found


def _separator(annotation: str) -> str:
    between = re.search(r"\]\]([^\[\]]*)\[\[", annotation)
    return (
        between.group(1)
        if between
        else ("、" if re.search(r"[\u3000-\uffef]", annotation) else ", ")
    )


def _split(text: str) -> tuple[str | None, str]:
    """(frontmatter block with its final newline, or None; body)."""
    block, body_start, problem = split_frontmatter(text)
    if block is None or problem:
        return None, text
    return block, "\n".join(text.split("\n")[body_start - 1 :])


# --- frontmatter, key by key ----------------------------------------------------------------------

_KEY = re.compile(r"^([^\s#\-][^:]*?)[ \t]*:(?:[ \t]|$)")


def merge_frontmatter(
    rel: str, base: str | None, ours: str | None, theirs: str | None, notices: list[str]
) -> str | None:
    """Each top-level key merged on its own: one side's change taken; both changed — dates and
    numbers take the larger, lists the union, anything else keeps this machine's (noted)."""
    if ours is None and theirs is None:
        return None
    base_keys, our_keys, their_keys = (_keys(block or "") for block in (base, ours, theirs))
    out: list[str] = []
    for key in dict.fromkeys([*our_keys, *their_keys]):
        b, o, t = base_keys.get(key), our_keys.get(key), their_keys.get(key)
        if o == t or t == b:
            chosen = o
        elif o == b:
            chosen = t
        elif o is None or t is None:
            chosen = o if o is not None else t
        else:
            chosen = _both_changed(key, o, t)
            if chosen is None:
                chosen = o
                notices.append(
                    f"{rel}: frontmatter key '{key}' was changed on both machines; this machine's value was kept"
                )
        if chosen is not None:
            out.append(chosen)
    return "".join(out)


_UNREAD = object()


def _value_of(key: str, text: str) -> Any:
    """The key's value from its own lines, read as a note's frontmatter is (anchors and aliases
    refused: a merge compares values, and an alias bomb's would never end); `_UNREAD` if not."""
    data, problem = read_frontmatter(text)
    return _UNREAD if problem or key not in data else data[key]


def _keys(block: str) -> dict[str, str]:
    """Top-level key → its text (the key's line and any indented or list lines under it)."""
    keys: dict[str, str] = {}
    current = "\x00prologue"
    for line in block.splitlines(keepends=True):
        match = _KEY.match(line)
        if match:
            current = match.group(1).strip().strip("'\"")
        keys[current] = keys.get(current, "") + line
    return keys


def _both_changed(key: str, ours: str, theirs: str) -> str | None:
    our_value, their_value = _value_of(key, ours), _value_of(key, theirs)
    if our_value is _UNREAD or their_value is _UNREAD:
        return None  # not YAML, or refused: ours is kept, said by the caller
    if isinstance(our_value, list) and isinstance(their_value, list):
        union = list(our_value) + [item for item in their_value if item not in our_value]
        return flow_list_line(key, union)
    comparable = (int, float, str)
    import datetime

    if all(isinstance(v, (datetime.date, datetime.datetime)) for v in (our_value, their_value)) or (
        all(isinstance(v, comparable) and not isinstance(v, str) for v in (our_value, their_value))
    ):
        return ours if our_value >= their_value else theirs
    if all(
        isinstance(v, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}.*", v)
        for v in (our_value, their_value)
    ):
        return ours if our_value >= their_value else theirs
    return None


# --- a conflict statement, as found (`conflicts_found.py` finds them) --------------------------


@dataclass(frozen=True)
class ConflictStatement:
    path: str
    line: int
    text: str
    versions: tuple[str, ...]

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "line": self.line,
            "text": self.text,
            "versions": list(self.versions),
        }
