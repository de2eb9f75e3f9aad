"""A note leaves the queue only when judged (issue 43; issue 41's deferred lines).

A note of the pass that no `<converged>` or `<deferred>` names was not judged: it stays pending,
and state.json says nothing of it. A reply that accounts for none of its notes and changes
nothing is a failed reply (rule 7), sent back in a repair round. A `<deferred lines=…>` without a
`<converged>` accounts for those lines, with the reasons written; the note's other lines wait.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cmem.converge.pipeline import PassOptions, run_pass
from cmem.scan.scanner import scan_vault
from cmem.vault.layers import open_vault
from cmem.vault.state_json import line_key
from pass_helpers import FAKE, model_env, prompts_sent
from support import git

PROFILE = "converged/core/profile.md"
EN = "language: en\nrepair_rounds: 0\nllm:\n  timeout_seconds: 10\n"
MOVED = "2026-11-08 notes.md"
CLIENT = "2026-11-09 notes.md"
FILES = {
    PROFILE: "# Profile\n",
    MOVED: "Moved to Berlin last week; the flat is in Kreuzberg.\n",
    CLIENT: "Felt tired all day.\nNew client Acme: 90 EUR an hour.\nTuesdays at their office.\n",
}
STATEMENT = "- Lives in Berlin, in Kreuzberg, since November 2026 (source: [[2026-11-08 notes]])\n"


def _vault(make_vault, config: str = EN) -> Path:
    return make_vault(dict(FILES), config_yaml=config, git=True)


def _cmem(root: Path, *args: str) -> subprocess.CompletedProcess:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("CMEM_")}
    return subprocess.run(
        [sys.executable, "-m", "cmem", *args, "--vault", str(root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


def _state_notes(root: Path) -> dict:
    state = root / ".cmem/state.json"
    return json.loads(state.read_text("utf-8"))["notes"] if state.exists() else {}


def _pending(root: Path) -> list[str]:
    return sorted(p.rel for p in scan_vault(open_vault(root)).pending)


def _model(**extra) -> PassOptions:
    return PassOptions(llm=f"{sys.executable} {FAKE}", **extra)


def test_a_reply_that_says_nothing_about_its_notes_fails_and_they_stay_pending(
    make_vault, tmp_path
):
    root = _vault(make_vault)
    head = git(root, "rev-parse", "HEAD").strip()
    for nothing in ("<convergence>not valid</convergence>\n", "<convergence>\n</convergence>\n"):
        reply = tmp_path / "reply.xml"
        reply.write_text(nothing, encoding="utf-8")
        result = _cmem(root, "converge", "--response", str(reply), "--json")
        assert result.returncode == 1, result.stdout + result.stderr
        data = json.loads(result.stdout)
        assert data["status"] == "failed" and data["commit"] is None
        assert any("(rule 7)" in error and "none of" in error for error in data["errors"]), data
        assert git(root, "rev-parse", "HEAD").strip() == head
        assert _state_notes(root) == {}
        status = json.loads(_cmem(root, "status", "--json").stdout)
        assert status["pending"]["notes"] == 2, status


def test_a_failed_silent_reply_is_asked_again_in_a_repair_round(make_vault, monkeypatch, tmp_path):
    root = _vault(make_vault, EN.replace("repair_rounds: 0", "repair_rounds: 1"))
    good = (
        f'<convergence>\n<file path="{PROFILE}">\n# Profile\n\n{STATEMENT}</file>\n'
        f'<converged note="{MOVED}" into="{PROFILE}"/>\n'
        f'<deferred note="{CLIENT}" reason="one client, no pattern yet"/>\n</convergence>\n'
    )
    log = model_env(monkeypatch, tmp_path, ["<convergence>not valid</convergence>", good])
    result = run_pass(open_vault(root), _model())
    assert result.status == "applied", result.errors
    first, repair = prompts_sent(log)
    assert "(rule 7)" in repair and "none of" in repair
    assert _pending(root) == []


def test_a_note_the_reply_does_not_name_stays_pending_and_is_sent_again(
    make_vault, monkeypatch, tmp_path
):
    root = _vault(make_vault)
    converge_one = (
        f'<convergence>\n<file path="{PROFILE}">\n# Profile\n\n{STATEMENT}</file>\n'
        f'<converged note="{MOVED}" into="{PROFILE}"/>\n</convergence>\n'
    )
    defer_other = f'<convergence>\n<deferred note="{CLIENT}" reason="wait"/>\n</convergence>\n'
    log = model_env(monkeypatch, tmp_path, [converge_one, defer_other])
    result = run_pass(open_vault(root), _model())
    assert result.status == "applied", result.errors
    assert [w for w in result.warnings if CLIENT in w and "stays pending" in w], result.warnings
    assert result.deferred == [] and CLIENT not in _state_notes(root)
    assert _pending(root) == [CLIENT]
    message = git(root, "log", "-1", "--format=%B")
    assert "Deferred" not in message and "defer" not in message.splitlines()[0]
    assert run_pass(open_vault(root), _model()).status == "applied"
    first, second = prompts_sent(log)
    assert f'<note path="{CLIENT}"' in second and f'<note path="{MOVED}"' not in second
    assert _pending(root) == []


def test_deferred_lines_without_a_converged_keep_their_reasons_and_the_rest_waits(
    make_vault, monkeypatch, tmp_path
):
    root = _vault(make_vault)
    lines_only = (
        "<convergence>\n"
        f'<deferred note="{CLIENT}" lines="1" reason="a passing mood"/>\n'
        f'<deferred note="{MOVED}" reason="wait for the address"/>\n'
        "</convergence>\n"
    )
    rest = (
        f'<convergence>\n<file path="{PROFILE}">\n# Profile\n\n'
        "- Works for the client Acme at 90 EUR an hour, Tuesdays at their office "
        "(source: [[2026-11-09 notes]])\n</file>\n"
        f'<converged note="{CLIENT}" into="{PROFILE}"/>\n</convergence>\n'
    )
    log = model_env(monkeypatch, tmp_path, [lines_only, rest])
    result = run_pass(open_vault(root), _model())
    assert result.status == "applied", result.errors
    entry = _state_notes(root)[CLIENT]
    assert entry["deferred"] == {line_key("Felt tired all day."): "a passing mood"}
    assert entry["lines"] == [] and entry["into"] == []
    scan = scan_vault(open_vault(root))
    assert [d.reason for d in scan.deferred if d.note == CLIENT] == [
        "1 line deferred: a passing mood"
    ]
    assert [p.rel for p in scan.pending] == [CLIENT]  # lines 2 and 3 were not judged
    assert run_pass(open_vault(root), _model()).status == "applied"
    second = prompts_sent(log)[1]
    assert "Lines to judge: 2-3" in second
    entry = _state_notes(root)[CLIENT]
    assert entry["deferred"] == {line_key("Felt tired all day."): "a passing mood"}
    assert entry["into"] == [PROFILE] and _pending(root) == []
