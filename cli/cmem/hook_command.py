"""`cmem hook run EVENT --agent NAME`: the one command every installed agent hook runs
(docs/design.md §14), the typer command `commands/setup.py: hook_run` hands it over.

- `session-end`, `pre-compact`: the hook's JSON is read from stdin with a time bound, the firing
  recorded, and the work — capture the transcript, then `converge --if-due`, then what the next
  start shows of memory refreshed — handed to a detached process (`--detached`, a new
  session, spawned with `os.posix_spawn`, so not even `subprocess` is imported). It returns in
  milliseconds: Claude Code shares 1.5 s among its SessionEnd hooks, Codex allows 1 s.
- `session-start`: `{"hookSpecificOutput": {"hookEventName": "SessionStart",
  "additionalContext": …}}`, at most 10,000 characters (`reading/session_start.py`), from what
  `reading/start_memory.py` keeps of the memory files, never a scan; when that was stale, a
  refresh of it is started the same detached way (`--detached`), one at a time.
- `stop`: `{"decision": "block", "reason": …}` after a complex turn, once per session
  (`triggers/agent_session.py: stop_question`); nothing otherwise.

A hook fired by a pass's own model call (an agent CLI run as the model: `CMEM_MODEL_CALL` in
its environment) does nothing at all: that call is not a session (docs/design.md §15).

A hook never fails the agent's session: a vault that is gone, a broken transcript, a bug —
each is recorded (and a bug's traceback logged), and the hook exits 0 with nothing (or, for
Gemini, which wants JSON only on stdout, `{}`) printed.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from cmem.text.own_text import MODEL_CALL_ENV
from cmem.triggers import hook_record

EVENTS = ("session-start", "session-end", "pre-compact", "stop")
AGENT_EVENT_NAMES = {
    "session-start": "SessionStart",
    "session-end": "SessionEnd",
    "pre-compact": "PreCompact",
    "stop": "Stop",
}


@dataclass(frozen=True)
class HookRequest:
    """One `cmem hook run` command line: the event, the agent and the vault (None: the current
    folder's), and what a detached process is handed (`--detached`, the transcript, session id
    and the session's folder)."""

    event: str
    agent: str
    vault: str | None = None
    detached: bool = False
    transcript: str | None = None
    session_id: str | None = None
    cwd: str | None = None


def usage_problem(event: str, agent: str) -> str | None:
    if event not in EVENTS:
        return f"EVENT must be one of {', '.join(EVENTS)}, not {event!r}"
    if agent not in hook_record.AGENT_NAMES:
        return f"--agent must be one of {', '.join(hook_record.AGENT_NAMES)}"
    return None


def cmem_command(root: str) -> str:
    """How the text an agent reads names this cmem: by absolute path (an agent's shell may not
    have the venv on PATH), with the vault."""
    import shlex

    beside = os.path.join(os.path.dirname(sys.executable), "cmem")
    program = beside if os.access(beside, os.X_OK) else "cmem"
    return f"{shlex.quote(program)} --vault {shlex.quote(root)}"


def run(request: HookRequest, out=None) -> int:
    """Answer one hook event; the exit code (always 0: see the module's doc)."""
    from cmem.reading.stored_results import find_root

    out = out or sys.stdout
    event, agent = request.event, request.agent
    quiet_json = "{}" if agent == "gemini" else ""
    if os.environ.get(MODEL_CALL_ENV):  # an agent CLI run as a pass's model: not a session
        _put(out, quiet_json)
        return 0
    root = find_root(request.vault)
    if root is None:
        _put(out, quiet_json)
        return 0
    from cmem.vault.machine import machine_dir_of

    machine = machine_dir_of(root)
    if request.detached:
        return _detached_work(root, machine, request)
    payload = hook_record.read_payload()
    cwd = hook_record.text_field(payload, "cwd") or os.getcwd()
    hook_record.write_record(
        machine,
        agent,
        "fired",
        {
            "time": hook_record.now_text(),
            "event": AGENT_EVENT_NAMES[event],
            "source": hook_record.text_field(payload, "source", "trigger", "reason"),
            "session": hook_record.text_field(payload, "session_id"),
            "cwd": cwd,
        },
    )
    try:
        if event in ("session-end", "pre-compact"):
            _spawn_work(root, machine, request, payload, cwd)
            _put(out, quiet_json)
        elif event == "session-start":
            from cmem.reading.session_start import hook_output, session_start_context

            text, stale = session_start_context(root, machine, cmem_command(root), cwd)
            _put(out, hook_output("SessionStart", text))
            if stale:
                _spawn_refresh(root, machine, request)
        else:
            _put(out, _stop(root, agent, payload) or quiet_json)
    except Exception as exc:  # never the agent's failure: recorded, and a bug is logged
        _log_failure(machine, agent, event, exc)
        _put(out, quiet_json)
    return 0


def _put(out, text: str) -> None:
    if text:
        try:
            out.write(text + "\n")
            out.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass


def _stop(root: str, agent: str, payload: dict) -> str | None:
    import json
    from pathlib import Path

    from cmem.triggers.agent_session import stop_question
    from cmem.vault.layers import open_vault

    reason = stop_question(open_vault(Path(root)), agent, payload, cmem_command(root))
    return json.dumps({"decision": "block", "reason": reason}) if reason else None


def _spawn_work(root: str, machine: str, request: HookRequest, payload: dict, cwd: str) -> None:
    """Start the session-end work in a process of its own."""
    argv = [sys.executable, "-m", "cmem", "--vault", root, "hook", "run", request.event]
    argv += ["--agent", request.agent, "--detached", "--cwd", cwd]
    transcript = hook_record.text_field(payload, "transcript_path")
    if transcript:
        argv += ["--transcript", os.path.abspath(os.path.expanduser(transcript))]
    session = hook_record.text_field(payload, "session_id")
    if session:
        argv += ["--session-id", session]
    _spawn(machine, argv)


def _spawn_refresh(root: str, machine: str, request: HookRequest) -> None:
    """Start a refresh of what SessionStart keeps of memory, unless one is running."""
    from cmem.reading.start_memory import refresh_running

    if refresh_running(machine):
        return
    argv = [sys.executable, "-m", "cmem", "--vault", root, "hook", "run", "session-start"]
    _spawn(machine, [*argv, "--agent", request.agent, "--detached"])


def _spawn(machine: str, argv: list[str]) -> None:
    """Start `argv` in a process of its own: a new session (no terminal, no hangup), stdin and
    stdout on /dev/null, stderr appended to the machine folder's log."""
    os.makedirs(machine, mode=0o700, exist_ok=True)
    log = os.path.join(machine, "background-stderr.log")
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600),
    ]
    env = dict(os.environ)
    env.pop("CMEM_FAULT", None)  # a crash test aims at this process, not at its work
    os.posix_spawn(sys.executable, argv, env, file_actions=actions, setsid=True)


