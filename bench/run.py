#!/usr/bin/env python3
"""cmem's benchmark: every figure next to its floor, measured in the same run (docs/design.md §12).

    python bench/run.py [--sizes 1000,10000,50000] [--repeat 7] [--out docs/benchmarks.md]
                        [--workdir bench/vaults] [--cmem PATH] [--rg PATH]

Stdlib only; it runs `cmem`, `rg` and `git` as whole processes. It generates synthetic vaults with
`bench/gen_vault.py` (deterministic: seed 42), adopts them with `cmem init`, commits the notes,
then times each cmem command against its floor in paired alternation: warm-up rounds first, then
A B [C …] A B [C …] …, so both sides see the same machine noise; each ratio is taken round by round
(the method docs/benchmarks.md describes). It prints the table and writes a Markdown report.

Everything runs with HOME, XDG_* and the git identity pointed under the work folder, so no run
touches the real home or cmem's real state folder. The generated vaults stay in the work folder
(git-ignored); nothing is committed.

Floors: `python -c pass` (the same interpreter cmem runs on), `rg -c` over the divergent layer
with cmem's own cue set (`cmem.text.cues.cue_set()`), a Python `os.scandir` stat walk of the vault,
and a Python read of every divergent note's bytes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent
GEN_VAULT = HERE / "gen_vault.py"
SAMPLE_VAULT = PROJECT / "sample-vault"
SEED = 42
ANALYSIS_START = "<!-- analysis:start (hand-written; kept when the report is regenerated) -->"
ANALYSIS_END = "<!-- analysis:end -->"

# Every row of the main table, by id; the smoke test checks each one appears.
FIGURES = {
    "help": "start-up: `cmem --help`",
    "status": "warm `cmem status`",
    "scan": "warm `cmem scan`",
    "cold_scan": "cold scan, divergent layer",
    "cold_notes": "cold scan, the guard index rebuilt too (diagnostic)",
    "read_floor": "cold scan vs the bytes-read floor",
    "rescan": "warm full-vault rescan (`cmem status`)",
    "rescan_full": "`cmem status --rescan` (full walk and read, caches warm; diagnostic)",
    "context": "warm `cmem context`",
    "emit_prompt": "`cmem converge --emit-prompt`",
    "builtin_pass": "`cmem converge --engine builtin`",
    "builtin_one": "`cmem converge --engine builtin`, one new note, caches warm",
    "builtin_one_floor": "the same pass against its own I/O and git, without cmem's logic (diagnostic)",
    "builtin_one_loaded": "the pass's I/O and git with its modules imported, none of its work (diagnostic)",
    "typer_floor": "`import typer` alone, the command table's framework (diagnostic)",
    "builtin_one_terminal": "the same pass on a terminal against off one (diagnostic)",
    "builtin_next": "the next one-note pass after a pass, nothing reset between (diagnostic)",
}

# Run inside cmem's own interpreter: cmem's cue set, its state folder, its token estimate.
HELPER = r"""
import json, os, sys
from pathlib import Path

def walk_notes(top):
    stack = [top]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.name.endswith(".md") and entry.is_file(follow_symlinks=False):
                    yield entry.path

command, args = sys.argv[1], sys.argv[2:]
if command == "cues":
    from cmem.text.cues import cue_set
    print(json.dumps(sorted({cue.text for cue in cue_set()})))
elif command == "statedir":
    from cmem.vault.layers import machine_dir_for
    print(machine_dir_for(Path(args[0])))
elif command == "tokens":
    from cmem.text.tokens import estimate_tokens
    print(json.dumps([estimate_tokens(Path(a).read_text("utf-8", errors="replace")) for a in args]))
elif command == "vault-tokens":
    from cmem.text.tokens import estimate_tokens
    root = args[0]
    layers = {}
    for path in walk_notes(root):
        rel = os.path.relpath(path, root).replace(os.sep, "/")
        if rel == "archive/ARCHIVE-CHECKLIST.md":  # cmem's own checklist, not a note
            continue
        if "/" not in rel:
            layer = "divergent"
        elif rel.startswith("converged/core/"):
            layer = "resident"
        elif rel.startswith("converged/topics/"):
            layer = "situational"
        elif rel.startswith("archive/"):
            layer = "archive"
        else:
            layer = "other"
        with open(path, "rb") as handle:
            text = handle.read().decode("utf-8", errors="replace")
        entry = layers.setdefault(layer, [0, 0])
        entry[0] += 1
        entry[1] += estimate_tokens(text)
    print(json.dumps(layers))
elif command == "pstats":
    import io, pstats
    out = io.StringIO()
    stats = pstats.Stats(args[0], stream=out)
    print("== cmem's own functions by cumulative time ==")
    stats.sort_stats("cumulative").print_stats(r"/cmem/(?!cli\.py|__main__\.py)[\w/]+\.py:\d+\((?!<module>)", int(args[1]))
    print(out.getvalue()); out.seek(0); out.truncate()
    print("== every function by own time ==")
    stats.sort_stats("tottime").print_stats(int(args[1]) // 2)
    print(out.getvalue())
"""

# The floors, as scripts run by the same interpreter as cmem.
STAT_WALK = r"""
import os, sys
count = 0
stack = [sys.argv[1]]
while stack:
    with os.scandir(stack.pop()) as entries:
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
            elif entry.name.endswith(".md"):
                entry.stat(follow_symlinks=False)
                count += 1
print(count)
"""

READ_DIVERGENT = r"""
import os, sys
total = 0
with os.scandir(sys.argv[1]) as entries:
    for entry in entries:
        if entry.name.endswith(".md") and not entry.name.startswith(".") and entry.is_file(follow_symlinks=False):
            with open(entry.path, "rb") as handle:
                total += len(handle.read())
print(total)
"""

# cmem.cache_store.RACY_NS, in seconds (this script does not import cmem: it times the cmem
# installed beside the interpreter it is given)
CMEM_RACY_SECONDS = 2.0

NEW_NOTE = """# bench: one more note

其实不是这样的：基准测试的新笔记应该进入下一次收敛。
Actually, the new note should enter the next pass.
"""


# The everyday sequence: a note edited after the last pass, then the next pass (`bench_builtin_one`).
NEXT_NOTE_NAME = "zz bench next note.md"
NEXT_NOTE = """# bench: the next note

其实不是这样的：第 {n} 条新笔记应该进入下一次收敛。
Actually, note {n} should enter the next pass.
"""


class BenchError(Exception):
    """A command failed: the figure is reported as failed, with the command's own error."""

    def __init__(self, argv: list[str], code: int, stderr: str):
        self.argv, self.code, self.stderr = argv, code, stderr
        super().__init__(f"{' '.join(argv)} exited {code}")


# --- tools and environment --------------------------------------------------------------------


@dataclass
class Tools:
    cmem: list[str]  # argv prefix running cmem
    python: str  # cmem's interpreter, for the floors and helpers
    rg: str
    env: dict
    workdir: Path
    helper: Path
    scripts: dict = field(default_factory=dict)


def _shebang_python(script: Path) -> str | None:
    try:
        with open(script, "rb") as handle:
            first = handle.readline().decode("utf-8", "replace").strip()
    except OSError:
        return None
    if not first.startswith("#!") or "python" not in first:
        return None
    parts = first[2:].split()
    if parts and parts[0].endswith("/env") and len(parts) > 1:
        return shutil.which(parts[1])
    return parts[0] if parts and os.path.exists(parts[0]) else None


def find_tools(args, workdir: Path) -> Tools:
    bin_dir = Path(sys.executable).parent
    cmem_path = (
        args.cmem
        or shutil.which("cmem")
        or (str(bin_dir / "cmem") if (bin_dir / "cmem").exists() else None)
    )
    if cmem_path:
        cmem = [cmem_path]
        python = _shebang_python(Path(cmem_path)) or sys.executable
    else:
        cmem, python = [sys.executable, "-m", "cmem"], sys.executable
    rg = (
        args.rg
        or shutil.which("rg")
        or (str(bin_dir / "rg") if (bin_dir / "rg").exists() else None)
    )
    if not rg:
        sys.exit(
            "rg not found: install it (`pip install --only-binary :all: ripgrep`) or pass --rg PATH."
        )
    home = workdir / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CMEM_", "GIT_", "XDG_"))}
    env.update(
        {
            "HOME": str(home),
            "XDG_STATE_HOME": str(workdir / "state"),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_DATA_HOME": str(home / ".local/share"),
            "GIT_AUTHOR_NAME": "cmem bench",
            "GIT_AUTHOR_EMAIL": "bench@localhost",
            "GIT_COMMITTER_NAME": "cmem bench",
            "GIT_COMMITTER_EMAIL": "bench@localhost",
            "GIT_CONFIG_NOSYSTEM": "1",
            "NO_COLOR": "1",
            "COLUMNS": "120",
            "LC_ALL": "C.UTF-8",
        }
    )
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    home.mkdir(parents=True, exist_ok=True)
    scripts_dir = workdir / "scripts"
    scripts_dir.mkdir(parents=True, exist_ok=True)
    scripts = {}
    for name, text in (
        ("helper", HELPER),
        ("stat_walk", STAT_WALK),
        ("read_divergent", READ_DIVERGENT),
    ):
        path = scripts_dir / f"{name}.py"
        path.write_text(text.lstrip(), encoding="utf-8")
        scripts[name] = path
    return Tools(cmem, python, rg, env, workdir, scripts["helper"], scripts)


def run(
    argv: list[str], tools: Tools, ok=(0,), env: dict | None = None
) -> subprocess.CompletedProcess:
    result = subprocess.run(
        argv, env=tools.env if env is None else env, capture_output=True, text=True
    )
    if result.returncode not in ok:
        raise BenchError(
            argv, result.returncode, (result.stderr or "") + (result.stdout or "")[-2000:]
        )
    return result


def helper(tools: Tools, *args: str):
    """Run HELPER in cmem's interpreter: JSON back, or the state folder's path for `statedir`."""
    out = run([tools.python, str(tools.helper), *args], tools).stdout
    return Path(out.strip()) if args[0] == "statedir" else json.loads(out)


# --- vaults -----------------------------------------------------------------------------------


RACY_WAIT = 2.2  # seconds: cmem's racy window (2 s) and a margin


def make_vault(tools: Tools, size: int) -> Path:
    root = tools.workdir / f"vault-{size}"
    started = time.perf_counter()
    generated = run(
        [
            sys.executable,
            str(GEN_VAULT),
            str(root),
            "-n",
            str(size),
            "--seed",
            str(SEED),
            "--force",
        ],
        tools,
    )
    adopt(tools, root)
    info = json.loads(generated.stdout)
    log(
        f"  vault-{size}: {info['notes']} notes, {info['bytes'] / 1e6:.1f} MB, generated and committed in {time.perf_counter() - started:.1f} s"
    )
    # cmem keeps a stored answer only when every file in its key is older than the racy window
    # (cmem.cache_store.RACY_NS, 2 s): measured at once, the warm rows of the 1k vault timed
    # misses (its answers not stored yet) in four rounds of five
    time.sleep(RACY_WAIT)
    return root


def adopt(tools: Tools, root: Path) -> None:
    """`cmem init` (adopts the folder without rewriting it), then commit the notes so a pass's
    snapshot step has nothing to do."""
    run(
        [*tools.cmem, "init", "--repo", "own", str(root)], tools
    )  # own: the work folder may sit inside a repository
    run(["git", "-C", str(root), "add", "-A"], tools)
    # gc.auto=0: 10k new loose objects start a background `git gc`, which packs them away while
    # the next step copies the repository (a copy then misses objects and fails)
    run(
        ["git", "-C", str(root), "-c", "gc.auto=0", "commit", "-q", "--no-verify", "-m",
         "bench: generated notes"],
        tools,
        ok=(0, 1),
    )  # fmt: skip


def copy_vault(source: Path, target: Path) -> Path:
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, symlinks=True)
    return target


