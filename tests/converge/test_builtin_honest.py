"""The builtin engine is the honest fallback (issue 41): offline and deterministic, and it never
misleads — a switch or correction rewrites the statement holding the old value in whichever
memory file it lives, a changed preference replaces the one it contradicts when the line names
both sides. Real passes (`run_pass`: the scanner, git, the validator), day after day."""

from __future__ import annotations

from builtin_helpers import all_traces, converge_days, layer

EN, ZH = "language: en\n", "language: zh\n"


def _statements(root):
    return [(rel, s) for rel, found in layer(root).items() for s in found]


def _holding(root, word: str) -> list:
    """The statements whose own words (not their traces) hold `word`."""
    return [(rel, s) for rel, s in _statements(root) if word.casefold() in s.core.casefold()]


def _olds(statement) -> list[str]:
    return [trace.old.split(" (")[0].split("（")[0] for trace in all_traces(statement)]


# --- a switch rewrites the statement holding the old value, wherever it lives ----------------

THESIS_EN = """---
summary: thesis work
---
# Thesis

- Survey scripts run under pipenv (source: [[2026-10-01 notes]])
- Interviews are transcribed by hand (source: [[2026-10-01 notes]])
"""
TOOLING_EN = """---
summary: Python tooling
---
# Python tooling

- Pins Python 3.12 for new projects (source: [[2026-10-01 notes]])
"""


def test_a_chain_of_switches_across_topic_files_leaves_one_statement_with_nested_traces(
    make_vault,
):
    """pipenv → uv → poetry: the old side "uv" is a two-letter name, and the statement holding
    it lives in a topic file the line's subject does not name."""
    root = make_vault(
        {
            "converged/topics/thesis.md": THESIS_EN,
            "converged/topics/python-tooling.md": TOOLING_EN,
            "archive/2026-10/2026-10-01 notes.md": "- earlier\n",
        },
        config_yaml=EN,
        git=True,
    )
    converge_days(
        root,
        [
            ("2026-11-03", {"2026-11-03 notes": "- I switched from pipenv to uv.\n"}),
            ("2026-11-05", {"2026-11-05 notes": "- I switched from uv to poetry.\n"}),
        ],
    )
    [(rel, statement)] = _holding(root, "poetry")
    assert rel == "converged/topics/thesis.md"
    assert statement.core == "Survey scripts run under poetry"
    assert _olds(statement) == ["Survey scripts run under uv", "Survey scripts run under pipenv"]
    assert _holding(root, "pipenv") == [] and _holding(root, " uv") == []
    assert statement.sources == ("2026-10-01 notes", "2026-11-03 notes", "2026-11-05 notes")


def test_a_chain_of_switches_in_chinese_keeps_one_statement_too(make_vault):
    thesis = "---\nsummary: 论文\n---\n# 论文\n\n- 问卷脚本用 pipenv 管理依赖（来源：[[2026-10-01 日记]]）\n"
    root = make_vault(
        {
            "converged/topics/论文.md": thesis,
            "converged/topics/工具.md": "# 工具\n\n- 用 Zed 写代码（来源：[[2026-10-01 日记]]）\n",
            "archive/2026-10/2026-10-01 日记.md": "- 早先\n",
        },
        config_yaml=ZH,
        git=True,
    )
    converge_days(
        root,
        [
            ("2026-11-03", {"2026-11-03 日记": "- 从 pipenv 换成 uv\n"}),
            ("2026-11-05", {"2026-11-05 日记": "- 从 uv 换成 poetry 了\n"}),
        ],
    )
    [(rel, statement)] = _holding(root, "poetry")
    assert (rel, statement.core) == ("converged/topics/论文.md", "问卷脚本用 poetry 管理依赖")
    assert _olds(statement) == ["问卷脚本用 uv 管理依赖", "问卷脚本用 pipenv 管理依赖"]
    assert _holding(root, "pipenv") == [] and _holding(root, "uv ") == []


def test_a_switch_naming_no_old_side_fills_the_slot_its_kind_holds(make_vault):
    """One package manager, one shell at a time: "I switched to uv" is about the statement
    naming pipenv, wherever it lives; a name that is also a common word counts only beside a
    word of its kind ("I like fish for dinner" is no shell)."""
    root = make_vault(
        {
            "converged/topics/thesis.md": THESIS_EN,
            "converged/topics/shell.md": "# Shell\n\n- I use fish as my shell (source: [[2026-10-01 notes]])\n",
            "converged/core/profile.md": "# Profile\n\n- I like fish for dinner (source: [[2026-10-01 notes]])\n",
            "archive/2026-10/2026-10-01 notes.md": "- earlier\n",
        },
        config_yaml=EN,
        git=True,
    )
    converge_days(
        root, [("2026-11-03", {"2026-11-03 notes": "- I switched to uv.\n- Switched to zsh.\n"})]
    )
    found = layer(root)
    survey = found["converged/topics/thesis.md"][0]
    assert (survey.core, _olds(survey)) == (
        "Survey scripts run under uv",
        ["Survey scripts run under pipenv"],
    )
    [shell] = found["converged/topics/shell.md"]
    assert (shell.core, _olds(shell)) == ("I use zsh as my shell", ["I use fish as my shell"])
    [dinner] = found["converged/core/profile.md"]
    assert dinner.core == "I like fish for dinner" and not dinner.traces
    assert len(_statements(root)) == 4  # nothing added beside what the switches rewrote


