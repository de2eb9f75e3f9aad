"""`cmem converge --emit-prompt` from a stored prompt (cmem.reading.stored_prompt): a warm call is
answered without the vault model and prints byte for byte what the command prints afresh, and any change the
prompt depends on — a note edited in the same second, a memory file edited by hand, the config,
`.gitignore`, a checkout of an older state — makes the next call build it again. Requests with
options that change the prompt are never answered from, nor stored under, the plain request.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import forget_stored, git

# What a stored answer never imports: YAML, the config loader, the vault model, the scanner
# (the same list as tests/project/test_packaging.py's STORED_ANSWER_NEVER; no test imports
# another test module)
STORED_ANSWER_NEVER = (
    "yaml",
    "ruamel",
    "cmem.vault.config",
    "cmem.vault.layers",
    "cmem.scan",
    "git",
)

HOUR_AGO = time.time() - 3600
CORRECTION = "\n- 其实不是这样，以后都改用 pnpm 了\n"


def emit(vault: Path, *extra: str, full: bool = False) -> tuple[str, bool, set[str]]:
    """(the prompt, answered from the store?, the modules imported). `full`: afresh, as a miss
    runs it."""
    if full:
        from cmem.reading.stored_prompt import COMMAND, params

        forget_stored(vault, COMMAND, params(str(vault.resolve())))
    entry = "from cmem.cli import main"
    args = ["converge", "--emit-prompt", *extra, "--vault", str(vault)]
    code = f"import sys; sys.argv = ['cmem', *{args!r}]; {entry}; main()"
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-3000:]
    modules = {
        line.split("|")[-1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:")
    }
    # a miss runs the pass's pipeline (through typer)
    return result.stdout, "cmem.converge.pipeline" not in modules, modules


def settle(root: Path) -> None:
    for folder, _dirs, files in os.walk(root):
        for name in files:
            os.utime(os.path.join(folder, name), (HOUR_AGO, HOUR_AGO), follow_symlinks=False)
        os.utime(folder, (HOUR_AGO, HOUR_AGO))


def warm(vault: Path) -> str:
    """Store the prompt, check the next call is answered from it and is what the full command
    prints; the prompt."""
    settle(vault)
    first, hit, _ = emit(vault)
    assert not hit and first.strip()
    stored, hit, modules = emit(vault)
    assert hit, "the second call should have been answered from the stored prompt"
    assert stored == first == emit(vault, full=True)[0]
    for heavy in STORED_ANSWER_NEVER:
        assert not any(m == heavy or m.startswith(heavy + ".") for m in modules), heavy
    return stored


def test_stored_prompt_is_the_full_commands(sample_vault):
    warm(sample_vault)
    # after a pass: the stored prompt of the next state is the full command's too
    (sample_vault / "2026-11-30 new.md").write_text("# new\n" + CORRECTION, encoding="utf-8")
    git(sample_vault, "add", "-A")
    git(sample_vault, "commit", "-q", "-m", "a note")
    assert "2026-11-30 new" in warm(sample_vault)


def test_a_note_edited_in_the_same_second_is_seen(sample_vault):
    before = warm(sample_vault)
    note = next(p for p in sample_vault.glob("2026-11-2*.md") if f'path="{p.name}"' in before)
    with open(note, "a", encoding="utf-8") as handle:
        handle.write("\n- 其实不是这样，以后都改用 bun 了\n")
    out, hit, _ = emit(sample_vault)
    assert not hit and "bun" in out
    again, hit, _ = emit(sample_vault)  # written within the racy window: nothing was stored
    assert not hit and again == out


def test_a_memory_file_edited_by_hand_is_seen(sample_vault):
    before = warm(sample_vault)
    profile = sample_vault / "converged" / "core" / "profile.md"
    with open(profile, "a", encoding="utf-8") as handle:
        handle.write("\n- 手改的一行\n")
    os.utime(profile, (HOUR_AGO, HOUR_AGO))  # size and ctime tell
    out, hit, _ = emit(sample_vault)
    assert not hit and "手改的一行" in out and out != before


def test_config_and_gitignore_changes_are_seen(sample_vault):
    before = warm(sample_vault)
    config = sample_vault / ".cmem" / "config.yaml"
    config.write_text(
        config.read_text("utf-8").replace("language: zh", "language: en"), encoding="utf-8"
    )
    os.utime(config, (HOUR_AGO, HOUR_AGO))
    out, hit, _ = emit(sample_vault)
    assert not hit and out != before
    after = warm(sample_vault)
    with open(sample_vault / ".gitignore", "a", encoding="utf-8") as handle:
        handle.write("converged/topics/scratch.md\n")
    os.utime(sample_vault / ".gitignore", (HOUR_AGO, HOUR_AGO))
    out, hit, _ = emit(sample_vault)
    assert not hit and out == after


def test_checkout_of_an_older_state_is_seen(sample_vault):
    git(sample_vault, "branch", "older")
    (sample_vault / "2026-11-30 new.md").write_text("# new\n" + CORRECTION, encoding="utf-8")
    git(sample_vault, "add", "-A")
    git(sample_vault, "commit", "-q", "-m", "a note")
    assert "2026-11-30 new" in warm(sample_vault)
    git(sample_vault, "checkout", "-q", "older")
    out, hit, _ = emit(sample_vault)
    assert not hit and "2026-11-30 new" not in out


@pytest.mark.parametrize("extra", [("--budget", "800"), ("--only", "2026-11-27 notes.md")])
def test_other_requests_are_neither_answered_nor_stored(sample_vault, extra):
    plain = warm(sample_vault)
    out, hit, _ = emit(sample_vault, *extra)
    assert not hit and out != plain
    again, hit, _ = emit(sample_vault)
    assert hit and again == plain


def test_topic_words_are_kept_by_text_so_an_edit_is_ranked_anew(make_vault):
    """Over the budget, topic files are ranked by the words they share with the signal lines; the
    words of each file are kept in the machine folder (converge/prompt.py: _TermsMemo) by a digest
    of its text, so a file whose text changed is read again and a damaged memo is only slower."""
    from cmem.converge.pipeline import PassOptions, run_pass
    from cmem.vault.layers import open_vault

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

    def quoted() -> set[str]:
        prompt = run_pass(open_vault(root), PassOptions(emit_prompt=True)).prompt
        return {line for line in prompt.splitlines() if line.startswith("<file path=")}

    assert '<file path="converged/topics/工具.md">' in quoted()
    memo = open_vault(root).machine_dir / "topic-terms.marshal"
    assert memo.exists()
    (root / "converged/topics/工具.md").write_text(
        "---\nsummary: 开发工具\n---\n# 工具\n\n- 用 vim 写代码（来源：[[old]]）\n",
        encoding="utf-8",
    )
    with open(root / "converged/topics/烘焙.md", "a", encoding="utf-8") as handle:
        handle.write("- 烤箱旁边的电脑也要管理虚拟环境（来源：[[old]]）\n")
    now = quoted()
    assert '<file path="converged/topics/烘焙.md">' in now
    assert '<file path="converged/topics/工具.md">' not in now
    memo.write_bytes(b"\x00damaged")
    assert quoted() == now
