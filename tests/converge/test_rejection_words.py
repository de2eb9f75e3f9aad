"""Rejections an agent acts on in one round (issue 41): each message says what to change — the
statement that seems to replace a gone one and the trace that keeps it, dated by the note the
change came from; no follow-on error about a block already refused; rule 12's clash by case."""

from __future__ import annotations

from support import run_cmem

PROFILE = "converged/core/profile.md"
NOTE = "2026-11-28 notes.md"
BASE = "# Profile\n\n- I live in Berlin. (source: [[2026-10-01 notes]])\n"


def _vault(make_vault, notes: dict[str, str] | None = None):
    files = {
        PROFILE: BASE,
        "archive/2026-10/2026-10-01 notes.md": "I live in Berlin.\n",
        NOTE: "Moved to Lisbon last week.\n",
        **(notes or {}),
    }
    return make_vault(files, "language: en\n", git=True)


def _apply(root, tmp_path, reply: str):
    answer = tmp_path / "reply.md"
    answer.write_text(reply, "utf-8")
    return run_cmem("--vault", str(root), "converge", "--response", str(answer))


def test_a_changed_statement_without_a_trace_is_shown_the_trace_it_needs(make_vault, tmp_path):
    root = _vault(make_vault)
    reply = (
        f'<convergence>\n<file path="{PROFILE}">\n# Profile\n\n'
        "- I live in Lisbon. (source: [[2026-11-28 notes]])\n</file>\n"
        f'<converged note="{NOTE}" into="{PROFILE}"/>\n</convergence>\n'
    )
    done = _apply(root, tmp_path, reply)
    assert done.returncode == 1
    message = next(line for line in done.stderr.splitlines() if "(rule 4)" in line)
    assert "'I live in Lisbon.' (line 3) looks like its new wording" in message
    # the trace it suggests is dated by the note the new statement cites, not by today
    assert "'I live in Lisbon. (updated 2026-11-28, was: I live in Berlin.)'" in message
    assert "Mend the reply in" in done.stderr  # and how to try again


def test_a_new_file_named_like_a_note_but_for_case_says_so_and_how_to_name_it(make_vault, tmp_path):
    root = _vault(make_vault, {"chaoxi.md": "Chaoxi uses pnpm.\n"})
    reply = (
        f'<convergence>\n<file path="converged/topics/Chaoxi.md">\n# Chaoxi\n\n'
        "- Chaoxi uses pnpm (source: [[chaoxi]])\n</file>\n"
        '<converged note="chaoxi.md" into="converged/topics/Chaoxi.md"/>\n'
        f'<deferred note="{NOTE}" reason="later"/>\n</convergence>\n'
    )
    done = _apply(root, tmp_path, reply)
    assert done.returncode == 1
    message = next(line for line in done.stderr.splitlines() if "(rule 12)" in line)
    assert "without case" in message and "Chaoxi-topic.md" in message
    # the refused block's follow-ons are not said: its own error says what to fix
    assert "no statement cites" not in done.stderr
    assert "neither in the reply nor in the vault" not in done.stderr


def test_the_prompt_says_rule_12_compares_names_without_case(make_vault):
    root = _vault(make_vault)
    prompt = run_cmem("--vault", str(root), "converge", "--emit-prompt").stdout
    assert "`Chaoxi.md` clashes with a note `chaoxi.md`" in prompt


def test_statements_moved_into_a_refused_file_are_not_called_gone(make_vault, tmp_path):
    root = _vault(make_vault, {"lisbon.md": "Lisbon notes.\n"})
    reply = (
        f'<convergence>\n<file path="{PROFILE}">\n# Profile\n</file>\n'
        '<file path="converged/topics/Lisbon.md">\n# Lisbon\n\n'
        "- I live in Berlin. (source: [[2026-10-01 notes]])\n"
        "- Moved to Lisbon in 2026-11. (source: [[2026-11-28 notes]])\n</file>\n"
        f'<converged note="{NOTE}" into="converged/topics/Lisbon.md"/>\n'
        '<deferred note="lisbon.md" reason="later"/>\n</convergence>\n'
    )
    done = _apply(root, tmp_path, reply)
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if "(rule " in line]
    assert len(errors) == 1 and "(rule 12)" in errors[0], errors
