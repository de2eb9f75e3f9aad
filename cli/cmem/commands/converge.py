"""The pass: `converge` (by hand, unattended or in the background), `apply` (review mode's
proposal) and `demo`. The pass itself is `cmem.converge.pipeline.run_pass`."""

from pathlib import Path
from typing import Annotated

import typer

from cmem import pass_command
from cmem.commands.common import confirm, open_target, print_json, reading_target, show
from cmem.commands.options import (
    JsonOption,
    ShrinkOption,
    VaultOption,
    choices,
    invocation,
    within,
    yes_option,
)
from cmem.converge.engines import ENGINE_NAMES, engine_named
from cmem.errors import CmemError

ApplyYes = Annotated[bool, yes_option("Apply without asking (needed without a terminal).")]


def converge(
    ctx: typer.Context,
    vault: VaultOption = None,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            metavar=f"[{'|'.join(ENGINE_NAMES)}]",
            autocompletion=choices(*ENGINE_NAMES),
            help="builtin (offline, extractive) or llm; default: llm when a model command is configured.",
        ),
    ] = None,
    llm: Annotated[
        str | None,
        typer.Option(
            "--llm",
            help="Model command reading the prompt on stdin, e.g. 'llm -n -m gpt-4o-mini' ({prompt_file} for a file path).",
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Run up to validation and print the diff; write nothing."),
    ] = False,
    emit_prompt: Annotated[
        bool, typer.Option("--emit-prompt", help="Print the assembled prompt and stop.")
    ] = False,
    as_model: Annotated[
        bool,
        typer.Option(
            "--as-model",
            help="For an agent that is itself the model: print the pass's prompt, the file to write the <convergence> reply to, and the command that applies it.",
        ),
    ] = False,
    response: Annotated[
        Path | None,
        typer.Option(
            "--response",
            help="Skip the engine and apply this response file ('-': read it from stdin); an agent that is itself the model, after --as-model.",
        ),
    ] = None,
    replay: Annotated[
        str | None,
        typer.Option(
            "--replay",
            help="Re-validate and apply the last response of a recorded run (a pass id, or 'last').",
        ),
    ] = None,
    only: Annotated[
        list[str] | None, typer.Option("--only", help="Converge only this note (repeatable).")
    ] = None,
    budget: Annotated[
        int | None,
        typer.Option(
            "--budget",
            callback=within("converge --budget"),
            help="Prompt budget in tokens (default: budget_tokens).",
        ),
    ] = None,
    propose: Annotated[
        bool,
        typer.Option(
            "--propose",
            help="Review mode: validate and save a proposal; review and apply it with `cmem apply` (or discard it with `cmem apply --drop`).",
        ),
    ] = False,
    allow_shrink: ShrinkOption = False,
    backlog: Annotated[
        bool,
        typer.Option(
            "--backlog",
            help="Converge the backlog with a model: the notes an adopted folder held, oldest first, in batches of the budget — the plan (notes, tokens, batches, cost) first, then asks; each batch a commit, a stopped run continues where it stopped. Never done by --if-due.",
        ),
    ] = False,
    price: Annotated[
        str | None,
        typer.Option(
            "--price",
            metavar="IN[/OUT]",
            help="With --backlog: the model's price in dollars per million tokens sent (and received), for the cost estimate (default: llm.price).",
        ),
    ] = None,
    yes: Annotated[
        bool, yes_option("With --backlog: start without asking (needed without a terminal).")
    ] = False,
    show_diff: Annotated[
        bool, typer.Option("--diff", help="Print the diff of the memory files after the pass.")
    ] = False,
    keep_raw_prompt: Annotated[
        bool,
        typer.Option(
            "--keep-raw-prompt",
            help="Keep the run record unredacted (credentials in plain text, for debugging the redaction); the model still gets the redacted prompt.",
        ),
    ] = False,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet", "-q", help="No progress and no report (errors still go to stderr)."
        ),
    ] = False,
    if_due: Annotated[
        bool,
        typer.Option(
            "--if-due",
            help="Unattended: run only when due (something pending, last pass older than min_interval_minutes); quiet when a pass is running; stops after 3 failures in a row.",
        ),
    ] = False,
    scheduled: Annotated[
        bool,
        typer.Option(
            "--scheduled",
            help="With --if-due, for cron and systemd timers: due after schedule_hours instead.",
        ),
    ] = False,
    background: Annotated[
        bool,
        typer.Option(
            "--background",
            help="Detach (new session, survives the terminal closing), log the outcome in the machine folder's cmem.log, return at once.",
        ),
    ] = False,
    detached: Annotated[
        bool,
        typer.Option(
            "--detached",
            hidden=True,
            help="Internal: this is the detached process --background started.",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Merge what the new and changed notes say into the memory files, then commit.

    A note is pending when it is new or changed since the pass that converged or deferred it,
    whatever its words; cue words (corrections first) only rank it. The model judges every line
    it has not judged yet; the builtin engine reads cue lines only and leaves the rest waiting
    for a model. Selects within the budget, validates the response (sources, traces, nothing
    silently dropped), applies it all-or-nothing, stages the notes in the archive checklist and
    commits. A deferred note returns when it changes, when its subject recurs, or when you
    confirm it: `converge: true` or #converge in the note, or `cmem converge --only NOTE`.
    Nothing pending: exit 0.

    Exit codes: 0 applied, proposed or nothing to do; 1 failed (nothing written); 2 a usage
    error; 75 another pass holds the vault (nothing done: try again) — with --if-due or
    --background 0, silently.
    """
    from cmem.converge.pipeline import PassOptions

    invoked = invocation(ctx)
    engine_name = engine_named(engine) if engine is not None else None
    if engine is not None and engine_name is None:
        raise typer.BadParameter(f"must be {' or '.join(ENGINE_NAMES)}", param_hint="--engine")
    if llm is not None and not llm.strip():  # `--llm "$LLM"` with the variable unset
        raise typer.BadParameter(
            "is empty (an unset variable?); give the model command, or leave --llm out",
            param_hint="--llm",
        )
    if as_model and (
        dry_run or emit_prompt or response or replay or engine or llm or if_due or background
    ):
        raise typer.BadParameter(
            "--as-model hands the pass to you: no --dry-run, --emit-prompt, --response, --replay, --engine, --llm, --if-due or --background",
            param_hint="--as-model",
        )
    # a pass that writes nothing reads through a `.cmem/` linked out of the vault, and says so
    target = reading_target(vault) if dry_run or emit_prompt else open_target(vault)
    response_text = None
    if response is not None:
        response_text = _read_response(response)
        if only is None:  # the reply to a handed-over prompt judges the notes that prompt held
            from cmem.converge.agent_pass import handed_over_notes

            only = handed_over_notes(target, response) if str(response) != "-" else None
    if replay is not None:
        from cmem.steps.run_records import find_run

        record = find_run(target, replay)
        responses = record.responses()
        if not responses:
            raise CmemError(f"the run record {record.folder} holds no response to replay.")
        response_text = responses[-1].read_text("utf-8", errors="replace")
        only = only or record.read_json("run.json").get("notes")
    options = PassOptions(
        engine=engine_name,
        llm=llm,
        dry_run=dry_run,
        emit_prompt=emit_prompt,
        response_text=response_text,
        only=only,
        budget=budget,
        propose=propose,
        allow_shrink=allow_shrink,
        keep_raw_prompt=keep_raw_prompt,
        backlog=backlog,
    )
    if scheduled and not if_due:
        raise typer.BadParameter("--scheduled goes with --if-due", param_hint="--scheduled")
    if backlog and (background or if_due or detached):
        raise typer.BadParameter(
            "the backlog is converged only when you ask: not with --if-due or --background",
            param_hint="--backlog",
        )
    if price is not None and not backlog:
        raise typer.BadParameter("goes with --backlog", param_hint="--price")
    if backlog and not (
        dry_run or emit_prompt or response_text is not None or background or if_due or detached
    ):
        code = pass_command.converge_backlog(
            target,
            options,
            invoked,
            typer.echo,
            price=price,
            confirm=lambda question: confirm(yes, question),
            quiet=quiet,
            as_json=as_json,
        )
    elif background or if_due or detached:
        if (background or if_due) and (
            dry_run or emit_prompt or response is not None or replay is not None or show_diff
        ):
            raise typer.BadParameter(
                "--if-due and --background run real passes: no --dry-run, --emit-prompt, --response, --replay or --diff",
                param_hint="--if-due/--background",
            )
        code = pass_command.converge_unattended(
            target,
            options,
            invoked,
            typer.echo,
            if_due=if_due,
            scheduled=scheduled,
            background=background,
            detached=detached,
            quiet=quiet,
            as_json=as_json,
        )
    elif as_model:
        code = _hand_over(target, options, as_json)
    else:
        code = pass_command.converge_by_hand(
            target,
            options,
            invoked,
            typer.echo,
            quiet=quiet,
            as_json=as_json,
            show_diff=show_diff,
        )
        if response is not None:
            _after_response(target, response, code, as_json)
    if code:
        raise typer.Exit(code)


def _read_response(response: Path) -> str:
    if str(response) == "-":
        import sys

        return sys.stdin.read()
    try:
        return response.read_text("utf-8", errors="replace")
    except OSError as exc:
        raise CmemError(f"cannot read the response file {response}: {exc.strerror}.") from None


def _hand_over(target, options, as_json: bool) -> int:
    """`--as-model`: the prompt and what to do with it, or why there is nothing to converge."""
    from cmem.converge.agent_pass import Handover, hand_over
    from cmem.hook_command import cmem_command
    from cmem.render.reports import render_handover, render_pass

    handover = hand_over(target, options, cmem_command(str(target.root.resolve())), Path.cwd())
    if as_json:
        print_json(handover.to_json())
    elif isinstance(handover, Handover):
        typer.echo(render_handover(handover), nl=False)
    else:
        typer.echo(render_pass(handover))
    return 0


def _after_response(target, response: Path, code: int, as_json: bool) -> None:
    """An applied reply spends its handover; a rejected one says how to try again."""
    from cmem.converge.agent_pass import spend_handover

    if code == 0:
        spend_handover(target)
    elif code == 1 and not as_json and str(response) != "-":
        typer.echo(
            f"Nothing was written. Mend the reply in {response} (each message names the file, "
            "the line and the rule number of the prompt's rulebook), then run the same command again.",
            err=True,
        )


def apply_proposal(
    drop: Annotated[
        bool, typer.Option("--drop", help="Discard the waiting proposal instead.")
    ] = False,
    yes: ApplyYes = False,
    allow_shrink: ShrinkOption = False,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Review mode: show the waiting proposal's diff and apply it after confirmation (or --drop it)."""
    from dataclasses import replace

    from cmem.converge.pipeline import PassOptions, run_pass
    from cmem.converge.proposal import drop_proposal, load_proposal
    from cmem.render.reports import colour_diff, render_pass
    from cmem.steps.run_records import find_run

    target = open_target(vault)
    proposal = load_proposal(target)
    if proposal is None:
        raise CmemError(
            "no proposal is waiting; review mode passes (`review: true` or `converge --propose`) leave one."
        )
    if drop:
        drop_proposal(target)
        typer.echo(f"dropped the proposal of pass {proposal.pass_id}; its notes stay pending")
        return
    responses = find_run(target, proposal.run_dir).responses()
    if not responses:
        raise CmemError(
            f"the proposal's run record {proposal.run_dir} holds no response; drop it with `cmem apply --drop`."
        )
    response_text = responses[-1].read_text("utf-8", errors="replace")
    options = PassOptions(
        response_text=response_text,
        only=proposal.notes,
        apply_proposal=True,
        allow_shrink=allow_shrink,
    )
    preview = run_pass(target, replace(options, dry_run=True))
    if preview.status == "failed":
        show(render_pass(preview), err=True)
        raise typer.Exit(1)
    if not as_json:
        show(colour_diff(preview.diff) or "the proposal changes no memory file")
    confirm(yes, f"apply pass {proposal.pass_id} ({len(preview.changed)} files)?")
    result = run_pass(target, options)
    if result.status == "applied":
        drop_proposal(target)
    if as_json:
        print_json(result.to_json())
    else:
        show(render_pass(result))
    if result.status == "failed":
        raise typer.Exit(1)


def demo(
    folder: Annotated[
        Path | None,
        typer.Argument(help="Where to put the demo vault (default: a new temporary folder)."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Copy the sample vault, make it a git repository, and run a real pass with the builtin engine.

    Shows the signals found, the pass, and the diff of the memory files. Your own notes are not touched.
    """
    from cmem.converge.demo import run_demo
    from cmem.render.reports import colour_diff, render_pass, render_scan

    demo_run = run_demo(folder)
    if as_json:
        print_json(
            {
                "vault": str(demo_run.root),
                "scan": demo_run.scan.to_json(),
                "pass": demo_run.result.to_json(),
            }
        )
        return
    typer.echo(f"demo vault: {demo_run.root}\n")
    typer.echo(render_scan(demo_run.scan))
    typer.echo("")
    typer.echo(render_pass(demo_run.result))
    if demo_run.result.diff:
        typer.echo("")
        typer.echo(colour_diff(demo_run.result.diff))
    from cmem.converge.demo import try_line

    typer.echo(f"\nTry: {try_line(demo_run.root)}")
