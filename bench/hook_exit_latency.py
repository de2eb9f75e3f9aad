#!/usr/bin/env python3
"""The exit latency the session-end hook adds to a shell (issue 5, research/reliability.md §4).

    python bench/hook_exit_latency.py [--runs 50] [--shells bash,zsh,fish] [--cmem PATH]

For each shell found, it starts the shell interactively on a pseudo-terminal (as a terminal
emulator would, zsh-bench style), waits for its prompt, types `exit`, and times from the keystroke
to the moment the shell process is reaped. Runs alternate between a home whose rc file holds only a
prompt and a home whose rc file also holds the installed cmem block (`cmem hook install`), so both
see the same machine noise; each pair gives one difference. After each run with the hook it waits
until the background due check has logged its outcome, so that process never competes with the
next measurement. The vault has nothing pending: every check ends "not-due", as most exits do.

It prints the median and p95 of each side and of the paired differences (the added latency).
Everything runs under a temporary HOME and XDG folders; nothing outside them is touched.
"""

from __future__ import annotations

import argparse
import os
import pty
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROMPT = "READY-7f3a> "
PROMPT_LINES = {
    "bash": f"PS1='{PROMPT}'\n",
    "zsh": f"PROMPT='{PROMPT}'\nunsetopt PROMPT_SP\n",
    "fish": f"function fish_prompt; printf '%s' '{PROMPT}'; end\nfunction fish_greeting; end\n",
}
RC = {"bash": ".bashrc", "zsh": ".zshrc", "fish": ".config/fish/config.fish"}


def read_until(fd: int, marker: bytes, timeout: float) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while marker not in seen:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no prompt within {timeout:g} s; got {seen[-200:]!r}")
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    return seen


def one_exit(shell: str, env: dict) -> float:
    """Seconds from typing `exit` to the shell being reaped."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the shell, on the pty's slave side
        os.execvpe(shell, [shell, "-i"], env)
    try:
        read_until(fd, PROMPT.encode(), 30)
        start = time.perf_counter()
        os.write(fd, b"exit\n")
        while True:  # drain until the slave side closes (EIO), then reap
            ready, _, _ = select.select([fd], [], [], 30)
            if not ready:
                raise TimeoutError("the shell did not exit within 30 s")
            try:
                if not os.read(fd, 4096):
                    break
            except OSError:
                break
        os.waitpid(pid, 0)
        return time.perf_counter() - start
    finally:
        os.close(fd)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def make_home(root: Path, shell: str) -> dict:
    home = root
    home.mkdir(parents=True, exist_ok=True)
    rc = home / RC[shell]
    rc.parent.mkdir(parents=True, exist_ok=True)
    rc.write_text(PROMPT_LINES[shell], "utf-8")
    env = {
        "HOME": str(home),
        "PATH": "/usr/bin:/bin",
        "TERM": "xterm",
        "LANG": "C.UTF-8",
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    return env


def log_size(home: Path) -> int:
    return sum(
        len(path.read_bytes().splitlines())
        for path in (home / ".local/state/cmem").glob("*/cmem.log")
    )


def measure(shell: str, runs: int, cmem: str, work: Path) -> dict:
    plain_env = make_home(work / f"{shell}-plain", shell)
    hooked_home = work / f"{shell}-hooked"
    hooked_env = make_home(hooked_home, shell)
    vault = work / f"{shell}-vault"
    subprocess.run(
        [cmem, "init", str(vault), "--lang", "en"], env=hooked_env, check=True, capture_output=True
    )
    subprocess.run(
        [cmem, "--vault", str(vault), "hook", "install", "--shell", shell, "--yes"],
        env=hooked_env,
        check=True,
        capture_output=True,
    )
    for env in (plain_env, hooked_env):  # warm-up: page cache, the shell's own first-run files
        for _ in range(3):
            one_exit(shell, env)
    time.sleep(1)
    plain, hooked, added = [], [], []
    for index in range(runs):
        before = log_size(hooked_home)
        pair = {}
        for side in ("plain", "hooked") if index % 2 == 0 else ("hooked", "plain"):
            pair[side] = one_exit(shell, plain_env if side == "plain" else hooked_env)
            if side == "hooked":
                deadline = time.monotonic() + 30
                while log_size(hooked_home) <= before and time.monotonic() < deadline:
                    time.sleep(0.01)
        plain.append(pair["plain"])
        hooked.append(pair["hooked"])
        added.append(pair["hooked"] - pair["plain"])
    return {
        "plain": plain,
        "hooked": hooked,
        "added": added,
        "checks_logged": log_size(hooked_home),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--shells", default="bash,zsh,fish")
    parser.add_argument(
        "--cmem", default=shutil.which("cmem") or str(Path(sys.executable).parent / "cmem")
    )
    args = parser.parse_args()
    print(f"cmem: {args.cmem}; {args.runs} paired exits per shell; times in ms (median / p95)")
    print(
        f"{'shell':<6} {'without hook':>16} {'with hook':>16} {'added (paired)':>18}  checks logged"
    )
    with tempfile.TemporaryDirectory(prefix="cmem-exit-bench-") as folder:
        for shell in args.shells.split(","):
            if shutil.which(shell) is None:
                print(f"{shell:<6} not installed, skipped")
                continue
            result = measure(shell, args.runs, args.cmem, Path(folder))

            def cell(values):
                return f"{statistics.median(values) * 1000:6.1f} / {percentile(values, 0.95) * 1000:6.1f}"

            print(
                f"{shell:<6} {cell(result['plain']):>16} {cell(result['hooked']):>16} {cell(result['added']):>18}  "
                f"{result['checks_logged']}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
