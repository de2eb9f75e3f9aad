"""The builtin engine: routing, quoting with sources, merging duplicates, rewrites with traces —
and that what it writes passes the same parser and validator as a model's reply."""

from __future__ import annotations

import random

import pytest

from builtin_helpers import DATE, OLD_NOTES, TOOLING_EN, note_with, originals_of, run
from cmem.converge.builtin.engine import builtin_response
from cmem.converge.builtin.line_words import old_side_terms, quote_line, terms
from cmem.converge.selection import SelectedNote
from cmem.converge.validator.response import parse_response
from cmem.scan.signals import Signal
from cmem.vault.layers import open_vault
from cmem.vault.notes import parse_frontmatter_block, split_frontmatter
from cmem.vault.statements import parse_statements, split_statement

EN = "language: en\n"

PROFILE_ZH = """\
---
summary: 我是谁
importance: 9
updated: 2026-10-20
---
# 画像

- 用 React 写前端（来源：[[2026-10-05 notes]]）
- 以后都用中文回答，术语和代码保留英文（来源：[[2026-10-18 随手记]]）
- 养了一只猫，叫年糕（来源：[[2026-09-30 日记]]）
"""


def statements_of(content: str):
    _, start, _ = split_frontmatter(content)
    return parse_statements("\n".join(content.split("\n")[start - 1 :]), start)


def line_with(content: str, needle: str) -> str:
    matches = [line for line in content.split("\n") if needle in line]
    assert len(matches) == 1, (needle, matches)
    return matches[0]


# --- routing and quoting ----------------------------------------------------------------


def test_preference_goes_to_profile_quoted_with_source(make_vault):
    root = make_vault(
        {
            "converged/core/profile.md": PROFILE_ZH,
            "2026-11-28 随手记.md": "- 10:32 永远别在周五晚上发版 #daily\n",
            **OLD_NOTES,
        }
    )
    text, files, validation = run(
        root, [note_with(root, "2026-11-28 随手记.md", [(1, "preference")])]
    )
    profile = files["converged/core/profile.md"]
    assert "- 永远别在周五晚上发版（来源：[[2026-11-28 随手记]]）" in profile.split("\n")
    assert "updated: 2026-11-29" in profile and "updated: 2026-10-20" not in profile
    assert '<converged note="2026-11-28 随手记.md" into="converged/core/profile.md"/>' in text
    assert [e.note for e in validation.converged] == ["2026-11-28 随手记.md"]


def test_missing_profile_is_created_with_frontmatter(make_vault):
    root = make_vault({"n.md": "- 我喜欢先看能跑的例子\n"})
    _, files, _ = run(root, [note_with(root, "n.md", [(1, "preference")])])
    profile = files["converged/core/profile.md"]
    meta, problem = parse_frontmatter_block(split_frontmatter(profile)[0])
    assert (
        problem is None
        and meta["updated"].isoformat() == DATE
        and meta["importance"] == 9
        and meta["summary"]
    )
    assert "\n# 画像\n" in profile
    assert "- 我喜欢先看能跑的例子（来源：[[n]]）" in profile


def test_recurring_goes_to_methodology(make_vault):
    root = make_vault(
        {
            "n.md": "# log\n\n- 又熬夜到两点，老毛病\n",
            "converged/core/profile.md": PROFILE_ZH,
            **OLD_NOTES,
        }
    )
    _, files, _ = run(root, [note_with(root, "n.md", [(3, "recurring")])])
    assert set(files) == {"converged/core/methodology.md"}  # the profile is untouched, so not sent
    methodology = files["converged/core/methodology.md"]
    # one pattern statement under its class heading, the cue words off, with its count and date
    assert "## 反复出现的模式\n\n- 熬夜到两点（1 次：2026-11-29）（来源：[[n]]）" in methodology


