"""When each convergent file was last read by `context` or `recall` — the anti-recency term of
the ranking (SPEC §8). Per machine, in the machine folder; losing it only resets the ranking."""

from __future__ import annotations

import json
from datetime import datetime

from cmem.atomic import write_atomic
from cmem.vault.layers import Vault

FILE_NAME = "read-times.json"


def load_read_times(vault: Vault) -> dict[str, str]:
    try:
        data = json.loads((vault.machine_dir / FILE_NAME).read_text("utf-8"))
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def record_reads(vault: Vault, paths: list[str], now: datetime | None = None) -> None:
    if not paths:
        return
    stamp = (now or datetime.now().astimezone()).isoformat(timespec="seconds")
    times = load_read_times(vault)
    times.update({path: stamp for path in paths})
    try:
        write_atomic(
            vault.machine_dir / FILE_NAME,
            json.dumps(times, ensure_ascii=False, indent=0, sort_keys=True),
        )
    except OSError:
        pass  # a read-only machine folder must not break reading memory
