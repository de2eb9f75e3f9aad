"""A pass whose model is the agent running cmem (SPEC §15): in a session, the agent the user talks
to answers the pass's prompt itself, then cmem validates and applies its reply like any model's.

`hand_over` gives the agent everything in one answer: the file holding the prompt (an agent's
shell tool cuts a long output short; its file tool reads a file whole), the file to write the
reply to, and the exact command that applies it. It also remembers which notes the prompt covered, so
applying that file (`converge --response FILE`) judges the same notes — again after a rejection,
when the agent mends the file and runs the same command — even if a note arrived meanwhile.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass, replace
from pathlib import Path

from cmem.converge.pass_values import PassOptions, PassResult
from cmem.vault.layers import Vault

REPLY_FILE = "agent-reply.md"
PROMPT_FILE = "agent-prompt.md"
HANDOVER_FILE = "agent-pass.json"
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


def reply_path(vault: Vault) -> Path:
    """Where the agent writes its reply: the machine folder (never the vault, which git tracks)."""
    return vault.machine_dir / REPLY_FILE


def hand_over(vault: Vault, options: PassOptions, command: str) -> Handover | PassResult:
    """The prompt of the pass `options` describe, for the agent to answer; or the pass's result
    when there is nothing to converge. `command` names this cmem and the vault, as the agent's
    shell should run it."""
    from cmem.atomic import write_atomic
    from cmem.converge.pipeline import run_pass
    from cmem.text.tokens import estimate_tokens

    result = run_pass(vault, replace(options, emit_prompt=True))
    if result.prompt is None:
        return result
    reply = reply_path(vault)
    try:  # a new file: agents' file tools refuse to overwrite a file they have not read
        reply.unlink()
    except FileNotFoundError:
        pass
    prompt_file = vault.machine_dir / PROMPT_FILE
    write_atomic(prompt_file, result.prompt)  # private, like the run records' prompts
    write_atomic(  # in the machine folder: private, and never a vault file
        vault.machine_dir / HANDOVER_FILE,
        json.dumps({"reply_file": str(reply), "notes": result.selected}, ensure_ascii=False),
    )
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
    """A reply applied (or with nothing left to judge): the handover is spent."""
    try:
        os.unlink(vault.machine_dir / HANDOVER_FILE)
    except OSError:
        pass
