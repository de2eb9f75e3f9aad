"""One file that cannot be read is quarantined, never the whole step (issue 43): a note, a memory
file or a folder with mode 000 is named by the commands that read it and left as it is, and
every other note goes on as if it were not there.

Real processes throughout (`run_cmem(..., modes_hold=True)`: as root, without the capabilities
that let root read any file, so mode 000 binds it as it binds a user).
"""

from __future__ import annotations

import json
import os

import pytest

from support import copy_vault, git, modes_hold_or_skip, run_cmem, vault_template

PROFILE = "converged/core/profile.md"


def _converged_once(root) -> None:
    assert run_cmem("init", str(root), "--lang", "en").returncode == 0
    (root / "2026-01-01 tea.md").write_text("- actually I prefer tea over coffee\n")
    (root / "2026-01-02 uv.md").write_text("- I decided to use uv from now on\n")
    done = cmem(root, "converge", "--engine", "builtin")
    assert done.returncode == 0 and (root / PROFILE).exists(), done.stderr


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return vault_template(tmp_path_factory, _converged_once)


@pytest.fixture
def vault(template, tmp_path):
    """A vault whose first pass converged two notes into the profile; both are staged."""
    modes_hold_or_skip()
    root = copy_vault(template, tmp_path / "vault")
    yield root
    for folder, dirs, files in os.walk(root):  # pytest must be able to remove it
        for name in dirs + files:
            os.chmod(os.path.join(folder, name), 0o755, follow_symlinks=False)


def cmem(root, *args: str):
    return run_cmem(*args, "--vault", str(root), modes_hold=True)


