"""Session hooks (docs/design.md §7, §14): what the shell hooks (`setup/shell_hooks.py`) and the
agent hooks (`setup/agent_hooks.py`) share. A shell hook runs `cmem converge --if-due --background
--quiet` for one vault when the shell exits; an agent hook runs `cmem hook run EVENT`.

Shared here: the plan of one change to one file (`HookPlan`), shown before it is made and applied
only if the file did not change meanwhile (`apply_hook_plan`); the command a hook runs
(`trigger_argv`); which file is written (a symlink's target; read-only files refused); the
private backups that let an agent hook's uninstall restore settings.json byte for byte; and what
`cmem hook status` reports of an installed hook (`InstalledHook`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from cmem.atomic import write_atomic
from cmem.errors import CmemError
from cmem.setup.agent_targets import TARGETS
from cmem.vault.layers import Vault

SHELLS = ("bash", "zsh", "fish")
AGENTS = tuple(TARGETS)
AGENT_BACKUPS = "agent-hooks.json"


class HookError(CmemError):
    """A hook cannot be installed or removed safely; the file is left as it was."""


# what the plan does to the file; `absent`: an uninstall that finds no file or no hook in it
HookAction = Literal["install", "update", "unchanged", "uninstall", "absent"]


@dataclass
class HookPlan:
    """One change to one file, shown to the user before it is made."""

    kind: str  # bash | zsh | fish | claude-code | codex | gemini
    action: HookAction
    path: Path  # the file as the user knows it (~/.bashrc)
    target: Path  # the file written: the symlink's target, or `path`
    before: bytes | None  # None: the file does not exist
    after: bytes | None  # None with uninstall: delete the file
    added: str = ""
    removed: str = ""
    notes: list[str] = field(default_factory=list)
    ident: str = ""
    backup: dict | None = None  # an agent's: what uninstall needs to restore the file
    remove_dir: Path | None = (
        None  # an agent's: a folder cmem created (`.claude/`), removed when empty
    )
    # what the plan is for: an agent's hooks, its surface (`agent_surfaces.py`), the user's model
    # setting (`agent_models.py`), or hooks taken out of another settings file
    role: Literal["hooks", "surface", "model", "moved"] = "hooks"
    remove_dirs: list[Path] = field(default_factory=list)  # folders cmem made, deepest first

    @property
    def changes(self) -> bool:
        return self.action in ("install", "update", "uninstall")

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "action": self.action,
            "path": str(self.path),
            "target": str(self.target),
            "id": self.ident,
            "role": self.role,
            "added": self.added or None,
            "removed": self.removed or None,
            "notes": self.notes,
        }


def hook_id(vault: Vault) -> str:
    return hashlib.sha256(str(vault.root.resolve()).encode("utf-8")).hexdigest()[:8]


def cmem_executable() -> list[str]:
    """The absolute command that starts this cmem, resolved now so the hook works without PATH
    (and keeps working in a shell whose PATH lacks the venv): the `cmem` script beside the running
    interpreter, else the one on PATH, else `python -m cmem` with this interpreter."""
    beside = Path(sys.executable).parent / "cmem"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside.absolute())]
    found = shutil.which("cmem")
    if found:
        return [str(Path(found).absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "cmem"]


def trigger_argv(vault: Vault) -> list[str]:
    return [
        *cmem_executable(),
        "--vault",
        str(vault.root.resolve()),
        "converge",
        "--if-due",
        "--background",
        "--quiet",
    ]


def display(path: Path) -> str:
    home = os.path.expanduser("~")
    text = str(path)
    return (
        "~" + text[len(home) :]
        if home not in ("", "/") and text.startswith(home + os.sep)
        else text
    )


def _target(path: Path, notes: list[str]) -> Path:
    """The file to write: the symlink's final target. Refuse what cannot be edited safely."""
    if path.is_symlink():
        target = Path(os.path.realpath(path))
        if not target.exists():
            raise HookError(
                f"{display(path)} is a symlink to {target}, which does not exist; fix the link or pass the file to edit by hand."
            )
        notes.append(
            f"{display(path)} is a symlink: cmem edits its target {display(target)} and leaves the link as it is"
        )
    else:
        target = path
    if target.exists():
        if not target.is_file():
            raise HookError(f"{display(target)} is not a regular file; cmem will not edit it.")
        mode = stat.S_IMODE(target.stat().st_mode)
        if not mode & 0o222 or not os.access(target, os.W_OK):
            raise HookError(
                f"{display(target)} is read-only (mode {mode:o}), perhaps on purpose (a dotfile manager); cmem will not "
                "change it. Make it writable, or add the hook yourself: see `cmem hook show`."
            )
    folder = target.parent
    existing = folder
    while not existing.exists():
        existing = existing.parent
    if not os.access(existing, os.W_OK):
        raise HookError(
            f"cannot write in {display(existing)}; cmem needs to write {display(target)} there."
        )
    return target


