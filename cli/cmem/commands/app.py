"""The typer app assembled from the command modules, and `main`: the one error funnel, where a
`CmemError` becomes `error: …` (or `{"error": …}` under --json) and an exit code.

Adding a command: write it in the module of its group (`reading.py`, `converge.py`, …), then
name it in `COMMANDS` below; the order there is the order `cmem --help` lists them in. A command
line imports the module of the command it names and builds that command alone (`CommandTable`):
every command, the agents' hooks too, starts with typer, and no more of the table than it uses."""

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup
from typer.models import CommandInfo

from cmem import __version__
from cmem.commands.common import report_interrupt
from cmem.commands.options import COMPLETE_VAR, VAULT_HELP, Invocation, invocation
from cmem.errors import CmemError
from cmem.invocation import tolerant_output

# The command table, in the order `cmem --help` lists it: the name a command line gives, and the
# function (or the sub-app of a group) in its module of `cmem.commands`.
COMMANDS = {
    "init": "setup:init",
    "status": "reading:status",
    "scan": "reading:scan",
    "note": "triggers:note",
    "capture": "triggers:capture",
    "context": "reading:context",
    "doctor": "doctor:doctor",
    "converge": "converge:converge",
    "apply": "converge:apply_proposal",
    "demo": "converge:demo",
    "archive": "archive:archive_app",
    "undo": "archive:undo",
    "sync": "sync:sync",
    "log": "reading:log_command",
    "diff": "reading:diff_command",
    "trace": "reading:trace",
    "recall": "reading:recall",
    "mcp": "triggers:mcp_command",
    "hook": "setup:hook_app",
    "completion": "setup:completion",
    "watch": "triggers:watch",
    "agent-instructions": "setup:agent_instructions_command",
    "trust": "setup:trust",
}


class CommandTable(TyperGroup):
    """The app's group of commands, each imported and built by typer when a command line (or the
    help's list) names it, not all of them on every call."""

    def list_commands(self, ctx) -> list[str]:
        return list(COMMANDS)

    def resolve_command(self, ctx, args):
        if args and args[0] not in COMMANDS:  # a typo: typer suggests from the commands built
            for name in COMMANDS:
                self.get_command(ctx, name)
        return super().resolve_command(ctx, args)

    def get_command(self, ctx, cmd_name: str):
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, name = COMMANDS[cmd_name].split(":")
            # __import__, not importlib.import_module: `python -X importtime` lists it then
            found = getattr(__import__(f"cmem.commands.{module}", fromlist=[name]), name)
            command: Any
            if isinstance(found, typer.Typer):  # a group: archive, hook
                command = typer.main.get_group(found)
            else:
                command = typer.main.get_command_from_info(
                    CommandInfo(name=cmd_name, callback=found),
                    pretty_exceptions_short=True,
                    rich_markup_mode=None,
                )
            command.name = cmd_name
            self.commands[cmd_name] = command
        return self.commands.get(cmd_name)


app = typer.Typer(
    name="cmem",
    cls=CommandTable,
    help=(
        "Convergent memory: keep an agent's and a person's long-term memory as a Markdown vault.\n\n"
        "Loose notes at the vault root (the divergent layer) are scanned for signals; `cmem converge` "
        "merge-rewrites them into the convergent layer (resident files read every session, topic files "
        "recalled by topic) with a dated trace of every change and a source for every statement. "
        "Every change is a git commit you can review and undo."
    ),
    rich_markup_mode=None,  # plain help: rich-formatted help would import rich on every call
    add_completion=False,
    pretty_exceptions_enable=False,  # a bug shows a plain traceback, not a rich panel
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"cmem {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    ctx: typer.Context,
    vault: Annotated[Path | None, typer.Option("--vault", help=VAULT_HELP)] = None,
    no_color: Annotated[
        bool, typer.Option("--no-color", help="No colours (NO_COLOR is honoured too).")
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    invocation(ctx).vault = vault  # each subcommand's --vault falls back on it (options.py)
    if no_color:
        from cmem.render.reports import set_color

        set_color(False)
    elif "cmem.render.reports" in sys.modules:
        # the renderer keeps its colour switch at module level: an earlier invocation in this
        # process (a test runner, the MCP server) may have turned it off
        sys.modules["cmem.render.reports"].set_color(None)


def main() -> None:
    """Entry point: one translation point from CmemError to `error: …` and an exit code."""
    _collect_less()
    if os.environ.get(COMPLETE_VAR):
        # typer registers its shell classes only with add_completion, which would add two
        # --install-completion options to every help; the completion request needs them
        from typer._completion_classes import completion_init

        completion_init()
    tolerant_output()
    _hoist_global_flags(sys.argv)
    # This command line's state, made here so the funnel below still holds it once the command
    # has raised (click's contexts are gone by then); the commands reach it as ctx.obj.
    invoked = Invocation()
    try:
        # Without standalone mode typer returns (not raises) the code of a `typer.Exit(n)`.
        code = app(standalone_mode=False, obj=invoked)
        if code == 130:  # typer turns Ctrl-C into exit code 130 without a word
            report_interrupt(invoked, None)
        if isinstance(code, int) and code:
            sys.exit(code)
    except (CmemError, OSError, ModuleNotFoundError) as exc:
        from cmem.errors import failure_sentence

        failed = failure_sentence(exc)  # a CmemError, a full disk, a dependency not installed
        if failed is None:
            raise
        _fail(invoked, *failed)
    except KeyboardInterrupt as exc:
        report_interrupt(invoked, exc)
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        typer.echo("aborted", err=True)
        sys.exit(1)
    except Exception as exc:  # click's usage errors arrive here in non-standalone mode
        usage = _click_usage_error(exc)
        if usage is None:
            raise
        sys.exit(usage)


# The cyclic collector would walk everything a cold scan keeps, every 700 new objects, though
# nearly nothing a command makes is cyclic garbage; `watch` and `mcp` still collect, less often.
GC_THRESHOLDS = (50_000, 50, 100)


def _collect_less() -> None:
    import gc

    if gc.get_threshold()[0] < GC_THRESHOLDS[0]:
        gc.set_threshold(*GC_THRESHOLDS)


# Global flags a user may also write after the subcommand, as with git (`cmem status --no-color`).
_GLOBAL_FLAGS = ("--no-color",)


def _hoist_global_flags(argv: list[str]) -> None:
    """Move a global flag written after the subcommand to before it, where the main callback
    reads it. Arguments after a `--` are text (`cmem note -- --no-color`), never flags."""
    if len(argv) < 2:
        return
    end = argv.index("--") if "--" in argv else len(argv)
    found = [arg for arg in argv[2:end] if arg in _GLOBAL_FLAGS]
    if not found or argv[1] in _GLOBAL_FLAGS:
        return
    rest = [
        arg for index, arg in enumerate(argv) if not (2 <= index < end and arg in _GLOBAL_FLAGS)
    ]
    argv[:] = [rest[0], *dict.fromkeys(found), *rest[1:]]


def _fail(invoked: Invocation, message: str, exit_code: int) -> None:
    if invoked.json:
        typer.echo(json.dumps({"error": message}, ensure_ascii=False))
    else:
        from cmem.render.reports import paint

        prefix = "" if exit_code == 0 else paint("error: ", "red", stream=sys.stderr)
        typer.echo(prefix + message, err=True)
    sys.exit(exit_code)


def _click_usage_error(exc: Exception) -> int | None:
    """Typer vendors click; its usage errors carry `show()` and `exit_code`."""
    if hasattr(exc, "show") and hasattr(exc, "exit_code"):
        exc.show()
        return exc.exit_code
    return None
