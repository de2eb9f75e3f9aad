"""Kill one writing step at every point it reaches, run each next command, check the invariants.

crash_harness.py kills a pass and lets the *same* command run again. Real use is messier: a pass
dies, and the next thing the user runs is an archive apply, an undo, a quick `cmem note`, or
`cmem doctor --fix`. Every writing command must then leave the vault as if the interrupted step
had finished or never started (docs/design.md §5 "Steps"). This harness tries that for every

    (step, kill point : n, next command)

triple, with real processes, real git and real SIGKILLs (`CMEM_FAULT=<point>:<n>`, cmem/faults.py).

Steps (each prepared on a copy of sample-vault/, git-initialised, so it has real work):

    converge         `cmem converge --engine builtin` on the fresh vault
    archive          `cmem archive apply --all --yes` after a judged converge (its notes are
                     staged: a note is archived only once every line of it was judged, so the
                     setup's pass is answered as a model would, with the builtin engine's reply
                     given by `--response`)
    undo(archive)    `cmem undo --yes` after a judged converge and an archive apply (moves notes back)
    undo(converge)   `cmem undo --yes` after a converge
    fix(pass)        `cmem doctor --fix --yes` after a converge killed at `applied`
    fix(archive)     `cmem doctor --fix --yes` after an archive apply killed at `replace:2`
    fix(undo)        `cmem doctor --fix --yes` after an undo killed half-way

The kill points of a step, and how many times it reaches each, come from one undisturbed run with
`CMEM_FAULT_LOG`. Next commands: converge, `archive apply --all --yes`, `undo --yes`,
`note "a new line"`, `doctor --fix --yes`.

Invariants, checked after the next command and again after a final pass:

- every note once: each root or archived note present before the sequence (by name, and by
  content digest) is exactly once on disk and exactly once in HEAD's tree;
- no statement lost: every statement of `converged/**/*.md` in HEAD before the killed step is
  in HEAD's memory files, verbatim or quoted in a trace (`was: …` / `原为：…`), or named in a
  commit message of the sequence (the `<dropped>` record) — unless an undo took back the pass
  that added it (the killed undo's target, or any `Cmem-Undoes:` commit of the sequence); and
  no converged work lost: every note HEAD's state.json records as converged into a memory file
  is still cited there (a pass rolled back under its own record loses the note's signals once
  the note is archived);
- state.json consistent with HEAD: every note it lists exists in HEAD, every pass it records
  since the sequence began has its commit, and the working tree equals HEAD for every managed
  path (`converged/`, `archive/`, `.cmem/`, root notes) except the note `cmem note` appended to;
- every step recorded: no half-applied step committed as "edited by hand" (a snapshot commit,
  when nobody edited anything), no pass committed twice, an undo takes back the newest step;
- `git fsck --no-dangling` clean;
- the next pass works: `cmem converge --engine builtin --json` exits 0 with status applied or
  nothing, and `cmem scan` exits 0.

    python tests/sequence_harness.py [--sample N] [--json] [--jobs J] [--steps converge,undo(archive)]
                                     [--next converge,note] [--workdir DIR] [--seed S]

Each trial has its own folder (vault + HOME, XDG_STATE_HOME, XDG_CONFIG_HOME inside it) and a
fixed git identity; nothing outside the work folder is touched. No model is called.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from support import isolated_env

HERE = Path(__file__).resolve().parent
SAMPLE = HERE.parent / "sample-vault"
CHECKLIST = "archive/ARCHIVE-CHECKLIST.md"
STATE = ".cmem/state.json"
EXCLUDED_ROOT = {"README.md", "AGENTS.md", "CLAUDE.md"}
NOTE_TEXT = "a new line"
NO_POINT = "none"
COMMAND_LINE = "python tests/sequence_harness.py"

# --- commands -----------------------------------------------------------------------------------

_converge_yes: list[str] | None = None


def converge_args() -> list[str]:
    """`converge --engine builtin`, with `--yes` once the command takes it (docs/design.md §3 lists
    it)."""
    global _converge_yes
    if _converge_yes is None:
        helped = subprocess.run(
            [sys.executable, "-m", "cmem", "converge", "--help"],
            capture_output=True,
            text=True,
            env=env(Path(tempfile.gettempdir())),
            timeout=60,
        )
        _converge_yes = ["--yes"] if "--yes" in helped.stdout else []
    return ["converge", "--engine", "builtin", *_converge_yes]


def judged_args(vault: Path, home: Path) -> list[str]:
    """A pass that judges its notes whole: the builtin engine's reply for the vault as it is (a
    dry run's run record), given as a model's answer, so its notes wait for nothing and archive."""
    dry = cmem(vault, home, ["converge", "--engine", "builtin", "--dry-run", "--json"])
    reply = Path(json.loads(dry.stdout)["run"]) / "response-1.txt"
    return ["converge", "--response", str(reply), *converge_args()[3:]]


def step_args(kind: str) -> list[str]:
    return {
        "converge": converge_args(),
        "archive": ["archive", "apply", "--all", "--yes"],
        "undo": ["undo", "--yes"],
        "note": ["note", NOTE_TEXT, "--json"],
        "fix": ["doctor", "--fix", "--yes"],
    }[kind]


NEXT_COMMANDS = ("converge", "archive", "undo", "note", "fix")


@dataclass(frozen=True)
class Scenario:
    name: str
    step: str  # converge | archive | undo | fix
    setup: tuple[tuple[str, str | None], ...]  # (command kind, fault or None), run in order
    undoes_head: bool = False  # the step (or a killed setup step) is an undo of the pass at HEAD


SCENARIOS = (
    Scenario("converge", "converge", ()),
    Scenario("archive", "archive", (("judged", None),)),
    Scenario("undo(archive)", "undo", (("judged", None), ("archive", None)), undoes_head=True),
    Scenario("undo(converge)", "undo", (("converge", None),), undoes_head=True),
    Scenario("fix(pass)", "fix", (("converge", "applied:1"),)),
    Scenario("fix(archive)", "fix", (("judged", None), ("archive", "replace:2"))),
    Scenario(
        "fix(undo)",
        "fix",
        (("judged", None), ("archive", None), ("undo", "replace:4")),
        undoes_head=True,
    ),
)
BY_NAME = {s.name: s for s in SCENARIOS}


def env(home: Path, fault: str | None = None, log: Path | None = None) -> dict:
    """support.isolated_env, with wide columns (messages are compared whole)."""
    base = isolated_env(home, COLUMNS="200")
    if fault:
        base["CMEM_FAULT"] = fault
    if log:
        base["CMEM_FAULT_LOG"] = str(log)
    return base


def cmem(
    vault: Path, home: Path, args: list[str], fault: str | None = None, log: Path | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cmem", *args, "--vault", str(vault)],
        env=env(home, fault, log),
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
        cwd=str(home),
    )


def git(vault: Path, *args: str, check: bool = False) -> str:
    result = subprocess.run(
        ["git", "-C", str(vault), "-c", "core.quotePath=false", *args],
        capture_output=True,
        text=True,
        env=env(vault.parent / "home"),
    )
    if check and result.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout


def git_bytes(vault: Path, *args: str) -> bytes | None:
    result = subprocess.run(
        ["git", "-C", str(vault), *args], capture_output=True, env=env(vault.parent / "home")
    )
    return result.stdout if result.returncode == 0 else None


# --- vaults -------------------------------------------------------------------------------------


def fresh(folder: Path) -> tuple[Path, Path]:
    """A copy of sample-vault/, git-initialised and committed, with its own HOME (as crash_harness)."""
    vault, home = folder / "vault", folder / "home"
    shutil.copytree(SAMPLE, vault, symlinks=True)
    home.mkdir(parents=True)
    e = env(home)
    subprocess.run(["git", "init", "-q", "-b", "main", str(vault)], check=True, env=e)
    subprocess.run(["git", "-C", str(vault), "add", "-A"], check=True, env=e)
    subprocess.run(["git", "-C", str(vault), "commit", "-qm", "sample"], check=True, env=e)
    return vault, home


def _state_name(vault: Path) -> str:
    """The name of the vault's per-machine state folder (cmem.vault.layers.machine_dir_for)."""
    resolved = str(Path(vault).resolve())
    slug = re.sub(r"[^\w.-]+", "-", Path(resolved).name).strip("-") or "vault"
    return f"{slug[:40]}-{hashlib.sha256(resolved.encode('utf-8')).hexdigest()[:10]}"


