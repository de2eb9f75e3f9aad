"""The machine's state folder holds copies of note text (issue 35): after a realistic run of
commands — made with umask 000, so no writer can lean on the user's umask — every folder under
`$XDG_STATE_HOME/cmem/` is 0700 and every file 0600; and a folder an older cmem left open is
tightened whole by the first command that uses it."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from support import TESTS, git, isolated_env
from trigger_helpers import wait_for

FAKE = TESTS / "fake_llm.py"
CMEM = [sys.executable, "-m", "cmem"]
NOTE = "2026-11-30 notes.md"


def _loose():
    os.umask(0)


class Machine:
    """cmem in real processes under a home of its own, with umask 000."""

    def __init__(self, tmp_path: Path):
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.vault = tmp_path / "vault"
        self.env = isolated_env(self.home)

    @property
    def state(self) -> Path:
        return Path(self.env["XDG_STATE_HOME"]) / "cmem"

    def run(self, *args: str, check: bool = True, **extra: str) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [*CMEM, *args],
            capture_output=True,
            text=True,
            env=dict(self.env, **extra),
            stdin=subprocess.DEVNULL,
            preexec_fn=_loose,
            timeout=180,
            cwd=self.home,  # `hook install --agent` writes the project's settings in the cwd
        )
        if check:
            assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
        return done

    def cmem(self, *args: str, **kwargs) -> subprocess.CompletedProcess:
        return self.run("--vault", str(self.vault), *args, **kwargs)


def open_entries(top: Path) -> list[str]:
    """Every folder under `top` that is not 0700 and every file that is not 0600."""
    wrong = []
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            path = Path(folder, name)
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                continue
            want = 0o700 if stat.S_ISDIR(st.st_mode) else 0o600
            if stat.S_IMODE(st.st_mode) != want:
                wrong.append(f"{path.relative_to(top)}: {oct(stat.S_IMODE(st.st_mode))}")
    if stat.S_IMODE(top.stat().st_mode) != 0o700:
        wrong.append(f".: {oct(stat.S_IMODE(top.stat().st_mode))}")
    return wrong


def kinds(top: Path) -> set[str]:
    """What the walk saw, by the name of each entry's top folder or file in the vault folder."""
    names = set()
    for machine in top.iterdir():
        for entry in machine.rglob("*"):
            names.add(entry.relative_to(machine).parts[0])
    return names


def realistic_run(machine: Machine, tmp_path: Path) -> None:
    vault = machine.vault
    machine.run("init", str(vault), "--lang", "en")
    (vault / NOTE).write_text(
        "# notes\n\n- Actually, I prefer Svelte over React.\n- I prefer tea; my api key is "
        "sk-proj-abcdefghijklmnopqrstuvwxyzABCDEF0123456789\n",
        encoding="utf-8",
    )
    machine.cmem("status")
    machine.cmem("scan")
    machine.cmem("scan", "--json")
    machine.cmem("converge", "--engine", "builtin")
    machine.cmem("note", "I decided to use uv from now on")
    # a model pass: its run record (prompt, reply) in the machine folder
    reply = (
        '<convergence>\n<file path="converged/topics/tools.md">\n# Tools\n\n'
        "- Uses uv from now on (source: [[{name}]])\n</file>\n"
        '<converged note="{rel}" into="converged/topics/tools.md"/>\n</convergence>\n'
    )
    capture = next(p for p in vault.glob("*.md") if p.name != NOTE)
    reply = reply.format(name=capture.stem, rel=capture.name)
    machine.cmem("converge", "--llm", f"{sys.executable} {FAKE}", FAKE_LLM_REPLY=reply, check=False)
    machine.cmem("converge", "--emit-prompt")
    machine.cmem("status")
    machine.cmem("status", "--json")
    machine.cmem("context")
    machine.cmem("context", "--json")
    machine.cmem("recall", "svelte")
    machine.cmem("recall", "svelte", "--archive")
    machine.cmem("trace", "svelte")
    machine.cmem("log")
    machine.cmem("doctor")
    machine.cmem("archive", "list")
    machine.cmem("archive", "apply", "--all", "--yes")
    machine.cmem("undo", "--yes")
    machine.cmem("converge", "--propose", "--engine", "builtin", check=False)
    machine.cmem("hook", "install", "--agent", "claude-code", "--yes", check=False)
    # a background pass: its log and its stderr log
    (vault / "2026-12-01 more.md").write_text("- I prefer dark mode, always\n", "utf-8")
    machine.cmem("apply", "--drop", "--yes", check=False)
    machine.cmem("converge", "--background", "--engine", "builtin", "--quiet")
    wait_for(
        lambda: (log := next(machine.state.glob("*/cmem.log"), None)) and log.read_text().strip(),
        what="the background pass's log line",
    )
    # watch: its lock, held while it runs
    watcher = subprocess.Popen(
        [*CMEM, "--vault", str(vault), "watch", "--settle", "1"],
        env=machine.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=_loose,
    )
    try:
        wait_for(lambda: next(machine.state.glob("*/watch.lock"), None), what="the watch lock")
    finally:
        watcher.send_signal(signal.SIGINT)
        try:
            watcher.wait(timeout=30)
        except subprocess.TimeoutExpired:
            watcher.kill()
            watcher.wait()
    # the fast path's stored results, hit a second time; a file changed within the racy window
    # (the watcher's start) is not stored yet, so ask again until one is
    machine.cmem("scan")

    def stored_results() -> bool:
        machine.cmem("status")
        results = machine.state / "results"
        return results.is_dir() and any(results.iterdir())

    wait_for(stored_results, what="a stored status result")
    git(vault, "status")


@pytest.fixture(scope="module")
def after_a_run(tmp_path_factory) -> Machine:
    tmp_path = tmp_path_factory.mktemp("private")
    machine = Machine(tmp_path)
    realistic_run(machine, tmp_path)
    return machine


def test_every_entry_of_the_state_folder_is_private_after_a_realistic_run(after_a_run):
    machine = after_a_run
    assert open_entries(machine.state) == []
    seen = kinds(machine.state)
    # the walk saw what the brief names: caches, run records, journals' folder, locks, logs
    for expected in ("runs", "pass.lock", "cmem.log", "watch.lock", "scan-cache.marshal"):
        assert expected in seen, sorted(seen)
    assert (machine.state / "results").is_dir() and any((machine.state / "results").iterdir())
    # and what is in it does hold the vault's text, as the issue says
    copies = b"".join(
        p.read_bytes() for p in machine.state.rglob("*") if p.is_file() and p.stat().st_size < 5e6
    )
    assert b"Svelte" in copies


def test_a_state_folder_an_older_cmem_left_open_is_tightened_on_first_use(after_a_run):
    machine = after_a_run
    for folder, _dirs, files in os.walk(machine.state):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)
    assert open_entries(machine.state) != []
    machine.cmem("status")  # answered from a stored result, by the light path
    assert open_entries(machine.state) == []


@pytest.mark.parametrize("args", [["status"], ["scan", "--json"], ["recall", "svelte"]])
def test_a_read_command_on_a_fresh_machine_makes_its_folders_private(tmp_path, args):
    machine = Machine(tmp_path)
    machine.run("init", str(machine.vault), "--lang", "en")
    (machine.vault / NOTE).write_text("- I prefer tea\n", "utf-8")
    machine.cmem(*args)
    assert machine.state.is_dir() and open_entries(machine.state) == []
    base = machine.state.parent
    assert stat.S_IMODE(base.stat().st_mode) == 0o700  # $XDG_STATE_HOME made by cmem: 0700 too
