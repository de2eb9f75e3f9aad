"""`cmem sync`. The installed entry point usually runs it without typer (`cmem.fast.run_sync`,
which prints what this prints); this is the full CLI's copy, reached on anything fast.py hands
over."""

import typer

from cmem.commands.common import open_target, print_json, recover_first, show
from cmem.commands.options import JsonOption, VaultOption


def sync(vault: VaultOption = None, as_json: JsonOption = False) -> None:
    """Fetch the vault's remote, merge what other machines committed, and push — never forced.

    The remote is git.remote in .cmem/config.yaml, else the branch's upstream. Memory files merge
    statement by statement (the same statement rewritten on both machines becomes a conflict
    statement for the next pass), state.json as a union, the archive checklist per note; any other
    overlap stops with the file's name, and nothing is merged. The merge is one journaled step.
    Exit 0: synced or up to date; 3: the remote cannot be reached (nothing changed, carry on
    locally); 1: an error, such as a conflict the merge cannot settle.
    """
    from cmem.render.history import render_sync
    from cmem.sync.remote import OFFLINE_EXIT_CODE, sync_vault

    target = open_target(vault)
    recover_first(target, "sync", as_json)
    result = sync_vault(target)
    if as_json:
        print_json(result.to_json())
    else:
        show(render_sync(result), err=result.status == "offline")
    if result.status == "offline":
        raise typer.Exit(OFFLINE_EXIT_CODE)
