"""What one command line said that the error funnel and the step helpers need to know.

Made fresh for each command line by `commands/app.py: main` (it reaches the typer commands
through click's context), so nothing module-level is written during a command and two
invocations in one process cannot leak `--json` or the sync memo into each other. Its own module,
without typer, because `pass_command.py` and the step helpers take it too.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING, for the annotations alone
if TYPE_CHECKING:
    from pathlib import Path


class Invocation:
    """One command line's state: the global `--vault`, whether `--json` was given (the error
    funnel answers in JSON then), the `git.sync: auto` memo (offline is said once per command) and
    whether a Ctrl-C was already reported. (A plain class: `dataclasses` would be one more
    import on every start.)"""

    __slots__ = ("vault", "json", "sync_memo", "interrupt_reported")

    def __init__(self) -> None:
        self.vault: Path | None = None  # the global --vault, if given
        self.json = False
        self.sync_memo: dict = {}
        self.interrupt_reported = False


def tolerant_output() -> None:
    """A name that is not UTF-8 on disk reaches Python as surrogates; should one slip into a
    message or a --json field, it is printed escaped rather than crashing the command. Both
    entries call it before they print."""
    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (ValueError, OSError):
                pass