def test_decision_routed_by_tag_to_existing_topic(make_vault):
    topic = "---\nsummary: 找工作\ntags: [job-search, career]\n---\n# 找工作\n\n## 目标\n\n- 城市：深圳（来源：[[a]]）\n\n## 短板\n\n- 系统设计讲得散（来源：[[a]]）\n"
    root = make_vault(
        {
            "converged/topics/job-search.md": topic,
            "a.md": "x\n",
            "n.md": "---\ntags: [Job_Search]\n---\n- 我决定只投 Agent 岗位，城市不限深圳 [[job-search]]\n",
        }
    )
    _, files, _ = run(
        root,
        [note_with(root, "n.md", [(4, "decision")], tags=["Job_Search"], links=["job-search"])],
    )
    content = files["converged/topics/job-search.md"]
    # quoted without the routing link, into the section sharing its words, with `updated` added
    lines = content.split("\n")
    assert (
        lines.index("- 只投 Agent 岗位，城市不限深圳（来源：[[n]]）")
        == lines.index("- 城市：深圳（来源：[[a]]）") + 1
    )
    assert "updated: 2026-11-29" in content and "tags: [job-search, career]" in content


def test_decision_routed_by_alias_and_by_word_overlap(make_vault):
    topic = "---\naliases: [前端技术栈]\n---\n# Frontend\n\n- 样式用 Tailwind，不单独写 CSS 文件（来源：[[a]]）\n"
    root = make_vault(
        {
            "converged/topics/frontend-stack.md": topic,
            "a.md": "x\n",
            "n.md": "- 我决定组件库也用 Tailwind 写样式\n- 想通了：评测面板单独写 CSS 文件\n",
        }
    )
    by_alias = note_with(root, "n.md", [(1, "decision")], tags=["前端-技术栈"])
    _, files, _ = run(root, [by_alias])
    assert (
        "- 组件库也用 Tailwind 写样式（来源：[[n]]）" in files["converged/topics/frontend-stack.md"]
    )
    by_words = note_with(root, "n.md", [(2, "decision")])
    _, files, _ = run(root, [by_words])
    assert (
        "- 评测面板单独写 CSS 文件（来源：[[n]]）" in files["converged/topics/frontend-stack.md"]
    )  # cue filler trimmed


def test_decision_without_match_creates_topic_file(make_vault):
    root = make_vault(
        {
            "n.md": "---\ntags: [daily, side-project]\n---\n- I decided to rent a desk at the coworking space\n"
        },
        config_yaml=EN,
    )
    text, files, _ = run(
        root, [note_with(root, "n.md", [(4, "decision")], tags=["daily", "side-project"])]
    )
    content = files["converged/topics/side-project.md"]
    meta, problem = parse_frontmatter_block(split_frontmatter(content)[0])
    assert (
        problem is None
        and meta["tags"] == ["side-project"]
        and meta["importance"] == 5
        and meta["summary"]
    )
    assert "\n# Side project\n" in content
    assert "- I rent a desk at the coworking space (source: [[n]])" in content
    assert 'into="converged/topics/side-project.md"' in text


def test_new_topic_named_by_its_subject_when_no_tag(make_vault):
    root = make_vault({"n.md": "- 我决定搬去深圳住\n"})
    _, files, _ = run(root, [note_with(root, "n.md", [(1, "decision")])])
    assert list(files) == ["converged/topics/住处.md"]


def test_quote_line_trims_lightly():
    keys = {"pythontooling"}
    assert (
        quote_line("- [ ] 10:32 Switched to uv. [[python-tooling]] #tools", keys)
        == "Switched to uv."
    )
    assert quote_line("* Talked to [[Chen Wei]]", keys) == "Talked to [[Chen Wei]]"
    assert quote_line("- 想通了：先把工具开源", keys) == "先把工具开源"
    assert quote_line("- 想通了", keys) == "想通了"  # nothing but the cue: kept as written


# --- duplicates ---------------------------------------------------------------------------


def test_duplicate_adds_source_instead_of_second_copy(make_vault):
    root = make_vault(
        {
            "converged/core/profile.md": PROFILE_ZH,
            "n.md": "- 以后都用中文回答，术语和代码保留英文！\n- 以后都用中文回答\n",
            **OLD_NOTES,
        }
    )
    _, files, _ = run(root, [note_with(root, "n.md", [(1, "preference"), (2, "preference")])])
    profile = files["converged/core/profile.md"]
    assert profile.count("以后都用中文回答") == 1
    assert (
        line_with(profile, "以后都用中文回答")
        == "- 以后都用中文回答，术语和代码保留英文（来源：[[2026-10-18 随手记]]、[[n]]）"
    )


