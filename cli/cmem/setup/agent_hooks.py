"""Agent hooks (docs/design.md §14): marked entries in an agent's JSON settings (`agent_targets.py`
says which file and which events) that run `cmem hook run EVENT --agent NAME` for one vault, by the
absolute path of this cmem.

Each entry's command ends with a `# cmem hook (ID)` comment, so cmem finds its own entries again
among the user's. Installing again replaces them in place (an entry of an older cmem — the
SessionEnd pass alone — is updated); the other settings are kept. Uninstall restores the file
byte for byte from a private backup (`setup/hooks.py`) when the file has not changed since, else
removes only cmem's entries.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from pathlib import Path
from typing import Literal, overload

from cmem.setup.agent_targets import TARGETS, AgentTarget, HookEvent, Scope
from cmem.setup.hooks import (
    HookAction,
    HookError,
    HookPlan,
    InstalledHook,
    _backups,
    _decode,
    _encode,
    _read,
    _runs_problems,
    _target,
    cmem_executable,
    display,
    hook_id,
)
from cmem.vault.layers import Vault

_AGENT_MARK = re.compile(r"# cmem hook \(([0-9A-Za-z_-]+)\)\s*$")
SYNCED_NOTE = (
    "sessions you have with the agent become notes in the vault's sessions folder; "
    "a vault synced to a remote carries them there (sessions.exclude keeps a project out)"
)


def target_of(agent: str) -> AgentTarget:
    try:
        return TARGETS[agent]
    except KeyError:
        raise HookError(f"--agent must be one of {', '.join(TARGETS)}, not {agent!r}.") from None


def run_argv(vault: Vault, agent: str, event: str) -> list[str]:
    return [
        *cmem_executable(),
        "--vault",
        str(vault.root.resolve()),
        "hook",
        "run",
        event,
        "--agent",
        agent,
    ]


def agent_command(vault: Vault, agent: str, event: str) -> str:
    """The command an agent runs (with a shell: the trailing comment marks it as cmem's)."""
    words = " ".join(shlex.quote(word) for word in run_argv(vault, agent, event))
    return f"{words} # cmem hook ({hook_id(vault)})"


def _entry(vault: Vault, target: AgentTarget, event: HookEvent) -> dict:
    hook: dict = {"type": "command", "command": agent_command(vault, target.name, event.ours)}
    if target.named_hooks:
        hook["name"] = f"cmem-{event.ours}"
    hook["timeout"] = event.timeout
    group: dict = {}
    if event.matcher:
        group["matcher"] = event.matcher
    group["hooks"] = [hook]
    return group


def agent_snippet(vault: Vault, agent: str = "claude-code") -> str:
    target = target_of(agent)
    hooks = {event.agent_event: [_entry(vault, target, event)] for event in target.events}
    return json.dumps({"hooks": hooks}, indent=2, ensure_ascii=False)


def _load_settings(target: Path, before: bytes | None) -> dict:
    if before is None or not before.strip():
        return {}
    try:
        data = json.loads(before.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise HookError(f"{display(target)} is not UTF-8; cmem will not edit it.") from None
    except json.JSONDecodeError as exc:
        raise HookError(
            f"{display(target)} is not valid JSON (line {exc.lineno}: {exc.msg}); fix it, then run this again."
        ) from None
    if not isinstance(data, dict):
        raise HookError(f"{display(target)} does not hold a JSON object; cmem will not edit it.")
    return data


@overload
def _hooks(data: dict, target: Path, create: Literal[True]) -> dict: ...
@overload
def _hooks(data: dict, target: Path, create: bool) -> dict | None: ...
def _hooks(data: dict, target: Path, create: bool) -> dict | None:
    hooks = data.get("hooks")
    if hooks is None:
        if not create:
            return None
        hooks = data["hooks"] = {}
    if not isinstance(hooks, dict):
        raise HookError(
            f'{display(target)}: "hooks" is not an object; cmem will not guess how to add to it.'
        )
    return hooks


def _groups(hooks: dict, event: str, target: Path) -> list:
    """The event's list of hook groups, made empty when there is none."""
    groups = hooks.get(event)
    if groups is None:
        groups = hooks[event] = []
    if not isinstance(groups, list):
        raise HookError(
            f'{display(target)}: "hooks.{event}" is not a list; cmem will not guess how to add to it.'
        )
    return groups


def _commands(group) -> list[str]:
    commands = group.get("hooks") if isinstance(group, dict) else None
    return [
        str(hook.get("command", ""))
        for hook in (commands if isinstance(commands, list) else [])
        if isinstance(hook, dict)
    ]


def _our_groups(groups: list, ident: str | None) -> list[int]:
    found = []
    for index, group in enumerate(groups):
        for command in _commands(group):
            mark = _AGENT_MARK.search(command)
            if mark and (ident is None or mark.group(1) == ident):
                found.append(index)
                break
    return found


def _dump_settings(data: dict, like: bytes | None) -> bytes:
    indent: int | str = 2
    text = _decode(like) if like else ""
    match = re.search(r"\n([ \t]+)\S", text)
    if match:
        indent = match.group(1) if "\t" in match.group(1) else len(match.group(1))
    out = json.dumps(data, indent=indent, ensure_ascii=False)
    if not like or like.endswith(b"\n"):
        out += "\n"
    return out.encode("utf-8")


def _remove_ours(hooks: dict, ident: str | None, target: Path) -> list:
    """Take cmem's groups (of this vault, or every vault's) out of every event; the removed."""
    removed: list[dict] = []
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        for index in reversed(_our_groups(groups, ident)):
            removed.insert(0, {event: groups.pop(index)})
        if not groups:
            del hooks[event]
    return removed


def plan_agent_install(
    vault: Vault, project: Path | None, agent: str = "claude-code", scope: Scope | None = None
) -> HookPlan:
    target_agent = target_of(agent)
    path = target_agent.settings_path(project, scope)
    notes: list[str] = []
    target = _target(path, notes)
    before = _read(target)
    data = _load_settings(target, before)
    ident = hook_id(vault)
    hooks = _hooks(data, target, create=True)
    wanted = {e.agent_event: _entry(vault, target_agent, e) for e in target_agent.events}
    current = {
        event: [groups[i] for i in _our_groups(groups, ident)]
        for event, groups in hooks.items()
        if isinstance(groups, list) and _our_groups(groups, ident)
    }
    if current == {event: [group] for event, group in wanted.items()}:
        return HookPlan(agent, "unchanged", path, target, before, before, notes=notes, ident=ident)
    action: HookAction = "update" if current else "install"
    for event in wanted:
        _groups(hooks, event, target)  # refuse a malformed event before editing
    _remove_ours(hooks, ident, target)
    for event, group in wanted.items():
        _groups(hooks, event, target).append(group)
    after = _dump_settings(data, before)
    created_dir = not target.parent.exists()
    if before is None:
        notes.append(
            f"{display(target)} does not exist: cmem creates it"
            + (" (and its folder)" if created_dir else "")
        )
    elif after != before and action == "install":
        notes.append(
            "the other settings are kept; JSON formatting is normalised (uninstall restores the file byte for byte)"
        )
    if action == "install":
        notes.append(SYNCED_NOTE)
        if target_agent.note:
            notes.append(target_agent.note)
    backup = {"original": None if before is None else _decode(before), "created_dir": created_dir}
    added = json.dumps({e: [g] for e, g in wanted.items()}, ensure_ascii=False, indent=2)
    return HookPlan(
        agent,
        action,
        path,
        target,
        before,
        after,
        added=added,
        notes=notes,
        ident=ident,
        backup=backup,
    )


def plan_agent_uninstall(
    vault: Vault | None,
    project: Path | None,
    agent: str = "claude-code",
    scope: Scope | None = None,
    path: Path | None = None,
) -> HookPlan:
    path = path or target_of(agent).settings_path(project, scope)
    notes: list[str] = []
    if not path.exists() and not path.is_symlink():
        return HookPlan(
            agent, "absent", path, path, None, None, notes=[f"{display(path)} does not exist"]
        )
    target = _target(path, notes)
    before = _read(target)
    data = _load_settings(target, before)
    ident = hook_id(vault) if vault is not None else None
    hooks = _hooks(data, target, create=False)
    removed = _remove_ours(hooks, ident, target) if hooks is not None else []
    if not removed:
        return HookPlan(
            agent, "absent", path, target, before, before, notes=notes, ident=ident or ""
        )
    removed_text = json.dumps(removed, ensure_ascii=False)
    saved = _backups(vault).get(str(target)) if vault is not None else None
    if (
        saved
        and before is not None
        and saved.get("written_sha256") == hashlib.sha256(before).hexdigest()
    ):
        original = saved.get("original")
        plan = HookPlan(
            agent,
            "uninstall",
            path,
            target,
            before,
            None if original is None else _encode(original),
            removed=removed_text,
            notes=notes,
            ident=ident or "",
        )
        if original is None:
            notes.append(f"cmem created {display(target)}: it is deleted")
            if saved.get("created_dir"):
                plan.remove_dir = target.parent
        else:
            notes.append("the file is restored byte for byte as it was before `cmem hook install`")
        return plan
    if not hooks:
        del data["hooks"]
    notes.append(
        "the file changed since the hook was installed: only the cmem entries are removed (JSON formatting may be normalised)"
    )
    return HookPlan(
        agent,
        "uninstall",
        path,
        target,
        before,
        _dump_settings(data, before),
        removed=removed_text,
        notes=notes,
        ident=ident or "",
    )


def agent_hook_status(vault: Vault | None, project: Path | None) -> list[InstalledHook]:
    """Every cmem hook in each agent's settings this project and the user have (`hook status`):
    one entry per file and vault, with the events it answers."""
    found = []
    ident = hook_id(vault) if vault is not None else None
    for target_agent in TARGETS.values():
        for settings in target_agent.candidate_paths(project):
            found += _file_status(vault, ident, target_agent, settings)
    for hook in found:
        if vault is not None and hook.current is not None:  # this vault's: its surface too?
            _surface_status(vault, TARGETS[hook.kind], project, hook)
    return found


def _surface_status(vault: Vault, target: AgentTarget, project: Path | None, hook) -> None:
    from cmem.setup.agent_surfaces import surface_installed

    surfaces = surface_installed(vault, target, project)
    if surfaces:
        hook.notes.append(f"the in-session pass: {target.surface_call} ({surfaces[0][0]})")
    else:
        hook.problems.append(
            f"the cmem-converge command is missing: run `cmem hook install --agent {target.name}` to add it"
        )


def _file_status(vault, ident, target_agent: AgentTarget, settings: Path) -> list[InstalledHook]:
    try:
        data = _load_settings(settings, _read(settings))
        hooks = _hooks(data, settings, create=False) or {}
    except HookError as exc:
        return [
            InstalledHook(target_agent.name, display(settings), "?", None, None, None, [str(exc)])
        ]
    by_ident: dict[str, dict[str, list]] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            continue
        for index in _our_groups(groups, None):
            mark = next(
                hit.group(1) for hit in map(_AGENT_MARK.search, _commands(groups[index])) if hit
            )
            by_ident.setdefault(mark, {})[event] = [groups[index]]
    found = []
    for mark, events in by_ident.items():
        command = next(iter(events.values()))[0]["hooks"][0].get("command", "")
        try:
            words = shlex.split(command, comments=True)
        except ValueError:
            words = []
        vault_path = words[words.index("--vault") + 1] if "--vault" in words[:-1] else None
        runs = " ".join(words[: words.index("--vault")]) if "--vault" in words else None
        hook = InstalledHook(target_agent.name, display(settings), mark, vault_path, runs, None)
        hook.events = sorted(events)
        if vault is not None and mark == ident:
            wanted = {e.agent_event: [_entry(vault, target_agent, e)] for e in target_agent.events}
            hook.current = events == wanted
            if not hook.current:
                hook.problems.append(
                    f"out of date: run `cmem hook install --agent {target_agent.name}` to refresh it"
                )
        hook.problems += _runs_problems(hook.vault, hook.runs)
        hook.notes += missing_events(target_agent, installed_version(target_agent))
        found.append(hook)
    return found


def installed_version(target: AgentTarget) -> tuple[int, ...] | None:
    """The version of the agent's CLI on PATH (`NAME --version`), or None: not found or unread."""
    import shutil
    import subprocess

    if not target.model_command or not target.events_since:
        return None
    program = shutil.which(target.model_command[0])
    if program is None:
        return None
    try:
        done = subprocess.run(
            [program, "--version"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", done.stdout)
    return tuple(int(part) for part in found.groups() if part is not None) if found else None


def missing_events(target: AgentTarget, version: tuple[int, ...] | None) -> list[str]:
    """What `hook status` says of events the installed version does not have yet."""
    if version is None:
        return []
    shown = ".".join(map(str, version))
    return [
        f"{target.label} {shown} has no {event} (it came in {'.'.join(map(str, since))}): {instead}"
        for event, since, instead in target.events_since
        if version < since
    ]


# --- the whole setup of one agent: hooks, the in-session surface, the unattended model ---------


def plan_agent_setup(
    vault: Vault,
    project: Path | None,
    agent: str,
    scope: Scope | None = None,
    with_model: bool = True,
) -> list[HookPlan]:
    """Everything `hook install --agent` changes, the hooks' file first: this vault's hooks taken
    out of the project's committed settings file when they go to a person's own (an older
    install moves), the surface of the in-session pass, and — when the agent's CLI is on
    PATH and `with_model` — that CLI as the model of unattended passes."""
    from cmem.setup.agent_models import headless_command, plan_model_install
    from cmem.setup.agent_surfaces import plan_surface_install

    target = target_of(agent)
    scope = scope or target.default_scope(project)
    main = plan_agent_install(vault, project, agent, scope)
    plans = [main]
    shared = target.settings_path(project, "shared")
    if shared != main.path and (shared.exists() or shared.is_symlink()):
        try:
            moved = plan_agent_uninstall(vault, project, agent, path=shared)
        except HookError as exc:  # the user's file: never a reason not to install in one's own
            main.notes.append(f"{exc} If it holds this vault's cmem hooks, remove them by hand.")
            moved = HookPlan(agent, "absent", shared, shared, None, None)
        if moved.changes:
            moved.role = "moved"
            moved.notes.insert(0, f"this vault's hooks move from here to {display(main.path)}")
            plans.append(moved)
    plans.append(plan_surface_install(vault, target, project, scope))
    command = headless_command(target) if with_model else None
    if command is not None:
        plans.append(plan_model_install(target, command))
    return plans


def plan_agent_teardown(
    vault: Vault | None, project: Path | None, agent: str, scope: Scope | None = None
) -> list[HookPlan]:
    """Everything `hook uninstall --agent` changes: this vault's hooks out of the agent's
    settings files (those of `scope`, or all three), then — once no hook of the agent is left
    for the vault anywhere — its surface and the model setting cmem made."""
    from cmem.setup.agent_models import plan_model_uninstall
    from cmem.setup.agent_surfaces import plan_surface_uninstall

    target = target_of(agent)
    paths = (
        [target.settings_path(project, scope)]
        if scope is not None
        else target.candidate_paths(project)
    )
    plans = [plan_agent_uninstall(vault, project, agent, path=path) for path in paths]
    removing = [plan for plan in plans if plan.changes]
    plans = removing or plans[:1]
    if vault is None:
        return plans
    gone = {str(plan.target) for plan in removing}
    still_hooked = any(
        entry.get("agent") == agent
        and entry.get("role", "hooks") == "hooks"
        and key not in gone
        and Path(key).exists()
        for key, entry in _backups(vault).items()
        if isinstance(entry, dict)
    )
    for scope_of_surface in ("user", "shared"):
        surface = plan_surface_uninstall(vault, target, project, scope_of_surface, still_hooked)
        if surface is not None:
            plans.append(surface)
    model = plan_model_uninstall(target, vault, still_hooked)
    if model is not None:
        plans.append(model)
    return plans
