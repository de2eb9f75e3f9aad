"""Helpers the command modules share: opening the vault, printing, the confirm gate, and the
steps every writing command takes first (finish an interrupted step, `git.sync: auto`)."""

import sys

import typer

from cmem import pass_command
from cmem.errors import CmemError
from cmem.invocation import Invocation


def open_target(vault):
    """The vault a command works on (`vault` is already the subcommand's or the global --vault)."""
    from cmem.vault.layers import open_vault

    return open_vault(vault)


def reading_target(vault):
    """The vault a command reads (or adds a note to): when its `.cmem/` (or a file in it) leads
    out of the vault through a link, it is read all the same, and said; what would write
    through it refuses (`steps/preflight.py: check_own_files`)."""
    from cmem.vault.layers import OWN_FILES

    target = open_target(vault)
    problem = target.own_files_problem(OWN_FILES)
    if problem:
        warn(
            f"{problem}: cmem reads through it but never writes through it (a pass, archive "
            "apply, undo, capture and sync refuse); replace the link with a folder (or file) of "
            "this vault's own"
        )
    return target


def print_json(data) -> None:
    pass_command.print_json(typer.echo, data)


def show(text: str, err: bool = False) -> None:
    """Print a command's result as every surface shows note text: credentials redacted
    (`text/secrets.py: shown`), as the MCP tools, `context` and the prompt have them."""
    from cmem.text.secrets import shown

    typer.echo(shown(text), err=err)


def show_stored(printed: str | bytes) -> None:
    """Print again what a command printed and stored (`stored_results.printed`: UTF-8 bytes, or
    text that UTF-8 cannot encode), line end included, as it was printed then."""
    import codecs

    encoding = getattr(sys.stdout, "encoding", None) or "ascii"
    try:
        utf8 = codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        utf8 = False
    if isinstance(printed, bytes) and not utf8:
        printed = printed.decode("utf-8")  # the stream's own encoding and error handler
    typer.echo(printed, nl=False)


def warn(message: str, redacted: bool = False) -> None:
    pass_command.warn(typer.echo, message, redacted)


def confirm(yes: bool, question: str) -> None:
    """The confirm gate: a terminal asks; without one, --yes is required."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise CmemError("no terminal to confirm on; pass --yes to go ahead.")
    if not typer.confirm(question, default=False):
        raise typer.Exit(1)


def auto_sync(target, invoked: Invocation, *, note: bool = False, quiet: bool = False) -> None:
    """`git.sync: auto` around a step: `pass_command.auto_sync`, printed with typer."""
    pass_command.auto_sync(target, invoked, typer.echo, note=note, quiet=quiet)


def recover_first(target, purpose: str, as_json: bool, busy_ok: bool = False) -> None:
    """Finish an interrupted step before a command plans what it will do (and say so). With
    `busy_ok`, a step running now (its journal is live, not interrupted) is left to finish."""
    journals = target.journal_dir
    if not journals.is_dir() or not any(journals.iterdir()):
        return  # nothing is interrupted: spare `cmem note` the step layer's imports
    from cmem.errors import Busy
    from cmem.steps.runner import recover_interrupted

    try:
        lines = recover_interrupted(target, purpose)
    except Busy:
        if not busy_ok:
            raise
        lines = []
    for line in lines:
        if not as_json:
            typer.echo(line, err=True)


def report_interrupt(invoked: Invocation, exc: BaseException | None) -> None:
    """Ctrl-C: `pass_command.report_interrupt`, printed with typer."""
    pass_command.report_interrupt(invoked, exc, typer.echo)