def _detached_work(root: str, machine: str, request: HookRequest) -> int:
    """The work of a hook, in the detached process: for a session's end, capture and the pass
    if due; then, for every event, what SessionStart keeps of memory refreshed (once the memory
    files are older than the racy-timestamp window, so their stats may be kept)."""
    import signal
    from pathlib import Path

    from cmem.triggers.agent_session import SessionWork, capture_session, converge_after
    from cmem.vault.layers import open_vault

    try:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        os.nice(10)  # background work: the person's own processes come first
    except (ValueError, OSError):
        pass
    vault = open_vault(Path(root))
    if request.event == "session-start":
        _refresh_memory(vault, settle=False)
        return 0
    work = SessionWork(
        request.agent,
        AGENT_EVENT_NAMES[request.event],
        request.transcript,
        request.session_id,
        request.cwd,
    )
    capture_session(vault, work)
    try:
        converge_after(vault, request.agent)
    finally:
        _refresh_memory(vault, settle=True)
    return 0


REFRESH_SECONDS = 10.0  # of reading memory files a refresh does; the next start goes on


def _refresh_memory(vault, settle: bool) -> None:
    """`reading/start_memory.py: refresh`, one at a time, for at most REFRESH_SECONDS;
    `settle`: first wait out the racy-timestamp window of files a pass may just have written."""
    import time

    from cmem.cache_store import RACY_NS
    from cmem.reading.start_memory import refresh_alone

    if settle:
        time.sleep(RACY_NS / 1e9 + 0.1)
    try:
        refresh_alone(vault, REFRESH_SECONDS)
    except Exception:  # only the next start's freshness is at stake: logged, never raised
        import traceback

        traceback.print_exc()


def _log_failure(machine: str, agent: str, event: str, exc: Exception) -> None:
    from cmem.errors import failure_sentence

    failed = failure_sentence(exc)
    message = failed[0] if failed else f"{type(exc).__name__}: {exc}"
    hook_record.write_record(
        machine,
        agent,
        "fired",
        {**(hook_record.read_record(machine, agent, "fired") or {}), "error": message},
    )
    if failed is None:
        import traceback

        try:
            with open(os.path.join(machine, "background-stderr.log"), "a", encoding="utf-8") as log:
                traceback.print_exception(exc, file=log)
        except OSError:
            pass