def test_duplicate_source_keeps_the_annotation_style(make_vault):
    profile = PROFILE_ZH + "- Commit messages in English (source: [[2026-10-05 notes]])\n"
    root = make_vault(
        {
            "converged/core/profile.md": profile,
            "n.md": "- I prefer commit messages in English\n",
            **OLD_NOTES,
        }
    )
    _, files, _ = run(root, [note_with(root, "n.md", [(1, "preference")])])
    assert (
        line_with(files["converged/core/profile.md"], "Commit")
        == "- Commit messages in English (source: [[2026-10-05 notes]], [[n]])"
    )


# --- rewrites and traces ------------------------------------------------------------------


def test_switch_rewrites_matching_statement_with_trace(make_vault):
    root = make_vault(
        {"converged/core/profile.md": PROFILE_ZH, "n.md": "- 改用 Svelte 写前端\n", **OLD_NOTES}
    )
    _, files, _ = run(root, [note_with(root, "n.md", [(1, "decision")])])
    profile = files["converged/core/profile.md"]
    assert (
        line_with(profile, "前端")
        == "- 用 Svelte 写前端（更新于 2026-11-29，原为：用 React 写前端）（来源：[[2026-10-05 notes]]、[[n]]）"
    )
    assert len(statements_of(profile)) == 3


def test_correction_rewrites_in_the_file_it_matches_en(make_vault):
    files_in = {
        "converged/topics/python-tooling.md": TOOLING_EN,
        "n.md": "- Actually it's Python 3.13 for new projects, not 3.12.\n",
        **OLD_NOTES,
    }
    root = make_vault(files_in, config_yaml=EN)
    _, files, _ = run(root, [note_with(root, "n.md", [(1, "correction")])])
    assert set(files) == {
        "converged/topics/python-tooling.md"
    }  # not the profile: a statement matched
    line = line_with(files["converged/topics/python-tooling.md"], "3.1")
    assert (
        line
        == "- Pins Python 3.13 for new projects (updated 2026-11-29, was: Pins Python 3.12 for new projects) (source: [[2026-10-05 notes]], [[n]])"
    )


def test_switch_prefers_the_named_file_and_old_side_words_en(make_vault):
    root = make_vault(
        {
            "converged/topics/python-tooling.md": TOOLING_EN,
            "n.md": "- Switched to uv for all Python projects: `uv sync` replaces pip and venv. [[python-tooling]]\n",
            **OLD_NOTES,
        },
        config_yaml=EN,
    )
    _, files, _ = run(root, [note_with(root, "n.md", [(1, "decision")], links=["python-tooling"])])
    content = files["converged/topics/python-tooling.md"]
    assert (
        line_with(content, "uv")
        == "- I use uv for all Python projects: `uv sync` replaces pip and venv (updated 2026-11-29, was: Uses pip and venv for projects) (source: [[2026-10-05 notes]], [[n]])"
    )
    assert "- Pins Python 3.12 for new projects (source: [[2026-10-05 notes]])" in content


def test_second_change_nests_traces(make_vault):
    root = make_vault(
        {
            "converged/core/profile.md": PROFILE_ZH,
            "n1.md": "- 改用 Svelte 写前端\n",
            "n2.md": "- 其实不是 Svelte，前端改用 Vue 写\n",
            **OLD_NOTES,
        }
    )
    _, first, _ = run(root, [note_with(root, "n1.md", [(1, "decision")])])
    originals = {**originals_of(root), **first}
    _, second, _ = run(root, [note_with(root, "n2.md", [(1, "correction")])], originals)
    line = line_with(second["converged/core/profile.md"], "Vue")
    core, sources, traces = split_statement(line)
    assert core == "用 Vue 写前端" and sources[-1] == "n2"  # the corrected part in place
    assert traces[0].date == DATE and split_statement(traces[0].old)[0] == "用 Svelte 写前端"
    assert [t.old for t in traces[0].older] == ["用 React 写前端"]


