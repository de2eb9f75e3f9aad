"""Which model command runs, and the direnv-like gate on commands a vault names itself
(docs/design.md §4).

Precedence: `--llm`, then `$CMEM_LLM`, then the user's config, then the vault's `llm.command`.
The first three are the user's own word. The last came with the folder — a cloned or synced
vault must not run commands on its own (aider#5254) — so it runs only when the user's config
(never the vault: git's `safe.directory` rule) trusts this vault's path with the sha256 of this
exact command. Editing the command in the vault needs `cmem trust` again.

A command that runs a file of the vault (`sh tools/model.sh`, `sh -c 'exec ./tools/m.sh'`,
`python3 -m tools.m`) would run whatever a later commit or sync puts there, so the trust also
records the sha256 of every vault file the command can run — a script's whole folder, what its
text names — (`setup/command_reach.py`); a command whose reach cannot be known is never trusted.
An edited, added or removed file needs `cmem trust` again, like an edited command.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from cmem.atomic import write_atomic
from cmem.errors import CmemError
from cmem.vault.config import DEFAULTS, load_user_config, user_config_path
from cmem.vault.layers import Vault

Origin = Literal["flag", "env", "user-config", "vault-config"]
TrustState = Literal["trusted", "changed", "untrusted", "no-command"]
TrustAction = Literal[
    "trusted", "retrusted", "already-trusted", "revoked", "not-trusted", "no-command"
]


class UntrustedCommand(CmemError):
    """The vault names a model command the user has not trusted (or has changed since)."""


@dataclass(frozen=True)
class ResolvedCommand:
    command: str | None  # None: no model configured; the builtin engine applies
    origin: Origin | None
    timeout: float
    max_output_bytes: int = DEFAULTS["llm"]["max_output_bytes"]


@dataclass(frozen=True)
class TrustStatus:
    vault: str  # the vault's resolved absolute path, as trust records it
    command: str | None  # the vault's own llm.command
    command_sha256: str | None
    state: TrustState
    trusted_sha256: str | None = None
    trusted_at: str | None = None
    files: dict[str, str] | None = (
        None  # vault files the command names: path → sha256 of the content now
    )
    changed_files: tuple[str, ...] = ()  # of those, the ones that differ from what was trusted


@dataclass(frozen=True)
class TrustChange:
    vault: str
    command: str | None
    command_sha256: str | None
    action: TrustAction
    config_path: str
    files: dict[str, str] | None = None


def command_sha256(command: str) -> str:
    return hashlib.sha256(command.encode("utf-8")).hexdigest()


def resolve_model_command(vault: Vault, flag: str | None) -> ResolvedCommand:
    """The command to run and where it came from; raise `UntrustedCommand` for an untrusted vault one."""
    user = load_user_config()
    timeout, max_output_bytes = _timeout(vault, user), vault.config.llm_max_output_bytes

    def resolved(command: str | None, origin: Origin | None) -> ResolvedCommand:
        return ResolvedCommand(command, origin, timeout, max_output_bytes)

    if flag and flag.strip():
        return resolved(flag, "flag")
    from_env = os.environ.get("CMEM_LLM", "")
    if from_env.strip():
        return resolved(from_env, "env")
    from_user = (user.get("llm") or {}).get("command")
    if from_user and from_user.strip():
        return resolved(from_user, "user-config")
    from_vault = vault.config.llm_command
    if not (from_vault and from_vault.strip()):
        return resolved(None, None)
    status = _status(vault, user)
    if status.state == "trusted":
        return resolved(from_vault, "vault-config")
    config_file = vault.cmem_dir / "config.yaml"
    if status.state == "changed" and status.trusted_sha256 == status.command_sha256:
        names = ", ".join(status.changed_files)
        raise UntrustedCommand(
            f"{config_file} names the model command `{from_vault}`, and {names}, which it runs from the vault, "
            f"has changed since you trusted it (on {status.trusted_at or 'an earlier date'}); read it, then run "
            "`cmem trust` to allow it, or pass --llm / set CMEM_LLM."
        )
    if status.state == "changed":
        raise UntrustedCommand(
            f"{config_file} names the model command `{from_vault}`, which has changed since you trusted it "
            f"(on {status.trusted_at or 'an earlier date'}); read it, then run `cmem trust` to allow it, "
            "or pass --llm / set CMEM_LLM."
        )
    raise UntrustedCommand(
        f"{config_file} names the model command `{from_vault}`, and cmem runs a command that came with a "
        "vault only after you trust it; read it, then run `cmem trust` to allow it, or pass --llm / set CMEM_LLM."
    )


def model_status(vault: Vault) -> dict:
    """The model a pass asks when no --llm is given, for `status`: its command, where it is set
    (`env`, `user-config`, `vault-config`), and `state`: ready, untrusted, or none."""
    try:
        resolved = resolve_model_command(vault, None)
    except UntrustedCommand:
        return {"command": vault.config.llm_command, "origin": "vault-config", "state": "untrusted"}
    except CmemError:  # a broken user config: `status` says so elsewhere
        return {"command": None, "origin": None, "state": "none"}
    if resolved.command is None:
        return {"command": None, "origin": None, "state": "none"}
    return {"command": resolved.command, "origin": resolved.origin, "state": "ready"}


def _timeout(vault: Vault, user: dict) -> float:
    """The vault's own `llm.timeout_seconds` when it sets one, else the user's, else the default."""
    from_vault = vault.config.llm_timeout_seconds
    from_user = (user.get("llm") or {}).get("timeout_seconds")
    if from_user is not None and from_vault == DEFAULTS["llm"]["timeout_seconds"]:
        return float(from_user)
    return float(from_vault)


def trust_status(vault: Vault) -> TrustStatus:
    return _status(vault, load_user_config())


def _status(vault: Vault, user: dict) -> TrustStatus:
    key = _vault_key(vault)
    command = vault.config.llm_command
    if not (command and command.strip()):
        return TrustStatus(key, None, None, "no-command")
    digest = command_sha256(command)
    files = command_files(vault, command)
    entry = next(
        (item for item in user.get("trusted") or [] if _same_vault(item.get("vault"), key)), None
    )
    if entry is None:
        return TrustStatus(key, command, digest, "untrusted", files=files)
    recorded = entry.get("files") if isinstance(entry.get("files"), dict) else {}
    changed = tuple(
        sorted(rel for rel in set(files) | set(recorded) if files.get(rel) != recorded.get(rel))
    )
    state: TrustState = (
        "trusted" if entry.get("command_sha256") == digest and not changed else "changed"
    )
    return TrustStatus(
        key,
        command,
        digest,
        state,
        entry.get("command_sha256"),
        _text(entry.get("trusted_at")),
        files,
        changed,
    )


def command_files(vault: Vault, command: str) -> dict[str, str]:
    """The files of the vault `command` can run, with the sha256 of each one's content
    (`setup/command_reach.py`); `UntrustedCommand` when that cannot be known."""
    from cmem.setup.command_reach import UnknownReach, command_reach

    try:
        return command_reach(vault, command)
    except UnknownReach as exc:
        raise UntrustedCommand(
            f"{vault.cmem_dir / 'config.yaml'} names the model command `{command}`, which cmem "
            f"cannot trust because {exc}; put what it runs in a script in a folder of its own "
            "(such as tools/) and name that script, or pass --llm / set CMEM_LLM."
        ) from None


def trust_vault(vault: Vault) -> TrustChange:
    """Record in the user's config that this vault's current command may run."""
    status = trust_status(vault)  # validates the user config before we rewrite it
    path = user_config_path()
    if status.state == "no-command":
        return TrustChange(status.vault, None, None, "no-command", str(path))
    if status.state == "trusted":
        return TrustChange(
            status.vault,
            status.command,
            status.command_sha256,
            "already-trusted",
            str(path),
            status.files,
        )

    from cmem.vault.yaml_reader import comment_keeping_list, comment_keeping_mapping

    document = UserConfigDocument(path)
    trusted = document.data.get("trusted")
    if trusted is None:
        trusted = document.data["trusted"] = comment_keeping_list()
    stamp = datetime.now().astimezone().isoformat(timespec="seconds")
    matches = [item for item in trusted if _same_vault(item.get("vault"), status.vault)]
    if matches:  # update in place, so comments around the entry stay where they were
        entry = matches[0]
        for extra in matches[1:]:
            trusted.remove(extra)
        entry["vault"] = status.vault
        entry["command_sha256"] = status.command_sha256
        entry["trusted_at"] = stamp
    else:
        entry = comment_keeping_mapping(
            [
                ("vault", status.vault),
                ("command_sha256", status.command_sha256),
                ("trusted_at", stamp),
            ]
        )
        trusted.append(entry)
    if status.files:
        entry["files"] = comment_keeping_mapping(sorted(status.files.items()))
    elif "files" in entry:
        del entry["files"]
    document.save()
    action: TrustAction = "retrusted" if status.state == "changed" else "trusted"
    return TrustChange(
        status.vault, status.command, status.command_sha256, action, str(path), status.files
    )


def revoke_trust(vault: Vault) -> TrustChange:
    """Forget every trust entry for this vault (whatever its command runs: nothing is read)."""
    user = load_user_config()
    key, command = _vault_key(vault), vault.config.llm_command
    digest = command_sha256(command) if command and command.strip() else None
    path = user_config_path()
    if not any(_same_vault(item.get("vault"), key) for item in user.get("trusted") or []):
        return TrustChange(key, command, digest, "not-trusted", str(path))
    document = UserConfigDocument(path)
    trusted = document.data.get("trusted") or []
    for item in [item for item in trusted if _same_vault(item.get("vault"), key)]:
        trusted.remove(item)
    document.save()
    return TrustChange(key, command, digest, "revoked", str(path))


class UserConfigDocument:
    """The user's config, edited with its comments kept (`vault/yaml_reader.py:
    CommentKeepingEdit`): the one YAML file cmem writes back."""

    def __init__(self, path: Path):
        from cmem.vault.yaml_reader import CommentKeepingEdit

        self.path = path
        try:
            self.original = path.read_text("utf-8-sig")
        except FileNotFoundError:
            self.original = ""
        self.edit = CommentKeepingEdit(self.original, path)
        self.data = self.edit.data

    def text(self) -> str:
        """The file as `save` would write it."""
        text = self.edit.text()
        if not self.original:
            text = '# cmem user settings; see README.md, "Configuration".\n' + text
        return text

    def save(self) -> None:
        write_atomic(self.path, self.text())


def _vault_key(vault: Vault) -> str:
    return str(Path(vault.root).resolve())


def _same_vault(recorded: object, key: str) -> bool:
    if not isinstance(recorded, str) or not recorded:
        return False
    if recorded == key:
        return True
    try:
        return str(Path(recorded).expanduser().resolve()) == key
    except (OSError, RuntimeError):
        return False


def _text(value: object) -> str | None:
    return None if value is None else str(value)
