"""Every read command tells the truth after any sequence of changes (issue 13, "correctness first").

The stored results, the per-note and per-file caches, the index of `recall` and the recorded pass
commit each key what they hold on what it depends on. The examples in `surfaces/test_stored_answers.py` check
one change each; this test checks the rule across sequences: a seeded random walk of the changes
people and tools make (notes written, appended, edited in place with their old mtime put back,
replaced by a renamed file of their size and mtime, renamed, deleted; memory files and archived
notes edited in place; archive folders renamed; the config changed; an older state checked out;
real passes and archive applies), and after each one every read command (and a dry-run pass),
answered with this vault's state folder (a stored answer or the caches), must print what a cmem
that kept none of its caches prints. The vault is often dated an hour back after a change, so
answers are stored and hit: a change that keeps a file's size and (dated) mtime is then told only
by its ctime.

The figures a stored answer labels as possibly stale (`may_be_stale`: the archive's tokens after
an in-place edit) and the ages are left out of the comparison. `CMEM_SEQUENCE_SEEDS=N` runs N
seeds instead of the default two (a deeper local run).
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
from pathlib import Path

import pytest

from support import git, run_entry, settle

SIGNAL_LINES = [
    "- 其实不是这样，以后都改用 pnpm 了",
    "- 我决定改用 uv 管理 Python 项目",
    "- 以后都用 tab 缩进",
    "- 又熬夜到两点，效率很差",
    "- Actually, the deploy script should run the migrations first.",
    "- I prefer short commit messages in English.",
    "- We decided to move the blog to Astro.",
    "- Again forgot to push before leaving.",
    "- 我喜欢早上写代码",
]
PLAIN_LINES = ["今天天气不错。", "Read two chapters.", "买了咖啡豆", "Meeting at 10."]
STATEMENTS = [
    "- 以后都用 tab 缩进（来源：[[2026-11-27 notes]]）",
    "- 用 ruff 做格式化（来源：[[2026-11-24 随手记]]）",
    "- Prefers short answers (source: [[2026-11-27 notes]])",
]
READS = [
    ("status", "--json"),
    ("scan", "--json"),
    ("context",),
    ("converge", "--emit-prompt"),
    ("recall", "tab", "--json"),
    # not a read command, but it writes nothing in the vault: the pass's own caches (the memory
    # files' bytes, the engine's statement words, the topic files' terms) must tell the truth too
    ("converge", "--engine", "builtin", "--dry-run"),
]
PASS_ID = re.compile(r"\b\d{8}-\d{6}-[0-9a-f]{4}\b")


def _seeds() -> list[int]:
    count = int(os.environ.get("CMEM_SEQUENCE_SEEDS", "2"))
    return list(range(1, count + 1))


def _run(vault: Path, state: Path, *argv: str) -> tuple[int, str, str]:
    code, out, err, _ = run_entry(
        "cmem.cli", [*argv, "--vault", str(vault)], env={"XDG_STATE_HOME": str(state)}
    )
    return code, out, err


AGO = re.compile(r"\d+ ?(?:s|min|h|days?|hours?|minutes?|weeks?) ago")

# What a machine folder keeps that is derived from the vault: the caches and the recall index
CACHES = ("*.marshal", "last-pass-commit.json", "index")
_caches = shutil.ignore_patterns(*CACHES)


def _comparable(argv: tuple[str, ...], out: str) -> object:
    """What must match the truth: the ages (the clock moves between the runs) and the figures
    the answer itself labels as possibly stale are left out."""
    if argv[0] == "status":
        data = json.loads(out)
        for end in (data.get("convergent_age") or {}).values():
            if isinstance(end, dict):
                end.pop("age_seconds", None)
        if isinstance(data.get("due"), dict):  # "the last pass was 8 s ago"
            data["due"]["reason"] = AGO.sub("… ago", data["due"].get("reason") or "")
        for field in data.pop("may_be_stale", []):  # "layers.archive.tokens"
            *parents, last = field.split(".")
            node = data
            for part in parents:
                node = node.get(part, {})
            node.pop(last, None)
        return data
    if argv[0] == "recall":
        data = json.loads(out)
        data.pop("index", None)  # how the call found the index (added, updated, seconds)
        return data
    if argv[0] == "scan":
        return json.loads(out)
    if "--dry-run" in argv:
        return PASS_ID.sub("<pass>", out)  # each pass has its own id
    return out


def _diff(want: object, got: object) -> str:
    """The truth against the answer, line by line (the first 80 lines of the diff)."""
    import difflib

    def lines(value: object) -> list[str]:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1)
        return text.splitlines()

    diff = difflib.unified_diff(
        lines(want), lines(got), "empty state folder", "vault's", lineterm=""
    )
    return "\n".join(list(diff)[:80])


class Walk:
    """The vault and what the walk did, for the failure message."""

    def __init__(self, root: Path, rng: random.Random, tmp: Path):
        self.root, self.rng, self.tmp = root, rng, tmp
        self.state = tmp / "state"  # the vault's own state folder, kept across the walk
        self.done: list[str] = []
        self.fresh = 0

    def notes(self) -> list[Path]:
        skip = {"README.md", "AGENTS.md", "CLAUDE.md"}
        return sorted(p for p in self.root.glob("*.md") if p.name not in skip)

    def archived(self) -> list[Path]:
        return sorted(
            p for p in (self.root / "archive").rglob("*.md") if p.name != "ARCHIVE-CHECKLIST.md"
        )

    def memory(self) -> list[Path]:
        return sorted((self.root / "converged").rglob("*.md"))

    def lines(self, count: int) -> str:
        pool = SIGNAL_LINES + PLAIN_LINES
        return "\n".join(self.rng.choice(pool) for _ in range(count)) + "\n"

    # --- the changes ------------------------------------------------------------------------

    def new_note(self) -> str:
        path = self.root / f"2026-12-0{self.rng.randint(1, 9)} walk {len(self.done)}.md"
        path.write_text(f"# {path.stem}\n\n" + self.lines(self.rng.randint(1, 3)), "utf-8")
        return f"new note {path.name}"

    def append(self) -> str:
        if not self.notes():
            return self.new_note()
        path = self.rng.choice(self.notes())
        with open(path, "a", encoding="utf-8") as handle:
            handle.write("\n" + self.lines(1))
        return f"appended to {path.name}"

    def same_size_edit(self) -> str:
        """An edit that keeps the size and puts the old mtime back: only the ctime tells."""
        candidates = [p for p in self.notes() + self.memory() if "a" in p.read_text("utf-8")]
        if not candidates:
            return self.append()
        path = self.rng.choice(candidates)
        before = path.stat()
        text = path.read_text("utf-8")
        spot = self.rng.choice([m.start() for m in re.finditer("a", text)])
        path.write_text(text[:spot] + "e" + text[spot + 1 :], "utf-8")
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        return f"same-size edit of {path.relative_to(self.root)} (mtime put back)"

    def replace_by_rename(self) -> str:
        """Another file of the same size renamed over a note, given the note's mtime: a sync
        client or an editor that saves through a temporary file; only the inode tells."""
        candidates = [p for p in self.notes() if p.read_text("utf-8").count("\n") > 1]
        if not candidates:
            return self.new_note()
        path = self.rng.choice(candidates)
        before = path.stat()
        lines = path.read_text("utf-8").split("\n")
        self.rng.shuffle(lines)  # the same bytes in another order
        temporary = path.with_name(f".{path.name}.tmp")
        temporary.write_text("\n".join(lines), "utf-8")
        os.utime(temporary, ns=(before.st_atime_ns, before.st_mtime_ns))
        os.replace(temporary, path)
        return f"{path.name} replaced by a renamed file of its size and mtime"

    def delete(self) -> str:
        if not self.notes():
            return self.new_note()
        path = self.rng.choice(self.notes())
        path.unlink()
        return f"deleted {path.name}"

    def rename(self) -> str:
        if not self.notes():
            return self.new_note()
        path = self.rng.choice(self.notes())
        target = path.with_name(f"renamed {len(self.done)} {path.name}")
        path.rename(target)
        return f"renamed {path.name} -> {target.name}"

    def edit_memory(self) -> str:
        path = self.rng.choice(self.memory())
        with open(path, "a", encoding="utf-8") as handle:
            handle.write("\n" + self.rng.choice(STATEMENTS) + "\n")
        return f"statement added to {path.relative_to(self.root)}"

    def edit_archived(self) -> str:
        if not self.archived():
            return self.append()
        path = self.rng.choice(self.archived())
        with open(path, "a", encoding="utf-8") as handle:  # in place: its folder's mtime stays
            handle.write("\n" + self.lines(2))
        return f"archived {path.relative_to(self.root)} edited in place"

    def rename_archive_folder(self) -> str:
        folders = sorted(p for p in (self.root / "archive").iterdir() if p.is_dir())
        if not folders:
            return self.edit_archived()
        folder = self.rng.choice(folders)
        target = folder.with_name(f"19{len(self.done):02d}-01")
        folder.rename(target)
        return f"archive folder {folder.name} -> {target.name}"

    def config(self) -> str:
        path = self.root / ".cmem" / "config.yaml"
        text = path.read_text("utf-8")
        key, value = self.rng.choice(
            [("budget_tokens", self.rng.choice([3000, 8000, 12000])), ("min_recurrence", 2)]
            + [("min_recurrence", 3)]
        )
        text = re.sub(rf"(?m)^{key}:\s*\d+", f"{key}: {value}", text)
        path.write_text(text, "utf-8")
        return f"config {key}: {value}"

    def checkout_older(self) -> str:
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "--allow-empty", "-m", f"walk {len(self.done)}")
        branch = f"walk-{len(self.done)}"
        git(self.root, "checkout", "-q", "-b", branch, "HEAD~1")
        return f"committed, then checked out HEAD~1 as {branch}"

    def converge(self) -> str:
        code, out, err = _run(self.root, self.state, "converge", "--engine", "builtin", "--json")
        assert code == 0, f"{self.history()}\nconverge failed: {err[-2000:]}"
        return f"builtin pass: {json.loads(out)['status']}"

    def archive_apply(self) -> str:
        code, out, err = _run(self.root, self.state, "archive", "apply", "--all", "--yes")
        assert code in (0, 1) and "Traceback" not in err, f"{self.history()}\n{err[-2000:]}"
        return f"archive apply (exit {code})"

    CHANGES = (
        "new_note",
        "append",
        "same_size_edit",
        "replace_by_rename",
        "delete",
        "rename",
        "edit_memory",
        "edit_archived",
        "rename_archive_folder",
        "config",
        "checkout_older",
        "converge",
        "archive_apply",
    )

    # --- the check --------------------------------------------------------------------------

    def history(self) -> str:
        return "after: " + " | ".join(self.done)

    def truth(self, argv: tuple[str, ...]) -> tuple[int, str]:
        """`argv` run by a cmem that kept none of this vault's caches: a copy of the state folder
        with the machine's records (read times, run records, journals, unattended failures) and
        without the stored answers and caches."""
        self.fresh += 1
        fresh = self.tmp / f"fresh-{self.fresh}"
        machine = self.state / "cmem"
        for folder in machine.iterdir() if machine.is_dir() else []:
            if folder.is_dir() and folder.name != "results":
                shutil.copytree(folder, fresh / "cmem" / folder.name, ignore=_caches)
        code, out, err = _run(self.root, fresh, *argv)
        assert "Traceback" not in err, f"{self.history()}\n{err[-2000:]}"
        return code, out

    def check(self, settled: bool) -> None:
        for argv in READS:
            # a second call checks a stored answer: a dry run has none
            for attempt in range(2 if settled and "--dry-run" not in argv else 1):
                # the truth first, from the records as they are now (a context records reads)
                expected_code, expected = self.truth(argv)
                code, out, err = _run(self.root, self.state, *argv)
                assert "Traceback" not in err, f"{self.history()}\n{err[-2000:]}"
                assert code == expected_code, f"{self.history()}\ncmem {' '.join(argv)}: {err}"
                if code != 0:
                    continue
                got, want = _comparable(argv, out), _comparable(argv, expected)
                assert got == want, (
                    f"{self.history()}\n`cmem {' '.join(argv)}` (call {attempt + 1} with the "
                    "vault's state folder) differs from a run with an empty one:\n"
                    + _diff(want, got)
                )


@pytest.mark.parametrize("seed", _seeds())
def test_every_read_command_tells_the_truth_after_any_sequence_of_changes(
    sample_vault, tmp_path, seed
):
    rng = random.Random(seed)
    walk = Walk(sample_vault, rng, tmp_path)
    settle(sample_vault)
    walk.check(settled=True)
    for _ in range(10):
        change = rng.choice(Walk.CHANGES)
        walk.done.append(getattr(walk, change)())
        settled = rng.random() < 0.6
        if settled:
            settle(sample_vault)
            walk.done.append("dated back")
        walk.check(settled)
