"""What `cmem converge` does around the pass itself (`converge/pipeline.py: run_pass`): a person's
pass resets the unattended failure count, `git.sync: auto` syncs before and after it, a spinner
shows progress, Ctrl-C says what was and was not done, and the report, the JSON object or the
prompt is printed; `--if-due` and `--background` go through `triggers/if_due.py` instead.

Used by the converge command (`commands/converge.py`) and, for `auto_sync` and
`report_interrupt`, by every writing command (`commands/common.py`); each hands in how to print
(`echo`: `typer.echo`), so this module imports no typer and its functions run as well under a
test's own printer.
"""

from __future__ import annotations

import sys

from cmem.invocation import Invocation


def print_json(echo, data) -> None:
    """Every command's `--json`: the object with its credentials redacted (`text/secrets.py:
    shown_data`), as the MCP tools return it."""
    import json

    from cmem.text.secrets import shown_data

    echo(json.dumps(shown_data(data), ensure_ascii=False, indent=2))


def warn(echo, message: str, redacted: bool = False) -> None:
    """`message` on stderr as a warning, its credentials redacted; `redacted`: it is `shown`
    text already (the rules cost a light path their import and compilation)."""
    from cmem.render.reports import paint

    if not redacted:
        from cmem.text.secrets import shown

        message = shown(message)
    echo(paint("warning: ", "yellow", stream=sys.stderr) + message, err=True)


def auto_sync(
    target, invoked: Invocation, echo, *, note: bool = False, quiet: bool = False
) -> None:
    """`git.sync: auto` in .cmem/config.yaml: sync before and after a step (a pass, an archive
    apply, an undo; `cmem note` too with git.sync_note). Offline or failing, it says so once per
    invocation (its memo), on stderr, and the step carries on locally."""
    config = target.config
    if config.sync_mode != "auto" or (note and not config.sync_note):
        return  # the usual case: cmem.sync.remote is not even imported
    from cmem.sync.remote import sync_if_auto

    message = sync_if_auto(target, invoked.sync_memo, note=note)
    if message and not quiet:
        warn(echo, message)


def report_interrupt(invoked: Invocation, exc: BaseException | None, echo) -> None:
    """Ctrl-C: say what was and was not done (a pass attaches its own account), once per
    invocation (a pass reports it, then the error funnel sees the same interrupt)."""
    if invoked.interrupt_reported:
        return
    invoked.interrupt_reported = True
    from cmem.errors import stop_summary

    summary = (
        stop_summary(exc)
        or "  nothing more was done; if a step was cut short, the next cmem command finishes or undoes it"
    )
    echo(f"interrupted\n{summary}", err=True)


def converge_by_hand(
    target,
    options,
    invoked: Invocation,
    echo,
    *,
    store_prompt: bool,
    quiet: bool,
    as_json: bool,
    show_diff: bool,
) -> int:
    """A pass a person runs (`options`: the pipeline's PassOptions); returns the exit code.
    `store_prompt`: a plain `--emit-prompt`, whose prompt is stored for the next such request
    (`reading/stored_prompt.py`)."""
    from cmem.converge.pipeline import run_pass
    from cmem.errors import Busy
    from cmem.render.reports import Spinner, render_pass
    from cmem.text.secrets import shown

    writes = not (options.dry_run or options.emit_prompt)
    if writes:
        from cmem.triggers.if_due import reset_failures

        reset_failures(target)  # a person is running a pass: unattended runs may try again
        auto_sync(target, invoked, echo, quiet=quiet)
    kept = None
    if store_prompt:
        from cmem.reading import stored_prompt

        kept = stored_prompt.begin(target)
    spinner = Spinner(quiet=quiet or as_json or options.emit_prompt)
    try:
        result = run_pass(target, options, progress=spinner)
    except KeyboardInterrupt as exc:
        spinner.done()
        report_interrupt(invoked, exc, echo)
        raise
    except Busy as exc:
        # a person's pass refused: it exits non-zero (`BUSY_EXIT_CODE`), as every command
        # refused by a running step does (--quiet only keeps it from saying so)
        spinner.done()
        if as_json:
            print_json(echo, {"status": "busy", "message": str(exc)})
        elif not quiet:
            from cmem.render.reports import paint

            echo(paint("error: ", "red", stream=sys.stderr) + str(exc), err=True)
        return exc.exit_code
    finally:
        spinner.done()
    if options.emit_prompt and result.prompt is not None:
        if kept is not None:
            stored_prompt.store(kept, result.prompt)
        echo(result.prompt, nl=False)
        return 0
    if writes and result.status == "applied":
        auto_sync(target, invoked, echo, quiet=quiet)
    if as_json:
        print_json(echo, result.to_json())
    elif not quiet or result.status == "failed":
        stream_err = result.status == "failed"
        report = render_pass(result, show_diff=show_diff or options.dry_run)
        echo(shown(report), err=stream_err)
    return 1 if result.status == "failed" else 0


