"""Adopting a real vault with folders (issue 14): `folder/**` divergent folders, what is left
out counted by folder with the setting that would include it, the daily-notes folder found
from Obsidian's settings, and the first snapshot of adopted notes named as such."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cmem.errors import ConfigError
from cmem.scan.scanner import scan_vault
from cmem.vault.layers import DIVERGENT, open_vault
from support import git, write_files

ADOPTED = {
    "Home.md": "# Home\n",
    "journal/2026-11-27.md": "- From now on always run tests before pushing.\n",
    "journal/2026/11/2026-11-28.md": "- Actually it's Python 3.13 for new projects, not 3.12.\n",
    "journal/.trash-like/old.md": "- never read\n",
    "Projects/cmem/plan.md": "# plan\n- I prefer small commits.\n",
    "Projects/site.md": "# site\n",
    "Reading/books.md": "# books\n",
    ".obsidian/app.json": "{}\n",
}


def test_a_recursive_divergent_folder_reads_every_folder_below_it(make_vault):
    root = make_vault(
        ADOPTED, config_yaml="language: en\ndivergent:\n  extra_folders: [journal/**]\n"
    )
    vault = open_vault(root)
    rels = [n.rel for n in vault.list_layer(DIVERGENT)]
    assert rels == ["Home.md", "journal/2026-11-27.md", "journal/2026/11/2026-11-28.md"]
    assert vault.layer_of("journal/2026/11/2026-11-28.md") == DIVERGENT
    assert vault.layer_of("Projects/cmem/plan.md") is None
    pending = {p.rel for p in scan_vault(vault).pending}
    assert {"journal/2026-11-27.md", "journal/2026/11/2026-11-28.md"} <= pending


def test_a_plain_divergent_folder_stays_flat_and_other_patterns_are_refused(make_vault):
    root = make_vault(ADOPTED, config_yaml="language: en\ndivergent:\n  extra_folders: [journal]\n")
    assert "journal/2026/11/2026-11-28.md" not in [
        n.rel for n in open_vault(root).list_layer(DIVERGENT)
    ]
    (root / ".cmem/config.yaml").write_text("divergent:\n  extra_folders: ['jour*']\n", "utf-8")
    with pytest.raises(ConfigError, match="folder/\\*\\*"):
        open_vault(root)
    (root / ".cmem/config.yaml").write_text(
        "divergent:\n  extra_folders: ['converged/**']\n", "utf-8"
    )
    with pytest.raises(ConfigError, match="overlap"):
        open_vault(root)


def _cmem(*args, cwd=None):
    env = {k: v for k, v in os.environ.items() if k not in ("CMEM_VAULT", "CMEM_LLM")}
    return subprocess.run(
        [sys.executable, "-m", "cmem", *args],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=120,
        cwd=cwd,
    )


def test_status_and_doctor_count_what_no_layer_reads_with_the_setting_to_include_it(make_vault):
    root = make_vault(ADOPTED, config_yaml="language: en\n", git=True)
    status = json.loads(_cmem("status", "--json", "--vault", str(root)).stdout)
    unmanaged = {f["folder"]: f for f in status["unmanaged"]}
    assert unmanaged["journal"] == {
        "folder": "journal",
        "notes": 2,
        "entry": "journal/**",
        "setting": 'divergent.extra_folders: ["journal/**"]',
    }
    assert (
        unmanaged["Projects"]["notes"] == 2
        and unmanaged["Reading"]["setting"] == 'divergent.extra_folders: ["Reading"]'
    )
    assert ".obsidian" not in unmanaged and "converged" not in unmanaged
    text = _cmem("status", "--vault", str(root)).stdout
    assert (
        "not read: 5 notes outside every layer" in text
        and 'to read them: divergent.extra_folders: ["journal/**"]' in text
    )
    doctor = _cmem("doctor", "--vault", str(root))
    assert "all clear" not in doctor.stdout
    assert (
        "5 notes in 3 folders are outside every layer" in doctor.stdout
        and 'journal/ (2: divergent.extra_folders: ["journal/**"])' in doctor.stdout
    )

    # following the advice brings the journal in, and the count goes down
    (root / ".cmem/config.yaml").write_text(
        "language: en\ndivergent:\n  extra_folders: [journal/**]\n", "utf-8"
    )
    status = json.loads(_cmem("status", "--json", "--vault", str(root)).stdout)
    assert {f["folder"] for f in status["unmanaged"]} == {"Projects", "Reading"}
    assert status["layers"]["divergent"]["notes"] == 3


@pytest.mark.parametrize(
    ("settings", "entry"),
    [
        (
            {".obsidian/daily-notes.json": '{"folder": "journal", "format": "YYYY-MM-DD"}'},
            "journal/**",
        ),
        (
            {
                ".obsidian/plugins/periodic-notes/data.json": '{"daily": {"enabled": true, "folder": "journal/"}}'
            },
            "journal/**",
        ),
        ({".obsidian/daily-notes.json": '{"folder": "Reading"}'}, "Reading"),
    ],
)
def test_init_finds_the_daily_notes_folder_and_reads_it(tmp_path, settings, entry):
    root = tmp_path / "vault"
    write_files(root, {**ADOPTED, **settings})
    done = _cmem("init", str(root), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert any("Obsidian's daily-notes setting" in note for note in report["notes"])
    vault = open_vault(root)
    # the daily-notes folder, then the session notes' folder every new vault has
    assert vault.config.extra_divergent == (entry.removesuffix("/**"), "sessions")
    rels = {n.rel for n in vault.list_layer(DIVERGENT)}
    if entry == "journal/**":
        assert {"journal/2026-11-27.md", "journal/2026/11/2026-11-28.md"} <= rels
    else:
        assert "Reading/books.md" in rels


@pytest.mark.parametrize(
    ("settings", "entry"),
    [
        # a new vault: Obsidian's setting names the folder, nothing is in it yet
        (
            {
                ".obsidian/daily-notes.json": '{"folder": "Journal/Daily", "format": "YYYY/MM/YYYY-MM-DD"}'
            },
            "Journal/Daily/**",
        ),
        ({".obsidian/daily-notes.json": '{"folder": "Journal/Daily"}'}, "Journal/Daily"),
        (
            {
                ".obsidian/plugins/periodic-notes/data.json": json.dumps(
                    {
                        "activeCalendarSet": "Work",
                        "calendarSets": [
                            {"id": "Default", "day": {"enabled": True, "folder": "Home"}},
                            {
                                "id": "Work",
                                "day": {
                                    "enabled": True,
                                    "folder": "Work/Days",
                                    "format": "YYYYMMDD",
                                },
                            },
                        ],
                    }
                )
            },
            "Work/Days",
        ),
    ],
)
def test_init_reads_the_daily_notes_folder_while_it_is_still_empty(tmp_path, settings, entry):
    root = tmp_path / "vault"
    write_files(root, {"Home.md": "# Home\n", **settings})
    done = _cmem("init", str(root), "--lang", "en", "--json")
    assert done.returncode == 0, done.stderr
    vault = open_vault(root)
    folder = entry.removesuffix("/**")
    assert vault.config.extra_divergent == (folder, "sessions")
    assert vault.config.recursive_divergent == ({folder} if entry.endswith("/**") else set())
    # every folder the config names exists, so nothing warns of one missing
    created = json.loads(done.stdout)["created"]
    assert f"{folder}/" in created and "sessions/" in created
    assert (root / folder).is_dir() and (root / "sessions").is_dir()


def test_init_never_offers_a_templates_folder(tmp_path):
    root = tmp_path / "vault"
    write_files(
        root,
        {
            "Templates/Daily.md": "# {{date}}\n",
            "Meta/Templates/Weekly.md": "<% tp.date.now() %>\n",
            ".obsidian/daily-notes.json": '{"folder": "Templates"}',
            ".obsidian/plugins/journals/data.json": '{"folder": "Meta/Templates"}',
        },
    )
    assert _cmem("init", str(root), "--lang", "en").returncode == 0
    assert open_vault(root).config.extra_divergent == ("sessions",)
    status = json.loads(_cmem("status", "--json", "--vault", str(root)).stdout)
    assert status["unmanaged"] == []  # templates are no notes of the user's to adopt


def test_init_without_daily_or_with_no_daily_reads_only_the_root(tmp_path):
    root = tmp_path / "vault"
    write_files(root, {**ADOPTED, ".obsidian/daily-notes.json": '{"folder": "journal"}'})
    assert _cmem("init", str(root), "--no-daily", "--lang", "en").returncode == 0
    # only the session notes' folder, which every new vault has
    assert open_vault(root).config.extra_divergent == ("sessions",)
    plain = tmp_path / "plain"
    write_files(plain, ADOPTED)  # no Obsidian setting names a daily folder
    assert _cmem("init", str(plain), "--lang", "en").returncode == 0
    assert open_vault(plain).config.extra_divergent == ("sessions",)


def test_the_first_snapshot_of_an_adopted_vault_says_so(tmp_path):
    root = tmp_path / "vault"
    write_files(
        root, {**ADOPTED, "2026-11-29 notes.md": "- From now on always write tests first.\n"}
    )
    assert _cmem("init", str(root), "--lang", "en").returncode == 0
    done = _cmem("converge", "--engine", "builtin", "--vault", str(root))
    assert done.returncode == 0, done.stderr
    subjects = git(root, "log", "--format=%s").splitlines()
    snapshot = next(s for s in subjects if s.startswith("cmem: snapshot"))
    assert (
        "first commit of" in snapshot
        and "adopted note" in snapshot
        and "edited by hand" not in snapshot
    )
    # a later edit of a committed note is the user's edit
    with open(root / "Home.md", "a", encoding="utf-8") as handle:
        handle.write("- Actually it's Python 3.13, not 3.12.\n")
    assert _cmem("converge", "--engine", "builtin", "--vault", str(root)).returncode == 0
    latest = next(
        s for s in git(root, "log", "--format=%s").splitlines() if s.startswith("cmem: snapshot")
    )
    assert latest.endswith("(1 file edited by hand)"), latest


def test_init_can_track_the_whole_vault_and_remembers_it(tmp_path):
    root = tmp_path / "vault"
    write_files(root, {**ADOPTED, "attachments/pic.png": b"\x89PNG\r\n\x1a\n"})
    done = _cmem("init", str(root), "--lang", "en", "--track-all", "--json")
    assert done.returncode == 0, done.stderr
    assert any("whole vault is tracked" in note for note in json.loads(done.stdout)["notes"])
    assert open_vault(root).config.track_all is True
    tracked = set(git(root, "ls-files").splitlines())
    assert {
        "Projects/cmem/plan.md",
        "Reading/books.md",
        "attachments/pic.png",
        "journal/2026/11/2026-11-28.md",
    } <= tracked
    assert ".obsidian/app.json" in tracked and not any(
        p.startswith(".obsidian/workspace") for p in tracked
    )
    assert git(root, "status", "--porcelain").strip() == ""
    assert "first commit of" in git(root, "log", "-1", "--format=%s")
    # remembered: a later edit anywhere is committed by the next pass's snapshot
    (root / "Reading/books.md").write_text("# books\n- Dune\n", "utf-8")
    assert _cmem("converge", "--engine", "builtin", "--vault", str(root)).returncode == 0
    assert git(root, "status", "--porcelain").strip() == ""


def test_without_track_all_only_cmems_files_are_committed(tmp_path):
    root = tmp_path / "vault"
    write_files(root, ADOPTED)
    assert _cmem("init", str(root), "--lang", "en").returncode == 0
    assert open_vault(root).config.track_all is False
    assert "Reading/books.md" not in git(root, "ls-files").splitlines()


def test_recall_searches_the_notes_no_layer_reads_unless_turned_off(make_vault):
    """Issue 44: an adopted vault's own folders are searched by default, read only, after
    memory's statements; `recall.include_unmanaged: false` leaves them out."""
    files = {
        **ADOPTED,
        "Reading/books.md": "# books\n- Finished Dune by Frank Herbert; the sandworms stay with me.\n",
        "converged/topics/reading.md": "---\nsummary: reading\n---\n# Reading\n\n- Likes long science fiction like Dune (source: [[x]])\n",
    }
    root = make_vault(files, config_yaml="language: en\n", git=True)
    before = (root / "Reading/books.md").read_bytes()
    both = json.loads(_cmem("recall", "Dune", "--json", "--vault", str(root)).stdout)
    layers = {r["path"]: r["layer"] for r in both["results"]}
    assert layers == {"converged/topics/reading.md": "situational", "Reading/books.md": "unmanaged"}
    assert both["results"][0]["path"] == "converged/topics/reading.md"  # memory first
    assert "sandworms" not in _cmem("recall", "Dune", "--vault", str(root), "--archive").stdout
    text = _cmem("recall", "sandworms", "--vault", str(root)).stdout
    assert "Reading/books.md:2" in text and "[note · books]" in text
    assert (root / "Reading/books.md").read_bytes() == before  # read only
    # a new unmanaged note is found at the next recall
    (root / "Projects/dune-notes.md").write_text("- Dune re-read planned\n", "utf-8")
    again = json.loads(_cmem("recall", "Dune", "--json", "--vault", str(root)).stdout)
    assert "Projects/dune-notes.md" in {r["path"] for r in again["results"]}
    (root / ".cmem/config.yaml").write_text(
        "language: en\nrecall:\n  include_unmanaged: false\n", "utf-8"
    )
    plain = json.loads(_cmem("recall", "Dune", "--json", "--vault", str(root)).stdout)
    assert {r["path"] for r in plain["results"]} == {"converged/topics/reading.md"}


