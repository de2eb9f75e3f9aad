"""The agent's headless CLI as the model of unattended passes (docs/design.md §15): `hook install
--agent NAME` offers it when the CLI is on PATH, and on "yes" sets it as `llm.command` in the user's
config (`$XDG_CONFIG_HOME/cmem/config.yaml`), which needs no `cmem trust`. The flags are the
agent's entry in `agent_targets.py` (`model_command`): no tools, no persisted session, a cheap
model, a cost cap where the CLI has one. The pass runs it with `CMEM_MODEL_CALL` set, so the
hooks that CLI fires do nothing (`hook_command.py`).

A command the user set already is never replaced. Uninstall takes the setting out again only
while it is the one cmem set, restoring the file byte for byte when nothing else changed in it.
"""

from __future__ import annotations

import hashlib
import shlex
import shutil
from pathlib import Path

from cmem.setup.agent_targets import AgentTarget
from cmem.setup.hooks import HookPlan, _backups, _read, _target, display


def headless_command(target: AgentTarget) -> str | None:
    """The model command for this agent's CLI, by its absolute path (a timer's PATH is short),
    or None when the CLI is not on PATH."""
    if not target.model_command:
        return None
    program = shutil.which(target.model_command[0])
    if program is None:
        return None
    return shlex.join([str(Path(program).absolute()), *target.model_command[1:]])


def _user_config() -> Path:
    from cmem.vault.config import user_config_path

    return Path(user_config_path())


def current_model() -> str | None:
    from cmem.vault.config import load_user_config

    command = (load_user_config().get("llm") or {}).get("command")
    return command if isinstance(command, str) and command.strip() else None


def plan_model_install(target: AgentTarget, command: str) -> HookPlan:
    """`llm.command` set to `command` in the user's config, unless one is set already."""
    from cmem.setup.trust import UserConfigDocument

    path = _user_config()
    notes: list[str] = []
    file = _target(path, notes)
    before = _read(file)
    plan = HookPlan(target.name, "unchanged", path, file, before, before, notes=notes)
    plan.role = "model"
    existing = current_model()
    if existing == command:
        return plan
    if existing is not None:
        notes.append(
            f"your model command stays as it is ({existing}); to use {target.label} instead, set "
            f"llm.command in {display(file)} to: {command}"
        )
        return plan
    document = UserConfigDocument(file)
    llm = document.data.get("llm")
    if llm is None:
        from cmem.vault.yaml_reader import comment_keeping_mapping

        llm = document.data["llm"] = comment_keeping_mapping()
    llm["command"] = command
    plan.action = "install"
    plan.after = document.text().encode("utf-8")
    plan.added = f"llm:\n  command: {command}"
    plan.backup = {
        "original": None if before is None else before.decode("utf-8", "surrogateescape"),
        "command": command,
    }
    notes.append(
        f"unattended passes (session end, shell exit, timers) and `cmem converge` ask {target.label} "
        "as their model; change the model or flags there, or remove the line to go back to the builtin engine"
    )
    return plan


def plan_model_uninstall(target: AgentTarget, vault, still_hooked: bool) -> HookPlan | None:
    """The setting cmem made taken out again, or None when cmem set none (or the user changed it)."""
    from cmem.setup.trust import UserConfigDocument

    path = _user_config()
    saved = _backups(vault).get(str(path)) or {}
    if saved.get("agent") != target.name or current_model() != saved.get("command"):
        return None
    before = _read(path)
    plan = HookPlan(target.name, "unchanged", path, path, before, before)
    plan.role = "model"
    if still_hooked:
        plan.notes.append(
            f"llm.command stays: this vault's {target.label} hooks are still installed elsewhere"
        )
        return plan
    plan.action = "uninstall"
    plan.removed = f"llm:\n  command: {saved.get('command')}"
    if before is not None and saved.get("written_sha256") == hashlib.sha256(before).hexdigest():
        original = saved.get("original")
        plan.after = None if original is None else original.encode("utf-8", "surrogateescape")
        plan.notes.append(
            f"cmem created {display(path)}: it is deleted"
            if original is None
            else "the file is restored byte for byte as it was before `cmem hook install`"
        )
        return plan
    document = UserConfigDocument(path)
    llm = document.data.get("llm")
    if llm is not None and "command" in llm:
        del llm["command"]
        if not llm:
            del document.data["llm"]
    plan.after = document.text().encode("utf-8")
    plan.notes.append("the file changed since: only llm.command is taken out")
    return plan
