"""What each agent's hook last did, per machine (`<machine folder>/hooks/`), for `cmem status`: a
hook that silently stops working is what users of memory tools report most (docs/design.md §14).

One small JSON file per agent and kind, each written whole by one kind of writer, so a hook that
fires while the last session's capture is still running never loses the other's record:

- `<agent>.fired.json`: the last event the hook answered (time, event, session, project);
- `<agent>.capture.json`: the last capture it started (time, status, notes, turns, error);
- `<agent>.pass.json`: the pass that followed it (time, status, reason or error);
- `<agent>.asked.json`: the sessions the Stop hook already asked in (once per session).

Also here, because the hook needs it before anything else: reading the hook's JSON from stdin
with a time bound (an agent may leave stdin open).
"""

from __future__ import annotations

import json
import os
import time

FOLDER = "hooks"
KINDS = ("fired", "capture", "pass", "asked")
AGENT_NAMES = ("claude-code", "codex", "gemini")
STDIN_SECONDS = 0.15  # the whole JSON arrives at once; this only bounds an agent that never closes


def record_path(machine_dir: str, agent: str, kind: str) -> str:
    return os.path.join(machine_dir, FOLDER, f"{agent}.{kind}.json")


def record_files(machine_dir: str) -> list[str]:
    """Every record `cmem status` shows (present or not), for its stored result's key."""
    return [
        record_path(machine_dir, agent, kind)
        for agent in AGENT_NAMES
        for kind in ("fired", "capture", "pass")
    ]


def read_record(machine_dir: str, agent: str, kind: str) -> dict | None:
    try:
        with open(record_path(machine_dir, agent, kind), encoding="utf-8") as handle:
            data = json.loads(handle.read())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_record(machine_dir: str, agent: str, kind: str, data: dict) -> None:
    """Replaced whole (a temp file renamed over it); a folder that cannot be written costs only
    the record, never the agent's session."""
    from cmem.cache_store import write_cache

    folder = os.path.join(machine_dir, FOLDER)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        return
    text = json.dumps(data, ensure_ascii=False, indent=1) + "\n"
    data_bytes = text.encode("utf-8", "surrogateescape")
    write_cache(record_path(machine_dir, agent, kind), data_bytes, mode=0o600)


def now_text() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def read_payload(fd: int = 0, seconds: float = STDIN_SECONDS) -> dict:
    """The hook's JSON object from `fd`, read until it parses, stdin closes or `seconds` pass;
    `{}` for anything else (no stdin, a terminal, not JSON): every field is optional."""
    try:
        if os.isatty(fd):
            return {}
    except OSError:
        return {}
    import select

    deadline = time.monotonic() + seconds
    data = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        try:
            ready, _, _ = select.select([fd], [], [], left)
        except (OSError, ValueError):
            break
        if not ready:
            break
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
        if data.rstrip().endswith(b"}"):
            parsed = _parse(data)
            if parsed is not None:
                return parsed
    return _parse(data) or {}


def _parse(data: bytes) -> dict | None:
    try:
        value = json.loads(data.decode("utf-8", errors="replace"))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def text_field(payload: dict, *names: str) -> str | None:
    """The first of `names` the payload holds as a non-empty string."""
    for name in names:
        value = payload.get(name)
        if isinstance(value, str) and value.strip():
            return value
    return None


# --- for `cmem status` ------------------------------------------------------------------------

INSTALLS = "agent-hooks.json"  # setup/hooks.py's backups: one entry per settings file installed
FAILED = ("failed", "stopped")


def _age(stamp: object, now: float) -> int | None:
    from datetime import datetime

    if not isinstance(stamp, str):
        return None
    try:
        return round(now - datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S%z").timestamp())
    except ValueError:
        return None


def installed_files(machine_dir: str) -> dict[str, list[str]]:
    """agent → the settings files its hooks were installed in, from this machine."""
    try:
        with open(os.path.join(machine_dir, INSTALLS), encoding="utf-8") as handle:
            data = json.loads(handle.read())
    except (OSError, ValueError):
        return {}
    found: dict[str, list[str]] = {}
    for path, entry in data.items() if isinstance(data, dict) else ():
        if isinstance(entry, dict) and entry.get("agent") in AGENT_NAMES:
            found.setdefault(entry["agent"], []).append(path)
    return found


def hooks_status(machine_dir: str, now: float) -> list[dict]:
    """Per agent whose hooks were installed or have fired: when it last fired, what its last
    capture did, how the pass after it ended, and whether either failed. Read at print time
    (ages move with the clock, and every hook rewrites its record): no stored status keys it."""
    installed = installed_files(machine_dir)
    out = []
    for agent in AGENT_NAMES:
        fired, capture, passed = (read_record(machine_dir, agent, kind) for kind in KINDS[:3])
        if not (installed.get(agent) or fired or capture or passed):
            continue
        for record in (fired, capture, passed):
            if record is not None:
                record["age_seconds"] = _age(record.get("time"), now)
        problem = None
        if capture and capture.get("status") == "failed":
            problem = f"the last capture failed: {capture.get('error')}"
        elif passed and passed.get("status") in FAILED:
            problem = (
                f"the last pass {passed['status']}: {passed.get('error') or passed.get('reason')}"
            )
        elif fired and fired.get("error"):
            problem = f"the last {fired.get('event')} hook failed: {fired['error']}"
        out.append(
            {
                "agent": agent,
                "installed": sorted(installed.get(agent, [])),
                "last_fired": fired,
                "last_capture": capture,
                "last_pass": passed,
                "failing": problem is not None,
                "problem": problem,
            }
        )
    return out
