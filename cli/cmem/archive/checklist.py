"""`archive/ARCHIVE-CHECKLIST.md`: converged notes staged for the archive, ticked by the user.

A pass appends a section per pass; the user ticks lines in Obsidian or any editor, then
`cmem archive apply` moves the ticked notes (docs/design.md §6). The format is written and read here
only.

It is a file people edit in Obsidian, so it is read leniently: extra spaces, `[X]`, `*` or `+`
bullets, numbered items, a missing digest or target are all understood. A line that looks staged
but cannot be understood is reported as `unparsed` — never silently dropped, never removed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal

from cmem.vault.statements import WIKILINK

if TYPE_CHECKING:
    from cmem.vault.layers import Vault

HEADERS = {
    "zh": (
        "# 归档清单 · Archive checklist\n\n"
        "收敛过的笔记在这里排队等待归档。问题都有了答案后，把行首的 `[ ]` 改成 `[x]`，\n"
        "再运行 `cmem archive apply`：它会列出移动计划、请你确认，然后用 git 移动并提交。什么都不会被删除。\n\n"
        "Converged notes wait here. Tick a line (`[x]`) once its questions are answered, then run\n"
        "`cmem archive apply`: it shows the moves, asks you to confirm, moves with git and commits.\n"
    ),
    "en": (
        "# Archive checklist\n\n"
        "Converged notes wait here. Tick a line (`[x]`) once its questions are answered, then run\n"
        "`cmem archive apply`: it shows the moves, asks you to confirm, moves them with git and\n"
        "commits. Nothing is ever deleted.\n"
    ),
}


def checklist_header(language: str) -> str:
    return HEADERS.get(language, HEADERS["en"])


def count_staged(text: str) -> tuple[int, int]:
    """(staged lines, ticked lines) — a cheap count for `cmem status`."""
    staged = ticked = 0
    for match in re.finditer(r"^\s*[-*+] \[([ xX])\]", text, re.MULTILINE):
        staged += 1
        ticked += match.group(1) in "xX"
    return staged, ticked


# --- writing the checklist: a pass stages its notes ------------------------------------------

_LINE_NOTE = re.compile(r"^\s*[-*+] \[[ xX]\] \[\[([^\]|#]+)")


@dataclass(frozen=True)
class StageEntry:
    note_name: str  # wikilink name of the divergent note
    target: str  # vault-relative archive path it will move to
    into: list[str]  # convergent files it went into
    sha256: str  # the note's digest when the pass read it


def archive_target(archive_dir: str, pattern: str, note_rel: str, note_date: str) -> str:
    """Where a note goes in the archive: `archive.pattern` filled with the note's own date and
    name, the note's folder kept (at `{folder}`, else just above its name), so
    `Journal/Daily/2024/04/2024-04-30.md` goes to `archive/2024-04/Journal/Daily/2024/04/…`."""
    yyyy, mm, dd = note_date.split("-")
    folder, _, name = note_rel.rpartition("/")
    stem = name[:-3] if name.endswith(".md") else name
    if "{folder}" not in pattern:
        pattern = pattern.replace("{name}", "{folder}/{name}")
    relative = (
        pattern.replace("{yyyy}", yyyy)
        .replace("{mm}", mm)
        .replace("{dd}", dd)
        .replace("{folder}", folder)
        .replace("{name}", stem)
    )
    relative = "/".join(part for part in relative.split("/") if part)  # a root note: no folder
    if not relative.endswith(".md"):
        relative += ".md"
    return f"{archive_dir}/{relative}"


def filing_date(name: str, frontmatter: str, mtime_ns: int | None, fallback: str) -> str:
    """The date a note is filed under in the archive: its own (`vault/moment.py: note_date`),
    else `fallback` (the pass's)."""
    from cmem.vault.moment import note_date

    found = note_date(name, frontmatter, mtime_ns / 1e9 if mtime_ns else None)
    return found.isoformat() if found is not None else fallback


def format_stage_line(entry: StageEntry) -> str:
    into = (
        ", ".join(f"[[{path.rsplit('/', 1)[-1].removesuffix('.md')}]]" for path in entry.into)
        or "—"
    )
    return (
        f"- [ ] [[{entry.note_name}]] → {entry.target} · into {into} · sha256:{entry.sha256[:16]}"
    )


def stage_notes(
    current: str | None, entries: list[StageEntry], pass_id: str, pass_date: str, language: str
) -> str:
    """The checklist with a new section for this pass. A note staged before (and edited and
    converged again since) loses its old line: one line per note, the latest digest."""
    text = current if current is not None else checklist_header(language)
    names = {entry.note_name for entry in entries}
    kept = [
        line
        for line in text.split("\n")
        if not ((m := _LINE_NOTE.match(line)) and m.group(1).strip() in names)
    ]
    text = "\n".join(kept).rstrip("\n") + "\n"
    section = [f"\n## {pass_date} · pass {pass_id}"] + [
        format_stage_line(entry) for entry in entries
    ]
    return text + "\n".join(section) + "\n"


# --- reading the checklist: `cmem archive`, undo, doctor --fix ---------------------------------

LineState = Literal[
    "ready", "changed", "missing", "unparsed", "refused", "uncited", "unreadable", "waiting"
]
READY: Final = "ready"
CHANGED: Final = "changed"
MISSING: Final = "missing"
UNPARSED: Final = "unparsed"
REFUSED: Final = "refused"  # the line's target is not a path inside the archive layer: never moved
# memory no longer holds what the note was converged into (`citations.py`): never moved, and
# `archive apply` makes the note pending again
UNCITED: Final = "uncited"
# the note, or a memory file it was converged into, cannot be read now: never moved, its state
# kept; it moves once the file can be read again
UNREADABLE: Final = "unreadable"
# lines of the note still wait for a judgement (a model's): never moved until a pass judged them
WAITING: Final = "waiting"

_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
# `[ ]`, `[x]`, `[X]`, `[ x ]`, and the Tasks plugin's `[-]` `[/]` `[>]` (only x counts as ticked)
_BOX = re.compile(r"^\[\s*([^\]\s]?)\s*\]\s*")
_ARROW = re.compile(r"(?:→|->|=>|⟶)\s*(.+?)\s*(?:·|\sinto\s+\[\[|\ssha256\s*[:=]|$)")
_INTO = re.compile(r"\binto\s+(\[\[.*?)(?:·|\ssha256\s*[:=]|$)")
_DIGEST = re.compile(r"sha256\s*[:=]\s*`?([0-9a-fA-F]{8,64})")
_SECTION = re.compile(r"^##\s+(\d{4}-\d{2}-\d{2})\s*·\s*pass\s+(\S+)\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass
class StagedLine:
    line_no: int  # 1-based in the checklist
    raw: str
    state: LineState
    note: str | None = None  # wikilink name of the staged note
    target: str | None = None  # vault-relative archive path from the line (or computed)
    ticked: bool = False
    digest: str | None = None  # digest prefix written on the line
    into: list[str] = field(default_factory=list)
    source: str | None = None  # where the note is now (vault-relative), when found
    pass_id: str | None = None  # from the section heading
    pass_date: str | None = None
    detail: str = ""  # why it is changed, uncited, missing, unparsed or refused
    recorded: bool = False  # state.json has an entry for the note (set with its citation state)

    def to_json(self) -> dict:
        return {
            "note": self.note,
            "target": self.target,
            "ticked": self.ticked,
            "state": self.state,
            "line": self.line_no,
            "source": self.source,
            "into": self.into,
            "pass": self.pass_id,
            "detail": self.detail,
            "raw": self.raw,
        }


def parse_checklist(text: str) -> list[StagedLine]:
    """Every line that stages a note, parsed leniently; states are filled in by `list_staged`."""
    staged: list[StagedLine] = []
    pass_id = pass_date = None
    in_fence = False
    for number, raw in enumerate(text.split("\n"), start=1):
        if _FENCE.match(raw):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        section = _SECTION.match(raw.strip())
        if section:
            pass_date, pass_id = section.group(1), section.group(2)
            continue
        line = _parse_line(raw, number)
        if line is not None:
            line.pass_id, line.pass_date = pass_id, pass_date
            staged.append(line)
    return staged


def _parse_line(raw: str, number: int) -> StagedLine | None:
    item = _ITEM.match(raw)
    if not item:
        return None
    rest = raw[item.end() :]
    box = _BOX.match(rest)
    link = WIKILINK.search(rest)
    if box is None:
        # A list item with a wikilink and an arrow is a staged line whose checkbox was lost.
        if link and _ARROW.search(rest):
            return StagedLine(
                number,
                raw,
                UNPARSED,
                note=_link_name(link.group(1)),
                detail="no checkbox: write `- [ ]` or `- [x]` before the link",
            )
        return None
    ticked = box.group(1) in ("x", "X")
    rest = rest[box.end() :]
    link = WIKILINK.search(rest)
    if link is None:
        return StagedLine(
            number, raw, UNPARSED, ticked=ticked, detail="no [[note]] link on the line"
        )
    after = rest[link.end() :]
    arrow = _ARROW.search(after)
    target = arrow.group(1).strip().strip("`'\"") if arrow else None
    if target and target.startswith("[[") and target.endswith("]]"):
        target = None  # a wikilink is not a path; the configured pattern decides
    into_match = _INTO.search(after)
    into = (
        [_link_name(m.group(1)) for m in WIKILINK.finditer(into_match.group(1))]
        if into_match
        else []
    )
    digest = _DIGEST.search(after)
    return StagedLine(
        number,
        raw,
        READY,
        note=_link_name(link.group(1)),
        target=target or None,
        ticked=ticked,
        digest=digest.group(1).lower() if digest else None,
        into=into,
    )


def _link_name(link: str) -> str:
    """`[[folder/name.md]]` and `[[name]]` both name the note `name`."""
    name = link.strip().rsplit("/", 1)[-1]
    return name[:-3] if name.endswith(".md") else name


def read_checklist(vault: Vault) -> tuple[str, bytes | None]:
    from cmem.regular_files import read_regular

    try:
        raw = read_regular(vault.checklist_path)
    except FileNotFoundError:
        return "", None
    text = raw.decode("utf-8", errors="replace")
    return text.lstrip("\ufeff").replace("\r\n", "\n"), raw


def remove_checklist_lines(text: str, line_numbers: set[int]) -> str:
    """The checklist without these lines, and without pass headings whose section is now empty
    (a heading is cmem's own; every line the user wrote stays)."""
    lines = [
        line for number, line in enumerate(text.split("\n"), start=1) if number not in line_numbers
    ]
    kept: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if _SECTION.match(line.strip()):
            end = index + 1
            while end < len(lines) and not lines[end].startswith("#"):
                end += 1
            if not any(lines[i].strip() for i in range(index + 1, end)):
                index = end  # an emptied section: drop its heading and blank lines
                continue
        kept.append(line)
        index += 1
    result = "\n".join(kept).rstrip("\n")
    return result + "\n" if result else ""
