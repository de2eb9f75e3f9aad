"""Comments say one line of why: no comment block longer than `COMMENT_BLOCK_LIMIT` lines, and
no timing or ratio in a comment or docstring (figures live in docs/benchmarks.md, where they
can be re-measured; in the code they go stale unseen)."""

from __future__ import annotations

import shutil

from support import REPO

PACKAGE = REPO / "cli" / "cmem"


def test_no_comment_block_runs_over_the_limit(layout):
    assert layout.prose(PACKAGE)["long_blocks"] == []


def test_no_comment_or_docstring_carries_a_timing(layout):
    assert layout.prose(PACKAGE)["figures"] == []


def test_the_checks_catch_an_essay_and_a_figure(layout, tmp_path):
    copy = tmp_path / "cmem"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    module = copy / "atomic.py"
    module.write_text(
        module.read_text("utf-8")
        + "\n# one\n# two\n# three\n# four\nX = 1  # importing it costs ~12 ms\n"
        + 'def f():\n    """Faster: 3.5× the old loop."""\n',
        "utf-8",
    )
    found = layout.prose(copy)
    assert [where.split(" ")[0] for where in found["long_blocks"]] == [
        f"cmem.atomic:{len(module.read_text('utf-8').splitlines()) - 6}"
    ]
    assert len([where for where in found["figures"] if where.startswith("cmem.atomic:")]) == 2