def test_a_switch_naming_no_old_side_in_chinese_fills_the_slot_too(make_vault):
    thesis = "# 论文\n\n- 问卷脚本用 pipenv 管理依赖（来源：[[2026-10-01 日记]]）\n"
    root = make_vault(
        {
            "converged/topics/论文.md": thesis,
            "archive/2026-10/2026-10-01 日记.md": "- 早先\n",
        },
        config_yaml=ZH,
        git=True,
    )
    converge_days(root, [("2026-11-03", {"2026-11-03 日记": "- 改用 uv 了\n"})])
    [(rel, statement)] = _statements(root)
    assert (statement.core, _olds(statement)) == (
        "问卷脚本用 uv 管理依赖",
        ["问卷脚本用 pipenv 管理依赖"],
    )


# --- a changed preference replaces the one it contradicts -----------------------------------

PROFILE_EN = """---
summary: who I am
---
# Profile

## Preferences

- I prefer written feedback (source: [[2026-10-01 notes]])
- I like long design docs (source: [[2026-10-01 notes]])
- I work weekend shifts at the hospital (source: [[2026-10-01 notes]])
"""


def test_a_preference_naming_both_sides_replaces_the_one_it_contradicts(make_vault):
    """ "X, not Y", "rather X than Y", "X instead of Y": a rewrite with a trace, never a second
    preference contradicting the first in the profile every session reads."""
    root = make_vault(
        {
            "converged/core/profile.md": PROFILE_EN,
            "archive/2026-10/2026-10-01 notes.md": "- earlier\n",
        },
        config_yaml=EN,
        git=True,
    )
    converge_days(
        root,
        [
            (
                "2026-11-03",
                {
                    "2026-11-03 notes": "- Calls from now on, not written feedback.\n"
                    "- I'd rather have short bullet lists than long design docs.\n"
                    "- I prefer not to work on weekends.\n"
                },
            ),
            ("2026-11-06", {"2026-11-06 notes": "- I prefer video calls instead of calls.\n"}),
        ],
    )
    by_core = {s.core: s for _, s in _statements(root)}
    calls = by_core["I prefer video calls"]
    assert _olds(calls) == ["I prefer calls", "I prefer written feedback"]
    docs = by_core["I'd rather have short bullet lists"]
    assert _olds(docs) == ["I like long design docs"]
    assert _holding(root, "written feedback") == [] and _holding(root, "design docs") == []
    # a preference that names no other side is added: the shifts stay as they were
    assert "I work weekend shifts at the hospital" in by_core
    assert "I prefer not to work on weekends" in by_core
    assert len(by_core) == 4


def test_a_chinese_preference_naming_both_sides_replaces_the_one_it_contradicts(make_vault):
    """ "X，而不是 Y", "不要 Y 了，改成 X", "X，不再 Y"."""
    profile = (
        "---\nsummary: 我是谁\n---\n# 画像\n\n## 偏好\n\n"
        "- 我喜欢文字反馈（来源：[[2026-10-01 日记]]）\n"
        "- 我喜欢写长文档记录思路（来源：[[2026-10-01 日记]]）\n"
        "- 我喜欢晚上写代码（来源：[[2026-10-01 日记]]）\n"
    )
    root = make_vault(
        {
            "converged/core/profile.md": profile,
            "archive/2026-10/2026-10-01 日记.md": "- 早先\n",
        },
        config_yaml=ZH,
        git=True,
    )
    converge_days(
        root,
        [
            (
                "2026-11-03",
                {
                    "2026-11-03 日记": "- 以后都打电话沟通，而不是文字反馈\n"
                    "- 以后都不要长文档了，改成列要点\n"
                    "- 我更喜欢早上写代码，不再晚上写\n"
                },
            )
        ],
    )
    olds = {s.core: _olds(s) for _, s in _statements(root)}
    assert olds == {
        "以后都打电话沟通": ["我喜欢文字反馈"],
        "以后都列要点": ["我喜欢写长文档记录思路"],
        "我更喜欢早上写代码": ["我喜欢晚上写代码"],
    }
