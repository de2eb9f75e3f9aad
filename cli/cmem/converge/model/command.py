"""Run the user's model command: prompt in, response out, and nothing left running (docs/design.md §4).

The command is split with `shlex` and run without a shell, in its own session, so a timeout, an
overflow or Ctrl-C can kill everything it started — model CLIs spawn helpers, and a helper that
keeps our stdout pipe open would otherwise make us wait forever (cpython#76116). The prompt goes
on stdin, which is closed once written; `{prompt_file}` in the command swaps stdin for a private
temporary file. One thread does all the waiting: the three pipes are non-blocking and served by a
selector, so a model that never reads its stdin cannot deadlock us, and every wait is bounded by
the deadline.

A cmem that is itself killed (SIGKILL: no handler runs) must not leave the command running. On
Linux the command runs under a small guard (`_GUARD`, a Python without site): the kernel sends
it SIGHUP when cmem dies (`prctl(PR_SET_PDEATHSIG)`), and it kills its whole process group, the
command and every helper it started, with it. Elsewhere there is no such signal: the command runs
on until it ends or next writes to the closed pipe (SIGPIPE), as on Linux without a usable libc.

POSIX only: process groups and selectable pipes are what make the guarantees above.
"""

from __future__ import annotations

import os
import selectors
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable

from cmem.errors import CmemError

PROMPT_FILE = "{prompt_file}"
STDERR_TAIL_BYTES = 4096
TICK_SECONDS = 0.1
# After the command exits, how long to keep reading output a helper it left behind still holds.
DRAIN_SECONDS = 0.5
# Between SIGTERM and SIGKILL: long enough for a CLI to clean up, short enough to feel immediate.
TERM_GRACE_SECONDS = 2.0
READ_CHUNK = 65536


@dataclass(frozen=True)
class ModelResult:
    stdout: str
    stderr: str  # the last ~4 KB, decoded with replacement
    elapsed: float
    command: list[str]  # the argv as configured, `{prompt_file}` left in place
    returncode: int = 0
    replacements: int = 0  # undecodable stdout bytes replaced by U+FFFD
    warnings: list[str] = field(default_factory=list)


class ModelCommandError(CmemError):
    """The model command failed; what it wrote so far travels along for the run record."""

    def __init__(
        self,
        message: str,
        *,
        reason: str,
        command: list[str],
        stdout: str = "",
        stderr: str = "",
        elapsed: float = 0.0,
        returncode: int | None = None,
    ):
        super().__init__(message)
        self.reason = reason  # not-found, not-executable, timeout, too-much-output, exit
        self.command = command
        self.stdout = stdout
        self.stderr = stderr
        self.elapsed = elapsed
        self.returncode = returncode