def test_init_asks_about_tracking_a_vault_whose_notes_are_all_in_folders(tmp_path):
    """The question is asked when the folder holds anything of the user's — notes at the top or
    only folders of them (most real vaults) — and not for an empty folder or one with only
    hidden entries (.obsidian, .git)."""
    from cmem.setup.init import holds_user_files

    only_folders = tmp_path / "folders"
    (only_folders / "Projects").mkdir(parents=True)
    (only_folders / "Projects" / "a.md").write_text("# a\n", "utf-8")
    (only_folders / ".obsidian").mkdir()
    assert holds_user_files(only_folders)
    hidden_only = tmp_path / "hidden"
    (hidden_only / ".obsidian").mkdir(parents=True)
    assert not holds_user_files(hidden_only)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert not holds_user_files(empty)


def _every_unmanaged_note(vault) -> list[str]:
    """The rule itself, file by file: every Markdown note of the vault outside the dot, never-read
    and template folders that no layer reads, is not ignored, is not the checklist and is no link
    (the reference `unmanaged_notes` must equal, however it walks)."""
    from cmem.text.names import is_undecodable
    from cmem.vault.config import NEVER_READ_DIRS
    from cmem.vault.obsidian import template_folders

    root = str(vault.root)
    templates = template_folders(vault.root)
    found = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in NEVER_READ_DIRS]
        rel_folder = os.path.relpath(folder, root).replace(os.sep, "/")
        if rel_folder == "." or any(
            rel_folder == t or rel_folder.startswith(t + "/") for t in templates
        ):
            continue
        for name in names:
            rel = f"{rel_folder}/{name}"
            if (
                name.endswith(".md")
                and not name.startswith(".")
                and not is_undecodable(name)
                and vault.layer_of(rel) is None
                and not vault.is_ignored(rel)
                and rel != vault.checklist_rel
                and not os.path.islink(os.path.join(folder, name))
            ):
                found.append(rel)
    return sorted(found)