def _read(target: Path) -> bytes | None:
    try:
        return target.read_bytes()
    except FileNotFoundError:
        return None


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="surrogateescape")  # any bytes round-trip unchanged


def _encode(text: str) -> bytes:
    return text.encode("utf-8", errors="surrogateescape")


def _backups(vault: Vault | None) -> dict:
    if vault is None:
        return {}
    try:
        data = json.loads((vault.machine_dir / AGENT_BACKUPS).read_text("utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _save_backup(vault: Vault, target: Path, entry: dict | None) -> None:
    backups = _backups(vault)
    if entry is None:
        backups.pop(str(target), None)
    else:
        backups[str(target)] = entry
    # the copy may hold whatever the user keeps in settings.json: readable by the user only
    write_atomic(
        vault.machine_dir / AGENT_BACKUPS,
        json.dumps(backups, ensure_ascii=False, indent=1) + "\n",
        mode=0o600,
    )


def apply_hook_plan(plan: HookPlan, vault: Vault | None = None) -> HookPlan:
    """Make the planned change, unless the file changed since it was planned."""
    if not plan.changes:
        return plan
    if _read(plan.target) != plan.before:
        raise HookError(
            f"{display(plan.target)} changed while cmem was planning; nothing was written. Run the command again."
        )
    if plan.after is None:
        os.unlink(plan.target)
        for folder in [*plan.remove_dirs, *([plan.remove_dir] if plan.remove_dir else [])]:
            try:
                folder.rmdir()  # only when empty
            except OSError:
                pass
    else:
        write_atomic(plan.target, plan.after)
    if plan.kind in AGENTS and vault is not None:
        if plan.action in ("install", "update"):
            backup = dict(plan.backup or {})
            previous = _backups(vault).get(str(plan.target))
            if (
                plan.action == "update" and previous
            ):  # keep the file as it was before the first install
                backup = {
                    key: previous.get(key) for key in ("original", "created_dir", "created_dirs")
                }
            backup["written_sha256"] = hashlib.sha256(plan.after or b"").hexdigest()
            backup["agent"] = plan.kind  # `cmem status` lists the agents installed (hook_record)
            backup["role"] = plan.role
            _save_backup(vault, plan.target, backup)
        else:
            _save_backup(vault, plan.target, None)
    return plan


@dataclass
class InstalledHook:
    kind: str
    path: str
    ident: str
    vault: str | None
    runs: str | None
    current: bool | None  # same as `install` would write now (None: another vault's block)
    problems: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)  # an agent's: the events it answers
    notes: list[str] = field(default_factory=list)  # what the user should know, not a fault

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "events": self.events,
            "path": self.path,
            "id": self.ident,
            "vault": self.vault,
            "runs": self.runs,
            "current": self.current,
            "problems": self.problems,
            "notes": self.notes,
        }


def _runs_problems(vault_path: str | None, runs: str | None) -> list[str]:
    problems = []
    if vault_path and not (Path(vault_path) / ".cmem").is_dir():
        problems.append(f"the vault {vault_path} is gone (no .cmem/ there)")
    if runs:
        try:
            program = shlex.split(runs)[0]
        except (ValueError, IndexError):
            program = runs
        if not (os.path.isfile(program) and os.access(program, os.X_OK)):
            problems.append(f"{program} is not an executable any more: reinstall the hook")
    return problems
