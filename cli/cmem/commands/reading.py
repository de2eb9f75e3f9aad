"""What people and agents read back: status, scan, context, recall, trace, log, diff. Nothing
here writes a note. status, scan, context and recall answer from a stored result while nothing
it depends on changed (`reading/stored_results.py`), and store one when they compute afresh."""

from typing import Annotated

import typer

from cmem.commands.common import print_json, reading_target, show, show_stored, warn
from cmem.commands.options import JsonOption, RescanOption, VaultOption, within


def status(vault: VaultOption = None, as_json: JsonOption = False, rescan: RescanOption = False):
    """Layers with note counts and token sizes, pending signals, the last pass, whether a pass is due.

    Answered from a stored result while nothing it depends on changed; ages and whether a pass
    is due are recomputed on every call.
    """
    from cmem.reading.stored_status import stored_status

    stored = None if rescan else stored_status(vault)
    if stored is not None:
        data, machine_dir = stored
    else:
        data, machine_dir = _fresh_status(vault, rescan)
    if as_json:
        print_json(data)
    else:
        from cmem.render.reports import render_status_data
        from cmem.vault.warned import shown_once

        odd = shown_once(machine_dir, data["odd_files"])  # a warning about a file: once
        # echo, not `show`: every field is redacted already (`_fresh_status`, `refresh_status`),
        # and redacting the text again compiled the label rules for every "tokens" it says
        typer.echo(render_status_data({**data, "odd_files": odd}))


def _fresh_status(vault, rescan: bool) -> tuple[dict, str]:
    """Status computed from the vault, and stored for the next call."""
    from cmem.reading import stored_results
    from cmem.reading.status import build_status
    from cmem.text.secrets import shown_data

    target = reading_target(vault).remember_listings()  # read-only: each layer listed once
    # rescan or not: the full walk below refreshes the stored result
    pending = stored_results.begin(target, "status", ())
    result = build_status(target, rescan=rescan)
    data = shown_data(result.to_json())  # stored as shown
    stored_results.store(pending, {"data": data, "clock": result.clock})
    return data, str(target.machine_dir)


def scan(vault: VaultOption = None, as_json: JsonOption = False, rescan: RescanOption = False):
    """Every pending signal (note, line, class, cue, excerpt) and every deferred line with its reason."""
    from cmem.reading.scan_output import scan_output, stored_scan

    stored = None if rescan else stored_scan(vault, as_json)
    if stored is not None:
        show_stored(stored)
        return
    # read-only: each layer listed once
    typer.echo(scan_output(reading_target(vault).remember_listings(), as_json))


def context(
    topic: Annotated[
        str | None,
        typer.Option(
            "--topic", help="What this session is about: matching topic files come first."
        ),
    ] = None,
    budget: Annotated[
        int | None,
        typer.Option(
            "--budget",
            callback=within("context --budget"),
            help="Token budget (default: budget_tokens from the config).",
        ),
    ] = None,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """The session-start bundle for an agent: resident files, matching topic files, an index, pending notes.

    Printed as Markdown framed as reference material. Never includes the archive.
    """
    from cmem.reading.stored_context import render_context_markdown, stored_bundle

    result = stored_bundle(vault, topic, budget)
    if result is None:  # reads only: each layer listed once; keep: stored for the next call
        from cmem.reading.context import build_context

        result = build_context(
            reading_target(vault).remember_listings(), topic=topic, budget=budget, keep=True
        )
    for problem in result.problems:
        warn(problem, redacted=True)  # as the material holds them: redacted when gathered
    # as it is, not through `show` or click's stripping of colour codes: the bundle is redacted
    # material (context.py: gather_material) holding no codes of ours, often a megabyte long
    if as_json:
        import json

        typer.echo(json.dumps(result.to_json(), ensure_ascii=False, indent=2), color=True)
    else:
        typer.echo(render_context_markdown(result), color=True)


def log_command(
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit", "-n", callback=within("log --limit"), help="Show only the newest N entries."
        ),
    ] = None,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """The passes, archive applies and undos: when, which notes, which files, engine and model, warnings."""
    from cmem.steps.pass_log import build_log

    commits = build_log(reading_target(vault), limit)
    if as_json:
        print_json({"passes": [commit.to_json() for commit in commits]})
    else:
        from cmem.render.history import render_log

        show(render_log(commits))


def diff_command(
    pass_ref: Annotated[
        str | None,
        typer.Argument(
            metavar="[PASS]", help="A pass id (or its start) or commit hash; default: the last."
        ),
    ] = None,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """The change a pass made to the memory files and the checklist (coloured on a terminal)."""
    from cmem.render.history import render_diff
    from cmem.steps.pass_log import pass_diff

    result = pass_diff(reading_target(vault), pass_ref)
    if as_json:
        print_json({"pass": result.commit.to_json(), "diff": result.diff})
    else:
        show(render_diff(result))


def trace(
    target_text: Annotated[
        list[str],
        typer.Argument(
            metavar="TOPIC|FILE", help="A memory file (path or name, e.g. profile) or keywords."
        ),
    ],
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """How a memory file or a topic evolved: each statement's dated versions, oldest first, with sources and passes."""
    from cmem.reading.trace import trace_target

    result = trace_target(reading_target(vault), " ".join(target_text))
    if as_json:
        print_json(result.to_json())
    else:
        from cmem.render.history import render_trace

        show(render_trace(result))


def recall(
    query: Annotated[
        list[str],
        typer.Argument(
            metavar="QUERY",
            help="Words to look for (Chinese or English; two characters are enough).",
        ),
    ],
    archive: Annotated[
        bool,
        typer.Option("--archive", help="Search the archived notes instead of memory and notes."),
    ] = False,
    limit: Annotated[
        int,
        typer.Option(
            "--limit", "-n", callback=within("recall --limit"), help="At most this many results."
        ),
    ] = 10,
    rebuild: Annotated[
        bool,
        typer.Option("--rebuild", help="Delete the index and build it again from the notes first."),
    ] = False,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Keyword (BM25) search of the vault, memory first: memory's statements, then the notes'
    lines (pending notes marked not yet converged), with path, score, snippet and sources.

    Uses full-text indexes kept in the machine folder and brought up to date on every call (they
    are caches: delete them and they are rebuilt). The archive is searched only with --archive.
    """
    from cmem.reading.recall import render_recall, stored_recall

    text = " ".join(query)
    result = None if rebuild else stored_recall(vault, text, archive, limit)
    if result is None:
        result = _search_afresh(vault, text, archive, limit, rebuild, as_json)
    for problem in result.problems:
        warn(problem)
    if as_json:
        print_json(result.to_json())
    else:
        show(render_recall(result))


def _search_afresh(vault, text: str, archive: bool, limit: int, rebuild: bool, as_json: bool):
    """Recall with the indexes brought up to date first (built, on the first call: said)."""
    from cmem.reading.recall import query_terms, recall_memory
    from cmem.reading.search_index import ARCHIVED, NOTES, index_file

    target = reading_target(vault)
    building = rebuild or not index_file(target, ARCHIVED if archive else NOTES).exists()
    if not as_json and building and query_terms(text):  # an empty query is refused before any work
        typer.echo(
            "building the search index from the notes (later calls only update it)…", err=True
        )

    def progress(done: int, total: int) -> None:  # a big vault's first build: a person waits
        if done % 500 == 0:
            typer.echo(f"  indexed {done:,} of {total:,} notes…", err=True)

    return recall_memory(
        target, text, archive=archive, limit=limit, rebuild=rebuild, progress=progress
    )