def copy_prepared(template: Path, folder: Path) -> tuple[Path, Path]:
    """The prepared vault and its HOME, copied; the state folder (a journal a killed setup left)
    follows the vault to its new path."""
    shutil.copytree(template, folder, symlinks=True)
    vault, home = folder / "vault", folder / "home"
    states = home / "state" / "cmem"
    old = states / _state_name(template / "vault")
    if old.is_dir():
        old.rename(states / _state_name(vault))
    return vault, home


@dataclass
class Prepared:
    scenario: Scenario
    folder: Path | None = None
    error: str | None = None
    baseline: dict = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)  # kill point → occurrences in one run
    undisturbed: dict = field(default_factory=dict)  # exit and stderr of the undisturbed step


def prepare(scenario: Scenario, workdir: Path) -> Prepared:
    folder = workdir / "templates" / _slug(scenario.name)
    prepared = Prepared(scenario, folder)
    vault, home = fresh(folder)
    for kind, fault in scenario.setup:
        args = judged_args(vault, home) if kind == "judged" else step_args(kind)
        run = cmem(vault, home, args, fault)
        expected = -9 if fault else 0
        if run.returncode != expected:
            prepared.error = (
                f"setup `{' '.join(args)}`"
                + (f" with CMEM_FAULT={fault}" if fault else "")
                + f" exited {run.returncode}, not {expected}: {(run.stderr or run.stdout).strip()[-300:]}"
            )
            return prepared
    prepared.baseline = baseline(vault, scenario)
    # machine_dir_for's formula checked here: a changed formula must not lose a setup's journal
    states = home / "state" / "cmem"
    if states.is_dir() and not (states / _state_name(vault)).is_dir() and any(states.iterdir()):
        prepared.error = "the vault's state folder is not where _state_name says (cmem.vault.layers.machine_dir_for changed?)"
    return prepared


