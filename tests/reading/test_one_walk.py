"""One walk of the vault per read command: when no stored result answers `status` or `scan`, the
folders listed for the stored result's key are handed on to the command (Vault.list_folder), so
no folder is listed twice. Counted, not timed: every os.scandir and os.listdir call, per folder."""

from __future__ import annotations

import collections
import json
import os

import pytest
from typer.testing import CliRunner

from cmem.cli import app


def listings(monkeypatch, root, *argv: str) -> tuple[collections.Counter, str]:
    """How many times each folder of the vault was listed while `cmem argv` ran, and its output."""
    counts: collections.Counter = collections.Counter()
    real_scandir, real_listdir = os.scandir, os.listdir

    def count(path) -> None:
        rel = os.path.relpath(os.fspath(path), root)
        if not rel.startswith(".."):  # the vault's folders, not the machine folder
            counts[rel] += 1

    def scandir(path="."):
        count(path)
        return real_scandir(path)

    def listdir(path="."):
        count(path)
        return real_listdir(path)

    # its own context: undoing the test's monkeypatch would also undo the isolated home's
    with monkeypatch.context() as patch:
        patch.setattr(os, "scandir", scandir)  # os.walk looks it up here too
        patch.setattr(os, "listdir", listdir)
        result = CliRunner().invoke(app, [*argv, "--vault", str(root)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return counts, result.output


@pytest.mark.parametrize("command", ["status", "scan"])
def test_a_miss_lists_each_folder_once(sample_vault, monkeypatch, command):
    root = os.path.realpath(sample_vault)
    (sample_vault / "projects" / "deep").mkdir(parents=True)  # unmanaged notes: one more walker
    (sample_vault / "projects" / "deep" / "plan.md").write_text("# plan\n", encoding="utf-8")
    counts, out = listings(monkeypatch, root, command, "--json")
    assert {"converged/core", "archive/2026-10", "projects/deep"} <= set(counts)
    assert max(counts.values()) == 1, counts
    # and the command saw the same vault as one that lists every folder itself
    from cmem.vault import layers

    monkeypatch.setattr(layers.Vault, "list_folder", lambda self, f: list(os.scandir(f)))
    fresh = CliRunner().invoke(app, [command, "--json", "--vault", root], catch_exceptions=False)
    assert _stable(json.loads(out)) == _stable(json.loads(fresh.output))


def _stable(data: dict) -> dict:
    """Without the ages (seconds since a file's mtime: they move while the test runs)."""
    text = json.dumps(data, sort_keys=True)
    data = json.loads(text)
    for end in (data.get("convergent_age") or {}).values():
        if end:
            end.pop("age_seconds", None)
    return data