def test_old_traces_survive_a_rewrite_en(make_vault):
    topic = "# Lint\n\n- Lints and formats with ruff (updated 2026-10-05, was: Formats with black) (source: [[2026-10-05 notes]])\n"
    root = make_vault(
        {
            "converged/topics/lint.md": topic,
            "n.md": "- Switched to biome for formats and lints\n",
            **OLD_NOTES,
        },
        config_yaml=EN,
    )
    _, files, _ = run(root, [note_with(root, "n.md", [(1, "decision")])])
    content = files["converged/topics/lint.md"]
    assert content.startswith(
        "---\nupdated: 2026-11-29\n---\n# Lint\n"
    )  # no frontmatter before: one is added
    assert (
        "(updated 2026-11-29, was: Lints and formats with ruff (updated 2026-10-05, was: Formats with black)) (source: [[2026-10-05 notes]], [[n]])"
        in content
    )


def test_correction_without_match_is_added_to_profile(make_vault):
    root = make_vault(
        {"converged/core/profile.md": PROFILE_ZH, "n.md": "- 更正：我的生日是三月\n", **OLD_NOTES}
    )
    _, files, _ = run(root, [note_with(root, "n.md", [(1, "correction")])])
    assert "- 我的生日是三月（来源：[[n]]）" in files["converged/core/profile.md"]


def test_a_note_does_not_rewrite_what_it_just_added(make_vault):
    root = make_vault(
        {"n.md": "- I like the Moonlight AI team\n- Going with the Moonlight AI process first\n"},
        config_yaml=EN,
    )
    _, files, _ = run(root, [note_with(root, "n.md", [(1, "preference"), (2, "decision")])])
    profile = files["converged/core/profile.md"]
    assert "- I like the Moonlight AI team (source: [[n]])" in profile and "was:" not in "".join(
        files.values()
    )


def test_old_side_words_point_at_the_replaced_statement():
    assert "3.12" in old_side_terms("Actually it's Python 3.13 for new projects, not 3.12.")
    assert {"pip", "venv"} <= old_side_terms("uv sync replaces pip and venv.")
    assert "react" in old_side_terms("前端改用 Svelte，不再用 React：太重")
    assert "前端" in terms("改用 Svelte 写前端") and "其实" not in terms("其实不是")


# --- files, frontmatter, determinism --------------------------------------------------------


def test_frontmatter_keys_and_comments_kept_byte_for_byte(make_vault):
    head = "---\n# my profile, hand-written\nsummary: who I am   # shown in indexes\nimportance: 9\nupdated: '2026-10-20'  # cmem stamps this\nowner: Lin\nextra:\n  - a   # keep me\n---\n"
    root = make_vault(
        {
            "converged/core/profile.md": head + "# Profile\n\n- Likes tea (source: [[a]])\n",
            "a.md": "x\n",
            "n.md": "- I prefer green tea in the morning\n",
        },
        config_yaml=EN,
    )
    _, files, _ = run(root, [note_with(root, "n.md", [(1, "preference")])])
    new_head = files["converged/core/profile.md"].split("# Profile")[0]
    assert new_head == head.replace("updated: '2026-10-20'", "updated: '2026-11-29'")


def test_unchanged_files_are_not_in_the_response(make_vault):
    root = make_vault(
        {
            "converged/core/profile.md": PROFILE_ZH,
            "converged/topics/python-tooling.md": TOOLING_EN,
            "n.md": "- 我喜欢安静的早上\n",
            **OLD_NOTES,
        }
    )
    text, files, _ = run(root, [note_with(root, "n.md", [(1, "preference")])])
    assert list(files) == ["converged/core/profile.md"] and "<dropped" not in text


def test_every_new_or_changed_statement_has_a_source(make_vault):
    root = make_vault(
        {
            "converged/core/profile.md": PROFILE_ZH,
            "n.md": "- 改用 Svelte 写前端\n- 我喜欢安静的早上\n- 又熬夜了，老毛病\n- 我决定下个月搬到深圳\n",
            **OLD_NOTES,
        }
    )
    note = note_with(
        root, "n.md", [(1, "decision"), (2, "preference"), (3, "recurring"), (4, "decision")]
    )
    originals = originals_of(root)
    _, files, _ = run(root, [note], originals)
    assert len(files) == 3
    for path, content in files.items():
        before = {s.key: s for s in statements_of(originals.get(path, ""))}
        for statement in statements_of(content):
            if statement.key not in before:
                # the note it came from, beside the sources of a statement it rewrote
                assert statement.sources[-1] == "n", (path, statement.text)


