"""What brings memory in or starts a pass by itself: `note` (capture a line), `capture` (agent
sessions), `watch`, and `mcp` (agents reading, noting and converging over the Model Context
Protocol)."""

from pathlib import Path
from typing import Annotated

import typer

from cmem.commands.common import (
    auto_sync,
    open_target,
    print_json,
    reading_target,
    recover_first,
    warn,
)
from cmem.commands.options import JsonOption, VaultOption, invocation, within


def note(
    ctx: typer.Context,
    text: Annotated[
        list[str], typer.Argument(help="The text to capture (quote it, or pass several words).")
    ],
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Append a timestamped line to today's daily note (Obsidian's settings) or capture note, under capture.heading (created if missing)."""
    from cmem.triggers.capture import capture_note

    target = reading_target(vault)  # a note is written beside `.cmem/`, never through it
    # never append to a note a killed step was moving
    recover_first(target, "note", as_json, busy_ok=True)
    auto_sync(target, invocation(ctx), note=True)
    captured = capture_note(target, " ".join(text))
    auto_sync(target, invocation(ctx), note=True)
    if as_json:
        print_json(
            {
                "note": captured.rel,
                "line": captured.line,
                "created": captured.created,
                "text": captured.text,
                "daily": captured.daily,
                "notice": captured.notice or None,
            }
        )
        return
    if captured.notice:
        warn(captured.notice)
    new = " (new daily note)" if captured.daily else " (new note)"
    typer.echo(f"noted in {captured.rel}:{captured.line}" + (new if captured.created else ""))


def capture(
    transcripts: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="[TRANSCRIPT]...",
            help="Transcript files (default: the agents' own folders, ~/.claude/projects and ~/.codex/sessions).",
        ),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            metavar="[claude-code|codex|gemini|generic]",
            help="The transcripts' format (default: told from each file).",
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="DURATION",
            help="Only sessions active within this long (90m, 24h, 7d, 2w; default with no file: 7d).",
        ),
    ] = None,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Turn agent sessions into session notes: the user's own words, one block per turn (^tN).

    One note per session in the sessions folder, named by date, agent, project and a short id;
    never tool calls or results, thinking, subagents, injected instructions or images; long
    pastes cut, credentials redacted. Capturing again changes nothing; a resumed session adds
    its new turns once. Written and committed as one step.
    """
    from cmem.render.sessions import render_capture
    from cmem.sessions.capture import capture_transcripts, parse_duration
    from cmem.sessions.formats import AGENT_NAMES

    if agent is not None and agent not in AGENT_NAMES:
        raise typer.BadParameter(f"must be one of {', '.join(AGENT_NAMES)}", param_hint="--agent")
    window = parse_duration(since) if since is not None else None
    target = open_target(vault)
    result = capture_transcripts(target, list(transcripts) if transcripts else None, agent, window)
    if as_json:
        print_json(result.to_json())
        return
    for warning in result.warnings:
        from cmem.commands.common import warn

        warn(warning)
    typer.echo(render_capture(result))


def watch(
    settle: Annotated[
        float,
        typer.Option(
            "--settle",
            callback=within("watch --settle"),
            help="Seconds without a change before the due check runs.",
        ),
    ] = 30.0,
    polling: Annotated[
        bool,
        typer.Option(
            "--polling",
            help="Poll instead of file events (network file systems; chosen by itself when inotify runs out).",
        ),
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose", "-v", help="Also print each change noticed and each settled burst."
        ),
    ] = False,
    vault: VaultOption = None,
) -> None:
    """Watch the divergent notes; once they have settled, run `converge --if-due` (one pass per burst of saves).

    Changes are judged by content hashes, so editors' temp files, atomic saves, .git churn and
    cmem's own writes cause no pass. Ctrl-C stops (a running pass is let finish; twice interrupts it).
    """
    from cmem.triggers.watch import watch_vault

    target = open_target(vault)

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


def mcp_command(vault: VaultOption = None) -> None:
    """Serve the vault to agents over the Model Context Protocol (stdio).

    Tools: context, recall, note, status, scan, converge_prompt and converge_apply (the agent is the
    model: it answers the prompt, cmem validates, applies and commits). No tool deletes or moves a
    note. Needs the mcp extra: pip install 'convergent-memory[mcp]'.
    """
    from cmem.mcp_server import serve

    serve(open_target(vault).root)
