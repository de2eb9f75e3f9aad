"""The builtin engine keeps memory as a person would (issue 35): every reply it writes is one
its validator accepts, day after day, and it is conservative — a rewrite only for the statement a
correction or switch is about, the corrected part substituted, one sentence a statement, counts
updated in place, topic files named for topics, summaries never stale. Real passes (`run_pass`:
the scanner, git, the validator) unless a case needs the engine alone."""

from __future__ import annotations

from builtin_helpers import (
    DATE,
    OLD_NOTES,
    all_traces,
    converge_days,
    layer,
    note_with,
    originals_of,
    run,
)
from cmem.vault.statements import parse_statements, split_statement

EN = "language: en\n"


# --- the three replies its validator rejected ----------------------------------------------


def test_a_habit_logged_day_after_day_is_one_statement_with_one_trace_of_its_counts(make_vault):
    root = make_vault({}, config_yaml=EN, git=True)
    days = [
        (f"2026-12-0{d}", {f"2026-12-0{d} notes": "Skipped the gym again.\n"}) for d in range(1, 8)
    ]
    converge_days(root, days)  # every pass applied: the fourth lost the third's trace before
    [pattern] = layer(root)["converged/core/methodology.md"]
    core = "Skipped the gym (7 times: " + ", ".join(f"2026-12-0{d}" for d in range(1, 8)) + ")"
    assert pattern.core == core
    assert len(pattern.traces) == 1  # updated in place: one trace, the counts it had nested
    assert [t.old.split(" (")[0] for t in all_traces(pattern)] == [
        f"{n} times" for n in (6, 5, 4, 3, 2)
    ]
    assert [t.date for t in all_traces(pattern)] == [f"2026-12-0{d}" for d in (7, 6, 5, 4, 3)]
    assert pattern.sources == tuple(f"2026-12-0{d} notes" for d in range(1, 8))


def test_several_notes_of_one_pass_count_once_with_one_trace(make_vault):
    root = make_vault({}, config_yaml="language: zh\n", git=True)
    converge_days(
        root,
        [
            (
                "2026-11-01",
                {"2026-11-01 日记": "又熬夜到两点\n", "2026-11-02 日记": "又熬夜到两点\n"},
            )
        ],
    )
    converge_days(
        root,
        [("2026-11-05", {f"2026-11-0{d} 日记": "又熬夜到两点，老毛病\n" for d in (3, 4, 5)})],
    )
    [pattern] = layer(root)["converged/core/methodology.md"]
    assert pattern.core.startswith("熬夜到两点（5 次：2026-11-01、")
    assert [t.old for t in pattern.traces] == ["2 次"]  # the count memory had before the pass


def test_a_daily_template_linking_other_days_and_the_year_names_no_topic_after_them(make_vault):
    root = make_vault({}, config_yaml=EN, git=True)
    converge_days(
        root,
        [
            ("2026-12-04", {"2026-12-04": "#2026\n\nI decided to use fish as my shell.\n"}),
            (
                "2026-12-05",
                {
                    "2026-12-05": "<< [[2026-12-04]] | [[2026-12-06]] >> [[2026]]\n#2026 #daily\n\n"
                    "I decided to learn Rust this winter.\n"
                },
            ),
        ],
    )
    names = [rel.rsplit("/", 1)[-1].removesuffix(".md") for rel in layer(root)]
    assert "rust" in names and "shell" in names
    assert not {"2026-12-04", "2026-12-05", "2026-12-06", "2026"} & set(names)


def test_a_source_format_with_no_closing_text_works_end_to_end(make_vault):
    config = 'language: en\nformats:\n  source: "— {links}"\n  source_separator: " · "\n'
    root = make_vault({}, config_yaml=config, git=True)
    converge_days(
        root,
        [
            ("2026-12-04", {"2026-12-04 notes": "I prefer Neovim for editing code.\n"}),
            (
                "2026-12-05",
                {
                    "2026-12-05 notes": "Actually I use Helix now, not Neovim.\n",
                    "v2.0 plan (draft)": "I prefer Helix for editing code.\n",
                },
            ),
        ],
    )
    [statement] = layer(root)["converged/core/profile.md"]
    text = (root / "converged/core/profile.md").read_text("utf-8")
    assert (
        "- I prefer Helix for editing code (updated 2026-12-05, was: I prefer Neovim for editing code) — [[2026-12-04 notes]] · [[2026-12-05 notes]] · [[v2.0 plan (draft)]]"
        in text
    )
    assert statement.sources == ("2026-12-04 notes", "2026-12-05 notes", "v2.0 plan (draft)")