def discover(prepared: Prepared, workdir: Path) -> None:
    """Run the step once, undisturbed, with CMEM_FAULT_LOG: the points it reaches and how often."""
    folder = workdir / "discover" / _slug(prepared.scenario.name)
    vault, home = copy_prepared(prepared.folder, folder)
    log = folder / "points.log"
    log.touch()
    run = cmem(vault, home, step_args(prepared.scenario.step), log=log)
    prepared.counts = dict(
        Counter(line.strip() for line in log.read_text("utf-8").splitlines() if line.strip())
    )
    prepared.undisturbed = {"exit": run.returncode, "stderr": run.stderr.strip()[-300:]}


def _slug(name: str) -> str:
    return re.sub(r"[^\w.-]+", "-", name).strip("-")


# --- what is checked ----------------------------------------------------------------------------


def blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def is_note(path: str) -> bool:
    """A root note (the divergent layer) or an archived note."""
    if not path.endswith(".md"):
        return False
    if "/" not in path:
        return path not in EXCLUDED_ROOT and not path.startswith(".")
    return path.startswith("archive/") and path != CHECKLIST


def disk_notes(vault: Path) -> dict[str, str]:
    found = {}
    for path in list(vault.glob("*.md")) + list((vault / "archive").rglob("*.md")):
        rel = path.relative_to(vault).as_posix()
        if path.is_file() and is_note(rel):
            found[rel] = blob_id(path.read_bytes())
    return found


def head_tree(vault: Path, rev: str = "HEAD") -> dict[str, str]:
    out = git(vault, "ls-tree", "-r", "-z", rev)
    tree = {}
    for entry in out.split("\0"):
        if "\t" in entry:
            meta, path = entry.split("\t", 1)
            tree[path] = meta.split()[2]
    return tree


def head_notes(vault: Path, rev: str = "HEAD") -> dict[str, str]:
    return {p: b for p, b in head_tree(vault, rev).items() if is_note(p)}


_LIST = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_OPENERS = (
    ("（来源：", "（", "）"),
    ("(source:", "(", ")"),
    ("（更新于", "（", "）"),
    ("(updated", "(", ")"),
)


def statement_lines(text: str) -> list[str]:
    """Content lines: list items and paragraph lines — no frontmatter, heading, blank, fence, table rule, comment."""
    lines = text.replace("\r\n", "\n").split("\n")
    out, start, fence = [], 0, False
    if lines and lines[0].strip() == "---":
        for index in range(1, len(lines)):
            if lines[index].strip() in ("---", "..."):
                start = index + 1
                break
    for line in lines[start:]:
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fence = not fence
            continue
        if (
            fence
            or not stripped
            or stripped.startswith(("#", "<!--"))
            or re.fullmatch(r"[|:\-\s]+", stripped)
        ):
            continue
        out.append(line)
    return out


def core(line: str) -> str:
    """The statement's own words: no list marker, no source, no trace (bracket-counted: traces nest)."""
    text = _LIST.sub("", line, count=1)
    out, index = [], 0
    while index < len(text):
        for opener, left, right in _OPENERS:
            if text.startswith(opener, index):
                depth, end = 0, index
                while end < len(text):
                    depth += text[end] == left
                    depth -= text[end] == right
                    if depth == 0:
                        break
                    end += 1
                index = end + 1
                break
        else:
            out.append(text[index])
            index += 1
    return "".join(out)


