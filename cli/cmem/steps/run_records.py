"""Run records (docs/design.md §3): every pass that reaches the engine leaves `runs/<pass id>/` in
the machine folder — the prompt, the command and model, each raw response, the validation result —
so a failed or surprising pass can be read, and `cmem converge --replay RUN` can apply it later.

A run record is private: its folders are 0700 and its files 0600 whatever the umask, and what it
holds is redacted as the prompt is (cmem.text.secrets) unless the pass was run with
`--keep-raw-prompt` — a note's credential must not sit in plain text in a second place."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from cmem.atomic import write_atomic
from cmem.errors import CmemError
from cmem.private import make_dirs
from cmem.vault.layers import Vault

KEEP_RUNS = 50
FILE_MODE, FOLDER_MODE = 0o600, 0o700
# The newest pass of this machine that failed or was refused, in the machine folder: `status`
# and `doctor` show it until a later pass succeeds (`failed_pass`), and a stored status's key
# holds the file (reading/stored_results.py), so none stored before the failure is served after.
FAILED_PASS_FILE = "failed-pass.json"
SHOWN_FAILURES = ("failed", "refused")


@dataclass(frozen=True)
class RunRecord:
    folder: Path
    redact: bool = True  # False with --keep-raw-prompt

    @property
    def pass_id(self) -> str:
        return self.folder.name

    def write(
        self, name: str, content: str | dict, redacted_as: tuple[str, int] | None = None
    ) -> int:
        """Write one file of the record; how many credential-like strings were redacted from it.
        `redacted_as`: the text as `content` redacts, and the count, made already by the caller
        (`converge/prompt.py: redacted_prompt` keeps the answers of a prompt's quoted files)."""
        redacted = 0
        if self.redact and redacted_as is not None:
            content, redacted = redacted_as
        elif self.redact:
            from cmem.text.secrets import redact_data

            content, redacted = redact_data(content)
        if isinstance(content, dict):
            content = json.dumps(content, ensure_ascii=False, indent=2) + "\n"
        write_atomic(self.folder / name, content, mode=FILE_MODE)
        return redacted

    def write_outcome(self, outcome: dict) -> None:
        """`outcome.json` (what `cmem log` lists of a pass without a commit), and for a pass
        that failed or was refused, the machine folder's `FAILED_PASS_FILE` too."""
        self.write("outcome.json", outcome)
        if outcome.get("status") in SHOWN_FAILURES:
            shown: dict[str, object] = {"id": self.pass_id, "run": str(self.folder)}
            for key in ("status", "reason", "time", "rounds", "engine", "model", "errors"):
                shown[key] = outcome.get(key)
            # written as a record's file is (private, redacted), one folder up from `runs/`
            RunRecord(self.folder.parent.parent, self.redact).write(FAILED_PASS_FILE, shown)

    def read_json(self, name: str) -> dict:
        try:
            return json.loads((self.folder / name).read_text("utf-8"))
        except (OSError, ValueError):
            return {}

    def responses(self) -> list[Path]:
        return sorted(self.folder.glob("response-*.txt"), key=lambda p: int(p.stem.split("-")[1]))


def runs_dir(vault: Vault) -> Path:
    return vault.machine_dir / "runs"


def new_run(vault: Vault, pass_id: str, redact: bool = True) -> RunRecord:
    base = runs_dir(vault)
    folder = base / pass_id
    make_dirs(folder)
    for private in (
        base,
        folder,
    ):  # mkdir's mode is cut by the umask, and an old folder keeps its own
        os.chmod(private, FOLDER_MODE)
    _prune(base)
    return RunRecord(folder, redact)


def find_run(vault: Vault, name: str) -> RunRecord:
    base = runs_dir(vault)
    if name in ("last", "latest"):
        candidates = sorted(p for p in base.glob("*") if p.is_dir()) if base.exists() else []
        if not candidates:
            raise CmemError(f"no run records in {base} yet.")
        return RunRecord(candidates[-1])
    folder = Path(name) if "/" in name else base / name
    if not folder.is_dir():
        matches = sorted(base.glob(f"{name}*")) if base.exists() else []
        if len(matches) != 1:
            raise CmemError(f"no run record named {name!r} in {base}.")
        folder = matches[0]
    return RunRecord(folder)


def _prune(base: Path) -> None:
    import shutil  # only a writer prunes; status and scan read failed_pass from here

    folders = sorted(p for p in base.glob("*") if p.is_dir())
    for old in folders[:-KEEP_RUNS]:
        shutil.rmtree(old, ignore_errors=True)


def failed_pass(vault: Vault, state) -> dict | None:
    """The newest pass of this machine that failed or was refused ({"id", "time", "status",
    "reason", "run", …}), or None — also once a pass succeeded after it, here or on a machine
    whose pass a sync brought (`state`'s last converge pass is as late or later)."""
    try:
        data = json.loads((vault.machine_dir / FAILED_PASS_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("status") not in SHOWN_FAILURES:
        return None
    last = state.last_of_kind("converge")
    failed_at = _instant(data.get("time"))
    if failed_at is None or (last and (_instant(last.get("time")) or 0) >= failed_at):
        return None
    return data


def _instant(iso) -> float | None:
    from datetime import datetime

    try:
        parsed = datetime.fromisoformat(str(iso))
    except (TypeError, ValueError):
        return None
    return (parsed if parsed.tzinfo else parsed.astimezone()).timestamp()