def as_json(root, *args: str) -> dict:
    done = cmem(root, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def odd_named(root, command: str) -> dict[str, str]:
    """The odd files `status` or `scan` names (path → message)."""
    data = as_json(root, command)
    if command == "status":
        return {odd["file"]: odd["message"] for odd in data["odd_files"]}
    return {odd["note"]: odd["message"] for odd in data["odd"]}


def test_an_unreadable_note_is_skipped_by_every_command_and_waits_until_it_can_be_read(vault):
    (vault / "2026-01-03 tests.md").write_text("- from now on I always run tests first\n")
    (vault / "2026-01-04 vim.md").write_text("- I prefer vim over emacs\n")
    os.chmod(vault / "2026-01-04 vim.md", 0)  # new, never committed
    os.chmod(vault / "2026-01-01 tea.md", 0)  # converged and staged
    tea_state = json.loads((vault / ".cmem/state.json").read_text())["notes"]["2026-01-01 tea.md"]

    for command in ("status", "scan"):
        named = odd_named(vault, command)
        assert "2026-01-04 vim.md" in named and "2026-01-01 tea.md" in named, command

    done = cmem(vault, "converge", "--engine", "builtin", "--json")
    result = json.loads(done.stdout)
    assert done.returncode == 0 and result["status"] == "applied", done.stderr
    assert result["converged"] == ["2026-01-03 tests.md"]
    assert any(w.startswith("2026-01-04 vim.md cannot be read") for w in result["warnings"])
    assert "2026-01-04 vim.md" not in git(vault, "ls-files")  # left out of the snapshot

    done = cmem(vault, "archive", "apply", "--all", "--yes", "--json")
    result = json.loads(done.stdout)
    assert done.returncode == 0, done.stderr
    assert sorted(m["from"] for m in result["moved"]) == ["2026-01-02 uv.md", "2026-01-03 tests.md"]
    assert [(s["note"], s["state"]) for s in result["skipped"]] == [
        ("2026-01-01 tea", "unreadable")
    ]
    assert any(w.startswith("2026-01-04 vim.md cannot be read") for w in result["warnings"])
    state = json.loads((vault / ".cmem/state.json").read_text())["notes"]
    assert state["2026-01-01 tea.md"] == tea_state  # still converged, still staged
    assert (vault / "2026-01-01 tea.md").exists()

    done = cmem(vault, "undo", "--yes")
    assert done.returncode == 0, done.stderr
    assert (vault / "2026-01-02 uv.md").exists() and (vault / "2026-01-03 tests.md").exists()

    os.chmod(vault / "2026-01-04 vim.md", 0o644)  # readable again: it was pending all along
    os.chmod(vault / "2026-01-01 tea.md", 0o644)
    result = as_json(vault, "converge", "--engine", "builtin")
    assert result["converged"] == ["2026-01-04 vim.md"]
    lines = {line["note"]: line["state"] for line in as_json(vault, "archive", "list")["staged"]}
    assert lines["2026-01-01 tea"] == "ready"


def test_an_unreadable_memory_file_is_left_alone_and_so_are_the_notes_it_holds(vault):
    profile = (vault / PROFILE).read_bytes()
    state_before = (vault / ".cmem/state.json").read_bytes()
    (vault / "2026-01-05 go.md").write_text("- actually I prefer go over rust\n")
    os.chmod(vault / PROFILE, 0)

    for command in ("status", "scan"):
        assert odd_named(vault, command)[PROFILE].startswith("cannot be read"), command
    done = cmem(vault, "doctor")
    assert PROFILE in done.stdout and "Traceback" not in done.stderr

    # the pass: the note that goes into the profile waits, unrecorded; the profile is untouched
    done = cmem(vault, "converge", "--engine", "builtin", "--json")
    result = json.loads(done.stdout)
    assert done.returncode == 0 and result["converged"] == [], done.stderr
    assert any(
        w.startswith("2026-01-05 go.md waits") and PROFILE in w for w in result["warnings"]
    ), result["warnings"]
    state = json.loads((vault / ".cmem/state.json").read_text())
    assert "2026-01-05 go.md" not in state["notes"]
    assert as_json(vault, "status")["pending"]["notes"] == 1

    # archive apply: whether memory still holds the notes cannot be told, so they stay staged
    # and converged (never made pending again)
    done = cmem(vault, "archive", "apply", "--all", "--yes", "--json")
    result = json.loads(done.stdout)
    assert done.returncode == 0, done.stderr
    assert result["moved"] == [] and result["pending_again"] == []
    assert {s["state"] for s in result["skipped"]} == {"unreadable"}
    assert all(PROFILE in s["reason"] for s in result["skipped"])
    assert (vault / ".cmem/state.json").read_bytes() == state_before

    # undo of the pass that wrote the profile: refused, naming it; nothing changed
    head = git(vault, "rev-parse", "HEAD")
    done = cmem(vault, "undo", "--yes")
    assert done.returncode == 1 and f"{PROFILE} cannot be read" in done.stderr
    assert git(vault, "rev-parse", "HEAD") == head

    os.chmod(vault / PROFILE, 0o644)
    assert (vault / PROFILE).read_bytes() == profile
    result = as_json(vault, "converge", "--engine", "builtin")
    assert result["converged"] == ["2026-01-05 go.md"] and PROFILE in result["changed"]


@pytest.mark.parametrize("folder", ["sessions", "converged/topics", "archive/2026-01"])
def test_an_unreadable_folder_is_named_and_the_rest_goes_on(vault, folder):
    (vault / folder).mkdir(parents=True, exist_ok=True)
    (vault / "2026-01-06 fish.md").write_text("- actually I prefer fish over bash\n")
    os.chmod(vault / folder, 0)
    for command in ("status", "scan"):
        assert folder in odd_named(vault, command), command
    for command in (["context"], ["doctor"], ["recall", "tea"], ["archive", "list"]):
        done = cmem(vault, *command)
        assert "Traceback" not in done.stderr and done.returncode in (0, 1), command
        assert done.returncode == 0 or folder in done.stderr, (command, done.stderr)
    result = as_json(vault, "converge", "--engine", "builtin")
    assert result["converged"] == ["2026-01-06 fish.md"]
