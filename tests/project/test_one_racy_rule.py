"""One racy rule: every cache keyed by stats asks `cache_store.settled` whether a file's stat may
stand for what was read of it; no module compares a time with `RACY_NS` by hand."""

from __future__ import annotations

import ast

from cmem.cache_store import RACY_NS, settled
from support import REPO

PACKAGE = REPO / "cli" / "cmem"


def test_settled_is_the_racy_window():
    read_at = 10 * RACY_NS
    assert settled(read_at - RACY_NS - 1, read_at)
    assert not settled(read_at - RACY_NS, read_at)  # within the window: read again next time
    assert not settled(read_at, read_at)
    assert not settled(read_at + 1, read_at)  # an mtime after the read (a clock set back)


def test_no_module_compares_with_the_window_by_hand():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "cache_store.py":
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Compare) and any(
                isinstance(name, ast.Name) and name.id == "RACY_NS" for name in ast.walk(node)
            ):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert found == []
