"""What the validator refuses to write, as the rest of cmem meets it (issue 11): memory files
with YAML anchors are never expanded by `recall` or `context` and are named by `doctor`; look-alike
memory files are named by `doctor`; `cmem context` closes its bundle; a pass sends a likely
invention back once before applying it with a warning, and reports statements it moved."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from cmem.cli import app
from cmem.converge.pipeline import run_pass
from cmem.doctor.checks import run_doctor
from cmem.reading.context import END_MARKER, build_context, render_context_markdown
from cmem.reading.recall import recall_memory
from cmem.vault.layers import open_vault
from cmem.vault.yaml_reader import frontmatter_hazard, parse_frontmatter_block
from pass_helpers import (
    JOBS,
    NOTE,
    PROFILE,
    PROFILE_TEXT,
    VALID,
    llm_options,
    model_env,
    prompts_sent,
    today,
)
from support import git

# Nine levels of nine: 9**9 (387 million) strings if a reader expanded it.
BOMB = (
    "---\nsummary: bomb\n"
    + "".join(
        f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9) if i else ', '.join(['x'] * 9)}]\n"
        for i in range(9)
    )
    + "---\n# Bomb\n\n- a fact about bombs (source: [[2026-11-20 日记]])\n"
)


def test_an_alias_bomb_is_refused_before_anything_is_built():
    block = BOMB.split("---\n")[1]
    data, problem = parse_frontmatter_block(block)
    assert data == {} and "anchor or alias" in problem
    assert frontmatter_hazard("summary: fish & chips, *not* bold\ntags: [a, b]\n") is None
    assert "deeper than 8" in frontmatter_hazard("a: " + "[" * 9 + "]" * 9 + "\n")
    assert "over the limit" in frontmatter_hazard("summary: " + "x" * 70_000 + "\n")


def test_recall_context_and_doctor_meet_an_alias_bomb_without_expanding_it(pass_vault):
    (pass_vault / "converged/topics/bomb.md").write_text(BOMB, encoding="utf-8")
    vault = open_vault(pass_vault)
    recalled = recall_memory(vault, "bombs", record=False)
    assert [r.hit.path for r in recalled.results] == [
        "converged/topics/bomb.md"
    ]  # its statement, found as text
    context = build_context(vault, topic="bombs", record=False)
    bundled = [
        f for f in context.situational + context.index if f.path == "converged/topics/bomb.md"
    ]
    assert bundled and bundled[0].summary == ""  # the frontmatter was not read, let alone expanded
    findings = [f for f in run_doctor(vault) if f.check == "frontmatter"]
    assert any("bomb.md" in f.message and "anchor or alias" in f.message for f in findings)


def test_doctor_names_look_alike_memory_files(pass_vault):
    (pass_vault / "converged/core/Profile.md").write_text(
        "- 另一份画像（来源：[[2026-11-20 日记]]）\n", encoding="utf-8"
    )
    (pass_vault / "converged/topics/jоb-search.md").write_text(
        "- 西里尔字母（来源：[[2026-11-20 日记]]）\n", encoding="utf-8"
    )  # Cyrillic о
    (pass_vault / "converged/topics/2026-11-20 日记.md").write_text(
        "- 与笔记同名（来源：[[2026-11-20 日记]]）\n", encoding="utf-8"
    )
    findings = [f.message for f in run_doctor(open_vault(pass_vault)) if f.check == "look-alike"]
    assert any(
        "converged/core/Profile.md and converged/core/profile.md" in m
        or "converged/core/profile.md and converged/core/Profile.md" in m
        for m in findings
    )
    assert any("jоb-search.md" in m and "job-search.md" in m for m in findings)
    assert any(
        "2026-11-20 日记.md is named like the note archive/2026-11/2026-11-20 日记.md" in m
        for m in findings
    )


def test_doctor_is_quiet_about_look_alikes_when_there_are_none(pass_vault):
    findings = [f for f in run_doctor(open_vault(pass_vault)) if f.check == "look-alike"]
    assert [f.level for f in findings] == ["ok"]


def test_context_ends_with_an_explicit_marker_in_text_and_json(pass_vault):
    vault = open_vault(pass_vault)
    text = render_context_markdown(build_context(vault, record=False))
    assert text.rstrip("\n").endswith(END_MARKER) and text.count(END_MARKER) == 1
    runner = CliRunner()
    shown = runner.invoke(app, ["context", "--vault", str(pass_vault)])
    assert shown.exit_code == 0 and shown.output.rstrip("\n").endswith(END_MARKER)
    data = json.loads(runner.invoke(app, ["context", "--vault", str(pass_vault), "--json"]).output)
    assert data["end"] == END_MARKER


INVENTED = "- 计划明年去火星定居并学习量子物理（来源：[[2026-11-28 随手记]]）\n"


def _with_repair_rounds(root, rounds: int) -> None:
    (root / ".cmem/config.yaml").write_text(f"repair_rounds: {rounds}\n", encoding="utf-8")
    git(root, "commit", "-qam", "config")


def test_a_likely_invention_goes_back_once_and_the_repaired_answer_is_applied(
    pass_vault, monkeypatch, tmp_path
):
    _with_repair_rounds(pass_vault, 2)
    good = VALID.replace("{date}", today())
    invented = good.replace("</file>", INVENTED + "</file>", 1)
    log = model_env(monkeypatch, tmp_path, [invented, good])
    result = run_pass(open_vault(pass_vault), llm_options())
    assert result.status == "applied", result.errors
    prompts = prompts_sent(log)
    assert (
        len(prompts) == 2
        and "火星" in prompts[1]
        and "cite the note that says this, or drop it" in prompts[1]
    )
    assert "火星" not in (pass_vault / PROFILE).read_text("utf-8")
    assert not [w for w in result.warnings if "invented" in w]


def test_an_invention_the_model_keeps_is_applied_with_the_warning_in_the_commit(
    pass_vault, monkeypatch, tmp_path
):
    _with_repair_rounds(pass_vault, 2)
    invented = VALID.replace("{date}", today()).replace("</file>", INVENTED + "</file>", 1)
    log = model_env(monkeypatch, tmp_path, [invented, invented])
    result = run_pass(open_vault(pass_vault), llm_options())
    assert result.status == "applied" and len(prompts_sent(log)) == 2  # asked once, not every round
    assert any("may be invented" in w for w in result.warnings)
    assert "火星" in (pass_vault / PROFILE).read_text("utf-8")
    assert "Warning:" in git(pass_vault, "log", "-1", "--format=%B") and "may be invented" in git(
        pass_vault, "log", "-1", "--format=%B"
    )


def test_an_invention_whose_repair_is_worse_applies_the_first_answer(
    pass_vault, monkeypatch, tmp_path
):
    _with_repair_rounds(pass_vault, 1)
    invented = VALID.replace("{date}", today()).replace("</file>", INVENTED + "</file>", 1)
    model_env(monkeypatch, tmp_path, [invented, "I cannot do that."])
    result = run_pass(open_vault(pass_vault), llm_options())
    assert result.status == "applied" and any("may be invented" in w for w in result.warnings)


def test_a_move_is_reported_in_the_summary_json_and_commit(pass_vault, monkeypatch, tmp_path):
    jobs = (pass_vault / JOBS).read_text("utf-8")
    moved = "- 简历投了三家公司（来源：[[2026-11-20 日记]]）"
    reply = VALID.replace("{date}", today()).replace(
        f'<converged note="{NOTE}"',
        f'<file path="{JOBS}">\n{jobs.replace(moved + chr(10), "")}</file>\n'
        f'<file path="converged/topics/resume.md">\n# 简历\n\n{moved}\n</file>\n<converged note="{NOTE}"',
    )
    model_env(monkeypatch, tmp_path, [reply])
    result = run_pass(open_vault(pass_vault), llm_options())
    assert result.status == "applied", result.errors
    assert result.moved == [
        {"statement": "简历投了三家公司", "from": JOBS, "to": ["converged/topics/resume.md"]}
    ]
    assert result.to_json()["moved"] == result.moved
    assert f"Moved: 简历投了三家公司 ({JOBS} → converged/topics/resume.md)" in git(
        pass_vault, "log", "-1", "--format=%B"
    )
    from cmem.render.reports import render_pass

    assert "moved '简历投了三家公司'" in render_pass(result)


def test_the_hostile_corpus_by_rule_table_is_measured_and_spliced_in_place():
    import importlib.util

    from support import REPO

    spec = importlib.util.spec_from_file_location(
        "hostile_by_rule", REPO / "bench" / "hostile_by_rule.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    figures = module.measure()
    assert figures["missed"] == []
    assert all(c["rejected"] == c["for_rule"] == c["replies"] for c in figures["by_rule"].values())
    assert {str(rule) for rule in range(1, 14)} <= set(figures["by_rule"])
    assert (
        figures["valid_hand"][1] == 0
        and figures["valid_generated"][1] <= figures["valid_generated"][0] // 100
    )
    assert figures["translations"] == (len(module.TRANSLATIONS), 0)
    section = module.render(figures)
    document = "# Reliability figures\n\nbefore\n\n" + section + "\nafter\n"
    assert module.splice(document, section) == document
    assert module.splice("# R\n", section).count(module.START) == 1
    shown = (REPO / "docs" / "reliability.md").read_text("utf-8")
    assert module.START in shown and "| all | |" in shown


def test_apply_takes_allow_shrink_like_converge(pass_vault, tmp_path):
    kept = PROFILE_TEXT.split("- 喜欢用 Python 写脚本")[0]
    response = tmp_path / "shrink.txt"
    response.write_text(
        "<convergence>\n"
        f'<file path="{PROFILE}">\n{kept}- 以后都用 uv 管理 Python 环境（来源：[[2026-11-28 随手记]]）\n</file>\n'
        f'<dropped file="{PROFILE}" reason="stale">喜欢用 Python 写脚本</dropped>\n'
        f'<dropped file="{PROFILE}" reason="stale">早上效率最高，下午容易分心</dropped>\n'
        f'<converged note="{NOTE}" into="{PROFILE}"/>\n</convergence>\n',
        encoding="utf-8",
    )
    runner = CliRunner()
    base = ["--vault", str(pass_vault)]
    refused = runner.invoke(app, ["converge", "--response", str(response), *base])
    assert refused.exit_code == 1 and "2 of its 4 statements" in refused.output
    proposed = runner.invoke(
        app, ["converge", "--response", str(response), "--propose", "--allow-shrink", *base]
    )
    assert proposed.exit_code == 0, proposed.output
    assert runner.invoke(app, ["apply", "--yes", *base]).exit_code == 1
    assert "喜欢用 Python 写脚本" in (pass_vault / PROFILE).read_text("utf-8")
    applied = runner.invoke(app, ["apply", "--yes", "--allow-shrink", *base])
    assert applied.exit_code == 0, applied.output
    assert "喜欢用 Python 写脚本" not in (pass_vault / PROFILE).read_text("utf-8")
