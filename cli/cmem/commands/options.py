"""The options every command shares, declared once as `Annotated` aliases, and how a command
reaches its `Invocation` (`cmem/invocation.py`: what one command line said that the error funnel
and the step helpers need to know). It is made fresh for each call of `app` (by `app.main`, or by
the main callback under a test runner) and reaches the commands through click's context."""

from pathlib import Path
from typing import Annotated, Any

import typer

from cmem.invocation import Invocation

COMPLETE_VAR = "_CMEM_COMPLETE"  # set by the scripts `cmem completion SHELL` prints, on each TAB

VAULT_HELP = (
    "The vault folder (default: $CMEM_VAULT, else the nearest folder above holding .cmem/)."
)
JSON_HELP = "Print one JSON object for scripts and agents."
SHRINK_HELP = (
    "Allow a pass to remove (drop or blank) more than a quarter of a file's or of the memory's "
    "statements, or to move statements out of the resident layer."
)
RESCAN_HELP = (
    "Ignore the stored result: walk and read the whole vault again (otherwise the archive is "
    "checked by folder times, so an archived note edited in place shows only then)."
)
SHELL_HELP = "bash, zsh or fish (default: from $SHELL)."
AGENT_HELP = (
    "An agent instead of a shell: claude-code (the project's .claude/settings.json), codex "
    "(~/.codex/hooks.json) or gemini (~/.gemini/settings.json)."
)
PROJECT_HELP = (
    "With --agent: the project folder whose .claude/, .codex/ or .gemini/ settings get the hook "
    "(default: the current folder for claude-code, your own settings for codex and gemini)."
)


def within(key: str):
    """A typer callback refusing a number outside `bounds.BOUNDS[key]` (NaN and infinity
    too: click's own ranges let NaN through): a usage error, exit 2."""
    from cmem.bounds import out_of_bounds

    def check(value):
        problem = None if value is None else out_of_bounds(key, value)
        if problem:
            raise typer.BadParameter(problem)
        return value

    return check


def invocation(ctx: typer.Context) -> Invocation:
    """The invocation of this command line (subcommands' contexts inherit the root's `obj`)."""
    if not isinstance(ctx.obj, Invocation):
        ctx.find_root().obj = ctx.obj = Invocation()
    return ctx.obj


def choices(*values: str):
    """TAB completion for an option with fixed values (`cmem completion`)."""
    return lambda incomplete="": [v for v in values if v.startswith(incomplete or "")]


def _vault_or_global(ctx: typer.Context, value: Path | None) -> Path | None:
    # `cmem --vault V status` and `cmem status --vault V` name the same vault; the latter wins
    return value if value is not None else invocation(ctx).vault


def _record_json(ctx: typer.Context, value: bool) -> bool:
    # recorded while the command line is parsed, so an error in the command body (or in
    # opening the vault) is already reported as JSON
    if value:
        invocation(ctx).json = True
    return value


VaultOption = Annotated[
    Path | None, typer.Option("--vault", help=VAULT_HELP, callback=_vault_or_global)
]
JsonOption = Annotated[bool, typer.Option("--json", help=JSON_HELP, callback=_record_json)]
RescanOption = Annotated[bool, typer.Option("--rescan", help=RESCAN_HELP)]
ShrinkOption = Annotated[bool, typer.Option("--allow-shrink", help=SHRINK_HELP)]


def yes_option(help: str) -> Any:
    """`--yes/-y`: the confirm gate's way round; each command says what it skips asking for.
    The `Annotated[bool, ...]` stays at the caller, where a type checker can read the alias."""
    return typer.Option("--yes", "-y", help=help)


ShellOption = Annotated[
    str | None,
    typer.Option("--shell", autocompletion=choices("bash", "zsh", "fish"), help=SHELL_HELP),
]
AgentOption = Annotated[str | None, typer.Option("--agent", help=AGENT_HELP)]
ProjectOption = Annotated[Path | None, typer.Option("--project", help=PROJECT_HELP)]
