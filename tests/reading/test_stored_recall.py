"""`cmem recall` from stored indexes (reading/recall.py: stored_recall): it prints what a recall
with the indexes brought up to date prints, and only while the index still matches the notes.

Each test changes the memory the way a person or a tool does — an edit in place in the same second
as the stored listing, an edit that keeps size and mtime, a new topic file, a checkout of an older
state, a note added to the archive — and checks the next recall shows it. Whether a call was
answered from the store is read from `python -X importtime` (as in
tests/surfaces/test_stored_answers.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from support import HOUR_AGO, forget_stored, git, settle
from support import run_stored as cmem

TOPIC = Path("converged") / "topics" / "python-tooling.md"


def full(vault: Path, *argv: str) -> str:
    """What the command prints afresh (its stored proof removed first: the index synced)."""
    from cmem.reading.recall import ARCHIVED, VAULT

    for scope in (ARCHIVED, VAULT):
        forget_stored(vault, "recall", (scope,))
    args = [*argv, "--vault", str(vault)]
    code = f"import sys; sys.argv = ['cmem', *{args!r}]; from cmem.cli import main; main()"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def light_modules(vault: Path, *argv: str) -> set[str]:
    args = [*argv, "--vault", str(vault)]
    code = f"import sys; sys.argv = ['cmem', *{args!r}]; from cmem.cli import main; main()"
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True
    )
    return {
        line.split("|")[-1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:")
    }


def warm_recall(vault: Path, *argv: str) -> str:
    settle(vault)
    first, hit = cmem(vault, "recall", *argv)
    assert not hit
    second, hit = cmem(vault, "recall", *argv)
    assert hit, "the second recall should have been answered by the light path"
    if "--json" in argv:  # the first call's index report says it listed the folders (settled)
        assert json.loads(second)["results"] == json.loads(first)["results"]
    else:
        assert second == first
    return second


def settle_later(root: Path) -> None:
    """As `settle`, half an hour back rather than an hour: every time moved, none of them new."""
    when = HOUR_AGO + 1800
    for folder, _dirs, files in os.walk(root):
        for name in files:
            os.utime(os.path.join(folder, name), (when, when), follow_symlinks=False)
        os.utime(folder, (when, when))


def without_seconds(text: str) -> dict:
    data = json.loads(text)
    data["index"].pop("seconds")
    data["index"].pop("listed")  # the full command lists the notes each time; the light one never
    return data


def test_light_recall_prints_what_the_full_command_prints(sample_vault):
    for argv in (
        ("uv",),
        ("python", "tooling", "-n", "2"),
        ("面试",),
        ("--archive", "面试"),
        ("nothing-matches-this",),
    ):
        light = warm_recall(sample_vault, *argv)
        assert light == full(sample_vault, "recall", *argv), argv
    light = warm_recall(sample_vault, "uv", "--json")
    assert without_seconds(light) == without_seconds(full(sample_vault, "recall", "uv", "--json"))
    assert json.loads(light)["index"]["listed"] is False


def test_a_stored_recall_imports_neither_yaml_nor_the_vault_model(sample_vault):
    warm_recall(sample_vault, "python")  # its snippets cite sources, which are stripped
    modules = light_modules(sample_vault, "recall", "python")
    assert "cmem.vault.statements" in modules
    assert "yaml" not in modules and "rich" not in modules
    assert "cmem.vault.layers" not in modules and "cmem.reading.search_index" not in modules
    assert "cmem.vault.config" not in modules


def test_a_memory_file_edited_in_the_same_second_is_found(sample_vault):
    warm_recall(sample_vault, "zanzibar")
    with open(sample_vault / TOPIC, "a", encoding="utf-8") as handle:
        handle.write("\n- zanzibar is the new build server\n")  # now: inside the racy window
    out, hit = cmem(sample_vault, "recall", "zanzibar")
    assert not hit and "zanzibar" in out and "nothing matches" not in out
    again, _ = cmem(sample_vault, "recall", "zanzibar")  # racy: not stored, computed again
    assert again == out


def test_an_edit_that_keeps_size_and_mtime_is_found(sample_vault):
    path = sample_vault / TOPIC
    text = path.read_text(encoding="utf-8")
    warm_recall(sample_vault, "uv")
    word = next(w for w in text.split() if w.isascii() and w.isalpha() and len(w) >= 4)
    path.write_text(text.replace(word, "q" * len(word), 1), encoding="utf-8")  # same size
    os.utime(path, (HOUR_AGO, HOUR_AGO))  # and the mtime set back: only the ctime moved
    out, hit = cmem(sample_vault, "recall", "q" * len(word))
    assert not hit and "q" * len(word) in out


def test_a_new_topic_file_is_found(sample_vault):
    warm_recall(sample_vault, "kumquat")
    (sample_vault / "converged" / "topics" / "fruit.md").write_text(
        "# fruit\n\n- kumquat season starts in winter\n", encoding="utf-8"
    )
    settle_later(sample_vault)  # out of the racy window: the key itself must see the new file
    out, hit = cmem(sample_vault, "recall", "kumquat")
    assert not hit and "converged/topics/fruit.md" in out


def test_checkout_of_an_older_state_is_seen(sample_vault):
    git(sample_vault, "branch", "older")
    (sample_vault / "converged" / "topics" / "fruit.md").write_text(
        "# fruit\n\n- kumquat season starts in winter\n", encoding="utf-8"
    )
    git(sample_vault, "add", "-A")
    git(sample_vault, "commit", "-q", "-m", "a topic")
    assert "fruit.md" in warm_recall(sample_vault, "kumquat")
    git(sample_vault, "checkout", "-q", "older")
    settle_later(sample_vault)
    out, hit = cmem(sample_vault, "recall", "kumquat")
    assert not hit and "nothing matches" in out


def test_a_note_added_to_the_archive_is_found_with_archive(sample_vault):
    warm_recall(sample_vault, "--archive", "kumquat")
    month = next(p for p in (sample_vault / "archive").iterdir() if p.is_dir())
    (month / "late.md").write_text("# late\n\n- kumquat jam recipe\n", encoding="utf-8")
    settle_later(sample_vault)
    out, hit = cmem(sample_vault, "recall", "--archive", "kumquat")
    assert not hit and "late.md" in out


def test_the_light_path_records_read_times_as_the_full_command_does(sample_vault):
    from cmem.vault.layers import machine_dir_for

    warm_recall(sample_vault, "python")
    times = machine_dir_for(sample_vault.resolve()) / "read-times.json"
    times.unlink()
    out, hit = cmem(sample_vault, "recall", "python")
    assert hit
    recorded = json.loads(times.read_text(encoding="utf-8"))
    assert recorded and all(path in out for path in recorded)


def test_a_deleted_index_falls_back_to_the_full_command(sample_vault):
    from cmem.vault.layers import machine_dir_for

    light = warm_recall(sample_vault, "uv")
    for name in os.listdir(machine_dir_for(sample_vault.resolve()) / "index"):
        os.unlink(machine_dir_for(sample_vault.resolve()) / "index" / name)
    out, hit = cmem(sample_vault, "recall", "uv")
    assert not hit and out == light


def test_a_folder_whose_mtime_is_set_back_is_listed_again(sample_vault):
    """The index's own shortcut (folders unchanged: the manifest stands for the listing) looks at
    the folders' ctimes too, which no one can set back."""
    warm_recall(sample_vault, "kumquat")
    (sample_vault / "converged" / "topics" / "fruit.md").write_text(
        "# fruit\n\n- kumquat season starts in winter\n", encoding="utf-8"
    )
    settle(sample_vault)  # every mtime back where it was: only the ctimes moved
    assert "converged/topics/fruit.md" in full(sample_vault, "recall", "kumquat")


