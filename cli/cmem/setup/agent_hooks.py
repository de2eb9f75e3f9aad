"""Agent hooks (SPEC §7): a SessionEnd entry in a Claude Code project's `.claude/settings.json`
that runs `cmem converge --if-due --background --quiet` for one vault when the session ends.

The entry's command ends with a `# cmem hook (ID)` comment, so cmem finds its own entry again
among the user's. The other settings are kept; uninstall restores the file byte for byte from a
private backup (`setup/hooks.py`) when the file has not changed since, else removes only the
cmem entry.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from pathlib import Path

from cmem.setup.hooks import (
    HookError,
    HookPlan,
    InstalledHook,
    _backups,
    _decode,
    _encode,
    _read,
    _runs_problems,
    _target,
    display,
    hook_id,
    trigger_argv,
)
from cmem.vault.layers import Vault

_AGENT_MARK = re.compile(r"# cmem hook \(([0-9A-Za-z_-]+)\)\s*$")


def agent_command(vault: Vault) -> str:
    """The SessionEnd command; Claude Code runs it with a shell, so the trailing comment marks it."""
    return (
        " ".join(shlex.quote(word) for word in trigger_argv(vault))
        + f" # cmem hook ({hook_id(vault)})"
    )


def agent_snippet(vault: Vault) -> str:
    entry = {
        "hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": agent_command(vault)}]}]}
    }
    return json.dumps(entry, indent=2, ensure_ascii=False)


def claude_settings_path(project: Path) -> Path:
    return project / ".claude" / "settings.json"


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


def _session_end(data: dict, target: Path, create: bool) -> list | None:
    hooks = data.get("hooks")
    if hooks is None:
        if not create:
            return None
        hooks = data["hooks"] = {}
    if not isinstance(hooks, dict):
        raise HookError(
            f'{display(target)}: "hooks" is not an object; cmem will not guess how to add to it.'
        )
    groups = hooks.get("SessionEnd")
    if groups is None:
        if not create:
            return None
        groups = hooks["SessionEnd"] = []
    if not isinstance(groups, list):
        raise HookError(
            f'{display(target)}: "hooks.SessionEnd" is not a list; cmem will not guess how to add to it.'
        )
    return groups


def _our_groups(groups: list, ident: str | None) -> list[int]:
    found = []
    for index, group in enumerate(groups):
        commands = group.get("hooks") if isinstance(group, dict) else None
        for hook in commands if isinstance(commands, list) else []:
            mark = (
                _AGENT_MARK.search(str(hook.get("command", ""))) if isinstance(hook, dict) else None
            )
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


def plan_agent_install(vault: Vault, project: Path) -> HookPlan:
    path = claude_settings_path(project)
    notes: list[str] = []
    target = _target(path, notes)
    before = _read(target)
    data = _load_settings(target, before)
    ident = hook_id(vault)
    groups = _session_end(data, target, create=True)
    entry = {"hooks": [{"type": "command", "command": agent_command(vault)}]}
    ours = _our_groups(groups, ident)
    if ours and groups[ours[0]] == entry and len(ours) == 1:
        return HookPlan(
            "claude-code", "unchanged", path, target, before, before, notes=notes, ident=ident
        )
    action = "update" if ours else "install"
    for index in reversed(ours[1:]):
        del groups[index]
    if ours:
        groups[ours[0]] = entry
    else:
        groups.append(entry)
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
    backup = {"original": None if before is None else _decode(before), "created_dir": created_dir}
    return HookPlan(
        "claude-code",
        action,
        path,
        target,
        before,
        after,
        added=json.dumps(entry, ensure_ascii=False),
        notes=notes,
        ident=ident,
        backup=backup,
    )


def plan_agent_uninstall(vault: Vault | None, project: Path) -> HookPlan:
    path = claude_settings_path(project)
    notes: list[str] = []
    if not path.exists() and not path.is_symlink():
        return HookPlan(
            "claude-code",
            "absent",
            path,
            path,
            None,
            None,
            notes=[f"{display(path)} does not exist"],
        )
    target = _target(path, notes)
    before = _read(target)
    data = _load_settings(target, before)
    ident = hook_id(vault) if vault is not None else None
    groups = _session_end(data, target, create=False)
    ours = _our_groups(groups, ident) if groups is not None else []
    if not ours:
        return HookPlan(
            "claude-code", "absent", path, target, before, before, notes=notes, ident=ident or ""
        )
    removed = json.dumps([groups[index] for index in ours], ensure_ascii=False)
    saved = _backups(vault).get(str(target)) if vault is not None else None
    if (
        saved
        and before is not None
        and saved.get("written_sha256") == hashlib.sha256(before).hexdigest()
    ):
        original = saved.get("original")
        plan = HookPlan(
            "claude-code",
            "uninstall",
            path,
            target,
            before,
            None if original is None else _encode(original),
            removed=removed,
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
    for index in reversed(ours):
        del groups[index]
    hooks = data["hooks"]
    if not groups:
        del hooks["SessionEnd"]
    if not hooks:
        del data["hooks"]
    notes.append(
        "the file changed since the hook was installed: only the cmem entry is removed (JSON formatting may be normalised)"
    )
    return HookPlan(
        "claude-code",
        "uninstall",
        path,
        target,
        before,
        _dump_settings(data, before),
        removed=removed,
        notes=notes,
        ident=ident or "",
    )


def agent_hook_status(vault: Vault | None, project: Path) -> list[InstalledHook]:
    """Every cmem hook in this project's Claude Code settings (`cmem hook status`)."""
    found = []
    ident = hook_id(vault) if vault is not None else None
    settings = claude_settings_path(project)
    try:
        data = _load_settings(settings, _read(settings))
        groups = _session_end(data, settings, create=False) or []
    except HookError as exc:
        found.append(
            InstalledHook("claude-code", display(settings), "?", None, None, None, [str(exc)])
        )
        groups = []
    for index in _our_groups(groups, None):
        command = groups[index]["hooks"][0].get("command", "") if groups[index].get("hooks") else ""
        mark = _AGENT_MARK.search(command)
        try:
            words = shlex.split(command, comments=True)
        except ValueError:
            words = []
        vault_path = words[words.index("--vault") + 1] if "--vault" in words[:-1] else None
        hook = InstalledHook(
            "claude-code",
            display(settings),
            mark.group(1) if mark else "?",
            vault_path,
            " ".join(words[: words.index("--vault")]) if "--vault" in words else None,
            None,
        )
        if vault is not None and hook.ident == ident:
            hook.current = command == agent_command(vault)
            if not hook.current:
                hook.problems.append(
                    "out of date: run `cmem hook install --agent claude-code` to refresh it"
                )
        hook.problems += _runs_problems(hook.vault, hook.runs)
        found.append(hook)
    return found
