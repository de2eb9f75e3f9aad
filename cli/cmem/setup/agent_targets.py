"""The agents whose hooks cmem installs, one entry each: where their settings live, which of
their events cmem answers, with which matcher and time limit (SPEC §14). All three keep hooks in
a JSON object of the same shape — `{"hooks": {"<Event>": [{"matcher": …, "hooks": [{"type":
"command", "command": …, "timeout": …}]}]}}` — which `agent_hooks.py` edits for any of them.

- Claude Code: the project's `.claude/settings.json`. SessionEnd shares 1.5 s among its hooks
  unless a hook declares a `timeout` (seconds); cmem's return in milliseconds and declare one.
- Codex: `~/.codex/hooks.json`, or a project's `.codex/hooks.json`; SessionEnd is capped at 3 s.
  Codex runs a new hook only once the user has reviewed and trusted it (in `/hooks`).
- Gemini CLI: `~/.gemini/settings.json`, or a project's `.gemini/settings.json`; `timeout` in
  milliseconds, a `name` per hook, JSON only on stdout; its SessionEnd is not waited for. It has
  no Stop event with `stop_hook_active`, so cmem asks nothing there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# cmem's own names for what it does at each agent event (`cmem hook run EVENT`)
EVENTS = ("session-start", "session-end", "pre-compact", "stop")


@dataclass(frozen=True)
class HookEvent:
    agent_event: str  # the agent's name for it: SessionEnd
    ours: str  # one of EVENTS
    matcher: str | None
    timeout: int  # in the agent's unit


@dataclass(frozen=True)
class AgentTarget:
    name: str
    label: str
    events: tuple[HookEvent, ...]
    project_file: str  # the settings file inside a project folder
    user_file: str | None  # under the home folder; None: the project's only
    named_hooks: bool = False  # each hook carries a "name" (Gemini)
    note: str | None = None  # said when the hook is installed

    def settings_path(self, project: Path | None) -> Path:
        """The file a hook goes to: the project's, else the user's (`--project` chooses)."""
        if project is not None or self.user_file is None:
            return Path(project if project is not None else Path.cwd()) / self.project_file
        return Path(os.path.expanduser("~")) / self.user_file

    def candidate_paths(self, project: Path | None) -> list[Path]:
        """Every file `hook status` looks in: the project's, and the user's."""
        paths = [Path(project if project is not None else Path.cwd()) / self.project_file]
        if self.user_file is not None:
            paths.append(Path(os.path.expanduser("~")) / self.user_file)
        return list(dict.fromkeys(paths))


_START_SOURCES = "startup|resume|clear|compact"

TARGETS: dict[str, AgentTarget] = {
    "claude-code": AgentTarget(
        "claude-code",
        "Claude Code",
        (
            HookEvent("SessionStart", "session-start", _START_SOURCES, 10),
            HookEvent("SessionEnd", "session-end", None, 5),
            HookEvent("PreCompact", "pre-compact", None, 5),
            HookEvent("Stop", "stop", None, 10),
        ),
        ".claude/settings.json",
        None,
    ),
    "codex": AgentTarget(
        "codex",
        "Codex",
        (
            HookEvent("SessionStart", "session-start", _START_SOURCES, 10),
            HookEvent("SessionEnd", "session-end", None, 3),
            HookEvent("PreCompact", "pre-compact", None, 5),
            HookEvent("Stop", "stop", None, 10),
        ),
        ".codex/hooks.json",
        ".codex/hooks.json",
        note="Codex runs a new or changed hook only after you trust it once: start codex and review it in /hooks",
    ),
    "gemini": AgentTarget(
        "gemini",
        "Gemini CLI",
        (
            HookEvent("SessionStart", "session-start", None, 10_000),
            HookEvent("SessionEnd", "session-end", None, 5_000),
            HookEvent("PreCompress", "pre-compact", None, 5_000),
        ),
        ".gemini/settings.json",
        ".gemini/settings.json",
        named_hooks=True,
        note="Gemini CLI runs hooks only where its settings enable them (hooksConfig.enabled in recent versions); cmem leaves that setting to you",
    ),
}
