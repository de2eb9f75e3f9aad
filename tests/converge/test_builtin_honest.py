"""The builtin engine is the honest fallback (issue 41): offline and deterministic, and it never
misleads — a switch or correction rewrites the statement holding the old value in whichever
memory file it lives, a changed preference replaces the one it contradicts when the line names
both sides. Real passes (`run_pass`: the scanner, git, the validator), day after day."""

from __future__ import annotations

from builtin_helpers import all_traces, converge_days, layer
from cmem.vault.layers import open_vault

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


# --- a topic file is named for what it is about, never from a clause --------------------------


def _topics(root) -> list[str]:
    return sorted(
        rel.rsplit("/", 1)[-1].removesuffix(".md")
        for rel in layer(root)
        if rel.startswith("converged/topics/")
    )


def test_a_topic_is_named_by_the_noun_phrase_a_decision_is_about(make_vault):
    """Not "m-dropping-fte" (a split contraction and a verb), "ll-figma-prototypes" or
    "decided-m-part-time"; a decision with nothing to name a topic by waits for a model."""
    root = make_vault({}, config_yaml=EN, git=True)
    [result] = converge_days(
        root,
        [
            (
                "2026-12-04",
                {
                    "2026-12-04 notes": "- I'm dropping FTE to 0.6 at the hospital from January.\n"
                    "- I'll go with Figma for the prototypes, not Sketch.\n"
                    "- I decided to learn Rust this winter.\n"
                    "- I decided I'm going part-time at the hospital.\n"
                    "- I decided to quit.\n"
                },
            )
        ],
    )
    assert _topics(root) == ["hospital", "prototypes", "rust"]
    hospital = [s.core for s in layer(root)["converged/topics/hospital.md"]]
    assert hospital == [
        "I'm dropping FTE to 0.6 at the hospital from January",
        "I'm going part-time at the hospital",
    ]
    [deferred] = result.deferred
    assert deferred["lines"] == [5] and "no subject to file it under" in deferred["reason"]
    assert "waits for a model" in deferred["reason"]


def test_a_chinese_decision_is_named_by_its_object_or_waits_for_a_model(make_vault):
    root = make_vault({}, config_yaml=ZH, git=True)
    [result] = converge_days(
        root,
        [
            (
                "2026-12-04",
                {
                    "2026-12-04 日记": "- 我决定每天刷两道算法题\n"
                    "- 我决定用 Tailwind 写样式\n"
                    "- 我决定顺便 tag 的时候自动发\n"
                    "- 顺便在打 tag 的时候自动发版，我决定了\n"
                },
            )
        ],
    )
    assert _topics(root) == ["样式", "算法题"]
    [deferred] = result.deferred
    assert deferred["lines"] == [3, 4] and "no subject to file it under" in deferred["reason"]


def test_a_decision_without_a_name_joins_a_topic_it_shares_a_word_with(make_vault):
    release = "# 发版\n\n- 发版前跑一遍测试（来源：[[2026-10-01 日记]]）\n"
    root = make_vault(
        {"converged/topics/发版.md": release, "archive/2026-10-01 日记.md": "- 早先\n"},
        config_yaml=ZH,
        git=True,
    )
    converge_days(
        root, [("2026-12-04", {"2026-12-04 日记": "- 我决定顺便打 tag 的时候自动发版\n"})]
    )
    assert _topics(root) == ["发版"]
    cores = [s.core for s in layer(root)["converged/topics/发版.md"]]
    assert cores == ["发版前跑一遍测试", "顺便打 tag 的时候自动发版"]


# --- a recurring line counts what the archive holds ------------------------------------------


def test_a_recurring_line_counts_the_archived_notes_that_said_it_before(make_vault):
    """ "Skipped the gym again" is no one-off when the archive holds it twice (notes no pass of
    cmem converged): one pattern counting all three, citing them, and growing from there."""
    root = make_vault(
        {
            "archive/2026-09/2026-09-03 notes.md": "- Skipped the gym again.\n",
            "archive/2026-09/2026-09-10 notes.md": "- Skipped the gym again, too tired.\n",
        },
        config_yaml=EN,
        git=True,
    )
    converge_days(
        root,
        [
            ("2026-10-01", {"2026-10-01 notes": "- Skipped the gym again.\n"}),
            ("2026-10-05", {"2026-10-05 notes": "- Skipped the gym again.\n"}),
        ],
    )
    [pattern] = layer(root)["converged/core/methodology.md"]
    assert (
        pattern.core == "Skipped the gym (4 times: 2026-09-03, 2026-09-10, 2026-10-01, 2026-10-05)"
    )
    assert _olds(pattern) == ["3 times"]
    assert pattern.sources == (
        "2026-09-03 notes",
        "2026-09-10 notes",
        "2026-10-01 notes",
        "2026-10-05 notes",
    )


def test_a_chinese_recurring_line_counts_the_archive_too(make_vault):
    root = make_vault(
        {"archive/2026-09/2026-09-05 日记.md": "- 又熬夜写代码到三点\n"}, config_yaml=ZH, git=True
    )
    converge_days(root, [("2026-10-01", {"2026-10-01 日记": "- 又熬夜写代码\n"})])
    [pattern] = layer(root)["converged/core/methodology.md"]
    assert pattern.core == "熬夜写代码（2 次：2026-09-05、2026-10-01）"
    assert pattern.sources == ("2026-09-05 日记", "2026-10-01 日记")


