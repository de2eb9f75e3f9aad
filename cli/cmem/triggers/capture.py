"""`cmem note TEXT`: quick capture — one timestamped line appended to today's note in the
divergent layer (docs/design.md §9): today's daily note where Obsidian's settings keep one (its
folder, its name format, made from its template when missing), else today's capture note; under the
heading `capture.heading` names (added at the end when the note has none), else at the end."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from cmem.atomic import write_atomic
from cmem.errors import CmemError, UsageError
from cmem.regular_files import special_kind
from cmem.text.folding import fold_case
from cmem.vault.layers import DIVERGENT, Vault
from cmem.vault.notes import line_end, read_text_exact


@dataclass(frozen=True)
class Captured:
    rel: str
    line: int
    created: bool
    text: str
    daily: bool = False  # written into today's daily note (Obsidian's settings)
    notice: str = ""  # what the user should know: a template not used, a daily note not read


@dataclass(frozen=True)
class _Target:
    path: Path
    daily: bool
    start: str  # a new note's text before the captured line
    notice: str = ""


# One captured line at most (as a session turn is by default: sessions.max_turn_chars).
NOTE_MAX_CHARS = 4000


def capture_note(vault: Vault, text: str, now: datetime | None = None) -> Captured:
    text = " ".join(text.split())  # one line: a capture never breaks the note's structure
    if not text:
        raise UsageError('nothing to note: give the text to capture, e.g. cmem note "以后都用 uv".')
    if len(text) > NOTE_MAX_CHARS:  # `cmem note` and the MCP `note` tool alike
        raise UsageError(
            f"a note line takes at most {NOTE_MAX_CHARS:,} characters, not {len(text):,}; "
            "write longer text into a note of its own in the vault."
        )
    now = now or datetime.now().astimezone()
    from cmem.steps.lock import notes_lock

    # every writer of a note holds this lock (steps/lock.py): no two create today's note, and
    # no step moves or rewrites it between our read and our write
    with notes_lock(vault.machine_dir):
        target = _daily_target(vault, now) or _capture_target(vault, now)
        path, rel = target.path, vault.rel(target.path)
        line = f"- {now.strftime('%H:%M')} {text}"
        if path.is_symlink():
            raise CmemError(f"{rel} is a symbolic link; cmem does not write through links.")
        vault.confined(rel, DIVERGENT)  # the note's folder may be a link out of the vault
        kind = special_kind(path.stat().st_mode) if path.exists() else None
        if kind:  # opened, a FIFO would block the command until something reads it
            raise CmemError(f"{rel} is {kind}, not a regular file; cmem will not write to it.")
        heading = vault.config.capture_heading
        if not path.exists():
            new, line_no = with_line(target.start, line, heading)
            path.parent.mkdir(parents=True, exist_ok=True)  # a daily note's YYYY/MM folders
            try:
                write_atomic(path, new, exclusive=True)
                return Captured(rel, line_no, True, text, target.daily, target.notice)
            except FileExistsError:
                pass  # an editor or a sync client made it meanwhile: write into theirs
        raw, current = _current(path, rel)
        crlf = line_end(raw) == b"\r\n"
        current = current.replace("\r\n", "\n")  # a CRLF checkout (core.autocrlf)
        new, line_no = with_line(current, line, heading)
        if new.startswith(current):
            _append(path, new[len(current) :], crlf)
        else:
            _replace(path, rel, raw, new.replace("\n", "\r\n") if crlf else new)
    return Captured(rel, line_no, False, text, target.daily, target.notice)


def _current(path: Path, rel: str) -> tuple[bytes, str]:
    try:
        raw, current = read_text_exact(path)
    except UnicodeDecodeError:
        raise CmemError(
            f"{rel} is not valid UTF-8; cmem will not append to it (fix its encoding first)."
        ) from None
    crlf = line_end(raw) == b"\r\n"
    if raw.startswith(b"\xef\xbb\xbf") or (b"\r" in raw and not crlf):
        raise CmemError(
            f"{rel} has a byte-order mark or mixed line ends; cmem will not rewrite it."
        )
    if b"\x00" in raw:
        raise CmemError(f"{rel} contains NUL bytes (a binary file?); cmem will not append to it.")
    return raw, current


def _append(path: Path, appended: str, crlf: bool) -> None:
    """Append rather than replace when the line goes at the end: an editor holding the file open
    sees a plain append, and no byte of the user's note is rewritten."""
    with open(path, "ab") as handle:
        handle.write((appended.replace("\n", "\r\n") if crlf else appended).encode("utf-8"))
        handle.flush()
        os.fsync(handle.fileno())


def _replace(path: Path, rel: str, read: bytes, new: str) -> None:
    """The note with the line inside it, replaced whole — unless it changed since it was read
    (Obsidian saving it): then nothing is written and the user is told to try again."""

    def unchanged() -> None:
        with open(path, "rb") as handle:
            if handle.read() != read:
                raise CmemError(
                    f"{rel} changed while cmem was noting; nothing was written: try again."
                )

    write_atomic(path, new, before_replace=unchanged)


