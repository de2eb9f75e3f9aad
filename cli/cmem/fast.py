"""The entry point: answer read commands from a stored result before importing anything heavy.

`cmem status` and `cmem scan` run at every shell exit and session start, and most of the time the
vault has not changed since the last call. Importing typer, YAML and the scanner costs several
times a bare `python -c pass` (docs/benchmarks.md), so this module — stdlib only, imported first —
looks for a stored result whose key still matches and prints it. Only on a miss does it hand over
to the real CLI (`cmem.cli.main`), whose command stores its result for the next call.

The stored results, their key and the racy-timestamp rule are `cmem.reading.stored_results`
(stdlib only too; the read commands in `commands/reading.py` store through it). The key is everything the
result depends on, compared in full (not hashed, so there are no collisions to reason about):

- the vault's listing: every folder's mtime (an added, removed or renamed file or folder changes
  it) and every note's (mtime, size, inode, ctime) — except under the archive folder, whose notes
  are checked by folder mtimes alone (an archived note edited in place keeps its old token size
  until `--rescan`: the figure says so, see `reading.status.STALE`);
- cmem's own files (`.cmem/`), the archive checklist, the user config, the unattended-failure
  record and the git files naming the commit (a pass commit, a checkout of an older state);
- the cmem version, this format, the command's parameters, `CMEM_*` variables and today's date.

A stored key is checked by stats alone (`stored_results.key_holds`): a folder whose mtime, inode
and ctime are unchanged holds the same entries, so no folder is listed again.

Racy-git rule: a result is stored only if every file and folder in its key is older than the
listing by more than the file system's timestamp granularity (`RACY_NS`); otherwise an edit in the
same tick as the listing could leave the key unchanged, so the next call computes afresh. A symbolic
link anywhere in the walk makes a vault uncacheable (its target's changes are outside the key).
Anything time-dependent (ages, whether a pass is due) is stored as its inputs and recomputed at
print time. A running or interrupted step always falls through to the real command.

Read commands are a registry (`READ_COMMANDS`): a name, the options the fast path understands, and
how to print a stored payload. Any other argument, any doubt, any error: the real CLI runs.
`recall` stores no output (every query differs) but the proof that its index matches the notes,
and searches the index here (`reading/recall.py: stored_recall`).

A `cmem scan` that nothing stored answers (a cold scan) is also run here, without typer and the
command table (`run_scan`): it prints and stores what the typer command does, through the same
function (`reading/scan_output.py`); anything but a plain scan goes to the full CLI.

`cmem hook run EVENT --agent NAME`, what every installed agent hook runs at a session's start,
end, compaction and stop, is answered here before anything else (`cmem/hook_command.py`): an
agent gives its hooks a second or two, and typer alone would take a good part of that.

`cmem sync` is a write command, so nothing is stored for it: it is run here, with only the vault,
config and sync modules imported, and prints what `commands/sync.py: sync` prints (see `run_sync`).
"""

from __future__ import annotations

import os
import sys

from cmem import __version__, command_line
from cmem.cache_store import Kept
from cmem.invocation import tolerant_output
from cmem.reading.stored_results import entry_path, find_root, valid_entry

HELP_FLAGS = ("--help", "-h")

# --- the entry point ----------------------------------------------------------------------------


def main() -> None:
    _collect_less()
    try:
        _main()
    except _ReaderGone:
        # the reader of the output went away (`cmem status | head -1`): 1 and no traceback, as
        # the full CLI ends then; both streams pointed at /dev/null, so the flush at exit has
        # nothing to fail on
        devnull = os.open(os.devnull, os.O_WRONLY)
        for stream in (sys.stdout, sys.stderr):
            try:
                os.dup2(devnull, stream.fileno())
            except (OSError, ValueError):
                pass
        sys.exit(1)


