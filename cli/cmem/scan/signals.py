"""Signals: what a scan finds in one divergent note (docs/design.md §2).

Four classes in priority order — correction, preference, decision, recurring — found by cues
(zh and en, extendable in config), never inside code blocks, inline code, URLs, HTML comments,
wikilink targets or frontmatter. One line gives at most one signal: its highest-priority cue.

Matching is literal, not regex: Python's `re` over this cue set is many times slower than rg
(docs/benchmarks.md). So the cues a note holds are found first, in one pass over one lowercased
copy (`text/cues.py: CueIndex`, an Aho-Corasick automaton); only the lines that hold a cue are
looked at again, and only there do the context rules run (word boundaries, the words around an
English cue, the characters around a Chinese one). A note without any cue costs one `lower()`
and that one pass.

Single, vague or emotional lines are *deferred*, not dropped: a one-off recurring cue, venting,
or a line with nothing left to act on once the cue is taken out. `converge: true` / `#converge`
confirms a note (its deferred lines become signals), `converge: false` / `#noconverge` excludes it.

The parts live by idea: the cues in `text/cues.py`, their context rules in `scan/matching.py`,
what is never read in `scan/masking.py`, venting and vagueness in `scan/tone.py`, recurrence
keys in `scan/recurrence.py`; this module puts them together for one note.
"""

from __future__ import annotations

import re
from collections import namedtuple
from dataclasses import dataclass, field

from cmem.scan.masking import blocked_lines, mask_inline
from cmem.scan.matching import _LEAD, find_cue
from cmem.scan.recurrence import phrase_keys, sentence_around
from cmem.scan.tone import MIN_CONTENT_UNITS, _venting, content_units
from cmem.text.cues import PRIORITY, _fold, cue_index
from cmem.vault.notes import Note
from cmem.vault.state_json import line_key
from cmem.vault.statements import WIKILINK, normalize, split_statement
from cmem.vault.yaml_reader import read_frontmatter

# Why a line is a deferral, not a signal: its Deferred.kind (DEFERRED: by the pass that judged
# the note, a model's reason or the builtin engine's).
ONE_OFF, VENTING, VAGUE, EXCLUDED, ALREADY_CONVERGED, DEFERRED = (
    "one-off",
    "venting",
    "vague",
    "excluded",
    "converged",
    "deferred",
)

# Why a note is pending (PendingNote.why), one value per reason `status` and `scan` name.
NEW, CHANGED, SIGNALS, UNJUDGED, RETURNED, RECURS, BACKLOG = (
    "new",
    "changed",
    "signals",
    "unjudged",
    "returned",
    "recurs",
    "backlog",
)


@dataclass(frozen=True)
class Signal:
    note: str  # vault-relative path
    line: int  # 1-based, in the file as it is on disk
    cls: str  # one of SIGNAL_CLASSES ("class" in JSON)
    cue: str
    excerpt: str  # the line, trimmed to a readable length

    @property
    def priority(self) -> int:
        return PRIORITY[self.cls]

    def to_json(self) -> dict:
        return {
            "note": self.note,
            "line": self.line,
            "class": self.cls,
            "priority": self.priority,
            "cue": self.cue,
            "excerpt": self.excerpt,
        }


@dataclass(frozen=True)
class Deferred:
    note: str
    line: int  # 0 when the whole note is deferred
    reason: str
    cls: str | None = None  # the class the line would have, so a confirmation keeps it
    cue: str = ""
    kind: str = ""  # ONE_OFF | VENTING | VAGUE | EXCLUDED | ALREADY_CONVERGED
    excerpt: str = ""
    # a cue line the builtin engine left for a model (no statement found, too long, no
    # subject): it waits for a model, not for the note to recur or be confirmed
    for_model: bool = False

    def to_json(self) -> dict:
        data = {"note": self.note, "line": self.line, "reason": self.reason, "kind": self.kind}
        if self.cls:
            data.update({"class": self.cls, "cue": self.cue, "excerpt": self.excerpt})
        if self.for_model:
            data["waits_for_model"] = True
        return data