def parse_command(command: str) -> list[str]:
    """The configured command as an argv; an empty or unparsable one is an error naming llm.command."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise CmemError(
            f"model command {command!r} cannot be parsed ({exc}); check llm.command or --llm."
        ) from None
    if not argv:
        raise CmemError("the model command is empty; set llm.command or pass --llm.")
    return argv


def run_model_command(
    command: str,
    prompt: str,
    *,
    timeout: float,
    max_output_bytes: int,
    on_tick: Callable[[float], None] | None = None,
) -> ModelResult:
    """Run `command` with `prompt`, return its stdout; raise `ModelCommandError` on any failure.

    Failure means: not found, a timeout, more than `max_output_bytes` on stdout, or a non-zero or
    signal exit. An empty response is returned with a warning, not raised: it is the validator's
    to reject (it must never read as "rewrite to nothing") and the run record's to keep.
    `on_tick(elapsed)` is called about every 0.1 s while the command runs.
    """
    argv = parse_command(command)
    prompt_bytes = prompt.encode("utf-8")
    prompt_path = None
    try:
        if any(PROMPT_FILE in arg for arg in argv):
            prompt_path = _write_prompt_file(prompt_bytes)
            run_argv = [arg.replace(PROMPT_FILE, prompt_path) for arg in argv]
            stdin_data = None
        else:
            run_argv, stdin_data = argv, prompt_bytes
        process = _start(run_argv, argv, with_stdin=stdin_data is not None)
        return _Supervisor(process, argv, stdin_data, timeout, max_output_bytes, on_tick).run()
    finally:
        if prompt_path is not None:
            try:
                os.unlink(prompt_path)
            except FileNotFoundError:
                pass


def _write_prompt_file(data: bytes) -> str:
    fd, path = tempfile.mkstemp(prefix="cmem-prompt-", suffix=".md")  # mode 0600
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return path


def _display(argv: list[str], width: int = 100) -> str:
    """The command for a message: whole when short; else the program's name and the command's
    tail, which is what tells commands apart (`python … tests/fake_llm.py --marker x`) — a long
    clone path must not hide the script's name behind the interpreter's."""
    text = shlex.join(argv)
    if len(text) <= width:
        return text
    program = os.path.basename(argv[0]) or argv[0]
    room = max(width - len(program) - 3, 20)
    tail = shlex.join(argv[1:])
    return f"{program} …{tail[-room:]}" if tail else program


# A command that could not be started: the model was not asked (the report counts it so).
NOT_STARTED = ("not-found", "not-executable")


def _cannot_start(argv: list[str], reason: str, after: str = "") -> ModelCommandError:
    what = "not found" if reason == "not-found" else "not executable"
    return ModelCommandError(
        f"model command '{argv[0]}' {'is ' if reason != 'not-found' else ''}{what}; "
        f"check llm.command or --llm{after}.",
        reason=reason,
        command=argv,
    )


def check_installed(command: str) -> None:
    """Raise the error `run_model_command` would raise for a program that cannot be started
    (not on PATH, no such file, not executable), before a pass writes anything: its snapshot
    commit and run record are for a pass that reached its engine."""
    import shutil

    argv = parse_command(command)
    if shutil.which(argv[0]) is not None:
        return
    exists = os.sep in argv[0] and os.path.isfile(argv[0])
    reason = "not-executable" if exists else "not-found"
    raise _cannot_start(argv, reason, "; nothing was written and nothing was committed")


# `python -I -S -c _GUARD CMEM_PID ARGV…` leads the command's process group and runs it on the
# same pipes: SIGHUP (the kernel's word that cmem died) kills the group; cmem's own SIGTERM is the
# command's to answer, so the guard waits on through it.
_GUARD = """
import os, signal, subprocess, sys
def gone(*_):
    os.killpg(0, signal.SIGKILL)
signal.signal(signal.SIGHUP, gone)
signal.signal(signal.SIGTERM, lambda *_: None)
try:
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGHUP)  # PR_SET_PDEATHSIG
except (ImportError, OSError, AttributeError):
    pass
if os.getppid() != int(sys.argv[1]):
    gone()  # cmem died before the request was made
try:
    child = subprocess.Popen(sys.argv[2:])