def _main() -> None:
    argv = sys.argv[1:]
    hook = parse_hook_run(argv)
    if hook is not None:  # an agent's hook: answered here, in milliseconds (cmem/hook_command.py)
        from cmem import hook_command

        _leave(hook_command.run(hook))
    sync_request = parse_sync(argv)
    if sync_request is not None:
        code = run_sync(sync_request)
        if code is not None and sync_request.get("light"):
            _leave(code)
        if code is not None:
            sys.exit(code)
    try:
        out = answer(argv)
    except Exception:  # any doubt: the real command decides (and reports errors properly)
        out = None
    if out is None:
        converge_request = parse_converge(argv)
        if converge_request is not None:
            code = run_converge(converge_request)  # the pass, without typer
            if code is not None:
                sys.exit(code)
        code = run_scan(argv)  # a scan with nothing stored: scanned here, without typer
        if code == 0:
            # printed, stored, its children reaped: the teardown would only free, one by one,
            # what the scan made, after its output
            _leave(0)
        if code is not None:
            sys.exit(code)
        from cmem.cli import main as full_main

        full_main()
        return
    tolerant_output()
    _put(
        out, sys.stdout
    )  # outside the try: a closed pipe must not make the real command print again
    _leave(0)


# The cyclic collector would walk everything a cold scan keeps, every 700 new objects, though
# nearly nothing a command makes is cyclic garbage; `watch` and `mcp` still collect, less often
# (figure: docs/benchmarks.md, "Why the light paths look the way they do").
GC_THRESHOLDS = (50_000, 50, 100)


def _collect_less() -> None:
    import gc

    if gc.get_threshold()[0] < GC_THRESHOLDS[0]:
        gc.set_threshold(*GC_THRESHOLDS)


class _ReaderGone(Exception):
    """What this module printed had no reader any more (a closed pipe): `main` ends quietly.
    Its own class, not BrokenPipeError: a broken pipe to a git process is a real error."""


def _put(text: str | bytes, stream) -> None:
    """Write and flush: every line this module prints goes through here (and `_echo`). Bytes
    are UTF-8 (a stored output: `stored_results.printed`): written to the stream's buffer as
    they are when the stream encodes UTF-8 and keeps line ends, which is what writing their
    text would have written; else decoded and written as text."""
    try:
        if isinstance(text, bytes):
            if _writes_utf8(stream):
                stream.flush()  # what the text layer holds goes first
                stream.buffer.write(text)
                stream.buffer.flush()
                return
            text = text.decode("utf-8")
        stream.write(text)
        stream.flush()
    except BrokenPipeError:
        raise _ReaderGone from None


def _writes_utf8(stream) -> bool:
    """Whether text written to `stream` reaches its buffer as its UTF-8 bytes: the encoding is
    UTF-8 and "\n" is written as it is (POSIX; on Windows text streams write "\r\n")."""
    import codecs

    encoding = getattr(stream, "encoding", None)
    if not encoding:
        return False
    try:
        utf8 = codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False
    return utf8 and os.linesep == "\n" and hasattr(stream, "buffer")


def _leave(code: int) -> None:
    """End an answer given here at once, its output flushed (`_put`): `os._exit` skips the
    interpreter's teardown (freeing every module and object: a tenth of Python's
    start-up, which is what a light path is measured against; after a cold scan, everything it
    made). Only for answers given here and scans run here (`run_scan`): nothing else is pending
    then (no thread, no child, no open file, no atexit handler of cmem's). Under a
    profiler or a tracer (cProfile, coverage, a debugger) the interpreter ends normally: their
    exit handlers write what they measured."""
    if sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)
    try:
        sys.stderr.flush()  # a warning printed without its line end (stdout: `_put` flushed it)
    except (OSError, ValueError):
        pass
    os._exit(code)