def norm(text: str) -> str:
    """Compared without whitespace, punctuation or case (a trace may re-punctuate the old words)."""
    return "".join(ch for ch in unicodedata.normalize("NFKC", text).casefold() if ch.isalnum())


def memory_statements(vault: Path, rev: str) -> dict[str, list[str]]:
    """path → normalised statement cores of every converged/**/*.md at `rev`."""
    found = {}
    for path in head_tree(vault, rev):
        if path.startswith("converged/") and path.endswith(".md"):
            data = git_bytes(vault, "cat-file", "blob", f"{rev}:{path}") or b""
            found[path] = [
                c
                for c in (
                    norm(core(line)) for line in statement_lines(data.decode("utf-8", "replace"))
                )
                if c
            ]
    return found


def memory_lines(vault: Path, rev: str) -> list[str]:
    lines = []
    for path in head_tree(vault, rev):
        if path.startswith("converged/") and path.endswith(".md"):
            data = git_bytes(vault, "cat-file", "blob", f"{rev}:{path}") or b""
            lines += [norm(line) for line in data.decode("utf-8", "replace").split("\n")]
    return lines


def added_by(vault: Path, commit: str) -> set[str]:
    """Statement cores a commit added to the memory files (what an undo of it may take away)."""
    if git_bytes(vault, "rev-parse", "--verify", "-q", f"{commit}^") is None:
        return set()
    before = {c for cores in memory_statements(vault, f"{commit}^").values() for c in cores}
    after = {c for cores in memory_statements(vault, commit).values() for c in cores}
    return after - before


def commits_since(vault: Path, base: str, head: str = "HEAD") -> list[dict]:
    """Commits in base..head, oldest first: sha, parent, subject, body, trailers."""
    out = git(vault, "log", "--reverse", "--format=%x1e%H%x1f%P%x1f%B", f"{base}..{head}")
    commits = []
    for chunk in out.split("\x1e")[1:]:
        sha, parents, body = chunk.split("\x1f", 2)
        commits.append(
            {
                "sha": sha.strip(),
                "parent": (parents.split() or [None])[0],
                "subject": body.strip().split("\n", 1)[0],
                "body": body,
                "pass": _trailer(body, "Cmem-Pass"),
                "undoes": _trailer(body, "Cmem-Undoes"),
            }
        )
    return commits


def _trailer(body: str, name: str) -> str | None:
    values = re.findall(rf"^{name}:\s*(\S+)\s*$", body, flags=re.M)
    return values[-1] if values else None


def state_of(vault: Path, rev: str = "HEAD") -> dict:
    data = git_bytes(vault, "cat-file", "blob", f"{rev}:{STATE}")
    try:
        return json.loads(data.decode("utf-8")) if data else {}
    except (ValueError, UnicodeDecodeError):
        return {"unreadable": True}


def uncited(vault: Path, rev: str = "HEAD") -> set[str]:
    """Notes state.json says were converged into a memory file that does not cite them: the
    pass's statements are gone while its record stays (the note may be archived meanwhile)."""
    tree, found = head_tree(vault, rev), set()
    texts: dict[str, str] = {}
    for rel, entry in (state_of(vault, rev).get("notes") or {}).items():
        name = rel.rsplit("/", 1)[-1].removesuffix(".md")
        for target in entry.get("into") or []:
            if target not in texts:
                data = (
                    git_bytes(vault, "cat-file", "blob", f"{rev}:{target}")
                    if target in tree
                    else None
                )
                texts[target] = data.decode("utf-8", "replace") if data is not None else ""
            if f"[[{name}]]" not in texts[target] and f"[[{name}|" not in texts[target]:
                found.add(f"{name} → {target}")
    return found


def baseline(vault: Path, scenario: Scenario) -> dict:
    """What the sequence must keep: the notes on disk, the memory statements in HEAD."""
    head = git(vault, "rev-parse", "HEAD").strip()
    notes = disk_notes(vault)
    allowed = sorted(added_by(vault, head)) if scenario.undoes_head else []
    return {
        "head": head,
        "notes": [
            {"path": p, "name": p.rsplit("/", 1)[-1][:-3], "blob": b}
            for p, b in sorted(notes.items())
        ],
        "statements": memory_statements(vault, head),
        "undo_allowed": allowed,
        "passes": [p.get("id") for p in state_of(vault).get("passes", [])],
        "uncited": sorted(uncited(vault, head)),
    }


