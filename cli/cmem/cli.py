"""The command line: a thin shell over the core. Each command parses, calls one core function,
and renders. Only this module imports typer; heavy modules are imported inside commands so
`cmem --help` and `cmem status` stay fast."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import List, Optional

import typer

from cmem import __version__
from cmem.errors import CmemError

app = typer.Typer(
    name="cmem",
    help=(
        "Convergent memory: keep an agent's and a person's long-term memory as a Markdown vault.\n\n"
        "Loose notes at the vault root (the divergent layer) are scanned for signals; `cmem converge` "
        "merge-rewrites them into the convergent layer (resident files read every session, topic files "
        "recalled by topic) with a dated trace of every change and a source for every statement. "
        "Every change is a git commit you can review and undo."
    ),
    rich_markup_mode=None,  # plain help: rich-formatted help costs ~190 ms per call
    add_completion=False,
    pretty_exceptions_enable=False,  # a bug shows a plain traceback, not a rich panel
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)

VAULT_HELP = (
    "The vault folder (default: $CMEM_VAULT, else the nearest folder above holding .cmem/)."
)
JSON_HELP = "Print one JSON object for scripts and agents."
SHRINK_HELP = (
    "Allow a pass to remove (drop or blank) more than a quarter of a file's or of the memory's "
    "statements, or to move statements out of the resident layer."
)
_global: dict = {"vault": None, "json": False}


def _choices(*values: str):
    """TAB completion for an option with fixed values (`cmem completion`)."""
    return lambda incomplete="": [v for v in values if v.startswith(incomplete or "")]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"cmem {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    vault: Optional[Path] = typer.Option(None, "--vault", help=VAULT_HELP),
    no_color: bool = typer.Option(
        False, "--no-color", help="No colours (NO_COLOR is honoured too)."
    ),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    _global["vault"] = vault
    _global["sync_memo"] = {}  # git.sync: auto says "offline" once per command
    if no_color:
        from cmem.render.reports import set_color

        set_color(False)


def _open(vault: Optional[Path]):
    from cmem.vault.layers import open_vault

    return open_vault(vault or _global["vault"])


def _print_json(data) -> None:
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2))


def _warn(message: str) -> None:
    from cmem.render.reports import paint

    typer.echo(paint("warning: ", "yellow", stream=sys.stderr) + message, err=True)


@app.command()
def init(
    path: Path = typer.Argument(
        Path("."),
        help="Folder to make a vault (created if missing); an existing folder is adopted as it is.",
    ),
    lang: Optional[str] = typer.Option(
        None,
        "--lang",
        metavar="[zh|en]",
        autocompletion=_choices("zh", "en"),
        help="Language of prompts and formats: zh or en (default: the script most existing notes use, else the locale, else en; asks on a terminal when unsure).",
    ),
    repo: Optional[str] = typer.Option(
        None,
        "--repo",
        help="For a folder inside another git repository: 'own' (a nested repository) or 'parent' (commit into it).",
    ),
    track_all: Optional[bool] = typer.Option(
        None,
        "--track-all/--no-track-all",
        help="Keep the whole vault in git (every note and attachment, .gitignore applies), remembered as git.track_all (default: no; asks on a terminal when the folder holds files of yours).",
    ),
    daily: Optional[bool] = typer.Option(
        None,
        "--daily/--no-daily",
        help="Read the daily-notes folder Obsidian's settings name (core Daily notes, Periodic Notes) as divergent notes (default: yes; asks on a terminal).",
    ),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Create a vault, or adopt an existing folder (an Obsidian vault) without touching its files.

    Writes .cmem/, creates the missing layer folders and a .gitignore, makes the folder its own git
    repository and commits cmem's files. Running it again changes nothing.
    """
    from cmem.render.reports import render_init
    from cmem.setup.init import ParentRepoChoiceNeeded, holds_user_files, init_vault
    from cmem.vault.config import load_config

    _global["json"] = as_json
    guess = None
    if lang is None:
        from cmem.setup.init import guess_language

        guess = guess_language(path) if path.is_dir() else guess_language(Path("/nonexistent"))
        lang = guess.language
        already = (path / ".cmem" / "config.yaml").exists()  # the vault's own language stays
        if not guess.sure and not already and sys.stdin.isatty() and not as_json:
            typer.echo(f"language of prompts and formats: {guess.reason}", err=True)
            lang = typer.prompt("zh or en?", default=guess.language).strip()
        if already:
            guess = None
    extra = _daily_folders(path, daily, as_json)
    if track_all is None:
        track_all = False
        new = path.is_dir() and not (path / ".cmem" / "config.yaml").exists() and repo != "parent"
        if new and sys.stdin.isatty() and not as_json and holds_user_files(path):
            track_all = typer.confirm(
                "Track the whole vault in git (every note and attachment; remembered as git.track_all)?",
                default=True,
            )
    try:
        report = init_vault(path, lang, repo, extra, track_all)
    except ParentRepoChoiceNeeded as exc:
        if repo is None and sys.stdin.isatty() and not as_json:
            typer.echo(str(exc), err=True)
            choice = typer.prompt("own or parent?", default="own")
            report = init_vault(
                path, lang, choice.strip(), extra, track_all and choice.strip() != "parent"
            )
        else:
            raise
    if guess is not None and report.created:
        report.notes.append(
            f"language: {lang} ({guess.reason}); change `language:` in .cmem/config.yaml, or init with --lang"
        )
    if as_json:
        _print_json(
            {
                "vault": str(report.root),
                "created": report.created,
                "repository": report.repository,
                "commit": report.commit,
                "changed": report.changed,
                "notes": report.notes,
                "language": load_config(report.root).language,
            }
        )
    else:
        typer.echo(render_init(report))


