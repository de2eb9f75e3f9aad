"""When a pass is due (docs/design.md §7): deterministic rules, never the model's feeling.

Session-end triggers (`--if-due`) want something pending and the last pass older than
`min_interval_minutes`; scheduled ones (`--if-due --scheduled`, from cron or a systemd timer)
want it older than `schedule_hours`.

Unattended runs (the shell and agent hooks, `cmem watch`, timers) add `git gc --auto` manners:
quiet on a held lock, one log line per outcome, and a stop after three failures in a row.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from cmem.atomic import write_atomic
from cmem.errors import CmemError
from cmem.private import make_dirs, open_private
from cmem.text.own_text import MODEL_CALL_ENV
from cmem.triggers.due import (  # noqa: F401 (Due, format_age, parse_time: re-exported)
    FAILURES_FILE,
    Due,
    due_rule,
    format_age,
    interval_of,
    parse_time,
)
from cmem.vault.layers import Vault
from cmem.vault.state_json import State

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing stays unloaded: the shell hook's spawn imports this module
    from typing import Literal

    from cmem.converge.pass_values import PassStatus
    from cmem.converge.pipeline import PassResult

    # the stop rule's `stopped`, another pass's `busy`, or the pass's own status
    TriggerStatus = Literal["stopped", "busy"] | PassStatus


def check_due(
    vault: Vault,
    state: State,
    pending_notes: int,
    now: datetime | None = None,
    scheduled: bool = False,
) -> Due:
    now = now or datetime.now().astimezone()
    last = state.last_of_kind("converge")
    interval, label = interval_of(
        vault.config.min_interval_minutes, vault.config.schedule_hours, scheduled
    )
    return due_rule(pending_notes, last.get("time") if last else None, interval, label, now)


def next_due_at(
    vault: Vault, state: State, scheduled: bool = False, now: datetime | None = None
) -> datetime | None:
    """When the interval since the last pass runs out (None: no pass yet, or one dated in the
    future — its age is unknown, `due_rule` says — so no wait)."""
    last = state.last_of_kind("converge")
    last_time = parse_time(last.get("time")) if last else None
    if last_time is None or last_time > (now or datetime.now().astimezone()):
        return None
    if scheduled:
        return last_time + timedelta(hours=vault.config.schedule_hours)
    return last_time + timedelta(minutes=vault.config.min_interval_minutes)


def due_now(vault: Vault, scheduled: bool = False, now: datetime | None = None) -> Due:
    """`check_due` on a fresh scan (warm cache: a `stat` per note), plus review mode's rule: while
    a proposal waits for review, unattended runs do not pile up another one."""
    from cmem.scan.scanner import scan_vault
    from cmem.vault.state_json import load_state

    state = load_state(vault.state_file)
    scan = scan_vault(vault, state=state)
    from cmem.converge.selection import engine_takes
    from cmem.vault.config import model_configured

    takes, _ = engine_takes(scan.pending, model_configured(vault))
    due = check_due(vault, state, len(takes), now, scheduled)
    if due.due and vault.config.review:
        from cmem.converge.proposal import load_proposal

        waiting = load_proposal(vault)
        if waiting is not None:
            return Due(
                False,
                f"a proposal (pass {waiting.pass_id}) is waiting for review: `cmem apply` or `cmem apply --drop`",
            )
    return due


# --- unattended runs, with `git gc --auto` manners: quiet when the vault is busy, one log line
# an outcome, and after FAILURE_LIMIT failures in a row no more tries until a person runs
# `cmem converge` or `cmem doctor` (a broken model must not fail silently for months).

FAILURE_LIMIT = 3
LOG_FILE = "cmem.log"
LOG_MAX_BYTES = 1_000_000  # then the older half is dropped


@dataclass(frozen=True)
class FailureRecord:
    failures: int = 0  # unattended failures in a row
    last_error: str | None = None
    last_failure: str | None = None
    first_failure: str | None = None

    @property
    def stopped(self) -> bool:
        return self.failures >= FAILURE_LIMIT

    def to_json(self) -> dict:
        return {
            "failures": self.failures,
            "stopped": self.stopped,
            "limit": FAILURE_LIMIT,
            "last_error": self.last_error,
            "last_failure": self.last_failure,
            "first_failure": self.first_failure,
        }


def load_failures(vault: Vault) -> FailureRecord:
    try:
        data = json.loads((vault.machine_dir / FAILURES_FILE).read_text("utf-8"))
        return FailureRecord(
            int(data.get("failures", 0)),
            data.get("last_error"),
            data.get("last_failure"),
            data.get("first_failure"),
        )
    except (OSError, ValueError, TypeError, AttributeError):
        return FailureRecord()  # missing or unreadable: no failures on record


def _save_failures(vault: Vault, record: FailureRecord) -> None:
    path = vault.machine_dir / FAILURES_FILE
    if record.failures == 0:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        return
    data = {
        "failures": record.failures,
        "last_error": record.last_error,
        "last_failure": record.last_failure,
        "first_failure": record.first_failure,
    }
    write_atomic(path, json.dumps(data, ensure_ascii=False, indent=1) + "\n")


def record_failure(vault: Vault, error: str, now: datetime | None = None) -> FailureRecord:
    stamp = (now or datetime.now().astimezone()).isoformat(timespec="seconds")
    previous = load_failures(vault)
    record = FailureRecord(previous.failures + 1, error, stamp, previous.first_failure or stamp)
    _save_failures(vault, record)
    return record


def reset_failures(vault: Vault) -> FailureRecord:
    """A person acted (`cmem converge`, `cmem doctor`): unattended runs may try again. Returns
    the record as it was."""
    previous = load_failures(vault)
    if previous.failures:
        _save_failures(vault, FailureRecord())
    return previous


def stopped_message(record: FailureRecord) -> str:
    return (
        f"unattended passes are stopped after {record.failures} failures in a row (last, {record.last_failure}: "
        f"{record.last_error}); run `cmem converge` to see the problem, or `cmem doctor`, and they resume."
    )


@dataclass
class TriggerOutcome:
    """What one unattended trigger did: `not-due`, `stopped`, `busy`, or the pass's own status."""

    status: TriggerStatus
    reason: str = ""
    result: PassResult | None = None  # when a pass ran
    error: str | None = None
    failures: FailureRecord | None = None

    def to_json(self) -> dict:
        data = self.result.to_json() if self.result is not None else {"status": self.status}
        data["status"] = self.status
        data["reason"] = self.reason or None
        if self.error:
            data["errors"] = list(data.get("errors") or []) + [self.error]
        if self.failures is not None:
            data["unattended"] = self.failures.to_json()
        return data


