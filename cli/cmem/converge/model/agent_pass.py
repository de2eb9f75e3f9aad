"""A pass whose model is the agent running cmem (docs/design.md §15): in a session, the agent the user talks
to answers the pass's prompt itself, then cmem validates and applies its reply like any model's.

`hand_over` gives the agent everything in one answer: the file holding the prompt (an agent's
shell tool cuts a long output short; its file tool reads a file whole), the file to write the
reply to, and the exact command that applies it. Both files are in a folder of the agent's
workspace, `.cmem-pass/` (the folder it was started in): the file tools of Gemini CLI and Codex's
sandbox reach no further. That folder keeps itself out of git (a `.gitignore` of `*`) and is
removed once the reply is applied.

It also remembers which notes the prompt covered, so applying that file (`converge --response
FILE`) judges the same notes — again after a rejection, when the agent mends the file and runs
the same command — even if a note arrived meanwhile.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass, replace
from pathlib import Path

from cmem.converge.pass_values import PassOptions, PassResult
from cmem.vault.layers import Vault

PASS_FOLDER = ".cmem-pass"
REPLY_FILE = "reply.md"
PROMPT_FILE = "prompt.md"
HANDOVER_FILE = "agent-pass.json"  # in the machine folder
# Rejected replies an agent mends before it stops and shows the user the messages.
MAX_ROUNDS = 3


@dataclass(frozen=True)
class Handover:
    """What an agent needs to be the model of one pass."""

    prompt: str
    prompt_file: Path
    notes: list[str]
    waiting: list[str]  # pending notes over the budget: a later pass takes them
    reply_file: Path
    apply_command: str
    diff_command: str
    tokens: int
    warnings: list[str]

    def to_json(self) -> dict:
        return {
            "status": "prompt",
            "notes": self.notes,
            "waiting": self.waiting,
            "tokens": self.tokens,
            "prompt_file": str(self.prompt_file),
            "prompt_lines": self.prompt.count("\n") + 1,
            "reply_file": str(self.reply_file),
            "apply": self.apply_command,
            "diff": self.diff_command,
            "max_rounds": MAX_ROUNDS,
            "warnings": self.warnings,
            "prompt": self.prompt,
        }


def pass_folder(vault: Vault, workspace: Path | None) -> Path:
    """Where the hand-over's files go: `.cmem-pass/` in the agent's workspace, or the machine
    folder's when there is none it can write."""
    if workspace is not None and workspace.is_dir() and os.access(workspace, os.W_OK):
        return workspace / PASS_FOLDER
    return vault.machine_dir / "agent-pass"


def hand_over(
    vault: Vault, options: PassOptions, command: str, workspace: Path | None = None
) -> Handover | PassResult:
    """The prompt of the pass `options` describe, for the agent to answer; or the pass's result
    when there is nothing to converge. `command` names this cmem and the vault, as the agent's
    shell should run it; `workspace` is the folder the agent works in."""
    from cmem.atomic import write_atomic
    from cmem.converge.pipeline import run_pass
    from cmem.text.tokens import estimate_tokens

    result = run_pass(vault, replace(options, emit_prompt=True))
    if result.prompt is None:
        return result
    folder = pass_folder(vault, workspace)
    _remove_folder(folder)  # a new reply file: agents' write tools refuse an unread file
    os.makedirs(folder, mode=0o700, exist_ok=True)
    write_atomic(folder / ".gitignore", "# cmem's hand-over to an agent, removed once applied\n*\n")
    prompt_file, reply = folder / PROMPT_FILE, folder / REPLY_FILE
    write_atomic(prompt_file, result.prompt, mode=0o600)  # the notes' text: the user's alone
    record = {"folder": str(folder), "reply_file": str(reply), "notes": result.selected}
    write_atomic(vault.machine_dir / HANDOVER_FILE, json.dumps(record, ensure_ascii=False))
    return Handover(
        prompt=result.prompt,
        prompt_file=prompt_file,
        notes=list(result.selected),
        waiting=list(result.waiting),
        reply_file=reply,
        apply_command=f"{command} converge --response {shlex.quote(str(reply))}",
        diff_command=f"{command} diff",
        tokens=estimate_tokens(result.prompt),
        warnings=list(result.warnings),
    )


def _remove_folder(folder: Path) -> None:
    """The hand-over's folder and the files cmem puts in it, nothing else of the user's."""
    for name in (PROMPT_FILE, REPLY_FILE, ".gitignore"):
        try:
            (folder / name).unlink()
        except OSError:
            pass
    try:
        folder.rmdir()  # only when empty
    except OSError:
        pass


def handed_over_notes(vault: Vault, response_file: Path) -> list[str] | None:
    """The notes the prompt handed over for `response_file` covered, while they all still exist;
    None for any other file (a reply written by hand judges what a pass would select now)."""
    try:
        with open(vault.machine_dir / HANDOVER_FILE, encoding="utf-8") as handle:
            record = json.load(handle)
        same = os.path.samefile(record["reply_file"], response_file)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    notes = record.get("notes")
    if not same or not isinstance(notes, list) or not notes:
        return None
    if not all(isinstance(n, str) and (vault.root / n).is_file() for n in notes):
        return None
    return notes


def spend_handover(vault: Vault) -> None:
    """A reply applied (or with nothing left to judge): the hand-over and its folder are spent."""
    record_path = vault.machine_dir / HANDOVER_FILE
    try:
        with open(record_path, encoding="utf-8") as handle:
            folder = json.load(handle).get("folder")
    except (OSError, ValueError, AttributeError):
        folder = None
    if isinstance(folder, str) and Path(folder).name in (PASS_FOLDER, "agent-pass"):
        _remove_folder(Path(folder))
    try:
        os.unlink(record_path)
    except OSError:
        pass