def _daily_folders(path: Path, daily: Optional[bool], as_json: bool) -> list[str]:
    """The daily-notes folders to read as divergent (a new vault only): offered on a terminal."""
    if daily is False or (path / ".cmem" / "config.yaml").exists() or not path.is_dir():
        return []
    from cmem.setup.init import daily_notes_entries

    chosen = []
    for entry, count in daily_notes_entries(path):
        if daily is None and sys.stdin.isatty() and not as_json:
            question = f"Obsidian keeps daily notes in {entry.removesuffix('/**')}/ ({count} notes); read them as divergent notes?"
            if not typer.confirm(question, default=True):
                continue
        chosen.append(entry)
    return chosen


RESCAN_HELP = (
    "Ignore the stored result: walk and read the whole vault again (a stored result checks the "
    "archive by folder times, so an archived note edited in place shows only then)."
)


@app.command()
def status(
    vault: Optional[Path] = typer.Option(None, "--vault", help=VAULT_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    rescan: bool = typer.Option(False, "--rescan", help=RESCAN_HELP),
) -> None:
    """Layers with note counts and token sizes, pending signals, the last pass, whether a pass is due.

    Answered from a stored result while nothing it depends on changed (cmem.fast); ages and
    whether a pass is due are recomputed on every call.
    """
    from cmem.reading import stored_results
    from cmem.reading.status import build_status

    _global["json"] = as_json
    target = _open(vault).remember_listings()  # read-only: each layer listed once
    pending = stored_results.begin(
        target, "status", ()
    )  # rescan or not: the full walk below refreshes the stored result
    result = build_status(target)
    data = result.to_json()
    stored_results.store(pending, {"data": data, "clock": result.clock})
    if as_json:
        _print_json(data)
    else:
        from cmem.render.reports import render_status_data

        typer.echo(render_status_data(data))


@app.command()
def scan(
    vault: Optional[Path] = typer.Option(None, "--vault", help=VAULT_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    rescan: bool = typer.Option(False, "--rescan", help=RESCAN_HELP),
) -> None:
    """Every pending signal (note, line, class, cue, excerpt) and every deferred line with its reason."""
    from cmem.reading import stored_results
    from cmem.render.reports import color_on
    from cmem.scan.scanner import scan_vault

    _global["json"] = as_json
    target = _open(vault).remember_listings()  # read-only: each layer listed once
    pending = stored_results.begin(target, "scan", (as_json, color_on(sys.stdout)))
    result = scan_vault(target)
    if as_json:
        out = json.dumps(result.to_json(), ensure_ascii=False, indent=2)
    else:
        from cmem.render.reports import render_scan

        out = render_scan(result)
    stored_results.store(pending, {"stdout": out + "\n"})
    typer.echo(out)


@app.command()
def note(
    text: List[str] = typer.Argument(
        ..., help="The text to capture (quote it, or pass several words)."
    ),
    vault: Optional[Path] = typer.Option(None, "--vault", help=VAULT_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Append a timestamped line to today's capture note in the divergent layer (created if missing)."""
    from cmem.triggers.capture import capture_note

    _global["json"] = as_json
    target = _open(vault)
    _recover_first(
        target, "note", as_json, busy_ok=True
    )  # never append to a note a killed step was moving
    _auto_sync(target, note=True)
    captured = capture_note(target, " ".join(text))
    _auto_sync(target, note=True)
    if as_json:
        _print_json(
            {
                "note": captured.rel,
                "line": captured.line,
                "created": captured.created,
                "text": captured.text,
            }
        )
    else:
        typer.echo(
            f"noted in {captured.rel}:{captured.line}" + (" (new note)" if captured.created else "")
        )


@app.command()
def context(
    topic: Optional[str] = typer.Option(
        None, "--topic", help="What this session is about: matching topic files come first."
    ),
    budget: Optional[int] = typer.Option(
        None, "--budget", min=100, help="Token budget (default: budget_tokens from the config)."
    ),
    vault: Optional[Path] = typer.Option(None, "--vault", help=VAULT_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """The session-start bundle for an agent: resident files, matching topic files, an index, pending notes.

    Printed as Markdown framed as reference material. Never includes the archive.
    """
    from cmem.reading.context import build_context, render_context_markdown

    _global["json"] = as_json
    result = build_context(
        _open(vault).remember_listings(), topic=topic, budget=budget, keep=True
    )  # reads only: each layer listed once; keep: the material is stored for cmem.fast
    for problem in result.problems:
        _warn(problem)
    if as_json:
        _print_json(result.to_json())
    else:
        typer.echo(render_context_markdown(result))


@app.command()
def doctor(
    fix: bool = typer.Option(
        False,
        "--fix",
        help="Repair what an interrupted run left behind (the journal of a pass, archive apply or undo; git lock files a killed git left), after confirmation.",
    ),
    yes: bool = typer.Option(
        False, "--yes", "-y", help="With --fix: repair without asking (needed without a terminal)."
    ),
    vault: Optional[Path] = typer.Option(None, "--vault", help=VAULT_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Check the config, frontmatter, source links, git state, locks, interrupted runs and sync-folder risks.

    With --fix, repairs what an interrupted run left: finishes or rolls back a killed pass,
    finishes an interrupted archive apply, removes git lock files a killed git left (only when
    no git is running and they are minutes old). It lists the repairs and asks first.
    """
    from cmem.doctor.checks import run_doctor

    _global["json"] = as_json
    target = _open(vault)
    findings, repaired = run_doctor(target), []
    if fix:
        from cmem.doctor.doctor_fix import find_leftovers, repair_leftovers

        leftovers = [item for item in find_leftovers(target) if item.fixable]
        if leftovers:
            if not as_json:
                typer.echo(
                    "\n".join(f"will fix: {item.message} — {item.action}" for item in leftovers)
                )
            _confirm(yes, f"repair {len(leftovers)} thing{'s' if len(leftovers) != 1 else ''}?")
            repaired = repair_leftovers(target, leftovers)
            findings = run_doctor(target)
    if as_json:
        _print_json(
            {
                "findings": [f.to_json() for f in findings],
                "ok": not any(f.level == "error" for f in findings),
                "fixed": repaired,
            }
        )
    else:
        from cmem.render.reports import render_doctor

        typer.echo("".join(f"fixed: {line}\n" for line in repaired) + render_doctor(findings))
    if any(f.level == "error" for f in findings):
        raise typer.Exit(1)


@app.command()
def converge(
    vault: Optional[Path] = typer.Option(None, "--vault", help=VAULT_HELP),
    engine: Optional[str] = typer.Option(
        None,
        "--engine",
        metavar="[builtin|llm]",
        autocompletion=_choices("builtin", "llm"),
        help="builtin (offline, extractive) or llm; default: llm when a model command is configured.",
    ),
    llm: Optional[str] = typer.Option(
        None,
        "--llm",
        help="Model command reading the prompt on stdin, e.g. 'llm -n -m gpt-4o-mini' ({prompt_file} for a file path).",
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Run up to validation and print the diff; write nothing."
    ),
    emit_prompt: bool = typer.Option(
        False, "--emit-prompt", help="Print the assembled prompt and stop."
    ),
    response: Optional[Path] = typer.Option(
        None,
        "--response",
        help="Skip the engine and apply this response file (an agent that is itself the model).",
    ),
    replay: Optional[str] = typer.Option(
        None,
        "--replay",
        help="Re-validate and apply the last response of a recorded run (a pass id, or 'last').",
    ),
    only: Optional[List[str]] = typer.Option(
        None, "--only", help="Converge only this note (repeatable)."
    ),
    budget: Optional[int] = typer.Option(
        None, "--budget", min=500, help="Prompt budget in tokens (default: budget_tokens)."
    ),
    propose: bool = typer.Option(
        False,
        "--propose",
        help="Review mode: validate and save a proposal; review and apply it with `cmem apply` (or discard it with `cmem apply --drop`).",
    ),
    allow_shrink: bool = typer.Option(False, "--allow-shrink", help=SHRINK_HELP),
    show_diff: bool = typer.Option(
        False, "--diff", help="Print the diff of the memory files after the pass."
    ),
    keep_raw_prompt: bool = typer.Option(
        False,
        "--keep-raw-prompt",
        help="Keep the run record unredacted (credentials in plain text, for debugging the redaction); the model still gets the redacted prompt.",
    ),
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="No progress and no report (errors still go to stderr)."
    ),
    if_due: bool = typer.Option(
        False,
        "--if-due",
        help="Unattended: run only when due (something pending, last pass older than min_interval_minutes); quiet when a pass is running; stops after 3 failures in a row.",
    ),
    scheduled: bool = typer.Option(
        False,
        "--scheduled",
        help="With --if-due, for cron and systemd timers: due after schedule_hours instead.",
    ),
    background: bool = typer.Option(
        False,
        "--background",
        help="Detach (new session, survives the terminal closing), log the outcome in the machine folder's cmem.log, return at once.",
    ),
    detached: bool = typer.Option(
        False,
        "--detached",
        hidden=True,
        help="Internal: this is the detached process --background started.",
    ),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Merge the pending signals of the divergent notes into the memory files, then commit.

    Scans the loose notes, selects pending ones (corrections first) within the budget, has the
    engine merge-rewrite the convergent files, validates the response (sources, traces, nothing
    silently dropped), applies it all-or-nothing, stages the notes in the archive checklist and
    commits. Nothing pending: exit 0.
    """
    from cmem.converge.pipeline import PassOptions, run_pass
    from cmem.errors import Busy
    from cmem.render.reports import Spinner, render_pass

    _global["json"] = as_json
    if engine not in (None, "builtin", "llm"):
        raise typer.BadParameter("must be builtin or llm", param_hint="--engine")
    target = _open(vault)
    response_text = None
    if response is not None:
        try:
            response_text = response.read_text("utf-8", errors="replace")
        except OSError as exc:
            raise CmemError(f"cannot read the response file {response}: {exc.strerror}.") from None
    if replay is not None:
        from cmem.steps.run_records import find_run

        record = find_run(target, replay)
        responses = record.responses()
        if not responses:
            raise CmemError(f"the run record {record.folder} holds no response to replay.")
        response_text = responses[-1].read_text("utf-8", errors="replace")
        only = only or record.read_json("run.json").get("notes")
    options = PassOptions(
        engine=engine,
        llm=llm,
        dry_run=dry_run,
        emit_prompt=emit_prompt,
        response_text=response_text,
        only=only,
        budget=budget,
        propose=propose,
        allow_shrink=allow_shrink,
        keep_raw_prompt=keep_raw_prompt,
    )
    if scheduled and not if_due:
        raise typer.BadParameter("--scheduled goes with --if-due", param_hint="--scheduled")
    if background or if_due or detached:
        if (background or if_due) and (
            dry_run or emit_prompt or response is not None or replay is not None or show_diff
        ):
            raise typer.BadParameter(
                "--if-due and --background run real passes: no --dry-run, --emit-prompt, --response, --replay or --diff",
                param_hint="--if-due/--background",
            )
        _converge_unattended(
            target,
            options,
            if_due=if_due,
            scheduled=scheduled,
            background=background,
            detached=detached,
            quiet=quiet,
            as_json=as_json,
        )
        return
    if not (dry_run or emit_prompt):
        from cmem.triggers.if_due import reset_failures

        reset_failures(target)  # a person is running a pass: unattended runs may try again
    writes = not (dry_run or emit_prompt)
    if writes:
        _auto_sync(target, quiet=quiet)
    kept = None
    if emit_prompt and not any(
        (engine, llm, dry_run, response, replay, only, budget, propose, allow_shrink, show_diff)
        + (keep_raw_prompt, quiet, as_json)
    ):  # the plain request, which cmem.fast answers from the stored prompt (issue 13)
        from cmem.reading import stored_prompt

        kept = stored_prompt.begin(target)
    spinner = Spinner(quiet=quiet or as_json or emit_prompt)
    try:
        result = run_pass(target, options, progress=spinner)
    except KeyboardInterrupt as exc:
        spinner.done()
        _report_interrupt(exc)
        raise
    except Busy as exc:
        spinner.done()
        if as_json:
            _print_json({"status": "busy", "message": str(exc)})
        elif not quiet:
            typer.echo(str(exc), err=True)
        return
    finally:
        spinner.done()
    if emit_prompt and result.prompt is not None:
        if kept is not None:
            stored_prompt.store(kept, result.prompt)
        typer.echo(result.prompt, nl=False)
        return
    if writes and result.status == "applied":
        _auto_sync(target, quiet=quiet)
    if as_json:
        _print_json(result.to_json())
    elif not quiet or result.status == "failed":
        stream_err = result.status == "failed"
        typer.echo(render_pass(result, show_diff=show_diff or dry_run), err=stream_err)
    if result.status == "failed":
        raise typer.Exit(1)


@app.command("apply")
def apply_proposal(
    drop: bool = typer.Option(False, "--drop", help="Discard the waiting proposal instead."),
    yes: bool = typer.Option(
        False, "--yes", "-y", help="Apply without asking (needed without a terminal)."
    ),
    allow_shrink: bool = typer.Option(False, "--allow-shrink", help=SHRINK_HELP),
    vault: Optional[Path] = typer.Option(None, "--vault", help=VAULT_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Review mode: show the waiting proposal's diff and apply it after confirmation (or --drop it)."""
    from cmem.converge.pipeline import PassOptions, run_pass
    from cmem.converge.proposal import drop_proposal, load_proposal
    from cmem.render.reports import colour_diff, render_pass
    from cmem.steps.run_records import find_run

    _global["json"] = as_json
    target = _open(vault)
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
    options = dict(
        response_text=response_text,
        only=proposal.notes,
        apply_proposal=True,
        allow_shrink=allow_shrink,
    )
    preview = run_pass(target, PassOptions(dry_run=True, **options))
    if preview.status == "failed":
        typer.echo(render_pass(preview), err=True)
        raise typer.Exit(1)
    if not as_json:
        typer.echo(colour_diff(preview.diff) or "the proposal changes no memory file")
    _confirm(yes, f"apply pass {proposal.pass_id} ({len(preview.changed)} files)?")
    result = run_pass(target, PassOptions(**options))
    if result.status == "applied":
        drop_proposal(target)
    if as_json:
        _print_json(result.to_json())
    else:
        typer.echo(render_pass(result))
    if result.status == "failed":
        raise typer.Exit(1)


def _confirm(yes: bool, question: str) -> None:
    """The confirm gate: a terminal asks; without one, --yes is required."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise CmemError("no terminal to confirm on; pass --yes to go ahead.")
    if not typer.confirm(question, default=False):
        raise typer.Exit(1)


@app.command()
def demo(
    folder: Optional[Path] = typer.Argument(
        None, help="Where to put the demo vault (default: a new temporary folder)."
    ),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Copy the sample vault, make it a git repository, and run a real pass with the builtin engine.

    Shows the signals found, the pass, and the diff of the memory files. Your own notes are not touched.
    """
    from cmem.converge.demo import run_demo
    from cmem.render.reports import colour_diff, render_pass, render_scan

    _global["json"] = as_json
    demo_run = run_demo(folder)
    if as_json:
        _print_json(
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


archive_app = typer.Typer(
    help="The archive gate: notes a pass converged wait in archive/ARCHIVE-CHECKLIST.md until you tick them.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(archive_app, name="archive")


@archive_app.command("list")
def archive_list(
    vault: Optional[Path] = typer.Option(None, "--vault", help=VAULT_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Every staged line: note, target, ticked or not, and its state (ready, changed, missing, unparsed)."""
    from cmem.archive.gate import list_staged

    _global["json"] = as_json
    target = _open(vault)
    staged = list_staged(target)
    if as_json:
        _print_json({"staged": [line.to_json() for line in staged]})
    else:
        from cmem.render.history import render_staged

        typer.echo(render_staged(staged, target.checklist_rel))


@archive_app.command("apply")
def archive_apply(
    all_lines: bool = typer.Option(False, "--all", help="Take every staged line, ticked or not."),
    yes: bool = typer.Option(
        False, "--yes", "-y", help="Move without asking (needed without a terminal)."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show the moves; change nothing."),
    vault: Optional[Path] = typer.Option(None, "--vault", help=VAULT_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Move the ticked notes into the archive with git, remove their lines, and commit.

    Notes edited since they were staged are skipped (the next pass scans them again); an existing
    archive file is never overwritten; nothing is ever deleted.
    """
    from cmem.archive.gate import ArchiveResult, apply_archive, plan_archive
    from cmem.render.history import render_archive_plan, render_archive_result

    _global["json"] = as_json
    target = _open(vault)
    if not dry_run:
        _recover_first(
            target, "archive apply", as_json
        )  # plan from a whole vault, not a half-done step
        _auto_sync(target)
    plan = plan_archive(target, all_lines=all_lines)
    if dry_run or not plan.moves:
        result = ArchiveResult("dry-run" if dry_run and plan.moves else "nothing", plan)
    else:
        if not as_json:
            typer.echo(render_archive_plan(plan))
        _confirm(
            yes,
            f"move {len(plan.moves)} note{'s' if len(plan.moves) != 1 else ''} into the archive?",
        )
        result = apply_archive(target, plan)
        _auto_sync(target)
    if as_json:
        _print_json(result.to_json())
    else:
        typer.echo(render_archive_result(result))


def _auto_sync(target, *, note: bool = False, quiet: bool = False) -> None:
    """`git.sync: auto` in .cmem/config.yaml: sync before and after a step (a pass, an archive
    apply, an undo; `cmem note` too with git.sync_note). Offline or failing, it says so once, on
    stderr, and the step carries on locally."""
    config = target.config
    if config.sync_mode != "auto" or (note and not config.sync_note):
        return  # the usual case: cmem.sync.remote is not even imported
    from cmem.sync.remote import sync_if_auto

    message = sync_if_auto(target, _global.setdefault("sync_memo", {}), note=note)
    if message and not quiet:
        _warn(message)


def _recover_first(target, purpose: str, as_json: bool, busy_ok: bool = False) -> None:
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


@app.command()
def undo(
    yes: bool = typer.Option(
        False, "--yes", "-y", help="Undo without asking (needed without a terminal)."
    ),
    force: bool = typer.Option(
        False,
        "--force",
        help="Undo even though later commits changed the same files (their changes are kept).",
    ),
    vault: Optional[Path] = typer.Option(None, "--vault", help=VAULT_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Revert the last cmem step (a pass or an archive apply) with a new commit; run again to step further back.

    A pass's notes become pending again and leave the checklist; archived notes move back. Refused,
    with the reason, when later commits changed the same files (unless --force).
    """
    from cmem.archive.undo import UndoResult, apply_undo, check_undo, plan_undo
    from cmem.render.history import render_undo_plan, render_undo_result

    _global["json"] = as_json
    target = _open(vault)
    _recover_first(
        target, "undo", as_json
    )  # an interrupted step is finished before undo looks for the last one
    _auto_sync(target)
    plan = plan_undo(target, force=force)
    if plan.refused:
        if not as_json:
            typer.echo(render_undo_plan(plan), err=True)
        check_undo(plan)  # raises: one sentence with the reasons, exit 1
    if plan.target is None:
        if as_json:
            _print_json(UndoResult("nothing", plan).to_json())
        else:
            typer.echo(render_undo_plan(plan))
        return
    if not as_json:
        typer.echo(render_undo_plan(plan))
    _confirm(yes, "undo it?")
    result = apply_undo(target, plan)
    _auto_sync(target)
    if as_json:
        _print_json(result.to_json())
    else:
        typer.echo(render_undo_result(result))


@app.command()
def sync(
    vault: Optional[Path] = typer.Option(None, "--vault", help=VAULT_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
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

    _global["json"] = as_json
    target = _open(vault)
    _recover_first(target, "sync", as_json)
    result = sync_vault(target)
    if as_json:
        _print_json(result.to_json())
    else:
        typer.echo(render_sync(result), err=result.status == "offline")
    if result.status == "offline":
        raise typer.Exit(OFFLINE_EXIT_CODE)


@app.command("log")
def log_command(
    limit: Optional[int] = typer.Option(
        None, "--limit", "-n", min=1, help="Show only the newest N entries."
    ),
    vault: Optional[Path] = typer.Option(None, "--vault", help=VAULT_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """The passes, archive applies and undos: when, which notes, which files, engine and model, warnings."""
    from cmem.steps.pass_log import build_log

    _global["json"] = as_json
    commits = build_log(_open(vault), limit)
    if as_json:
        _print_json({"passes": [commit.to_json() for commit in commits]})
    else:
        from cmem.render.history import render_log

        typer.echo(render_log(commits))


@app.command("diff")
def diff_command(
    pass_ref: Optional[str] = typer.Argument(
        None, metavar="[PASS]", help="A pass id (or its start) or commit hash; default: the last."
    ),
    vault: Optional[Path] = typer.Option(None, "--vault", help=VAULT_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """The change a pass made to the memory files and the checklist (coloured on a terminal)."""
    from cmem.render.history import render_diff
    from cmem.steps.pass_log import pass_diff

    _global["json"] = as_json
    result = pass_diff(_open(vault), pass_ref)
    if as_json:
        _print_json({"pass": result.commit.to_json(), "diff": result.diff})
    else:
        typer.echo(render_diff(result))


@app.command()
def trace(
    target_text: List[str] = typer.Argument(
        ..., metavar="TOPIC|FILE", help="A memory file (path or name, e.g. profile) or keywords."
    ),
    vault: Optional[Path] = typer.Option(None, "--vault", help=VAULT_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """How a memory file or a topic evolved: each statement's dated versions, oldest first, with sources and passes."""
    from cmem.reading.trace import trace_target

    _global["json"] = as_json
    result = trace_target(_open(vault), " ".join(target_text))
    if as_json:
        _print_json(result.to_json())
    else:
        from cmem.render.history import render_trace

        typer.echo(render_trace(result))


@app.command()
def recall(
    query: List[str] = typer.Argument(
        ...,
        metavar="QUERY",
        help="Words to look for (Chinese or English; two characters are enough).",
    ),
    archive: bool = typer.Option(
        False, "--archive", help="Search the archived notes instead of the memory files."
    ),
    limit: int = typer.Option(10, "--limit", "-n", min=1, help="At most this many results."),
    rebuild: bool = typer.Option(
        False, "--rebuild", help="Delete the index and build it again from the notes first."
    ),
    vault: Optional[Path] = typer.Option(None, "--vault", help=VAULT_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Keyword (BM25) search of the memory files: the matching statements with path, score, snippet and sources.

    Uses a full-text index kept in the machine folder and brought up to date on every call (it is a
    cache: delete it and it is rebuilt). The archive is searched only with --archive.
    """
    from cmem.reading.recall import query_terms, recall_memory, render_recall
    from cmem.reading.search_index import ARCHIVED, CONVERGENT, index_file

    _global["json"] = as_json
    target = _open(vault)
    text = " ".join(query)
    building = rebuild or not index_file(target, ARCHIVED if archive else CONVERGENT).exists()
    if not as_json and building and query_terms(text):  # an empty query is refused before any work
        typer.echo(
            "building the search index from the notes (later calls only update it)…", err=True
        )
    result = recall_memory(target, text, archive=archive, limit=limit, rebuild=rebuild)
    for problem in result.problems:
        _warn(problem)
    typer.echo(
        json.dumps(result.to_json(), ensure_ascii=False, indent=2)
        if as_json
        else render_recall(result)
    )


@app.command("mcp")
def mcp_command(
    vault: Optional[Path] = typer.Option(None, "--vault", help=VAULT_HELP),
) -> None:
    """Serve the vault to agents over the Model Context Protocol (stdio).

    Tools: context, recall, note, status, scan, converge_prompt and converge_apply (the agent is the
    model: it answers the prompt, cmem validates, applies and commits). No tool deletes or moves a
    note. Needs the mcp extra: pip install 'cmem[mcp]'.
    """
    from cmem.mcp_server import serve

    serve(_open(vault).root)


def _converge_unattended(
    target,
    options,
    *,
    if_due: bool,
    scheduled: bool,
    background: bool,
    detached: bool,
    quiet: bool,
    as_json: bool,
) -> None:
    """`converge --if-due` / `--background`: the rules live in cmem.triggers.if_due; this renders them."""
    from cmem.triggers import if_due as triggers

    if background:
        detached_run = triggers.spawn_detached(
            target, _converge_child_args(options, if_due, scheduled)
        )
        if as_json:
            _print_json(
                {"status": "started", "pid": detached_run.pid, "log": str(detached_run.log)}
            )
        elif not quiet:
            typer.echo(
                f"started in the background (pid {detached_run.pid}); its outcome goes to {detached_run.log}",
                err=True,
            )
        return
    if detached:
        triggers.ignore_hangup()
    from cmem.render.reports import Spinner, paint, render_pass

    _auto_sync(target, quiet=quiet)
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
        _auto_sync(target, quiet=quiet)
    if as_json:
        _print_json(outcome.to_json())
    elif outcome.status == "stopped":
        typer.echo(paint("error: ", "red", stream=sys.stderr) + outcome.reason, err=True)
    elif outcome.result is not None and outcome.status != "not-due":
        if not quiet or outcome.status == "failed":
            typer.echo(render_pass(outcome.result), err=outcome.status == "failed")
    elif outcome.status == "failed":
        typer.echo(
            paint("error: ", "red", stream=sys.stderr) + (outcome.error or outcome.reason), err=True
        )
    elif not quiet:
        typer.echo(("not due: " if outcome.status == "not-due" else "") + outcome.reason, err=True)
    if outcome.status in ("failed", "stopped"):
        raise typer.Exit(1)


def _converge_child_args(options, if_due: bool, scheduled: bool) -> list[str]:
    args = ["--if-due"] if if_due else []
    args += ["--scheduled"] if scheduled else []
    args += ["--engine", options.engine] if options.engine else []
    args += ["--llm", options.llm] if options.llm else []
    args += ["--budget", str(options.budget)] if options.budget else []
    for name in options.only or []:
        args += ["--only", name]
    args += ["--propose"] if options.propose else []
    args += ["--allow-shrink"] if options.allow_shrink else []
    return args


hook_app = typer.Typer(
    help="Session-end hooks: run `cmem converge --if-due` in the background when a shell or an agent session ends.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(hook_app, name="hook")
SHELL_HELP = "bash, zsh or fish (default: from $SHELL)."
AGENT_HELP = "An agent instead of a shell: claude-code (a SessionEnd hook in the project's .claude/settings.json)."
PROJECT_HELP = "With --agent: the project folder holding .claude/ (default: the current folder)."


def _hook_change(plan, yes: bool, as_json: bool, vault=None) -> None:
    from cmem.render.setup import render_hook_done, render_hook_plan
    from cmem.setup.hooks import apply_hook_plan

    if plan.changes:
        if not as_json:
            typer.echo(render_hook_plan(plan))
        _confirm(yes, f"{'change' if plan.after is not None else 'delete'} {plan.target}?")
        apply_hook_plan(plan, vault)
    if as_json:
        _print_json({"plan": plan.to_json(), "applied": plan.changes})
    else:
        typer.echo(render_hook_done(plan))


@hook_app.command("install")
def hook_install(
    shell: Optional[str] = typer.Option(
        None, "--shell", autocompletion=_choices("bash", "zsh", "fish"), help=SHELL_HELP
    ),
    agent: Optional[str] = typer.Option(None, "--agent", help=AGENT_HELP),
    project: Optional[Path] = typer.Option(None, "--project", help=PROJECT_HELP),
    yes: bool = typer.Option(
        False, "--yes", "-y", help="Change the file without asking (needed without a terminal)."
    ),
    vault: Optional[Path] = typer.Option(None, "--vault", help=VAULT_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Add the hook for this vault: a marked block at the end of the shell's rc file, or a Claude Code SessionEnd entry.

    Shows the change and asks first. Installing again replaces the block in place; an existing
    `trap … EXIT` is chained; the result must pass the shell's own syntax check.
    """
    from cmem.setup.hooks import plan_agent_install, plan_shell_install

    _global["json"] = as_json
    target = _open(vault)
    plan = (
        plan_agent_install(target, project or Path.cwd())
        if _agent(agent, shell)
        else plan_shell_install(target, _shell(shell))
    )
    _hook_change(plan, yes, as_json, target)


@hook_app.command("uninstall")
def hook_uninstall(
    shell: Optional[str] = typer.Option(
        None, "--shell", autocompletion=_choices("bash", "zsh", "fish"), help=SHELL_HELP
    ),
    agent: Optional[str] = typer.Option(None, "--agent", help=AGENT_HELP),
    project: Optional[Path] = typer.Option(None, "--project", help=PROJECT_HELP),
    all_vaults: bool = typer.Option(
        False, "--all", help="Remove the hooks of every vault from that file (no vault needed)."
    ),
    yes: bool = typer.Option(
        False, "--yes", "-y", help="Change the file without asking (needed without a terminal)."
    ),
    vault: Optional[Path] = typer.Option(None, "--vault", help=VAULT_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Remove this vault's hook; the file is given back byte for byte as it was before the install."""
    from cmem.setup.hooks import plan_agent_uninstall, plan_shell_uninstall

    _global["json"] = as_json
    target = None if all_vaults else _open(vault)
    if _agent(agent, shell):
        plan = plan_agent_uninstall(target, project or Path.cwd())
    else:
        plan = plan_shell_uninstall(_shell(shell), target)
    _hook_change(plan, yes, as_json, target)


@hook_app.command("show")
def hook_show(
    shell_name: Optional[str] = typer.Argument(
        None, metavar="[SHELL]", autocompletion=_choices("bash", "zsh", "fish"), help=SHELL_HELP
    ),
    shell: Optional[str] = typer.Option(
        None, "--shell", hidden=True, help="Old spelling of SHELL, still accepted."
    ),
    agent: Optional[str] = typer.Option(None, "--agent", help=AGENT_HELP),
    vault: Optional[Path] = typer.Option(None, "--vault", help=VAULT_HELP),
) -> None:
    """Print the hook's code, for `eval "$(cmem hook show zsh)"` in an rc file instead of installing a block.

    (An eval starts Python with every shell; the installed block costs the shell nothing at start.)
    """
    from cmem.setup.hooks import agent_snippet, shell_snippet

    target = _open(vault)
    if _agent(agent, shell_name or shell):
        typer.echo(agent_snippet(target))
    else:
        typer.echo(shell_snippet(_shell(shell_name or shell), target))


@app.command("completion")
def completion(
    shell_name: str = typer.Argument(
        ...,
        metavar="SHELL",
        autocompletion=_choices("bash", "zsh", "fish"),
        help="bash, zsh or fish.",
    ),
) -> None:
    """Print the shell completion script: commands, options and their choices complete on TAB.

    bash: `eval "$(cmem completion bash)"` in ~/.bashrc; zsh: `eval "$(cmem completion zsh)"` in
    ~/.zshrc (after compinit); fish: `cmem completion fish > ~/.config/fish/completions/cmem.fish`.
    Each TAB runs cmem with its fast start (no vault is read).
    """
    from typer._completion_shared import get_completion_script

    if shell_name not in ("bash", "zsh", "fish"):
        raise typer.BadParameter(
            f"must be bash, zsh or fish, not {shell_name!r}", param_hint="SHELL"
        )
    typer.echo(get_completion_script(prog_name="cmem", complete_var=COMPLETE_VAR, shell=shell_name))


@hook_app.command("status")
def hook_status_command(
    project: Optional[Path] = typer.Option(
        None,
        "--project",
        help="The project whose .claude/settings.json is checked (default: the current folder).",
    ),
    vault: Optional[Path] = typer.Option(None, "--vault", help=VAULT_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Which hooks are installed (bash, zsh, fish, Claude Code), for which vault, and whether they still work."""
    from cmem.errors import VaultNotFound
    from cmem.setup.hooks import hook_status

    _global["json"] = as_json
    try:
        target = _open(vault)
    except VaultNotFound:
        target = None
    hooks = hook_status(target, project or Path.cwd())
    if as_json:
        _print_json(
            {
                "vault": str(target.root) if target else None,
                "hooks": [hook.to_json() for hook in hooks],
            }
        )
    else:
        from cmem.render.setup import render_hook_status

        typer.echo(render_hook_status(hooks, target))


def _agent(agent: Optional[str], shell: Optional[str]) -> bool:
    from cmem.setup.hooks import AGENTS

    if agent is None:
        return False
    if agent not in AGENTS:
        raise typer.BadParameter(f"must be one of {', '.join(AGENTS)}", param_hint="--agent")
    if shell is not None:
        raise typer.BadParameter("give --shell or --agent, not both", param_hint="--agent")
    return True


def _shell(shell: Optional[str]) -> str:
    from cmem.setup.hooks import SHELLS, default_shell

    if shell is None:
        return default_shell()
    if shell not in SHELLS:
        raise typer.BadParameter(f"must be one of {', '.join(SHELLS)}", param_hint="--shell")
    return shell


@app.command()
def watch(
    settle: float = typer.Option(
        120.0, "--settle", min=0.0, help="Seconds without a change before the due check runs."
    ),
    polling: bool = typer.Option(
        False,
        "--polling",
        help="Poll instead of file events (network file systems; chosen by itself when inotify runs out).",
    ),
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="Also print each change noticed and each settled burst."
    ),
    vault: Optional[Path] = typer.Option(None, "--vault", help=VAULT_HELP),
) -> None:
    """Watch the divergent notes; once they have settled, run `converge --if-due` (one pass per burst of saves).

    Changes are judged by content hashes, so editors' temp files, atomic saves, .git churn and
    cmem's own writes cause no pass. Ctrl-C stops (a running pass is let finish; twice interrupts it).
    """
    from cmem.triggers.watch import watch_vault

    target = _open(vault)

    def report(message: str) -> None:
        typer.echo(message, err=True)

    summary = watch_vault(
        target,
        settle,
        report=report,
        verbose=report if verbose else None,
        polling=polling,
        handle_signals=True,
    )
    typer.echo(
        f"stopped watching: {summary.passes} pass(es) from {summary.checks} due check(s)", err=True
    )


@app.command("agent-instructions")
def agent_instructions_command(
    agent: str = typer.Option(
        "generic", "--agent", help="claude-code (CLAUDE.md), codex (AGENTS.md) or generic."
    ),
    lang: Optional[str] = typer.Option(
        None, "--lang", metavar="[en|zh]", help="en or zh (default: the vault's language, else en)."
    ),
    vault: Optional[Path] = typer.Option(None, "--vault", help=VAULT_HELP),
) -> None:
    """Print the text to paste into an agent's CLAUDE.md / AGENTS.md: when to read, capture, and ask to converge."""
    from cmem.errors import VaultNotFound
    from cmem.setup.agents import AGENT_FILES, agent_instructions

    if agent not in AGENT_FILES:
        raise typer.BadParameter(f"must be one of {', '.join(AGENT_FILES)}", param_hint="--agent")
    if lang not in (None, "en", "zh"):
        raise typer.BadParameter("must be en or zh", param_hint="--lang")
    try:
        target = _open(vault)
    except VaultNotFound:
        if vault is not None:
            raise
        target = None
    typer.echo(agent_instructions(agent, lang, target), nl=False)


@app.command()
def trust(
    revoke: bool = typer.Option(
        False, "--revoke", help="Forget the trust: the vault's command stops running."
    ),
    yes: bool = typer.Option(
        False, "--yes", "-y", help="Trust without asking (scripts); the command is still shown."
    ),
    vault: Optional[Path] = typer.Option(None, "--vault", help=VAULT_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Allow this vault's own llm.command to run (recorded in your user config with the command's sha256).

    Shows the command (and the vault files it runs, with their sha256) and asks; --yes trusts
    without asking. A command that came with a vault runs only after you trust it, as with direnv's
    allow; when the vault's command changes, or a script of the vault it names changes
    (`sh tools/model.sh`), it must be trusted again. --llm, $CMEM_LLM and your user config need no trust.
    """
    from dataclasses import asdict

    from cmem.setup.trust import revoke_trust, trust_status, trust_vault

    _global["json"] = as_json
    target = _open(vault)
    if not revoke:
        status = trust_status(target)
        if status.state in ("untrusted", "changed"):
            from cmem.render.setup import render_trust_question

            # the user decides on what will run, so it is shown before the question (stderr: --json stays clean)
            typer.echo(render_trust_question(status), err=True)
            _confirm(yes, "Trust it to run on this machine?")
    change = revoke_trust(target) if revoke else trust_vault(target)
    if as_json:
        _print_json(asdict(change))
    else:
        from cmem.render.setup import render_trust

        typer.echo(render_trust(change))


COMPLETE_VAR = "_CMEM_COMPLETE"  # set by the scripts `cmem completion SHELL` prints, on each TAB


def main() -> None:
    """Entry point: one translation point from CmemError to `error: …` and an exit code."""
    if os.environ.get(COMPLETE_VAR):
        # typer registers its shell classes only with add_completion, which would add two
        # --install-completion options to every help; the completion request needs them
        from typer._completion_classes import completion_init

        completion_init()
    _tolerant_output()
    _hoist_global_flags(sys.argv)
    try:
        # Without standalone mode typer returns (not raises) the code of a `typer.Exit(n)`.
        code = app(standalone_mode=False)
        if code == 130:  # typer turns Ctrl-C into exit code 130 without a word
            _report_interrupt(None)
        if isinstance(code, int) and code:
            sys.exit(code)
    except CmemError as exc:
        _fail(str(exc), exc.exit_code)
    except KeyboardInterrupt as exc:
        _report_interrupt(exc)
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        typer.echo("aborted", err=True)
        sys.exit(1)
    except OSError as exc:  # a full disk, a read-only folder: the user's to fix, not a bug
        from cmem.errors import os_error_sentence

        message = os_error_sentence(exc)
        if message is None:
            raise
        _fail(message, 1)
    except Exception as exc:  # click's usage errors arrive here in non-standalone mode
        usage = _click_usage_error(exc)
        if usage is None:
            raise
        sys.exit(usage)


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


def _report_interrupt(exc: BaseException | None) -> None:
    """Ctrl-C: say what was and was not done (a pass attaches its own account), once."""
    if _global.get("interrupt_reported"):
        return
    _global["interrupt_reported"] = True
    summary = (
        getattr(exc, "cmem_summary", None)
        or "  nothing more was done; if a step was cut short, the next cmem command finishes or undoes it"
    )
    typer.echo(f"interrupted\n{summary}", err=True)


def _fail(message: str, exit_code: int) -> None:
    if _global.get("json"):
        typer.echo(json.dumps({"error": message}, ensure_ascii=False))
    else:
        from cmem.render.reports import paint

        prefix = "" if exit_code == 0 else paint("error: ", "red", stream=sys.stderr)
        typer.echo(prefix + message, err=True)
    sys.exit(exit_code)


def _tolerant_output() -> None:
    """A name that is not UTF-8 on disk reaches Python as surrogates; should one slip into a
    message or a --json field, it is printed escaped rather than crashing the command."""
    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (ValueError, OSError):
                pass


def _click_usage_error(exc: Exception) -> int | None:
    """Typer vendors click; its usage errors carry `show()` and `exit_code`."""
    if hasattr(exc, "show") and hasattr(exc, "exit_code"):
        exc.show()
        return exc.exit_code
    return None


if __name__ == "__main__":
    main()