def vault_shape(root: Path) -> dict[str, tuple[int, int]]:
    """Notes and bytes per layer (cmem's default layers), for the report."""
    shape: dict[str, list[int]] = {}
    stack = [root]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                    continue
                rel = Path(entry.path).relative_to(root).as_posix()
                if (
                    not entry.name.endswith(".md") or rel == "archive/ARCHIVE-CHECKLIST.md"
                ):  # cmem's own checklist
                    continue
                layer = (
                    "divergent"
                    if "/" not in rel
                    else "resident"
                    if rel.startswith("converged/core/")
                    else "situational"
                    if rel.startswith("converged/topics/")
                    else "archive"
                    if rel.startswith("archive/")
                    else "other"
                )
                counts = shape.setdefault(layer, [0, 0])
                counts[0] += 1
                counts[1] += entry.stat(follow_symlinks=False).st_size
    return {layer: (counts[0], counts[1]) for layer, counts in shape.items()}


def render_shapes(shapes: dict[str, dict]) -> str:
    layers = ("divergent", "resident", "situational", "archive")
    lines = [
        "| vault | " + " | ".join(f"{layer} notes (MB)" for layer in layers) + " |",
        "|---" * (len(layers) + 1) + "|",
    ]
    for label, shape in shapes.items():
        cells = [
            f"{shape[layer][0]:,} ({shape[layer][1] / 1e6:.1f})" if layer in shape else "0"
            for layer in layers
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def check_layout(root: Path) -> list[str]:
    """gen_vault's layout must match cmem's default layers, or the vault needs a config."""
    missing = [
        folder
        for folder in ("converged/core", "converged/topics", "archive")
        if not (root / folder).is_dir()
    ]
    return [
        f"{root.name}: no {folder}/ (gen_vault and cmem's default layers disagree)"
        for folder in missing
    ]


# --- timing -----------------------------------------------------------------------------------


@dataclass
class Command:
    key: str
    argv: list[str]
    setup: object = None  # called before every run, untimed
    ok: tuple = (0,)


def time_group(
    tools: Tools, commands: list[Command], repeat: int, warmup: int
) -> dict[str, list[float]]:
    """Whole-process wall times in ms. Each round runs every command once, in order; warm-up
    rounds are dropped. Ratios are later taken within a round."""
    times: dict[str, list[float]] = {c.key: [] for c in commands}
    for round_no in range(warmup + repeat):
        for command in commands:
            if command.setup:
                command.setup()
            started = time.perf_counter()
            result = subprocess.run(
                command.argv,
                env=tools.env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            elapsed = (time.perf_counter() - started) * 1000
            if result.returncode not in command.ok:
                raise BenchError(command.argv, result.returncode, result.stderr)
            if round_no >= warmup:
                times[command.key].append(elapsed)
    return times


def summary(values: list[float]) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)


@dataclass
class Row:
    figure: str  # key of FIGURES
    vault: str
    cmem_ms: list[float] | None
    floor: str
    floor_ms: list[float] | None
    target: float | None = None  # ratio target (median must be ≤)
    target_text: str = "—"
    stretch: float | None = None
    error: str = ""
    note: str = ""

    @property
    def ratios(self) -> list[float] | None:
        if not self.cmem_ms or not self.floor_ms:
            return None
        return [a / b for a, b in zip(self.cmem_ms, self.floor_ms)]

    @property
    def met(self) -> str:
        if self.error:
            return "FAILED"
        if self.target is None or not self.ratios:
            return "—"
        median = summary(self.ratios)[0]
        if median > self.target:
            return "**no**"
        if self.stretch is not None:
            return "yes (stretch too)" if median <= self.stretch else "yes (not the stretch)"
        return "yes"


def fmt_ms(values: list[float] | None) -> str:
    if not values:
        return "—"
    med, lo, hi = summary(values)
    return f"{_num(med)} ({_num(lo)}-{_num(hi)})"


def fmt_ratio(values: list[float] | None) -> str:
    if not values:
        return "—"
    med, lo, hi = summary(values)
    return f"{med:.2f}× ({lo:.2f}-{hi:.2f})"


def _num(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- the figures ------------------------------------------------------------------------------


def python_pass(tools: Tools) -> Command:
    return Command("pass", [tools.python, "-c", "pass"])


HELP_ROUNDS = 3  # × --repeat: a start-up round takes ~0.1 s, and its ratio is the noisiest


def bench_help(tools: Tools, args) -> list[Row]:
    log("start-up: cmem --help vs python -c pass")
    try:
        typer = Command("typer", [tools.python, "-c", "import typer"])
        times = time_group(
            tools,
            [Command("help", [*tools.cmem, "--help"]), python_pass(tools), typer],
            args.repeat * HELP_ROUNDS,
            args.warmup + 1,
        )
    except BenchError as exc:
        return [failed_row("help", "—", "`python -c pass`", exc)]
    return [
        Row("help", "—", times["help"], "`python -c pass`", times["pass"], 4, "≤ 4×"),
        # every command line is read by typer: what its import alone costs is under every line
        Row("typer_floor", "—", times["typer"], "`python -c pass`", times["pass"]),
    ]


def failed_row(figure: str, vault: str, floor: str, exc: BenchError) -> Row:
    return Row(
        figure,
        vault,
        None,
        floor,
        None,
        error=f"`{' '.join(exc.argv)}` exited {exc.code}:\n{exc.stderr.strip()}",
    )


def bench_warm(tools: Tools, args, root: Path, label: str, size: int) -> list[Row]:
    """status, scan and context with their caches warm, against `python -c pass` and the stat walk."""
    log(f"{label}: warm status, scan, context vs python -c pass and the stat walk")
    vault = ["--vault", str(root)]
    commands = [
        Command("status", [*tools.cmem, "status", *vault]),
        python_pass(tools),
        Command("scan", [*tools.cmem, "scan", *vault]),
        Command("walk", [tools.python, str(tools.scripts["stat_walk"]), str(root)]),
        Command("context", [*tools.cmem, "context", *vault]),
        Command("rescan_full", [*tools.cmem, "status", "--rescan", *vault]),
    ]
    # issue 45's lines, through the one command table: status and scan ≤ 8×, context ≤ 10×
    warm_target = {10_000: (8, "≤ 8× (10k)"), 50_000: (8, "≤ 8× (50k)")}.get(
        size, (None, "(≤ 8× at 10k and 50k)")
    )
    context_target = (10, "≤ 10× (10k)") if size == 10_000 else (None, "(≤ 10× at 10k)")
    # the issue sets the rescan's line for the 10k vault, as every line it does not size
    rescan_target = (1.0, "≤ 1.0× (10k)") if size == 10_000 else (None, "(≤ 1.0× at 10k)")
    try:
        times = time_group(tools, commands, args.repeat, args.warmup + 1)
    except BenchError as exc:
        return [
            failed_row(key, label, floor, exc)
            for key, floor in (
                ("status", "`python -c pass`"),
                ("scan", "`python -c pass`"),
                ("rescan", "stat walk"),
                ("context", "`python -c pass`"),
                ("rescan_full", "stat walk"),
            )
        ]
    return [
        Row("status", label, times["status"], "`python -c pass`", times["pass"], *warm_target),
        Row("scan", label, times["scan"], "`python -c pass`", times["pass"], *warm_target),
        Row(
            "rescan",
            label,
            times["status"],
            "Python `os.scandir` stat walk",
            times["walk"],
            *rescan_target,
        ),
        Row(
            "rescan_full",
            label,
            times["rescan_full"],
            "Python `os.scandir` stat walk",
            times["walk"],
        ),
        Row("context", label, times["context"], "`python -c pass`", times["pass"], *context_target),
    ]


def bench_cold_scan(tools: Tools, args, root: Path, label: str, cues: list[str]) -> list[Row]:
    """`cmem scan` with cmem's scan cache removed before every run (page cache warm) against `rg -c`
    over the same files and cues, and against reading the same bytes in Python."""
    log(f"{label}: cold scan vs rg -c and the bytes-read floor")
    state = helper(tools, "statedir", str(root))
    results = (
        tools.workdir / "state" / "cmem" / "results"
    )  # the commands' stored answers (XDG_STATE_HOME is the work folder's)

    def drop_results():
        shutil.rmtree(results, ignore_errors=True)

    # The note entries (`scan-cache.*`) go before every cold run; the guard index (the convergent
    # layer's statements, `guard-index.*`) is kept, as a cold scan of new notes finds it. The
    # diagnostic row drops it too.
    def drop_matching(*words: str) -> None:
        drop_results()
        if not state.is_dir():
            return
        for path in state.iterdir():
            if any(word in path.name.lower() for word in words):
                if path.is_dir():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    try:
                        path.unlink()
                    except FileNotFoundError:
                        pass

    def drop_scan_cache():
        drop_matching("scan")

    def drop_note_entries():
        drop_matching("scan", "guard")

    note = "removed before each run: the note entries (`scan-cache.*`) and the stored results (`cmem/results/`); the guard index kept"
    # --no-ignore: the same files cmem reads, whatever .gitignore files say (rg skips dot-files, as cmem does)
    rg_argv = [tools.rg, "-c", "-F", "-i", "--no-ignore", "--max-depth", "1", "-g", "*.md"]
    for cue in cues:
        rg_argv += ["-e", cue]
    rg_argv.append(str(root))

    commands = [
        Command("cold", [*tools.cmem, "scan", "--vault", str(root)], setup=drop_scan_cache),
        Command("rg", rg_argv, ok=(0, 1)),
        Command("read", [tools.python, str(tools.scripts["read_divergent"]), str(root)]),
        Command("cold_notes", [*tools.cmem, "scan", "--vault", str(root)], setup=drop_note_entries),
    ]
    try:
        times = time_group(tools, commands, args.repeat, args.warmup)
    except BenchError as exc:
        return [
            failed_row(key, label, floor, exc)
            for key, floor in (
                ("cold_scan", "`rg -c`"),
                ("cold_notes", "`rg -c`"),
                ("read_floor", "Python read"),
            )
        ]
    rg_label = f"`rg -c -F -i --no-ignore --max-depth 1` ({len(cues)} cues)"
    # the issue sets the line for the 10k vault; the other sizes show how the figure grows
    target = (15, "≤ 15× (10k)") if label == "10k" else (None, "(≤ 15× at 10k)")
    return [
        Row("cold_scan", label, times["cold"], rg_label, times["rg"], *target, note=note),
        Row(
            "cold_notes",
            label,
            times["cold_notes"],
            rg_label,
            times["rg"],
            note="the note entries, the guard index (`guard-index.*`) and the stored results removed before each run",
        ),
        Row(
            "read_floor",
            label,
            times["cold"],
            "Python: read every divergent note's bytes",
            times["read"],
        ),
    ]


# --- convergence ------------------------------------------------------------------------------


@dataclass
class ConvergeFacts:
    vault: str
    prompt_tokens: int = 0
    vault_tokens: int = 0
    layer_tokens: dict = field(default_factory=dict)
    files_quoted: int = 0
    notes_quoted: int = 0
    prompt_tokens_no_archive: int | None = None
    prefix_share: float | None = None
    new_note_in_prompt: bool | None = None
    new_note_how: str = ""
    fixed_tokens: int = 0
    diverges_in: str = ""
    pass_outcome: str = ""
    error: str = ""


def common_prefix(a: str, b: str) -> int:
    low, high = 0, min(len(a), len(b))
    while low < high:  # binary search on equal prefixes: fast on long strings
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def quoted_paths(prompt: str, kind: str, root: Path) -> set[str]:
    """Vault files quoted in the prompt as `<file path=…>` or `<note path=…>` blocks (the
    instructions' own examples name files that may not exist: those are not counted)."""
    found = re.findall(rf'^<{kind} path="([^"]+)"', prompt, flags=re.MULTILINE)
    return {path for path in found if (root / path).is_file()}


def notes_heading(prompt: str) -> int:
    """Where the divergent notes start: everything before is instructions and memory files."""
    for heading in ("\n# 发散笔记", "\n# Divergent notes"):
        at = prompt.find(heading)
        if at >= 0:
            return at
    return len(prompt)


def section_at(prompt: str, offset: int) -> str:
    """The prompt's own section (its last `# ` heading outside quoted files and notes) holding
    `offset`, and the quoted file or note it falls in, if any."""
    heading, quoted, position = "the instructions", "", 0
    for line in prompt[:offset].splitlines(keepends=True):
        if line.startswith(("<file path=", "<note path=")):
            quoted = prompt[position : prompt.find(">", position) + 1]
        elif line.startswith(("</file>", "</note>")):
            quoted = ""
        elif not quoted and line.startswith("# "):
            heading = line[2:].strip()
        position += len(line)
    return heading + (f", inside {quoted}" if quoted else "")


def emit_prompt(tools: Tools, root: Path, name: str) -> tuple[str, Path]:
    result = run([*tools.cmem, "converge", "--emit-prompt", "--vault", str(root)], tools)
    path = tools.workdir / "prompts" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(result.stdout, encoding="utf-8")
    return result.stdout, path


def bench_converge(tools: Tools, args, source: Path, label: str) -> tuple[list[Row], ConvergeFacts]:
    log(f"{label}: converge --emit-prompt (tokens, stable prefix, archive) and builtin passes")
    facts = ConvergeFacts(label)
    rows: list[Row] = []
    base = tools.workdir / "converge"
    try:
        with_archive = copy_vault(source, base / f"{label}-prompt")
        without_archive = copy_vault(source, base / f"{label}-no-archive")
        shutil.rmtree(without_archive / "archive", ignore_errors=True)
        (without_archive / "archive").mkdir()
        checklist = source / "archive" / "ARCHIVE-CHECKLIST.md"
        if checklist.exists():
            shutil.copy2(checklist, without_archive / "archive" / checklist.name)
        first, first_path = emit_prompt(tools, with_archive, f"{label}-1.txt")
        if not first:
            facts.error = "`cmem converge --emit-prompt` printed nothing (nothing pending?)"
        layers = helper(tools, "vault-tokens", str(with_archive))
        facts.layer_tokens = {k: v[1] for k, v in layers.items()}
        facts.vault_tokens = sum(facts.layer_tokens.values())
        facts.files_quoted = len(quoted_paths(first, "file", with_archive))
        facts.notes_quoted = len(quoted_paths(first, "note", with_archive))
        third, third_path = emit_prompt(tools, without_archive, f"{label}-no-archive.txt")
        notes_at = notes_heading(first)
        fixed_path = first_path.with_name(f"{label}-1-fixed.txt")
        fixed_path.write_text(first[:notes_at], encoding="utf-8")
        facts.prompt_tokens, facts.prompt_tokens_no_archive, facts.fixed_tokens = helper(
            tools, "tokens", str(first_path), str(third_path), str(fixed_path)
        )
        new_note = with_archive / "zz bench new note.md"
        new_note.write_text(NEW_NOTE, encoding="utf-8")
        second, _ = emit_prompt(tools, with_archive, f"{label}-2.txt")
        facts.new_note_in_prompt = 'path="zz bench new note.md"' in second
        if not facts.new_note_in_prompt:
            # Over budget, the newest note waits. Make it the oldest correction so it is selected
            # first, as it would be in a later pass: the prefix share then says what a prompt cache
            # keeps when the selected notes change.
            oldest = min(p.stat().st_mtime for p in with_archive.glob("*.md") if p != new_note)
            os.utime(new_note, (oldest - 60, oldest - 60))
            second, _ = emit_prompt(tools, with_archive, f"{label}-2.txt")
            facts.new_note_in_prompt = 'path="zz bench new note.md"' in second
            facts.new_note_how = "as the oldest note (as the newest it waited: budget)"
        new_note.unlink()
        # Warm means nothing changed lately: within the racy window after that unlink (the root
        # folder's mtime) cmem may not store a prompt, so the first timed runs would each build
        # it afresh — how many depends on how fast each run is, not on what is measured.
        time.sleep(CMEM_RACY_SECONDS + 0.1)
        shared = common_prefix(first, second)
        facts.prefix_share = shared / len(second) if second else None
        facts.diverges_in = section_at(second, shared)
        times = time_group(
            tools,
            [
                Command(
                    "emit", [*tools.cmem, "converge", "--emit-prompt", "--vault", str(with_archive)]
                ),
                python_pass(tools),
                Command(
                    "emit_no_archive",
                    [*tools.cmem, "converge", "--emit-prompt", "--vault", str(without_archive)],
                ),
            ],
            args.repeat,
            args.warmup,
        )
        emit_target = (15, "≤ 15× (10k)") if label == "10k" else (None, "—")
        rows.append(
            Row(
                "emit_prompt", label, times["emit"], "`python -c pass`", times["pass"], *emit_target
            )
        )
        rows.append(
            Row(
                "emit_prompt",
                label,
                times["emit"],
                "the same vault with `archive/` emptied",
                times["emit_no_archive"],
                note="independence of the archive: ≈ 1× expected",
            )
        )
    except BenchError as exc:
        rows.append(failed_row("emit_prompt", label, "`python -c pass`", exc))
        facts.error = rows[-1].error
    passes = max(1, min(3, args.repeat))
    pass_ms, outcomes = [], []
    try:
        for _index in range(passes):
            fresh = copy_vault(source, base / f"{label}-pass")
            shutil.rmtree(
                helper(tools, "statedir", str(fresh)), ignore_errors=True
            )  # same path each time: no warm cache
            started = time.perf_counter()
            result = run(
                [*tools.cmem, "converge", "--engine", "builtin", "--json", "--vault", str(fresh)],
                tools,
            )
            pass_ms.append((time.perf_counter() - started) * 1000)
            try:
                data = json.loads(result.stdout)
                outcomes.append(
                    f"{data.get('status')}: {len(data.get('converged') or [])} notes converged, "
                    f"{len(data.get('changed') or [])} files changed, {len(data.get('warnings') or [])} warnings"
                )
            except ValueError:
                outcomes.append("(no JSON)")
        facts.pass_outcome = outcomes[-1]
        rows.append(
            Row(
                "builtin_pass",
                label,
                pass_ms,
                "—",
                None,
                note=f"fresh copy each run (cmem caches cold), n={passes}; {facts.pass_outcome}",
            )
        )
    except BenchError as exc:
        rows.append(failed_row("builtin_pass", label, "—", exc))
        facts.pass_outcome = "failed"
    rows += bench_builtin_one(tools, args, source, label)
    return rows, facts


def bench_builtin_one(tools: Tools, args, source: Path, label: str) -> list[Row]:
    """The everyday pass: the vault as cmem left it (caches warm), one new note written, then
    `converge --engine builtin`; before every run (untimed) the copy is reset to its commit, its
    state folder restored and the note written again. Its second row: the same pass against
    `bench/pass_floor.py`, the file-system and git work any pass must do for that note (the
    snapshot, the listings, the run record's prompt, the journal, the three files, the commit),
    timed on the same vault state in the same rounds."""
    log(f"{label}: builtin pass with one new note, caches warm, vs python -c pass")
    work = copy_vault(source, tools.workdir / "converge" / f"{label}-one-note")
    target = (15, "≤ 15× (10k)") if label == "10k" else (None, "—")
    try:
        state = helper(tools, "statedir", str(work))
        shutil.rmtree(state, ignore_errors=True)
        # A copied repository's index has the source's stat data: the first `reset --hard` would
        # rewrite every file (new mtimes), after the caches were warmed. Settle it first.
        run(["git", "-C", str(work), "reset", "-q", "--hard"], tools)
        # That reset gives the notes it rewrote a new mtime: a scan entry read within cmem's racy
        # window of it is read again by the next scan, so warmed at once, ~220 of the 10k vault's
        # 997 notes were read again by every timed pass (and the "caches warm" pass was not).
        time.sleep(RACY_WAIT)
        run([*tools.cmem, "status", "--vault", str(work)], tools)  # warms the scan and size caches
        run([*tools.cmem, "context", "--vault", str(work)], tools)
        # An earlier pass leaves the builtin engine's statement words in the machine folder: a
        # dry run of the same pass (it writes nothing in the vault) leaves them there too.
        new_note = work / "zz bench one new note.md"
        new_note.write_text(NEW_NOTE, encoding="utf-8")
        dry = run([*tools.cmem, "converge", "--engine", "builtin", "--dry-run", "--only", new_note.name,
                   "--json", "--vault", str(work)], tools)  # fmt: skip
        new_note.unlink()
        # the memory file the pass writes: the floor writes the same one
        changed = [p for p in json.loads(dry.stdout)["changed"] if not p.startswith(".cmem/")]
        memory = changed[0] if changed else "converged/core/profile.md"
        head = run(["git", "-C", str(work), "rev-parse", "HEAD"], tools).stdout.strip()
        snapshot = tools.workdir / "converge" / f"{label}-one-note-state"
        copy_vault(state, snapshot)

        def reset():
            run(["git", "-C", str(work), "reset", "-q", "--hard", head], tools)
            run(["git", "-C", str(work), "clean", "-q", "-f", "-d"], tools)
            copy_vault(snapshot, state)
            shutil.rmtree(tools.workdir / "state" / "cmem" / "results", ignore_errors=True)
            (work / "zz bench one new note.md").write_text(NEW_NOTE, encoding="utf-8")

        one_argv = [
            *tools.cmem,
            "converge",
            "--engine",
            "builtin",
            "--only",
            "zz bench one new note.md",
            "--vault",
            str(work),
        ]
        floor_args = [
            str(work),
            str(tools.workdir / "converge" / f"{label}-floor-state"),
            "zz bench one new note.md",
            memory,
        ]
        floor_argv = [tools.python, str(HERE / "pass_floor.py"), *floor_args]
        libraries = pass_libraries(tools)
        # how a person runs it: its output on a (pseudo-)terminal, against the same wrapper's pipes
        on_terminal = [tools.python, str(HERE / "on_terminal.py")]

        def loaded_floor(modules) -> list[str]:
            return [*floor_argv[:2], "--import", ",".join(modules), *floor_args]

        times = time_group(
            tools,
            [
                Command("one", one_argv, setup=reset),
                Command("floor", floor_argv, setup=reset),
                Command("floor_libraries", loaded_floor(libraries), setup=reset),
                Command("floor_modules", loaded_floor(PASS_IMPORTS), setup=reset),
                Command("terminal", [*on_terminal, *one_argv], setup=reset),
                Command("pipes", [*on_terminal, "--pipes", *one_argv], setup=reset),
                Command("imports", [tools.python, "-c", "import " + ", ".join(PASS_IMPORTS)]),
                python_pass(tools),
            ],
            args.repeat,
            args.warmup,
        )
        reset()
        git_count, git_ms = git_processes(tools, one_argv)
        # That pass applied: from here each run is the next pass after the last, as a day's
        # passes follow each other (the rows above reset the state to the same start each time,
        # so what a pass leaves its successor — the file it wrote, new to every cache — is here).
        rounds = iter(range(1_000_000))

        def next_note() -> None:
            (work / NEXT_NOTE_NAME).write_text(NEXT_NOTE.format(n=next(rounds)), encoding="utf-8")
            time.sleep(RACY_WAIT)  # a later session: what the last pass wrote has settled

        next_argv = [
            *one_argv[: one_argv.index("--only") + 1],
            NEXT_NOTE_NAME,
            "--vault",
            str(work),
        ]
        after = time_group(
            tools,
            [Command("next", next_argv, setup=next_note), python_pass(tools)],
            args.repeat,
            args.warmup,
        )
        if label != "sample-vault":
            ONE_NOTE_PASS["prepare"] = lambda: (
                reset(),
                (work, ["cmem", *one_argv[len(tools.cmem) :]]),
            )[1]
    except BenchError as exc:
        return [
            failed_row("builtin_one", label, "`python -c pass`", exc),
            failed_row("builtin_one_floor", label, "`bench/pass_floor.py`", exc),
            failed_row("builtin_one_loaded", label, "`python -c pass`", exc),
            failed_row("builtin_one_terminal", label, "off a terminal", exc),
            failed_row("builtin_next", label, "`python -c pass`", exc),
        ]
    floor = statistics.median(times["floor"])
    return [
        Row(
            "builtin_one",
            label,
            times["one"],
            "`python -c pass`",
            times["pass"],
            *target,
            note="`--only` the new note; the copy reset to its commit and its state folder restored before each run (untimed); the state folder as `status`, `context` and a `--dry-run` of the same pass leave it; "
            + fixed_costs(times, git_count, git_ms),
        ),
        Row(
            "builtin_one_floor",
            label,
            times["one"],
            "`bench/pass_floor.py` (the pass's I/O and git alone)",
            times["floor"],
            note=f"the floor alone is {floor / statistics.median(times['pass']):.1f}× `python -c pass`"
            f" ({floor:,.0f} ms): lock, `git status` and the snapshot's commit, the listings, every"
            " resident file read for the run record's prompt, the journal and three files written"
            " durably, the pass's commit; reset before each run as the pass is",
        ),
        Row(
            "builtin_one_loaded",
            label,
            times["floor_modules"],
            "`python -c pass`",
            times["pass"],
            note=loaded_note(times, len(libraries), label),
        ),
        Row(
            "builtin_one_terminal",
            label,
            times["terminal"],
            "the same pass off a terminal (`bench/on_terminal.py --pipes`)",
            times["pipes"],
            note="`bench/on_terminal.py`: stdin, stdout and stderr on a pseudo-terminal (120"
            " columns), as a person runs it, so its progress line is drawn; the floor: the same"
            " wrapper with pipes, as a hook or a log gets it; ≈ 1× expected (rich's live status"
            " cost a terminal pass ~80 ms at 10k: its import, and its thread kept the pass from"
            " forking)",
        ),
        Row(
            "builtin_next",
            label,
            after["next"],
            "`python -c pass`",
            after["pass"],
            note=f"after a pass of the row above, each run edits `{NEXT_NOTE_NAME}` (a new"
            " correction) and converges it `--only`, the state as the last run left it;"
            f" {RACY_WAIT:g} s between runs (untimed), so what a pass wrote has settled as by the"
            " next session; what a pass leaves its successor (the memory file it wrote, new to"
            " the caches kept by stat and by text) is paid here, not in the reset rows",
        ),
    ]


def pass_libraries(tools: Tools) -> list[str]:
    """The modules besides cmem's own that importing a pass's modules loads (the standard
    library's), sorted (a parent first): those `python -c pass` has not already loaded."""
    listing = "import sys; print(' '.join(sorted(sys.modules)))"
    bare = set(run([tools.python, "-c", listing], tools).stdout.split())
    loaded = run([tools.python, "-c", f"import {', '.join(PASS_IMPORTS)}; {listing}"], tools)
    return [
        name
        for name in loaded.stdout.split()
        if name not in bare and name.split(".")[0] != "cmem" and name != "__main__"
    ]


def loaded_note(times: dict[str, list[float]], libraries: int, label: str) -> str:
    """What the floor with the pass's modules leaves of the ≤ 15× line for the pass's own work."""
    python = statistics.median(times["pass"])
    floor, with_libraries, with_modules, one = (
        statistics.median(times[key])
        for key in ("floor", "floor_libraries", "floor_modules", "one")
    )
    line = 15 * python
    return (
        f"`bench/pass_floor.py --import` of the {len(PASS_IMPORTS)} modules of `PASS_IMPORTS`"
        f" (and through them the {libraries} other modules they load, the standard library's):"
        f" {with_modules:,.0f} ms, {with_modules / python:.1f}×; the floor with only"
        f" those {libraries} library modules imported {with_libraries:,.0f} ms,"
        f" {with_libraries / python:.1f}× (the floor alone {floor:,.0f} ms); the ≤ 15× line"
        f" ({line:,.0f} ms) would leave the pass's own work at {label}"
        f" {max(line - with_modules, 0):,.0f} ms with cmem's modules as they are,"
        f" {max(line - with_libraries, 0):,.0f} ms were they free to import; it took"
        f" {max(one - with_modules, 0):,.0f} ms"
    )


# The modules a converge process loads (the command table and the command around the pass, the
# pass, the engine, the validator, the scan, the step layer): importing them alone is a floor of
# every pass.
PASS_IMPORTS = (
    "cmem.commands.app",
    "cmem.pass_command",
    "cmem.converge.pipeline",
    "cmem.converge.builtin.engine",
    "cmem.converge.validator.validate",
    "cmem.converge.prompt",
    "cmem.scan.scanner",
    "cmem.steps.runner",
)


def git_processes(tools: Tools, argv: list[str]) -> tuple[int, float]:
    """How many git processes one run of `argv` starts and their own time in ms, from git's
    trace2 events (GIT_TRACE2_EVENT): each top-level git's `exit` event carries its run time."""
    trace = tools.workdir / "scripts" / "git-trace2.json"
    trace.unlink(missing_ok=True)
    run(argv, tools, env={**tools.env, "GIT_TRACE2_EVENT": str(trace)})
    count, seconds = 0, 0.0
    for line in trace.read_text(encoding="utf-8").splitlines() if trace.exists() else []:
        event = json.loads(line)
        if event.get("event") == "exit" and "/" not in event.get("sid", "/"):
            count += 1
            seconds += float(event.get("t_abs", 0.0))
    return count, seconds * 1000


def fixed_costs(times: dict[str, list[float]], git_count: int, git_ms: float) -> str:
    """What a one-note pass pays besides its own reading and work, measured in the same run:
    Python, its imports, and its git processes' own time (the tree reader, `cat-file --batch`,
    also counts the time it waits while cmem reads its answers). The snapshot's git runs in a
    thread beside the pass's imports and scan, so the sum is more than the time they take."""
    imports = statistics.median(times["imports"])
    floor = statistics.median(times["pass"])
    total = imports + git_ms
    return (
        f"fixed costs in the same run: `python -c 'import …'` of the pass's modules {imports:,.0f} ms"
        f" (Python's start-up included), {git_count} git processes {git_ms:,.0f} ms of their own"
        f" (GIT_TRACE2_EVENT, one more run): together {total:,.0f} ms,"
        f" {total / floor:.1f}× `python -c pass` ({floor:,.0f} ms), the snapshot's share of the"
        " git time overlapping the imports"
    )


# --- profile ----------------------------------------------------------------------------------


def profile(tools: Tools, roots: list[Path], prompt_vault: Path | None = None) -> dict[str, str]:
    """Where the time goes: import time of start-up, cProfile of a warm status and a cold scan on
    each vault given, and of `converge --emit-prompt` on the convergence copy."""
    out = {}
    for name, argv in (("--help", ["--help"]), ("status", ["status", "--vault", str(roots[0])])):
        log(f"profile: -X importtime cmem {' '.join(argv)}")
        result = subprocess.run(
            [tools.python, "-X", "importtime", "-m", "cmem", *argv],
            env=tools.env,
            capture_output=True,
            text=True,
        )
        out[
            f"python -X importtime -m cmem {name}"
            + (f" ({roots[0].name})" if name == "status" else "")
        ] = summarize_importtime(result.stderr)
    for root in roots:
        state = helper(tools, "statedir", str(root))
        for name, argv, cold in (
            ("status, warm (a stored result)", ["status"], False),
            ("status --rescan, caches warm", ["status", "--rescan"], False),
            ("context, warm", ["context"], False),
            ("scan, cold", ["scan"], True),
        ):
            log(f"profile: cProfile cmem {name} on {root.name}")
            if cold:
                shutil.rmtree(tools.workdir / "state" / "cmem" / "results", ignore_errors=True)
                for entry in list(state.iterdir()) if state.is_dir() else []:
                    if "scan" in entry.name.lower():
                        shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
            else:  # warm: the cold-scan group dropped the stored results; store them again first
                run([*tools.cmem, *argv, "--vault", str(root)], tools)
            prof = tools.workdir / "scripts" / f"{root.name}-{'-'.join(argv)}.prof"
            result = subprocess.run(
                [
                    tools.python,
                    "-m",
                    "cProfile",
                    "-o",
                    str(prof),
                    "-m",
                    "cmem",
                    *argv,
                    "--vault",
                    str(root),
                ],
                env=tools.env,
                capture_output=True,
                text=True,
            )
            key = f"cProfile: cmem {name} ({root.name})"
            if result.returncode != 0:
                out[key] = f"failed: {result.stderr.strip()[-1500:]}"
                continue
            out[key] = trim_pstats(
                run([tools.python, str(tools.helper), "pstats", str(prof), "18"], tools).stdout
            )
    if prompt_vault is not None and prompt_vault.is_dir():
        log(f"profile: cProfile cmem converge --emit-prompt on {prompt_vault.name}")
        prof = tools.workdir / "scripts" / "emit-prompt.prof"
        result = subprocess.run(
            [
                tools.python,
                "-m",
                "cProfile",
                "-o",
                str(prof),
                "-m",
                "cmem",
                "converge",
                "--emit-prompt",
                "--vault",
                str(prompt_vault),
            ],
            env=tools.env,
            capture_output=True,
            text=True,
        )
        key = f"cProfile: cmem converge --emit-prompt ({prompt_vault.name}, warm)"
        out[key] = (
            trim_pstats(
                run([tools.python, str(tools.helper), "pstats", str(prof), "18"], tools).stdout
            )
            if result.returncode == 0
            else f"failed: {result.stderr.strip()[-1500:]}"
        )
    out.update(profile_builtin_one(tools))
    return out


def profile_builtin_one(tools: Tools) -> dict[str, str]:
    """cProfile of the one-note builtin pass, on its copy prepared as for its timed runs."""
    out = {}
    one = ONE_NOTE_PASS.get("prepare")
    if one is not None:
        log("profile: cProfile cmem converge --engine builtin, one new note")
        work, argv = one()
        prof = tools.workdir / "scripts" / "builtin-one.prof"
        result = subprocess.run(
            [tools.python, "-m", "cProfile", "-o", str(prof), "-m", "cmem", *argv[1:]],
            env=tools.env,
            capture_output=True,
            text=True,
        )
        key = f"cProfile: cmem converge --engine builtin, one new note, caches warm ({work.name})"
        out[key] = (
            trim_pstats(
                run([tools.python, str(tools.helper), "pstats", str(prof), "18"], tools).stdout
            )
            if result.returncode == 0
            else f"failed: {result.stderr.strip()[-1500:]}"
        )
    return out


ONE_NOTE_PASS: dict = {}  # bench_builtin_one leaves how to prepare its copy again, for the profile


def summarize_importtime(stderr: str) -> str:
    rows = []
    for line in stderr.splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(.+)$", line)
        if match:
            rows.append((int(match.group(2)), len(match.group(3)), match.group(4).strip()))
    if not rows:
        return "(no importtime output)"
    total = sum(cumulative for cumulative, depth, _ in rows if depth == 1)
    top = sorted((r for r in rows if r[1] <= 3), reverse=True)[:12]
    lines = [f"{len(rows)} modules, {total / 1000:.0f} ms cumulative at top level; the largest:"]
    lines += [
        f"  {cumulative / 1000:7.1f} ms  {'  ' * ((depth - 1) // 2)}{module}"
        for cumulative, depth, module in top
    ]
    return "\n".join(lines)


def trim_pstats(text: str) -> str:
    """pstats output without its per-section preamble (file name, ordering, restriction lines)."""
    out, total = [], ""
    for line in text.splitlines():
        stripped = line.strip()
        if "function calls" in stripped:
            total = stripped
            continue
        if (
            not stripped
            or stripped.startswith(("Ordered by", "List reduced", "/"))
            or stripped.endswith(".prof")
        ):
            continue
        line = re.sub(r"/\S*/(cmem/)", r"\1", line)
        line = re.sub(r"/\S*/(site-packages|python3\.\d+)/", r"", line)
        out.append(line.rstrip())
    return "\n".join(([total] if total else []) + out)


# --- machine facts and the report -------------------------------------------------------------


def machine_facts(tools: Tools) -> dict[str, str]:
    def out(argv):
        try:
            return subprocess.run(
                argv, env=tools.env, capture_output=True, text=True
            ).stdout.strip()
        except OSError:
            return "?"

    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "?"
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f"{kb / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    package = Path(
        out([tools.python, "-c", "import cmem, os; print(os.path.dirname(cmem.__file__))"]) or "."
    )
    source = package.parent.parent  # <tree>/cli/cmem
    commit = out(["git", "-C", str(source), "rev-parse", "--short", "HEAD"]) or "not a git checkout"
    dirty = (
        out(
            [
                "git",
                "-C",
                str(source),
                "status",
                "--porcelain",
                "--untracked-files=all",
                "--",
                "cli",
            ]
        )
        if commit != "not a git checkout"
        else ""
    )
    # the checkout's own path stays out of the figures: they are read in other checkouts
    where = "a checkout's `cli/cmem`" if commit != "not a git checkout" else f"`{package.name}`"
    return {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": str(
            len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        ),
        "cpu": cpu,
        "memory": mem,
        "kernel": platform.release(),
        "python": out([tools.python, "-c", "import sys; print(sys.version.split()[0])"]),
        "cmem": out([*tools.cmem, "--version"])
        + f", imported from {where} ({commit}{', with uncommitted changes in cli/' if dirty else ''})",
        "git": out(["git", "--version"]),
        "rg": out([tools.rg, "--version"]).splitlines()[0] if tools.rg else "?",
    }