def answer(argv: list[str]) -> str | bytes | None:
    """What to print for `argv` from a stored result (text, or UTF-8 bytes: `_put`); None when
    there is none to trust."""
    if argv == ["--version"]:
        return f"cmem {__version__}\n"
    if (
        argv
        and argv[-1] in HELP_FLAGS
        and len(argv) <= 3
        and all(not a.startswith("-") for a in argv[:-1])
    ):
        return _help(argv)
    if "context" in argv or "--emit-prompt" in argv:  # their own modules (issue 13)
        from cmem.reading import stored_context, stored_prompt

        out = stored_context.answer(argv) or stored_prompt.answer(argv)
        if out is not None:
            return out
    recall = parse_recall(argv)
    if recall is not None:
        from cmem.reading.recall import stored_recall

        return stored_recall(recall)
    request = parse_read(argv)
    if request is None or request["rescan"]:
        return None
    root = find_root(request["vault"])
    if root is None:
        return None
    entry = valid_entry(root, request["command"], _params(request))
    if entry is None:
        return None
    return READ_COMMANDS[request["command"]]["render"](entry["payload"], request)


# --- read commands ------------------------------------------------------------------------------


def parse_read(argv: list[str]) -> dict | None:
    """`[--vault V] [--no-color] COMMAND [--vault V] [--json] [--no-color] [--rescan]` for a
    command of `READ_COMMANDS`, or None."""
    for command in READ_COMMANDS:
        request = command_line.parse(argv, (command,))
        if request is not None:
            return request
    return None


def _color(request: dict) -> bool:
    """Whether text output would be coloured (cmem.render.reports.color_on for stdout)."""
    if request["no_color"] or os.environ.get("NO_COLOR"):
        return False
    return hasattr(sys.stdout, "isatty") and sys.stdout.isatty()


def _params(request: dict) -> tuple:
    return READ_COMMANDS[request["command"]]["params"](request)


def _render_status(payload: dict, request: dict) -> str:
    data = refresh_status(payload)
    if request["json"]:
        import json

        return json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    from cmem.render import reports as render
    from cmem.vault.warned import shown_once

    if request["no_color"]:
        render.set_color(False)
    if payload["clock"].get("machine_dir"):  # a warning about a file is printed once
        data["odd_files"] = shown_once(payload["clock"]["machine_dir"], data["odd_files"])
    return render.render_status_data(data) + "\n"


def refresh_status(payload: dict, now=None) -> dict:
    """A stored status with its time-dependent figures recomputed for `now`: the ages of the
    newest and oldest memory files, and whether a pass is due."""
    from datetime import datetime, timedelta

    from cmem.triggers.due import due_rule

    now = now or datetime.now().astimezone()
    data, clock = payload["data"], payload["clock"]
    for end in ("newest", "oldest"):
        if data["convergent_age"][end] is not None and clock.get(end + "_ns") is not None:
            data["convergent_age"][end]["age_seconds"] = round(
                now.timestamp() - clock[end + "_ns"] / 1e9
            )
    pending = data["pending"].get("workable", 0)
    due = due_rule(
        pending,
        clock["last_time"],
        timedelta(seconds=clock["interval_seconds"]),
        clock["interval_label"],
        now,
    )
    data["due"] = due.to_json()
    if "machine_dir" in clock:  # the last sync: rewritten by every sync, so read now
        from cmem.sync.record import read_record

        data["last_sync"] = read_record(clock["machine_dir"], now.timestamp())
        from cmem.triggers.hook_record import hooks_status

        data["agent_hooks"] = hooks_status(clock["machine_dir"], now.timestamp())
    return data


def _render_stored_text(payload: dict, request: dict) -> str | bytes:
    return payload["stdout"]  # `stored_results.printed`


# name -> the parameters its stored output depends on, and how to print a stored payload
READ_COMMANDS: dict[str, dict] = {
    "status": {"params": lambda request: (), "render": _render_status},
    "scan": {
        "params": lambda request: (request["json"], _color(request)),
        "render": _render_stored_text,
    },
}


