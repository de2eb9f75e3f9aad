"""Every number a command takes, with its bounds (inclusive): typer's options
(`commands/options.py: within`), `capture`'s own reading of them and the MCP tools read them here,
so no door lets through what another refuses."""

from __future__ import annotations

BOUNDS: dict[str, tuple[float, float]] = {
    "context --budget": (100, 1_000_000),  # tokens
    "converge --budget": (500, 1_000_000),  # tokens
    "recall --limit": (1, 1_000),
    "log --limit": (1, 100_000),
    "watch --settle": (0.0, 86_400.0),  # seconds: a day at most
    "capture --since": (60.0, 3650 * 86_400.0),  # seconds: a minute to ten years
}


def out_of_bounds(key: str, value: float) -> str | None:
    """ "must be from LOW to HIGH, not VALUE" when `value` is outside `BOUNDS[key]` or is no
    finite number; None when it is within. Each door puts its own name for the option first."""
    low, high = BOUNDS[key]
    if value == value and low <= value <= high:  # NaN is no number: it fails the first test
        return None
    return f"must be from {_number(low)} to {_number(high)}, not {value!r}"


def _number(value: float) -> str:
    return f"{int(value):,}" if value == int(value) else str(value)