def converge_if_due(
    vault: Vault,
    options,
    scheduled: bool = False,
    progress=None,
    now: datetime | None = None,
    trigger: str | None = None,
) -> TriggerOutcome:
    """`cmem converge --if-due`: the stop rule, the due rule (checked again under the lock, so a
    trigger that waited behind a pass does not run a second one), then the pass; the outcome is
    counted and logged. In review mode the pass only proposes (the pipeline's rule)."""
    from dataclasses import replace

    from cmem.converge.pipeline import run_pass
    from cmem.errors import Busy

    # the backlog only when a person asks (docs/design.md §2)
    options = replace(options, backlog=False)
    label = trigger or ("scheduled" if scheduled else "if-due")
    if os.environ.get(MODEL_CALL_ENV):  # started from within a pass's model call: that pass runs
        return TriggerOutcome("busy", "inside a pass's own model call; that pass is running.")
    record = load_failures(vault)
    if record.stopped:
        return _logged(
            vault, TriggerOutcome("stopped", stopped_message(record), failures=record), label
        )
    from cmem.steps.lock import is_locked, lock_path, read_holder

    if is_locked(
        vault.machine_dir
    ):  # many terminals closing at once: the losers skip even the scan
        holder = read_holder(lock_path(vault.machine_dir)) or {}
        return _logged(
            vault,
            TriggerOutcome("busy", f"a pass is already running (pid {holder.get('pid', '?')})."),
            label,
        )
    try:
        due = due_now(vault, scheduled, now)
        if not due.due:
            return _logged(vault, TriggerOutcome("not-due", due.reason), label)

        def still_due() -> str | None:
            again = due_now(vault, scheduled, now)
            return None if again.due else again.reason

        options.gate = still_due
        result = run_pass(vault, options, progress=progress)
    except Busy as exc:
        return _logged(vault, TriggerOutcome("busy", str(exc)), label)
    except CmemError as exc:
        failures = record_failure(vault, str(exc), now)
        return _logged(
            vault, TriggerOutcome("failed", str(exc), error=str(exc), failures=failures), label
        )
    except Exception as exc:  # a bug: count it, log it, and let the traceback show
        record_failure(vault, f"{type(exc).__name__}: {exc}", now)
        _logged(
            vault, TriggerOutcome("failed", f"{type(exc).__name__}: {exc}", error=repr(exc)), label
        )
        raise
    outcome = TriggerOutcome(result.status, result.message, result=result)
    if result.status == "failed":
        error = "; ".join(result.errors[:3]) or result.message
        outcome.error = error
        outcome.failures = record_failure(
            vault, f"{result.message}: {error}" if result.message else error, now
        )
    elif result.status in ("applied", "nothing", "proposed"):
        reset_failures(vault)
    return _logged(vault, outcome, label)


