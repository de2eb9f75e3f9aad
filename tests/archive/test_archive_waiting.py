"""A note is ready for the archive only when nothing in it waits (issue 43).

A builtin pass converges a note's cue line; its other lines wait for a model. Its checklist line
is `waiting` in `archive list`, `archive apply` (even `--all`) skips it saying why, and once a
later pass judged the rest it is `ready` and moves."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from support import git

NOTE = "2026-11-08 notes.md"
PROFILE = "converged/core/profile.md"
TEXT = "I prefer tea over coffee.\nMoved to Berlin last week; the flat is in Kreuzberg.\n"


def _cmem(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CMEM_")}
    return subprocess.run(
        [sys.executable, "-m", "cmem", *args, "--vault", str(root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


def _staged(root: Path) -> list[dict]:
    listed = _cmem(root, "archive", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    return json.loads(listed.stdout)["staged"]


def _vault(make_vault, note: str = TEXT) -> Path:
    root = make_vault(
        {NOTE: note, PROFILE: "# Profile\n"},
        config_yaml="language: en\nrepair_rounds: 0\n",
        git=True,
    )
    return root


def test_a_note_whose_lines_wait_for_a_model_is_not_archived_until_judged(make_vault, tmp_path):
    root = _vault(make_vault)
    builtin = _cmem(root, "converge", "--engine", "builtin")
    assert builtin.returncode == 0, builtin.stderr
    (line,) = _staged(root)
    assert line["state"] == "waiting", line
    assert "wait" in line["detail"] and "model" in line["detail"]
    listed = _cmem(root, "archive", "list")
    assert "waiting" in listed.stdout
    applied = _cmem(root, "archive", "apply", "--all", "--yes", "--json")
    assert applied.returncode == 0, applied.stderr
    result = json.loads(applied.stdout)
    assert result["moved"] == [] and [s["state"] for s in result["skipped"]] == ["waiting"]
    assert (root / NOTE).exists() and not list((root / "archive").rglob(NOTE))
    # a model's reply judges the rest: the note is ready and moves
    profile = (root / PROFILE).read_text("utf-8")
    statement = "- Lives in Kreuzberg, Berlin, since November 2026 (source: [[2026-11-08 notes]])\n"
    reply = tmp_path / "reply.xml"
    reply.write_text(
        f'<convergence>\n<file path="{PROFILE}">\n{profile}{statement}</file>\n'
        f'<converged note="{NOTE}" into="{PROFILE}"/>\n</convergence>\n',
        encoding="utf-8",
    )
    model = _cmem(root, "converge", "--response", str(reply))
    assert model.returncode == 0, model.stdout + model.stderr
    assert {line["state"] for line in _staged(root)} == {"ready"}
    moved = _cmem(root, "archive", "apply", "--all", "--yes", "--json")
    assert moved.returncode == 0, moved.stderr
    assert [m["from"] for m in json.loads(moved.stdout)["moved"]] == [NOTE]
    assert not (root / NOTE).exists()
    assert json.loads(_cmem(root, "status", "--json").stdout)["pending"]["notes"] == 0


def test_a_ticked_waiting_line_is_skipped_and_a_fully_judged_one_moves(make_vault):
    """Only the note whose lines wait stays: a builtin pass that placed every line of another
    note (all cue lines) lets that one move in the same apply."""
    root = make_vault(
        {
            NOTE: TEXT,
            "2026-11-09 notes.md": "I prefer green tea in the morning.\n",
            PROFILE: "# Profile\n",
        },
        config_yaml="language: en\nrepair_rounds: 0\n",
        git=True,
    )
    assert _cmem(root, "converge", "--engine", "builtin").returncode == 0
    states = {line["source"]: line["state"] for line in _staged(root)}
    assert states == {NOTE: "waiting", "2026-11-09 notes.md": "ready"}
    checklist = root / "archive/ARCHIVE-CHECKLIST.md"
    checklist.write_text(checklist.read_text("utf-8").replace("- [ ]", "- [x]"), encoding="utf-8")
    git(root, "commit", "-qam", "tick")
    applied = _cmem(root, "archive", "apply", "--yes", "--json")
    result = json.loads(applied.stdout)
    assert [m["from"] for m in result["moved"]] == ["2026-11-09 notes.md"]
    assert [(s["note"], s["state"]) for s in result["skipped"]] == [("2026-11-08 notes", "waiting")]
    assert (root / NOTE).exists()
