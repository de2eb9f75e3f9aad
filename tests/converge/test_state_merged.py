"""state.json changed while a pass's model thinks is merged, not overwritten (issue 43).

A `git pull` during the model call (Obsidian Git's auto-pull) brings another machine's converged
note and pass record; a second pass through another machine folder (another lock) converges
another note. The pass merges its own changes into the state.json on disk when it commits, by
the rule `cmem sync` uses, so both records stay."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cmem.converge.pipeline import PassOptions, run_pass
from cmem.vault.layers import open_vault
from pass_helpers import FAKE, model_env
from support import git

EN = "language: en\nrepair_rounds: 0\nllm:\n  timeout_seconds: 60\n"
PROFILE = "converged/core/profile.md"
BERLIN = "converged/topics/berlin.md"
ACME = "converged/topics/acme.md"
MOVED = "2026-11-08 notes.md"
CLIENT = "2026-11-09 notes.md"
MOVED_TEXT = "Moved to Berlin last week; the flat is in Kreuzberg.\n"


def _reply(path: str, heading: str, statement: str, note: str) -> str:
    return (
        f'<convergence>\n<file path="{path}">\n# {heading}\n\n- {statement}\n</file>\n'
        f'<converged note="{note}" into="{path}"/>\n</convergence>\n'
    )


BERLIN_REPLY = _reply(
    BERLIN, "Berlin", "Lives in Kreuzberg, Berlin (source: [[2026-11-08 notes]])", MOVED
)
ACME_REPLY = _reply(
    ACME, "Acme", "Works for Acme at 90 EUR an hour (source: [[2026-11-09 notes]])", CLIENT
)


def _clean_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CMEM_", "FAKE_LLM_"))}
    env.update(extra)
    return env


def _state(root: Path) -> dict:
    return json.loads((root / ".cmem/state.json").read_text("utf-8"))


def _committed_state(root: Path) -> dict:
    return json.loads(git(root, "show", "HEAD:.cmem/state.json"))


def _model() -> PassOptions:
    return PassOptions(llm=f"{sys.executable} {FAKE}")


def test_a_pull_while_the_model_thinks_keeps_the_other_machines_records(
    make_vault, monkeypatch, tmp_path
):
    root = make_vault({MOVED: MOVED_TEXT, PROFILE: "# Profile\n"}, config_yaml=EN, git=True)
    other = tmp_path / "other-machine"
    subprocess.run(["git", "clone", "-q", str(root), str(other)], check=True)
    (other / CLIENT).write_text("I prefer green tea in the morning.\n", encoding="utf-8")
    there = subprocess.run(
        [sys.executable, "-m", "cmem", "converge", "--engine", "builtin", "--vault", str(other)],
        env=_clean_env(XDG_STATE_HOME=str(tmp_path / "other-state")),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert there.returncode == 0, there.stderr
    their_pass = _state(other)["passes"][-1]["id"]
    # the pull Obsidian Git makes while this machine's model thinks
    pull = ["git", "-C", str(root), "pull", "-q", "--ff-only", str(other), "HEAD"]
    monkeypatch.setenv("FAKE_LLM_WHILE_THINKING", json.dumps(pull))
    model_env(monkeypatch, tmp_path, [BERLIN_REPLY])
    result = run_pass(open_vault(root), _model())
    assert result.status == "applied", result.errors
    for state in (_state(root), _committed_state(root)):
        assert sorted(state["notes"]) == [MOVED, CLIENT]
        assert [p["id"] for p in state["passes"]][-2:] == [their_pass, result.pass_id]
    assert (
        git(root, "merge-base", "--is-ancestor", git(other, "rev-parse", "HEAD").strip(), "HEAD")
        == ""
    )
    assert git(root, "status", "--porcelain", "--", ".cmem") == ""


def test_two_passes_through_different_machine_folders_keep_both_records(
    make_vault, monkeypatch, tmp_path
):
    root = make_vault(
        {MOVED: MOVED_TEXT, CLIENT: "New client Acme: 90 EUR an hour.\n", PROFILE: "# Profile\n"},
        config_yaml=EN,
        git=True,
    )
    second_reply = tmp_path / "acme.xml"
    second_reply.write_text(ACME_REPLY, encoding="utf-8")
    # a whole second pass, through another machine folder (so another lock), while the first
    # pass's model thinks
    second = [
        "env",
        *[f"-u{name}" for name in os.environ if name.startswith(("CMEM_", "FAKE_LLM_"))],
        f"XDG_STATE_HOME={tmp_path / 'second-state'}",
        sys.executable,
        "-m",
        "cmem",
        "converge",
        "--only",
        CLIENT,
        "--response",
        str(second_reply),
        "--vault",
        str(root),
    ]
    monkeypatch.setenv("FAKE_LLM_WHILE_THINKING", json.dumps(second))
    model_env(monkeypatch, tmp_path, [BERLIN_REPLY])
    result = run_pass(open_vault(root), PassOptions(llm=f"{sys.executable} {FAKE}", only=[MOVED]))
    assert result.status == "applied", result.errors
    for state in (_state(root), _committed_state(root)):
        assert sorted(state["notes"]) == [MOVED, CLIENT]
        assert state["notes"][CLIENT]["into"] == [ACME] and state["notes"][MOVED]["into"] == [
            BERLIN
        ]
        assert len([p for p in state["passes"] if p.get("kind", "converge") == "converge"]) == 2
    assert (root / ACME).is_file() and (root / BERLIN).is_file()
    assert git(root, "status", "--porcelain") == ""


def test_state_changed_in_the_instant_before_the_apply_is_merged_again(
    make_vault, monkeypatch, tmp_path
):
    """The step's own second-writer check does not stop a pass for cmem's own records: a
    state.json rewritten between the merge and the apply is merged once more."""
    from cmem.steps import changes as step_changes
    from cmem.vault.state_json import ConvergedNote, load_state, save_state

    root = make_vault({MOVED: MOVED_TEXT, PROFILE: "# Profile\n"}, config_yaml=EN, git=True)
    real_apply = step_changes.apply_changes
    calls = {"n": 0}

    def apply_after_another_writer(vault, changes):
        calls["n"] += 1
        if calls["n"] == 1:  # another writer, after the pass merged and before it applies
            state = load_state(vault.state_file)
            state.notes["elsewhere.md"] = ConvergedNote("0" * 64, set(), "p-other", "2026-11-01")
            save_state(vault.state_file, state)
        return real_apply(vault, changes)

    import cmem.steps.runner as runner

    monkeypatch.setattr(runner, "apply_changes", apply_after_another_writer)
    model_env(monkeypatch, tmp_path, [BERLIN_REPLY])
    result = run_pass(open_vault(root), _model())
    assert result.status == "applied", result.errors
    assert calls["n"] == 2
    assert sorted(_committed_state(root)["notes"]) == [MOVED, "elsewhere.md"]
    from cmem.steps.journal import pending_journals

    assert not pending_journals(open_vault(root))