def run_scan(argv: list[str]) -> int | None:
    """`cmem scan` that no stored result answers, run as `commands/reading.py: scan` runs it
    (both print `reading/scan_output.py: scan_output`) but without importing typer and the
    command table. None: not a plain scan, or something went wrong before anything was printed
    — the full CLI then runs it (a scan only reads, so running it again is harmless) and
    reports any error as it reports every error."""
    request = parse_read(argv)
    if request is None or request["command"] != "scan" or os.environ.get("_CMEM_COMPLETE"):
        return None
    from pathlib import Path

    from cmem.reading.scan_output import scan_output
    from cmem.render.reports import set_color
    from cmem.vault.layers import OWN_FILES, open_vault

    if request["no_color"]:
        set_color(False)  # as the app's --no-color does
    try:
        target = open_vault(Path(request["vault"]) if request["vault"] is not None else None)
        if target.own_files_problem(OWN_FILES):
            return None  # the full CLI reads it and says what is wrong with it
        out = scan_output(target.remember_listings(), request["json"])
    except KeyboardInterrupt:
        return _sync_interrupted()  # what the full CLI says of a Ctrl-C
    except Exception:  # no vault, a bad config, a bug: the full CLI's error funnel says it
        return None
    tolerant_output()
    _echo(out, sys.stdout)
    return 0


# --- agent hooks --------------------------------------------------------------------------------


def parse_hook_run(argv: list[str]) -> dict | None:
    """`[--vault V] hook run EVENT --agent NAME [--detached --transcript P --session-id S --cwd
    C]`, or None (a usage error or `--help`: the full CLI says it)."""
    words = ("hook", "run")
    request = command_line.parse(argv, words)
    if request is None or len(request["args"]) != 1 or os.environ.get("_CMEM_COMPLETE"):
        return None
    from cmem.hook_command import usage_problem

    hook = {
        "vault": request["vault"],
        "event": request["args"][0],
        "detached": request["detached"],
        **{
            name[2:]: (request[name[2:]] or [None])[-1]
            for name in command_line.COMMANDS[words]["values"]
        },
    }
    return None if usage_problem(hook) else hook


# --- recall -------------------------------------------------------------------------------------


def parse_recall(argv: list[str]) -> dict | None:
    """`[--vault V] [--no-color] recall WORD … [--archive] [--limit N | -n N] [--json]`, or None
    (--rebuild, a limit typer would refuse, anything else: the full CLI decides)."""
    request = command_line.parse(argv, ("recall",))
    if request is None or not request["args"] or os.environ.get("_CMEM_COMPLETE"):
        return None
    limit = 10
    for value in request["limit"]:
        if not (value.isascii() and value.isdigit()) or command_line.out_of_bounds(
            "recall --limit", int(value)
        ):
            return None  # typer says the usage error
        limit = int(value)
    return {
        "vault": request["vault"],
        "no_color": request["no_color"],
        "archive": request["archive"],
        "json": request["json"],
        "limit": limit,
        "query": request["args"],
    }


# --- sync: run in a loop or a hook, mostly with nothing to fetch, so without typer (issue 16);
# any doubt before it starts hands over to the full CLI, and once started its errors are
# reported here as `commands/app.py: main` reports them (it must not run twice).

_ANSI = None  # click's pattern for an escape sequence, compiled on first use


def parse_sync(argv: list[str]) -> dict | None:
    """`[--vault V] [--no-color] sync [--vault V] [--json] [--no-color]`, or None (the full CLI
    decides, and completes a TAB)."""
    request = command_line.parse(argv, ("sync",))
    if request is None or os.environ.get("_CMEM_COMPLETE"):
        return None
    return {"vault": request["vault"], "json": request["json"], "no_color": request["no_color"]}


