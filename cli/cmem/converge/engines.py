"""What answers a pass's prompt: the `Engine` protocol and `ENGINES`, the engines `--engine`
names, each made by a function of the pass's setup. Every engine's reply meets the same parser
and validator (`converge/replies.py`).

Light at import (the typer-free command line reads `ENGINE_NAMES`): what an engine needs is
imported when it is made or asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Protocol

if TYPE_CHECKING:
    from cmem.converge.pass_values import EngineName, PassInputs, PassOptions, Progress, PromptPlan
    from cmem.setup.trust import ResolvedCommand
    from cmem.steps.run_records import RunRecord
    from cmem.vault.layers import Vault

NO_MODEL_COMMAND = (
    "--engine llm needs a model command: pass --llm CMD, set $CMEM_LLM, or set llm.command "
    "(then `cmem trust`)"
)


@dataclass(frozen=True)
class EngineReply:
    """One answer of the engine."""

    text: str
    warnings: tuple[str, ...] = ()  # redactions from the prompt, the model command's own warnings


class Engine(Protocol):
    """choose_engine: what answers the prompt."""

    # read-only, so a frozen dataclass (or a property) meets it
    @property
    def kind(self) -> str:
        """response | builtin | llm: the run record's name, and the failure message's."""
        ...

    @property
    def name(self) -> str:
        """response-file | builtin | llm: PassResult.engine and the commit's Engine field."""
        ...

    @property
    def model(self) -> str | None: ...

    @property
    def repair_rounds(self) -> int:
        """Times a rejected reply goes back (a model's only)."""
        ...

    @property
    def reads_prompt(self) -> bool:
        """False: the prompt is made for the run record only."""
        ...

    def ask(self, prompt: str, attempt: int) -> EngineReply:
        """The reply to `prompt`; `attempt` is 1, then 2, 3… for the repair rounds."""
        ...


@dataclass(frozen=True)
class EngineSetup:
    """What an engine is made from: the pass as far as it has come when the engine is chosen."""

    vault: Vault
    options: PassOptions
    inputs: PassInputs
    plan: PromptPlan
    progress: Progress
    record: RunRecord


@dataclass(frozen=True)
class ResponseFile:
    """`--response FILE` (and the MCP tool): an agent that is itself the model answered already."""

    reply: EngineReply
    kind: str = "response"
    name: str = "response-file"
    model: str | None = None
    repair_rounds: int = 0
    reads_prompt: bool = False

    def ask(self, prompt: str, attempt: int) -> EngineReply:
        return self.reply


@dataclass(frozen=True)
class BuiltinEngine:
    """The offline, extractive engine (`converge/builtin/engine.py`): it reads the selected notes' cue
    lines, not the prompt."""

    setup: EngineSetup
    kind: str = "builtin"
    name: str = "builtin"
    model: str | None = None
    repair_rounds: int = 0  # deterministic: asking again gives the same reply
    reads_prompt: bool = False

    def ask(self, prompt: str, attempt: int) -> EngineReply:
        from cmem.converge.builtin.engine import builtin_response

        inputs = self.setup.inputs
        return EngineReply(
            builtin_response(
                self.setup.vault, inputs.selection.notes, self.setup.plan.writable, inputs.pass_date
            )
        )


