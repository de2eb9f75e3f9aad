"""What every generator of a page in docs/ does last (`docs/cli.py`, `docs/configuration.py`):
write the page it rendered, or with `--check` only say whether the page on disk is stale (CI and
tests/project run the check)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


def write_or_check(
    page: Path, render: Callable[[], str], script: str, description: str, argv=None
) -> int:
    """The generator's command line: 0 when written or current, 1 when `--check` finds it stale."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="exit 1 when the page is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = page.read_text("utf-8") if page.exists() else ""
        if current != text:
            print(f"{page} is stale: run python {script}", file=sys.stderr)
            return 1
        return 0
    page.write_text(text, encoding="utf-8")
    print(f"wrote {page}")
    return 0