@pytest.mark.parametrize(
    "config_yaml",
    [
        "language: en\n",
        "language: en\nlayers:\n  resident: memory/core\n  situational: memory/topics\n"
        "  archive: old\ndivergent:\n  extra_folders: [journal/**, Inbox]\n",
        "language: en\nignore: ['Projects/secret*', 'converged/**']\n",
    ],
)
def test_unmanaged_notes_follow_the_rule_in_every_folder(make_vault, config_yaml):
    """Layer folders (and every folder below them) are skipped whole by the walk: the result is
    still exactly the file-by-file rule, wherever notes lie — deep in the archive and the topics,
    beside the layer folders, in folders named like a layer's prefix."""
    from cmem.vault.layers import open_vault
    from cmem.vault.unmanaged import unmanaged_notes

    files = {}
    for folder in (
        "converged",
        "converged/core",
        "converged/core/deep",
        "converged/topics/a/b",
        "converged/coreish",
        "archive",
        "archive/2026-11",
        "archive/2026-11/x",
        "archived",
        "memory",
        "memory/core",
        "memory/topics/t",
        "memory/coreish",
        "old/2026-10",
        "older",
        "journal/2026/11",
        "Inbox",
        "Inbox/sub",
        "Projects",
        "Projects/sub",
        ".obsidian",
        "node_modules",
    ):
        for name in ("note.md", "secret plan.md", "data.txt"):
            files[f"{folder}/{name}"] = "- a note\n"
    files["archive/ARCHIVE-CHECKLIST.md"] = "- [ ] x\n"
    files["old/ARCHIVE-CHECKLIST.md"] = "- [ ] x\n"
    root = make_vault(files, config_yaml=config_yaml)
    vault = open_vault(root)

    expected = _every_unmanaged_note(vault)
    assert expected  # the case is not empty
    assert unmanaged_notes(vault) == expected


