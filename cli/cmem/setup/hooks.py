"""Session-end hooks (SPEC §7): a marked block in a shell's rc file, or a SessionEnd entry in a
Claude Code project's `.claude/settings.json`, that runs `cmem converge --if-due --background
--quiet` for one vault when the session ends.

The rules, from what goes wrong with `conda init` and friends (research/reliability.md §4):
- the block sits between `# >>> cmem hook (ID) >>>` and `# <<< cmem hook <<<`, the ID being the
  vault's, so installing again replaces it in place and other lines are never touched;
- uninstalling gives back the file byte for byte (a newline cmem had to add, or a file it
  created, is recorded inside the block and taken back with it);
- the exit only forks: the shell never waits for Python, let alone for the pass;
- bash has one EXIT trap: the block chains the trap set before it; zsh and fish stack their
  exit hooks (`zshexit_functions`, `--on-event fish_exit`);
- the result must pass `bash -n` / `zsh -n` / `fish --no-execute`, or nothing is written;
- a symlinked rc file is edited at its target; a read-only one is refused, with the snippet to
  add by hand. Every change is a plan shown before it is applied.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from cmem.atomic import write_atomic
from cmem.errors import CmemError
from cmem.vault.layers import Vault

SHELLS = ("bash", "zsh", "fish")
AGENTS = ("claude-code",)
END = "# <<< cmem hook <<<"
_BEGIN = re.compile(r"^# >>> cmem hook \(([0-9A-Za-z_-]+)\) >>>[ \t]*$")
_END = re.compile(r"^# <<< cmem hook <<<[ \t]*$")
NOTE_NEWLINE = "# (cmem ended the line above this block with a newline; uninstall takes it back)"
NOTE_CREATED = "# (cmem created this file; uninstall deletes it when nothing else is left)"
_VAULT_LINE = re.compile(r"^# vault: (.*)$", re.MULTILINE)
_CMEM_LINE = re.compile(r"^# runs: (.*)$", re.MULTILINE)
_AGENT_MARK = re.compile(r"# cmem hook \(([0-9A-Za-z_-]+)\)\s*$")
AGENT_BACKUPS = "agent-hooks.json"


class HookError(CmemError):
    """A hook cannot be installed or removed safely; the file is left as it was."""


@dataclass
class HookPlan:
    """One change to one file, shown to the user before it is made."""

    kind: str  # bash | zsh | fish | claude-code
    action: str  # install | update | unchanged | uninstall | absent
    path: Path  # the file as the user knows it (~/.bashrc)
    target: Path  # the file written: the symlink's target, or `path`
    before: bytes | None  # None: the file does not exist
    after: bytes | None  # None with uninstall: delete the file
    added: str = ""
    removed: str = ""
    notes: list[str] = field(default_factory=list)
    ident: str = ""
    backup: dict | None = None  # claude-code: what uninstall needs to restore the file
    remove_dir: Path | None = (
        None  # claude-code: a `.claude/` folder cmem created, removed when empty
    )

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
            "added": self.added or None,
            "removed": self.removed or None,
            "notes": self.notes,
        }


# --- what the hook runs ---------------------------------------------------------------------


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


def fish_quote(word: str) -> str:
    """fish's single quotes treat `\\\\` and `\\'` as escapes, so POSIX quoting is not enough."""
    if re.fullmatch(r"[A-Za-z0-9_./=:@%+-]+", word):
        return word
    return "'" + word.replace("\\", "\\\\").replace("'", "\\'") + "'"


def shell_snippet(shell: str, vault: Vault) -> str:
    """The code of the hook, without markers: what `cmem hook show SHELL` prints for
    `eval "$(cmem hook show SHELL)"` users and what the installed block holds."""
    ident = hook_id(vault)
    argv = trigger_argv(vault)
    if shell == "bash":
        command = " ".join(shlex.quote(word) for word in argv)
        return "\n".join(
            [
                f"if [[ $- == *i* && -z ${{__cmem_hook_{ident}-}} ]]; then",
                f"  __cmem_hook_{ident}=1",
                "  # bash keeps one EXIT trap: remember the one set before this block and run it after ours",
                f'  __cmem_read_trap_{ident}() {{ eval "set -- $(trap -p EXIT)"; __cmem_previous_trap_{ident}=${{3-}}; }}',
                f"  __cmem_read_trap_{ident}",
                f"  unset -f __cmem_read_trap_{ident}",
                f'  __cmem_status_{ident}() {{ return "$1"; }}',
                f"  __cmem_exit_{ident}() {{",
                "    local status=$?",
                "    # a subshell that forks and exits: nothing to wait for, no job left to warn about;",
                "    # SIGHUP ignored from the start, so a closing terminal cannot stop it before it detaches",
                f"    ( trap '' HUP; {command} </dev/null >/dev/null 2>&1 & )",
                f"    if [[ -n $__cmem_previous_trap_{ident} ]]; then",
                f'      __cmem_status_{ident} "$status"',
                f'      eval "$__cmem_previous_trap_{ident}"',
                "    fi",
                "  }",
                f"  trap __cmem_exit_{ident} EXIT",
                "fi",
            ]
        )
    if shell == "zsh":
        command = " ".join(shlex.quote(word) for word in argv)
        return "\n".join(
            [
                f"if [[ -o interactive ]] && (( ! ${{+__cmem_hook_{ident}}} )); then",
                f"  typeset -g __cmem_hook_{ident}=1",
                f"  __cmem_exit_{ident}() {{",
                "    # a subshell that forks and exits: nothing to wait for, no job left to warn about;",
                "    # SIGHUP ignored from the start, so a closing terminal cannot stop it before it detaches",
                f"    ( trap '' HUP; {command} </dev/null >/dev/null 2>&1 & )",
                "  }",
                "  typeset -ga zshexit_functions",
                f"  zshexit_functions+=(__cmem_exit_{ident})",
                "fi",
            ]
        )
    if shell == "fish":
        command = " ".join(fish_quote(word) for word in argv)
        return "\n".join(
            [
                f"if status is-interactive; and not set -q __cmem_hook_{ident}",
                f"    set -g __cmem_hook_{ident} 1",
                f"    function __cmem_exit_{ident} --on-event fish_exit",
                "        # sh forks the command and exits: fish keeps no job to warn about or wait for;",
                "        # SIGHUP ignored from the start, so a closing terminal cannot stop it before it detaches",
                f'        /bin/sh -c \'trap "" HUP; "$0" "$@" </dev/null >/dev/null 2>&1 &\' {command}',
                "    end",
                "end",
            ]
        )
    raise HookError(f"unknown shell {shell!r}; cmem has hooks for {', '.join(SHELLS)}.")


def shell_block(shell: str, vault: Vault, notes: list[str]) -> str:
    ident = hook_id(vault)
    lines = [
        f"# >>> cmem hook ({ident}) >>>",
        "# Added by `cmem hook install`; `cmem hook uninstall` removes it. When this shell exits it",
        "# starts `cmem converge --if-due` in the background for the vault below, and never waits.",
        f"# vault: {vault.root.resolve()}",
        f"# runs: {shlex.join(cmem_executable())}",
        *notes,
        shell_snippet(shell, vault),
        END,
    ]
    return "\n".join(lines) + "\n"


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


# --- where -----------------------------------------------------------------------------------


def rc_path(shell: str) -> Path:
    home = Path(os.path.expanduser("~"))
    if shell == "bash":
        return home / ".bashrc"
    if shell == "zsh":
        return Path(os.environ.get("ZDOTDIR") or home) / ".zshrc"
    if shell == "fish":
        return Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "fish" / "config.fish"
    raise HookError(f"unknown shell {shell!r}; cmem has hooks for {', '.join(SHELLS)}.")


def default_shell() -> str:
    name = Path(os.environ.get("SHELL", "")).name
    if name in SHELLS:
        return name
    raise HookError(
        f"cannot tell your shell from $SHELL ({os.environ.get('SHELL') or 'unset'}); pass --shell bash, zsh or fish."
    )


def display(path: Path) -> str:
    home = os.path.expanduser("~")
    text = str(path)
    return (
        "~" + text[len(home) :]
        if home not in ("", "/") and text.startswith(home + os.sep)
        else text
    )


# --- the rc file -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    ident: str
    start: int  # offset of the begin marker
    end: int  # offset just after the end marker's line
    text: str


def find_blocks(text: str, where: Path) -> list[Block]:
    blocks, open_at, open_id = [], None, None
    offset = 0
    open_line = 0
    for number, line in enumerate(_split_lines(text), start=1):
        bare = line.rstrip("\r\n")
        begin = _BEGIN.match(bare)
        if begin:
            if open_at is not None:
                raise HookError(
                    f"{display(where)} line {number}: a cmem hook block starts inside another one; fix the file by hand."
                )
            open_at, open_id, open_line = offset, begin.group(1), number
        elif _END.match(bare):
            if open_at is None:
                raise HookError(
                    f"{display(where)} line {number}: a cmem hook end marker without its begin marker; fix the file by hand."
                )
            blocks.append(
                Block(open_id, open_at, offset + len(line), text[open_at : offset + len(line)])
            )
            open_at = None
        offset += len(line)
    if open_at is not None:
        raise HookError(
            f"{display(where)} line {open_line}: the cmem hook block has no end marker ({END}); fix the file by hand."
        )
    return blocks


def _split_lines(text: str) -> list[str]:
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


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


def plan_shell_install(vault: Vault, shell: str) -> HookPlan:
    path = rc_path(shell)
    notes: list[str] = []
    target = _target(path, notes)
    before = _read(target)
    text = _decode(before) if before is not None else ""
    ident = hook_id(vault)
    ours = [block for block in find_blocks(text, target) if block.ident == ident]
    if len(ours) > 1:
        raise HookError(
            f"{display(target)} holds {len(ours)} cmem hook blocks for this vault; remove the extra ones by hand, or run `cmem hook uninstall` first."
        )
    if "\r\n" in text:
        notes.append(
            f"{display(target)} has Windows (CRLF) line ends: the block is written with LF ones, which {shell} needs; the other lines stay as they are"
        )
    if ours:
        old = ours[0]
        kept = [line for line in (NOTE_NEWLINE, NOTE_CREATED) if line in old.text]
        block = shell_block(shell, vault, kept)
        if old.text == block:
            return HookPlan(
                shell, "unchanged", path, target, before, before, notes=notes, ident=ident
            )
        after = text[: old.start] + block + text[old.end :]
        plan = HookPlan(
            shell,
            "update",
            path,
            target,
            before,
            _encode(after),
            added=block,
            removed=old.text,
            notes=notes,
            ident=ident,
        )
    else:
        block_notes = []
        separator = ""
        if before is None:
            block_notes.append(NOTE_CREATED)
            notes.append(f"{display(target)} does not exist: cmem creates it")
        elif text and not text.endswith("\n"):
            separator = "\n"
            block_notes.append(NOTE_NEWLINE)
            notes.append(
                f"{display(target)} does not end with a newline: cmem adds one before the block (uninstall takes it back)"
            )
        block = shell_block(shell, vault, block_notes)
        after = text + separator + block
        plan = HookPlan(
            shell,
            "install",
            path,
            target,
            before,
            _encode(after),
            added=block,
            notes=notes,
            ident=ident,
        )
    _check_syntax(plan)
    return plan


def plan_shell_uninstall(shell: str, vault: Vault | None) -> HookPlan:
    """Remove this vault's block (or, with no vault, every cmem block) from the shell's rc file."""
    path = rc_path(shell)
    notes: list[str] = []
    if not path.exists() and not path.is_symlink():
        return HookPlan(
            shell, "absent", path, path, None, None, notes=[f"{display(path)} does not exist"]
        )
    target = _target(path, notes)
    before = _read(target)
    text = _decode(before) if before is not None else ""
    ident = hook_id(vault) if vault is not None else ""
    ours = [block for block in find_blocks(text, target) if vault is None or block.ident == ident]
    if not ours:
        return HookPlan(shell, "absent", path, target, before, before, notes=notes, ident=ident)
    after = text
    for block in reversed(ours):
        start = block.start
        if NOTE_NEWLINE in block.text and start > 0 and after[start - 1] == "\n":
            start -= 1
        after = after[:start] + after[block.end :]
    removed = "".join(block.text for block in ours)
    if after == "" and any(NOTE_CREATED in block.text for block in ours):
        notes.append(f"cmem created {display(target)} and nothing else is in it: it is deleted")
        plan = HookPlan(
            shell,
            "uninstall",
            path,
            target,
            before,
            None,
            removed=removed,
            notes=notes,
            ident=ident,
        )
    else:
        plan = HookPlan(
            shell,
            "uninstall",
            path,
            target,
            before,
            _encode(after),
            removed=removed,
            notes=notes,
            ident=ident,
        )
    return plan


def syntax_check(shell: str, data: bytes) -> tuple[bool, str] | None:
    """(passes, first error line) from the shell's own parser, or None when the shell is not installed."""
    program = shutil.which(shell)
    if program is None:
        return None
    argv = [program, "--no-execute" if shell == "fish" else "-n"]
    with tempfile.NamedTemporaryFile("wb", suffix=f".{shell}", delete=False) as handle:
        handle.write(data)
        name = handle.name
    try:
        env = {
            key: value
            for key, value in os.environ.items()
            if key in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")
        }
        checked = subprocess.run(
            [*argv, name],
            capture_output=True,
            text=True,
            timeout=30,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, str(exc)
    finally:
        os.unlink(name)
    message = (checked.stderr or checked.stdout).strip().replace(name, "<rc file>")
    return checked.returncode == 0, message.splitlines()[0] if message else ""


def _check_syntax(plan: HookPlan) -> None:
    after = syntax_check(plan.kind, plan.after or b"")
    if after is None:
        plan.notes.append(
            f"{plan.kind} is not installed here, so the result was not checked with its parser"
        )
        return
    passes, message = after
    if passes:
        return
    before = syntax_check(plan.kind, plan.before or b"")
    if before is not None and not before[0]:
        plan.notes.append(
            f"{display(plan.target)} already fails `{plan.kind} -n` ({before[1]}); the block itself is added as it is"
        )
        return
    raise HookError(
        f"with the hook, {display(plan.target)} would fail `{plan.kind} -n` ({message}); nothing was changed. "
        f"Add the snippet from `cmem hook show {plan.kind}` by hand where it fits."
    )


# --- Claude Code ----------------------------------------------------------------------------


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


# --- applying a plan -------------------------------------------------------------------------


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
        if plan.remove_dir is not None:
            try:
                plan.remove_dir.rmdir()  # only when empty
            except OSError:
                pass
    else:
        write_atomic(plan.target, plan.after)
    if plan.kind == "claude-code" and vault is not None:
        if plan.action in ("install", "update"):
            backup = dict(plan.backup or {})
            previous = _backups(vault).get(str(plan.target))
            if (
                plan.action == "update" and previous
            ):  # keep the file as it was before the first install
                backup = {key: previous.get(key) for key in ("original", "created_dir")}
            backup["written_sha256"] = hashlib.sha256(plan.after or b"").hexdigest()
            _save_backup(vault, plan.target, backup)
        else:
            _save_backup(vault, plan.target, None)
    return plan


# --- status ----------------------------------------------------------------------------------


@dataclass
class InstalledHook:
    kind: str
    path: str
    ident: str
    vault: str | None
    runs: str | None
    current: bool | None  # same as `install` would write now (None: another vault's block)
    problems: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "path": self.path,
            "id": self.ident,
            "vault": self.vault,
            "runs": self.runs,
            "current": self.current,
            "problems": self.problems,
        }


def hook_status(vault: Vault | None, project: Path) -> list[InstalledHook]:
    """Every cmem hook in the three shells' rc files and in this project's Claude Code settings."""
    found = []
    ident = hook_id(vault) if vault is not None else None
    for shell in SHELLS:
        path = rc_path(shell)
        try:
            data = path.read_bytes()
            text = _decode(data)
            blocks = find_blocks(text, path)
        except FileNotFoundError:
            continue
        except (OSError, HookError) as exc:
            found.append(InstalledHook(shell, display(path), "?", None, None, None, [str(exc)]))
            continue
        for block in blocks:
            vault_match, runs_match = _VAULT_LINE.search(block.text), _CMEM_LINE.search(block.text)
            hook = InstalledHook(
                shell,
                display(path),
                block.ident,
                vault_match.group(1) if vault_match else None,
                runs_match.group(1) if runs_match else None,
                None,
            )
            if vault is not None and block.ident == ident:
                kept = [line for line in (NOTE_NEWLINE, NOTE_CREATED) if line in block.text]
                hook.current = block.text == shell_block(shell, vault, kept)
                if not hook.current:
                    hook.problems.append(
                        f"out of date: run `cmem hook install --shell {shell}` to refresh it"
                    )
            hook.problems += _runs_problems(hook.vault, hook.runs)
            found.append(hook)
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
