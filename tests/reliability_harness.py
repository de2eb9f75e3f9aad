"""Trial harnesses for the reliability figures (issue 6): real passes, real git, the fake model.

- `reply_pass_trials`: replies (tests/reply_variants.py) through the real pass; for each, which
  files changed, inside the vault and out, and whether the pass applied.
- `run_writer_trials`: a second writer (Obsidian's autosave, a sync client) edits an input note
  or a file the pass writes, at a random moment before, during or after the model call.
- `run_hung_model_trials`: `cmem converge` as a user runs it, with a model that hangs, forks a
  helper that holds stdout, ignores SIGTERM, floods stdout or streams 1 GB.

Each returns a dict of counts for tests to assert on and bench/reliability.py to publish. They
run in the calling process with the environment it has: tests get an isolated HOME from
conftest.py; the bench makes its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import reply_variants as rv
from support import snapshot  # the harness's callers use harness.snapshot

TESTS = Path(__file__).resolve().parent
FAKE = TESTS / "fake_llm.py"
PASS_NOW = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)  # the corpus's pass date
CHECKLIST = "archive/ARCHIVE-CHECKLIST.md"
STATE = ".cmem/state.json"


@contextmanager
def environment(**values: str | None):
    """Set (or, with None, remove) environment variables for the block; the fake model reads them."""
    saved = {name: os.environ.get(name) for name in values}
    try:
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def fake_command(marker: str | None = None) -> str:
    import shlex

    return shlex.join([sys.executable, str(FAKE), *(["--marker", marker] if marker else [])])


# --- what changed ------------------------------------------------------------------------------


def changed(before: dict[str, bytes], after: dict[str, bytes]) -> list[str]:
    return sorted(rel for rel in set(before) | set(after) if before.get(rel) != after.get(rel))


# cmem's own file in git's folder: the repository's id the step journals are bound to, made by
# the first step (a clone never copies it).
REPOSITORY_ID = ".git/info/cmem-repository-id"


def allowed(rel: str) -> bool:
    """Where a pass may write in the corpus vault: convergent Markdown files (not through the
    links), the state file, the checklist, the repository's id — and git's history (HEAD)."""
    if rel in (STATE, CHECKLIST, "<HEAD>", REPOSITORY_ID):
        return True
    parts = rel.split("/")
    return (
        parts[0] == "converged"
        and parts[1:2] in (["core"], ["topics"])
        and rel.endswith(".md")
        and not rel.startswith(("converged/topics/escape/", "converged/topics/linked.md"))
        and ".." not in parts
    )


# --- replies through the real pass -------------------------------------------------------------


@dataclass
class ReplyOutcome:
    name: str
    status: str  # applied | failed | error
    errors: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # inside the vault
    outside: list[str] = field(default_factory=list)  # changed files beside the vault, and escapes

    @property
    def wrote_outside_allowed(self) -> bool:
        return bool(self.outside) or any(not allowed(rel) for rel in self.changed)


def make_corpus_template(workdir: Path) -> Path:
    """A corpus vault (tests/reply_variants.py) in `workdir/template`, committed; copy it per trial."""
    return rv.build_corpus_vault(workdir / "template" / "vault", workdir / "template" / "outside")


def fresh_vault(template: Path, workdir: Path, name: str) -> tuple[Path, Path]:
    """A copy of the template vault and its `outside` folder (links are relative to it)."""
    trial = workdir / name
    if trial.exists():
        shutil.rmtree(trial)
    trial.mkdir(parents=True)
    outside = trial / "outside"
    shutil.copytree(template.parent / "outside", outside)
    root = trial / "vault"
    shutil.copytree(template, root, symlinks=True)
    subprocess.run(["git", "-C", str(root), "update-index", "-q", "--refresh"], capture_output=True)
    return root, outside


def _escape_targets(root: Path) -> list[Path]:
    """Files a path attack could create beyond the `outside` folder."""
    return [
        root.parent.parent / ".bashrc",
        root.parent / "x.md",
        Path("/tmp/cmem-escape.md"),
        Path("/etc/cmem-hosts.md"),
    ]


def run_reply(
    root: Path, outside: Path, name: str, data: bytes, via_model: bool = True
) -> ReplyOutcome:
    """One reply through `run_pass` on the vault at `root`: from the fake model (a real
    subprocess, the bytes exactly as given) or as `--response` text."""
    from cmem.converge.pipeline import PassOptions, run_pass
    from cmem.errors import CmemError
    from cmem.vault.layers import open_vault

    before, before_outside = snapshot(root), snapshot(outside)
    escapes_before = {str(p) for p in _escape_targets(root) if p.exists()}
    outcome = ReplyOutcome(name, "error")
    queue = root.parent / f"queue-{uuid.uuid4().hex[:8]}"
    try:
        if via_model:
            queue.mkdir()
            (queue / "000.txt").write_bytes(data)
            options = PassOptions(engine="llm", llm=fake_command(), now=PASS_NOW)
        else:
            options = PassOptions(response_text=rv.decode_reply(data), now=PASS_NOW)
        with environment(FAKE_LLM_REPLIES=str(queue), FAKE_LLM_MODE="reply", FAKE_LLM_LOG=None):
            result = run_pass(open_vault(root), options)
        outcome.status = result.status
        outcome.errors = list(result.errors)
    except CmemError as exc:
        outcome.errors = [str(exc)]
    finally:
        shutil.rmtree(queue, ignore_errors=True)
    outcome.changed = changed(before, snapshot(root))
    outcome.outside = changed(before_outside, snapshot(outside))
    outcome.outside += [
        str(p) for p in _escape_targets(root) if p.exists() and str(p) not in escapes_before
    ]
    return outcome


def reply_pass_trials(
    workdir: Path,
    variants: list,
    expect: str,
    via_model: bool = True,
    fresh_each: bool | None = None,
) -> dict:
    """Run each variant through a real pass. `expect` is "rejected" (hostile) or "applied" (valid).

    Hostile replies share one vault (a rejected pass changes nothing, which each trial checks);
    valid ones get a fresh copy each, since they commit."""
    workdir.mkdir(parents=True, exist_ok=True)
    template = make_corpus_template(workdir)
    fresh_each = expect == "applied" if fresh_each is None else fresh_each
    root, outside = fresh_vault(template, workdir, "shared")
    figures = {
        "tried": 0,
        "rejected": 0,
        "applied": 0,
        "applied_partly": 0,
        "wrote_outside_allowed": 0,
        "unexpected": [],
        "seconds": 0.0,
    }
    started = time.monotonic()
    for index, variant in enumerate(variants):
        if fresh_each:
            root, outside = fresh_vault(template, workdir, f"trial-{index % 4}")
        data = variant.data
        if b"{OUTSIDE}" in data or b"{VAULT}" in data:
            data = data.replace(b"{OUTSIDE}", str(outside).encode()).replace(
                b"{VAULT}", str(root).encode()
            )
        outcome = run_reply(root, outside, variant.name, data, via_model=via_model)
        figures["tried"] += 1
        figures["wrote_outside_allowed"] += outcome.wrote_outside_allowed
        accepted = outcome.status in (
            "applied",
            "nothing",
        )  # "nothing": a valid reply that only defers
        if accepted:
            figures["applied"] += 1
            expected = set(variant.files or ())
            wrote = {
                rel
                for rel in outcome.changed
                if rel not in (STATE, CHECKLIST, "<HEAD>", REPOSITORY_ID)
            }
            if not wrote <= expected:
                figures["unexpected"].append(
                    f"{variant.name}: wrote {sorted(wrote - expected)} beyond its file blocks"
                )
        else:
            figures["rejected"] += 1
            if outcome.changed or outcome.outside:
                figures["applied_partly"] += 1
        if (
            accepted != (expect == "applied")
            or outcome.wrote_outside_allowed
            or (not accepted and outcome.changed)
        ):
            figures["unexpected"].append(
                f"{variant.name}: {outcome.status}, changed {outcome.changed + outcome.outside}, errors {outcome.errors[:2]}"
            )
    figures["seconds"] = round(time.monotonic() - started, 1)
    return figures


# --- second writers ----------------------------------------------------------------------------

WRITER_TARGETS = (rv.PROFILE, CHECKLIST, rv.NOTE, rv.NOTE2, rv.JOBS)
WRITE_STYLES = ("in-place", "rename", "append")
WRITER_REPLY = rv.wrap(
    rv.block(
        rv.PROFILE,
        rv.profile(rv.S[0], rv.S2_REWRITE, *rv.S[2:], rv.NEW_BY_NOTE[0], rv.NEW_BY_NOTE2[1]),
    ),
    f'<converged note="{rv.NOTE}" into="{rv.PROFILE}"/>\n<converged note="{rv.NOTE2}" into="{rv.PROFILE}"/>\n',
)


def _user_write(path: Path, marker: str, style: str) -> None:
    """Write as an editor would: rewrite in place, save to a temp file and rename, or append."""
    old = path.read_bytes() if path.exists() else b""
    sep = b"" if not old or old.endswith(b"\n") else b"\n"
    line = f"- {marker}（来源：[[2026-11-28 随手记]]）\n".encode()
    if style == "append":
        with open(path, "ab") as handle:
            handle.write(sep + line)
        return
    new = old + sep + line
    if style == "rename":
        temp = path.with_name(f".{path.name}.{marker}.tmp")
        temp.write_bytes(new)
        os.replace(temp, path)
    else:
        with open(path, "r+b" if path.exists() else "wb") as handle:
            handle.write(new)
            handle.truncate()


@dataclass
class WriterTrial:
    target: str
    style: str
    phase: str = ""  # before | during | after (the model call) | late (after the pass)
    outcome: str = ""  # applied | second-writer | failed | error
    lost: bool = False
    skipped: bool = False  # the pass refused to write because of this writer
    reported: bool = True
    partial: bool = False
    message: str = ""


def run_writer_trials(trials: int, workdir: Path, seed: int = 6) -> dict:
    """`trials` passes, each with one external write at a random moment; see the module doc."""
    from cmem.converge import pipeline
    from cmem.converge.model import command as model_command
    from cmem.errors import CmemError
    from cmem.steps.changes import SecondWriter
    from cmem.vault.layers import open_vault

    workdir.mkdir(parents=True, exist_ok=True)
    template = make_corpus_template(workdir)
    rng = random.Random(seed)
    results: list[WriterTrial] = []
    original_run, original_check = model_command.run_model_command, pipeline.changed_inputs
    times: dict[str, float] = {}

    def timed_run(*args, **kwargs):
        times["model_start"] = time.monotonic()
        try:
            return original_run(*args, **kwargs)
        finally:
            times["model_end"] = time.monotonic()

    def timed_check(*args, **kwargs):
        times["inputs_checked"] = time.monotonic()
        return original_check(*args, **kwargs)

    model_command.run_model_command, pipeline.changed_inputs = timed_run, timed_check
    started = time.monotonic()
    try:
        for index in range(trials):
            root, outside = fresh_vault(template, workdir, f"writer-{index % 4}")
            trial = WriterTrial(rng.choice(WRITER_TARGETS), rng.choice(WRITE_STYLES))
            queue = root.parent / "queue"
            shutil.rmtree(queue, ignore_errors=True)
            queue.mkdir()
            (queue / "000.txt").write_text(WRITER_REPLY, encoding="utf-8")
            delay, wait = (
                rng.uniform(0.02, 0.25),
                rng.uniform(-0.15, 0.6),
            )  # < 0: before the pass starts
            marker = f"第三方写入 {uuid.uuid4().hex[:12]}"
            before = snapshot(root)
            times.clear()
            written_at: dict[str, float] = {}

            def writer():
                time.sleep(max(wait, 0))
                written_at["t"] = time.monotonic()
                _user_write(root / trial.target, marker, trial.style)

            thread = threading.Thread(target=writer)
            if wait < 0:
                writer()
                thread = threading.Thread(target=lambda: None)
            result, error = None, None
            with environment(
                FAKE_LLM_REPLIES=str(queue),
                FAKE_LLM_MODE="slow",
                FAKE_LLM_DELAY=f"{delay:.3f}",
                FAKE_LLM_LOG=None,
            ):
                thread.start()
                try:
                    result = pipeline.run_pass(
                        open_vault(root),
                        pipeline.PassOptions(engine="llm", llm=fake_command(), now=PASS_NOW),
                    )
                except CmemError as exc:
                    error = exc
                pass_end = time.monotonic()
                thread.join()
            _judge(
                trial,
                root,
                before,
                marker,
                result,
                error,
                written_at["t"],
                times,
                pass_end,
                SecondWriter,
            )
            results.append(trial)
    finally:
        model_command.run_model_command, pipeline.changed_inputs = original_run, original_check
    skipped = [t for t in results if t.skipped]
    return {
        "trials": len(results),
        "edits_lost": sum(t.lost for t in results),
        "skipped_writes": len(skipped),
        "skipped_reported": sum(t.reported for t in skipped),
        "inputs_changed_warned": sum(
            t.outcome == "applied" and t.message.startswith("warned") for t in results
        ),
        "unreported": sum(not t.reported for t in results),
        "partial": sum(t.partial for t in results),
        "by_phase": {
            phase: sum(t.phase == phase for t in results)
            for phase in ("before", "during", "after", "late")
        },
        "by_outcome": {
            o: sum(t.outcome == o for t in results)
            for o in ("applied", "second-writer", "failed", "error")
        },
        "problems": [
            f"{t.target} ({t.style}, {t.phase}): {t.outcome} {t.message}"
            for t in results
            if t.lost or not t.reported or t.partial
        ],
        "seconds": round(time.monotonic() - started, 1),
    }


def _judge(
    trial: WriterTrial,
    root: Path,
    before: dict,
    marker: str,
    result,
    error,
    written_at: float,
    times: dict,
    pass_end: float,
    second_writer_type,
) -> None:
    model_start, model_end = times.get("model_start", pass_end), times.get("model_end", pass_end)
    trial.phase = (
        "before"
        if written_at < model_start
        else "during"
        if written_at < model_end
        else "after"
        if written_at < pass_end
        else "late"
    )
    final = (root / trial.target).read_bytes()
    trial.lost = marker.encode() not in final
    if error is not None:
        trial.outcome = "second-writer" if isinstance(error, second_writer_type) else "error"
        trial.message = str(error)
    else:
        trial.outcome = "applied" if result.status == "applied" else "failed"
        trial.message = "; ".join(result.errors[:2])
    if trial.outcome == "second-writer":
        trial.skipped = True
        trial.reported = trial.target in trial.message
        # nothing of the pass stays: every file but the writer's is as before, HEAD included
        now = snapshot(root)
        trial.partial = any(
            rel != trial.target and now.get(rel) != before.get(rel)
            for rel in set(now) | set(before)
            if not rel.startswith((".git/",))
        )
    elif trial.outcome == "applied" and trial.target in (rv.NOTE, rv.NOTE2):
        converged = (
            json.loads((root / STATE).read_text("utf-8"))["notes"]
            .get(trial.target, {})
            .get("sha256")
        )
        if (
            converged
            and converged != hashlib.sha256(final).hexdigest()
            and written_at < times.get("inputs_checked", pass_end)
        ):
            trial.reported = any(
                trial.target in w and "changed while the pass ran" in w for w in result.warnings
            )
            trial.message = (
                "warned: input changed while the pass ran"
                if trial.reported
                else "input changed, no warning"
            )
    elif trial.outcome == "applied" and trial.phase == "during" and trial.target == rv.PROFILE:
        # read before the model ran, written after it: the pass must have met this edit (the
        # checklist and state are read after the model returns, so an edit then is simply kept)
        trial.reported = False
        trial.message = "applied over a write made during the model call"
    leftovers = [p.name for p in root.rglob("*.cmem-tmp")]
    if leftovers:
        trial.partial, trial.message = True, f"temp files left: {leftovers}"


# --- hung and hostile model processes ----------------------------------------------------------

HUNG_CASES = {
    # case: (fake mode, extra environment, timeout seconds, max output bytes)
    "hang": ("hang", {}, 1, None),
    "grandchild-holds-stdout": ("grandchild", {"FAKE_LLM_REPLY": "not a reply"}, 1, None),
    "ignores-sigterm": ("stubborn", {}, 1, None),
    "slow-past-timeout": ("slow", {"FAKE_LLM_DELAY": "60"}, 1, None),
    "floods-stdout": ("flood", {}, 30, 1_000_000),
    "streams-1gb": (
        "stream",
        {"FAKE_LLM_STREAM_BYTES": str(10**9)},
        30,
        None,
    ),  # the default 4 MB cap
    "never-reads-stdin": (
        "no-stdin-read",
        {"FAKE_LLM_REPLY": "<convergence>\n</convergence>\n"},
        5,
        None,
    ),
}


_MEASURE = (
    "import resource, subprocess, sys\n"
    "code = subprocess.call(sys.argv[1:])\n"
    "print(f'peak-rss-kb={resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}', file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def live_pids_with(marker: str) -> list[int]:
    """Live processes whose command line holds `marker` (zombies have an empty one)."""
    found = []
    for name in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if name.isdigit():
            try:
                cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(name))
    return found


def run_hung_model_case(case: str, root: Path, home: Path) -> dict:
    """`cmem converge` in a subprocess with a misbehaving model: exit time, exit code, leftover
    processes, the lock, and whether the vault changed. Peak memory of cmem itself is read from
    wait4's rusage."""
    mode, extra, timeout, cap = HUNG_CASES[case]
    config = f"repair_rounds: 0\nllm:\n  timeout_seconds: {timeout}\n" + (
        f"  max_output_bytes: {cap}\n" if cap else ""
    )
    (root / ".cmem/config.yaml").write_text(config, encoding="utf-8")
    subprocess.run(
        ["git", "-C", str(root), "commit", "-qam", f"config for {case}"], capture_output=True
    )
    before = snapshot(root)
    marker = f"cmem-hung-{uuid.uuid4().hex}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CMEM_", "FAKE_LLM_"))}
    env.update(
        HOME=str(home),
        XDG_STATE_HOME=str(home / "state"),
        XDG_CONFIG_HOME=str(home / "config"),
        FAKE_LLM_MODE=mode,
        NO_COLOR="1",
        **extra,
    )
    argv = [
        sys.executable,
        "-m",
        "cmem",
        "converge",
        "--vault",
        str(root),
        "--engine",
        "llm",
        "--llm",
        fake_command(marker),
        "--json",
    ]
    argv = [
        sys.executable,
        "-c",
        _MEASURE,
        *argv,
    ]  # reports cmem's peak memory (and its children's) on exit
    started = time.monotonic()
    process = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
    )
    try:
        out, err = process.communicate(timeout=timeout + 60)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
    elapsed = time.monotonic() - started
    text = err.decode("utf-8", "replace")
    peak = int(text.rsplit("peak-rss-kb=", 1)[1].split()[0]) if "peak-rss-kb=" in text else None
    time.sleep(0.2)  # a killed group's members are reaped by init: give them a moment
    orphans = live_pids_with(marker)
    for pid in orphans:  # never leave a test's process behind, even when the test fails
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    from cmem.steps.lock import is_locked
    from cmem.vault.layers import open_vault

    with environment(
        HOME=str(home), XDG_STATE_HOME=str(home / "state"), XDG_CONFIG_HOME=str(home / "config")
    ):
        locked = is_locked(open_vault(root).machine_dir)
    return {
        "case": case,
        "timeout": timeout,
        "seconds": round(elapsed, 2),
        "exit": process.returncode,
        "within_limit": elapsed <= timeout + 5,
        "orphans": len(orphans),
        "lock_held": locked,
        "peak_rss_mb": peak and round(peak / 1024),
        "vault_changed": changed(before, snapshot(root)),
        "stderr": err.decode("utf-8", "replace")[-400:],
        "stdout": out.decode("utf-8", "replace")[-2000:],
    }


def run_hung_model_trials(workdir: Path, cases: list[str] | None = None, repeat: int = 1) -> dict:
    workdir.mkdir(parents=True, exist_ok=True)
    template = make_corpus_template(workdir)
    runs = []
    for round_index in range(repeat):
        for case in cases or list(HUNG_CASES):
            root, _ = fresh_vault(template, workdir, f"hung-{case}")
            home = workdir / f"home-{case}-{round_index}"
            home.mkdir(exist_ok=True)
            runs.append(run_hung_model_case(case, root, home))
    return {
        "cases": len(runs),
        "within_limit": sum(r["within_limit"] for r in runs),
        "worst_seconds_over_timeout": round(
            max((r["seconds"] - r["timeout"] for r in runs), default=0.0), 2
        ),
        "worst": max(runs, key=lambda r: r["seconds"] - r["timeout"]) if runs else None,
        "orphans": sum(r["orphans"] for r in runs),
        "locks_left": sum(r["lock_held"] for r in runs),
        "vaults_changed": sum(bool(r["vault_changed"]) for r in runs),
        "peak_rss_mb": max((r["peak_rss_mb"] or 0 for r in runs), default=0),
        "runs": runs,
    }