def newest_step(vault: Path, rev: str) -> str | None:
    """The newest cmem commit reachable from `rev` that an undo should take back."""
    out = git(vault, "log", "--format=%x1e%H%x1f%B", rev)
    undone = set()
    for chunk in out.split("\x1e")[1:]:
        sha, body = chunk.split("\x1f", 1)
        if not _trailer(body, "Cmem-Pass"):
            continue
        target = _trailer(body, "Cmem-Undoes")
        if target:
            undone.add(target)
            continue
        if not any(sha.startswith(u) or u.startswith(sha) for u in undone):
            return sha.strip()
    return None


@dataclass
class Check:
    problems: list[str] = field(default_factory=list)
    lost: set[str] = field(default_factory=set)
    duplicated: set[str] = field(default_factory=set)
    statements_lost: set[str] = field(default_factory=set)
    work_lost: set[str] = field(default_factory=set)  # (note → memory file) pairs no longer cited
    kinds: set[str] = field(default_factory=set)

    def fail(self, kind: str, message: str) -> None:
        self.kinds.add(kind)
        self.problems.append(f"[{kind}] {message}")


def check(
    vault: Path,
    base: dict,
    phase: str,
    result: Check,
    note_rel: str | None = None,
    steps_done: bool = False,
) -> None:
    """Every invariant but "the next pass works", as of now; problems prefixed with the phase."""
    # every note exactly once, on disk and in HEAD
    where = {"on disk": disk_notes(vault), "in HEAD": head_notes(vault)}
    for note in base["notes"]:
        for label, files in where.items():
            hits = sorted(
                p
                for p, b in files.items()
                if p.rsplit("/", 1)[-1][:-3] == note["name"] or b == note["blob"]
            )
            if not hits:
                result.lost.add(note["name"])
                result.fail("note lost", f"{phase}: note {note['path']!r} is missing {label}")
            elif len(hits) > 1:
                result.duplicated.add(note["name"])
                result.fail(
                    "note duplicated",
                    f"{phase}: note {note['name']!r} is {len(hits)} times {label}: {', '.join(hits)}",
                )
    # no statement of memory lost
    commits = commits_since(vault, base["head"])
    allowed = set(base["undo_allowed"])
    for commit in commits:
        if commit["undoes"]:
            allowed |= added_by(vault, commit["undoes"])
    records = norm("\n".join(c["body"] for c in commits))
    lines = memory_lines(vault, "HEAD")
    for path, cores in base["statements"].items():
        for item in cores:
            if item in allowed or item in records or any(item in line for line in lines):
                continue
            result.statements_lost.add(f"{path}: {item[:40]}")
            result.fail(
                "statement lost",
                f"{phase}: a statement of {path} is gone from HEAD's memory without a trace or record ({item[:40]!r}…)",
            )
    for pair in sorted(uncited(vault) - set(base["uncited"])):
        name, target = pair.split(" → ", 1)
        result.work_lost.add(pair)
        result.fail(
            "converged work lost",
            f"{phase}: {STATE} says {name!r} was converged into {target}, which no longer cites it "
            "(the pass's statements are gone, its record and archive move stay)",
        )
    # state.json consistent with HEAD
    tree = head_tree(vault)
    state = state_of(vault)
    if state.get("unreadable"):
        result.fail("state.json", f"{phase}: HEAD's {STATE} is not valid JSON")
    for rel in state.get("notes") or {}:
        if rel not in tree:
            result.fail("state.json", f"{phase}: {STATE} lists {rel!r}, which is not in HEAD")
    trailers = {c["pass"] for c in commits if c["pass"]}
    for entry in state.get("passes") or []:
        if entry.get("id") not in base["passes"] and entry.get("id") not in trailers:
            result.fail(
                "state.json",
                f"{phase}: {STATE} records the {entry.get('kind')} step {entry.get('id')}, which has no commit",
            )
    status = subprocess.run(
        [
            "git",
            "-C",
            str(vault),
            "-c",
            "core.quotePath=false",
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
        ],
        capture_output=True,
        text=True,
        env=env(vault.parent / "home"),
    ).stdout
    dirty = []
    fields, index = status.split("\0"), 0
    while index < len(fields):
        entry = fields[index]
        index += 1
        if len(entry) < 4:
            continue
        code, path = entry[:2], entry[3:]
        if code[0] in "RC":
            index += 1
        managed = path.startswith(("converged/", "archive/", ".cmem/")) or (
            "/" not in path and path.endswith(".md")
        )
        if managed and path != note_rel:
            dirty.append(f"{code.strip()} {path}")
    if dirty:
        result.fail(
            "worktree",
            f"{phase}: the working tree differs from HEAD: {'; '.join(dirty[:6])}"
            + (" …" if len(dirty) > 6 else ""),
        )
    # every step recorded
    if not steps_done:
        for commit in commits:
            if commit["subject"].startswith("cmem: snapshot"):
                files = [
                    f
                    for f in git(vault, "show", "--format=", "--name-only", commit["sha"]).split(
                        "\n"
                    )
                    if f
                ]
                result.fail(
                    "step recorded",
                    f"{phase}: a half-finished step was committed as hand edits ({commit['subject']!r}: {', '.join(files[:4])})",
                )
        seen = Counter(c["pass"] for c in commits if c["pass"])
        for pass_id, times in seen.items():
            if times > 1:
                result.fail("step recorded", f"{phase}: step {pass_id} was committed {times} times")
        for commit in commits:
            if commit["undoes"] and commit["parent"]:
                expected = newest_step(vault, commit["parent"])
                if expected and not expected.startswith(commit["undoes"]):
                    result.fail(
                        "undo target",
                        f"{phase}: undo {commit['sha'][:8]} took back {commit['undoes'][:8]}, not the newest step {expected[:8]}",
                    )
    # git fsck
    fsck = subprocess.run(
        ["git", "-C", str(vault), "fsck", "--no-dangling"],
        capture_output=True,
        text=True,
        env=env(vault.parent / "home"),
    )
    if fsck.returncode != 0:
        result.fail("fsck", f"{phase}: git fsck: {(fsck.stderr or fsck.stdout).strip()[-200:]}")


