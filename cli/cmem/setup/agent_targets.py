"""The agents whose hooks cmem installs, one entry each: where their settings live, which of
their events cmem answers, with which matcher and time limit (docs/design.md §14). All three keep
hooks in a JSON object of the same shape — `{"hooks": {"<Event>": [{"matcher": …, "hooks": [{"type":
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
from typing import Literal

# Which settings file: the project's own kept out of git, the user's, or the project's committed one.
Scope = Literal["local", "user", "shared"]

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
    local_file: str | None = None  # a project's settings file kept out of git (Claude Code)
    # The in-session pass as the agent's own surface (docs/design.md §15): a skill's SKILL.md or a
    # custom command's file, the same relative path under the home folder and under a project.
    surface_file: str = ""
    surface_form: Literal["skill", "gemini-command"] = "skill"
    surface_call: str = ""  # how the user calls it in the agent
    # The agent's headless CLI as the model of unattended passes: its program, then its flags
    # (each checked against that CLI's --help; tests/agents/ runs them for real).
    model_command: tuple[str, ...] = ()
    # Events this agent answers only from a version on, and what captures a session before it.
    events_since: tuple[tuple[str, tuple[int, ...], str], ...] = ()

    def default_scope(self, project: Path | None) -> Scope:
        """Where a hook goes when no `--user`/`--shared` is given: a person's own settings — a
        project's local file where the agent has one, else the user's, else (`--project` with an
        agent that has no local file) the project's."""
        if self.local_file is not None:
            return "local"
        return "shared" if project is not None or self.user_file is None else "user"

    def settings_path(self, project: Path | None, scope: Scope | None = None) -> Path:
        """The settings file of `scope` (default: `default_scope`)."""
        scope = scope or self.default_scope(project)
        folder = Path(project if project is not None else Path.cwd())
        if scope == "user" and self.user_file is not None:
            return Path(os.path.expanduser("~")) / self.user_file
        if scope == "local" and self.local_file is not None:
            return folder / self.local_file
        return folder / self.project_file

    def candidate_paths(self, project: Path | None) -> list[Path]:
        """Every file `hook status` looks in: the project's local and shared files, the user's."""
        scopes: tuple[Scope, ...] = ("local", "shared", "user")
        return list(dict.fromkeys(self.settings_path(project, scope) for scope in scopes))

    def surface_path(self, project: Path | None, scope: Scope) -> Path:
        """The surface beside hooks of `scope`: a project's for hooks committed with it, else the
        user's (no agent has a project surface kept out of git)."""
        if scope == "shared":
            return Path(project if project is not None else Path.cwd()) / self.surface_file
        return Path(os.path.expanduser("~")) / self.surface_file


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
        ".claude/settings.json",
        local_file=".claude/settings.local.json",
        surface_file=".claude/skills/cmem-converge/SKILL.md",
        surface_call="/cmem-converge, or ask it to converge your memory",
        model_command=(
            "claude",
            "-p",
            "--model",
            "haiku",
            "--tools",
            "",
            "--no-session-persistence",
            "--strict-mcp-config",
            "--disable-slash-commands",
            "--max-budget-usd",
            "1",
            "--system-prompt",
            "You are the convergence pass of cmem. Answer the prompt as it asks: one <convergence> element, nothing else.",
            "--output-format",
            "text",
        ),
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
        events_since=(
            (
                "SessionEnd",
                (0, 145),
                "sessions are captured only at PreCompact (when the context is compacted), or by "
                "`cmem capture --agent codex` (by hand or from a timer); update Codex to capture "
                "every session as it ends",
            ),
        ),
        surface_file=".agents/skills/cmem-converge/SKILL.md",
        surface_call="$cmem-converge, or ask it to converge your memory",
        model_command=(
            "codex",
            "exec",
            "--ephemeral",
            "--skip-git-repo-check",
            "--sandbox",
            "read-only",
            "--color",
            "never",
            "-m",
            "gpt-6-luna",
            "-",
        ),
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
        surface_file=".gemini/commands/cmem-converge.toml",
        surface_form="gemini-command",
        surface_call="/cmem-converge",
        model_command=(
            "gemini",
            "-m",
            "flash",
            "--approval-mode",
            "plan",
            "--output-format",
            "text",
            "-p",
            "Answer the prompt above as it asks: one <convergence> element.",
        ),
    ),
}
