"""Shared fixtures. Every test runs with its own HOME, XDG folders and git identity, so no test
touches a real home, a real user config or a real state folder. Plain helpers (a vault's
files byte for byte, cmem in a real process, git) are in support.py."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

# The converge tests' shared vault, offered to every test file as a fixture (defined with the
# fake model's wiring in pass_helpers.py); plain helpers are imported from support.py directly.
from pass_helpers import pass_vault  # noqa: F401
from support import SAMPLE_VAULT, TESTS, git_init, isolate, wait_out_midnight, write_files

# The modules whose tests take longest together (minutes on a busy machine), longest first.
# pyproject's addopts hands each module whole to one xdist worker (`--dist loadscope`, so a
# module-scoped fixture is built once), in collection order: these start first, and no worker is
# still in one when the others have finished the rest. tests/project/test_support.py checks the
# names against the files.
LONGEST_FIRST = (
    "reading/test_stored_sequences.py",
    "sync/test_sync.py",
    "project/test_bench.py",
    "steps/test_journal_binding.py",
    "steps/test_step_seams.py",
    "triggers/test_triggers.py",
    "triggers/test_note_writers.py",
    "converge/test_converge.py",
    "converge/test_validate_linear.py",
    "archive/test_state_file_faults.py",
    "vault/test_adoption.py",
    "guarantees/test_security.py",
    "project/test_quality_bench.py",
    "agents/test_gemini.py",
    "guarantees/test_state_folder_private.py",
    "guarantees/test_sequences.py",
    "reading/test_failed_pass_shown.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest modules first, each whole; the rest in collection order (every xdist worker
    collects the same order)."""
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}

    def place(item: pytest.Item) -> int:
        rel = item.path.relative_to(TESTS).as_posix() if item.path.is_relative_to(TESTS) else ""
        return rank.get(rel, len(rank))

    items.sort(key=place)


@pytest.fixture(autouse=True)
def same_day():
    """A test and the commands it runs see one date: none starts just before midnight."""
    wait_out_midnight()


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("home")
    outside = os.environ.get("HOME")
    isolate(monkeypatch, home)
    yield home
    if outside is not None and os.environ.get("HOME") == outside:
        pytest.fail(
            "the test undid the home isolation (monkeypatch.undo() undoes this fixture's patches "
            "too): what it ran after that used the real HOME and git identity; undo patches of "
            "its own with `with monkeypatch.context() as patch:`",
            pytrace=False,
        )


@pytest.fixture
def make_vault(tmp_path):
    """make_vault(files, config_yaml="") -> Path: a bare vault (no git) with these files."""
    counter = {"n": 0}

    def _make(
        files: dict[str, str | bytes] | None = None, config_yaml: str = "", git: bool = False
    ) -> Path:
        counter["n"] += 1
        root = tmp_path / f"vault{counter['n']}"
        (root / ".cmem").mkdir(parents=True)
        (root / ".cmem" / "config.yaml").write_text(config_yaml, encoding="utf-8")
        for folder in ("converged/core", "converged/topics", "archive"):
            (root / folder).mkdir(parents=True, exist_ok=True)
        write_files(root, files or {})
        if git:
            git_init(root)
        return root

    return _make


@pytest.fixture
def sample_vault(tmp_path) -> Path:
    """A copy of sample-vault/ in tmp_path, made a git repository."""
    root = tmp_path / "sample"
    shutil.copytree(SAMPLE_VAULT, root, symlinks=True)
    git_init(root)
    return root


@pytest.fixture(scope="module")
def layout():
    """`bench/layout.py` loaded as a module (the layout figures tests/project holds), registered in
    `sys.modules` while in use: its dataclasses look their module up."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(
        "bench_layout", TESTS.parent / "bench" / "layout.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)