# --- where the line goes ------------------------------------------------------------------


def _capture_target(vault: Vault, now: datetime) -> _Target:
    name = vault.config.capture_pattern.replace("{date}", now.strftime("%Y-%m-%d"))
    if not name.endswith(".md"):
        name += ".md"  # a plain name: the config checks it
    folder = vault.root / vault.config.capture_folder if vault.config.capture_folder else vault.root
    path = _unarchived_name(vault, folder, name, now.strftime("%Y-%m-%d"))
    return _Target(path, False, f"# {path.stem}\n\n")


def _daily_target(vault: Vault, now: datetime) -> _Target | None:
    """Today's daily note as Obsidian's settings keep it, when they keep one and its folder is a
    divergent input (a note cmem never reads would hold the line in vain)."""
    if not vault.config.capture_daily:
        return None
    from cmem.vault.obsidian import daily_notes

    settings = daily_notes(vault.root)
    if settings is None:
        return None
    rel = settings.path_of(now)
    if vault.layer_of(rel) != DIVERGENT or vault.path_problem(rel, DIVERGENT):
        return _with_notice(
            _capture_target(vault, now),
            f"today's daily note {rel} ({settings.settings}) is in no divergent folder, so cmem "
            f"would never read it; add {settings.folder or '.'}/** to divergent.extra_folders to "
            "note there",
        )
    start, notice = _from_template(vault, settings, now, Path(rel).stem)
    return _Target(vault.root / rel, True, start, notice)


def _with_notice(target: _Target, notice: str) -> _Target:
    return _Target(target.path, target.daily, target.start, notice)


def _from_template(vault: Vault, settings, now: datetime, title: str) -> tuple[str, str]:
    """A new daily note's text: its template with Obsidian's core variables filled in
    ({{date}}, {{time}}, {{title}}). A Templater template (`<% … %>`) is not used: only Obsidian
    runs it, and copied as it is it would leave code in the note."""
    if not settings.template:
        return "", ""
    from cmem.vault.moment import fill_core_template

    where = settings.template
    if vault.path_problem(where) or not (vault.root / where).is_file():
        return "", f"the daily-notes template {where} was not found; today's note starts empty"
    try:
        template = (vault.root / where).read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return "", f"the daily-notes template {where} cannot be read; today's note starts empty"
    if "<%" in template:
        return "", (
            f"the daily-notes template {where} uses Templater, which only Obsidian runs; "
            "today's note starts empty (Templater's 'Replace templates in the active file' fills it)"
        )
    return fill_core_template(template, now, title, settings.format), ""


_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def with_line(text: str, line: str, heading: str = "") -> tuple[str, int]:
    """`text` with `line` added, and the line's number: at the end of the section under
    `heading` (the first heading of that level and words, outside code fences), or under a new
    such heading at the end, or, with no heading asked for, at the end."""
    if not heading:
        before = text + ("\n" if text and not text.endswith("\n") else "")
        return before + line + "\n", before.count("\n") + 1
    wanted = _HEADING.match(heading.strip())
    if wanted is None:
        raise CmemError(f"setting 'capture.heading' must be a Markdown heading, not {heading!r}.")
    level, words = len(wanted.group(1)), fold_case(wanted.group(2))
    lines = text.split("\n")
    at, fenced = None, False
    for index, current in enumerate(lines):
        if _FENCE.match(current):
            fenced = not fenced
            continue
        found = None if fenced else _HEADING.match(current)
        if found is None:
            continue
        if at is None and len(found.group(1)) == level and fold_case(found.group(2)) == words:
            at = index
        elif at is not None and len(found.group(1)) <= level:
            return _insert(lines, at, index, line)
    if at is not None:
        return _insert(lines, at, len(lines), line)
    before = (text.rstrip("\n") + "\n\n" if text.strip() else "") + heading.strip() + "\n"
    return before + line + "\n", before.count("\n") + 1


def _insert(lines: list[str], heading: int, end: int, line: str) -> tuple[str, int]:
    last = end - 1
    while last > heading and not lines[last].strip():
        last -= 1
    out = lines[: last + 1] + [line] + lines[last + 1 :]
    text = "\n".join(out)
    return (text if text.endswith("\n") else text + "\n"), last + 2


def _unarchived_name(vault: Vault, folder: Path, name: str, date: str) -> Path:
    """Today's capture note, unless today's note was already converged and archived: a second
    note of the same name would make its wikilinks ambiguous, so it becomes `… 2.md`."""
    from cmem.archive.checklist import archive_target

    stem = name[:-3]
    for counter in range(1, 100):
        candidate = name if counter == 1 else f"{stem} {counter}.md"
        path = folder / candidate
        rel = vault.rel(path)
        if (
            path.exists()
            or not (
                vault.root
                / archive_target(vault.config.archive_dir, vault.config.archive_pattern, rel, date)
            ).exists()
        ):
            return path
    raise CmemError(f"too many capture notes named like {name!r} today.")