# --- one account of what waits: the pass report, status, scan and --json agree ----------------


def _status(root) -> dict:
    from cmem.reading.status import build_status

    return build_status(open_vault(root)).to_json()


def _scan(root) -> dict:
    import json

    from cmem.reading.scan_output import scan_output

    return json.loads(scan_output(open_vault(root).remember_listings(), as_json=True))


DAY_EN = (
    "- I decided to use pipenv for managing virtualenvs.\n"  # placed: a topic file
    "- I prefer written feedback.\n"  # placed: the profile
    "- Skipped the gym again.\n"  # a one-off: deferred by the scan's rules, returns by itself
    "- Had coffee with Ana, she works at Stripe.\n"  # no cue: only a model reads it
    "- I decided to quit.\n"  # a cue line the engine cannot file: it waits for a model
)
QUIET_EN = "- Long day at the ward.\n- Dinner with Sam.\n"


def test_a_line_placed_in_a_statement_is_never_said_to_wait_for_a_model(make_vault):
    root = make_vault({}, config_yaml=EN, git=True)
    before = make_vault({"2026-12-01 notes.md": DAY_EN, "2026-12-02 notes.md": QUIET_EN})
    waiting = _status(before)["pending"]["waiting_for_model"]
    assert (waiting["lines"], waiting["lines_in_notes"]) == (3, 2)  # Ana, and the quiet two
    [result] = converge_days(
        root, [("2026-12-02", {"2026-12-01 notes": DAY_EN, "2026-12-02 notes": QUIET_EN})]
    )
    assert result.converged_lines == 2 and result.left_for_model == (4, 2)
    assert result.to_json()["waiting_for_model"] == {"lines": 4, "notes": 2}
    pending = _status(root)["pending"]
    assert (
        pending["waiting_for_model"]["lines"],
        pending["waiting_for_model"]["lines_in_notes"],
    ) == (4, 2)
    assert pending["converged_from_cues"] == 2 and pending["deferred"] == 1  # the one-off
    scan = _scan(root)
    by_note = {p["note"]: p["model_lines"] for p in scan["pending"]}
    assert by_note == {"2026-12-01 notes.md": 2, "2026-12-02 notes.md": 2}
    lines = {(d["line"], d.get("waits_for_model", False)) for d in scan["deferred"]}
    assert lines == {(3, False), (5, True)}  # never lines 1 and 2, which memory holds
    # the line the engine deferred is said once, with its reason — no second account of it
    assert not any("placed the decision signal in no statement" in w for w in result.warnings)
    [deferred] = result.deferred
    assert deferred["lines"] == [5] and "no subject" in deferred["reason"]


def test_a_chinese_pass_and_status_give_the_same_account(make_vault):
    day = "- 我决定用 uv 管理依赖\n- 我喜欢文字反馈\n- 今天下雨了\n- 我决定顺便 tag 的时候自动发\n"
    root = make_vault({}, config_yaml=ZH, git=True)
    [result] = converge_days(root, [("2026-12-02", {"2026-12-02 日记": day})])
    assert result.converged_lines == 2 and result.left_for_model == (2, 1)
    waiting = _status(root)["pending"]["waiting_for_model"]
    assert (waiting["lines"], waiting["lines_in_notes"]) == result.left_for_model


def test_status_and_the_pass_report_say_plainly_that_most_of_it_waits(make_vault):
    from cmem.render.reports import render_pass, render_status_data

    root = make_vault({}, config_yaml=EN, git=True)
    [result] = converge_days(
        root, [("2026-12-02", {"2026-12-01 notes": DAY_EN, "2026-12-02 notes": QUIET_EN})]
    )
    report = render_pass(result)
    said = (
        "builtin engine (no model set): 2 lines converged from cue words (2 in statements, "
        "0 in traces, 1 deferred); 4 lines in 2 notes wait for a model — set a model: "
        "`--llm CMD` or `llm.command` (see `cmem converge --help`)"
    )
    assert said in report
    status = render_status_data(_status(root))
    [line] = [line for line in status.split("\n") if "wait for a model" in line]
    assert line.strip() == (
        "builtin engine (no model set): 2 lines converged from cue words so far; 4 lines in 2 "
        "notes wait for a model — set a model: `--llm CMD` or `llm.command` (see `cmem converge --help`)"
    )
    # a pass with nothing it can take says the same figure
    nothing = converge_days(root, [("2026-12-03", {})])[0]
    assert nothing.status == "nothing" and "4 lines in 2 notes wait for a model" in nothing.message


def test_with_a_model_set_nothing_is_said_to_wait_for_one(make_vault):
    root = make_vault(
        {"2026-12-02 notes.md": QUIET_EN},
        config_yaml=EN + "llm:\n  command: cat\n",
    )
    pending = _status(root)["pending"]
    assert pending["model_configured"] and pending["waiting_for_model"]["lines"] == 0