def test_note_without_usable_lines_is_deferred(make_vault):
    root = make_vault({"n.md": "- 又\n"})
    text, files, validation = run(root, [note_with(root, "n.md", [(1, "recurring")])])
    assert files == {} and '<deferred note="n.md" reason="line 1 has no words to keep"/>' in text
    assert [d.note for d in validation.deferred] == ["n.md"]


def test_file_with_broken_frontmatter_is_left_alone(make_vault):
    broken = "---\nsummary: [unclosed\n---\n# Profile\n\n- Likes tea (source: [[a]])\n"
    root = make_vault(
        {"converged/core/profile.md": broken, "a.md": "x\n", "n.md": "- I prefer green tea\n"},
        config_yaml=EN,
    )
    text, files, _ = run(root, [note_with(root, "n.md", [(1, "preference")])])
    assert files == {} and '<deferred note="n.md"' in text and "frontmatter" in text


def test_same_inputs_same_bytes(make_vault):
    files_in = {
        "converged/core/profile.md": PROFILE_ZH,
        "converged/topics/python-tooling.md": TOOLING_EN,
        **OLD_NOTES,
        "a.md": "- 改用 Svelte 写前端\n- 我喜欢安静的早上\n",
        "b.md": "- Switched to uv instead of pip\n- 又熬夜了，老毛病\n",
        "c.md": "- 我决定下个月去深圳\n",
    }
    root = make_vault(files_in)
    notes = [
        note_with(root, "a.md", [(1, "decision"), (2, "preference")]),
        note_with(root, "b.md", [(1, "decision"), (2, "recurring")]),
        note_with(root, "c.md", [(1, "decision")]),
    ]
    vault = open_vault(root)
    first = builtin_response(vault, notes, originals_of(root), DATE)
    shuffled = notes[:]
    random.Random(7).shuffle(shuffled)
    originals = dict(reversed(list(originals_of(root).items())))
    assert builtin_response(vault, shuffled, originals, DATE) == first


# --- the sample vault, through the real scanner ---------------------------------------------


def test_sample_vault_converges_and_validates(sample_vault):
    scan = pytest.importorskip("cmem.scan.scanner")
    from cmem.converge.selection import select_notes

    vault = open_vault(sample_vault)
    selection = select_notes(vault, scan.scan_vault(vault).pending, 10**9)
    assert selection.notes
    originals = originals_of(sample_vault)
    text, files, validation = run(sample_vault, selection.notes, originals)
    assert files and validation.converged
    assert all(files[path] != originals.get(path) for path in files)
    traces = [
        t
        for content in files.values()
        for s in statements_of(content)
        for t in s.traces
        if t.date == DATE
    ]
    assert traces, "the sample's explicit switches and corrections should rewrite with a trace"
    assert builtin_response(vault, selection.notes, originals, DATE) == text


def test_resident_size_cap_defers_instead_of_failing(make_vault):
    filler = "".join(
        f"- 第{i}条：早上七点起床跑步三公里（来源：[[2026-09-30 日记]]）\n" for i in range(6)
    )
    profile = "---\nsummary: 画像\n---\n# 画像\n\n" + filler  # about 165 tokens of the 200 allowed
    notes = "- 我喜欢周末去爬山\n- 我喜欢在周六早上去公园跑步，然后去咖啡馆看书写东西\n- 我决定下个月搬到深圳\n"
    root = make_vault(
        {"converged/core/profile.md": profile, "n.md": notes, **OLD_NOTES},
        config_yaml="resident_max_tokens: 200\n",
    )
    text, files, _ = run(
        root, [note_with(root, "n.md", [(1, "preference"), (2, "preference"), (3, "decision")])]
    )
    # the short line fits, the long one waits, the decision goes to a topic file: the pass validates
    assert "- 我喜欢周末去爬山（来源：[[n]]）" in files["converged/core/profile.md"]
    assert (
        "咖啡馆" not in files["converged/core/profile.md"] and "converged/topics/住处.md" in files
    )
    # already over the cap before the pass: nothing more goes in
    full = make_vault(
        {
            "converged/core/profile.md": profile + filler,
            "n.md": "- 我喜欢周末去爬山\n",
            **OLD_NOTES,
        },
        config_yaml="resident_max_tokens: 200\n",
    )
    text, files, _ = run(full, [note_with(full, "n.md", [(1, "preference")])])
    assert files == {} and "resident_max_tokens" in text


