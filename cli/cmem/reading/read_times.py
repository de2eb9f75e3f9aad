"""When each convergent file was last read by `context` or `recall` — the anti-recency term of
the ranking (docs/design.md §8). Per machine, in the machine folder; losing it only resets the
ranking. The reading and writing are `cmem.reading.stored_context`'s (a stored answer of `context` or
`recall` records its reads too, with the machine folder alone); these take a vault."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from cmem.reading.stored_context import READ_TIMES as FILE_NAME  # noqa: F401 (re-exported)
from cmem.reading.stored_context import load_read_times as _load_at
from cmem.reading.stored_context import record_reads as _record_at

if TYPE_CHECKING:
    from cmem.vault.layers import Vault


def load_read_times(vault: Vault) -> dict[str, str]:
    return _load_at(str(vault.machine_dir))


def record_reads(vault: Vault, paths: list[str], now: datetime | None = None) -> None:
    _record_at(str(vault.machine_dir), paths, now or datetime.now().astimezone())


def record_reads_in(machine_dir: Path, paths: list[str], now: datetime | None = None) -> None:
    """`record_reads` given the machine folder alone (a stored answer of `recall` has no Vault)."""
    _record_at(str(machine_dir), paths, now or datetime.now().astimezone())