def run_sync(request: dict) -> int | None:
    """Run `cmem sync` as `commands/sync.py: sync` does; the exit code, or None to hand over to the full
    CLI (nothing has been done yet then)."""
    from cmem import idle_sync

    tolerant_output()
    try:  # first: nothing to do, told in os alone (one fetch, no git status)
        shown = idle_sync.answer(request)
    except KeyboardInterrupt:
        return _sync_interrupted()
    except Exception:  # any doubt: the full path below decides
        shown = None
    if shown is not None:
        request["light"] = True  # main ends the process at once (_leave)
        # plain text (no colour codes to strip, so _echo's `re` is not needed): written as is
        _put(shown[0] + "\n", sys.stdout)
        return 0
    from pathlib import Path

    from cmem.render.reports import set_color
    from cmem.vault.layers import open_vault

    if request["no_color"]:
        set_color(False)
    try:
        target = open_vault(Path(request["vault"]) if request["vault"] is not None else None)
        journals = target.journal_dir
        if journals.is_dir() and any(journals.iterdir()):
            return None  # an interrupted step: the full CLI finishes or undoes it and says so
        from cmem.sync.remote import sync_vault

        # the key taken before sync looks for edits to commit: an edit made meanwhile misses it
        pending = idle_sync.begin(target)
        # the light path's fetch, when it ran and then handed over, is not run again
        result = sync_vault(target, fetched=request.get("fetched"))
    except KeyboardInterrupt:
        return _sync_interrupted()
    except Exception as exc:  # a CmemError, a full disk: as commands/app.py: main says them
        return _light_failure(exc, request)
    import json

    from cmem.render.history import render_sync
    from cmem.text.secrets import shown as redacted
    from cmem.text.secrets import shown_data

    printed = {  # a conflict statement is memory text: shown as every surface shows it
        "text": redacted(render_sync(result)),
        "json": json.dumps(shown_data(result.to_json()), ensure_ascii=False, indent=2),
    }
    if request["json"]:
        _echo(printed["json"], sys.stdout)
    else:
        _echo(printed["text"], sys.stderr if result.status == "offline" else sys.stdout)
    if result.status == "nothing" and result.target is not None:  # the next sync may tell it alone
        from cmem.sync.remote import fetch_argv

        idle_sync.store(pending, result, fetch_argv(target, result.target), printed)
    if result.status == "offline":
        from cmem.sync.remote import OFFLINE_EXIT_CODE

        return OFFLINE_EXIT_CODE
    return 0


# --- converge: every shell exit spawns `converge --if-due --background`, so the spawn runs
# without typer (the shell waits on it); the pass itself runs through typer.


def parse_converge(argv: list[str]) -> dict | None:
    """`[--vault V] [--no-color] converge --background [OPTION …]` with the options of
    `command_line.COMMANDS`, each as typer takes it, or None: typer decides (and says any usage
    error). A value given twice is the last one, as click keeps it."""
    request = command_line.parse(argv, ("converge",))
    if request is None or not request["background"] or os.environ.get("_CMEM_COMPLETE"):
        return None
    for single in ("engine", "llm"):
        request[single] = request[single][-1] if request[single] else None
    if request["engine"] is not None:  # the shell hook's spawn names none: `typing` not loaded
        from cmem.converge.engines import ENGINE_NAMES

        if request["engine"] not in ENGINE_NAMES:
            return None  # typer says why
    if request["llm"] is not None and not request["llm"].strip():
        return None  # an empty --llm is a usage error: typer says it
    if request["emit-prompt"] or (request["scheduled"] and not request["if-due"]):
        return None
    return request


def run_converge(request: dict) -> int | None:
    """Start `cmem converge --background` as `commands/converge.py: converge` does; the exit
    code, or None to hand over to typer (nothing has been done yet then)."""
    from pathlib import Path

    from cmem import pass_command
    from cmem.render.reports import set_color

    tolerant_output()
    if request["no_color"]:
        set_color(False)
    try:
        from cmem.vault.layers import open_vault

        target = open_vault(Path(request["vault"]) if request["vault"] is not None else None)
    except Exception:  # no vault, a bad config, a missing dependency: typer says it
        return None
    args = pass_command.child_args(
        if_due=request["if-due"],
        scheduled=request["scheduled"],
        engine=request["engine"],
        llm=request["llm"],
        budget=None,
        only=request["only"] or None,
        propose=request["propose"],
        allow_shrink=request["allow-shrink"],
    )
    try:
        return pass_command.start_in_background(
            target, args, _light_echo, quiet=request["quiet"], as_json=request["json"]
        )
    except KeyboardInterrupt:
        return _sync_interrupted()
    except Exception as exc:
        return _light_failure(exc, request)


