"""The unified diff and diffstat of the memory files a pass rewrites: what `--diff`, a dry run
and `--json` show (`PassResult.diff`, `PassResult.diffstat`)."""

from __future__ import annotations

import difflib


def make_diff(
    originals: dict[str, str], writes: dict[str, str]
) -> tuple[str, list[tuple[str, int, int]]]:
    chunks, stats = [], []
    for rel in sorted(writes):
        old = originals.get(rel)
        old_lines = [] if old is None else old.splitlines(keepends=True)
        new_lines = writes[rel].splitlines(keepends=True)
        diff = list(
            difflib.unified_diff(
                old_lines,
                new_lines,
                f"a/{rel}" if old is not None else "/dev/null",
                f"b/{rel}",
                n=2,
            )
        )
        added = sum(1 for line in diff if line.startswith("+") and not line.startswith("+++"))
        removed = sum(1 for line in diff if line.startswith("-") and not line.startswith("---"))
        stats.append((rel, added, removed))
        chunks.append("".join(line if line.endswith("\n") else line + "\n" for line in diff))
    return "".join(chunks), stats
