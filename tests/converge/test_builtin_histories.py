"""The builtin engine never writes a reply its validator rejects (issue 35), held over generated
histories (`generated_histories.py`): each day's notes written and converged through the real
pass (`run_pass`, git, the validator), every pass applied, and the layer valid after each one.

A few seeds run by default; `-m slow` runs many. A failing seed prints its history: rerun it
alone with `generate(seed)`."""

from __future__ import annotations

from pathlib import Path

import pytest

from generated_histories import FORMATS, History, converge_history, generate


def _check(history: History, tmp_path: Path) -> None:
    problems = converge_history(history, tmp_path / f"seed-{history.seed}")
    assert not problems, history.describe() + "\n" + "\n".join(problems)


FAST_SEEDS = [3, 11, 29]


@pytest.mark.parametrize("seed", FAST_SEEDS)
def test_generated_histories_converge_with_every_pass_applied(seed, tmp_path):
    _check(generate(seed), tmp_path)


@pytest.mark.parametrize("which", range(len(FORMATS)))
def test_every_accepted_format_converges_a_history(which, tmp_path):
    _check(generate(1000 + which, days=5, fixed_format=which), tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(100, 260))
def test_many_generated_histories_converge(seed, tmp_path):
    _check(generate(seed), tmp_path)


def test_the_bench_counts_the_histories_and_keeps_its_section(tmp_path):
    """bench/builtin_histories.py on two seeds: its figures add up, and its section splices
    into the reliability figures and is found there again."""
    import importlib.util
    import sys

    from support import REPO

    spec = importlib.util.spec_from_file_location(
        "builtin_histories", REPO / "bench" / "builtin_histories.py"
    )
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench
    spec.loader.exec_module(bench)
    figures = bench.measure(range(5, 7))
    assert figures["histories"] == 2 and figures["failing"] == []
    assert sum(figures["statuses"].values()) == figures["days"]
    section = bench.section(figures)
    doc = tmp_path / "reliability.md"
    doc.write_text("# Reliability figures\n\nabove\n", encoding="utf-8")
    doc.write_text(bench.splice(doc.read_text("utf-8"), section), encoding="utf-8")
    assert bench.kept_section(doc) == section
    again = bench.splice(doc.read_text("utf-8"), section)
    assert again.count(bench.START) == 1 and again.startswith("# Reliability figures\n\nabove\n")
