"""Legal note names that stopped `archive apply` for every note (issue 43): one bad note is
skipped with its reason, never the whole apply, and a temp name always fits.

- a 243-byte name (80 CJK characters): its temp name was longer than NAME_MAX, so the write
  failed, and with it every move of the step;
- `~ inbox.md`, `Q: when to use uv.md`: read as a home folder and a Windows drive, so the step
  refused every move; `C:\\Users notes.md`: its backslash read as a separator;
- `archive/<month>` existing as a file: every move of that month failed in the step.

Real processes, real git.
"""

from __future__ import annotations

import json
import os
import shutil
from datetime import date

import pytest

from cmem.atomic import write_atomic
from support import git, run_cmem

CJK = "記" * 80  # 240 bytes; `.md` makes 243


@pytest.fixture
def vault(tmp_path):
    root = tmp_path / "vault"
    assert run_cmem("init", str(root), "--lang", "en").returncode == 0
    (root / "2026-01-01 plain.md").write_text("- actually I prefer tea over coffee\n")
    return root


def cmem(root, *args: str, **kwargs):
    return run_cmem(*args, "--vault", str(root), **kwargs)


def converge_and_apply(root) -> dict:
    done = cmem(root, "converge", "--engine", "builtin")
    assert done.returncode == 0, done.stderr
    done = cmem(root, "archive", "apply", "--all", "--yes", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_243_byte_name_is_archived_and_undone(vault):
    note = f"{CJK}.md"
    assert len(note.encode()) == 243
    (vault / note).write_text("- actually I prefer vim over emacs\n")
    result = converge_and_apply(vault)
    assert sorted(m["from"] for m in result["moved"]) == ["2026-01-01 plain.md", note]
    month = date.today().strftime("%Y-%m")
    assert (vault / "archive" / month / note).exists() and not (vault / note).exists()
    assert cmem(vault, "undo", "--yes").returncode == 0
    assert (vault / note).exists()
    assert not [p for p in vault.rglob("*") if p.name.endswith(".cmem-tmp")]


def test_a_step_killed_while_writing_a_long_name_leaves_no_temp_file(vault, tmp_path):
    note = f"{CJK}.md"
    (vault / note).write_text("- actually I prefer vim over emacs\n")
    assert cmem(vault, "converge", "--engine", "builtin").returncode == 0
    # the apply's first write (the note at its archive path) comes after the journal's: counted
    # in an undisturbed run of the same step on a copy
    copy, log = tmp_path / "copy", tmp_path / "points.log"
    shutil.copytree(vault, copy, symlinks=True)
    assert cmem(copy, "archive", "apply", "--all", "--yes", fault_log=log).returncode == 0
    points = log.read_text().split()
    first = points[: points.index("journal-written")].count("temp-write") + 1
    killed = cmem(vault, "archive", "apply", "--all", "--yes", fault=f"temp-write:{first}")
    assert killed.returncode != 0
    assert [p for p in vault.rglob("*") if p.name.endswith(".cmem-tmp")]  # left by the kill
    assert cmem(vault, "status").returncode == 0  # the next command finishes or undoes it
    done = cmem(vault, "archive", "apply", "--all", "--yes")
    assert done.returncode == 0, done.stderr
    assert not [p for p in vault.rglob("*") if p.name.endswith(".cmem-tmp")]
    assert git(vault, "status", "--porcelain", "--", "archive", ".cmem") == ""


def test_names_a_path_check_misread_move_and_a_backslash_is_skipped_with_its_reason(vault):
    for name in ("~ inbox", "Q: when to use uv", "C:\\Users notes", "~notes"):
        (vault / f"{name}.md").write_text(f"- actually I prefer {len(name)} spaces\n")
    result = converge_and_apply(vault)
    assert sorted(m["from"] for m in result["moved"]) == [
        "2026-01-01 plain.md",
        "Q: when to use uv.md",
        "~ inbox.md",
        "~notes.md",
    ]
    [skipped] = result["skipped"]
    assert skipped["note"] == "C:\\Users notes" and skipped["state"] == "refused"
    assert "backslash" in skipped["reason"] and "rename the note" in skipped["reason"]
    assert (vault / "C:\\Users notes.md").exists()
    assert not (vault / "archive" / date.today().strftime("%Y-%m") / "C:").exists()


def test_a_file_where_the_month_folder_goes_refuses_those_lines_only(vault):
    month = "2026-01"  # the month of `2026-01-01 plain.md`: a note is filed by its own date
    (vault / "archive" / month).write_text("not a folder\n")
    assert cmem(vault, "converge", "--engine", "builtin").returncode == 0
    # a note of another month
    (vault / "2025-05-01 old.md").write_text("- actually I prefer fish over bash\n")
    assert cmem(vault, "converge", "--engine", "builtin").returncode == 0
    done = cmem(vault, "archive", "apply", "--all", "--yes", "--json")
    result = json.loads(done.stdout)
    assert done.returncode == 0, done.stderr
    assert [m["to"] for m in result["moved"]] == ["archive/2025-05/2025-05-01 old.md"]
    [skipped] = result["skipped"]
    assert skipped["state"] == "refused"
    assert f"archive/{month}, which is a file" in skipped["reason"]
    assert (vault / "archive" / month).read_text() == "not a folder\n"
    (vault / "archive" / month).unlink()
    assert cmem(vault, "archive", "apply", "--all", "--yes").returncode == 0
    assert (vault / "archive" / month / "2026-01-01 plain.md").exists()


@pytest.mark.parametrize(
    "stem", ["a" * 252, "記" * 84, "😀" * 63, CJK], ids=["ascii", "cjk", "emoji", "cjk-243"]
)
def test_a_temp_name_fits_whatever_the_target(tmp_path, stem):
    name = f"{stem}.md"
    assert 243 <= len(os.fsencode(name)) <= 255  # legal names, NAME_MAX long or nearly
    write_atomic(tmp_path / name, "x\n")  # its temp file in the same folder, then renamed
    assert (tmp_path / name).read_text() == "x\n" and os.listdir(tmp_path) == [name]
