"""The archive gate (`archive list`, `archive apply`) and `undo`: the steps after a pass."""

from typing import Annotated

import typer

from cmem.commands.common import (
    auto_sync,
    confirm,
    open_target,
    print_json,
    reading_target,
    recover_first,
)
from cmem.commands.options import JsonOption, VaultOption, invocation, yes_option

archive_app = typer.Typer(
    help="The archive gate: notes a pass converged wait in archive/ARCHIVE-CHECKLIST.md until you tick them.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

MoveYes = Annotated[bool, yes_option("Move without asking (needed without a terminal).")]
UndoYes = Annotated[bool, yes_option("Undo without asking (needed without a terminal).")]


@archive_app.command("list")
def archive_list(vault: VaultOption = None, as_json: JsonOption = False) -> None:
    """Every staged line: note, target, ticked or not, and its state (ready, changed, waiting, uncited, missing, unparsed)."""
    from cmem.archive.gate import list_staged

    target = reading_target(vault)
    staged = list_staged(target)
    if as_json:
        print_json({"staged": [line.to_json() for line in staged]})
    else:
        from cmem.render.history import render_staged

        typer.echo(render_staged(staged, target.checklist_rel))


@archive_app.command("apply")
def archive_apply(
    ctx: typer.Context,
    all_lines: Annotated[
        bool, typer.Option("--all", help="Take every staged line, ticked or not.")
    ] = False,
    yes: MoveYes = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show the moves; change nothing.")
    ] = False,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Move the ticked notes into the archive with git, remove their lines, and commit.

    Notes edited since they were staged are skipped (the next pass scans them again); an existing
    archive file is never overwritten; nothing is ever deleted.
    """
    from cmem.archive.gate import ArchiveResult, apply_archive, plan_archive
    from cmem.render.history import render_archive_plan, render_archive_result

    target = open_target(vault)
    if not dry_run:
        # plan from a whole vault, not a half-done step
        recover_first(target, "archive apply", as_json)
        auto_sync(target, invocation(ctx))
    plan = plan_archive(target, all_lines=all_lines)
    if dry_run or not (plan.moves or plan.pending_again):
        result = ArchiveResult("dry-run" if dry_run and plan.moves else "nothing", plan)
    else:
        if not as_json:
            typer.echo(render_archive_plan(plan))
        if plan.moves:  # a step that only makes uncited notes pending again moves nothing
            confirm(
                yes,
                f"move {len(plan.moves)} note{'s' if len(plan.moves) != 1 else ''} into the archive?",
            )
        result = apply_archive(target, plan)
        auto_sync(target, invocation(ctx))
    if as_json:
        print_json(result.to_json())
    else:
        typer.echo(render_archive_result(result))


def undo(
    ctx: typer.Context,
    yes: UndoYes = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Undo even though later commits changed the same files (their changes are kept).",
        ),
    ] = False,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Revert the last cmem step (a pass or an archive apply) with a new commit; run again to step further back.

    A pass's notes become pending again and leave the checklist; archived notes move back. Refused,
    with the reason, when later commits changed the same files (unless --force). Only what the
    step wrote is taken back: edits of yours that `git commit --amend` folded into its commit stay,
    and a pass whose message the amend replaced is still found.
    """
    from cmem.archive.undo import UndoResult, apply_undo, check_undo, plan_undo
    from cmem.render.history import render_undo_plan, render_undo_result

    target = open_target(vault)
    # an interrupted step is finished before undo looks for the last one
    recover_first(target, "undo", as_json)
    auto_sync(target, invocation(ctx))
    plan = plan_undo(target, force=force)
    if plan.refused:
        if not as_json:
            typer.echo(render_undo_plan(plan), err=True)
        check_undo(plan)  # raises: one sentence with the reasons, exit 1
    if plan.target is None:
        if as_json:
            print_json(UndoResult("nothing", plan).to_json())
        else:
            typer.echo(render_undo_plan(plan))
        return
    if not as_json:
        typer.echo(render_undo_plan(plan))
    confirm(yes, "undo it?")
    result = apply_undo(target, plan)
    auto_sync(target, invocation(ctx))
    if as_json:
        print_json(result.to_json())
    else:
        typer.echo(render_undo_result(result))