# --- a rewrite only for the statement a change is about, the corrected part in place --------

DUTCH = """---
summary: who I am
---
# Profile

- I do 2 Dutch sessions a week (source: [[old]])
- Skipped the gym (2 times: 2026-11-01, 2026-11-02) (source: [[old]])
"""


def test_i_meant_three_not_two_substitutes_the_corrected_part(make_vault):
    root = make_vault(
        {
            "converged/core/profile.md": DUTCH,
            "archive/old.md": "x\n",
            "n.md": "I meant 3 sessions a week, not 2\n",
        },
        config_yaml=EN,
    )
    _, files, _ = run(root, [note_with(root, "n.md", [(1, "correction")])])
    profile = files["converged/core/profile.md"]
    assert (
        "- I do 3 Dutch sessions a week (updated 2026-11-29, was: I do 2 Dutch sessions a week) (source: [[old]], [[n]])"
        in profile
    )
    assert "- 3 sessions a week" not in profile  # never the bare correction beside the old
    assert "- Skipped the gym (2 times: 2026-11-01, 2026-11-02) (source: [[old]])" in profile


def test_a_note_correcting_its_own_correction_keeps_one_statement(make_vault):
    root = make_vault(
        {
            "converged/core/profile.md": DUTCH,
            "archive/old.md": "x\n",
            "n.md": "I meant 4 sessions a week, not 2\nI meant 1 sessions a week, not 4\n",
        },
        config_yaml=EN,
    )
    _, files, _ = run(root, [note_with(root, "n.md", [(1, "correction"), (2, "correction")])])
    statements = [
        s for s in parse_statements(files["converged/core/profile.md"]) if "session" in s.core
    ]
    [statement] = statements
    assert statement.core == "I do 1 Dutch sessions a week"
    assert [t.old.split(" (")[0] for t in all_traces(statement)] == [
        "I do 4 Dutch sessions a week",
        "I do 2 Dutch sessions a week",
    ]


MEETINGS = """---
summary: work
---
# Work

- The team meeting is on Thursdays (source: [[old]])
"""


def test_a_change_whose_old_side_no_statement_holds_is_added_not_chained(make_vault):
    """ "from the team wiki to Obsidian for meeting notes" shares "team" (its old side) and
    "meeting" with the meeting day: still not the statement it replaces (that one holds no
    "wiki"), so the meeting day stays a statement, not a trace."""
    root = make_vault(
        {
            "converged/topics/work.md": MEETINGS,
            "archive/old.md": "x\n",
            "n.md": "Actually I switched from the team wiki to Obsidian for meeting notes.\nCorrection: the standup is on Monday, not Friday.\n",
        },
        config_yaml=EN,
    )
    _, files, _ = run(root, [note_with(root, "n.md", [(1, "correction"), (2, "correction")])])
    work = files.get("converged/topics/work.md", MEETINGS)
    assert "- The team meeting is on Thursdays (source: [[old]])" in work
    everything = "\n".join(files.values())
    assert "was: The team meeting" not in everything
    assert "I use Obsidian for meeting notes" in everything


def test_a_switch_without_an_old_side_rewrites_only_a_statement_sharing_its_subject(make_vault):
    topic = "---\nsummary: Uses pipenv for managing virtualenvs\n---\n# Python tooling\n\n- Uses pipenv for managing virtualenvs (source: [[old]])\n- Lints with flake8 (source: [[old]])\n"
    root = make_vault(
        {
            "converged/topics/python-tooling.md": topic,
            "archive/old.md": "x\n",
            "n.md": "I switched to uv for managing virtualenvs.\nI switched to ruff.\n",
        },
        config_yaml=EN,
    )
    _, files, _ = run(root, [note_with(root, "n.md", [(1, "decision"), (2, "decision")])])
    content = files["converged/topics/python-tooling.md"]
    # uv takes pipenv's place in the statement (a slot: one package manager at a time)
    assert (
        "- Uses uv for managing virtualenvs (updated 2026-11-29, was: Uses pipenv for managing virtualenvs)"
        in content
    )
    assert "- Lints with flake8 (source: [[old]])" in content  # "ruff" says nothing of linting
    # the summary said what the statement said: it follows the rewrite instead of going stale
    assert content.startswith('---\nsummary: "Uses uv for managing virtualenvs"\n')


