"""The convergence pass end to end (docs/design.md §3): real git, the fake model, the real
validator.

Every failure case checks the vault is byte-identical and HEAD unchanged afterwards."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cmem.converge.pipeline import PassOptions, run_pass
from cmem.errors import Busy, CmemError
from cmem.steps.changes import SecondWriter
from cmem.steps.lock import vault_lock
from cmem.vault.layers import open_vault
from cmem.vault.notes import split_frontmatter
from cmem.vault.state_json import load_state
from cmem.vault.statements import parse_statements
from pass_helpers import (  # noqa: F401  (pass_vault: a fixture)
    FAKE,
    HOSTILE,
    JOBS,
    NOTE,
    NOTE_TEXT,
    PROFILE,
    PROFILE_TEXT,
    VALID,
    llm_options,
    model_env,
    prompts_sent,
    today,
)
from support import git, snapshot, write_files


def test_valid_reply_applies_exactly(pass_vault, monkeypatch, tmp_path):
    reply = VALID.replace("{date}", today())
    log = model_env(monkeypatch, tmp_path, [reply])
    head = git(pass_vault, "rev-parse", "HEAD").strip()
    vault = open_vault(pass_vault)
    result = run_pass(vault, llm_options())
    assert result.status == "applied", result.errors
    expected = reply.split(f'<file path="{PROFILE}">\n', 1)[1].split("</file>", 1)[0]
    assert (pass_vault / PROFILE).read_text("utf-8") == expected
    assert result.changed == [PROFILE] and result.converged == [NOTE]
    # one commit, whose parent is the old HEAD, holding the file, the state and the checklist
    assert git(pass_vault, "rev-parse", "HEAD~1").strip() == head
    files = git(pass_vault, "show", "--name-only", "--format=", "HEAD").split("\n")
    assert sorted(f for f in files if f) == sorted(
        [PROFILE, ".cmem/state.json", "archive/ARCHIVE-CHECKLIST.md"]
    )
    message = git(pass_vault, "log", "-1", "--format=%B")
    assert message.startswith("cmem: converge 1 note → profile")
    assert (
        f"Converged: {NOTE}" in message
        and f"Changed: {PROFILE}" in message
        and f"Cmem-Pass: {result.pass_id}" in message
    )
    state = load_state(vault.state_file)
    assert state.notes[NOTE].into == [PROFILE] and state.passes[-1]["id"] == result.pass_id
    checklist = (pass_vault / "archive/ARCHIVE-CHECKLIST.md").read_text("utf-8")
    assert (
        # filed under the note's own month (its name's date), not the pass's
        "- [ ] [[2026-11-28 随手记]] → archive/2026-11/2026-11-28 随手记.md · into [[profile]] · sha256:"
        in checklist
    )
    # the prompt went to the model on stdin, with the note quoted as data and line numbers
    prompt = prompts_sent(log)[0]
    assert '<note path="2026-11-28 随手记.md"' in prompt and "3| - 其实不是北京" in prompt
    # and a second pass has nothing to do
    assert run_pass(open_vault(pass_vault), llm_options()).status == "nothing"


@pytest.mark.parametrize("reply_file", HOSTILE, ids=[p.stem for p in HOSTILE])
def test_hostile_reply_changes_nothing(pass_vault, monkeypatch, tmp_path, reply_file):
    text = reply_file.read_bytes().decode("utf-8", errors="replace").replace("{PASS_DATE}", today())
    model_env(monkeypatch, tmp_path, [text])
    before = snapshot(pass_vault)
    result = run_pass(open_vault(pass_vault), llm_options())
    assert result.status == "failed" and result.errors, reply_file.name
    assert snapshot(pass_vault) == before, f"{reply_file.name} changed the vault"
    assert (Path(result.run_dir) / "response-1.txt").exists()


def test_repair_round_applies_the_second_answer_and_quotes_the_errors(
    pass_vault, monkeypatch, tmp_path
):
    (pass_vault / ".cmem/config.yaml").write_text("repair_rounds: 1\n", encoding="utf-8")
    git(pass_vault, "commit", "-qam", "config")
    bad = VALID.replace("{date}", today()).replace(
        "，不再用 pip（来源：[[2026-11-28 随手记]]）", "，不再用 pip"
    )
    log = model_env(monkeypatch, tmp_path, [bad, VALID.replace("{date}", today())])
    result = run_pass(open_vault(pass_vault), llm_options())
    assert result.status == "applied", result.errors
    prompts = prompts_sent(log)
    assert len(prompts) == 2
    assert "no source" in prompts[1] and "<previous_response>" in prompts[1]


@pytest.mark.parametrize("mode", ["fail", "hang", "grandchild-garbage", "empty"])
def test_model_failures_leave_the_vault_alone(pass_vault, monkeypatch, tmp_path, mode):
    (pass_vault / ".cmem/config.yaml").write_text(
        "repair_rounds: 0\nllm:\n  timeout_seconds: 1\n", encoding="utf-8"
    )
    git(pass_vault, "commit", "-qam", "config")
    fake_mode = {"grandchild-garbage": "grandchild"}.get(mode, mode)
    model_env(monkeypatch, tmp_path, ["not a convergence response at all"], mode=fake_mode)
    before = snapshot(pass_vault)
    try:
        result = run_pass(open_vault(pass_vault), llm_options())
        assert result.status == "failed"
    except CmemError as exc:
        assert "model command" in str(exc) or "timed out" in str(exc)
    assert snapshot(pass_vault) == before


def test_second_writer_during_the_model_call_wins(pass_vault, tmp_path):
    edited = PROFILE_TEXT + "- 用户在模型运行时写的一行（来源：[[2026-11-20 日记]]）\n"
    script = tmp_path / "editing_model.py"
    script.write_text(
        "import sys, pathlib\n"
        "sys.stdin.read()\n"
        f"pathlib.Path({str(pass_vault / PROFILE)!r}).write_text({edited!r}, encoding='utf-8')\n"
        f"sys.stdout.write({VALID.replace('{date}', today())!r})\n",
        encoding="utf-8",
    )
    head = git(pass_vault, "rev-parse", "HEAD")
    with pytest.raises(SecondWriter, match=r"profile\.md changed on disk"):
        run_pass(
            open_vault(pass_vault), PassOptions(engine="llm", llm=f"{sys.executable} {script}")
        )
    assert (pass_vault / PROFILE).read_text("utf-8") == edited
    assert git(pass_vault, "rev-parse", "HEAD") == head
    assert load_state(open_vault(pass_vault).state_file).notes == {}


def test_hand_edits_are_snapshotted_first_and_marked_in_the_prompt(
    pass_vault, monkeypatch, tmp_path
):
    vault = open_vault(pass_vault)
    (pass_vault / NOTE).write_text(NOTE_TEXT, encoding="utf-8")
    first = run_pass(vault, PassOptions(engine="builtin"))
    assert first.status == "applied"
    # the user edits a memory file by hand and writes a new note
    with open(pass_vault / JOBS, "a", encoding="utf-8") as handle:
        handle.write("- 只看深圳的岗位（来源：[[2026-11-20 日记]]）\n")
    (pass_vault / "2026-11-29 随手记.md").write_text(
        "- 我决定先投三家 Agent 公司 #job-search\n", encoding="utf-8"
    )
    # and adds a resident file of their own, which git does not know yet
    (pass_vault / "converged/core/by-hand.md").write_text(
        "# 手写\n\n- 周末不看工作消息（来源：[[2026-11-20 日记]]）\n", encoding="utf-8"
    )
    prompt = run_pass(
        open_vault(pass_vault), PassOptions(engine="builtin", emit_prompt=True)
    ).prompt
    assert f'<file path="{JOBS}" edited_by_user="true">' in prompt
    assert '<file path="converged/core/by-hand.md" edited_by_user="true">' in prompt
    second = run_pass(open_vault(pass_vault), PassOptions(engine="builtin"))
    assert second.status == "applied" and second.snapshot_commit
    snapshot_files = git(
        pass_vault, "show", "--name-only", "--format=", second.snapshot_commit
    ).split()
    assert JOBS in snapshot_files
    assert "只看深圳的岗位" in (pass_vault / JOBS).read_text("utf-8")


def test_dry_run_and_emit_prompt_write_nothing(pass_vault):
    before = snapshot(pass_vault)
    vault = open_vault(pass_vault)
    dry = run_pass(vault, PassOptions(engine="builtin", dry_run=True))
    assert dry.status == "dry-run" and dry.diff and PROFILE in dry.changed
    emitted = run_pass(vault, PassOptions(engine="builtin", emit_prompt=True))
    assert emitted.status == "prompt" and "<convergence>" in emitted.prompt
    assert snapshot(pass_vault) == before


def test_prompt_is_byte_identical_and_its_prefix_stable(pass_vault):
    vault = open_vault(pass_vault)
    first = run_pass(vault, PassOptions(emit_prompt=True, engine="builtin")).prompt
    second = run_pass(
        open_vault(pass_vault), PassOptions(emit_prompt=True, engine="builtin")
    ).prompt
    assert first == second
    write_files(pass_vault, {"2026-11-29 notes.md": "- 我决定以后都早上写代码\n"})
    third = run_pass(open_vault(pass_vault), PassOptions(emit_prompt=True, engine="builtin")).prompt
    prefix = os.path.commonprefix([first, third])  # noqa: RUF071 - texts, not paths
    assert "# Divergent notes" in prefix or "# 发散笔记" in prefix


def test_nothing_pending_is_success_without_a_commit(make_vault):
    root = make_vault({"plain.md": "# just a note\n\nnothing to see\n"}, git=True)
    head = git(root, "rev-parse", "HEAD")
    assert run_pass(open_vault(root), PassOptions(engine="builtin")).status == "nothing"
    assert git(root, "rev-parse", "HEAD") == head


def test_a_second_pass_is_busy(pass_vault):
    vault = open_vault(pass_vault)
    with vault_lock(vault.machine_dir):
        with pytest.raises(Busy, match="already running"):
            run_pass(vault, PassOptions(engine="builtin"))


@pytest.mark.parametrize("recorded", ["4242\n", "[1, 2]", '{"purpose": "x"}', "{", "\xff"])
def test_a_lock_holder_recorded_in_another_shape_is_still_busy(pass_vault, recorded):
    """Only the flock is the truth: whatever the file says of its holder (an older cmem, another
    program, a write cut short), the second pass is busy, with one sentence and no traceback."""
    import fcntl

    vault = open_vault(pass_vault)
    vault.machine_dir.mkdir(parents=True, exist_ok=True)
    with open(vault.machine_dir / "pass.lock", "w", encoding="utf-8") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write(recorded)
        held.flush()
        with pytest.raises(Busy, match=r"^a pass is already running"):
            run_pass(vault, PassOptions(engine="builtin"))


def test_refuses_a_merge_in_progress(pass_vault):
    (Path(git(pass_vault, "rev-parse", "--absolute-git-dir").strip()) / "MERGE_HEAD").write_text(
        "0" * 40 + "\n"
    )
    with pytest.raises(CmemError, match="merge is in progress"):
        run_pass(open_vault(pass_vault), PassOptions(engine="builtin"))


def test_refuses_a_parent_repository(tmp_path):
    from cmem.setup.init import init_vault

    parent = tmp_path / "project"
    parent.mkdir()
    subprocess.run(["git", "init", "-q", str(parent)], check=True)
    inner = parent / "notes"
    init_vault(inner, repo="parent")
    (inner / ".cmem/config.yaml").write_text("git:\n  allow_parent_repo: false\n", encoding="utf-8")
    (inner / "n.md").write_text("- 我决定用 uv\n", encoding="utf-8")
    with pytest.raises(CmemError, match="above the vault"):
        run_pass(open_vault(inner), PassOptions(engine="builtin"))


def test_builtin_on_the_sample_vault(sample_vault):
    vault = open_vault(sample_vault)
    before = {f.rel: f.path.read_text("utf-8") for f in vault.convergent_files()}
    result = run_pass(vault, PassOptions(engine="builtin"))
    assert result.status == "applied" and result.changed and not result.errors
    traces_added = 0
    for note_file in open_vault(sample_vault).convergent_files():
        text = note_file.path.read_text("utf-8")
        old_lines = set(before.get(note_file.rel, "").splitlines())
        block, body_start, _ = split_frontmatter(text)
        body = "\n".join(text.split("\n")[body_start - 1 :])
        for statement in parse_statements(body, body_start, vault.config.formats):
            if statement.text not in old_lines:
                assert statement.sources, f"{note_file.rel}:{statement.line_no} has no source"
                # dated by the note the change came from, never after the pass (rule 5)
                day = result.pass_id[:4] + "-" + result.pass_id[4:6] + "-" + result.pass_id[6:8]
                assert all(t.date <= day for t in statement.traces)
                traces_added += bool(statement.traces)
    assert traces_added >= 2  # the corrections and switches of the sample notes
    assert run_pass(open_vault(sample_vault), PassOptions(engine="builtin")).status == "nothing"


def test_review_mode_proposes_then_applies(pass_vault):
    from cmem.converge.proposal import load_proposal

    vault = open_vault(pass_vault)
    head = git(pass_vault, "rev-parse", "HEAD")
    proposed = run_pass(vault, PassOptions(engine="builtin", propose=True))
    assert proposed.status == "proposed" and git(pass_vault, "rev-parse", "HEAD") == head
    proposal = load_proposal(vault)
    response = sorted(Path(proposal.run_dir).glob("response-*.txt"))[-1].read_text("utf-8")
    applied = run_pass(
        vault, PassOptions(response_text=response, only=proposal.notes, apply_proposal=True)
    )
    assert applied.status == "applied"


def test_an_edit_between_apply_and_commit_is_not_committed_as_the_pass(pass_vault, monkeypatch):
    """The pass commits the bytes it validated; an autosave landing after the replace stays the
    user's uncommitted edit instead of hiding inside cmem's commit."""
    from cmem import faults

    real_point = faults.point
    autosave = "- 用户在提交前一刻保存的一行（来源：[[2026-11-20 日记]]）\n"

    def point(name):
        if name == "applied":
            with open(pass_vault / PROFILE, "a", encoding="utf-8") as handle:
                handle.write(autosave)
        real_point(name)

    monkeypatch.setattr(faults, "point", point)
    result = run_pass(open_vault(pass_vault), PassOptions(engine="builtin"))
    assert result.status == "applied"
    committed = git(pass_vault, "show", f"HEAD:{PROFILE}")
    assert autosave not in committed and "以后都用 uv" in committed
    assert (pass_vault / PROFILE).read_text("utf-8").endswith(autosave)
    assert git(pass_vault, "status", "--porcelain", "--", PROFILE).startswith(
        " M"
    )  # unstaged, the user's


def test_prompt_quotes_only_the_topic_files_a_note_touches(make_vault):
    """O(selected notes + touched files): shared vocabulary in topic bodies does not pull every
    topic file into the prompt."""
    files = {
        f"converged/topics/topic-{n:02d}.md": f"---\nsummary: topic {n}\n---\n# Topic {n}\n\n- python projects and tooling notes {n}（来源：[[old]]）\n"
        for n in range(30)
    }
    files["converged/topics/python-tooling.md"] = (
        "---\nsummary: python\naliases: [pytools]\n---\n# Python tooling\n\n- Uses pip（来源：[[old]]）\n"
    )
    files["archive/old.md"] = "x\n"
    files["n.md"] = "- 我决定改用 uv 管理 python projects #pytools\n"
    # a budget the whole layer does not fit in (a small layer is read whole: test_prompt_selection)
    root = make_vault(files, config_yaml="budget_tokens: 500\n", git=True)
    prompt = run_pass(open_vault(root), PassOptions(engine="builtin", emit_prompt=True)).prompt
    quoted = [
        line for line in prompt.splitlines() if line.startswith('<file path="converged/topics/')
    ]
    assert '<file path="converged/topics/python-tooling.md">' in quoted and len(quoted) < 15
    assert (
        "- converged/topics/topic-29.md — topic 29" in prompt
    )  # the rest listed with their summaries


def test_prompt_selection_reads_a_small_layer_whole(make_vault):
    """Issue 12: a layer that fits the budget is shown whole, so a model can merge a switch into
    a topic file the note does not name (tooling.md says pipenv; the note says uv)."""
    root = make_vault(
        {
            "converged/topics/tooling.md": "---\nsummary: Python tooling\n---\n# Tooling\n\n- Uses pipenv for virtualenvs (source: [[old]])\n",
            "converged/topics/cooking.md": "---\nsummary: recipes\n---\n# Cooking\n\n- Bakes sourdough on Sundays (source: [[old]])\n",
            "archive/old.md": "x\n",
            "n.md": "I switched to uv for managing virtualenvs.\n",
        },
        config_yaml="language: en\n",
        git=True,
    )
    prompt = run_pass(open_vault(root), PassOptions(engine="builtin", emit_prompt=True)).prompt
    assert (
        '<file path="converged/topics/tooling.md">' in prompt
        and '<file path="converged/topics/cooking.md">' in prompt
    )
    assert "Other topic files" not in prompt and "none related" not in prompt


def test_prompt_selection_ranks_by_the_signal_lines_when_the_layer_is_too_big(make_vault):
    """Over the budget: the file sharing words with the signal lines is quoted, an unrelated one
    only listed with its summary; the ranking reads Chinese too."""
    filler = "".join(f"- 第 {n} 条关于烘焙和面包的记录（来源：[[old]]）\n" for n in range(40))
    root = make_vault(
        {
            "converged/topics/工具.md": "---\nsummary: 开发工具\n---\n# 工具\n\n- 用 pipenv 管理虚拟环境（来源：[[old]]）\n",
            "converged/topics/烘焙.md": "---\nsummary: 烘焙\n---\n# 烘焙\n\n" + filler,
            "archive/old.md": "x\n",
            "n.md": "我决定改用 uv 管理虚拟环境\n",
        },
        config_yaml="budget_tokens: 500\n",
        git=True,
    )
    prompt = run_pass(open_vault(root), PassOptions(engine="builtin", emit_prompt=True)).prompt
    assert (
        '<file path="converged/topics/工具.md">' in prompt
        and '<file path="converged/topics/烘焙.md">' not in prompt
    )
    assert "- converged/topics/烘焙.md — 烘焙" in prompt