def test_the_light_recall_compiles_no_secret_rule_until_a_snippet_needs_one(sample_vault):
    """The ~80 redaction rules (cmem.text.secrets) are compiled on first use: a recall whose
    snippets hold no credential-like literal compiles none of them; one that does compiles what
    it runs."""
    warm_recall(sample_vault, "ruff")  # memory alone holds it: no pending note's URL in a snippet
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # a GitHub token's shape, made up
    code = (
        "import sys\n"
        "from cmem.reading.recall import render_recall, stored_recall\n"
        "from cmem.text.secrets import shown\n"
        "out = shown(render_recall(stored_recall(sys.argv[1], 'ruff', False, 10)))\n"
        "assert 'python-tooling.md' in out, out\n"
        "from cmem.text import secrets\n"
        "rules = [v for v in vars(secrets).values() if isinstance(v, secrets._Lazy)]\n"
        "rules += [p for _, p in secrets._SHAPES] + list(secrets._NEEDLE.values())\n"
        "def compiled():\n"
        "    return sum(rule._compiled is not None for rule in rules)\n"
        "print(len(rules), compiled())\n"
        "print(secrets.redact_secrets(sys.argv[2])[1], compiled())\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(sample_vault), f"deploy with {token}"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (rules, before), (found, after) = [
        map(int, line.split()) for line in result.stdout.split("\n")[:2]
    ]
    assert rules > 50 and before == 0
    assert found == 1 and 0 < after < rules


def test_a_query_after_dashes_takes_the_light_path(sample_vault):
    """Issue 44: `cmem recall -- "QUERY"` (a query that starts with a dash, or any) was handed
    to typer every time."""
    warm_recall(sample_vault, "uv")
    argv = ("--vault", str(sample_vault), "recall", "--", "uv")
    cmem(None, *argv)
    out, hit = cmem(None, *argv)
    assert hit and out == full(sample_vault, "recall", "uv")


def test_the_whole_vault_with_an_adopted_folder_takes_the_light_path(sample_vault):
    """The notes no layer reads are searched by default, and a warm recall of them is answered
    without typer; a new one is seen at the next call."""
    folder = sample_vault / "Resources" / "Travel"
    folder.mkdir(parents=True)
    (folder / "zanzibar.md").write_text("# Zanzibar\n\n- ferry from Dar at 7am\n", "utf-8")
    light = warm_recall(sample_vault, "ferry")
    assert "Resources/Travel/zanzibar.md:3" in light and light == full(
        sample_vault, "recall", "ferry"
    )
    (folder / "ferries.md").write_text("- the ferry to Pemba is slower\n", "utf-8")
    settle_later(sample_vault)
    out, hit = cmem(sample_vault, "recall", "ferry")
    assert not hit and "Resources/Travel/ferries.md" in out


def test_a_templates_folder_named_later_is_left_out_at_once(sample_vault):
    """The templates folder comes from Obsidian's settings, outside the notes the key stats."""
    (sample_vault / "Meta").mkdir()
    (sample_vault / "Meta" / "daily.md").write_text("- ferry checklist\n", "utf-8")
    (sample_vault / ".obsidian").mkdir(exist_ok=True)
    assert "Meta/daily.md" in warm_recall(sample_vault, "ferry")
    # only a file in a dot-folder changes: no note, no folder the key walks
    (sample_vault / ".obsidian" / "templates.json").write_text('{"folder": "Meta"}', "utf-8")
    out, hit = cmem(sample_vault, "recall", "ferry")
    assert not hit and "Meta/daily.md" not in out