@dataclass(frozen=True)
class ModelCommand:
    """The model command `setup/trust.py` allows, given the redacted prompt on stdin."""

    setup: EngineSetup
    resolved: ResolvedCommand
    command: str  # the resolved command (a ModelCommand is made only when there is one)
    kind: str = "llm"
    name: str = "llm"
    reads_prompt: bool = True

    @property
    def model(self) -> str | None:
        return self.command

    @property
    def repair_rounds(self) -> int:
        return self.setup.vault.config.repair_rounds

    def ask(self, prompt: str, attempt: int) -> EngineReply:
        from cmem.converge.model.command import run_model_command
        from cmem.converge.prompt import redacted_prompt
        from cmem.errors import CmemError
        from cmem.text.secrets import redact_secrets

        vault, plan, resolved = self.setup.vault, self.setup.plan, self.resolved
        # the first prompt is the one the run record redacted piece by piece just before
        first = prompt == plan.prompt.text
        safe_prompt, redacted = (
            redacted_prompt(vault, plan.prompt) if first else redact_secrets(prompt)
        )
        notice = (
            [f"{redacted} credential-like strings were redacted from the prompt"]
            if redacted
            else []
        )
        label = (
            "asking the model"
            if attempt == 1
            else f"asking the model to repair (round {attempt - 1})"
        )
        progress = self.setup.progress
        try:
            reply = run_model_command(
                self.command,
                safe_prompt,
                timeout=resolved.timeout,
                max_output_bytes=resolved.max_output_bytes,
                on_tick=lambda elapsed: progress(label, elapsed, resolved.timeout),
            )
        except CmemError as exc:
            # keep what the model did say: the run record is where a user looks next
            self.setup.record.write(
                f"failure-{attempt}.json",
                {
                    "error": str(exc),
                    "reason": getattr(exc, "reason", None),
                    "stdout": getattr(exc, "stdout", "")[-20000:],
                    "stderr": getattr(exc, "stderr", ""),
                    "elapsed": getattr(exc, "elapsed", None),
                },
            )
            raise
        model_notes = [f"model: {warning}" for warning in reply.warnings]
        return EngineReply(reply.stdout, tuple(notice + model_notes))


def builtin_engine(setup: EngineSetup) -> Engine | None:
    return BuiltinEngine(setup)


def model_engine(setup: EngineSetup) -> Engine | None:
    """None when no model command is configured (the pass then falls back to the builtin
    engine, unless `--engine llm` asked for a model)."""
    from cmem.setup.trust import resolve_model_command

    resolved = resolve_model_command(setup.vault, setup.options.llm)
    return None if resolved.command is None else ModelCommand(setup, resolved, resolved.command)


# `--engine NAME` → the function making that engine (None: it cannot answer in this vault).
ENGINES: dict[EngineName, Callable[[EngineSetup], Engine | None]] = {
    "builtin": builtin_engine,
    "llm": model_engine,
}
ENGINE_NAMES: tuple[EngineName, ...] = tuple(ENGINES)
# No `--engine`: the first of these that can answer (a model when a command is configured).
DEFAULT_ORDER: tuple[EngineName, ...] = ("llm", "builtin")


def engine_named(name: str) -> EngineName | None:
    """`name` as an engine's name (`--engine NAME`), or None when no engine has it."""
    return next((known for known in ENGINE_NAMES if known == name), None)


def choose_engine(
    vault: Vault,
    options: PassOptions,
    inputs: PassInputs,
    plan: PromptPlan,
    progress: Progress,
    record: RunRecord,
) -> Engine:
    """A --response file, the engine `--engine` names, or the first of `DEFAULT_ORDER` that can
    answer."""
    from cmem.errors import CmemError

    if options.response_text is not None:
        return ResponseFile(EngineReply(options.response_text))
    setup = EngineSetup(vault, options, inputs, plan, progress, record)
    for name in (options.engine,) if options.engine else DEFAULT_ORDER:
        engine = ENGINES[name](setup)
        if engine is not None:
            return engine
    raise CmemError(f"{NO_MODEL_COMMAND}.")


def check_engine(vault: Vault, options: PassOptions) -> None:
    """What can be told of the engine before the pass begins: an empty `--llm` (an unset
    variable: `--llm "$LLM"`) is a usage error, never the builtin engine in its place; `--engine
    llm` with no command, or a command that is not installed, is an error — said before the
    snapshot commit and the run record, which belong to a pass that reached its engine. (An
    untrusted vault command is refused inside the pass, which records it: docs/design.md §7.)"""
    from cmem.errors import CmemError, UsageError

    if options.llm is not None and not options.llm.strip():
        raise UsageError(
            "--llm is empty (an unset variable?); give the model command, or leave --llm out."
        )
    if options.engine is not None and options.engine not in ENGINES:
        raise UsageError(f"--engine must be one of {', '.join(ENGINE_NAMES)}.")
    if options.emit_prompt or options.response_text is not None or options.engine == "builtin":
        return
    from cmem.converge.model.command import check_installed
    from cmem.setup.trust import UntrustedCommand, resolve_model_command

    try:
        resolved = resolve_model_command(vault, options.llm)
    except UntrustedCommand:
        return
    if resolved.command is not None:
        check_installed(resolved.command)
    elif options.engine == "llm":
        raise CmemError(f"{NO_MODEL_COMMAND}; nothing was written and nothing was committed.")