# --- one sentence, no garbled words -----------------------------------------------------------


def test_a_paragraph_becomes_its_cue_sentence_and_a_long_sentence_waits_for_a_model(make_vault):
    long = "Long day. I decided to stop checking Slack after 6pm because it keeps me up, and the team agreed it is fine, so from now on my status says offline after six and I will answer in the morning, which should help with sleep too."
    note = (
        "Hey Anna, thanks for the tips yesterday. I prefer meeting in the mornings, honestly, "
        "since afternoons are packed. Let me know if Thursday works, and say hi to Tom!\n"
        + long
        + "\n"
    )
    root = make_vault({}, config_yaml=EN, git=True)
    [result] = converge_days(root, [("2026-12-04", {"2026-12-04 notes": note})])
    [statement] = layer(root)["converged/core/profile.md"]
    assert (
        statement.core == "I prefer meeting in the mornings, honestly, since afternoons are packed"
    )
    assert {
        key: value for key, value in result.deferred[0].items() if key in ("note", "lines")
    } == {"note": "2026-12-04 notes.md", "lines": [2]}
    assert "waits for a model" in result.deferred[0]["reason"]


def test_recurrence_cues_come_off_only_where_the_words_left_read_as_a_sentence(make_vault):
    line = "Skipped Dutch again: I plan it for the evening and every time it fails\n"
    root = make_vault({}, config_yaml=EN, git=True)
    converge_days(
        root,
        [
            ("2026-12-01", {"2026-12-01 notes": line}),
            (
                "2026-12-02",
                {
                    "2026-12-02 notes": line,
                    "2026-12-02 more": "Every time I deploy on Friday, something breaks again\n",
                },
            ),
            (
                "2026-12-03",
                {"2026-12-03 notes": "Every time I deploy on Friday, something breaks again\n"},
            ),
        ],
    )
    cores = [s.core for s in layer(root)["converged/core/methodology.md"]]
    assert (
        "Skipped Dutch: I plan it for the evening and every time it fails (2 times: 2026-12-01, 2026-12-02)"
        in cores
    )
    assert any(
        core.startswith("Every time I deploy on Friday, something breaks (2 times")
        for core in cores
    )


# --- names, summaries, what cannot be written -------------------------------------------------


def test_a_topic_file_is_never_named_like_a_note_a_date_or_an_existing_file():
    from cmem.converge.builtin.topic_names import names_a_topic, topic_name

    existing = {"converged/topics/shell.md": "converged/topics/Shell.md"}  # skeleton → path

    def is_note(name: str) -> bool:
        return name.casefold() in {"rust", "learn rust", "learn-rust"}

    folder = "converged/topics"
    assert topic_name(["2026-12-04", "2026", "12-05", "Rust plans"], folder, {}, is_note, bool) == (
        "converged/topics/rust-plans.md",
        "Rust plans",
    )
    assert (
        topic_name(["Rust", "learn rust"], folder, {}, is_note, bool)[0]
        == "converged/topics/rust-2.md"
    )
    # an existing file named the same but for case is the file to write to
    assert (
        topic_name(["shell"], folder, existing, is_note, lambda rel: True)[0]
        == "converged/topics/Shell.md"
    )
    assert (
        not names_a_topic("2026-12-04") and not names_a_topic("2026") and names_a_topic("q3-plan")
    )


def test_a_new_topic_file_is_summarised_by_its_name_not_a_statement(make_vault):
    root = make_vault({"n.md": "I decided to learn Rust this winter.\n"}, config_yaml=EN)
    _, files, _ = run(root, [note_with(root, "n.md", [(1, "decision")])])
    [(rel, content)] = files.items()
    assert rel == "converged/topics/rust.md"
    assert 'summary: "Rust"' in content


def test_a_note_whose_name_no_wikilink_can_hold_is_quarantined_with_the_reason(make_vault):
    """The scan puts it aside before any engine sees it (tests/converge/test_quarantine.py);
    the engine's own check (a name no wikilink can hold is deferred) stays behind that."""
    root = make_vault({}, config_yaml=EN, git=True)
    [result] = converge_days(
        root, [("2026-12-04", {"C# tips": "I prefer LINQ over loops.\n", "ok": "I prefer tea.\n"})]
    )
    assert any("C# tips.md is quarantined" in w and "'#'" in w for w in result.warnings)
    assert "rename the note" in " ".join(result.warnings)
    assert result.converged == ["ok.md"]


