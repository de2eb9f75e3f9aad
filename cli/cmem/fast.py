"""The entry point: answer read commands from a stored result before importing anything heavy.

`cmem status` and `cmem scan` run at every shell exit and session start, and most of the time the
vault has not changed since the last call. Importing typer, YAML and the scanner costs several
times a bare `python -c pass` (docs/benchmarks.md), so this module — stdlib only, imported first —
looks for a stored result whose key still matches and prints it. Only on a miss does it hand over
to the real CLI (`cmem.cli.main`), whose command stores its result for the next call.

The stored results, their key and the racy-timestamp rule are `cmem.reading.stored_results`
(stdlib only too; the read commands in `cli.py` store through it). The key is everything the
result depends on, compared in full (not hashed, so there are no collisions to reason about):

- the vault's listing: every folder's mtime (an added, removed or renamed file or folder changes
  it) and every note's (mtime, size, inode, ctime) — except under the archive folder, whose notes
  are checked by folder mtimes alone (an archived note edited in place keeps its old token size
  until `--rescan`: the figure says so, see `reading.status.STALE`);
- cmem's own files (`.cmem/`), the archive checklist, the user config, the unattended-failure
  record and the git files naming the commit (a pass commit, a checkout of an older state);
- the cmem version, this format, the command's parameters, `CMEM_*` variables and today's date.

Racy-git rule: a result is stored only if every file and folder in its key is older than the
listing by more than the file system's timestamp granularity (`RACY_NS`); otherwise an edit in the
same tick as the listing could leave the key unchanged, so the next call computes afresh. A symbolic
link anywhere in the walk makes a vault uncacheable (its target's changes are outside the key).
Anything time-dependent (ages, whether a pass is due) is stored as its inputs and recomputed at
print time. A running or interrupted step always falls through to the real command.

Read commands are a registry (`READ_COMMANDS`): a name, the options the fast path understands, and
how to print a stored payload. Any other argument, any doubt, any error: the real CLI runs.
"""

from __future__ import annotations

import os
import sys

from cmem import __version__
from cmem.reading.stored_results import (
    FORMAT,
    _write,
    entry_path,
    find_root,
    load_entry,
    still_valid,
)

HELP_FLAGS = ("--help", "-h")

# --- the entry point ----------------------------------------------------------------------------


def main() -> None:
    argv = sys.argv[1:]
    try:
        out = answer(argv)
    except Exception:  # any doubt: the real command decides (and reports errors properly)
        out = None
    if out is None:
        from cmem.cli import main as full_main

        full_main()
        return
    _tolerant_output()
    sys.stdout.write(
        out
    )  # outside the try: a closed pipe must not make the real command print again
    sys.stdout.flush()


def answer(argv: list[str]) -> str | None:
    """What to print for `argv` from a stored result; None when there is none to trust."""
    if argv == ["--version"]:
        return f"cmem {__version__}\n"
    if (
        argv
        and argv[-1] in HELP_FLAGS
        and len(argv) <= 3
        and all(not a.startswith("-") for a in argv[:-1])
    ):
        return _help(argv)
    request = parse_read(argv)
    if request is None or request["rescan"]:
        return None
    root = find_root(request["vault"])
    if root is None:
        return None
    entry = load_entry(entry_path(root, request["command"], _params(request)))
    if entry is None or not still_valid(entry, root):
        return None
    return READ_COMMANDS[request["command"]]["render"](entry["payload"], request)


# --- read commands ------------------------------------------------------------------------------


def parse_read(argv: list[str]) -> dict | None:
    """`[--vault V] [--no-color] COMMAND [--vault V] [--json] [--no-color] [--rescan]`, or None."""
    request = {"command": None, "vault": None, "json": False, "no_color": False, "rescan": False}
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--vault" and args:
            request["vault"] = args.pop(0)
        elif arg.startswith("--vault="):
            request["vault"] = arg[len("--vault=") :]
        elif arg == "--no-color":
            request["no_color"] = True
        elif request["command"] is None and arg in READ_COMMANDS:
            request["command"] = arg
        elif request["command"] is not None and arg == "--json":
            request["json"] = True
        elif request["command"] is not None and arg == "--rescan":
            request["rescan"] = True
        else:
            return None
    if request["command"] is None or request["vault"] == "":
        return None
    return request


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

    if request["no_color"]:
        render.set_color(False)
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
    pending = sum(data["pending"]["signals"].values())
    due = due_rule(
        pending,
        clock["last_time"],
        timedelta(seconds=clock["interval_seconds"]),
        clock["interval_label"],
        now,
    )
    data["due"] = due.to_json()
    return data


def _render_stored_text(payload: dict, request: dict) -> str:
    return payload["stdout"]


# name -> the parameters its stored output depends on, and how to print a stored payload
READ_COMMANDS = {
    "status": {"params": lambda request: (), "render": _render_status},
    "scan": {
        "params": lambda request: (request["json"], _color(request)),
        "render": _render_stored_text,
    },
}


# --- help ---------------------------------------------------------------------------------------


def _help(argv: list[str]) -> str | None:
    """`cmem --help` (and `cmem COMMAND --help`): the text typer printed last time, stored under
    the version, the CLI module's stat and the terminal width; on a miss typer prints it once
    more and it is stored."""
    cli_file = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cli.py")
    st = os.stat(cli_file)
    key = (FORMAT, __version__, tuple(argv), st.st_mtime_ns, st.st_size, _help_width())
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = os.path.join(base, "cmem", "help", entry_path("", "help", key).rsplit(os.sep, 1)[1])
    entry = load_entry(path)
    if entry is not None and entry.get("key") == key:
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
    sys.stdout.write(text)
    if code == 0 and text:
        _write(path, {"key": key, "text": text})
    sys.exit(code)


def _help_width() -> int:
    """The columns click wraps help to (shutil.get_terminal_size's rule, without shutil)."""
    try:
        return int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return 80


def _tolerant_output() -> None:
    """As cmem.cli._tolerant_output: an undecodable name is printed escaped, never a crash."""
    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (ValueError, OSError):
                pass


if __name__ == "__main__":
    main()
