"""A captured session converges into memory citing its turns (docs/design.md §14): the builtin
engine cites the turn each signal line stands in; a model sees the session's project and the rule
for citing, and a reply resting a statement on the agent's text is sent back."""

from __future__ import annotations

from pathlib import Path

from cmem.converge.pipeline import run_pass
from cmem.sessions.capture import capture_transcripts
from cmem.setup.init import init_vault
from cmem.vault.layers import open_vault
from pass_helpers import llm_options, model_env, prompts_sent, today
from support import git, run_cmem

FIXTURES = Path(__file__).parent / "fixtures"
CLAUDE = FIXTURES / "claude-code-session.jsonl"
NAME = "2026-11-30 claude-code tidepool 9abc"
REL = f"sessions/{NAME}.md"


def _captured(tmp_path):
    root = tmp_path / "v"
    init_vault(root, "en")
    capture_transcripts(open_vault(root), [CLAUDE])
    return root


def test_the_builtin_pass_converges_a_session_citing_its_turns(tmp_path):
    root = _captured(tmp_path)
    done = run_cmem("--vault", str(root), "converge", "--engine", "builtin")
    assert done.returncode == 0, done.stderr
    profile = (root / "converged/core/profile.md").read_text("utf-8")
    assert f"never npm (source: [[{NAME}#^t2]])" in profile
    assert "Shall I go ahead" not in profile  # the agent's words are never memory
    assert git(root, "log", "-1", "--format=%s").startswith("cmem: converge 1 note")


def _reply(statement: str) -> str:
    return f"""<convergence>
<file path="converged/topics/tidepool.md">
---
summary: the tidepool project
updated: {today()}
---
# Tidepool

- {statement}
</file>
<converged note="{REL}" into="converged/topics/tidepool.md"/>
</convergence>
"""


def test_a_model_sees_the_project_and_a_citation_of_the_agents_text_is_sent_back(
    tmp_path, monkeypatch
):
    root = _captured(tmp_path)
    config = root / ".cmem" / "config.yaml"
    config.write_text(config.read_text("utf-8") + "\nrepair_rounds: 1\n", "utf-8")
    bad = _reply(f"Uses npm to install vitest (source: [[{NAME}#^t9]])")
    good = _reply(f"Uses pnpm, never npm (source: [[{NAME}#^t2]])")
    log = model_env(monkeypatch, tmp_path, [bad, good])
    result = run_pass(open_vault(root), llm_options())
    assert result.status == "applied", result.errors
    first, repair = prompts_sent(log)
    assert 'project: "/home/me/work/tidepool"' in first  # the note is quoted whole
    assert "# Sessions" in first and "#^t5]]" in first
    assert "^t9" in repair and "names no turn" in repair
    topic = (root / "converged/topics/tidepool.md").read_text("utf-8")
    assert f"[[{NAME}#^t2]]" in topic
