"""When each convergent file was last read by `context` or `recall` — the anti-recency term of
the ranking (SPEC §8). Per machine, in the machine folder; losing it only resets the ranking."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from cmem.atomic import write_atomic

if TYPE_CHECKING:
    from cmem.vault.layers import Vault

FILE_NAME = "read-times.json"


def load_read_times(vault: Vault) -> dict[str, str]:
    return _load(vault.machine_dir)


def _load(machine_dir: Path) -> dict[str, str]:
    try:
        data = json.loads((machine_dir / FILE_NAME).read_text("utf-8"))
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def record_reads(vault: Vault, paths: list[str], now: datetime | None = None) -> None:
    record_reads_in(vault.machine_dir, paths, now)


def record_reads_in(machine_dir: Path, paths: list[str], now: datetime | None = None) -> None:
    """`record_reads` given the machine folder alone (the light path of `recall` has no Vault)."""
    if not paths:
        return
    stamp = (now or datetime.now().astimezone()).isoformat(timespec="seconds")
    times = _load(machine_dir)
    times.update({path: stamp for path in paths})
    try:
        write_atomic(
            machine_dir / FILE_NAME,
            json.dumps(times, ensure_ascii=False, indent=0, sort_keys=True),
        )
    except OSError:
        pass  # a read-only machine folder must not break reading memory
