"""A warning about a file is said once (issue 44: the same 16 warnings on every command and in
every `cmem log` entry): by the first `status` or pass after it appears; `doctor` and `scan`
list every one, and `scan` labels each as its message says (read as it is, or not read)."""

from __future__ import annotations

import json

from support import git, run_cmem

TEMPLATER = (
    "---\ncreated: <% tp.file.creation_date() %>\n"
    '<%* const mood = await tp.system.prompt("Mood?") %>\n---\n# Day\nActually it is Debian.\n'
)


def _files(root, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).write_text(text, "utf-8")


def test_each_warning_is_said_once_and_doctor_lists_them_all(tmp_path):
    root = tmp_path / "vault"
    root.mkdir()
    _files(
        root, {"2024-04-30.md": TEMPLATER, "empty.md": "", "2026-11-29 notes.md": "I prefer tea.\n"}
    )
    assert run_cmem("init", str(root), "--lang", "en").returncode == 0
    vault = ["--vault", str(root)]

    first = run_cmem("converge", "--engine", "builtin", *vault)
    assert first.returncode == 0, first.stderr
    assert "empty.md is empty" in first.stdout and "not valid YAML" in first.stdout
    status = run_cmem("status", *vault).stdout
    assert "odd files: 2, each said before — `cmem doctor` lists them" in status
    assert "empty.md" not in status

    _files(root, {"2026-11-30 notes.md": "From now on I always take the train.\n"})
    second = run_cmem("converge", "--engine", "builtin", *vault)
    assert second.returncode == 0 and "empty.md" not in second.stdout + second.stderr
    log = json.loads(run_cmem("log", "--json", *vault).stdout)["passes"]
    said = [entry for entry in log if any("empty.md" in w for w in entry["warnings"])]
    assert len(said) == 1  # one entry records it, not every one
    assert "Warning: empty.md" not in git(root, "log", "-1", "--format=%B")

    # doctor and scan list them all, always; scan as each message says
    doctor = run_cmem("doctor", *vault).stdout
    assert (
        "empty.md is empty" in doctor and "2024-04-30.md: frontmatter is not valid YAML" in doctor
    )
    scan = run_cmem("scan", *vault).stdout
    assert "1 odd file (not read)\n  empty.md: is empty" in scan
    assert (
        "1 odd file (read as they are, never rewritten)\n  2024-04-30.md: frontmatter" in scan
        and "cmem reads it" in scan
    )

    # a new warning is said when it appears, the old ones are not said again
    _files(root, {"blank.md": ""})
    status = run_cmem("status", *vault).stdout
    assert (
        "odd files (3, 1 new)\n  blank.md: is empty" in status
        and "empty.md: is empty" not in status
    )
    # a warning gone (the file fixed) and back is new again
    _files(root, {"empty.md": "now with words\n"})
    run_cmem("status", *vault)
    _files(root, {"empty.md": ""})
    assert "empty.md: is empty" in run_cmem("status", *vault).stdout
