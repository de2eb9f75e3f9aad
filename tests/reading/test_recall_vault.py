"""Issue 44: `cmem recall` covers the whole vault by default, memory first — memory's statements,
then the notes (pending ones marked, an adopted vault's own folders too), the archive only with
--archive; a note's title and headings count; one note does not fill every slot; a question's
function words never outrank its content words; in a conversation, a reply is found through the
question it answers; the notes' index follows edits, deletions and renames."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from cmem.cli import app
from cmem.reading.recall import recall_memory, render_recall
from cmem.vault.layers import open_vault
from support import settle, write_files

runner = CliRunner()
EN = "language: en\n"


def found(root, query, **kwargs):
    return recall_memory(open_vault(root), query, record=False, **kwargs).results


def paths(root, query, **kwargs):
    return [r.hit.path for r in found(root, query, **kwargs)]


def test_memory_ranks_above_a_note_that_matches_as_well(make_vault):
    root = make_vault(
        {
            "converged/topics/db.md": "# Databases\n\n- Chose Postgres for the billing service (source: [[a]])\n",
            "Projects/billing/notes.md": "# Notes\n\nPostgres for billing, a long discussion.\n",
            "2026-12-01 notes.md": "Billing runs on Postgres now.\n",
        },
        config_yaml=EN,
    )
    results = found(root, "postgres billing")
    assert results[0].hit.path == "converged/topics/db.md"
    assert {r.hit.layer for r in results[1:]} == {"unmanaged", "pending"}
    # a note that holds more of the query's words still comes first
    assert paths(root, "postgres billing discussion")[0] == "Projects/billing/notes.md"


def test_pending_notes_are_marked_and_the_archive_is_searched_only_when_asked(make_vault):
    root = make_vault(
        {
            "2026-12-01 notes.md": "The kumquat tree needs repotting in spring.\n",
            "archive/2026-10/old.md": "The kumquat tree was a gift.\n",
        },
        config_yaml=EN,
    )
    recall = recall_memory(open_vault(root), "kumquat", record=False)
    assert [r.hit.path for r in recall.results] == ["2026-12-01 notes.md"]
    assert recall.results[0].to_json()["pending"] is True
    assert "pending note, not yet converged" in render_recall(recall)
    assert paths(root, "kumquat", archive=True) == ["archive/2026-10/old.md"]


def test_dot_folders_templates_and_obsidian_settings_are_never_searched(make_vault):
    root = make_vault(
        {
            ".obsidian/templates.json": '{"folder": "Meta/Templates"}',
            "Meta/Templates/daily.md": "# {{date}}\n\n- zanzibar checklist\n",
            ".trash/gone.md": "zanzibar in the trash\n",
            ".obsidian/snippets/note.md": "zanzibar snippet\n",
            "Resources/travel.md": "# Travel\n\n- Zanzibar in July\n",
        },
        config_yaml=EN,
    )
    assert paths(root, "zanzibar") == ["Resources/travel.md"]


def test_an_empty_note_is_found_by_its_title(make_vault):
    root = make_vault(
        {
            "Resources/Tech/Git-Crypt.md": "",
            "Resources/Tech/Git.md": "# Git\n\n- rebase before merging\n",
        },
        config_yaml=EN,
    )
    (result,) = found(root, "git-crypt")[:1]
    assert result.hit.path == "Resources/Tech/Git-Crypt.md" and result.hit.line == 0
    assert result.to_json()["title"] == "Git-Crypt"
    text = render_recall(recall_memory(open_vault(root), "git-crypt", record=False))
    assert "Resources/Tech/Git-Crypt.md  [note · title]" in text


def test_a_line_is_found_through_its_heading_and_folders(make_vault):
    root = make_vault(
        {
            "Resources/Docker/housekeeping.md": "# Housekeeping\n\n## Orphaned volumes\n\n```bash\ndocker volume prune -f\n```\n",
            "Resources/misc.md": "# Misc\n\n- orphaned cat adopted from the shelter\n",
            "Projects/Move to Lisbon/Checklist.md": "# Checklist\n\n- [ ] register for the NIF\n",
        },
        config_yaml=EN,
    )
    first = found(root, "docker orphaned volumes")[0].hit
    assert (first.path, first.line, first.heading) == (
        "Resources/Docker/housekeeping.md",
        6,
        "Orphaned volumes",
    )
    assert paths(root, "lisbon nif")[0] == "Projects/Move to Lisbon/Checklist.md"


def test_one_note_does_not_fill_every_slot(make_vault):
    many = "# Chess\n\n" + "".join(f"- chess opening number {i}\n" for i in range(8))
    root = make_vault(
        {
            "Hobbies/chess.md": many,
            "Hobbies/club.md": "# Club\n\n- the chess club meets on Tuesdays\n",
            "Daily/2026-11-02.md": "- lost a chess game to Sam\n",
        },
        config_yaml=EN,
    )
    first_three = paths(root, "chess", limit=3)
    assert sorted(first_three) == ["Daily/2026-11-02.md", "Hobbies/chess.md", "Hobbies/club.md"]
    everything = paths(root, "chess", limit=10)
    assert everything[:3] == first_three and everything[3:] == ["Hobbies/chess.md"] * 7


def test_a_question_s_function_words_never_outrank_its_content_words(make_vault):
    root = make_vault(
        {
            "Work/retro.md": "# Retro\n\n- what did we do and what did it do to us, how was it?\n",
            "Work/decisions.md": "# Decisions\n\n- billing database: Postgres, not MySQL\n",
        },
        config_yaml=EN,
    )
    assert paths(root, "what did we decide about the database")[0] == "Work/decisions.md"
    zh = make_vault(
        {
            "笔记/闲聊.md": "- 我的天，你的呢，我们的吧\n",
            "笔记/宠物.md": "- 猫叫年糕，三岁了\n",
        }
    )
    assert paths(zh, "我的猫叫什么名字")[0] == "笔记/宠物.md"
    # a query of function words alone is still a query
    assert paths(root, "what did")[0] == "Work/retro.md"


DIALOGUE = """# Session 3

