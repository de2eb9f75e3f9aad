"""What an agent's hook does once it has returned (docs/design.md §14): the detached work of
SessionEnd and PreCompact — capture the session's transcript, then a pass if one is due — and the
Stop hook's rule for asking whether to converge.

The session-end work runs in a process of its own, started by `cmem hook run session-end`
(`cmem/hook_command.py`), which has answered the agent in milliseconds. Its capture waits for a
running pass rather than give up, and each outcome is recorded for `cmem status`
(`triggers/hook_record.py`). A capture killed midway loses nothing: its step's journal is
finished by the next command, and the next capture reads the transcript again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from cmem.triggers import hook_record
from cmem.vault.layers import Vault

CAPTURE_WAIT_SECONDS = 600.0  # behind a running pass
FALLBACK_SINCE = timedelta(days=1)  # a hook that named no transcript: that agent's recent ones
STOP_MIN_CALLS = 8
STOP_MIN_TOOLS = 2
STOP_TAIL_BYTES = 2_000_000  # the end of the transcript, where the last turn is
ASKED_KEPT = 200
WARM_SECONDS = 10.0  # of a session end's work: a big vault's first reading goes on at the next
WARMING = "warming"
WARMING_REASON = (
    "cmem is reading this vault for the first time, a share at each session's end; the pass "
    "after a session waits until it is done (`cmem converge` runs one now)"
)


@dataclass
class SessionWork:
    agent: str
    event: str
    transcript: str | None
    session_id: str | None
    cwd: str | None


def capture_session(vault: Vault, work: SessionWork) -> object | None:
    """Capture the session a hook named; record what it captured or why it failed."""
    from cmem.sessions.capture import capture_transcripts
    from cmem.sessions.formats import FORMATS

    machine = str(vault.machine_dir)
    record: dict[str, object] = {
        "time": hook_record.now_text(),
        "event": work.event,
        "session": work.session_id,
    }
    fmt = work.agent if work.agent in FORMATS else None
    try:
        if work.transcript:
            result = capture_transcripts(
                vault, [Path(work.transcript)], fmt, cwd=work.cwd, wait_seconds=CAPTURE_WAIT_SECONDS
            )
        else:
            result = capture_transcripts(
                vault, None, fmt, FALLBACK_SINCE, cwd=work.cwd, wait_seconds=CAPTURE_WAIT_SECONDS
            )
    except Exception as exc:  # recorded, then raised for the worker's stderr log
        from cmem.errors import failure_sentence

        failed = failure_sentence(exc)
        record.update(
            status="failed", error=failed[0] if failed else f"{type(exc).__name__}: {exc}"
        )
        hook_record.write_record(machine, work.agent, "capture", record)
        if failed is None:
            raise
        return None
    record.update(
        status=result.status,
        notes=[captured.note for captured in result.sessions],
        turns=result.added,
        commit=result.commit,
        error=None,
    )
    hook_record.write_record(machine, work.agent, "capture", record)
    return result


def converge_after(vault: Vault, agent: str, warm_seconds: float = WARM_SECONDS) -> None:
    """`converge --if-due`, unattended, once what a pass reads of the vault is kept (`warm_up`,
    for at most `warm_seconds`); its outcome in cmem.log and in the hook's record."""
    from cmem.converge.pipeline import PassOptions
    from cmem.triggers.if_due import converge_if_due

    record: dict[str, object] = {"time": hook_record.now_text(), "error": None, "commit": None}
    if not warm_up(vault, warm_seconds):
        record.update(status=WARMING, reason=WARMING_REASON)
    else:
        outcome = converge_if_due(vault, PassOptions(), trigger=f"agent/{agent}")
        record.update(
            status=outcome.status,
            reason=outcome.reason or None,
            error=outcome.error,
            commit=getattr(outcome.result, "commit", None),
        )
    hook_record.write_record(str(vault.machine_dir), agent, "pass", record)


def warm_up(vault: Vault, seconds: float) -> bool:
    """What a pass reads of every note and memory file — the scan's entries; when a pass is
    due, the builtin engine's words and the prompt's topic terms — made and kept for at most
    `seconds`, resumed by the next call: on a big vault just adopted, a first pass read for
    minutes, which no session's end should cost. Whether all is kept (then a pass, or the due
    check, reads only what changed)."""
    import time

    from cmem.converge.builtin.working_copy import warm_words
    from cmem.converge.memory.files import read_originals
    from cmem.converge.prompt import warm_terms
    from cmem.scan import scan_cache
    from cmem.triggers.if_due import due_now

    deadline = time.monotonic() + seconds
    if not scan_cache.warm(vault, deadline):
        return False
    if not due_now(vault).due:
        return True  # no pass to read for: the memory files wait for one
    texts, _ = read_originals(vault)
    done = warm_words(vault, texts, deadline)
    return warm_terms(vault, texts, deadline) and done


# --- Stop: ask once per session after a complex turn -----------------------------------------


def last_turn_tools(transcript: Path, agent: str | None) -> list[str]:
    """The tools the agent called in its last turn (since the user last spoke), one per call."""
    from cmem.sessions.formats import read_transcript

    size = transcript.stat().st_size
    with open(transcript, "rb") as handle:
        if size > STOP_TAIL_BYTES:
            handle.seek(size - STOP_TAIL_BYTES)
            data = handle.read()
            data = data[data.find(b"\n") + 1 :]  # from the first whole line
        else:
            data = handle.read()
    sessions, _ = read_transcript(transcript, agent, data=data)
    for session in sessions[-1:]:
        for turn in reversed(session.turns):
            if turn.role == "user":
                return []
            return list(turn.tools)
    return []


def stop_question(vault: Vault, agent: str, payload: dict, command: str) -> str | None:
    """The reason a Stop hook gives to make the agent ask whether to converge, or None: only
    after a turn of STOP_MIN_CALLS tool calls across STOP_MIN_TOOLS tools, once per session,
    never while the agent is already continuing because of a Stop hook."""
    if payload.get("stop_hook_active") is True:
        return None
    transcript = hook_record.text_field(payload, "transcript_path")
    if not transcript:
        return None
    from cmem.sessions.formats import FORMATS

    try:
        tools = last_turn_tools(Path(transcript), agent if agent in FORMATS else None)
    except Exception:  # an unreadable or foreign transcript: nothing to ask
        return None
    if len(tools) < STOP_MIN_CALLS or len(set(tools)) < STOP_MIN_TOOLS:
        return None
    machine = str(vault.machine_dir)
    session = hook_record.text_field(payload, "session_id") or transcript
    asked = hook_record.read_record(machine, agent, "asked") or {}
    if session in asked:
        return None
    asked[session] = hook_record.now_text()
    kept = dict(sorted(asked.items(), key=lambda item: item[1])[-ASKED_KEPT:])
    hook_record.write_record(machine, agent, "asked", kept)
    return (
        f"cmem: this turn made {len(tools)} tool calls across {len(set(tools))} tools. Before you "
        "finish, ask the user whether to converge their long-term memory now. Only if they agree, "
        f"do the pass yourself, as its model: run `{command} converge --as-model` and follow what "
        "it prints (you answer the prompt it holds, cmem checks and applies your reply), then show "
        "them the report. (cmem asks this once per session.)"
    )