def test_a_line_that_adds_a_clause_is_not_merged_away(make_vault):
    root = make_vault(
        {
            "converged/core/profile.md": PROFILE_ZH,
            "n.md": "- 养了一只猫，叫年糕了\n- 养了一只猫，叫年糕，每天早上六点叫我起床\n",
            **OLD_NOTES,
        }
    )
    _, files, _ = run(root, [note_with(root, "n.md", [(1, "preference"), (2, "preference")])])
    profile = files["converged/core/profile.md"]
    assert (
        line_with(profile, "叫年糕（") == "- 养了一只猫，叫年糕（来源：[[2026-09-30 日记]]、[[n]]）"
    )
    assert "- 养了一只猫，叫年糕，每天早上六点叫我起床（来源：[[n]]）" in profile


def test_a_negation_is_never_merged_into_the_statement_it_negates(make_vault):
    root = make_vault(
        {"converged/core/profile.md": PROFILE_ZH, "n.md": "- 不用 React 写前端\n", **OLD_NOTES}
    )
    _, files, _ = run(root, [note_with(root, "n.md", [(1, "preference")])])
    assert "- 不用 React 写前端（来源：[[n]]）" in files["converged/core/profile.md"]


def test_a_single_old_side_word_is_enough_to_rewrite(make_vault):
    """ "Helix now, not Neovim" replaces the statement about Neovim even with one shared word."""
    from cmem.converge.builtin.engine import builtin_response
    from cmem.vault.layers import open_vault

    profile = (
        "---\nsummary: me\n---\n# Profile\n\n- I use Neovim for everything (source: [[old]])\n"
    )
    root = make_vault(
        {
            "converged/core/profile.md": profile,
            "archive/old.md": "x\n",
            "n.md": "- actually I use Helix now, not Neovim\n",
        },
        config_yaml="language: en\n",
    )
    vault = open_vault(root)
    note = SelectedNote(
        "n.md",
        "n",
        "- actually I use Helix now, not Neovim\n",
        ["- actually I use Helix now, not Neovim", ""],
        [Signal("n.md", 1, "correction", "actually", "- actually I use Helix now, not Neovim")],
    )
    reply = parse_response(
        builtin_response(vault, [note], {"converged/core/profile.md": profile}, "2026-11-29")
    )
    content = reply.files[0].content
    # the corrected part in place: "actually", "now" and "not Neovim" are no part of it
    assert (
        "- I use Helix for everything (updated 2026-11-29, was: I use Neovim for everything)"
        in content
    )
    assert content.count("Neovim") == 1  # in the trace only; no second statement


# --- statements, not quotes (issue 12) ------------------------------------------------------


def test_phrasing_strips_cues_hedges_and_the_old_side_and_resolves_dates():
    from datetime import date

    from cmem.converge.builtin.phrasing import statement_text, subject_of, substitution

    day = date(2026, 11, 10)
    assert statement_text("Actually I moved to Porto, not Lisbon.", day) == "I moved to Porto"
    assert statement_text("I moved to Lisbon last month.", day) == "I moved to Lisbon in 2026-10"
    assert statement_text("I prefer tabs this month", day) == "I prefer tabs since 2026-11"
    assert (
        statement_text("I switched my blog from Ghost to Astro.", day) == "I use Astro for my blog"
    )
    assert (
        statement_text("We migrated the CI from Jenkins to GitHub Actions", day)
        == "We use GitHub Actions for the CI"
    )
    assert (
        statement_text("I switched from uv to poetry for managing virtualenvs.", day)
        == "I use poetry for managing virtualenvs"
    )
    assert statement_text("I decided to use fish as my shell.", day) == "I use fish as my shell"
    assert statement_text("其实我更喜欢用 Vim，不是 Emacs", day) == "我更喜欢用 Vim"
    assert statement_text("从 pip 改用 uv 管理环境", day) == "用 uv 管理环境"
    assert statement_text("上个月搬到了杭州", day) == "自 2026-10 起搬到了杭州"
    assert (
        statement_text("永远别在周五晚上发版，上周五回滚到半夜", day)
        == "永远别在周五晚上发版，上周五回滚到半夜"
    )  # 上周五 is a day
    assert statement_text("想通了：以后都用中文回答", day) == "以后都用中文回答"
    assert substitution("其实不是北京，是深圳") == ("北京", "深圳")
    assert substitution("Actually it's Porto, not Lisbon.") == ("Lisbon", "Porto")
    assert (
        substitution("actually I use Helix now, not Neovim") is None
    )  # a whole sentence is restated instead
    assert (
        subject_of("I decided to use fish as my shell.") == "Shell"
        and subject_of("改用 uv 管理环境") == "Python 工具链"
    )