def converge_logged(vault: Vault, options, progress=None) -> TriggerOutcome:
    """A pass a person asked for with `--background`: no due rule and no stop rule (they asked),
    but nobody sees its output, so its outcome is logged like an unattended one."""
    from dataclasses import replace

    from cmem.converge.pipeline import run_pass
    from cmem.errors import Busy

    reset_failures(vault)
    try:
        # nobody is there to see the batches: the backlog is for `converge --backlog` alone
        result = run_pass(vault, replace(options, backlog=False), progress=progress)
    except Busy as exc:
        return _logged(vault, TriggerOutcome("busy", str(exc)), "background")
    except CmemError as exc:
        return _logged(vault, TriggerOutcome("failed", str(exc), error=str(exc)), "background")
    except Exception as exc:
        _logged(
            vault,
            TriggerOutcome("failed", f"{type(exc).__name__}: {exc}", error=repr(exc)),
            "background",
        )
        raise
    outcome = TriggerOutcome(result.status, result.message, result=result)
    if result.status == "failed":
        outcome.error = "; ".join(result.errors[:3]) or result.message
    return _logged(vault, outcome, "background")


def _logged(vault: Vault, outcome: TriggerOutcome, trigger: str) -> TriggerOutcome:
    log_outcome(vault, outcome, trigger)
    return outcome


def log_outcome(
    vault: Vault, outcome: TriggerOutcome, trigger: str, now: datetime | None = None
) -> None:
    """One line per outcome in `<machine folder>/cmem.log`: time, outcome, trigger, pass and commit
    or the error. Never raises: a full disk must not turn a pass into a failure."""
    stamp = (now or datetime.now().astimezone()).isoformat(timespec="seconds")
    fields = [stamp, outcome.status, f"trigger={trigger}", f"pid={os.getpid()}"]
    result = outcome.result
    if result is not None and result.pass_id:
        fields.append(f"pass={result.pass_id}")
    if result is not None and result.commit:
        fields.append(f"commit={result.commit[:12]}")
    if result is not None and result.converged:
        fields.append(f"notes={len(result.converged)}")
    text = outcome.error or outcome.reason
    if text:
        fields.append(json.dumps(" ".join(text.split()), ensure_ascii=False))
    line = ("\t".join(fields) + "\n").encode("utf-8")
    path = vault.machine_dir / LOG_FILE
    try:
        make_dirs(vault.machine_dir)
        _trim_log(path)
        fd = open_private(path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(
                fd, line
            )  # one write on an O_APPEND file: concurrent triggers never interleave
        finally:
            os.close(fd)
    except OSError:
        pass


def _trim_log(path: Path) -> None:
    try:
        if path.stat().st_size <= LOG_MAX_BYTES:
            return
        data = path.read_bytes()
    except OSError:
        return
    keep = data[-LOG_MAX_BYTES // 2 :]
    keep = keep[keep.find(b"\n") + 1 :]
    write_atomic(path, keep, mode=0o600)


def read_log(vault: Vault) -> list[str]:
    try:
        return (vault.machine_dir / LOG_FILE).read_text("utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return []


# --- --background -------------------------------------------------------------------------


@dataclass(frozen=True)
class Detached:
    pid: int
    log: Path


def spawn_detached(vault: Vault, converge_args: list[str]) -> Detached:
    """Start `cmem converge ARGS` fully detached and return at once: a new session (no controlling
    terminal, so closing the terminal's SIGHUP never reaches it; not in any shell's job table),
    SIGHUP ignored for good measure, stdin closed, stdout discarded; the child logs its outcome in
    `cmem.log`, and stderr (tracebacks, if any) goes to `background-stderr.log` beside it."""
    make_dirs(vault.machine_dir)
    stderr_path = vault.machine_dir / "background-stderr.log"
    _trim_log(stderr_path)
    argv = [
        sys.executable,
        "-m",
        "cmem",
        "--vault",
        str(vault.root),
        "converge",
        *converge_args,
        "--detached",
        "--quiet",
    ]
    with open(open_private(stderr_path, os.O_WRONLY | os.O_APPEND), "ab") as stderr:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
            close_fds=True,
            cwd=str(vault.root),
        )
    process.returncode = 0  # never waited for: keep Popen.__del__ from warning about it
    return Detached(process.pid, vault.machine_dir / LOG_FILE)


def ignore_hangup() -> None:
    """For the detached child: a hangup from a terminal it no longer has is no reason to stop."""
    try:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    except (ValueError, OSError, AttributeError):
        pass
