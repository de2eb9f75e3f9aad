"""A benchmark's own section of a Markdown report, between its start and end markers: replaced
in place, or appended when the report has none yet; the rest of the report is left as it is."""

from __future__ import annotations

from pathlib import Path


def write_section(path: Path, section: str, start: str, end: str) -> None:
    """`section` (which begins with `start` and ends with `end`) into the report at `path`."""
    text = path.read_text("utf-8") if path.exists() else "# Benchmarks\n"
    at, until = text.find(start), text.find(end)
    if at >= 0 and until > at:
        text = text[:at] + section + text[until + len(end) :]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