# --- one triple ---------------------------------------------------------------------------------


@dataclass
class Triple:
    step: str  # scenario name
    point: str
    nth: int
    next: str
    killed: bool = False
    next_exit: int | None = None
    final_status: str | None = None
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    statements_lost: int = 0
    work_lost: int = 0
    kinds: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def label(self) -> str:
        return f"{self.step} {self.point}:{self.nth} → {self.next}"

    @property
    def survived(self) -> bool:
        return self.killed and not self.problems


def run_triple(prepared: Prepared, point: str, nth: int, next_kind: str, workdir: Path) -> Triple:
    started = time.monotonic()
    triple = Triple(prepared.scenario.name, point, nth, next_kind)
    folder = workdir / "trials" / _slug(f"{prepared.scenario.name}-{point}-{nth}-{next_kind}")
    if folder.exists():
        shutil.rmtree(folder)
    vault, home = copy_prepared(prepared.folder, folder)
    base = prepared.baseline
    if point == NO_POINT:
        # the step reached no kill point when undisturbed (nothing to do?): run it whole, then go on
        whole = cmem(vault, home, step_args(prepared.scenario.step))
        triple.killed = True
        if "Traceback" in whole.stderr:
            triple.problems.append(f"[traceback] the step crashed: {whole.stderr.strip()[-300:]}")
    else:
        killed = cmem(vault, home, step_args(prepared.scenario.step), f"{point}:{nth}")
        triple.killed = killed.returncode == -9
    if not triple.killed:
        triple.problems.append(
            f"[not killed] the step exited {killed.returncode} before reaching {point}:{nth}"
        )
        triple.seconds = round(time.monotonic() - started, 2)
        return triple
    nxt = cmem(vault, home, step_args(next_kind))
    triple.next_exit = nxt.returncode
    result = Check()
    if "Traceback" in nxt.stderr:
        result.fail(
            "traceback",
            f"next `{' '.join(step_args(next_kind))}` crashed: {nxt.stderr.strip()[-300:]}",
        )
    note_rel = None
    if next_kind == "note" and nxt.returncode == 0:
        try:
            note_rel = json.loads(nxt.stdout)["note"]
        except (ValueError, KeyError):
            note_rel = None
    check(vault, base, "after the next command", result, note_rel)
    final = cmem(vault, home, [*converge_args(), "--json"])
    try:
        triple.final_status = json.loads(final.stdout).get("status")
    except ValueError:
        triple.final_status = None
    if final.returncode != 0 or triple.final_status not in ("applied", "nothing"):
        result.fail(
            "next pass",
            f"the next pass: exit {final.returncode}, status {triple.final_status}: {(final.stderr or final.stdout).strip()[-300:]}",
        )
    scan = cmem(vault, home, ["scan"])
    if scan.returncode != 0:
        result.fail("next pass", f"cmem scan: exit {scan.returncode}: {scan.stderr.strip()[-200:]}")
    check(vault, base, "after the next pass", result, steps_done=True)
    triple.lost, triple.duplicated = sorted(result.lost), sorted(result.duplicated)
    triple.statements_lost = len(result.statements_lost)
    triple.work_lost = len(result.work_lost)
    triple.kinds = sorted(result.kinds | {p[1 : p.index("]")] for p in triple.problems})
    triple.problems = list(dict.fromkeys(triple.problems + result.problems))
    triple.seconds = round(time.monotonic() - started, 2)
    return triple


