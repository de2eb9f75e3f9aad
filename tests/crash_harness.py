"""Kill a real `cmem converge` at every step of its apply and commit, then check the vault.

For each kill point (see cmem.faults.POINTS) and each time the pass reaches it, a fresh copy of
the sample vault is converged in a subprocess with `CMEM_FAULT=<point>:<n>`, which SIGKILLs it
there. Then, before anything else runs:

- every file the pass meant to write is byte-equal to its old or its new version (read from the
  journal the pass left, or from git when it died before writing one or after removing it);
- `git fsck` is clean;
and after the next run (which finishes or undoes the interrupted pass):
- the working tree of every managed path equals HEAD, the pass commit exists at most once, and
  a further pass finds nothing to do.

Usable from tests (a sample of points) and from bench/reliability.py (all of them).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from support import isolated_env

HERE = Path(__file__).resolve().parent
SAMPLE = HERE.parent / "sample-vault"
POINTS = (
    "journal-written",
    "temp-write",
    "fsync",
    "rename",
    "replace",
    "applied",
    "git-add",
    "git-commit",
    "committed",
)


@dataclass
class Trial:
    point: str
    nth: int
    killed: bool
    consistent: bool = True
    fsck_clean: bool = True
    next_run_ok: bool = True
    problems: list[str] = field(default_factory=list)


def _env(home: Path, fault: str | None) -> dict:
    return isolated_env(home, **({"CMEM_FAULT": fault} if fault else {}))


def _cmem(
    vault: Path, home: Path, fault: str | None = None, *args: str
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "cmem",
            "converge",
            "--engine",
            "builtin",
            "--vault",
            str(vault),
            *args,
        ],
        env=_env(home, fault),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _git(vault: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(vault), *args], capture_output=True, text=True).stdout


def _sha(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def _fresh(workdir: Path, name: str) -> tuple[Path, Path]:
    vault, home = workdir / name / "vault", workdir / name / "home"
    shutil.copytree(SAMPLE, vault, symlinks=True)
    home.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(vault)], check=True)
    subprocess.run(["git", "-C", str(vault), "add", "-A"], check=True, env=_env(home, None))
    subprocess.run(
        ["git", "-C", str(vault), "commit", "-qm", "sample"], check=True, env=_env(home, None)
    )
    return vault, home


def run_trial(workdir: Path, point: str, nth: int) -> Trial:
    vault, home = _fresh(workdir, f"{point}-{nth}")
    managed = [p for p in _git(vault, "ls-files").split("\n") if p]
    old = {rel: _sha(vault / rel) for rel in managed}
    run = _cmem(vault, home, f"{point}:{nth}")
    trial = Trial(point, nth, killed=run.returncode == -9)
    if not trial.killed:
        if run.returncode != 0:
            trial.problems.append(f"exit {run.returncode}: {run.stderr[-500:]}")
            trial.next_run_ok = False
        return trial
    journals = list((home / "state").rglob("journal/*/intent.json"))
    intent = json.loads(journals[0].read_text("utf-8")) if journals else None
    if intent is not None:
        for entry in intent["entries"]:
            now = _sha(vault / entry["rel"])
            if now not in (entry["old"], entry["new"]):
                trial.consistent = False
                trial.problems.append(f"{entry['rel']} is neither its old nor its new version")
    else:
        head_files = {rel: _git(vault, "rev-parse", f"HEAD:{rel}").strip() for rel in managed}
        for rel in managed:
            blob = subprocess.run(
                ["git", "-C", str(vault), "hash-object", rel], capture_output=True, text=True
            ).stdout.strip()
            if _sha(vault / rel) != old[rel] and blob != head_files[rel]:
                trial.consistent = False
                trial.problems.append(
                    f"{rel} changed but is not committed, with no journal to finish it"
                )
    fsck = subprocess.run(
        ["git", "-C", str(vault), "fsck", "--no-dangling"], capture_output=True, text=True
    )
    trial.fsck_clean = fsck.returncode == 0
    if not trial.fsck_clean:
        trial.problems.append("git fsck: " + (fsck.stderr or fsck.stdout)[-300:])
    again = _cmem(vault, home)
    status = _git(vault, "status", "--porcelain", "--untracked-files=all")
    commits = _git(vault, "log", "--format=%s").count("cmem: converge")
    final = _cmem(vault, home, None, "--json")
    ok = (
        again.returncode == 0
        and not status.strip()
        and commits == 1
        and '"status": "nothing"' in final.stdout
    )
    if not ok:
        trial.next_run_ok = False
        trial.problems.append(
            f"next run: exit {again.returncode} {again.stderr[-300:]!r}; status {status[:300]!r}; {commits} pass commits; then {final.stdout[:200]!r}"
        )
    return trial


def occurrences(workdir: Path) -> dict[str, int]:
    """How many times an undisturbed pass reaches each point: one run with `CMEM_FAULT_LOG`
    (cmem/faults.py) lists every point it reaches."""
    vault, home = _fresh(workdir, "count")
    log = workdir / "count" / "points.log"
    env = _env(home, None) | {"CMEM_FAULT_LOG": str(log)}
    subprocess.run(
        [sys.executable, "-m", "cmem", "converge", "--engine", "builtin", "--vault", str(vault)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    reached = log.read_text("utf-8").split() if log.exists() else []
    return {point: reached.count(point) for point in POINTS if point in reached}


def run_kill_trials(trials: int | None, workdir: Path) -> dict:
    """Every point at every occurrence (trials=None), or a sample of `trials` runs."""
    workdir = Path(workdir)
    plan = []
    counts = {
        "journal-written": 1,
        "replace": 7,
        "applied": 1,
        "git-add": 1,
        "git-commit": 1,
        "committed": 1,
        "temp-write": 29,
        "fsync": 29,
        "rename": 29,
    }
    if trials is None:
        counts = occurrences(workdir)
    for point, count in counts.items():
        plan += [(point, n) for n in range(1, count + 1)]
    if trials is not None and trials < len(plan):
        step = len(plan) / trials
        plan = [plan[int(i * step)] for i in range(trials)]
    results = [run_trial(workdir, point, nth) for point, nth in plan]
    killed = [r for r in results if r.killed]
    return {
        "kill_points": sorted({r.point for r in killed}),
        "trials": len(killed),
        "survived": sum(r.consistent and r.fsck_clean and r.next_run_ok for r in killed),
        "consistent": sum(r.consistent for r in killed),
        "fsck_clean": sum(r.fsck_clean for r in killed),
        "next_run_ok": sum(r.next_run_ok for r in killed),
        "problems": [f"{r.point}:{r.nth}: {p}" for r in results for p in r.problems],
    }


if __name__ == "__main__":
    import tempfile

    print(json.dumps(run_kill_trials(None, Path(tempfile.mkdtemp(prefix="cmem-crash-"))), indent=1))
