#!/usr/bin/env python3
"""cmem's reliability figures (issue 6): fault-injection trials, counted, written to docs/reliability.md.

    python bench/reliability.py [--quick] [--writer-trials 200] [--crash-trials N] [--sequence-sample N]
                                [--hung-repeat 3] [--no-pytest] [--out docs/reliability.md] [--workdir DIR]
    python bench/reliability.py --hostile-by-rule   # only the hostile corpus by rule, in seconds

Every figure comes from the harnesses the tests use (tests/crash_harness.py,
tests/sequence_harness.py, tests/reliability_harness.py, tests/reply_variants.py): real `cmem`
passes, real git, real
processes, the fake model (tests/fake_llm.py) — no model is ever called. Then it runs the
many-trial tests (`pytest -m slow`) and records their outcome. `--quick` is the CI-sized
sample (a few minutes less than a full run of about ten).

Everything runs with HOME, XDG_* and the git identity pointed into a temporary folder, so no run
touches the real home or a real state folder.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent
TESTS = PROJECT / "tests"
SLOW_TESTS = [
    "tests/converge/test_hostile_corpus.py",
    "tests/guarantees/test_second_writers.py",
    "tests/converge/test_pass_processes.py",
    "tests/guarantees/test_crash.py",
]


def isolate(home: Path) -> None:
    os.environ.update(
        HOME=str(home),
        XDG_STATE_HOME=str(home / "state"),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_CACHE_HOME=str(home / "cache"),
        XDG_DATA_HOME=str(home / "data"),
        GIT_AUTHOR_NAME="cmem bench",
        GIT_AUTHOR_EMAIL="bench@example.com",
        GIT_COMMITTER_NAME="cmem bench",
        GIT_COMMITTER_EMAIL="bench@example.com",
        GIT_CONFIG_NOSYSTEM="1",
        NO_COLOR="1",
    )
    for name in (
        "CMEM_VAULT",
        "CMEM_LLM",
        "CMEM_FAULT",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
    ):
        os.environ.pop(name, None)


def step(title: str):
    print(f"\n== {title}", file=sys.stderr, flush=True)
    return time.monotonic()


def crash_figures(workdir: Path, trials: int | None) -> dict | None:
    try:
        import crash_harness
    except ImportError:
        return None
    return crash_harness.run_kill_trials(trials, workdir)


def sequence_figures(workdir: Path, sample: int | None) -> dict | None:
    """Every (step, kill point:n, next command) triple, or a sample of them (tests/sequence_harness.py)."""
    try:
        import sequence_harness
    except ImportError:
        return None
    figures = sequence_harness.run_sequences(workdir, sample=sample)
    triples = figures.pop("triples")
    figures["sample"] = sample
    figures["failing"] = [
        f"{t['label']}: {t['problems'][0]}" for t in triples if t["killed"] and not t["survived"]
    ]
    return figures


def sequences_at_target(s: dict) -> bool:
    return (
        s["tried"] > 0
        and s["survived"] == s["tried"]
        and s["notes_lost"] == 0
        and s["notes_duplicated"] == 0
        and s["statements_lost"] == 0
        and s["converged_work_lost"] == 0
    )


def index_lock_figure(workdir: Path) -> dict:
    """`cmem converge` with `.git/index.lock` held by "another git": exit time and message."""
    import reliability_harness as harness

    root, _ = harness.fresh_vault(harness.make_corpus_template(workdir), workdir, "index-lock")
    (root / ".git/index.lock").write_text("")
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "cmem", "converge", "--engine", "builtin", "--vault", str(root)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    return {
        "seconds": round(time.monotonic() - started, 2),
        "exit": done.returncode,
        "names_the_lock": str(root / ".git/index.lock") in done.stderr,
        "message": done.stderr.strip(),
    }


def validator_figures(hostile: list, valid: list, workdir: Path) -> dict:
    """Every variant through the validator alone (what the pass-level figures confirm)."""
    import reply_variants as rv
    from cmem.converge.validator.response import parse_response
    from cmem.converge.validator.validate import validate_response
    from cmem.vault.layers import open_vault

    root = rv.build_corpus_vault(
        workdir / "validator" / "vault", workdir / "validator" / "outside", git=False
    )
    vault = open_vault(root)
    ctx = rv.corpus_context(vault)
    fill = lambda v: v.text.replace("{VAULT}", str(root)).replace(
        "{OUTSIDE}", str(workdir / "validator" / "outside")
    )
    accepted_hostile = [
        v.name for v in hostile if validate_response(vault, parse_response(fill(v)), ctx).ok
    ]
    rejected_valid = [
        v.name for v in valid if not validate_response(vault, parse_response(v.text), ctx).ok
    ]
    return {"hostile_accepted": accepted_hostile, "valid_rejected": rejected_valid}


def run_slow_tests() -> dict:
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rf",
            "-p",
            "no:cacheprovider",
            "-m",
            "slow",
            *SLOW_TESTS,
        ],
        cwd=PROJECT,
        capture_output=True,
        text=True,
    )
    summary = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
    # which test failed, and its last assertion line: a figure nobody can trace is no figure
    failed = [
        line.removeprefix("FAILED ").strip()
        for line in done.stdout.splitlines()
        if line.startswith("FAILED ")
    ]
    return {
        "exit": done.returncode,
        "summary": summary,
        "seconds": round(time.monotonic() - started, 1),
        "failed": failed,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="CI-sized samples: 20 writer trials, a sample of kill points, hung cases once.",
    )
    parser.add_argument(
        "--writer-trials",
        type=int,
        default=None,
        help="Second-writer trials (default 200; 20 with --quick).",
    )
    parser.add_argument(
        "--crash-trials",
        type=int,
        default=None,
        help="Kill trials (default: every kill point at every occurrence; 20 with --quick).",
    )
    parser.add_argument(
        "--sequence-sample",
        type=int,
        default=None,
        help="Step sequences to try (default: every step x kill point x next command; 35 with --quick).",
    )
    parser.add_argument(
        "--hung-repeat",
        type=int,
        default=None,
        help="Rounds of every hung-model case (default 3; 1 with --quick).",
    )
    parser.add_argument(
        "--no-pytest",
        action="store_true",
        help="Do not run the slow tests (`pytest -m slow`) afterwards.",
    )
    parser.add_argument("--out", type=Path, default=PROJECT / "docs" / "reliability.md")
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="Where the trial vaults go (default: a temporary folder, removed after).",
    )
    parser.add_argument(
        "--hostile-by-rule",
        action="store_true",
        help="Only rewrite the section 'the hand-written hostile corpus, by rule' (bench/hostile_by_rule.py), in seconds.",
    )
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE))
    import hostile_by_rule

    if args.hostile_by_rule:
        return hostile_by_rule.main(["--out", str(args.out)])
    writer_trials = args.writer_trials or (20 if args.quick else 200)
    crash_trials = (
        args.crash_trials if args.crash_trials is not None else (20 if args.quick else None)
    )
    hung_repeat = args.hung_repeat or (1 if args.quick else 3)
    sequence_sample = (
        args.sequence_sample if args.sequence_sample is not None else (35 if args.quick else None)
    )

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="cmem-reliability-"))
    workdir.mkdir(parents=True, exist_ok=True)
    isolate(workdir / "home")
    sys.path.insert(0, str(TESTS))
    import reliability_harness as harness
    import reply_variants as rv

    started_all = time.monotonic()
    figures: dict = {}
    t = step("crash consistency: SIGKILL at every step of apply and commit")
    figures["crash"] = crash_figures(workdir / "crash", crash_trials)
    figures["crash_seconds"] = round(time.monotonic() - t, 1)
    step("step sequences: each writing step killed at each point, then each next command")
    figures["sequences"] = sequence_figures(workdir / "sequences", sequence_sample)
    t = step(f"second writers: {writer_trials} trials")
    figures["writers"] = harness.run_writer_trials(writer_trials, workdir / "writers", seed=200)
    hostile, valid = rv.hostile_variants("{VAULT}", "{OUTSIDE}"), rv.valid_variants()
    t = step(f"hostile replies: {len(hostile)} through the real pass")
    figures["hostile"] = harness.reply_pass_trials(workdir / "hostile", hostile, expect="rejected")
    t = step(f"valid replies: {len(valid)} through the real pass")
    figures["valid"] = harness.reply_pass_trials(workdir / "valid", valid, expect="applied")
    figures["validator"] = validator_figures(hostile, valid, workdir)
    t = step(f"misbehaving models: {len(harness.HUNG_CASES)} cases x {hung_repeat}")
    figures["hung"] = harness.run_hung_model_trials(workdir / "hung", repeat=hung_repeat)
    t = step("a held .git/index.lock")
    figures["index_lock"] = index_lock_figure(workdir / "lock")
    figures["hand_written"] = {
        "hostile": len(list((TESTS / "replies" / "hostile").glob("*.txt"))),
        "valid": len(list((TESTS / "replies" / "valid").glob("*.txt"))),
    }
    if not args.no_pytest:
        step("the slow tests: pytest -m slow")
        figures["pytest_slow"] = run_slow_tests()
    figures["seconds"] = round(time.monotonic() - started_all, 1)

    report = render(figures, args, writer_trials, crash_trials, hung_repeat)
    report = report.rstrip("\n") + "".join("\n\n" + text for text in issue_sections(args.out))
    report = hostile_by_rule.splice(report, hostile_by_rule.render(hostile_by_rule.measure()))
    sys.path.insert(0, str(HERE))
    from builtin_histories import kept_section  # minutes to measure: kept as the file has it
    from redaction import (
        section as secrets_section,  # bench/redaction.py: the redaction figures, kept in the file
    )

    report = report.rstrip("\n") + "\n\n" + secrets_section()
    if kept_section(args.out):
        report = report.rstrip("\n") + "\n\n" + kept_section(args.out)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report, encoding="utf-8")
    (workdir / "figures.json").write_text(
        json.dumps(figures, ensure_ascii=False, indent=1, default=str), encoding="utf-8"
    )
    print(report)
    if args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if all_at_target(figures) else 1


def all_at_target(f: dict) -> bool:
    checks = [
        f["writers"]["edits_lost"] == 0,
        f["writers"]["skipped_reported"] == f["writers"]["skipped_writes"],
        f["writers"]["unreported"] == 0,
        f["writers"]["partial"] == 0,
        f["hostile"]["rejected"] == f["hostile"]["tried"],
        f["hostile"]["applied_partly"] == 0,
        f["hostile"]["wrote_outside_allowed"] == 0,
        f["valid"]["rejected"] <= f["valid"]["tried"] // 100,
        f["valid"]["wrote_outside_allowed"] == 0,
        f["hung"]["within_limit"] == f["hung"]["cases"],
        f["hung"]["orphans"] == 0,
        f["hung"]["locks_left"] == 0,
        f["index_lock"]["exit"] == 1
        and f["index_lock"]["names_the_lock"]
        and f["index_lock"]["seconds"] <= 10,
    ]
    if f["crash"]:
        checks.append(f["crash"]["survived"] == f["crash"]["trials"] > 0)
    checks.append(bool(f.get("sequences")) and sequences_at_target(f["sequences"]))
    if "pytest_slow" in f:
        checks.append(f["pytest_slow"]["exit"] == 0)
    return all(checks)


def _mark(ok: bool) -> str:
    return "yes" if ok else "**NO**"


def issue_sections(path: Path) -> list[str]:
    """The hand-kept `## Issue …` sections of the file (fault classes, their rules and tests):
    written by people, kept as the file has them."""
    if not path.exists():
        return []
    sections, current = [], None
    for line in path.read_text("utf-8").splitlines():
        if line.startswith(("## ", "<!--")):
            if current:
                sections.append("\n".join(current).rstrip("\n"))
            current = [line] if line.startswith("## Issue ") else None
        elif current is not None:
            current.append(line)
    if current:
        sections.append("\n".join(current).rstrip("\n"))
    return sections


def render(f: dict, args, writer_trials: int, crash_trials: int | None, hung_repeat: int) -> str:
    w, h, v, hung, lock = f["writers"], f["hostile"], f["valid"], f["hung"], f["index_lock"]
    crash = f["crash"]
    command = "python bench/reliability.py" + (" --quick" if args.quick else "")
    rows = []
    if crash:
        rows.append(
            (
                "Crash consistency: SIGKILL at each step of apply and commit",
                f"{crash['trials']} kills at {len(crash['kill_points'])} kill points ({', '.join(crash['kill_points'])}); "
                f"{crash['survived']} survived (every file old or new, `git fsck` clean {crash['fsck_clean']}, next run ok {crash['next_run_ok']})",
                "every kill survived",
                _mark(crash["survived"] == crash["trials"] > 0),
            )
        )
    else:
        rows.append(
            (
                "Crash consistency",
                "tests/crash_harness.py not found: not measured",
                "every kill survived",
                "**NO**",
            )
        )
    seq = f.get("sequences")
    if seq:
        steps = [name for name, info in seq["scenarios"].items() if not info.get("error")]
        rows.append(
            (
                "Step sequences: a writing step (converge, archive apply, undo, doctor --fix) SIGKILLed at each point it reaches, then each next command",
                f"{seq['tried']} sequences ({'every' if seq.get('sample') is None else 'a sample of'} step × kill point × next command, "
                f"{len(steps)} steps); {seq['survived']} survived; notes lost {seq['notes_lost']}, duplicated {seq['notes_duplicated']} "
                f"(in {seq['sequences_losing_a_note']} and {seq['sequences_duplicating_a_note']} sequences); memory statements lost "
                f"{seq['statements_lost']}; converged notes no longer cited {seq['converged_work_lost']}",
                "every sequence survived; 0 lost, 0 duplicated",
                _mark(sequences_at_target(seq)),
            )
        )
    else:
        rows.append(
            (
                "Step sequences",
                "tests/sequence_harness.py not found: not measured",
                "every sequence survived",
                "**NO**",
            )
        )
    rows += [
        (
            "Second writers: an input note or a written file edited at a random moment",
            f"{w['trials']} trials (before the model call {w['by_phase']['before']}, during {w['by_phase']['during']}, "
            f"after {w['by_phase']['after']}, after the pass {w['by_phase']['late']}); edits lost: {w['edits_lost']}; "
            f"writes skipped {w['skipped_writes']}, reported {w['skipped_reported']}; input edits warned {w['inputs_changed_warned']}",
            "0 lost, every skip reported",
            _mark(
                w["edits_lost"] == 0
                and w["skipped_reported"] == w["skipped_writes"]
                and w["unreported"] == 0
                and w["partial"] == 0
            ),
        ),
        (
            "Held `.git/index.lock`",
            f"exit {lock['exit']} after {lock['seconds']} s, naming the lock: {'yes' if lock['names_the_lock'] else 'no'}",
            "clear error ≤ 10 s",
            _mark(lock["exit"] == 1 and lock["names_the_lock"] and lock["seconds"] <= 10),
        ),
        (
            "Hostile replies through the real pass (generated)",
            f"{h['tried']} tried, {h['rejected']} rejected, {h['applied_partly']} applied partly, {h['wrote_outside_allowed']} wrote outside the allowed paths",
            "all rejected, 0 partial, 0 outside",
            _mark(
                h["rejected"] == h["tried"]
                and h["applied_partly"] == 0
                and h["wrote_outside_allowed"] == 0
            ),
        ),
        (
            "Valid replies through the real pass (generated)",
            f"{v['tried']} tried, {v['rejected']} falsely rejected ({v['rejected'] / max(v['tried'], 1):.1%}), {v['wrote_outside_allowed']} wrote outside the allowed paths",
            "≤ 1% false rejections",
            _mark(v["rejected"] <= v["tried"] // 100 and v["wrote_outside_allowed"] == 0),
        ),
        (
            "Misbehaving model (hang, grandchild holding stdout, ignores SIGTERM, past the timeout, floods, streams 1 GB, never reads stdin)",
            f"{hung['cases']} runs of `cmem converge`; {hung['within_limit']} returned within timeout + 5 s; worst {hung['worst_seconds_over_timeout']} s over "
            f"its timeout ({hung['worst']['case'] if hung['worst'] else '-'}); orphans {hung['orphans']}; locks left {hung['locks_left']}; "
            f"vaults changed {hung['vaults_changed']}; peak memory {hung['peak_rss_mb']} MB",
            "100% within timeout + 5 s, 0 orphans",
            _mark(
                hung["within_limit"] == hung["cases"]
                and hung["orphans"] == 0
                and hung["locks_left"] == 0
            ),
        ),
    ]
    table = ["| Trial | Result | Target | At target |", "| --- | --- | --- | --- |"]
    table += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    hostile_categories = {}
    import reply_variants as rv

    for variant in rv.hostile_variants():
        hostile_categories[variant.category] = hostile_categories.get(variant.category, 0) + 1
    slow = f.get("pytest_slow")
    lines = [
        "# Reliability figures",
        "",
        f"Measured {dt.date.today().isoformat()} on {platform.system()} {platform.release()} ({platform.machine()}), "
        f"Python {platform.python_version()}, {subprocess.run(['git', '--version'], capture_output=True, text=True).stdout.strip()}; "
        f"{f['seconds']:.0f} s in all. Reproduce with:",
        "",
        "```sh",
        command,
        "```",
        "",
        "Every figure comes from real `cmem` passes on throwaway vaults — real git, real processes, real "
        "SIGKILLs — with `tests/fake_llm.py` standing in for the model (no model is called). The default "
        "`pytest` run takes a sample of each (20 second-writer trials, a sample of kill points and replies); "
        "`pytest -m slow` and this script run all of them.",
        "",
        *table,
        "",
        "## What each trial does",
        "",
        "- **Crash consistency** (`tests/crash_harness.py`): a pass is SIGKILLed at the n-th time it reaches each "
        "step of its apply and commit (journal written, temp write, fsync, rename, each replace, applied, "
        "git add, during git commit, committed); then every file it meant to write must be byte-equal to its "
        "old or its new version, `git fsck` clean, and the next run must finish or undo the pass."
        + (
            f" Kill trials: {'every point at every occurrence' if crash_trials is None else crash_trials}."
            if crash
            else ""
        ),
        "- **Step sequences** (`tests/sequence_harness.py`): every writing step — a pass (`converge --engine builtin`), "
        "`archive apply --all --yes` after a pass, `undo --yes` of an archive apply and of a pass, `doctor --fix --yes` after "
        "a pass, an archive apply or an undo that was killed — is SIGKILLed at every kill point it reaches (found by one "
        "undisturbed run with `CMEM_FAULT_LOG`), at every occurrence; then each next command runs (converge, "
        '`archive apply --all --yes`, `undo --yes`, `note "a new line"`, `doctor --fix --yes`), then a final pass and '
        "`cmem scan`. After the next command and again after the final pass: every root or archived note is exactly once on "
        "disk and in HEAD; every memory statement of the commit before the kill is still in HEAD's memory files (verbatim, "
        "in a trace, or dropped on record) unless an undo took back the pass that added it; every note state.json records "
        "as converged is still cited where it went; state.json names only paths in HEAD and only steps that were committed; "
        "the working tree equals HEAD on managed paths; no half step is committed as hand edits; `git fsck` is clean; the "
        "final pass exits 0. Reproduce with `"
        + (seq["command"] if seq else "python tests/sequence_harness.py")
        + "`"
        + (f" ({seq['seconds']:.0f} s with {seq['jobs']} jobs)." if seq else "."),
        "- **Second writers** (`run_writer_trials`): during a pass whose fake model sleeps 20–250 ms, a thread edits "
        "one of the pass's written files (the profile, the archive checklist), one of its input notes, or a memory "
        "file it does not write — in place, by rename (as editors save) or by append — at a random moment from before "
        "the pass to after it. An edit is lost when its line is missing afterwards. A write the pass skips must be "
        "reported (the error names the file) with nothing of the pass left; an input note edited after it was read "
        "must be named in a warning (its new lines stay pending).",
        f"- **Hostile replies** (`tests/reply_variants.py`, {h['tried']} generated): "
        + ", ".join(f"{n} {c}" for c, n in sorted(hostile_categories.items()))
        + f". Path attacks ({len(rv.HOSTILE_PATHS)} paths: `..`, absolute, `~`, Windows drive and UNC paths, backslashes, `.git/`, "
        "`.obsidian/plugins/…`, `.cmem/`, the archive, `archive/../x.md`, the divergent root, unmanaged folders, links out of "
        "the vault, Unicode look-alikes of `/` and `.`, zero-width and bidi characters, control characters, entities, "
        "sync-conflict names, over-long names) each in four places: alone, after a valid block, before one, and as a "
        "`<converged into>` target. Each is run through the real pass from the fake model; the vault, the folder beside it "
        "and the likely escape targets are compared byte for byte before and after. The "
        f"{f['hand_written']['hostile']} hand-written hostile replies in `tests/replies/hostile/` run the same way in `tests/converge/test_converge.py`.",
        f"- **Valid replies** ({v['tried']} generated): different statement sets, traces (nested, English and Chinese), merged "
        "and dropped duplicates, reordering, frontmatter tweaks, edits to a topic file, new topic files (one in a subfolder, "
        "one with a CJK name), replies that only defer, notes named by path or by name — wrapped plain, with chatter in "
        "English or Chinese, in a code fence, with CRLF, single quotes, a BOM, blank lines, the tail first, or an unknown "
        "element. An applied one must write exactly its file blocks (plus state and checklist).",
        "- **Misbehaving models** (`run_hung_model_trials`): `cmem converge` run as a user runs it, with the fake model in "
        "each bad mode; orphans are processes carrying the run's marker still alive afterwards; memory is the peak RSS of "
        "cmem and its children.",
        "- **Held index.lock**: `.git/index.lock` present (another git, or a crashed one): cmem waits up to "
        "5 s for it to go, then stops with one sentence naming it.",
        "",
        "The validator alone, on the same variants: "
        f"{len(f['validator']['hostile_accepted'])} hostile accepted, {len(f['validator']['valid_rejected'])} valid rejected.",
    ]
    if slow:
        lines += [
            "",
            f"The slow tests (`pytest -m slow {' '.join(SLOW_TESTS)}`): {slow['summary']} ({slow['seconds']} s).",
        ]
        lines += [f"- failed: {name}" for name in slow.get("failed", [])]
    problems = (
        w["problems"] + h["unexpected"] + v["unexpected"] + (crash["problems"] if crash else [])
    )
    if problems:
        lines += ["", "## Problems", ""] + [f"- {p}" for p in problems[:50]]
    if seq and not sequences_at_target(seq):
        lines += [
            "",
            "## Step sequences that failed",
            "",
            "Sequences failing each invariant, with one example (`python tests/sequence_harness.py --json` lists every one):",
            "",
        ]
        lines += [
            f"- {kind}: {count} — e.g. {seq['examples'][kind][:300]}"
            for kind, count in seq["failures_by_kind"].items()
        ]
        pairs = [
            f"{pair} {row['survived']}/{row['tried']}"
            for pair, row in sorted(seq["by_pair"].items())
            if row["survived"] < row["tried"]
        ]
        lines += [
            "",
            "Survived / tried per step → next command, where any failed: " + "; ".join(pairs) + ".",
        ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
