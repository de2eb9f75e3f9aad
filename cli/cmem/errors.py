"""The one exception family. Its messages are shown to users as they are: one sentence that
names the file or setting at fault. The CLI turns them into `error: …` and exit 1."""

from __future__ import annotations

import errno
import os
import re
import sys

from cmem.text.names import show_name


class CmemError(Exception):
    """A failure the user can act on; `str(error)` is the whole message."""

    exit_code = 1


class VaultNotFound(CmemError):
    pass


class ConfigError(CmemError):
    pass


class GitError(CmemError):
    pass


# Another step holds the vault (sysexits' EX_TEMPFAIL), so a script can tell "try again" from
# done (0) and failed (1); unattended triggers stay silent and exit 0, as `git gc --auto` does.
BUSY_EXIT_CODE = 75


class Busy(CmemError):
    """Another pass holds the vault lock: nothing was done; try again once it ends."""

    exit_code = BUSY_EXIT_CODE


class UsageError(CmemError):
    exit_code = 2


# What a pass notes on the error or Ctrl-C that stopped it, for its report: the times the engine
# was asked, and what was and was not done. A KeyboardInterrupt carries them too, so they are
# attributes set by name, read back typed.
def set_stop_rounds(stop: BaseException, rounds: int) -> None:
    setattr(stop, "cmem_rounds", rounds)  # noqa: B010 - not an attribute of BaseException


def stop_rounds(stop: BaseException) -> int:
    """The times the engine was asked before `stop` (0: not noted)."""
    rounds = getattr(stop, "cmem_rounds", 0)
    return rounds if isinstance(rounds, int) else 0


def set_stop_summary(stop: BaseException, summary: str) -> None:
    setattr(stop, "cmem_summary", summary)  # noqa: B010 - not an attribute of BaseException


def stop_summary(stop: BaseException | None) -> str | None:
    """What a pass stopped by `stop` had and had not done (None: not noted)."""
    summary = getattr(stop, "cmem_summary", None)
    return summary if isinstance(summary, str) else None


# OS errors whose cause is the machine's state, not cmem's code, whatever the file.
_USER_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS}
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS}
_TEMP_NAME = re.compile(
    r"^\.(?P<name>.+)\.[A-Za-z0-9_]{8}\.cmem-tmp$"
)  # atomic.write_atomic's temp files


def os_error_sentence(exc: OSError) -> str | None:
    """One sentence for an OSError the user can act on (`cannot write /v/x.md: no space left on
    device`), or None for one that looks like a bug (no errno worth naming and no file)."""
    if exc.errno not in _USER_ERRNOS and exc.filename is None:
        return None
    reason = exc.strerror or (os.strerror(exc.errno) if exc.errno else str(exc))
    reason = reason[:1].lower() + reason[1:]
    path, other = _shown_path(exc.filename), _shown_path(exc.filename2)
    if path and other and _TEMP_NAME.match(os.path.basename(path)):
        path, other = (
            other,
            None,
        )  # the rename of a temp file onto its target: the target is the file
    elif path and (temp := _TEMP_NAME.match(os.path.basename(path))):
        path = os.path.join(os.path.dirname(path), temp.group("name"))
    where = f"{path} → {other}" if path and other else path
    if where is None:
        return f"{reason}."
    verb = "cannot write " if exc.errno in _WRITE_ERRNOS else ""
    return f"{verb}{where}: {reason}."


# The modules cmem imports only when a command needs them, and the distribution each comes from
# (pyproject.toml's dependencies): an install made before one was added (`git pull` over an
# editable install) fails at that import, deep in a command, not when cmem starts.
_DISTRIBUTIONS = {
    "ahocorasick": "pyahocorasick",
    "fastjsonschema": "fastjsonschema",
    "git": "gitpython",
    "ruamel": "ruamel.yaml",
    "watchdog": "watchdog",
    "yaml": "PyYAML",
}


def missing_dependency_sentence(exc: ImportError) -> str | None:
    """One sentence for a dependency cmem declares that is not installed, or None (any other
    failed import is a bug and keeps its traceback)."""
    distribution = _DISTRIBUTIONS.get(getattr(exc, "name", None) or "")  # the package, not a part
    if not isinstance(exc, ModuleNotFoundError) or distribution is None:
        return None
    from cmem import DISTRIBUTION

    return (
        f"cmem needs {distribution}, which is not installed in this Python "
        f"({sys.executable}): reinstall {DISTRIBUTION}, or pip install {distribution}."
    )


def _shown_path(name) -> str | None:
    if name is None:
        return None
    return show_name(os.fsdecode(name) if isinstance(name, (bytes, str)) else str(name))


def failure_sentence(exc: BaseException) -> tuple[str, int] | None:
    """What the error funnel (`commands/app.py: main`) says of an error a command raised once it
    had started: its sentence and exit code, or None for a bug, whose traceback is shown."""
    from cmem.text.secrets import shown  # a sentence may quote a note or a reply

    if isinstance(exc, CmemError):
        return shown(str(exc)), exc.exit_code
    if isinstance(exc, OSError):  # a full disk, a read-only folder: the user's to fix
        message = os_error_sentence(exc)
    elif isinstance(exc, ModuleNotFoundError):  # a declared dependency the install lacks
        message = missing_dependency_sentence(exc)
    else:
        return None
    return (shown(message), 1) if message is not None else None
