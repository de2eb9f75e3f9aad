"""The benchmark script runs end to end on a tiny vault and writes a report with every figure.

A smoke test only: it never asserts a timing (docs/design.md §12: speed is measured by
`bench/run.py` as ratios to floors, never by timed tests)."""

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


def _bench_module(path: Path = BENCH):
    spec = importlib.util.spec_from_file_location(f"cmem_bench_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(spec.name, None)
    return module


def _figures() -> dict[str, str]:
    return _bench_module().FIGURES


def test_a_missed_line_says_whether_its_floor_alone_passes_it():
    """Where the report cannot meet a line, it says why from the same run's floor row."""
    bench = _bench_module()

    def rows(floor_ms: float):
        return [
            bench.Row(
                "builtin_one", "10k", [360.0] * 3, "`python -c pass`", [10.0] * 3, 15, "≤ 15×"
            ),
            bench.Row("builtin_one_loaded", "10k", [floor_ms] * 3, "`python -c pass`", [10.0] * 3),
        ]

    over = bench.where_we_land(rows(190.0))
    assert "**missed**" in over and "19.00×" in over and "before the pass does any" in over
    under = bench.where_we_land(rows(120.0))
    assert "12.00×" in under and "the rest is the pass's own work" in under
    met = [
        bench.Row("builtin_one", "10k", [120.0] * 3, "`python -c pass`", [10.0] * 3, 15, "≤ 15×")
    ]
    assert "Its floor" not in bench.where_we_land(met + rows(190.0)[1:])
    recall = _bench_module(REPO / "bench" / "recall.py")
    line = {"recall/pass": 5.2, "floor/pass": 4.4, "files": 9985}
    assert "floor alone" in recall.recall_verdicts({50_000: line})[0]
    assert "recall's own work" in recall.recall_verdicts({50_000: {**line, "floor/pass": 3.0}})[0]
    assert "met" in recall.recall_verdicts({50_000: {**line, "recall/pass": 3.9}})[0]
    assert recall.recall_verdicts({10_000: line}) == []


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
        "--warmup",  # a warm-up round runs the same commands again: a smoke test needs one
        "0",
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


def test_the_recall_quality_bench_runs_small_and_replaces_only_its_own_section(tmp_path):
    """`bench/recall_quality.py` on one short conversation and the adopted vault: it runs to the
    end, writes both tables beside plain BM25, and leaves the rest of the report as it was. The
    set is seeded, so its figures are the same every run: recall must not fall below the
    baseline it is measured against, and no template may answer."""
    out = tmp_path / "b.md"
    out.write_text(
        "# Benchmarks\n\nKEPT\n\n<!-- recall-quality -->\nOLD\n<!-- /recall-quality -->\n",
        encoding="utf-8",
    )
    argv = [sys.executable, str(REPO / "bench" / "recall_quality.py"), "--out", str(out)]
    argv += ["--conversations", "1", "--sessions", "6", "--workdir", str(tmp_path)]
    result = subprocess.run(argv, capture_output=True, text=True, env=dict(os.environ), timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    report = out.read_text("utf-8")
    assert "OLD" not in report and report.count("KEPT") == 1
    assert "## Recall quality" in report and "| R@1 | R@5 | R@10 |" in report
    assert (
        "| top-1 | top-3 |" in report and "templates folder among cmem's first three: 0." in report
    )
    rows = {
        line.split("|")[1].strip(): [float(x) for x in re.findall(r"([\d.]+)%", line)]
        for line in report.splitlines()
        if line.startswith(("| `cmem recall`", "| plain BM25"))
    }
    assert len(rows) == 2  # one row each, per table, the dialogues' last
    cmem, plain = rows["`cmem recall`"], rows["plain BM25 over the lines"]
    assert all(a >= b for a, b in zip(cmem, plain)), (cmem, plain)


def test_the_agent_loop_bench_runs_and_replaces_only_its_own_section(tmp_path):
    """`bench/agent_loop.py` in a tiny quick mode: it runs to the end (capture, the SessionEnd and
    SessionStart hooks in real processes) and rewrites its own section of the report only."""
    out = tmp_path / "b.md"
    out.write_text(
        "# Benchmarks\n\nKEPT\n\n<!-- agent-loop -->\nOLD SECTION\n<!-- /agent-loop -->\n\nKEPT TOO\n",
        encoding="utf-8",
    )
    argv = [sys.executable, str(REPO / "bench" / "agent_loop.py"), "--sizes", "100", "--runs", "1"]
    argv += ["--transcript-mb", "0.05", "--workdir", str(tmp_path / "w"), "--out", str(out)]
    result = subprocess.run(argv, capture_output=True, text=True, env=dict(os.environ), timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    report = out.read_text("utf-8")
    assert "OLD SECTION" not in report and "## The agent loop" in report
    assert report.count("KEPT") == 2 and report.index("KEPT TOO") > report.index(
        "<!-- /agent-loop -->"
    )
    for figure in (
        "`cmem capture`",
        "SessionEnd hook returns",
        "SessionStart hook, warm",
        "SessionStart hook, just after an edit",
        "SessionStart hook, the first ever",
    ):
        assert figure in report
    assert re.search(r"`additionalContext`: at most [\d,]+ characters", report)
    # the "new session" captures each made a note of their own: never a resume of the first
    sessions = list((tmp_path / "w" / "vault-100" / "sessions").glob("*.md"))
    assert len(sessions) >= 2, sessions