@dataclass
class PendingNote:
    """A divergent note holding lines no pass has accounted for (docs/design.md §2): `why` says
    how."""

    rel: str
    name: str  # wikilink name
    sha256: str
    mtime_ns: int
    signals: list[Signal] = field(default_factory=list)  # its cue lines: they rank, never gate
    tags: list[str] = field(default_factory=list)  # frontmatter tags and inline #tags
    links: list[str] = field(default_factory=list)  # wikilink targets in the body
    confirmed: bool = False  # `converge: true` or #converge
    why: str = NEW  # NEW | CHANGED | SIGNALS | UNJUDGED | RETURNED | RECURS | BACKLOG
    # only a model can take it: no cue line (the builtin engine reads cue lines only), or lines
    # the builtin engine judged already
    model_only: bool = False
    tokens: int = 0
    # line keys a pass converged (or a model deferred, while that stands): not judged again
    accounted: frozenset[str] = frozenset()
    keys: list[str] = field(default_factory=list)  # recurrence key phrases of its cue lines
    # its content lines no engine judges without a model: not converged, not a cue line the
    # builtin engine takes, not deferred by the scan's rules (`reading/waiting.py` sums them)
    model_lines: int = 0

    @property
    def best_priority(self) -> int:
        return min((s.priority for s in self.signals), default=9)

    def to_json(self) -> dict:
        return {
            "note": self.rel,
            "name": self.name,
            "signals": len(self.signals),
            "best_priority": self.best_priority,
            "tags": self.tags,
            "links": self.links,
            "confirmed": self.confirmed,
            "why": self.why,
            "waits_for_model": self.model_only,
            "model_lines": self.model_lines,
            "tokens": self.tokens,
        }


@dataclass(frozen=True)
class Quarantined:
    """A note no pass takes until it changes (or is renamed): one that would stop every pass
    (docs/design.md §5; issue 35). `reason` says why, `way_out` what the user can do."""

    note: str
    reason: str
    way_out: str

    def to_json(self) -> dict:
        return {"note": self.note, "reason": self.reason, "way_out": self.way_out}


@dataclass(frozen=True)
class BacklogNote:
    """A note an adopted folder held, unchanged since: converged when the user asks for it."""

    note: str
    tokens: int


# --- per-note detection -----------------------------------------------------------------


def defer_reason(kind: str, cue: str, min_recurrence: int | None = None) -> str:
    """Why a cue line waits (Deferred.reason), for the kinds a single note can tell."""
    if kind == VAGUE:
        return f"too vague to act on (little besides '{cue}'); add detail or confirm the note"
    if kind == VENTING:
        return "emotional (venting); waits until it recurs or the note is confirmed"
    where = f"{min_recurrence} notes" if min_recurrence else "other notes"
    return (
        f"one-off recurring cue '{cue}'; waits until it recurs in {where} or the note is confirmed"
    )


class Hit(
    namedtuple(
        "Hit",
        "line cls cue excerpt kind line_key content_key keys",
        defaults=("", "", "", ()),
    )
):
    """A cue found on one line, before the vault-wide rules (state, recurrence, guard) apply.

    line: 1-based; cls; cue; excerpt; kind: "" for a signal, else why it is deferred (ONE_OFF,
    VENTING, VAGUE); line_key: state.line_key of the line ("new lines only" for edited notes);
    content_key: the normalised statement (scan.py caches a digest), for the guard and
    re-emergence; keys: recurrence key phrases (recurring class only).

    A named tuple, not a frozen dataclass: a cold scan makes two for every cue line (here, and
    the scanner's with the digest), and a frozen dataclass's __init__ sets each of the eight
    fields through object.__setattr__, several times the cost of the hit itself."""

    __slots__ = ()

    @property
    def reason(self) -> str:
        return defer_reason(self.kind, self.cue) if self.kind else ""

    def to_list(self) -> list:
        return [
            self.line,
            self.cls,
            self.cue,
            self.excerpt,
            self.kind,
            self.line_key,
            self.content_key,
            list(self.keys),
        ]

    @classmethod
    def from_list(cls, data: list) -> Hit:
        line, klass, cue, excerpt, kind, lkey, ckey, keys = data
        return cls(
            int(line),
            str(klass),
            str(cue),
            str(excerpt),
            str(kind),
            str(lkey),
            str(ckey),
            tuple(keys),
        )


@dataclass
class NoteFlags:
    confirmed: bool = False
    excluded: bool = False
    reason: str = ""  # which flag confirmed or excluded it
    tags: list[str] = field(default_factory=list)
    problem: str | None = None  # frontmatter that does not parse


@dataclass
class NoteScan:
    """What one note holds for the scanner: cached per path and stat (mtime, size, inode, ctime)."""

    hits: list[Hit] = field(default_factory=list)
    flags: NoteFlags = field(default_factory=NoteFlags)
    links: list[str] = field(default_factory=list)


MAX_EXCERPT = 200


