#!/usr/bin/env python3
"""Triggers to passes: N simultaneous `cmem converge --if-due` (as when many terminals close at
once) against one vault with something pending and a slow model (issue 5; research/reliability.md
§9 (b) 1).

    python bench/trigger_storm.py [--triggers 50] [--model-delay 2] [--cmem PATH]

Prints how many passes ran (must be 1), every exit code (must all be 0), the outcomes logged in
`cmem.log`, and how long the triggers that lost took to return (median, p99). Runs under a
temporary HOME; the model is `tests/fake_llm.py` answering what the builtin engine would.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NOTE = "# Notes\n\n- Actually, I prefer Svelte over React for side projects.\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triggers", type=int, default=50)
    parser.add_argument("--model-delay", type=float, default=2.0)
    parser.add_argument(
        "--cmem", default=shutil.which("cmem") or str(Path(sys.executable).parent / "cmem")
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cmem-storm-") as folder:
        work = Path(folder)
        home = work / "home"
        env = dict(
            os.environ,
            HOME=str(home),
            XDG_CONFIG_HOME=str(home / ".config"),
            XDG_STATE_HOME=str(home / ".local/state"),
            XDG_CACHE_HOME=str(home / ".cache"),
            GIT_AUTHOR_NAME="bench",
            GIT_AUTHOR_EMAIL="bench@example.com",
            GIT_COMMITTER_NAME="bench",
            GIT_COMMITTER_EMAIL="bench@example.com",
            GIT_CONFIG_NOSYSTEM="1",
        )
        env.pop("CMEM_VAULT", None)
        vault = work / "vault"
        subprocess.run(
            [args.cmem, "init", str(vault), "--lang", "en"],
            env=env,
            check=True,
            capture_output=True,
        )
        (vault / "2026-11-30 notes.md").write_text(NOTE, "utf-8")
        copy = work / "copy"
        shutil.copytree(vault, copy)
        dry = subprocess.run(
            [
                args.cmem,
                "--vault",
                str(copy),
                "converge",
                "--engine",
                "builtin",
                "--dry-run",
                "--json",
            ],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        import json

        run_dir = Path(json.loads(dry.stdout)["run"])
        env.update(
            CMEM_LLM=f"{sys.executable} {REPO / 'tests' / 'fake_llm.py'}",
            FAKE_LLM_MODE="slow",
            FAKE_LLM_DELAY=str(args.model_delay),
            FAKE_LLM_REPLY=(run_dir / "response-1.txt").read_text("utf-8"),
        )
        started = time.perf_counter()
        processes = [
            subprocess.Popen(
                [args.cmem, "--vault", str(vault), "converge", "--if-due", "--quiet"],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for _ in range(args.triggers)
        ]
        codes, durations = [], []
        pending = list(processes)
        while pending:
            for process in list(pending):
                if process.poll() is not None:
                    durations.append(time.perf_counter() - started)
                    pending.remove(process)
            time.sleep(0.005)
        codes = [process.returncode for process in processes]
        log = next((home / ".local/state/cmem").glob("*/cmem.log")).read_text("utf-8").splitlines()
        seen: dict[str, int] = {}
        for line in log:
            seen[line.split("\t")[1]] = seen.get(line.split("\t")[1], 0) + 1
        commits = subprocess.run(
            ["git", "-C", str(vault), "log", "--format=%s"], capture_output=True, text=True
        ).stdout
        passes = sum(1 for subject in commits.splitlines() if ": converge " in subject)
        losers = sorted(durations)[:-1] if seen.get("applied") else sorted(durations)
        p99 = losers[min(len(losers) - 1, round(0.99 * (len(losers) - 1)))] if losers else 0.0
        print(
            f"{args.triggers} simultaneous triggers -> {passes} pass(es); exit codes {sorted(set(codes))}; outcomes {seen}"
        )
        print(
            f"triggers that did not run the pass returned after {statistics.median(losers) * 1000:.0f} ms median, "
            f"{p99 * 1000:.0f} ms p99 (from the start of the storm, start-up included)"
        )
        return 0 if passes == 1 and set(codes) == {0} else 1


if __name__ == "__main__":
    sys.exit(main())