def _light_failure(exc: Exception, request: dict) -> int:
    """What the full CLI's error funnel (`commands/app.py: main`) makes of an error raised once a
    command has started: its sentence and exit code, or the traceback of a bug."""
    from cmem.errors import failure_sentence

    failed = failure_sentence(exc)
    if failed is None:
        raise exc
    return _light_fail(*failed, request)


def _light_echo(message: str, err: bool = False, nl: bool = True) -> None:
    """typer.echo, as the shared command code calls it (`cmem/pass_command.py`)."""
    stream = sys.stderr if err else sys.stdout
    if nl:
        _echo(message, stream)
    else:
        _echo_raw(message, stream)


def _sync_interrupted() -> int:
    """Typer turns Ctrl-C into 130, then commands/common.py: report_interrupt(None) says this."""
    _echo(
        "interrupted\n  nothing more was done; if a step was cut short, the next cmem command "
        "finishes or undoes it",
        sys.stderr,
    )
    return 130


def _light_fail(message: str, exit_code: int, request: dict) -> int:
    """As commands/app.py: _fail — `{"error": …}` on stdout with --json, else `error: …` on stderr."""
    if request["json"]:
        import json

        _echo(json.dumps({"error": message}, ensure_ascii=False), sys.stdout)
    else:
        from cmem.render.reports import paint

        prefix = "" if exit_code == 0 else paint("error: ", "red", stream=sys.stderr)
        _echo(prefix + message, sys.stderr)
    return exit_code


def _echo(text: str, stream) -> None:
    """As typer.echo (click.echo): a line, with colour codes taken out when the stream is not a
    terminal (a status painted for stdout but printed on a redirected stderr, say)."""
    _echo_raw(text + "\n", stream)


def _echo_raw(text: str, stream) -> None:
    """`_echo` without the line end (typer.echo's nl=False)."""
    global _ANSI
    if not (hasattr(stream, "isatty") and stream.isatty()):
        import re

        _ANSI = _ANSI or re.compile(r"\033\[[0-?]*[ -/]*[@-~]")
        text = _ANSI.sub("", text)
    _put(text, stream)


# --- help ---------------------------------------------------------------------------------------


def _help(argv: list[str]) -> str | None:
    """`cmem --help` (and `cmem COMMAND --help`): the text typer printed last time, stored under
    the version, the stat of every CLI module and the terminal width; on a miss typer prints it
    once more and it is stored."""
    key = (tuple(argv), help_sources(), _help_width())
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = os.path.join(base, "cmem", "help", entry_path("", "help", key).rsplit(os.sep, 1)[1])
    kept = Kept(path, "help-texts", key)
    entry = kept.read()
    if isinstance(entry.get("text"), str):
        return entry["text"]
    import io
    from contextlib import redirect_stdout

    from cmem.cli import main as full_main

    buffer = io.StringIO()
    code = 0
    with redirect_stdout(buffer):
        try:
            full_main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    text = buffer.getvalue()
    if code == 0 and text:
        kept.write({"text": text})
    _put(text, sys.stdout)
    sys.exit(code)


def help_sources() -> tuple:
    """(name, mtime, size) of every module the help text is written in: `cli.py` and each module
    of the `commands/` package, so an edited help line (in a checkout) is never answered stale."""
    here = os.path.dirname(os.path.abspath(__file__))
    commands = os.path.join(here, "commands")
    paths = [os.path.join(here, "cli.py")]
    paths += sorted(os.path.join(commands, n) for n in os.listdir(commands) if n.endswith(".py"))
    stats = [(path, os.stat(path)) for path in paths]
    return tuple((os.path.basename(path), st.st_mtime_ns, st.st_size) for path, st in stats)


def _help_width() -> int:
    """The columns click wraps help to (shutil.get_terminal_size's rule, without shutil)."""
    try:
        return int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        pass
    try:
        stdout = sys.__stdout__  # None when Python started without one
        return os.get_terminal_size(stdout.fileno()).columns if stdout else 80
    except (AttributeError, ValueError, OSError):
        return 80


if __name__ == "__main__":
    main()