def _apply(root, setting: str) -> None:
    """Put a printed `key.sub: value` suggestion into the config as a person would."""
    import yaml

    key, _, value = setting.partition(": ")
    config = root / ".cmem/config.yaml"
    data = yaml.safe_load(config.read_text("utf-8")) or {}
    *parents, last = key.split(".")
    place = data
    for name in parents:
        place = place.setdefault(name, {})
    place[last] = yaml.safe_load(value)
    config.write_text(yaml.safe_dump(data, allow_unicode=True), "utf-8")


def test_every_suggestion_status_prints_is_config_that_loads(tmp_path):
    """Issue 44: adding `03 - AREAS/**` beside the daily-notes folder init put in
    (`03 - AREAS/Journal/Daily/**`) failed with "… overlap"; a top folder holding the templates
    folder must not bring the templates in."""
    from para_vault import DAILY_FOLDER, FILES, TEMPLATES

    root = tmp_path / "para"
    write_files(root, {**FILES, "99 - META/Reviews/2024/Q1.md": "Quarter went well.\n"})
    assert _cmem("init", str(root), "--lang", "en").returncode == 0
    assert open_vault(root).config.extra_divergent == (DAILY_FOLDER, "sessions")
    applied = []
    for _ in range(10):
        status = json.loads(_cmem("status", "--json", "--vault", str(root)).stdout)
        if not status["unmanaged"]:
            break
        folder = status["unmanaged"][0]
        applied.append(folder["entry"])
        _apply(root, folder["setting"])
        open_vault(root)  # loads: no "overlap", no other error
    assert "03 - AREAS/**" in applied and "99 - META/Reviews/**" in applied
    assert not any(entry.startswith("99 - META/**") for entry in applied)
    vault = open_vault(root)
    divergent = {n.rel for n in vault.list_layer(DIVERGENT)}
    assert not any(rel.startswith(TEMPLATES) for rel in divergent)
    assert f"{DAILY_FOLDER}/2024/04/2024-04-30.md" in divergent
    assert "99 - META/Reviews/2024/Q1.md" in divergent
    # each note once, though the daily folder is listed inside 03 - AREAS/**
    listed = [n.rel for n in vault.list_layer(DIVERGENT)]
    assert len(listed) == len(set(listed))
    doctor = _cmem("doctor", "--vault", str(root))
    assert "outside every layer" not in doctor.stdout


def test_a_divergent_folder_inside_a_recursive_one_is_read_once(make_vault):
    root = make_vault(
        ADOPTED,
        config_yaml="divergent:\n  extra_folders: [journal/2026/**, journal/**, journal/2026/11]\n",
    )
    vault = open_vault(root)
    assert vault.config.extra_divergent == ("journal",)
    assert [n.rel for n in vault.list_layer(DIVERGENT)] == [
        "Home.md",
        "journal/2026-11-27.md",
        "journal/2026/11/2026-11-28.md",
    ]
    # the same folder twice is still refused, and a layer folder inside a divergent one too
    for entries in ("[journal, journal/]", "[converged/**]"):
        (root / ".cmem/config.yaml").write_text(
            f"divergent:\n  extra_folders: {entries}\n", "utf-8"
        )
        with pytest.raises(ConfigError, match="overlap"):
            open_vault(root)
