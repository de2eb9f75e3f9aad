"""The pass: `converge` (by hand, unattended or in the background), `apply` (review mode's
proposal) and `demo`. The pass itself is `cmem.converge.pipeline.run_pass`."""

from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cmem import pass_command
from cmem.commands.common import (
    confirm,
    open_target,
    print_json,
    reading_target,
    show,
    show_stored,
)
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

if TYPE_CHECKING:
    from cmem.converge.pass_values import EngineName

ApplyYes = Annotated[bool, yes_option("Apply without asking (needed without a terminal).")]


# The converge options, declared once here so the command's signature reads in one screen;
# their order in the signature is the order `--help` lists them.
EngineOption = Annotated[
    str | None,
    typer.Option(
        "--engine",
        metavar=f"[{'|'.join(ENGINE_NAMES)}]",
        autocompletion=choices(*ENGINE_NAMES),
        help="builtin (offline, extractive) or llm; default: llm when a model command is configured.",
    ),
]
LlmOption = Annotated[
    str | None,
    typer.Option(
        "--llm",
        help="Model command reading the prompt on stdin, e.g. 'llm -n -m gpt-4o-mini' ({prompt_file} for a file path).",
    ),
]
DryRunOption = Annotated[
    bool,
    typer.Option("--dry-run", help="Run up to validation and print the diff; write nothing."),
]
EmitPromptOption = Annotated[
    bool, typer.Option("--emit-prompt", help="Print the assembled prompt and stop.")
]
AsModelOption = Annotated[
    bool,
    typer.Option(
        "--as-model",
        help="For an agent that is itself the model: print the pass's prompt, the file to write the <convergence> reply to, and the command that applies it.",
    ),
]
ResponseOption = Annotated[
    Path | None,
    typer.Option(
        "--response",
        help="Skip the engine and apply this response file ('-': read it from stdin); an agent that is itself the model, after --as-model.",
    ),
]
ReplayOption = Annotated[
    str | None,
    typer.Option(
        "--replay",
        help="Re-validate and apply the last response of a recorded run (a pass id, or 'last').",
    ),
]
OnlyOption = Annotated[
    list[str] | None, typer.Option("--only", help="Converge only this note (repeatable).")
]
BudgetOption = Annotated[
    int | None,
    typer.Option(
        "--budget",
        callback=within("converge --budget"),
        help="Prompt budget in tokens (default: budget_tokens).",
    ),
]
ProposeOption = Annotated[
    bool,
    typer.Option(
        "--propose",
        help="Review mode: validate and save a proposal; review and apply it with `cmem apply` (or discard it with `cmem apply --drop`).",
    ),
]
BacklogOption = Annotated[
    bool,
    typer.Option(
        "--backlog",
        help="Converge the backlog with a model: the notes an adopted folder held, oldest first, in batches of the budget — the plan (notes, tokens, batches, cost) first, then asks; each batch a commit, a stopped run continues where it stopped. Never done by --if-due.",
    ),
]
PriceOption = Annotated[
    str | None,
    typer.Option(
        "--price",
        metavar="IN[/OUT]",
        help="With --backlog: the model's price in dollars per million tokens sent (and received), for the cost estimate (default: llm.price).",
    ),
]
BacklogYes = Annotated[
    bool, yes_option("With --backlog: start without asking (needed without a terminal).")
]
DiffOption = Annotated[
    bool, typer.Option("--diff", help="Print the diff of the memory files after the pass.")
]
KeepRawPromptOption = Annotated[
    bool,
    typer.Option(
        "--keep-raw-prompt",
        help="Keep the run record unredacted (credentials in plain text, for debugging the redaction); the model still gets the redacted prompt.",
    ),
]
QuietOption = Annotated[
    bool,
    typer.Option("--quiet", "-q", help="No progress and no report (errors still go to stderr)."),
]
IfDueOption = Annotated[
    bool,
    typer.Option(
        "--if-due",
        help="Unattended: run only when due (something pending, last pass older than min_interval_minutes); quiet when a pass is running; stops after 3 failures in a row.",
    ),
]
ScheduledOption = Annotated[
    bool,
    typer.Option(
        "--scheduled",
        help="With --if-due, for cron and systemd timers: due after schedule_hours instead.",
    ),
]
BackgroundOption = Annotated[
    bool,
    typer.Option(
        "--background",
        help="Detach (new session, survives the terminal closing), log the outcome in the machine folder's cmem.log, return at once.",
    ),
]
DetachedOption = Annotated[
    bool,
    typer.Option(
        "--detached",
        hidden=True,
        help="Internal: this is the detached process --background started.",
    ),
]


