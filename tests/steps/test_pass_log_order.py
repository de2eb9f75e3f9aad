"""`cmem log` lists steps in the order they happened, whatever the clock said (issue 43): it sorted
passes by their commit time, so after the clock went back (a laptop's battery, a VM restored, a
machine synced with one whose clock is behind) a pass was listed before the one it came after.
The commits are listed in the graph's order; a failed pass, which has no commit, by its time
among them. Real git, real processes; the clock set back is git's (GIT_COMMITTER_DATE)."""

from __future__ import annotations

import json

from support import run_cmem

BACK = {"GIT_COMMITTER_DATE": "2020-01-01T00:00:00+00:00"}


def log(root, *args: str) -> list[dict]:
    done = run_cmem("log", "--json", *args, "--vault", str(root))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["passes"]


def converge(root, note: str, text: str, env: dict | None = None, *args: str):
    (root / note).write_text(text)
    return run_cmem("converge", *args, "--vault", str(root), env=env)


def builtin(root, note: str, text: str, env: dict | None = None) -> None:
    """A builtin pass over one new note, which must succeed."""
    done = converge(root, note, text, env, "--engine", "builtin")
    assert done.returncode == 0, done.stderr


def test_a_pass_after_the_clock_went_back_is_listed_first(tmp_path):
    root = tmp_path / "vault"
    assert run_cmem("init", str(root), "--lang", "en").returncode == 0
    builtin(root, "2026-01-01 a.md", "- actually I prefer tea\n")
    builtin(root, "2026-01-02 b.md", "- actually I prefer vim\n", BACK)
    builtin(root, "2026-01-03 c.md", "- actually I prefer zsh\n", BACK)
    notes = [entry["notes"] for entry in log(root)]
    assert notes == [["2026-01-03 c.md"], ["2026-01-02 b.md"], ["2026-01-01 a.md"]]
    assert [entry["notes"] for entry in log(root, "--limit", "1")] == [["2026-01-03 c.md"]]
    # undo takes back the last pass in the graph (c), and the log shows the undo first
    assert run_cmem("undo", "--yes", "--vault", str(root), env=BACK).returncode == 0
    undo, undone = log(root)[:2]
    assert undo["kind"] == "undo" and undone["notes"] == ["2026-01-03 c.md"]
    assert undo["undoes"] == undone["commit"]
    assert "zsh" not in (root / "converged/core/profile.md").read_text()


def test_a_failed_pass_stands_by_its_time_among_the_commits(tmp_path):
    root = tmp_path / "vault"
    assert run_cmem("init", str(root), "--lang", "en").returncode == 0
    builtin(root, "2026-01-01 a.md", "- actually I prefer tea\n")
    builtin(root, "2026-01-02 b.md", "- actually I prefer vim\n", BACK)
    failed = converge(root, "2026-01-03 c.md", "- actually I prefer zsh\n", None, "--llm", "false")
    assert failed.returncode == 1
    entries = log(root)
    assert entries[0].get("status") == "failed"  # the newest: it ran last
    assert [e["notes"] for e in entries[1:]] == [["2026-01-02 b.md"], ["2026-01-01 a.md"]]
