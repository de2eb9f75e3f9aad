"""Helpers for the archive, undo and trace tests: passes made by hand, exactly as the pipeline
commits them (a checklist section, state.json entries, a `cmem:` commit with the trailer), so
these tests do not depend on what an engine decides to write."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from cmem.archive.checklist import StageEntry, archive_target, stage_notes
from cmem.steps.commits import commit_files
from cmem.vault.state_json import ConvergedNote, State, load_state, save_state
from support import git

STATE = ".cmem/state.json"
CHECKLIST = "archive/ARCHIVE-CHECKLIST.md"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fake_pass(
    root: Path,
    notes: list[str],
    writes: dict[str, str] | None = None,
    pass_id: str = "20261129-101500-aaaa",
    date: str = "2026-11-29",
    into: list[str] | None = None,
    stage: bool = True,
) -> str:
    """Converge `notes` (vault-relative) into `writes`, stage them, commit. Returns the commit."""
    writes = writes or {}
    into = into or sorted(writes) or ["converged/core/profile.md"]
    for rel, text in writes.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    state_path = root / STATE
    state = load_state(state_path) if state_path.exists() else State()
    time = f"{date}T10:15:00+00:00"
    entries = []
    for rel in notes:
        digest = sha(root / rel)
        state.notes[rel] = ConvergedNote(digest, set(), pass_id, time, into)
        name = rel.rsplit("/", 1)[-1].removesuffix(".md")
        entries.append(
            StageEntry(
                name, archive_target("archive", "{yyyy}-{mm}/{name}", rel, date), into, digest
            )
        )
    state.passes.append(
        {
            "id": pass_id,
            "time": time,
            "engine": "builtin",
            "model": None,
            "notes": notes,
            "changed": sorted(writes),
            "warnings": 0,
            "kind": "converge",
        }
    )
    save_state(state_path, state)
    paths = list(writes) + [STATE]
    if stage and entries:
        checklist = root / CHECKLIST
        current = checklist.read_text("utf-8") if checklist.exists() else None
        checklist.parent.mkdir(parents=True, exist_ok=True)
        checklist.write_text(stage_notes(current, entries, pass_id, date, "zh"), encoding="utf-8")
        paths.append(CHECKLIST)
    names = ", ".join(p.rsplit("/", 1)[-1].removesuffix(".md") for p in writes) or "no files"
    message = "\n".join(
        [f"cmem: converge {len(notes)} notes → {names}", ""]
        + [f"Converged: {rel}" for rel in notes]
        + [f"Changed: {rel}" for rel in writes]
        + ["Engine: builtin", "", f"Cmem-Pass: {pass_id}"]
    )
    return commit_files(root, {}, message, from_disk=paths)


def tick(root: Path, *names: str) -> None:
    checklist = root / CHECKLIST
    lines = checklist.read_text("utf-8").split("\n")
    for index, line in enumerate(lines):
        if any(f"[[{name}]]" in line for name in names):
            lines[index] = line.replace("[ ]", "[x]", 1)
    checklist.write_text("\n".join(lines), encoding="utf-8")


def tree(root: Path) -> dict[str, bytes]:
    """Every file of the working tree (outside .git) and its bytes."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def git_objects(root: Path) -> set[str]:
    out = subprocess.run(
        ["git", "-C", str(root), "cat-file", "--batch-all-objects", "--batch-check=%(objectname)"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return set(out.split())


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def run_main(monkeypatch, capsys, *args) -> tuple[int, str, str]:
    """Through main(), which owns error translation and exit codes."""
    from cmem.cli import main

    monkeypatch.setattr("sys.argv", ["cmem", *args])
    try:
        main()
        code = 0
    except SystemExit as exc:  # main() exits only on errors and explicit exit codes
        code = exc.code or 0
    out = capsys.readouterr()
    return code, out.out, out.err
