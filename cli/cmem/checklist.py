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