# --- plans and figures --------------------------------------------------------------------------


def plan_for(prepared: Prepared, nexts: tuple[str, ...]) -> list[tuple[str, str, int, str]]:
    """Every point at every occurrence, times every next command. A step that reaches no point
    (it found nothing to do) is still run whole, once per next command (point `none`)."""
    counts = prepared.counts or {NO_POINT: 1}
    return [
        (prepared.scenario.name, point, n, nxt)
        for point in sorted(counts)
        for n in range(1, counts[point] + 1)
        for nxt in nexts
    ]


def sample_plan(
    plan: list[tuple[str, str, int, str]], count: int, seed: int
) -> list[tuple[str, str, int, str]]:
    """`count` triples, taken round-robin over (step, next command) so every pair is covered
    before any pair gets a second one; which point within a pair is random (seeded)."""
    rng = random.Random(seed)
    buckets: dict[tuple[str, str], list] = {}
    for item in plan:
        buckets.setdefault((item[0], item[3]), []).append(item)
    for items in buckets.values():
        rng.shuffle(items)
    steps = list(dict.fromkeys(item[0] for item in plan))
    nexts = list(dict.fromkeys(item[3] for item in plan))
    # diagonal order: the first len(steps) pairs cover every step, each with a different next command
    keys = [
        (step, nexts[(i + j) % len(nexts)])
        for j in range(len(nexts))
        for i, step in enumerate(steps)
    ]
    keys = [key for key in keys if key in buckets]
    chosen = []
    while len(chosen) < count and any(buckets.values()):
        for key in keys:
            if buckets[key] and len(chosen) < count:
                chosen.append(buckets[key].pop())
    return sorted(chosen)


def run_sequences(
    workdir: Path,
    sample: int | None = None,
    steps: list[str] | None = None,
    nexts: list[str] | None = None,
    triples: list[tuple[str, str, int, str]] | None = None,
    jobs: int | None = None,
    seed: int = 10,
    progress=None,
) -> dict:
    """Every triple (or `sample` of them, or exactly `triples`, which skips the discovery runs)."""
    started = time.monotonic()
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    nexts_t = tuple(nexts or NEXT_COMMANDS)
    names = steps or ([t[0] for t in triples] if triples else [s.name for s in SCENARIOS])
    names = list(dict.fromkeys(names))
    jobs = jobs or min(4, os.cpu_count() or 1)
    with ThreadPoolExecutor(jobs) as pool:
        prepared = dict(zip(names, pool.map(lambda name: prepare(BY_NAME[name], workdir), names)))
    scenarios = {}
    for name, prep in prepared.items():
        scenarios[name] = {"error": prep.error}
    usable = {n: p for n, p in prepared.items() if p.error is None}
    if triples is None:
        with ThreadPoolExecutor(jobs) as pool:
            list(pool.map(lambda p: discover(p, workdir), usable.values()))
        plan = [t for p in usable.values() for t in plan_for(p, nexts_t)]
        for name, prep in usable.items():
            scenarios[name].update(points=prep.counts, undisturbed=prep.undisturbed)
            if not prep.counts:
                scenarios[name]["note"] = (
                    f"the undisturbed step reached no kill point (exit {prep.undisturbed.get('exit')}): "
                    "it found nothing to do; run whole instead of killed"
                )
        if sample is not None and sample < len(plan):
            plan = sample_plan(plan, sample, seed)
    else:
        plan = [t for t in triples if t[0] in usable]
    done = []

    def one(item):
        triple = run_triple(usable[item[0]], item[1], item[2], item[3], workdir)
        done.append(triple)
        if progress:
            progress(
                f"[{len(done)}/{len(plan)}] {triple.label}: "
                + ("ok" if triple.survived else ", ".join(triple.kinds) or "not killed")
            )
        return triple

    with ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(one, plan))
    return figures(results, scenarios, time.monotonic() - started, sample, jobs)


