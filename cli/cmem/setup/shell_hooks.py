"""Shell hooks (docs/design.md §7): a marked block in a shell's rc file that runs `cmem converge
--if-due --background --quiet` for one vault when the shell exits.

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
  add by hand. Every change is a plan shown before it is applied (`setup/hooks.py`).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cmem.setup.hooks import (
    SHELLS,
    HookError,
    HookPlan,
    InstalledHook,
    _decode,
    _encode,
    _read,
    _runs_problems,
    _target,
    cmem_executable,
    display,
    hook_id,
    trigger_argv,
)
from cmem.vault.layers import Vault

END = "# <<< cmem hook <<<"
_BEGIN = re.compile(r"^# >>> cmem hook \(([0-9A-Za-z_-]+)\) >>>[ \t]*$")
_END = re.compile(r"^# <<< cmem hook <<<[ \t]*$")
NOTE_NEWLINE = "# (cmem ended the line above this block with a newline; uninstall takes it back)"
NOTE_CREATED = "# (cmem created this file; uninstall deletes it when nothing else is left)"
_VAULT_LINE = re.compile(r"^# vault: (.*)$", re.MULTILINE)
_CMEM_LINE = re.compile(r"^# runs: (.*)$", re.MULTILINE)


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


@dataclass(frozen=True)
class Block:
    ident: str
    start: int  # offset of the begin marker
    end: int  # offset just after the end marker's line
    text: str


def find_blocks(text: str, where: Path) -> list[Block]:
    blocks: list[Block] = []
    open_at: int | None = None  # the offset of the begin marker of the block read now
    open_id = ""
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


def shell_hook_status(vault: Vault | None) -> list[InstalledHook]:
    """Every cmem hook in the three shells' rc files (`cmem hook status`, with the agent hooks)."""
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
    return found
