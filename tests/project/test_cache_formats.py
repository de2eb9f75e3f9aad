"""One version registry: every cache's format number is `cache_file.FORMATS`, each entry read by
exactly one module; no module keeps a cache format of its own (the vault's own files — state.json,
the backlog, the step journal — carry theirs: they are data, not caches)."""

from __future__ import annotations

import ast
import re

from cmem.cache_file import FORMATS
from support import REPO

PACKAGE = REPO / "cli" / "cmem"
VAULT_DATA = {"vault/state_json.py", "vault/backlog.py", "steps/journal.py"}


def sources() -> dict[str, str]:
    return {
        str(path.relative_to(PACKAGE)): path.read_text("utf-8")
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def test_every_format_in_the_registry_is_read_by_one_module():
    for name in FORMATS:
        users = [rel for rel, text in sources().items() if f'FORMATS["{name}"]' in text]
        assert len(users) == 1, (name, users)


def test_no_module_keeps_a_cache_format_of_its_own():
    own = []
    for rel, text in sources().items():
        if rel == "cache_file.py" or rel in VAULT_DATA:
            continue
        for node in ast.parse(text).body:
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, int)
                and any(
                    isinstance(t, ast.Name) and re.search(r"VERSION|FORMAT", t.id)
                    for t in node.targets
                )
            ):
                own.append(f"{rel}:{node.lineno}")
    assert own == []