@dataclass(frozen=True)
class _Modes:
    """The flags that pick how a pass runs (by hand, as the model, backlog, unattended) and
    what it prints; carried together so the checks and the dispatch read as one each."""

    dry_run: bool
    emit_prompt: bool
    as_model: bool
    response: Path | None
    replay: str | None
    backlog: bool
    price: str | None
    yes: bool
    show_diff: bool
    quiet: bool
    if_due: bool
    scheduled: bool
    background: bool
    detached: bool
    as_json: bool

    @classmethod
    def of(cls, params: dict) -> "_Modes":
        """The modes from the command's parameters, by field name."""
        return cls(**{field.name: params[field.name] for field in fields(cls)})

    @property
    def unattended(self) -> bool:
        return self.background or self.if_due or self.detached


def converge(
    ctx: typer.Context,
    vault: VaultOption = None,
    engine: EngineOption = None,
    llm: LlmOption = None,
    dry_run: DryRunOption = False,
    emit_prompt: EmitPromptOption = False,
    as_model: AsModelOption = False,
    response: ResponseOption = None,
    replay: ReplayOption = None,
    only: OnlyOption = None,
    budget: BudgetOption = None,
    propose: ProposeOption = False,
    allow_shrink: ShrinkOption = False,
    backlog: BacklogOption = False,
    price: PriceOption = None,
    yes: BacklogYes = False,
    show_diff: DiffOption = False,
    keep_raw_prompt: KeepRawPromptOption = False,
    quiet: QuietOption = False,
    if_due: IfDueOption = False,
    scheduled: ScheduledOption = False,
    background: BackgroundOption = False,
    detached: DetachedOption = False,
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
    plain_emit = emit_prompt and _given_alone(ctx, "emit_prompt")  # its prompt is stored
    if plain_emit and _shown_stored_prompt(vault):
        return
    modes = _Modes.of(locals())  # the parameters as typer converted them (ctx.params: unconverted)
    invoked = invocation(ctx)
    engine_name = _check_engine_options(engine, llm, modes)
    if modes.background and not modes.detached:  # every shell exit: the spawn alone, no pass
        _check_mode_options(modes)
        _check_unattended(modes)
        args = pass_command.child_args(
            if_due=if_due,
            scheduled=scheduled,
            engine=engine_name,
            llm=llm,
            budget=budget,
            only=only,
            propose=propose,
            allow_shrink=allow_shrink,
        )
        raise typer.Exit(_spawn_background(vault, args, modes))
    # a pass that writes nothing reads through a `.cmem/` linked out of the vault, and says so
    target = reading_target(vault) if dry_run or emit_prompt else open_target(vault)
    options = _pass_options(
        target,
        modes,
        engine=engine_name,
        llm=llm,
        only=only,
        budget=budget,
        propose=propose,
        allow_shrink=allow_shrink,
        keep_raw_prompt=keep_raw_prompt,
    )
    _check_mode_options(modes)
    code = _run_in_mode(target, options, invoked, modes, store_prompt=plain_emit)
    if code:
        raise typer.Exit(code)


def _shown_stored_prompt(vault) -> bool:
    """The plain `--emit-prompt`'s stored prompt printed, if one still answers for the vault."""
    from cmem.reading.stored_prompt import stored_prompt

    stored = stored_prompt(vault)
    if stored is not None:
        show_stored(stored)
    return stored is not None


def _spawn_background(vault, args: list[str], modes: _Modes) -> int:
    """`--background`: the detached child started with the pass's options, and said."""
    return pass_command.start_in_background(
        open_target(vault), args, typer.echo, quiet=modes.quiet, as_json=modes.as_json
    )


def _given_alone(ctx: typer.Context, name: str) -> bool:
    """Whether `name` is the one option on this command line besides `--vault`."""
    return all(
        param == name
        or param == "vault"
        or getattr(ctx.get_parameter_source(param), "name", None) == "DEFAULT"
        for param in ctx.params
    )


def _check_engine_options(
    engine: str | None, llm: str | None, modes: _Modes
) -> "EngineName | None":
    """The engine's name, after the usage errors a command line can make before any vault opens."""
    engine_name = engine_named(engine) if engine is not None else None
    if engine is not None and engine_name is None:
        raise typer.BadParameter(f"must be {' or '.join(ENGINE_NAMES)}", param_hint="--engine")
    if llm is not None and not llm.strip():  # `--llm "$LLM"` with the variable unset
        raise typer.BadParameter(
            "is empty (an unset variable?); give the model command, or leave --llm out",
            param_hint="--llm",
        )
    if modes.as_model and (
        modes.dry_run
        or modes.emit_prompt
        or modes.response
        or modes.replay
        or engine
        or llm
        or modes.if_due
        or modes.background
    ):
        raise typer.BadParameter(
            "--as-model hands the pass to you: no --dry-run, --emit-prompt, --response, --replay, --engine, --llm, --if-due or --background",
            param_hint="--as-model",
        )
    return engine_name


def _pass_options(
    target,
    modes: _Modes,
    *,
    engine: "EngineName | None",
    llm: str | None,
    only: list[str] | None,
    budget: int | None,
    propose: bool,
    allow_shrink: bool,
    keep_raw_prompt: bool,
):
    """The pass's options, with the reply to apply when one is given instead of an engine."""
    from cmem.converge.pass_values import PassOptions

    response_text, only = _reply_to_apply(target, modes, only)
    return PassOptions(
        engine=engine,
        llm=llm,
        dry_run=modes.dry_run,
        emit_prompt=modes.emit_prompt,
        response_text=response_text,
        only=only,
        budget=budget,
        propose=propose,
        allow_shrink=allow_shrink,
        keep_raw_prompt=keep_raw_prompt,
        backlog=modes.backlog,
    )


def _reply_to_apply(
    target, modes: _Modes, only: list[str] | None
) -> tuple[str | None, list[str] | None]:
    """The reply to apply instead of running an engine (`--response`, `--replay`), and the notes
    it judges when `--only` does not name them."""
    response_text = None
    if modes.response is not None:
        response_text = _read_response(modes.response)
        if only is None:  # the reply to a handed-over prompt judges the notes that prompt held
            from cmem.converge.model.agent_pass import handed_over_notes

            only = handed_over_notes(target, modes.response) if str(modes.response) != "-" else None
    if modes.replay is not None:
        from cmem.steps.run_records import find_run

        record = find_run(target, modes.replay)
        responses = record.responses()
        if not responses:
            raise CmemError(f"the run record {record.folder} holds no response to replay.")
        response_text = responses[-1].read_text("utf-8", errors="replace")
        only = only or record.read_json("run.json").get("notes")
    return response_text, only


def _check_mode_options(modes: _Modes) -> None:
    """Usage errors of the flags that go only with --if-due or --backlog."""
    if modes.scheduled and not modes.if_due:
        raise typer.BadParameter("--scheduled goes with --if-due", param_hint="--scheduled")
    if modes.backlog and modes.unattended:
        raise typer.BadParameter(
            "the backlog is converged only when you ask: not with --if-due or --background",
            param_hint="--backlog",
        )
    if modes.price is not None and not modes.backlog:
        raise typer.BadParameter("goes with --backlog", param_hint="--price")


def _run_in_mode(target, options, invoked, modes: _Modes, *, store_prompt: bool) -> int:
    """Run the pass the way the flags ask: the backlog, unattended, handed to the agent, or by hand."""
    if modes.backlog and not (
        modes.dry_run or modes.emit_prompt or options.response_text is not None or modes.unattended
    ):
        return pass_command.converge_backlog(
            target,
            options,
            invoked,
            typer.echo,
            price=modes.price,
            confirm=lambda question: confirm(modes.yes, question),
            quiet=modes.quiet,
            as_json=modes.as_json,
        )
    if modes.unattended:
        return _run_unattended(target, options, invoked, modes)
    if modes.as_model:
        return _hand_over(target, options, modes.as_json)
    code = pass_command.converge_by_hand(
        target,
        options,
        invoked,
        typer.echo,
        store_prompt=store_prompt,
        quiet=modes.quiet,
        as_json=modes.as_json,
        show_diff=modes.show_diff,
    )
    if modes.response is not None:
        _after_response(target, modes.response, code, modes.as_json)
    return code


def _run_unattended(target, options, invoked, modes: _Modes) -> int:
    """`--if-due` and the detached process `--background` started."""
    _check_unattended(modes)
    return pass_command.converge_unattended(
        target,
        options,
        invoked,
        typer.echo,
        if_due=modes.if_due,
        scheduled=modes.scheduled,
        detached=modes.detached,
        quiet=modes.quiet,
        as_json=modes.as_json,
    )


def _check_unattended(modes: _Modes) -> None:
    """`--if-due` and `--background` run real passes, so there is nothing to preview."""
    if (modes.background or modes.if_due) and (
        modes.dry_run
        or modes.emit_prompt
        or modes.response is not None
        or modes.replay is not None
        or modes.show_diff
    ):
        raise typer.BadParameter(
            "--if-due and --background run real passes: no --dry-run, --emit-prompt, --response, --replay or --diff",
            param_hint="--if-due/--background",
        )


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
    from cmem.converge.model.agent_pass import Handover, hand_over
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
    from cmem.converge.model.agent_pass import spend_handover

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
