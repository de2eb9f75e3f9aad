"""A statement citing a turn, `[[note#^t2]]`: the block must exist in that note and, in a session
note, be one of the user's turns, not the agent's context (docs/design.md §14; an agent's block
breaks rule 11, a missing one rule 3)."""

from __future__ import annotations

from pathlib import Path

from cmem.converge.validator.response import parse_response
from cmem.converge.validator.turn_citations import block_problem, turn_refs
from cmem.converge.validator.validate import PassContext, validate_response
from cmem.sessions.capture import capture_transcripts
from cmem.setup.init import init_vault
from cmem.vault.layers import open_vault
from cmem.vault.statements import parse_statements

FIXTURE = Path(__file__).parent.parent / "sessions" / "fixtures" / "claude-code-session.jsonl"
NAME = "2026-11-30 claude-code tidepool 9abc"
REL = f"sessions/{NAME}.md"


def _vault(tmp_path):
    root = tmp_path / "v"
    init_vault(root, "en")
    vault = open_vault(root)
    capture_transcripts(vault, [FIXTURE])
    (root / "plain note.md").write_text("- I like short answers ^pref\n- other\n", "utf-8")
    return open_vault(root)


def test_a_turn_reference_is_read_as_a_source_of_its_note():
    line = f"- Uses pnpm, never npm (source: [[{NAME}#^t2]])"
    (statement,) = parse_statements(line, 1)
    assert list(statement.sources) == [NAME] and statement.core == "Uses pnpm, never npm"
    assert turn_refs(line) == [(NAME, "t2")]
    assert turn_refs(f"(source: [[{NAME}]]#^t3, [[other#^x-1|alias]])") == [
        (NAME, "t3"),
        ("other", "x-1"),
    ]


def test_the_block_must_be_one_of_the_users_turns(tmp_path):
    vault = _vault(tmp_path)
    text = (vault.root / REL).read_text("utf-8")
    assert block_problem(text, "t2") is None and block_problem(text, "t4") is None
    assert "names no turn" in block_problem(text, "t9")
    assert "names no turn" in block_problem(text, "pref")
    # an anchor someone put after the agent's context is not the user's
    forged = text.replace("~~~\n\n**user · t2**", "~~~\n\n^t7\n\n**user · t2**")
    assert "not one of the user's turns" in block_problem(forged, "t7")
    # a plain note: any block of it is the user's
    plain = (vault.root / "plain note.md").read_text("utf-8")
    assert block_problem(plain, "pref") is None
    assert "names no block" in block_problem(plain, "nope")


def _reply(*statements: str) -> str:
    body = "# Profile\n\n" + "\n".join(statements) + "\n"
    return (
        f'<convergence>\n<file path="converged/core/profile.md">\n{body}</file>\n'
        f'<converged note="{REL}" into="converged/core/profile.md"/>\n</convergence>\n'
    )


def test_the_validator_rejects_a_citation_of_a_missing_or_an_agents_block(tmp_path):
    vault = _vault(tmp_path)
    ctx = PassContext("2026-11-30", [REL], {}, vault.note_names())
    good = _reply(f"- Uses pnpm, never npm (source: [[{NAME}#^t2]])")
    result = validate_response(vault, parse_response(good), ctx)
    assert result.errors == [], result.errors
    bad = _reply(
        f"- Uses pnpm, never npm (source: [[{NAME}#^t2]])",
        f"- Wants coverage at 80% (source: [[{NAME}#^t12]])",
        "- Likes short answers (source: [[plain note#^gone]])",
    )
    result = validate_response(vault, parse_response(bad), ctx)
    turns = [i for i in result.errors if "#^" in i.message]
    assert [(i.file, i.line, i.rule) for i in turns] == [
        ("converged/core/profile.md", 4, "3"),  # no such turn: a source that resolves to nothing
        ("converged/core/profile.md", 5, "3"),
    ]
    assert "^t12" in turns[0].message and "names no block" in turns[1].message
    # an anchor put after the agent's context: the agent's words, rule 11
    note = vault.root / REL
    note.write_text(
        note.read_text("utf-8").replace("~~~\n\n**user · t2**", "~~~\n\n^t7\n\n**user · t2**"),
        "utf-8",
    )
    forged = _reply(f"- Uses pnpm, never npm (source: [[{NAME}#^t7]])")
    result = validate_response(open_vault(vault.root), parse_response(forged), ctx)
    assert [(i.rule, "agent" in i.message) for i in result.errors if "#^" in i.message] == [
        ("11", True)
    ]