def render_table(rows: list[Row]) -> str:
    lines = [
        "| figure | vault | cmem ms median (min-max) | floor | floor ms median (min-max) | ratio median (min-max) | target | met? |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        if row.error:
            lines.append(
                f"| {FIGURES[row.figure]} | {row.vault} | failed | {row.floor} | — | — | {row.target_text} | FAILED |"
            )
            continue
        lines.append(
            f"| {FIGURES[row.figure]} | {row.vault} | {fmt_ms(row.cmem_ms)} | {row.floor} | {fmt_ms(row.floor_ms)} | "
            f"{fmt_ratio(row.ratios)} | {row.target_text} | {row.met} |"
        )
    return "\n".join(lines)


def render_growth(rows: list[Row]) -> str:
    """Each figure measured on several vault sizes: its median per size, and how much it grows
    for each tenfold of notes (1.0 flat, 10 linear)."""
    by_figure: dict[tuple[str, str], dict[float, float]] = {}
    for row in rows:
        size = _size_of(row.vault)
        if row.error or not row.cmem_ms or size == float("inf"):
            continue
        by_figure.setdefault((row.figure, row.floor), {})[size] = summary(row.cmem_ms)[0]
    sizes = sorted({size for values in by_figure.values() for size in values})
    if len(sizes) < 2:
        return "(one vault size measured)"
    names = [f"{int(size) // 1000}k" if size >= 1000 else str(int(size)) for size in sizes]
    lines = [
        "| figure | " + " | ".join(f"{name} ms" for name in names) + " | growth per 10× notes |",
        "|---|" + "---|" * len(sizes) + "---|",
    ]
    seen, shown = set(), []
    for (figure, _floor), values in by_figure.items():
        if figure in seen or len(values) < 2 or values in shown:
            continue  # one row per figure; a figure timed by the same runs as another (rescan, read_floor) once
        seen.add(figure)
        shown.append(values)
        cells = [_num(values[size]) if size in values else "—" for size in sizes]
        low, high = min(values), max(values)
        import math

        per_tenfold = (
            (values[high] / values[low]) ** (1 / math.log10(high / low))
            if high > low and values[low] > 0
            else float("nan")
        )
        lines.append(f"| {FIGURES[figure]} | " + " | ".join(cells) + f" | {per_tenfold:.1f}× |")
    return "\n".join(lines)


def render_converge(facts: list[ConvergeFacts]) -> str:
    lines = [
        "| vault | prompt tokens | whole vault tokens (archive) | prompt / vault | files quoted | notes quoted | prompt tokens, archive emptied | stable prefix after one new note | new note in the prompt? | builtin pass |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for f in facts:
        if f.error and not f.prompt_tokens:
            lines.append(f"| {f.vault} | failed | | | | | | | | {f.pass_outcome} |")
            continue
        share = f"{f.prompt_tokens / f.vault_tokens:.1%}" if f.vault_tokens else "—"
        prefix = f"{f.prefix_share:.1%}" if f.prefix_share is not None else "—"
        same = (
            ""
            if f.prompt_tokens_no_archive is None
            else f"{f.prompt_tokens_no_archive:,}"
            + (" (same)" if f.prompt_tokens_no_archive == f.prompt_tokens else " (differs)")
        )
        lines.append(
            f"| {f.vault} | {f.prompt_tokens:,} | {f.vault_tokens:,} ({f.layer_tokens.get('archive', 0):,}) | {share} | "
            f"{f.files_quoted} | {f.notes_quoted} | {same} | {prefix} | {('yes' if f.new_note_in_prompt else 'no') + (', ' + f.new_note_how if f.new_note_how else '')} | {f.pass_outcome} |"
        )
    return "\n".join(lines)


# A line's floor measured in the same run against the line's own floor command (`python -c
# pass`): what the line costs before its own work. A missed line whose floor is over the target
# by itself cannot be met by that work, and the report says so.
FLOOR_ROWS = {"builtin_one": "builtin_one_loaded", "help": "typer_floor"}


def where_we_land(rows: list[Row]) -> str:
    """The targets, met or missed, with the numbers (generated)."""
    out = []
    for row in rows:
        if row.error:
            out.append(f"- {FIGURES[row.figure]} on {row.vault}: **failed** (see Failures).")
        elif row.target is not None and row.ratios:
            med = summary(row.ratios)[0]
            verdict = "met" if med <= row.target else "**missed**"
            out.append(
                f"- {FIGURES[row.figure]}, {row.vault}: {med:.2f}× {row.floor} "
                f"({_num(summary(row.cmem_ms)[0])} ms vs {_num(summary(row.floor_ms)[0])} ms), target {row.target_text}: {verdict}."
                + (floor_verdict(row, rows) if med > row.target else "")
            )
    return "\n".join(out)


def floor_verdict(row: Row, rows: list[Row]) -> str:
    """For a missed line with a floor row (`FLOOR_ROWS`): whether its floor alone meets it."""
    floor = next(
        (
            r
            for r in rows
            if r.figure == FLOOR_ROWS.get(row.figure) and r.vault == row.vault and r.ratios
        ),
        None,
    )
    if floor is None:
        return ""
    med = summary(floor.ratios)[0]
    if med > row.target:
        return (
            f" Its floor, {FIGURES[floor.figure]}, is {med:.2f}× {floor.floor} by itself"
            f" ({_num(summary(floor.cmem_ms)[0])} ms): the line is passed before the pass does"
            " any of its own work, so no change to that work alone can meet it (the row's note"
            " says what the libraries and cmem's modules each take)."
        )
    return (
        f" Its floor, {FIGURES[floor.figure]}, is {med:.2f}× {floor.floor}"
        f" ({_num(summary(floor.cmem_ms)[0])} ms): the rest is the pass's own work."
    )


_FOREIGN = re.compile(r"<!-- ([A-Za-z][\w-]*) -->\n.*?<!-- /\1 -->", re.DOTALL)


def foreign_sections(out_path: Path) -> list[str]:
    """Sections other scripts keep in the same report, between `<!-- name -->` and `<!-- /name -->`
    (e.g. `bench/recall.py`): carried over unchanged, after this script's part."""
    try:
        return [match.group(0) for match in _FOREIGN.finditer(out_path.read_text("utf-8"))]
    except OSError:
        return []


def previous_analysis(out_path: Path) -> str:
    try:
        text = out_path.read_text("utf-8")
    except OSError:
        return ""
    start, end = text.find(ANALYSIS_START), text.find(ANALYSIS_END)
    if start < 0 or end < start:
        return ""
    return text[start + len(ANALYSIS_START) : end].strip("\n")


def render_report(
    facts: dict, args, rows, converge_facts, profiles, notes, failures, analysis, shapes
) -> str:
    sizes = ", ".join(f"{s:,}" for s in args.sizes)
    parts = [
        "# Benchmarks",
        "",
        "Generated by `python bench/run.py`: every cmem figure is a whole-process wall time measured",
        "next to its floor in the same run, on synthetic vaults from `bench/gen_vault.py` (seed 42). Ratios, not",
        "absolute times, are the figures to compare across machines. No test asserts a timing. Sections between",
        "`<!-- name -->` and `<!-- /name -->` come from other scripts and are kept as they are, as is the",
        "hand-written analysis. Only the current figures are here; earlier rounds are in this file's git history.",
        "",
        "How to reproduce each part:",
        "",
        f"- the tables from Machine to Where we land, and the profile: `python bench/run.py --sizes {','.join(str(s) for s in args.sizes)}",
        f"  --repeat {args.repeat}` (`--no-profile` skips the profile; `--only-warm`, `--only-cold-scan` and",
        "  `--only-builtin-one` measure one group, to another `--out`). Its floor rows run `bench/pass_floor.py`",
        "  and `bench/on_terminal.py`.",
        "- Recall: `python bench/recall.py --sizes 10000,50000` (writes its own section).",
        "- `cmem sync` with nothing to do: `python bench/sync.py --runs 31` (prints; the section is written from it).",
        "- The agent loop: `python bench/agent_loop.py` (writes its own section).",
        "- The shell hook's exit: `python bench/hook_exit_latency.py` (prints).",
        "",
        "## Machine",
        "",
        *[f"- {key}: {value}" for key, value in facts.items()],
        "",
        "## Method",
        "",
        f"- Vaults: {sizes} notes (`gen_vault.py -n N --seed 42`), adopted with `cmem init`, notes committed; layout",
        "  matches cmem's default layers (divergent root, `converged/core`, `converged/topics`, `archive`).",
        f"- Paired runs: each group runs its commands in turn (A B C … A B C …), {args.warmup} warm-up round(s) dropped",
        f"  (one more for the warm and start-up groups), then n = {args.repeat} counted rounds ({args.repeat * HELP_ROUNDS} for",
        "  start-up, which is cheap and the noisiest). Times: median (min-max) in ms;",
        "  ratios are taken round by round (A/B within one round), then median (min-max).",
        "- Whole processes from outside (`subprocess.run`, stdout to /dev/null), HOME and XDG_STATE_HOME under the",
        "  work folder. `python -c pass` and the Python floors run on cmem's own interpreter.",
        "- **Warm**: cmem's caches (state folder) exist and nothing changed; page cache warm.",
        "  A warm `status`/`scan` is answered from cmem's stored result (`reading/stored_results.py`) after a check of the listing;",
        "  `status --rescan` forces the full walk and read with the caches warm.",
        "  **Cold scan**: cmem's per-note scan entries and stored results removed before every run (untimed), the",
        "  guard index (the convergent layer's statements, kept merged) kept; page cache still warm.",
        "- A shared machine (the load average at the start and the end is under Machine): absolute times move with",
        "  the load; the ratios are measured paired within one round, so both sides see the same load.",
        "- `rg` floor: `rg -c -F -i --no-ignore --max-depth 1 -g '*.md' -e CUE …` over the vault root, with every cue of",
        "  `cmem.text.cues.cue_set()` — the same files and cues, without cmem's context rules.",
        "- Stat walk floor: a Python `os.scandir` walk of the whole vault (dot-folders skipped) with",
        "  `DirEntry.stat()` on every `.md`. Bytes-read floor: Python reading every divergent note.",
        "- Convergence: `cmem converge --emit-prompt` on a copy; tokens with `cmem.text.tokens.estimate_tokens`;",
        "  the stable prefix is the common prefix of the prompt before and after adding one new divergent note",
        "  (a correction), over the second prompt's length. The builtin pass runs on a fresh copy each time.",
        "",
        "The vaults, by cmem's layers:",
        "",
        render_shapes(shapes),
        "",
        "## Results",
        "",
        render_table(rows),
        "",
    ]
    if any(r.note for r in rows):
        parts += ["Notes on rows:", ""]
        parts += [
            f"- {FIGURES[r.figure]}, {r.vault}: {r.note}" for r in rows if r.note and not r.error
        ]
        parts.append("")
    if converge_facts:
        parts += ["### Convergence prompt", "", render_converge(converge_facts), ""]
        for f in converge_facts:
            if f.layer_tokens:
                parts.append(
                    f"- {f.vault}: {f.fixed_tokens:,} of the prompt's {f.prompt_tokens:,} tokens come before the divergent "
                    f"notes (instructions, resident and situational files); the prompt after one new note first differs in "
                    f"“{f.diverges_in}”. Vault tokens by layer: "
                    + ", ".join(f"{k} {v:,}" for k, v in sorted(f.layer_tokens.items()))
                    + "."
                )
        parts.append("")
    parts += ["## How the figures grow", "", render_growth(rows), ""]
    parts += ["## Where we land", "", where_we_land(rows) or "(no targets measured)", ""]
    if notes:
        parts += ["Observations of this run:", "", *[f"- {n}" for n in notes], ""]
    parts += [
        "## What would make it faster",
        "",
        ANALYSIS_START,
        analysis or "(to be written from the numbers above and the profile below)",
        ANALYSIS_END,
        "",
    ]
    if profiles:
        parts += ["## Profile", ""]
        for name, text in profiles.items():
            parts += [f"`{name}`:", "", "```", text, "```", ""]
    if failures:
        parts += ["## Failures", ""]
        for failure in failures:
            parts += ["```", failure, "```", ""]
    return "\n".join(parts)


# --- main -------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", default="1000,10000,50000", help="vault sizes in notes, comma-separated"
    )
    parser.add_argument("--repeat", type=int, default=7, help="counted rounds per group (n)")
    parser.add_argument(
        "--warmup", type=int, default=1, help="warm-up rounds per group, not counted"
    )
    parser.add_argument(
        "--out", default=str(PROJECT / "docs" / "benchmarks.md"), help="the Markdown report"
    )
    parser.add_argument(
        "--workdir", default=str(HERE / "vaults"), help="where vaults, state and scratch files go"
    )
    parser.add_argument(
        "--cmem", help="the cmem executable (default: cmem on PATH, else next to this Python)"
    )
    parser.add_argument(
        "--rg", help="the rg executable (default: rg on PATH, else next to this Python)"
    )
    parser.add_argument(
        "--no-profile", action="store_true", help="skip the importtime/cProfile section"
    )
    parser.add_argument(
        "--only-builtin-one",
        action="store_true",
        help="measure only the one-note builtin pass (with its profile unless --no-profile)",
    )
    parser.add_argument(
        "--only-cold-scan",
        action="store_true",
        help="only the cold-scan rows (and no profile): to measure a change to the scan; "
        "give --out elsewhere, the report holds nothing else",
    )
    parser.add_argument(
        "--only-warm",
        action="store_true",
        help="only `--help` and the warm rows of each vault (status, scan, the rescan rows, "
        "context), no profile: to measure a change to the stored answers; give --out elsewhere "
        "(--emit-prompt is measured with the passes, recall by bench/recall.py)",
    )
    args = parser.parse_args(argv)
    args.sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    if args.repeat < 1 or args.warmup < 0 or not args.sizes:
        parser.error("--repeat ≥ 1, --warmup ≥ 0 and at least one size")
    workdir = Path(args.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(workdir / "state", ignore_errors=True)
    shutil.rmtree(workdir / "converge", ignore_errors=True)
    tools = find_tools(args, workdir)
    started = time.perf_counter()
    load_at_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    log(f"cmem: {' '.join(tools.cmem)}  python: {tools.python}  rg: {tools.rg}  workdir: {workdir}")
    cues = helper(tools, "cues")
    rows: list[Row] = []
    notes: list[str] = []
    failures: list[str] = []
    converge_facts: list[ConvergeFacts] = []
    only_one = args.only_builtin_one
    rows += [] if only_one or args.only_cold_scan else bench_help(tools, args)  # start-up: warm
    vaults, shapes = {}, {}
    for size in args.sizes:
        root = make_vault(tools, size)
        vaults[size] = root
        notes += check_layout(root)
        label = f"{size // 1000}k" if size >= 1000 and size % 1000 == 0 else str(size)
        shapes[label] = vault_shape(root)
        if not (only_one or args.only_cold_scan):
            rows += bench_warm(tools, args, root, label, size)
        if not (only_one or args.only_warm):
            rows += bench_cold_scan(tools, args, root, label, cues)
    converge_size = 10_000 if 10_000 in vaults else max(vaults)
    converge_label = (
        f"{converge_size // 1000}k"
        if converge_size >= 1000 and converge_size % 1000 == 0
        else str(converge_size)
    )
    converged = ((vaults[converge_size], converge_label), (None, "sample-vault"))
    for source, label in () if args.only_cold_scan or args.only_warm else converged:
        if source is None:
            source = copy_vault(SAMPLE_VAULT, workdir / "sample-vault")
            shutil.rmtree(source / ".git", ignore_errors=True)
            adopt(tools, source)
            shapes[label] = vault_shape(source)
        if only_one:
            rows += bench_builtin_one(tools, args, source, label)
            continue
        converge_rows, facts = bench_converge(tools, args, source, label)
        rows += converge_rows
        converge_facts.append(facts)
    profiles = {}
    if only_one and not args.no_profile:
        profiles = profile_builtin_one(tools)
    elif not args.no_profile and not (args.only_cold_scan or args.only_warm):
        profiled = sorted({10_000 if 10_000 in vaults else max(vaults), max(vaults)})
        try:
            profiles = profile(
                tools,
                [vaults[size] for size in profiled],
                workdir / "converge" / f"{converge_label}-prompt",
            )
        except (BenchError, OSError) as exc:
            notes.append(f"profile failed: {exc}")
    for row in rows:
        if row.error and row.error not in failures:
            failures.append(row.error)
    order = list(FIGURES)
    rows.sort(key=lambda r: (order.index(r.figure), _size_of(r.vault)))
    notes.append(f"whole run: {time.perf_counter() - started:.0f} s")
    out_path = Path(args.out)
    facts = machine_facts(tools)
    facts["load average (1, 5, 15 min) at start / end"] = f"{load_at_start} / " + " ".join(
        f"{x:.2f}" for x in os.getloadavg()
    )
    report = render_report(
        facts,
        args,
        rows,
        converge_facts,
        profiles,
        notes,
        failures,
        previous_analysis(out_path),
        shapes,
    )
    kept = foreign_sections(out_path)
    if kept:
        report = report.rstrip("\n") + "\n\n" + "\n\n".join(kept) + "\n"
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(report, encoding="utf-8")
    print(render_table(rows))
    if converge_facts:
        print()
        print(render_converge(converge_facts))
    for failure in failures:
        print("\nFAILED: " + failure, file=sys.stderr)
    log(f"report written to {out_path}")
    return 1 if failures else 0


def _size_of(label: str) -> float:
    if label.endswith("k") and label[:-1].isdigit():
        return int(label[:-1]) * 1000
    return int(label) if label.isdigit() else float("inf")


if __name__ == "__main__":
    sys.exit(main())
