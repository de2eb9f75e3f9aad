"""One cache store: every cache is a `cache_store.Kept` file whose kind names its format in
`cache_store.FORMATS`, each kind used by exactly one module; no module reads a cache file with
marshal itself or keeps a cache format of its own (the vault's own files — state.json, the
backlog, the step journal — carry theirs: they are data, not caches)."""

from __future__ import annotations

import ast
import re

from cmem.cache_store import FORMATS
from support import REPO

PACKAGE = REPO / "cli" / "cmem"
VAULT_DATA = {"vault/state_json.py", "vault/backlog.py", "steps/journal.py"}
# Files cmem may lose that are records, not caches: written whole by `write_cache`, read as text.
RECORDS = {
    "sync/record.py",
    "triggers/hook_record.py",
    "reading/stored_context.py",
    "vault/warned.py",
}


def sources() -> dict[str, str]:
    return {
        str(path.relative_to(PACKAGE)): path.read_text("utf-8")
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "cache_store.py"
    }


def _kinds_named(text: str) -> set[str]:
    """The kinds a module names: `Kept(path, "kind", ...)` and `FORMATS["kind"]`."""
    found = set()
    for node in ast.walk(ast.parse(text)):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Kept"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
        ):
            found.add(node.args[1].value)
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == "FORMATS"
            and isinstance(node.slice, ast.Constant)
        ):
            found.add(node.slice.value)
    return found


def test_every_kind_in_the_registry_is_used_by_one_module():
    named = {rel: _kinds_named(text) for rel, text in sources().items()}
    for kind in FORMATS:
        users = [rel for rel, kinds in named.items() if kind in kinds]
        assert len(users) == 1, (kind, users)
    unknown = {kind for kinds in named.values() for kind in kinds} - set(FORMATS)
    assert unknown == set()


def test_no_module_reads_a_cache_file_itself():
    """marshal encodes values inside entries (a scan entry, a key's stats); a file of them is
    read only through `Kept`."""
    found = []
    for rel, text in sources().items():
        for node in ast.walk(ast.parse(text)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("loads", "load")
                and getattr(node.func.value, "id", None) == "marshal"
                and node.args
                and isinstance(node.args[0], ast.Call)
                and getattr(node.args[0].func, "attr", None) in ("read", "read_bytes")
            ):
                found.append(f"{rel}:{node.lineno}")
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", None) == "write_cache"
                and rel not in RECORDS
            ):
                found.append(f"{rel}:{node.lineno} write_cache")
    assert found == []


def test_no_module_keeps_a_cache_format_of_its_own():
    own = []
    for rel, text in sources().items():
        if rel in VAULT_DATA:
            continue
        for node in ast.parse(text).body:
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, (int, str))
                and any(
                    isinstance(t, ast.Name) and re.search(r"VERSION|FORMAT|REWRITES", t.id)
                    for t in node.targets
                )
            ):
                own.append(f"{rel}:{node.lineno}")
    assert own == []
