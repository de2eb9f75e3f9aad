"""The in-session pass as the agent's own surface (docs/design.md §15), installed beside its hooks:
a Claude Code skill (`/cmem-converge`, or "converge my memory"), a Codex skill (`$cmem-converge`) or
a Gemini CLI custom command (`/cmem-converge`), each in the file and format that agent documents
(`agent_targets.py`: `surface_file`, `surface_form`). Its text is `prompts/agent-skill.md`: run
`cmem converge --as-model`, answer the prompt, apply the reply, mend it on a rejection.

cmem owns the file whole and marks it with `cmem skill (ID)`; a file at that path without the
mark is the user's and is left alone. Uninstall deletes the file (and the folders cmem made for
it) only while it is as cmem wrote it, and only once no hook of that agent is left for the vault:
the user's skill serves every project whose hooks the vault has.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from pathlib import Path

from cmem.resources import PromptTemplate
from cmem.setup.agent_targets import AgentTarget, Scope
from cmem.setup.hooks import HookPlan, _backups, _read, _target, cmem_executable, display, hook_id
from cmem.vault.layers import Vault
from cmem.vault.yaml_reader import quoted_scalar

_MARK = re.compile(r"cmem skill \(([0-9A-Za-z_-]+)\)")
DESCRIPTION = (
    "Converge the user's long-term memory (cmem) yourself, as the model of the pass: when the "
    "user asks to converge or update their memory or profile (收敛一下, 整理进画像), or agrees "
    "after cmem asks whether to converge."
)


def surface_text(vault: Vault, target: AgentTarget) -> str:
    """The file's whole text for this vault, naming cmem and the vault by absolute path."""
    root = str(vault.root.resolve())
    command = " ".join(shlex.quote(word) for word in [*cmem_executable(), "--vault", root])
    body = PromptTemplate("agent-skill.md").render(cmem=command, vault=root).rstrip("\n") + "\n"
    mark = f"cmem skill ({hook_id(vault)})"
    if target.surface_form == "gemini-command":
        # a TOML literal string takes the text as it is; it holds no ''' of its own
        return (
            f"# {mark}: written by `cmem hook install --agent gemini`\n"
            f"description = {_toml_basic(DESCRIPTION)}\n"
            f"prompt = '''\n{body}'''\n"
        )
    return (
        f"---\nname: cmem-converge\ndescription: {quoted_scalar(DESCRIPTION)}\n---\n"
        f"<!-- {mark}: written by `cmem hook install --agent {target.name}` -->\n\n{body}"
    )


def _toml_basic(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def owner_of(text: bytes | None) -> str | None:
    """The vault id a surface file was written for, or None: not cmem's."""
    if text is None:
        return None
    found = _MARK.search(text[:2000].decode("utf-8", errors="replace"))
    return found.group(1) if found else None


def plan_surface_install(
    vault: Vault, target: AgentTarget, project: Path | None, scope: Scope
) -> HookPlan:
    path = target.surface_path(project, scope)
    notes: list[str] = []
    file = _target(path, notes)
    before = _read(file)
    after = surface_text(vault, target).encode("utf-8")
    ident = hook_id(vault)
    plan = HookPlan(target.name, "unchanged", path, file, before, before, ident=ident)
    plan.role = "surface"
    plan.notes = notes
    if before is not None and owner_of(before) is None:
        notes.append(
            f"{display(file)} exists and is not cmem's: it is left as it is, so the agent has no "
            "cmem-converge of cmem's; rename yours to have both"
        )
        return plan
    if before == after:
        return plan
    missing = []
    folder = file.parent
    while not folder.exists():
        missing.append(str(folder))
        folder = folder.parent
    plan.action = "update" if before is not None else "install"
    plan.after = after
    plan.added = after.decode("utf-8")
    plan.backup = {"original": None, "created_dirs": missing}
    if before is not None and owner_of(before) != ident:
        notes.append(f"{display(file)} was written for another vault: it now names this one")
    return plan


def plan_surface_uninstall(
    vault: Vault, target: AgentTarget, project: Path | None, scope: Scope, still_hooked: bool
) -> HookPlan | None:
    """Removing the surface of `scope`, or None when there is nothing of cmem's to remove."""
    path = target.surface_path(project, scope)
    before = _read(path) if path.is_file() else None
    ident = hook_id(vault)
    if before is None or owner_of(before) != ident:
        return None
    plan = HookPlan(target.name, "unchanged", path, path, before, before, ident=ident)
    plan.role = "surface"
    if still_hooked:
        plan.notes.append(
            f"{display(path)} stays: this vault's {target.label} hooks are still installed elsewhere"
        )
        return plan
    saved = _backups(vault).get(str(path)) or {}
    if saved.get("written_sha256") != hashlib.sha256(before).hexdigest():
        plan.notes.append(f"{display(path)} changed since cmem wrote it: it is left as it is")
        return plan
    plan.action, plan.after, plan.removed = "uninstall", None, before.decode("utf-8", "replace")
    plan.remove_dirs = [Path(folder) for folder in saved.get("created_dirs") or []]
    plan.notes.append(f"cmem wrote {display(path)}: it is deleted")
    return plan


def surface_installed(vault: Vault | None, target: AgentTarget, project: Path | None) -> list:
    """The surface files of this agent that hold cmem's mark (for `hook status`): (path, vault id)."""
    found = []
    for scope in ("user", "shared"):
        path = target.surface_path(project, scope)  # type: ignore[arg-type]
        owner = owner_of(_read(path)) if path.is_file() else None
        if owner is not None and (vault is None or owner == hook_id(vault)):
            found.append((display(path), owner))
    return list(dict.fromkeys(found))
