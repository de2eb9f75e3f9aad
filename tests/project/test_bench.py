"""The benchmark script runs end to end on a tiny vault and writes a report with every figure.

A smoke test only: it never asserts a timing (SPEC §12: speed is measured by `bench/run.py` as
ratios to floors, never by timed tests)."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import REPO

BENCH = REPO / "bench" / "run.py"


def _tool(name: str) -> str | None:
    sibling = Path(sys.executable).parent / name
    return shutil.which(name) or (str(sibling) if sibling.exists() else None)


def _figures() -> dict[str, str]:
    spec = importlib.util.spec_from_file_location("cmem_bench_run", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(spec.name, None)
    return module.FIGURES


@pytest.mark.skipif(
    _tool("rg") is None, reason="rg is not installed (pip install --only-binary :all: ripgrep)"
)
def test_bench_writes_a_report_with_every_figure(tmp_path):
    out = tmp_path / "b.md"
    # what a regenerated report must keep: the hand-written analysis and other scripts' sections
    out.write_text(
        "# Benchmarks\n\n<!-- analysis:start (hand-written; kept when the report is regenerated) -->\n"
        "HAND-WRITTEN\n<!-- analysis:end -->\n\n<!-- recall -->\nRECALL SECTION\n<!-- /recall -->\n",
        encoding="utf-8",
    )
    argv = [
        sys.executable,
        str(BENCH),
        "--sizes",
        "200",
        "--repeat",
        "1",
        "--out",
        str(out),
        "--workdir",
        str(tmp_path),
        "--rg",
        _tool("rg"),
    ]
    cmem = _tool("cmem")
    if cmem:
        argv += ["--cmem", cmem]
    result = subprocess.run(argv, capture_output=True, text=True, env=dict(os.environ), timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    report = out.read_text("utf-8")
    rows = [line for line in report.splitlines() if line.startswith("| ")]
    for figure in _figures().values():
        matching = [row for row in rows if row.startswith(f"| {figure} |")]
        assert matching, f"no row for {figure!r} in the report"
        assert not any("FAILED" in row for row in matching), matching
    for section in (
        "## Machine",
        "## Method",
        "## Results",
        "### Convergence prompt",
        "## Where we land",
        "## What would make it faster",
    ):
        assert section in report
    assert "| 200 |" in report and "| sample-vault |" in report
    # the one-note pass's fixed costs (imports, git processes) are measured beside it
    assert re.search(r"\d+ git processes [\d,]+ ms of their own", report), report[-3000:]
    assert (
        report.count("HAND-WRITTEN") == 1
        and report.count("<!-- recall -->\nRECALL SECTION\n<!-- /recall -->") == 1
    )
    # the generated vaults stay in the work folder, and the real home is never touched
    assert (tmp_path / "vault-200" / ".cmem" / "config.yaml").is_file()
    assert (tmp_path / "state" / "cmem").is_dir()


@pytest.mark.skipif(
    _tool("rg") is None, reason="rg is not installed (pip install --only-binary :all: ripgrep)"
)
def test_the_recall_bench_runs_and_replaces_only_its_own_section(tmp_path):
    """`bench/recall.py` on a tiny vault: it runs to the end (it imports cmem's internals, which
    move) and rewrites its own section of the report, nothing else."""
    out = tmp_path / "b.md"
    out.write_text(
        "# Benchmarks\n\nKEPT\n\n<!-- recall -->\nOLD SECTION\n<!-- /recall -->\n\nKEPT TOO\n",
        encoding="utf-8",
    )
    argv = [sys.executable, str(REPO / "bench" / "recall.py"), "--sizes", "200"]
    argv += ["--workdir", str(tmp_path), "--out", str(out), "--rg", _tool("rg")]
    result = subprocess.run(argv, capture_output=True, text=True, env=dict(os.environ), timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    report = out.read_text("utf-8")
    assert "OLD SECTION" not in report and "## Recall: the full-text index" in report
    assert report.count("KEPT") == 2 and report.index("KEPT TOO") > report.index("<!-- /recall -->")