def test_a_correction_and_what_it_corrects_in_one_pass_make_one_statement(make_vault):
    root = make_vault(
        {
            "a.md": "I decided to move my blog to Hugo.\n",
            "b.md": "Actually, the blog should stay on Ghost, not Hugo.\n",
        },
        config_yaml=EN,
    )
    _, files, _ = run(
        root,
        [
            note_with(root, "a.md", [(1, "decision")], mtime_ns=1),
            note_with(root, "b.md", [(1, "correction")], mtime_ns=2),
        ],
    )
    statements = [s for content in files.values() for s in statements_of(content)]
    assert len(statements) == 1, statements
    core, sources, traces = split_statement(statements[0].text)
    assert core == "The blog should stay on Ghost" and sources == ["a", "b"]  # both stay cited
    assert split_statement(traces[0].old)[0] == "I move my blog to Hugo"
    assert (
        set(files) == {"converged/topics/blog.md"}
        and "\n# Blog\n" in files["converged/topics/blog.md"]
    )


def test_a_switch_rewrites_a_resident_statement_of_an_earlier_pass(make_vault):
    profile = (
        "---\nsummary: me\n---\n# Profile\n\n- I use Neovim for editing code (source: [[old]])\n"
    )
    root = make_vault(
        {
            "converged/core/profile.md": profile,
            "archive/old.md": "x\n",
            "n.md": "I switched from Neovim to Helix for editing code.\n",
        },
        config_yaml=EN,
    )
    _, files, _ = run(root, [note_with(root, "n.md", [(1, "decision")])])
    assert set(files) == {"converged/core/profile.md"}  # no new topic file beside the old statement
    assert (
        "- I use Helix for editing code (updated 2026-11-29, was: I use Neovim for editing code) (source: [[old]], [[n]])"
        in files["converged/core/profile.md"]
    )


def test_a_short_correction_is_substituted_into_the_statement_it_corrects(make_vault):
    root = make_vault(
        {
            "converged/core/profile.md": PROFILE_ZH.replace("用 React 写前端", "在找北京后端实习"),
            "n.md": "其实不是北京，是深圳\n",
            **OLD_NOTES,
        }
    )
    _, files, _ = run(root, [note_with(root, "n.md", [(1, "correction")])])
    assert (
        "- 在找深圳后端实习（更新于 2026-11-29，原为：在找北京后端实习）（来源：[[2026-10-05 notes]]、[[n]]）"
        in files["converged/core/profile.md"]
    )


def test_recurring_events_merge_into_one_pattern_with_count_and_dates(make_vault):
    root = make_vault(
        {
            "2026-11-01 日记.md": "又熬夜到两点，老毛病\n",
            "2026-11-03 日记.md": "面试前一晚又熬夜刷题\n",
            "2026-11-05 日记.md": "又熬夜了\n",
        }
    )
    notes = [
        note_with(root, f"2026-11-0{d} 日记.md", [(1, "recurring")], mtime_ns=d) for d in (1, 3)
    ]
    _, first, _ = run(root, notes)
    methodology = first["converged/core/methodology.md"]
    assert (
        "## 反复出现的模式\n\n- 熬夜到两点（2 次：2026-11-01、2026-11-03）（来源：[[2026-11-01 日记]]、[[2026-11-03 日记]]）"
        in methodology
    )
    originals = {**originals_of(root), **first}
    _, second, _ = run(root, [note_with(root, "2026-11-05 日记.md", [(1, "recurring")])], originals)
    line = line_with(second["converged/core/methodology.md"], "熬夜")
    core, sources, traces = split_statement(line)
    assert core == "熬夜到两点（3 次：2026-11-01、2026-11-03、2026-11-05）"
    assert sources == ["2026-11-01 日记", "2026-11-03 日记", "2026-11-05 日记"]
    # the count it had is kept, alone: the dates are all in the new statement
    assert len(traces) == 1 and traces[0].old == "2 次" and traces[0].date == "2026-11-05"