def test_a_line_holding_html_waits_for_a_model(make_vault):
    root = make_vault({}, config_yaml=EN, git=True)
    [result] = converge_days(
        root,
        [
            (
                "2026-12-04",
                {
                    "2026-12-04 notes": "I prefer <kbd>Ctrl</kbd>+<kbd>K</kbd> for search\nI prefer tea.\n"
                },
            )
        ],
    )
    assert [s.core for s in layer(root)["converged/core/profile.md"]] == ["I prefer tea"]
    [deferred] = result.deferred
    assert deferred["lines"] == [1] and "would not read back" in deferred["reason"]


def test_a_rewrite_whose_trace_would_not_read_back_is_added_instead(make_vault):
    """An old wording with an unclosed bracket would end its trace early (the validator would
    read the rest as the statement's words): the change is added beside it instead."""
    profile = (
        "---\nsummary: me\n---\n# Profile\n\n- I prefer tea (green, mostly (source: [[old]])\n"
    )
    root = make_vault(
        {
            "converged/core/profile.md": profile,
            "archive/old.md": "x\n",
            "n.md": "Actually I prefer coffee, not tea.\n",
        },
        config_yaml=EN,
    )
    _, files, _ = run(root, [note_with(root, "n.md", [(1, "correction")])])
    content = files["converged/core/profile.md"]
    assert "- I prefer tea (green, mostly (source: [[old]])" in content
    assert "- I prefer coffee (source: [[n]])" in content


def test_a_statement_said_again_after_its_rewrite_keeps_the_notes_it_came_from(make_vault):
    """A pass rewrites "zsh" into "bash", and a later note of the same pass says "zsh" again:
    the statement it adds cites the notes the old one came from too (rule 3)."""
    topic = "---\nsummary: Shell\n---\n# Shell\n\n- I use zsh as my shell (source: [[old]])\n"
    root = make_vault(
        {
            "converged/topics/shell.md": topic,
            "archive/old.md": "x\n",
            "a.md": "I switched from zsh to bash as my shell.\n",
            "b.md": "I decided to use zsh as my shell.\n",
        },
        config_yaml=EN,
    )
    notes = [
        note_with(root, "a.md", [(1, "decision")], mtime_ns=1),
        note_with(root, "b.md", [(1, "decision")], mtime_ns=2),
    ]
    _, files, _ = run(root, notes)
    content = files["converged/topics/shell.md"]
    assert "- I use zsh as my shell (source: [[old]], [[b]])" in content
    assert "- I use bash as my shell (updated 2026-11-29, was: I use zsh as my shell)" in content


def test_a_trace_that_would_repeat_an_older_one_is_dated_by_the_pass(make_vault):
    """Back and forth within one day's note: a new trace of the note's date and an old wording
    memory already holds a trace of would be read as that old trace; it takes the pass date."""
    topic = (
        "---\nsummary: 前端\n---\n# 前端\n\n"
        "- 用 Svelte 写前端（更新于 2026-11-20，原为：用 React 写前端（更新于 2026-11-20，原为：用 Svelte 写前端））"
        "（来源：[[2026-11-20 日记]]）\n"
    )
    root = make_vault(
        {
            "converged/topics/前端.md": topic,
            "archive/2026-11/2026-11-20 日记.md": "x\n",
            "2026-11-20 随手记.md": "改用 Vue，不再用 Svelte\n",
        }
    )
    _, files, _ = run(root, [note_with(root, "2026-11-20 随手记.md", [(1, "decision")])])
    line = next(x for x in files["converged/topics/前端.md"].split("\n") if "Vue" in x)
    core, _, traces = split_statement(line)
    assert core == "用 Vue 写前端" and traces[0].date == DATE


def test_the_same_inputs_give_the_same_reply_after_every_change(make_vault):
    files = {
        "converged/core/profile.md": DUTCH,
        "archive/old.md": "x\n",
        "n.md": "I meant 3 sessions a week, not 2\n",
        **OLD_NOTES,
    }
    root = make_vault(files, config_yaml=EN)
    first = run(root, [note_with(root, "n.md", [(1, "correction")])], originals_of(root))[0]
    second = run(root, [note_with(root, "n.md", [(1, "correction")])], originals_of(root))[0]
    assert first == second