Caroline: Hi Mel! I went to the support group yesterday.
Melanie: That's great. How long have you been married?
Caroline: 5 years already! Time flies.
Melanie: I have been married for ages too, it was a long road.
Caroline: What's your new dog called?
Melanie: Pepper, she chews everything.
"""


def test_a_reply_is_found_through_the_question_it_answers(make_vault):
    root = make_vault({"Chats/Caroline and Mel.md": DIALOGUE}, config_yaml=EN)
    first = found(root, "How long has Caroline been married?")[0]
    assert first.hit.line == 5 and first.hit.text.startswith("Caroline: 5 years")
    data = first.to_json()
    assert data["answers"] == "That's great. How long have you been married?"
    assert "answering: That's great. How long have you been married?" in render_recall(
        recall_memory(open_vault(root), "How long has Caroline been married?", record=False)
    )
    assert found(root, "name of Melanie's dog")[0].hit.line == 8
    qa = make_vault(
        {"Notes/interview.md": "# Prep\n\nQ: Which database for billing?\nA: Postgres 16.\n"},
        config_yaml=EN,
    )
    assert found(qa, "billing database")[0].hit.line == 4


def test_a_session_note_s_turn_answers_the_agent_text_quoted_before_it(make_vault):
    session = (
        "# claude-code session · tidepool · 2026-11-30\n\n"
        "**user · t1** · 2026-11-30 14:02 <!-- turn 3f2a9c1e7b0d4a61 -->\n"
        "set up the test runner\n\n^t1\n\n"
        "agent, before t2 (context, not a source):\n"
        "~~~text\n…I'll install vitest with npm. Shall I go ahead?\n~~~\n\n"
        "**user · t2** · 2026-11-30 14:03 <!-- turn 9b1d0c2e7b0d4a61 -->\n"
        "no, we use pnpm here\n\n^t2\n"
    )
    root = make_vault({"sessions/2026-11-30 claude-code tidepool 7f3c.md": session}, EN)
    results = found(root, "install vitest with npm")
    assert results and results[0].hit.text == "no, we use pnpm here"
    assert all("Shall I go ahead" not in r.hit.text for r in results)  # the agent is no source


def test_lines_of_notes_that_are_no_conversation_answer_nothing(make_vault):
    root = make_vault(
        {"Projects/plan.md": "Date: Monday\nStatus: open\nOwner: Sam\nTags: ops\nWhy: billing?\n"},
        config_yaml=EN,
    )
    assert all(not r.hit.context for r in found(root, "billing"))


def test_the_notes_index_follows_edits_deletions_and_renames(make_vault):
    root = make_vault(
        {
            "Areas/garden.md": "# Garden\n\n- plant the tomatoes after the last frost\n",
            "Areas/car.md": "# Car\n\n- the timing belt was replaced in May\n",
        },
        config_yaml=EN,
    )
    assert paths(root, "tomatoes") == ["Areas/garden.md"]
    (root / "Areas/garden.md").write_text("# Garden\n\n- sow the peppers in March\n", "utf-8")
    (root / "Areas/car.md").rename(root / "Areas/vehicle.md")
    recall = recall_memory(open_vault(root), "peppers", record=False)
    assert [r.hit.path for r in recall.results] == ["Areas/garden.md"]
    assert (recall.sync.updated, recall.sync.added, recall.sync.removed) == (1, 1, 1)
    assert not found(root, "tomatoes")
    assert paths(root, "timing belt") == ["Areas/vehicle.md"]
    (root / "Areas/vehicle.md").unlink()
    assert not found(root, "timing belt")
    quiet = recall_memory(open_vault(root), "peppers", record=False).sync
    assert (quiet.added, quiet.updated, quiet.removed) == (0, 0, 0)


def test_a_first_build_of_many_notes_reports_its_progress(make_vault, monkeypatch):
    from cmem.reading import search_index

    monkeypatch.setattr(search_index, "PROGRESS_FROM", 3)
    root = make_vault({f"Areas/note {i}.md": f"- line {i}\n" for i in range(5)}, EN)
    settle(root)  # an hour old: not read again to make sure (the racy rule)
    heard: list[tuple[int, int]] = []
    recall_memory(open_vault(root), "line", record=False, progress=lambda *a: heard.append(a))
    assert heard == [(i, 5) for i in range(5)]
    heard.clear()
    recall_memory(open_vault(root), "line", record=False, progress=lambda *a: heard.append(a))
    assert heard == []  # nothing to index: nothing to say
    out = runner.invoke(app, ["recall", "line", "--rebuild", "--vault", str(root)])
    assert "indexed 0 of 5 notes" in out.output


def test_json_keeps_its_stable_fields_and_adds_line_title_and_pending(make_vault):
    root = make_vault({"Areas/garden.md": "# Garden\n\n- plant tomatoes\n"}, EN)
    out = runner.invoke(app, ["recall", "tomatoes", "--json", "--vault", str(root)])
    data = json.loads(out.output)
    (result,) = data["results"]
    assert {"path", "score", "snippet", "layer"} <= set(result)
    assert (result["line"], result["title"], result["pending"]) == (3, "garden", False)
    assert data["searched"] == "vault"


def test_include_unmanaged_false_leaves_the_adopted_folders_out(make_vault):
    root = make_vault(
        {"Areas/garden.md": "- plant tomatoes\n", "2026-12-01 notes.md": "tomatoes on sale\n"},
        "language: en\nrecall:\n  include_unmanaged: false\n",
    )
    assert paths(root, "tomatoes") == ["2026-12-01 notes.md"]
    write_files(root, {".cmem/config.yaml": EN})
    assert sorted(paths(root, "tomatoes")) == ["2026-12-01 notes.md", "Areas/garden.md"]


def test_a_newcomer_finds_a_fact_in_an_adopted_obsidian_vault(tmp_path):
    """The issue's first step, as the README has it: `cmem init` on an Obsidian vault laid out in
    PARA folders (daily notes under Journal/Daily/YYYY/MM/, templates, callouts), then `cmem
    recall` finds an old note's fact, a callout's answer, an empty note by its title, and never a
    template."""
    root = tmp_path / "Vault"
    write_files(
        root,
        {
            ".obsidian/templates.json": '{"folder": "99 - META/Templates"}',
            ".obsidian/daily-notes.json": '{"folder": "03 - AREAS/Journal/Daily"}',
            "99 - META/Templates/Daily.md": "# <% tp.date.now() %>\n\n> [!tip] Dentist\n> docker\n",
            "03 - RESOURCES/Tech/Docker/Housekeeping.md": "# Housekeeping\n\n## Dangling volumes\n\n"
            "```bash\ndocker volume prune -f\n```\n",
            "03 - RESOURCES/Tech/Git/Git-Crypt.md": "",
            "03 - AREAS/Journal/Daily/2024/03/2024-03-12.md": "# 2024-03-12\n\n> [!tip] Dentist\n"
            "> The dentist moved my check-up to Thursday at 3pm.\n",
            "01 - PROJECTS/Garden/Tomatoes.md": "# Tomatoes\n\n- plant out after the last frost\n",
        },
    )
    assert runner.invoke(app, ["init", str(root), "--lang", "en", "--no-daily"]).exit_code == 0

    def first(query: str) -> dict:
        out = runner.invoke(app, ["recall", query, "--json", "--vault", str(root)])
        assert out.exit_code == 0, out.output
        results = json.loads(out.output)["results"]
        assert all("/Templates/" not in r["path"] for r in results)
        return results[0]

    assert first("docker cleanup orphaned volumes")["path"].endswith("Docker/Housekeeping.md")
    dentist = first("when is the dentist")
    assert dentist["path"].endswith("2024-03-12.md") and "Thursday" in dentist["text"]
    assert first("git-crypt")["title"] == "Git-Crypt"
    assert first("tomato frost")["layer"] == "unmanaged"
