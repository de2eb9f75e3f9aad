"""`archive/ARCHIVE-CHECKLIST.md`: converged notes staged for the archive, ticked by the user.

A pass appends a section per pass; the user ticks lines in Obsidian or any editor, then
`cmem archive apply` moves the ticked notes (SPEC §6).
"""

from __future__ import annotations

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
    import re

    staged = ticked = 0
    for match in re.finditer(r"^\s*[-*+] \[([ xX])\]", text, re.MULTILINE):
        staged += 1
        ticked += match.group(1) in "xX"
    return staged, ticked


import re as _re
from dataclasses import dataclass as _dataclass

_LINE_NOTE = _re.compile(r"^\s*[-*+] \[[ xX]\] \[\[([^\]|#]+)")


@_dataclass(frozen=True)
class StageEntry:
    note_name: str  # wikilink name of the divergent note
    target: str  # vault-relative archive path it will move to
    into: list[str]  # convergent files it went into
    sha256: str  # the note's digest when the pass read it


def archive_target(archive_dir: str, pattern: str, note_rel: str, pass_date: str) -> str:
    yyyy, mm, dd = pass_date.split("-")
    name = note_rel.rsplit("/", 1)[-1]
    stem = name[:-3] if name.endswith(".md") else name
    relative = pattern.replace("{yyyy}", yyyy).replace("{mm}", mm).replace("{dd}", dd).replace("{name}", stem)
    if not relative.endswith(".md"):
        relative += ".md"
    return f"{archive_dir}/{relative}"


def format_stage_line(entry: StageEntry) -> str:
    into = ", ".join(f"[[{path.rsplit('/', 1)[-1].removesuffix('.md')}]]" for path in entry.into) or "—"
    return f"- [ ] [[{entry.note_name}]] → {entry.target} · into {into} · sha256:{entry.sha256[:16]}"


def stage_notes(current: str | None, entries: list[StageEntry], pass_id: str, pass_date: str, language: str) -> str:
    """The checklist with a new section for this pass. A note staged before (and edited and
    converged again since) loses its old line: one line per note, the latest digest."""
    text = current if current is not None else checklist_header(language)
    names = {entry.note_name for entry in entries}
    kept = [line for line in text.split("\n") if not ((m := _LINE_NOTE.match(line)) and m.group(1).strip() in names)]
    text = "\n".join(kept).rstrip("\n") + "\n"
    section = [f"\n## {pass_date} · pass {pass_id}"] + [format_stage_line(entry) for entry in entries]
    return text + "\n".join(section) + "\n"
