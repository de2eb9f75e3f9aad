"""`cmem sync`: told in one `git fetch` when nothing changed since a sync that found nothing to do
(`cmem/idle_sync.py`), else the full sync (`cmem.sync.remote.sync_vault`)."""

import typer

from cmem.commands.common import open_target, recover_first
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
    from cmem import idle_sync

    shown_idle, fetched = idle_sync.answer(vault, as_json)
    if shown_idle is not None:
        typer.echo(shown_idle)
        return
    import json

    from cmem.render.history import render_sync
    from cmem.sync.remote import OFFLINE_EXIT_CODE, fetch_argv, sync_vault
    from cmem.text.secrets import shown, shown_data

    target = open_target(vault)
    recover_first(target, "sync", as_json)
    # the key taken before sync looks for edits to commit: an edit made meanwhile misses it
    pending = idle_sync.begin(target)
    result = sync_vault(target, fetched=fetched)  # a fetch the idle answer ran is not run again
    printed = {  # a conflict statement is memory text: shown as every surface shows it
        "text": shown(render_sync(result)),
        "json": json.dumps(shown_data(result.to_json()), ensure_ascii=False, indent=2),
    }
    typer.echo(
        printed["json" if as_json else "text"], err=result.status == "offline" and not as_json
    )
    if result.status == "nothing" and result.target is not None:  # the next sync may tell it alone
        idle_sync.store(pending, result, fetch_argv(target, result.target), printed)
    if result.status == "offline":
        raise typer.Exit(OFFLINE_EXIT_CODE)