def figures(
    results: list[Triple], scenarios: dict, seconds: float, sample: int | None, jobs: int
) -> dict:
    killed = [t for t in results if t.killed]
    by_pair: dict[str, dict] = {}
    for t in killed:
        row = by_pair.setdefault(f"{t.step} → {t.next}", {"tried": 0, "survived": 0})
        row["tried"] += 1
        row["survived"] += t.survived
    kinds = Counter(kind for t in killed for kind in t.kinds)
    examples = {}
    for t in killed:
        for kind in t.kinds:
            examples.setdefault(
                kind, f"{t.label}: {next(p for p in t.problems if p.startswith(f'[{kind}]'))}"
            )
    return {
        "command": COMMAND_LINE + (f" --sample {sample}" if sample is not None else ""),
        "tried": len(killed),
        "survived": sum(t.survived for t in killed),
        "notes_lost": sum(len(t.lost) for t in killed),
        "notes_duplicated": sum(len(t.duplicated) for t in killed),
        "sequences_losing_a_note": sum(bool(t.lost) for t in killed),
        "sequences_duplicating_a_note": sum(bool(t.duplicated) for t in killed),
        "statements_lost": sum(t.statements_lost for t in killed),
        "sequences_losing_a_statement": sum(bool(t.statements_lost) for t in killed),
        "converged_work_lost": sum(t.work_lost for t in killed),
        "sequences_losing_converged_work": sum(bool(t.work_lost) for t in killed),
        "not_killed": [t.label for t in results if not t.killed],
        "by_pair": by_pair,
        "failures_by_kind": dict(kinds.most_common()),
        "examples": examples,
        "scenarios": scenarios,
        "seconds": round(seconds, 1),
        "jobs": jobs,
        "triples": [dict(asdict(t), label=t.label, survived=t.survived) for t in results],
    }


def summary(f: dict) -> str:
    lines = [
        f"{f['tried']} sequences tried, {f['survived']} survived; notes lost {f['notes_lost']} "
        f"(in {f['sequences_losing_a_note']} sequences), duplicated {f['notes_duplicated']} "
        f"(in {f['sequences_duplicating_a_note']}); statements lost {f['statements_lost']} "
        f"(in {f['sequences_losing_a_statement']}); converged notes no longer cited {f['converged_work_lost']} "
        f"(in {f['sequences_losing_converged_work']}); {f['seconds']} s with {f['jobs']} jobs."
    ]
    for name, info in f["scenarios"].items():
        points = info.get("points")
        text = ", ".join(f"{p}×{n}" for p, n in sorted(points.items())) if points else "-"
        lines.append(
            f"  step {name}: points {text}"
            + "".join(f"; {info[k]}" for k in ("error", "note") if info.get(k))
        )
    lines.append("")
    lines.append("survived / tried, per step → next command:")
    for pair, row in sorted(f["by_pair"].items()):
        lines.append(f"  {pair:32} {row['survived']:4} / {row['tried']}")
    if f["failures_by_kind"]:
        lines.append("")
        lines.append("sequences failing each invariant (one example each):")
        for kind, count in f["failures_by_kind"].items():
            lines.append(f"  {kind:16} {count:4}  e.g. {f['examples'][kind][:400]}")
    if f["not_killed"]:
        lines.append(
            f"not killed (the step ended before the point): {', '.join(f['not_killed'][:10])}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sample",
        type=int,
        default=None,
        help="Run N triples, spread over every (step, next command) pair.",
    )
    parser.add_argument(
        "--json", action="store_true", help="Print every figure and every triple as JSON."
    )
    parser.add_argument(
        "--steps", default=None, help="Comma-separated steps: " + ", ".join(BY_NAME)
    )
    parser.add_argument(
        "--next", default=None, help="Comma-separated next commands: " + ", ".join(NEXT_COMMANDS)
    )
    parser.add_argument(
        "--jobs", type=int, default=None, help="Trials at once (default: min(4, CPUs))."
    )
    parser.add_argument("--seed", type=int, default=10, help="Which sample (with --sample).")
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="Keep the trial folders here (default: a temporary folder, removed after).",
    )
    args = parser.parse_args(argv)
    steps = args.steps.split(",") if args.steps else None
    for name in steps or []:
        if name not in BY_NAME:
            parser.error(f"unknown step {name!r}; one of {', '.join(BY_NAME)}")
    nexts = args.next.split(",") if args.next else None
    for name in nexts or []:
        if name not in NEXT_COMMANDS:
            parser.error(f"unknown next command {name!r}; one of {', '.join(NEXT_COMMANDS)}")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="cmem-sequences-"))
    say = None if args.json else (lambda line: print(line, file=sys.stderr, flush=True))
    try:
        result = run_sequences(
            workdir, args.sample, steps, nexts, jobs=args.jobs, seed=args.seed, progress=say
        )
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(result, ensure_ascii=False, indent=1) if args.json else summary(result))
    return (
        0
        if result["survived"] == result["tried"]
        and result["notes_lost"] == 0
        and result["notes_duplicated"] == 0
        else 1
    )


if __name__ == "__main__":
    sys.exit(main())
