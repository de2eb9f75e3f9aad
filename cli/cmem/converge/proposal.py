"""Review mode (docs/design.md §3): a pass that stops after validation leaves a proposal; `cmem apply`
shows its diff and applies it after confirmation, `cmem apply --drop` discards it.

The proposal is a pointer to the run record holding the validated response; applying re-runs the
same validation against the vault as it is then (`--replay`), so a proposal that no longer fits
is rejected rather than forced."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from cmem.atomic import write_atomic
from cmem.errors import CmemError
from cmem.vault.layers import Vault

FILE_NAME = "proposal.json"


@dataclass(frozen=True)
class Proposal:
    pass_id: str
    run_dir: str
    notes: list[str]
    created: str


def save_proposal(vault: Vault, proposal: Proposal) -> None:
    write_atomic(
        vault.machine_dir / FILE_NAME, json.dumps(proposal.__dict__, ensure_ascii=False, indent=1)
    )


def load_proposal(vault: Vault) -> Proposal | None:
    try:
        data = json.loads((vault.machine_dir / FILE_NAME).read_text("utf-8"))
        return Proposal(
            data["pass_id"], data["run_dir"], list(data["notes"]), data.get("created", "")
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        raise CmemError(
            f"{vault.machine_dir / FILE_NAME} is unreadable; drop it with `cmem apply --drop`."
        ) from None


def drop_proposal(vault: Vault) -> bool:
    try:
        os.unlink(vault.machine_dir / FILE_NAME)
        return True
    except FileNotFoundError:
        return False