def converge_backlog(
    target,
    options,
    invoked: Invocation,
    echo,
    *,
    price: str | None,
    confirm,
    quiet: bool,
    as_json: bool,
) -> int:
    """`converge --backlog` with a model: the plan (notes, tokens, batches, cost), the confirm
    gate (`confirm(question)`: a terminal asks, else --yes), then a pass per batch, each said as
    it ends (`converge/backlog_run.py`). Returns the exit code."""
    from cmem.converge.backlog_run import configured_price, parse_price, plan_backlog, run_backlog
    from cmem.converge.pipeline import reads_meaning
    from cmem.errors import CmemError
    from cmem.render.reports import Spinner, render_backlog_batch, render_backlog_plan

    if not reads_meaning(target, options):
        raise CmemError(
            "the backlog converges only with a model: the builtin engine reads cue lines only — "
            "pass --llm CMD or set llm.command (`cmem status` shows the backlog's size)."
        )
    plan = plan_backlog(target, options, parse_price(price) or configured_price(target))
    if not plan.notes:
        if not as_json and not quiet:
            echo("the backlog is empty: every adopted note is converged or pending as usual")
        return converge_by_hand(
            target,
            options,
            invoked,
            echo,
            store_prompt=False,
            quiet=quiet,
            as_json=as_json,
            show_diff=False,
        )
    if not as_json and not quiet:
        echo(render_backlog_plan(plan))
    confirm(f"converge the backlog in ~{plan.batches} batches, one pass and one commit each?")
    from cmem.triggers.if_due import reset_failures

    reset_failures(target)
    auto_sync(target, invoked, echo, quiet=quiet)

    def on_batch(number: int, total: int, result, left: int) -> None:
        if not as_json and not quiet:
            spinner.done()
            echo(render_backlog_batch(number, total, result, left))

    spinner = Spinner(quiet=quiet or as_json)
    try:
        run = run_backlog(target, options, plan, on_batch, progress=spinner)
    finally:
        spinner.done()
    auto_sync(target, invoked, echo, quiet=quiet)
    if as_json:
        print_json(echo, run.to_json())
    elif not quiet:
        if run.stopped:
            echo(f"stopped: {run.stopped}", err=True)
        echo(
            f"backlog: {len(run.batches)} batch{'es' if len(run.batches) != 1 else ''} run, "
            f"{run.left} note{'s' if run.left != 1 else ''} left"
            + (" — `cmem converge --backlog` continues" if run.left else "")
        )
    return 1 if run.batches and run.batches[-1].status == "failed" else 0


def converge_unattended(
    target,
    options,
    invoked: Invocation,
    echo,
    *,
    if_due: bool,
    scheduled: bool,
    detached: bool,
    quiet: bool,
    as_json: bool,
) -> int:
    """`converge --if-due` and the detached process `--background` started: the rules live in
    cmem.triggers.if_due; this prints what they did. Returns the exit code."""
    from cmem.triggers import if_due as triggers

    if detached:
        triggers.ignore_hangup()
    from cmem.render.reports import Spinner, paint, render_pass
    from cmem.text.secrets import shown

    auto_sync(target, invoked, echo, quiet=quiet)
    spinner = Spinner(quiet=quiet or as_json)
    try:
        if if_due:
            outcome = triggers.converge_if_due(
                target,
                options,
                scheduled=scheduled,
                progress=spinner,
                trigger=("scheduled" if scheduled else "if-due")
                + ("/background" if detached else ""),
            )
        else:
            outcome = triggers.converge_logged(target, options, progress=spinner)
    finally:
        spinner.done()
    if outcome.result is not None and outcome.result.status == "applied":
        auto_sync(target, invoked, echo, quiet=quiet)
    if as_json:
        print_json(echo, outcome.to_json())
    elif outcome.status == "stopped":
        echo(paint("error: ", "red", stream=sys.stderr) + outcome.reason, err=True)
    elif outcome.result is not None and outcome.status != "not-due":
        if not quiet or outcome.status == "failed":
            echo(shown(render_pass(outcome.result)), err=outcome.status == "failed")
    elif outcome.status == "failed":
        echo(
            paint("error: ", "red", stream=sys.stderr) + shown(outcome.error or outcome.reason),
            err=True,
        )
    elif outcome.status == "busy":
        pass  # another pass holds the vault: an unattended trigger is quiet (`git gc --auto`)
    elif not quiet:
        echo(("not due: " if outcome.status == "not-due" else "") + outcome.reason, err=True)
    return 1 if outcome.status in ("failed", "stopped") else 0


def start_in_background(target, args: list[str], echo, *, quiet: bool, as_json: bool) -> int:
    """`--background`: start the detached child (`converge ARGS --detached`) and say so. The
    shell and agent hooks run this on every exit: only the vault and the spawn are imported."""
    from cmem.triggers.if_due import spawn_detached

    detached_run = spawn_detached(target, args)
    if as_json:
        print_json(
            echo, {"status": "started", "pid": detached_run.pid, "log": str(detached_run.log)}
        )
    elif not quiet:
        echo(
            f"started in the background (pid {detached_run.pid}); its outcome goes to {detached_run.log}",
            err=True,
        )
    return 0


def child_args(
    *,
    if_due: bool,
    scheduled: bool,
    engine: str | None,
    llm: str | None,
    budget: int | None,
    only: list[str] | None,
    propose: bool,
    allow_shrink: bool,
) -> list[str]:
    """The command line of the detached child `--background` starts: the same pass options."""
    args = ["--if-due"] if if_due else []
    args += ["--scheduled"] if scheduled else []
    args += ["--engine", engine] if engine else []
    args += ["--llm", llm] if llm else []
    args += ["--budget", str(budget)] if budget else []
    for name in only or []:
        args += ["--only", name]
    args += ["--propose"] if propose else []
    args += ["--allow-shrink"] if allow_shrink else []
    return args