def excerpt_of(line: str, pos: int) -> str:
    """The line as `scan` shows it: whole when short (its credentials are redacted where it is
    shown), else the part around the cue at `pos`, cut from the line with its credentials
    redacted first: a cut never leaves part of a token, nor a value without its label."""
    text = line.strip()
    if len(text) <= MAX_EXCERPT:
        return text
    from cmem.text.secrets import redact_secrets

    lead = len(line) - len(line.lstrip())
    redacted, found = redact_secrets(text)
    if found:  # the cue's place in the redacted line
        pos = lead + len(redact_secrets(text[: max(0, pos - lead)])[0])
        text = redacted
        if len(text) <= MAX_EXCERPT:
            return text
    offset = max(0, pos - lead - MAX_EXCERPT // 3)
    piece = text[offset : offset + MAX_EXCERPT]
    return ("…" if offset else "") + piece + ("…" if offset + MAX_EXCERPT < len(text) else "")


_TS_PREFIX = re.compile(r"^\s*(?:[-*+]|\d+[.)])?\s*(?:\[[ xX]\]\s*)?\d{1,2}:\d{2}\s+")


def content_key(line: str, formats=None) -> str:
    """The normalised statement a line makes: no list marker, capture time, source or trace."""
    # a capture time holds a colon: most lines have none and skip the regex
    core, _, _ = split_statement(_TS_PREFIX.sub("", line) if ":" in line else line, formats)
    return normalize(core)


def detect_line(
    line: str, cues, line_no: int = 0, masked: str | None = None, formats=None
) -> Hit | None:
    """The one signal a line gives (or would give, if it were not deferred), or None."""
    masked = mask_inline(line) if masked is None else masked
    low = _fold(masked)
    found = find_cue(low, [c for c in cues if c.text in low])
    if found is None:
        return None
    cue, pos = found
    kind = ""
    rest = low[:pos] + " " + low[pos + len(cue.text) :]
    if content_units(_LEAD.sub(" ", rest, count=1), MIN_CONTENT_UNITS) < MIN_CONTENT_UNITS:
        kind = VAGUE
    elif cue.cls != "correction" and _venting(masked, low, pos, len(cue.text)):
        kind = (
            VENTING  # a correction stays a signal however angry: the user is saying what is wrong
        )
    elif cue.cls == "recurring":
        kind = ONE_OFF
    keys = (
        tuple(phrase_keys(sentence_around(low, pos, pos + len(cue.text))))
        if cue.cls == "recurring"
        else ()
    )
    return Hit(
        line_no,
        cue.cls,
        cue.text,
        excerpt_of(line, pos),
        kind,
        line_key(line),
        content_key(line, formats),
        keys,
    )


def scan_note(note: Note, extra_cues: dict | None = None, formats=None) -> NoteScan:
    """Every cue line of one (usable) note, its flags, tags and links."""
    lowered = _fold(note.text)
    flags = read_flags(note, lowered)
    result = NoteScan(flags=flags)
    if flags.excluded:
        return result
    active, ends = cue_index(extra_cues).find(lowered)
    if not active:
        return result
    # The lines a cue occurs on, from where the one pass that found the cues saw them;
    # frontmatter lines are never candidates. lower() never adds or drops a line end, so line
    # indices in `lowered` are the note's own.
    candidates = _lines_of(lowered, ends, note.body_start - 1)
    if not candidates:
        return result
    lines = note.lines
    # Without fences or comments the only blocked lines are the frontmatter's (blocked_lines
    # would return just those): the walk over the lines is needed only when a block may exist.
    has_blocks = _has_blocks(lowered)
    blocked, tails = (
        blocked_lines(lines, note.body_start)
        if has_blocks
        else (set(range(note.body_start - 1)), set())
    )
    for index in sorted(candidates):
        if index in blocked:
            continue
        line = lines[index]
        # matched on the line as written: lower() leaves whitespace, #, > and | as they are
        if _NOT_SAID.match(line):
            continue  # a heading names a part of the note, a table row is data
        masked = mask_inline(_blank_comment_head(line) if index in tails else line)
        hit = detect_line(line, active, index + 1, masked, formats)
        if hit is not None:
            result.hits.append(hit)
    if result.hits:
        result.flags.tags = _merge_tags(flags.tags, inline_tags(lines, blocked))
        # without blocks only the frontmatter is skipped: one search over the body finds the
        # links a walk over its lines would (a link never spans a line end)
        result.links = (
            wikilinks(lines, blocked)
            if has_blocks
            else _links_in(note.text, _offset_of_line(lines, note.body_start - 1))
        )
    return result


def _offset_of_line(lines: list[str], index: int) -> int:
    """Where line `index` (0-based) starts in the text the lines were split from."""
    return sum(len(line) + 1 for line in lines[:index])


def _links_in(text: str, start: int) -> list[str]:
    found: dict[str, None] = {}
    for match in WIKILINK.finditer(text, start):
        found[match.group(1).strip()] = None
    return list(found)


# Blockquotes and callouts are read like any line: Obsidian's daily templates put the day's
# answers in `>` lines (docs/design.md §2, "every line of a note is its text"); a cue only ranks the
# note.
_NOT_SAID = re.compile(r"^\s{0,3}(?:#{1,6}(?:\s|$)|\|)")


def _has_blocks(lowered: str) -> bool:
    # one character first: a search for one character runs in C at memchr speed, and most notes
    # hold no backtick, tilde or `<` at all
    return (
        ("`" in lowered and "```" in lowered)
        or ("~" in lowered and "~~~" in lowered)
        or ("<" in lowered and "<!--" in lowered)
    )


def _blank_comment_head(line: str) -> str:
    end = line.find("-->") + 3
    return " " * end + line[end:]


def detect_signals(
    note: Note, extra_cues: dict | None = None
) -> tuple[list[Signal], list[Deferred]]:
    """Signals and deferred lines of one note on its own: confirmation and exclusion apply,
    recurrence across notes, the state and the feedback-loop guard do not (see scan.py)."""
    scanned = scan_note(note, extra_cues)
    if scanned.flags.excluded:
        return [], [Deferred(note.rel, 0, excluded_reason(scanned.flags), kind=EXCLUDED)]
    signals, deferred = [], []
    for hit in scanned.hits:
        if not hit.kind or scanned.flags.confirmed:
            signals.append(Signal(note.rel, hit.line, hit.cls, hit.cue, hit.excerpt))
        else:
            deferred.append(
                Deferred(note.rel, hit.line, hit.reason, hit.cls, hit.cue, hit.kind, hit.excerpt)
            )
    return signals, deferred


def excluded_reason(flags: NoteFlags) -> str:
    return f"excluded from convergence ({flags.reason})"


# --- flags, tags and links (plain frontmatter read without a parser: yaml_reader) ------

_TRUE, _FALSE = {"true", "yes", "on"}, {"false", "no", "off"}


def _as_bool(value) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    return None


def _as_tags(value) -> list[str]:
    if isinstance(value, str):
        value = re.split(r"[,\s]+", value)
    if not isinstance(value, list):
        return []
    return [str(tag).strip().lstrip("#") for tag in value if str(tag).strip().lstrip("#")]


def read_flags(note: Note, lowered: str | None = None) -> NoteFlags:
    """`converge:` and `tags:` from the frontmatter, and #converge / #noconverge in the body.
    The YAML parser runs only for frontmatter that is not plain (and then reports errors)."""
    flags = NoteFlags()
    lowered = _fold(note.text) if lowered is None else lowered
    converge = None
    if note.frontmatter and note.frontmatter.strip():
        data, flags.problem = read_frontmatter(note.frontmatter)
        converge = _as_bool(data.get("converge"))
        flags.tags = _as_tags(data.get("tags"))
    tags = set(flags.tags)
    # both tags hold "converge", which few notes do: one search answers for most
    if "converge" in lowered and ("#converge" in lowered or "#noconverge" in lowered):
        blocked, _ = blocked_lines(note.lines, note.body_start)
        tags |= set(inline_tags(note.lines, blocked))
    if converge is False or "noconverge" in tags:
        flags.excluded, flags.reason = (
            True,
            "converge: false" if converge is False else "#noconverge",
        )
    elif converge is True or "converge" in tags:
        flags.confirmed, flags.reason = True, "converge: true" if converge is True else "#converge"
    return flags


# `#` first, then the lookbehind: a pattern starting with a literal is searched for that
# character alone (tests/scan/test_signals.py holds the two forms equal)
_TAG = re.compile(r"#(?<![\w#&/]#)([^\s#\[\](){}<>,.;:!?\"'`，。；：！？、（）「」]+)")


def inline_tags(lines: list[str], blocked: set[int]) -> list[str]:
    """Obsidian #tags in the body (a tag needs a non-digit: #123 is not one)."""
    found: dict[str, None] = {}
    for index, line in enumerate(lines):
        if index in blocked or "#" not in line:
            continue
        for match in _TAG.finditer(mask_inline(line)):
            tag = match.group(1).rstrip("/")
            if tag and not tag.isdigit():
                found[tag] = None
    return list(found)


def wikilinks(lines: list[str], blocked: set[int]) -> list[str]:
    found: dict[str, None] = {}
    for index, line in enumerate(lines):
        if index in blocked or "[[" not in line:
            continue
        for match in WIKILINK.finditer(line):
            found[match.group(1).strip()] = None
    return list(found)


def _merge_tags(first: list[str], second: list[str]) -> list[str]:
    return list(dict.fromkeys([*first, *second]))


def _lines_of(lowered: str, ends: list[int], first: int) -> set[int]:
    """0-based indices of the lines, from line `first` on, that hold these offsets (ascending:
    the cues' occurrences; a cue text holds no line end, so an occurrence lies on one line)."""
    found: set[int] = set()
    line, counted = 0, 0  # line index of offset `counted`
    for end in ends:
        line += lowered.count("\n", counted, end)
        counted = end
        if line >= first:
            found.add(line)
    return found
