"""A help page (`cmem --help`, `cmem COMMAND --help`) printed again as typer printed it last,
while nothing it was made from has changed: every module file loaded when it was printed (cmem's,
typer's, the standard library's), the Python running it, the command line, the terminal and the
settings click and typer read. Nothing is parsed here: a line is a help line only when it is
words ending in `--help` or `-h`, which click always takes as the help option; what is printed
is the bytes typer's own run wrote. Any difference, or no stored page, and typer runs as usual,
its page kept for the next time (`keep_while`).

`os` and `sys` alone before the page is printed: the replay spares a help line typer's import.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TextIO

HELP_FLAGS = ("--help", "-h")
MAX_WORDS = 2  # before the flag: `cmem archive apply --help`
# What click, typer and Python read from the environment that can change a help page; cmem's
# own settings; where the state folder is.
_SETTING_NAMES = ("COLUMNS", "LINES", "TERM", "NO_COLOR", "FORCE_COLOR", "LANG", "LANGUAGE")
_SETTING_PREFIXES = ("LC_", "PYTHON", "TYPER_", "_TYPER_", "CMEM_", "CLICOLOR", "XDG_", "HOME")


def is_help_line(args: list[str]) -> bool:
    """Words (no option, no `--`) and then a help flag: click takes the flag as the help option
    of the command the words name, whatever that command's own options are."""
    *words, last = args or [""]
    return (
        last in HELP_FLAGS
        and len(words) <= MAX_WORDS
        and all(word and not word.startswith("-") for word in words)
    )


def replay() -> bool:
    """Print the stored page for this command line, if it still holds; whether it was printed."""
    args = sys.argv[1:]
    if not is_help_line(args):
        return False
    line = tuple(sys.argv)
    entry = _kept(line).read()  # {}: none, or a state folder that cannot be made or read
    if entry.get("line") != line or not isinstance(entry.get("text"), str):
        return False  # none, or another line's page under the same name
    if entry.get("setting") != setting() or not _files_hold(entry.get("files")):
        return False
    from cmem.invocation import tolerant_output

    tolerant_output()  # the stream as typer's run had it
    try:
        sys.stdout.write(entry["text"])
        sys.stdout.flush()
    except BrokenPipeError:  # the reader is gone (`| head -0`): exit 1 quietly, as click does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush
        sys.exit(1)
    return True


def keep_while(run: Callable[[], None]) -> None:
    """`run()` (the command line through typer); when the line is a help line that printed its
    page and ended well, the page is kept for `replay`."""
    if not is_help_line(sys.argv[1:]):
        run()
        return
    before = setting()  # before `run` reconfigures the streams (`tolerant_output`)
    copying = _Copying(sys.stdout)
    sys.stdout = copying  # type: ignore[assignment]
    try:
        run()
    finally:
        sys.stdout = copying.stream
    text = "".join(copying.copy)
    if text:  # empty: click wrote past the copy (an unusual stream), so nothing to keep
        line = tuple(sys.argv)
        page = {"line": line, "setting": before, "files": _module_files(), "text": text}
        try:
            _kept(line).write(page)
        except Exception:
            pass  # a page not kept costs the next help line typer's run, never this one


def setting() -> tuple:
    """Everything besides the module files a help page depends on."""
    env = tuple(
        sorted(
            (name, value)
            for name, value in os.environ.items()
            if name in _SETTING_NAMES or name.startswith(_SETTING_PREFIXES)
        )
    )
    out = sys.stdout
    try:
        size = tuple(os.get_terminal_size(sys.__stdout__.fileno()))  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        size = None
    try:
        terminal = out.isatty()
    except (AttributeError, ValueError):
        terminal = None
    stream = (terminal, getattr(out, "encoding", None), getattr(out, "errors", None))
    return (sys.version, sys.executable, tuple(sys.path), env, size, stream)


class _Copying:
    """The standard output as it is, keeping a copy of the text written to it: typer prints the
    page to the real stream, a terminal or a pipe, as on any other call."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.copy: list[str] = []

    def write(self, text: str) -> int:
        written = self.stream.write(text)  # first: a probe with bytes fails here, uncopied
        self.copy.append(text)
        return written

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


def _module_files() -> list[tuple[str, int, int]]:
    """(path, mtime, size) of every module file loaded so far: the page was made from these."""
    files = []
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str):
            try:
                st = os.stat(path)
            except OSError:
                continue
            files.append((path, st.st_mtime_ns, st.st_size))
    return files


def _files_hold(files) -> bool:
    if not isinstance(files, list) or not files:
        return False
    try:
        for path, mtime, size in files:
            st = os.stat(path)
            if (st.st_mtime_ns, st.st_size) != (mtime, size):
                return False
    except (OSError, TypeError, ValueError):  # a file gone; an entry of another shape
        return False
    return True


def _kept(line: tuple):
    """The page of a command line, a file of its own beside the stored results (named as they
    are), so a replay reads one page, not every page asked for on this machine."""
    from cmem.cache_store import Kept
    from cmem.reading.stored_results import entry_path

    return Kept(entry_path("", "help", line), "help-pages")
