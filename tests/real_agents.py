"""The real agent CLIs — Claude Code, Codex, Gemini CLI — as the tests run them: the npm packages
pinned in `tests/agents/package.json`, installed by `.ci/run` (or by hand, see
docs/development.md) into a folder named by `$CMEM_TEST_AGENTS` (its `node_modules/.bin`), run
offline against the API stand-in of `tests/agent_api.py` under the test's own HOME.

A test that needs one and finds it missing is skipped on a developer's machine, and fails in CI
(`$CI` set): there, `.ci/run` must have installed them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BIN_NAMES = {"claude-code": "claude", "codex": "codex", "gemini": "gemini"}
API_KEY = "sk-standin-not-a-real-key"
# the model the agents' tests script: it quotes what cmem asks of it (tests/quoting_model.py)
QUOTING_MODEL = [sys.executable, str(Path(__file__).resolve().parent / "quoting_model.py")]
PROFILE = "# Profile\n\n- Prefers answers in short bullet points (source: [[2026-11-01 notes]])\n"


def memory_vault(tmp_path: Path, notes: dict[str, str] | None = None) -> Path:
    """A committed vault whose profile holds one preference, and these notes beside it."""
    from cmem.setup.init import init_vault
    from support import git

    root = tmp_path / "vault"
    init_vault(root, "en")
    (root / "converged/core/profile.md").write_text(PROFILE, "utf-8")
    (root / "2026-11-01 notes.md").write_text("Short bullet points please.\n", "utf-8")
    for name, text in (notes or {}).items():
        (root / name).write_text(text, "utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "memory")
    return root


def install_hooks(root: Path, agent: str, *more: str, env: dict | None = None) -> None:
    """`cmem hook install --agent AGENT --yes` with these further arguments."""
    from support import run_cmem

    done = run_cmem(
        "--vault", str(root), "hook", "install", "--agent", agent, "--yes", *more, env=env
    )
    assert done.returncode == 0, done.stderr


def session_notes(root: Path) -> list[Path]:
    return sorted((root / "sessions").glob("*.md")) if (root / "sessions").is_dir() else []


def agent_bin(agent: str) -> Path:
    """The agent's CLI, or skip (fail in CI) when it is not installed."""
    folder = os.environ.get("CMEM_TEST_AGENTS")
    path = Path(folder) / BIN_NAMES[agent] if folder else None
    if path is None or not path.exists():
        message = (
            f"the {agent} CLI is not installed: set CMEM_TEST_AGENTS to the node_modules/.bin of "
            "`npm ci --prefix DIR` run on a copy of tests/agents/package*.json"
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def agent_env(agent: str, api_url: str, home: Path, **extra: str) -> dict[str, str]:
    """The environment the agent runs in: the test's HOME, the stand-in as its API, its own
    telemetry and update checks off (the machine has no network), and the agent's CLI on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CMEM_")}
    env["HOME"] = str(home)
    env["PATH"] = f"{agent_bin(agent).parent}{os.pathsep}{env.get('PATH', '')}"
    if agent == "claude-code":
        env.update(
            ANTHROPIC_BASE_URL=api_url,
            ANTHROPIC_API_KEY=API_KEY,
            DISABLE_AUTOUPDATER="1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_TELEMETRY="1",
        )
    elif agent == "codex":
        env["STANDIN_API_KEY"] = API_KEY
        _codex_config(home, api_url)
    else:
        env.update(
            GOOGLE_GEMINI_BASE_URL=api_url,
            GEMINI_API_KEY=API_KEY,
            GEMINI_CLI_TRUST_WORKSPACE="true",
        )
        _gemini_settings(home)
    env.update(extra)
    return env


def _codex_config(home: Path, api_url: str) -> None:
    """Codex reads its model provider from ~/.codex/config.toml: the stand-in, speaking the
    Responses API."""
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        'model = "gpt-6-luna"\nmodel_provider = "standin"\n\n'
        "[model_providers.standin]\n"
        'name = "standin"\n'
        f'base_url = "{api_url}/v1"\n'
        'wire_api = "responses"\n'
        'env_key = "STANDIN_API_KEY"\n',
        "utf-8",
    )


def _gemini_settings(home: Path) -> None:
    """Gemini CLI asks how to sign in unless its settings name the API-key method; cmem's hooks
    merge into the same file later, so it is written only when missing."""
    settings = home / ".gemini" / "settings.json"
    if settings.exists():
        return
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(
        json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}, indent=2), "utf-8"
    )


def run_agent(
    agent: str,
    args: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    stdin: str | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess:
    """One non-interactive run of the agent's CLI; it ends on its own well within `timeout`."""
    return subprocess.run(
        [str(agent_bin(agent)), *args],
        cwd=cwd,
        env=env,
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def sent_texts(requests: list[dict]) -> str:
    """Everything the model was sent, as one text (to look for what a hook injected)."""
    return "\n".join(json.dumps(request["body"], ensure_ascii=False) for request in requests)


def interactive_session(
    agent: str,
    args: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    typed: list[str],
    done,
    timeout: float = 120,
) -> str:
    """The agent's interactive UI in a detached tmux session (what some features need: Gemini CLI
    expands a custom command only there): wait for its prompt, type each line, wait until
    `done()` holds; the screen's last text. The session is killed at the end, whatever happens."""
    import shutil
    import time
    import uuid

    if shutil.which("tmux") is None:
        message = "tmux is not installed: the interactive agent tests need it"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    name = f"cmem-{uuid.uuid4().hex[:8]}"
    socket = ["tmux", "-L", name]  # a server of its own: never the user's sessions
    import shlex

    # the pane outlives the agent, so a crash leaves its words and exit code on the screen
    launch = shlex.join([str(agent_bin(agent)), *args]) + '; echo "[agent exited: $?]"; sleep 600'
    # a CI variable makes Gemini CLI (is-in-ci) run once without its UI and exit: CI sets one
    exports = [
        f"{key}={value}"
        for key, value in env.items()
        if "\n" not in value
        and key not in ("CI", "CONTINUOUS_INTEGRATION")
        and not key.startswith("CI_")
    ]
    subprocess.run(
        [*socket, "new-session", "-d", "-s", name, "-x", "200", "-y", "50", "-c", str(cwd),
         "env", "-i", *exports, "sh", "-c", launch],
        check=True,
    )  # fmt: skip
    deadline = time.monotonic() + timeout

    def screen() -> str:
        shown = subprocess.run(
            [*socket, "capture-pane", "-p", "-t", name], capture_output=True, text=True
        )
        return shown.stdout

    try:
        while "Type your message" not in screen() and "> " not in screen()[-400:]:
            if time.monotonic() > deadline or "[agent exited:" in screen():
                raise AssertionError(f"{agent} never showed its prompt:\n{screen()}")
            time.sleep(0.5)
        for line in typed:
            subprocess.run([*socket, "send-keys", "-t", name, "-l", line], check=True)
            time.sleep(1)
            subprocess.run([*socket, "send-keys", "-t", name, "Enter"], check=True)
        pressed = time.monotonic()
        while not done():
            if time.monotonic() > deadline or "[agent exited:" in screen():
                raise AssertionError(f"{agent} did not finish in {timeout:g} s:\n{screen()}")
            if typed and time.monotonic() - pressed > 5 and f"* {typed[-1]}" in screen():
                # a completion menu took the first Enter: the line still waits in the input
                subprocess.run([*socket, "send-keys", "-t", name, "Enter"], check=True)
                pressed = time.monotonic()
            time.sleep(0.5)
        return screen()
    finally:
        subprocess.run([*socket, "kill-server"], capture_output=True)
