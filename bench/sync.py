#!/usr/bin/env python3
"""`cmem sync` with nothing to do, against a bare `git fetch` of the same remote (issue 16: the
target is at most 3x).

    python bench/sync.py [--runs 21] [--notes 0] [--cmem PATH] [--keep FOLDER]

It times the `cmem` command installed beside this Python, as a user runs it (or `--cmem PATH`;
`python -m cmem` when there is none).

It makes, in a temporary folder, a bare repository holding the sample vault (plus `--notes`
generated notes, for a larger tree) and one clone of it, syncs once, then times the two commands
in turn — A B A B … — as whole processes, so both see the same machine noise, and prints the
median of each and the median of the pair-by-pair ratios A/B:

    cmem sync (nothing to do) vs git fetch: median 0.161 s vs 0.012 s, ratio 12.6x (21 pairs)

Python's compiled bytecode is kept (in the temporary folder, PYTHONPYCACHEPREFIX) as an installed
cmem has it; `--no-bytecode` compiles every module on every run instead (PYTHONDONTWRITEBYTECODE,
as some shells and CI set it), which costs every call several milliseconds.

Before the timing, the vault is left alone for a moment (the racy-timestamp window, 2 s) and
synced until a sync is answered by the idle answer (cmem.idle_sync: the first sync after a change
runs the full path, which stores what the next needs to tell "nothing to do" alone). Which path
answered is read from Python's own import log (PYTHONPROFILEIMPORTTIME): the full path imports
cmem.sync.remote, the idle answer never does. An idle answer that never comes stops the benchmark
with an error rather than timing the full path under the idle answer's name; the check is made
again after the timing.

Nothing outside the temporary folder (and its HOME and XDG folders) is touched.
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
SAMPLE = REPO / "sample-vault"


def _env(home: Path) -> dict:
    # the tests' isolated environment (HOME, XDG folders, git identity, nothing of the user's)
    sys.path.insert(0, str(REPO / "tests"))
    from support import isolated_env

    return isolated_env(home)


def make_machine(folder: Path, notes: int, env: dict) -> tuple[Path, Path]:
    """(bare remote, clone): the sample vault, with `notes` more notes, pushed and cloned."""
    source = folder / "source"
    shutil.copytree(SAMPLE, source, symlinks=True)
    for index in range(notes):
        (source / f"2026-01-{index % 28 + 1:02d} bench {index}.md").write_text(
            f"- note {index}\n", encoding="utf-8"
        )
    run = lambda *args, cwd=None: subprocess.run(
        args, cwd=cwd, env=env, check=True, capture_output=True
    )
    run("git", "init", "-q", "-b", "main", str(source))
    run("git", "-C", str(source), "add", "-A")
    run("git", "-C", str(source), "commit", "-q", "-m", "bench: initial")
    remote, clone = folder / "remote.git", folder / "clone"
    run("git", "clone", "-q", "--bare", str(source), str(remote))
    run("git", "clone", "-q", str(remote), str(clone))
    return remote, clone


def time_once(command: list[str], env: dict) -> float:
    start = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {result.stderr.decode('utf-8', 'replace')}")
    return elapsed


def answered_idle(sync: list[str], env: dict) -> bool:
    """Run `sync` once: whether the idle answer told it (the full path imports
    cmem.sync.remote; the idle answer, cmem.idle_sync, never does)."""
    result = subprocess.run(sync, env=dict(env, PYTHONPROFILEIMPORTTIME="1"), capture_output=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(sync)} failed: {result.stderr.decode('utf-8', 'replace')}")
    return b"cmem.sync.remote" not in result.stderr


def warm_up(sync: list[str], env: dict, tries: int = 4) -> int:
    """Sync until the idle answer tells it; the syncs it took. Each full sync that finds nothing
    to do stores the key; one made within the racy window of a change cannot, hence the wait."""
    for attempt in range(1, tries + 1):
        if answered_idle(sync, env):
            return attempt
        time.sleep(2.1)
    raise SystemExit(
        f"the idle answer never came in {tries} syncs: the benchmark would time the full path"
    )


def in_process(
    clone: Path, fetch: list[str], env: dict, runs: int
) -> tuple[list[float], list[float], list[float]]:
    """`sync_vault` timed inside this process, paired with the fetch: what sync itself costs once
    the interpreter, the CLI and the vault's config are loaded."""
    sys.path.insert(0, str(REPO / "cli"))
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        from cmem.sync.remote import sync_vault
        from cmem.vault.layers import open_vault

        vault = open_vault(clone)
        sync_vault(vault)
        inside, fetches, ratios = [], [], []
        for _ in range(runs):
            start = time.perf_counter()
            if sync_vault(vault).status != "nothing":
                raise SystemExit("the idle sync found something to do")
            inside.append(time.perf_counter() - start)
            fetches.append(time_once(fetch, env))
            ratios.append(inside[-1] / fetches[-1])
        return inside, fetches, ratios
    finally:
        os.environ.clear()
        os.environ.update(saved)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=21, help="pairs timed (after one warm-up pair)")
    parser.add_argument(
        "--notes", type=int, default=0, help="generated notes added to the sample vault"
    )
    parser.add_argument(
        "--cmem",
        default=None,
        help="the cmem command (default: the `cmem` beside this Python, else `python -m cmem`)",
    )
    parser.add_argument("--keep", type=Path, default=None, help="build the vault here and keep it")
    parser.add_argument(
        "--no-bytecode", action="store_true", help="compile every module on every run"
    )
    args = parser.parse_args()
    # what a user runs: the `cmem` command installed beside this Python (cli/scripts/cmem), else
    # `python -m cmem` (which imports runpy first: about 4 ms more)
    installed = Path(sys.executable).parent / "cmem"
    if args.cmem:
        cmem = [args.cmem]
    elif installed.exists():
        cmem = [str(installed)]
    else:
        cmem = [sys.executable, "-m", "cmem"]
    folder = args.keep or Path(tempfile.mkdtemp(prefix="cmem-bench-sync-"))
    folder.mkdir(parents=True, exist_ok=True)
    home = folder / "home"
    home.mkdir(exist_ok=True)
    env = _env(home)
    if args.no_bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
    try:
        _, clone = make_machine(folder, args.notes, env)
        sync = [*cmem, "sync", "--vault", str(clone)]
        fetch = ["git", "-C", str(clone), "fetch", "-q", "origin"]
        time.sleep(2.1)  # the vault left alone past the racy-timestamp window (RACY_NS)
        warmed = warm_up(sync, env)  # 2: the full path stores, the next is idle
        time_once(fetch, env)
        # the floor: the same Python start-up (`cmem --version`) and the one fetch
        version = [*cmem, "--version"]
        syncs, fetches, ratios, floors = [], [], [], []
        for _ in range(args.runs):
            a = time_once(sync, env)
            b = time_once(fetch, env)
            c = time_once(version, env)
            syncs.append(a)
            fetches.append(b)
            ratios.append(a / b)
            floors.append((c + b) / b)
        if not answered_idle(sync, env):
            raise SystemExit("the idle answer stopped coming during the timing")
        print(
            f"cmem sync (nothing to do) vs git fetch: median {statistics.median(syncs):.3f} s vs "
            f"{statistics.median(fetches):.3f} s, ratio {statistics.median(ratios):.1f}x ({args.runs} pairs, "
            f"{args.notes} generated notes, bytecode {'not ' if args.no_bytecode else ''}cached; "
            f"idle answer after {warmed} sync(s))"
        )
        print(
            f"the floor, `{' '.join(version[-2:])}` (start-up alone) plus the fetch, vs git fetch: "
            f"ratio {statistics.median(floors):.1f}x"
        )
        inside, fetches, ratios = in_process(clone, fetch, env, args.runs)
        print(
            f"the full path's own work (in process, CLI start-up and config load excluded) vs git fetch: median "
            f"{statistics.median(inside):.3f} s vs {statistics.median(fetches):.3f} s, ratio {statistics.median(ratios):.1f}x"
        )
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
