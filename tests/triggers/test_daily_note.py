"""`cmem note` writes where Obsidian keeps today's daily note (issue 44): the folder, name format
and template of the core Daily notes plugin or of Periodic Notes, under the heading the user
chose; a Templater template is not run; without daily-notes settings, the capture note as before.
Dates are fixed (`now=`), so nothing here depends on the day the tests run."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from cmem.triggers.capture import capture_note, with_line
from cmem.vault.layers import open_vault
from cmem.vault.moment import date_in_name, fill_core_template, format_moment, note_date
from para_vault import DAILY_FOLDER, FILES, TEMPLATES
from support import copy_vault, run_cmem, vault_template, write_files

NOW = datetime(2026, 12, 3, 9, 5, tzinfo=timezone.utc)
TODAY = f"{DAILY_FOLDER}/2026/12/2026-12-03.md"


def _adopted(root) -> None:
    write_files(root, FILES)
    done = run_cmem("init", str(root), "--lang", "en")
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return vault_template(tmp_path_factory, _adopted)


@pytest.fixture
def para(template, tmp_path):
    return copy_vault(template, tmp_path / "para")


def _config(root, extra: str) -> None:
    with open(root / ".cmem/config.yaml", "a", encoding="utf-8") as handle:
        handle.write(extra)


def test_note_writes_into_todays_daily_note_made_from_its_template(para):
    _config(para, '\ncapture:\n  heading: "## Log"\n')
    captured = capture_note(open_vault(para), "switched the NAS to ZFS", now=NOW)
    assert (captured.rel, captured.created, captured.daily) == (TODAY, True, True)
    text = (para / TODAY).read_text("utf-8")
    # the core template's variables filled in for the note's day
    assert text.startswith(
        "---\ndate: 2026-12-03\ntags: [daily]\n---\n# Thursday, December 3rd 2026\n"
    )
    assert text.endswith("## Log\n- 09:05 switched the NAS to ZFS\n")
    assert text.splitlines()[captured.line - 1] == "- 09:05 switched the NAS to ZFS"
    # the next line goes under the same heading, before a section the user added after it
    with open(para / TODAY, "a", encoding="utf-8") as handle:
        handle.write("\n## Evening\nTired.\n")
    later = capture_note(open_vault(para), "backup restored fine", now=NOW.replace(hour=10))
    lines = (para / TODAY).read_text("utf-8").splitlines()
    assert lines[later.line - 1] == "- 10:05 backup restored fine"
    assert lines[later.line - 2] == "- 09:05 switched the NAS to ZFS"
    assert lines[later.line :] == ["", "## Evening", "Tired."]


def test_the_heading_is_added_at_the_end_when_the_note_has_none(para):
    _config(para, '\ncapture:\n  heading: "### Captured"\n')
    write_files(para, {TODAY: "# Thursday\n\nSome words.\n"})
    captured = capture_note(open_vault(para), "tea, not coffee, after 3 pm", now=NOW)
    assert not captured.created
    assert (para / TODAY).read_text("utf-8") == (
        "# Thursday\n\nSome words.\n\n### Captured\n- 09:05 tea, not coffee, after 3 pm\n"
    )


def test_the_cli_says_where_it_noted(para):
    done = run_cmem("note", "--json", "--vault", str(para), "a line")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["daily"] is True and data["note"].startswith(DAILY_FOLDER + "/")
    assert (para / data["note"]).read_text("utf-8").endswith(" a line\n")


def test_a_templater_template_is_not_run_and_the_user_is_told(para):
    settings = {
        "folder": DAILY_FOLDER,
        "format": "YYYY/MM/YYYY-MM-DD",
        "template": f"{TEMPLATES}/Weekly",
    }
    write_files(para, {".obsidian/daily-notes.json": json.dumps(settings)})
    captured = capture_note(open_vault(para), "x", now=NOW)
    assert captured.daily and "Templater" in captured.notice
    assert "<%" not in (para / TODAY).read_text("utf-8")


def test_periodic_notes_settings_win_and_their_format_names_the_note(para):
    write_files(
        para,
        {
            ".obsidian/plugins/periodic-notes/data.json": json.dumps(
                {
                    "daily": {
                        "enabled": True,
                        "folder": DAILY_FOLDER,
                        "format": "YYYY/MM/YYYY-MM-DD ddd",
                    }
                }
            )
        },
    )
    captured = capture_note(open_vault(para), "x", now=NOW)
    assert captured.rel == f"{DAILY_FOLDER}/2026/12/2026-12-03 Thu.md"
    assert (para / captured.rel).read_text("utf-8") == "- 09:05 x\n"


def test_a_daily_note_cmem_would_not_read_is_not_written(para):
    """The daily folder is no divergent input (the user declined it at init): the line goes to
    the capture note, which is read, and the user learns how to change that."""
    config = (para / ".cmem/config.yaml").read_text("utf-8")
    (para / ".cmem/config.yaml").write_text(config.replace(f'"{DAILY_FOLDER}/**", ', ""), "utf-8")
    captured = capture_note(open_vault(para), "x", now=NOW)
    assert captured.rel == "2026-12-03 notes.md" and not captured.daily
    assert "no divergent folder" in captured.notice and "extra_folders" in captured.notice
    assert not (para / TODAY).exists()


def test_without_daily_notes_settings_the_capture_note_is_as_before(make_vault):
    root = make_vault({"Home.md": "# Home\n"}, config_yaml="language: en\n")
    captured = capture_note(open_vault(root), "x", now=NOW)
    assert (captured.rel, captured.daily, captured.notice) == ("2026-12-03 notes.md", False, "")
    assert (root / captured.rel).read_text("utf-8") == "# 2026-12-03 notes\n\n- 09:05 x\n"
    # and daily_note: false keeps it so in a vault that has daily notes
    write_files(root, {".obsidian/daily-notes.json": '{"folder": ""}'})
    assert capture_note(open_vault(root), "y", now=NOW).rel == "2026-12-03.md"
    (root / ".cmem/config.yaml").write_text(
        "language: en\ncapture:\n  daily_note: false\n", "utf-8"
    )
    assert capture_note(open_vault(root), "z", now=NOW).rel == "2026-12-03 notes.md"


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("YYYY-MM-DD", "2024-04-05"),
        ("YYYY/MM/YYYY-MM-DD", "2024/04/2024-04-05"),
        ("DD.MM.YY, ddd", "05.04.24, Fri"),
        ("dddd, MMMM Do YYYY", "Friday, April 5th 2024"),
        ("MMM D [at] HH:mm", "Apr 5 at 07:08"),
        ("gggg-[W]ww", "2024-W14"),
        ("YYYYMMDD", "20240405"),
    ],
)
def test_moment_formats(pattern, expected):
    assert format_moment(pattern, datetime(2024, 4, 5, 7, 8)) == expected


def test_core_template_variables():
    when = datetime(2024, 4, 30, 21, 15)
    text = "{{title}} {{date}} {{time}} {{date:ddd}} {{yesterday}} {{tomorrow}} {{date+1d:DD}}"
    assert fill_core_template(text, when, "2024-04-30", "YYYY-MM-DD") == (
        "2024-04-30 2024-04-30 21:15 Tue 2024-04-29 2024-05-01 01"
    )


def test_a_notes_own_date():
    assert str(date_in_name("2024-04-30")) == "2024-04-30"
    assert str(date_in_name("20240430 standup")) == "2024-04-30"
    assert date_in_name("meeting 2024-13-40") is None
    assert str(note_date("standup", "created: 2023-01-02\n", None)) == "2023-01-02"
    assert str(note_date("standup", "", 0.0)) == str(datetime.fromtimestamp(0.0).date())


def test_with_line_keeps_headings_inside_code_fences_out():
    text = "# Day\n```\n## Log\n```\n## Log\n- a\n"
    assert with_line(text, "- b", "## Log") == (text + "- b\n", 7)
