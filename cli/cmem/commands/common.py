"""Helpers the command modules share: opening the vault, printing, the confirm gate, and the
steps every writing command takes first (finish an interrupted step, `git.sync: auto`)."""

import json
import sys
from typing import Optional

import typer

from cmem.commands.options import Invocation
from cmem.errors import CmemError


def open_target(vault):
    """The vault a command works on (`vault` is already the subcommand's or the global --vault)."""
    from cmem.vault.layers import open_vault

    return open_vault(vault)


def print_json(data) -> None:
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2))


def warn(message: str) -> None:
    from cmem.render.reports import paint

    typer.echo(paint("warning: ", "yellow", stream=sys.stderr) + message, err=True)


def confirm(yes: bool, question: str) -> None:
    """The confirm gate: a terminal asks; without one, --yes is required."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise CmemError("no terminal to confirm on; pass --yes to go ahead.")
    if not typer.confirm(question, default=False):
        raise typer.Exit(1)


def auto_sync(target, invoked: Invocation, *, note: bool = False, quiet: bool = False) -> None:
    """`git.sync: auto` in .cmem/config.yaml: sync before and after a step (a pass, an archive
    apply, an undo; `cmem note` too with git.sync_note). Offline or failing, it says so once per
    invocation (its memo), on stderr, and the step carries on locally."""
    config = target.config
    if config.sync_mode != "auto" or (note and not config.sync_note):
        return  # the usual case: cmem.sync.remote is not even imported
    from cmem.sync.remote import sync_if_auto

    message = sync_if_auto(target, invoked.sync_memo, note=note)
    if message and not quiet:
        warn(message)


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


def report_interrupt(invoked: Invocation, exc: Optional[BaseException]) -> None:
    """Ctrl-C: say what was and was not done (a pass attaches its own account), once per
    invocation (a pass reports it, then the error funnel sees the same interrupt)."""
    if invoked.interrupt_reported:
        return
    invoked.interrupt_reported = True
    summary = (
        getattr(exc, "cmem_summary", None)
        or "  nothing more was done; if a step was cut short, the next cmem command finishes or undoes it"
    )
    typer.echo(f"interrupted\n{summary}", err=True)
