"""Run records (SPEC §3): every pass that reaches the engine leaves `runs/<pass id>/` in the
machine folder — the prompt, the command and model, each raw response, the validation result — so
a failed or surprising pass can be read, and `cmem converge --replay RUN` can apply it later.

A run record is private: its folders are 0700 and its files 0600 whatever the umask, and what it
holds is redacted as the prompt is (cmem.text.secrets) unless the pass was run with
`--keep-raw-prompt` — a note's credential must not sit in plain text in a second place."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from cmem.atomic import write_atomic
from cmem.errors import CmemError
from cmem.private import make_dirs
from cmem.vault.layers import Vault

KEEP_RUNS = 50
FILE_MODE, FOLDER_MODE = 0o600, 0o700


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
    folders = sorted(p for p in base.glob("*") if p.is_dir())
    for old in folders[:-KEEP_RUNS]:
        shutil.rmtree(old, ignore_errors=True)
