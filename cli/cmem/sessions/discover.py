"""Where the agents keep their own transcripts, for `cmem capture` with no file:

- Claude Code: `~/.claude/projects/<encoded cwd>/<session>.jsonl` (`$CLAUDE_CONFIG_DIR` moves
  `~/.claude`); subagents' `agent-*.jsonl` files are never read.
- Codex: `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl` (`$CODEX_HOME` moves `~/.codex`).
- Gemini CLI: `~/.gemini/tmp/<project>/chats/session-*.jsonl` (v0.39 on) and `session-*.json`
  (before); a subagent's session, in a folder of `chats/` named by its parent, is never read.
"""

from __future__ import annotations

import os
from pathlib import Path


def agent_homes() -> dict[str, Path]:
    home = Path(os.path.expanduser("~"))
    return {
        "claude-code": Path(os.environ.get("CLAUDE_CONFIG_DIR") or home / ".claude"),
        "codex": Path(os.environ.get("CODEX_HOME") or home / ".codex"),
        "gemini": home / ".gemini",
    }


def _files(folder: Path, depth: int, keep) -> list[Path]:
    """Files `depth` folders below `folder` that `keep(name)` accepts (no links followed)."""
    found: list[Path] = []
    stack = [(folder, 0)]
    while stack:
        current, level = stack.pop()
        try:
            with os.scandir(current) as entries:
                listed = list(entries)
        except OSError:
            continue
        for entry in listed:
            if level == depth:
                if keep(entry.name) and entry.is_file(follow_symlinks=False):
                    found.append(Path(entry.path))
            elif entry.is_dir(follow_symlinks=False):
                stack.append((Path(entry.path), level + 1))
    return found


def transcripts(
    agents: tuple[str, ...] | None = None, newer_than: float | None = None
) -> list[tuple[Path, str]]:
    """(file, agent) of every transcript in the agents' folders, modified after `newer_than`
    (epoch seconds), oldest first."""
    homes = agent_homes()
    found: list[tuple[Path, str]] = []
    wanted = agents or ("claude-code", "codex", "gemini")
    if "claude-code" in wanted:
        keep = lambda name: name.endswith(".jsonl") and not name.startswith("agent-")
        found += [(p, "claude-code") for p in _files(homes["claude-code"] / "projects", 1, keep)]
    if "codex" in wanted:
        keep = lambda name: name.startswith("rollout-") and name.endswith(".jsonl")
        found += [(p, "codex") for p in _files(homes["codex"] / "sessions", 3, keep)]
    if "gemini" in wanted:
        chats = [
            (p, "gemini")
            for p in _files(
                homes["gemini"] / "tmp",
                2,
                lambda n: n.startswith("session-") and n.endswith((".json", ".jsonl")),
            )
            if p.parent.name == "chats"
        ]
        found += chats
    stamped = []
    for path, agent in found:
        try:
            mtime = path.stat().st_mtime
        except OSError:
            continue
        if newer_than is None or mtime >= newer_than:
            stamped.append((mtime, str(path), path, agent))
    return [(path, agent) for _, _, path, agent in sorted(stamped)]