def test_each_class_goes_under_its_own_heading(make_vault):
    profile = "---\nsummary: me\n---\n# Profile\n\n## Weaknesses\n\n- Decides too fast (source: [[old]])\n"
    root = make_vault(
        {
            "converged/core/profile.md": profile,
            "archive/old.md": "x\n",
            "n.md": "I prefer to decide fast and revisit later.\n",
        },
        config_yaml=EN,
    )
    _, files, _ = run(root, [note_with(root, "n.md", [(1, "preference")])])
    content = files["converged/core/profile.md"]
    assert content.endswith(
        "## Weaknesses\n\n- Decides too fast (source: [[old]])\n\n## Preferences\n\n- I prefer to decide fast and revisit later (source: [[n]])\n"
    )


def test_source_and_trace_follow_the_files_own_language(make_vault):
    topic = "---\nsummary: tools\n---\n# Python tooling\n\n- Uses pipenv for managing virtualenvs (source: [[old]])\n"
    root = make_vault(
        {
            "converged/topics/python-tooling.md": topic,
            "archive/old.md": "x\n",
            "n.md": "I switched from pipenv to uv for managing virtualenvs.\n",
            "m.md": "I decided to use fish as my shell.\n",
        }
    )
    _, files, _ = run(
        root,
        [note_with(root, "n.md", [(1, "decision")]), note_with(root, "m.md", [(1, "decision")])],
    )  # a zh vault
    assert (
        "- Uses uv for managing virtualenvs (updated 2026-11-29, was: Uses pipenv for managing virtualenvs) (source: [[old]], [[n]])"
        in files["converged/topics/python-tooling.md"]
    )
    assert (
        "- I use fish as my shell (source: [[m]])" in files["converged/topics/shell.md"]
    )  # a new file in its line's language


# --- credentials are never memory (issue 14) ------------------------------------------------

GH_TOKEN = "ghp_" + "Xk2J9fQ0pLm7Zr4T" * 2 + "abcd"  # assembled from pieces: no leak in this file


def test_a_signal_line_holding_a_credential_defers_the_note_with_a_reason(make_vault):
    root = make_vault(
        {
            "converged/core/profile.md": PROFILE_ZH,
            "2026-11-28 随手记.md": f"- 以后都用 token {GH_TOKEN} 调 GitHub API\n- 永远别在周五晚上发版\n",
            "2026-11-28 notes.md": "- From now on always use password=hunter22X for the staging db\n",
            **OLD_NOTES,
        }
    )
    notes = [
        note_with(root, "2026-11-28 随手记.md", [(1, "preference"), (2, "preference")]),
        note_with(root, "2026-11-28 notes.md", [(1, "preference")]),
    ]
    text, files, validation = run(root, notes)
    assert GH_TOKEN not in text and "hunter22X" not in text and files == {}
    reasons = {d.note: d.reason for d in validation.deferred}
    assert "line 1 holds a credential (github-token)" in reasons["2026-11-28 随手记.md"]
    assert "line 1 holds a credential (password)" in reasons["2026-11-28 notes.md"]
    assert validation.converged == []


def test_a_credential_outside_the_signal_lines_does_not_hold_the_note_back(make_vault):
    root = make_vault(
        {
            "converged/core/profile.md": PROFILE_ZH,
            "2026-11-28 随手记.md": f"- 永远别在周五晚上发版\n- 临时：{GH_TOKEN}\n",
            **OLD_NOTES,
        }
    )
    text, files, validation = run(
        root, [note_with(root, "2026-11-28 随手记.md", [(1, "preference")])]
    )
    assert [e.note for e in validation.converged] == ["2026-11-28 随手记.md"]
    assert GH_TOKEN not in files["converged/core/profile.md"]
