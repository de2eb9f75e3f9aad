"""Every writer of a note takes one lock (issue 43): parallel `cmem note` processes, MCP `note`
calls and a step that moves or writes notes never lose a line another one appended."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from support import CMEM, git_init

WRITERS = 12  # `cmem note` processes started at once
MCP_CLIENTS = 2
MCP_CALLS = 3  # note calls per MCP client


def _capture_notes(root: Path) -> str:
    """Every root note's text (a round that crosses midnight writes two days' notes)."""
    return "".join(path.read_text("utf-8") for path in sorted(root.glob("*.md")))


def _vault(root: Path) -> Path:
    (root / ".cmem").mkdir(parents=True)
    (root / ".cmem" / "config.yaml").write_text("language: en\n", encoding="utf-8")
    for folder in ("converged/core", "converged/topics", "archive"):
        (root / folder).mkdir(parents=True)
    git_init(root)
    return root


MCP_CLIENT = textwrap.dedent(
    """
    import os, sys, time
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    vault, go, ready, prefix, calls = sys.argv[1:6]
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cmem", "mcp", "--vault", vault], env=dict(os.environ)
    )

    async def main():
        async with stdio_client(params, errlog=sys.stderr) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                open(ready, "w").close()
                while not os.path.exists(go):
                    time.sleep(0.005)
                for index in range(int(calls)):
                    result = await session.call_tool("note", {"text": f"{prefix}{index}"})
                    print(result.content[0].text)

    anyio.run(main)
    """
)


def _start_mcp_clients(root: Path, work: Path, env: dict) -> list[subprocess.Popen]:
    clients = []
    for client in range(MCP_CLIENTS):
        ready = work / f"ready-{client}"
        clients.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    MCP_CLIENT,
                    str(root),
                    str(work / "go"),
                    str(ready),
                    f"mcp line {client}-",
                    str(MCP_CALLS),
                ],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    return clients


def _wait_ready(work: Path, clients: list[subprocess.Popen]) -> None:
    for client, process in enumerate(clients):
        while not (work / f"ready-{client}").exists():
            if process.poll() is not None:
                raise AssertionError(process.stderr.read() if process.stderr else "")
            time.sleep(0.01)  # the server starting: a few seconds at most


@pytest.mark.parametrize("round_", range(3))
def test_parallel_note_processes_and_mcp_calls_keep_every_line(tmp_path, round_):
    pytest.importorskip("mcp")
    root = _vault(tmp_path / "vault")
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CMEM_")}
    clients = _start_mcp_clients(root, work, env)
    _wait_ready(work, clients)
    (work / "go").touch()
    writers = [
        subprocess.Popen(
            [*CMEM, "note", f"cli line {index}", "--vault", str(root)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        for index in range(WRITERS)
    ]
    for process in writers + clients:
        out, err = process.communicate(timeout=180)
        assert process.returncode == 0, out + err
    text = _capture_notes(root)
    expected = [f"cli line {i}" for i in range(WRITERS)] + [
        f"mcp line {c}-{i}" for c in range(MCP_CLIENTS) for i in range(MCP_CALLS)
    ]
    lost = [line for line in expected if text.count(f" {line}\n") != 1]
    assert not lost, f"lines lost or doubled: {lost}\n{text}"


def test_a_step_holds_the_notes_lock_while_it_moves_or_writes_a_note(make_vault, monkeypatch):
    from cmem.steps import changes as step_changes
    from cmem.steps.changes import ChangeSet, apply_changes
    from cmem.steps.lock import held_elsewhere, notes_lock_path
    from cmem.vault.layers import open_vault

    vault = open_vault(make_vault({"a.md": "- a line\n"}, git=True))
    seen: dict[str, bool] = {}
    real_put = step_changes.put

    def watching_put(vault_, rel, data, *args, **kwargs):
        seen[rel] = held_elsewhere(notes_lock_path(vault.machine_dir))
        return real_put(vault_, rel, data, *args, **kwargs)

    monkeypatch.setattr(step_changes, "put", watching_put)
    changes = ChangeSet()
    changes.move("a.md", "archive/2026-11/a.md", b"- a line\n")
    changes.write("b.md", "- a new note\n", None)
    apply_changes(vault, changes)
    assert seen == {"archive/2026-11/a.md": True, "a.md": True, "b.md": True}
    memory = ChangeSet()
    memory.write("converged/core/profile.md", "# Profile\n", None)
    seen.clear()
    apply_changes(vault, memory)  # no note among its changes: `cmem note` never waits for it
    assert seen == {"converged/core/profile.md": False}


def test_a_file_created_while_a_step_writes_it_is_never_replaced(make_vault, monkeypatch):
    """A step that creates a file (a session note, a moved note) finds one made in the instant
    after its last check, by an editor or a sync client: theirs stays, the step writes nothing."""
    from cmem.steps import changes as step_changes
    from cmem.steps.changes import ChangeSet, SecondWriter, apply_changes
    from cmem.vault.layers import open_vault

    root = make_vault({"a.md": "- a line\n"}, git=True)
    vault = open_vault(root)
    real_check = step_changes._check
    calls = {"n": 0}

    def check_then_another_writer(vault_, change):
        real_check(vault_, change)
        calls["n"] += 1
        if calls["n"] == 2:  # the check just before the rename: the other writer comes after it
            (root / change.rel).write_text("- theirs\n", encoding="utf-8")

    monkeypatch.setattr(step_changes, "_check", check_then_another_writer)
    changes = ChangeSet()
    changes.write("sessions-note.md", "- ours\n", None)
    with pytest.raises(SecondWriter, match=r"sessions-note\.md was created on disk"):
        apply_changes(vault, changes)
    assert (root / "sessions-note.md").read_text("utf-8") == "- theirs\n"
    assert not list(root.glob(".*.cmem-tmp"))


def test_a_note_is_taken_while_a_pass_holds_the_vault_lock(tmp_path):
    """Appending a line is not a pass: a pass thinking for minutes holds the vault lock, and
    `cmem note` neither waits for it nor fails."""
    from cmem.steps.lock import vault_lock
    from cmem.vault.layers import open_vault
    from support import run_cmem

    root = _vault(tmp_path / "vault")
    with vault_lock(open_vault(root).machine_dir, "converge"):
        result = run_cmem("note", "taken during a pass", "--vault", str(root))
    assert result.returncode == 0, result.stderr
    assert " taken during a pass\n" in _capture_notes(root)