except OSError as exc:
    sys.stderr.write(f"{sys.argv[2]}: {exc.strerror}\\n")
    sys.exit(127)
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)  # the pipes are the command's: cmem sees their end when it ends
code = child.wait()
if code < 0:
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
sys.exit(code)
"""


def _guarded(run_argv: list[str]) -> list[str]:
    """The command line that runs `run_argv` under the guard, on Linux; elsewhere as it is."""
    if not sys.platform.startswith("linux"):
        return run_argv
    return [sys.executable, "-I", "-S", "-c", _GUARD, str(os.getpid()), *run_argv]


def _environment() -> dict[str, str]:
    """cmem's environment, with Python's byte-code caches kept out of the source folders (in
    the private state folder, unless the user keeps them elsewhere already): a `__pycache__`
    that came with a vault is no part of a trust (`setup/command_reach.py`), so it is never read."""
    from cmem.private import state_root

    env = dict(os.environ)
    if not env.get("PYTHONPYCACHEPREFIX"):
        env["PYTHONPYCACHEPREFIX"] = os.path.join(state_root(), "pycache")
    from cmem.text.own_text import MODEL_CALL_ENV

    # marked, so an agent CLI run as the model makes its own hooks do nothing (docs/design.md §15: a
    # pass's model call is not a session)
    env[MODEL_CALL_ENV] = "1"
    return env


def _start(run_argv: list[str], argv: list[str], *, with_stdin: bool) -> subprocess.Popen:
    import shutil

    if shutil.which(run_argv[0]) is None:  # said here: the guard would only exit 127
        exists = os.sep in run_argv[0] and os.path.isfile(run_argv[0])
        raise _cannot_start(argv, "not-executable" if exists else "not-found")
    try:
        return subprocess.Popen(
            _guarded(run_argv),
            env=_environment(),
            stdin=subprocess.PIPE if with_stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
            start_new_session=True,  # its own process group, and no controlling terminal
            close_fds=True,
        )
    except FileNotFoundError:
        raise _cannot_start(argv, "not-found") from None
    except PermissionError:
        raise _cannot_start(argv, "not-executable") from None


class _Supervisor:
    """Feeds stdin, collects stdout and the tail of stderr, enforces the deadline and the cap."""

    def __init__(self, process, argv, stdin_data, timeout, max_output_bytes, on_tick):
        self.process = process
        self.pgid = process.pid  # start_new_session: the child leads its own group
        self.argv = argv
        self.pending = memoryview(stdin_data) if stdin_data is not None else None
        self.timeout = timeout
        self.max_output_bytes = max_output_bytes
        self.on_tick = on_tick
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.selector = selectors.DefaultSelector()
        self.start = time.monotonic()

    def run(self) -> ModelResult:
        try:
            self._register()
            self._pump()
            self._stop_group()
        except BaseException:  # timeout, overflow, Ctrl-C in on_tick: nothing may outlive us
            self._stop_group()
            raise
        finally:
            self._close_all()
        return self._result()

    # --- the loop ---------------------------------------------------------------------

    def _register(self) -> None:
        for pipe, events in (
            (self.process.stdout, selectors.EVENT_READ),
            (self.process.stderr, selectors.EVENT_READ),
        ):
            os.set_blocking(pipe.fileno(), False)
            self.selector.register(pipe, events)
        if self.process.stdin is not None:
            os.set_blocking(self.process.stdin.fileno(), False)
            if self.pending:
                self.selector.register(self.process.stdin, selectors.EVENT_WRITE)
            else:
                self._close_stdin()

    def _pump(self) -> None:
        deadline = self.start + self.timeout
        exited_at = None
        last_tick = self.start
        while True:
            now = time.monotonic()
            if exited_at is None and self.process.poll() is not None:
                exited_at = now
            if exited_at is not None and (not self._reading() or now - exited_at >= DRAIN_SECONDS):
                return  # done, or a helper it left behind holds our pipes: stop waiting for EOF
            if (
                exited_at is None and now >= deadline
            ):  # once it has exited, only the drain bounds us
                self._stop_group()
                raise self._error(
                    f"model command '{_display(self.argv)}' timed out after {self.timeout:g} s and was stopped; "
                    "if the model needs longer, raise llm.timeout_seconds in .cmem/config.yaml or your user config.",
                    "timeout",
                )
            wait = min(
                TICK_SECONDS, (deadline if exited_at is None else exited_at + DRAIN_SECONDS) - now
            )
            for key, _ in self.selector.select(max(wait, 0)):
                self._serve(key.fileobj)
            if self.on_tick is not None and time.monotonic() - last_tick >= TICK_SECONDS:
                last_tick = time.monotonic()
                self.on_tick(last_tick - self.start)

    def _reading(self) -> bool:
        return any(
            key.fileobj is not self.process.stdin for key in self.selector.get_map().values()
        )

    def _serve(self, pipe) -> None:
        if pipe is self.process.stdin:
            self._feed()
            return
        try:
            chunk = os.read(pipe.fileno(), READ_CHUNK)
        except BlockingIOError:
            return
        if not chunk:
            self.selector.unregister(pipe)
            pipe.close()
        elif pipe is self.process.stdout:
            self.stdout += chunk
            if len(self.stdout) > self.max_output_bytes:
                self._stop_group()
                raise self._error(
                    f"model command '{_display(self.argv)}' wrote more than {self.max_output_bytes} bytes and was stopped; "
                    "check that it answers once and exits, or raise llm.max_output_bytes in .cmem/config.yaml.",
                    "too-much-output",
                )
        else:
            self.stderr += chunk
            del self.stderr[:-STDERR_TAIL_BYTES]

    def _feed(self) -> None:
        try:
            written = os.write(self.process.stdin.fileno(), self.pending[:READ_CHUNK])
        except BlockingIOError:
            return
        except (BrokenPipeError, ConnectionResetError):
            written = len(self.pending)  # it stopped reading; what it answers decides success
        self.pending = self.pending[written:]
        if not self.pending:
            self.selector.unregister(self.process.stdin)
            self._close_stdin()

    def _close_stdin(self) -> None:
        try:
            self.process.stdin.close()
        except OSError:
            pass

    # --- stopping ---------------------------------------------------------------------

    def _stop_group(self) -> None:
        """Reap the command, then SIGTERM whatever is left of its group, then SIGKILL after a grace."""
        if self.process.poll() is None or _group_alive(self.pgid):
            _signal_group(self.pgid, signal.SIGTERM)
            give_up = time.monotonic() + TERM_GRACE_SECONDS
            while time.monotonic() < give_up:
                if self.process.poll() is not None and not _group_alive(self.pgid):
                    break
                time.sleep(0.02)
            else:
                _signal_group(self.pgid, signal.SIGKILL)
        try:
            self.process.wait(timeout=TERM_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            pass  # unkillable (uninterruptible I/O); do not hang with it

    def _close_all(self) -> None:
        for key in list(self.selector.get_map().values()):
            self.selector.unregister(key.fileobj)
        self.selector.close()
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:
                    pass

    # --- results ----------------------------------------------------------------------

    def _stderr_text(self) -> str:
        return self.stderr.decode("utf-8", errors="replace").strip()

    def _error(self, message: str, reason: str) -> ModelCommandError:
        tail = self._stderr_text()
        if tail and reason != "exit":
            message += f" Its stderr ended with:\n{tail}"
        return ModelCommandError(
            message,
            reason=reason,
            command=self.argv,
            stdout=self.stdout.decode("utf-8", errors="replace"),
            stderr=tail,
            elapsed=time.monotonic() - self.start,
            returncode=self.process.returncode,
        )

    def _result(self) -> ModelResult:
        code = self.process.returncode
        name = _display(self.argv)
        if code is None or code != 0:
            if code is not None and code < 0:
                how = f"was killed by {_signal_name(-code)}"
            else:
                how = f"failed with exit code {code}"
            tail = self._stderr_text()
            detail = (
                f"; its stderr ended with:\n{tail}" if tail else " and wrote nothing on stderr."
            )
            raise self._error(f"model command '{name}' {how}{detail}", "exit")
        text = self.stdout.decode("utf-8", errors="replace")
        replacements = text.count("\ufffd") - bytes(self.stdout).count("\ufffd".encode("utf-8"))
        warnings = []
        if (
            not text.strip()
        ):  # returned, not raised: the validator rejects it and the run record keeps it
            warnings.append(f"model command '{name}' exited 0 but wrote nothing on stdout.")
        if replacements:
            warnings.append(
                f"the model's response had {replacements} byte sequence(s) that are not UTF-8; they were replaced by U+FFFD."
            )
        return ModelResult(
            stdout=text,
            stderr=self._stderr_text(),
            elapsed=time.monotonic() - self.start,
            command=list(self.argv),
            returncode=code,
            replacements=replacements,
            warnings=warnings,
        )


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # EPERM: something is there that we may not signal
    return _has_live_member(pgid)


def _has_live_member(pgid: int) -> bool:
    """Whether a group member is more than a zombie; an init that reaps orphans slowly (some
    container inits take a second) must not make every run wait out the grace period."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True  # no /proc: trust killpg
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[2] == str(pgid).encode() and fields[0] not in (b"Z", b"X"):
            return True
    return False


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except OSError:
        pass  # gone already, or EPERM on a member that changed user; never fall back to one pid


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
