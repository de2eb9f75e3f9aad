import hashlib
import subprocess
from pathlib import Path

import pytest

from cmem.errors import UsageError
from cmem.setup.init import ParentRepoChoiceNeeded, init_vault
from support import git, run_cmem, snapshot, write_files

OBSIDIAN_VAULT = {
    "Daily/2026-11-28.md": "---\ntags: [daily]\n---\n# 今天\n- 其实不是这样\n",
    "idea.md": "I prefer tabs.\r\n",  # CRLF must survive untouched
    "bom.md": "\ufeff# BOM note\n",
    "Projects/cmem/plan.md": "# plan\n",
    ".obsidian/app.json": '{"vimMode": true}\n',
    ".obsidian/workspace.json": '{"main": {}}\n',
    "attachments/pic.png": b"\x89PNG\r\n\x1a\n\x00\x00",
    "README.md": "# my vault\n",
}


def digest_tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def test_adopting_an_obsidian_vault_leaves_every_file_byte_identical(tmp_path):
    root = tmp_path / "Obsidian Vault"
    write_files(root, OBSIDIAN_VAULT)
    before = digest_tree(root)
    report = init_vault(root, "en")
    after = digest_tree(root)
    for rel, digest in before.items():
        assert after[rel] == digest, rel
    assert set(after) - set(before) == {
        ".cmem/backlog.json",  # the notes it held: a backlog, not all pending at once
        ".cmem/config.yaml",
        ".cmem/state.json",
        "archive/ARCHIVE-CHECKLIST.md",
        ".gitignore",
    }
    assert report.repository == "created"
    committed = git(root, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(committed) == [
        ".cmem/backlog.json",
        ".cmem/config.yaml",
        ".cmem/state.json",
        ".gitignore",
        "archive/ARCHIVE-CHECKLIST.md",
    ]


def test_init_is_idempotent(tmp_path):
    root = tmp_path / "v"
    first = init_vault(root, "zh")
    assert first.changed
    head = git(root, "rev-parse", "HEAD")
    second = init_vault(root, "zh")
    assert not second.changed and second.created == [] and second.commit is None
    assert git(root, "rev-parse", "HEAD") == head


def test_existing_gitignore_is_not_rewritten(tmp_path):
    root = tmp_path / "v"
    write_files(root, {".gitignore": "secret/\n", "n.md": "x\n"})
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    report = init_vault(root)
    assert (root / ".gitignore").read_text() == "secret/\n"
    exclude = (root / ".git/info/exclude").read_text()
    assert ".obsidian/workspace*" in exclude
    assert report.repository == "existing"
    assert any("info/exclude" in note for note in report.notes)


def test_existing_repo_keeps_users_staged_changes_out_of_cmems_commit(tmp_path):
    root = tmp_path / "v"
    write_files(root, {"a.md": "a\n"})
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    git(root, "add", "a.md")
    init_vault(root)
    assert "a.md" not in git(root, "show", "--name-only", "--format=", "HEAD")
    assert git(root, "diff", "--cached", "--name-only").split() == ["a.md"]


def test_folder_inside_another_repository_needs_a_choice(tmp_path):
    parent = tmp_path / "project"
    parent.mkdir()
    subprocess.run(["git", "init", "-q", str(parent)], check=True)
    inner = parent / "notes"
    with pytest.raises(ParentRepoChoiceNeeded) as excinfo:
        init_vault(inner)
    assert "--repo own" in str(excinfo.value) and not inner.exists()
    # own: a nested repository; the parent gets no commit
    report = init_vault(inner, repo="own")
    assert report.repository == "created"
    assert (inner / ".git").exists()
    assert (
        subprocess.run(
            ["git", "-C", str(parent), "rev-parse", "HEAD"], capture_output=True
        ).returncode
        != 0
    )


def test_parent_choice_commits_into_parent_and_records_it(tmp_path):
    parent = tmp_path / "project"
    parent.mkdir()
    subprocess.run(["git", "init", "-q", str(parent)], check=True)
    inner = parent / "notes"
    report = init_vault(inner, repo="parent")
    assert report.repository == "parent"
    assert "allow_parent_repo: true" in (inner / ".cmem/config.yaml").read_text()
    assert "notes/.cmem/config.yaml" in git(parent, "show", "--name-only", "--format=", "HEAD")


def test_bad_language(tmp_path):
    with pytest.raises(UsageError):
        init_vault(tmp_path / "v", "fr")


# --- the language of a new vault (issue 14): the notes' script, else the locale, else en -------

import os  # noqa: E402
import sys  # noqa: E402

from cmem.setup.init import guess_language  # noqa: E402

EN_NOTES = {
    f"note {n}.md": f"# Monday {n}\n\nI switched to uv for every Python project; tests with pytest.\n"
    for n in range(5)
}
ZH_NOTES = {
    f"日记 {n}.md": f"# 周一 {n}\n\n以后都用 uv 管理 Python 环境，不要再用 pip。今天面试了两家公司。\n"
    for n in range(5)
}


def test_the_language_follows_the_script_most_notes_use(tmp_path):
    write_files(
        tmp_path / "en",
        {**EN_NOTES, "Daily/2026-11-28.md": "# 今天\n其实不是这样，我决定改用深圳的实习机会。\n"},
    )
    guess = guess_language(tmp_path / "en", environ={"LANG": "zh_CN.UTF-8"})
    assert (guess.language, guess.sure) == ("en", True) and "5 of 6" in guess.reason
    write_files(tmp_path / "zh", {**ZH_NOTES, "English one.md": EN_NOTES["note 0.md"]})
    assert guess_language(tmp_path / "zh", environ={}).language == "zh"
    write_files(tmp_path / "mixed", {"a.md": EN_NOTES["note 0.md"], "b.md": ZH_NOTES["日记 0.md"]})
    assert guess_language(tmp_path / "mixed", environ={}).sure is False


def test_without_notes_the_locale_decides_else_english(tmp_path):
    (tmp_path / "empty").mkdir()
    assert guess_language(tmp_path / "empty", environ={"LANG": "zh_CN.UTF-8"}).language == "zh"
    assert (
        guess_language(
            tmp_path / "empty", environ={"LC_ALL": "en_GB.UTF-8", "LANG": "zh_CN.UTF-8"}
        ).language
        == "en"
    )
    guess = guess_language(tmp_path / "empty", environ={"LANG": "C.UTF-8"})
    assert (guess.language, guess.sure) == ("en", False)
    # .obsidian and .git are no notes
    write_files(tmp_path / "hidden", {".obsidian/x.md": ZH_NOTES["日记 0.md"] * 3})
    assert guess_language(tmp_path / "hidden", environ={}).language == "en"


def _init(*args, env_extra=None, cwd=None):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("CMEM_VAULT", "LANG", "LC_ALL", "LC_MESSAGES")
    }
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-m", "cmem", "init", *args],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=60,
        cwd=cwd,
    )


def test_cmem_init_on_english_notes_is_english_even_with_a_chinese_locale(tmp_path):
    root = tmp_path / "vault"
    write_files(root, EN_NOTES)
    done = _init(str(root), "--json", env_extra={"LANG": "zh_CN.UTF-8"})
    assert done.returncode == 0, done.stderr
    import json

    report = json.loads(done.stdout)
    assert report["language"] == "en" and any("from your notes" in n for n in report["notes"])
    assert "language: en" in (root / ".cmem/config.yaml").read_text("utf-8")
    # and an explicit --lang still wins; a second init changes nothing
    write_files(tmp_path / "zh", EN_NOTES)
    assert _init(str(tmp_path / "zh"), "--lang", "zh").returncode == 0
    assert "language: zh" in (tmp_path / "zh/.cmem/config.yaml").read_text("utf-8")
    again = _init(str(root), "--json")
    assert (
        json.loads(again.stdout)["changed"] is False
        and json.loads(again.stdout)["language"] == "en"
    )


def test_cmem_init_asks_on_a_terminal_when_unsure(tmp_path):
    import pty

    root = tmp_path / "new"
    pid, fd = pty.fork()
    if pid == 0:
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("CMEM_VAULT", "LANG", "LC_ALL", "LC_MESSAGES")
        }
        os.execvpe(sys.executable, [sys.executable, "-m", "cmem", "init", str(root)], env)
    output = b""
    while b"zh or en?" not in output:
        output += os.read(fd, 4096)
    os.write(fd, b"zh\n")
    try:
        while chunk := os.read(fd, 4096):
            output += chunk
    except OSError:
        pass
    os.waitpid(pid, 0)
    assert b"no notes and no locale" in output
    assert "language: zh" in (root / ".cmem/config.yaml").read_text("utf-8")


# --- a file where init makes a folder (issue 43): checked before anything is written ----------


@pytest.mark.parametrize(
    "blocker, kind",
    [
        ("archive", "file"),
        ("converged", "file"),
        ("converged/core", "file"),
        ("converged/topics", "file"),
        (".cmem", "file"),
        (".cmem/state.json", "folder"),
        ("archive/ARCHIVE-CHECKLIST.md", "folder"),
        (".gitignore", "folder"),
    ],
)
def test_a_file_in_the_way_is_named_before_anything_is_written(tmp_path, blocker, kind):
    root = tmp_path / "v"
    write_files(root, {"2026-01-01 notes.md": "- actually I prefer tea\n"})
    if kind == "file":
        write_files(root, {blocker: "the user's own file\n"})
    else:
        (root / blocker).mkdir(parents=True)
    before = snapshot(root, folders=True)
    for _ in range(2):  # and the same again: nothing half-made in between
        done = run_cmem("init", str(root), "--lang", "en")
        assert done.returncode == 1 and done.stderr == (
            f"error: {root / blocker} is a "
            + (
                f"file where cmem init makes the folder {_folder_of(blocker)}/"
                if kind == "file"
                else "folder where cmem init writes a file"
            )
            + "; move or rename it, then run `cmem init` again (nothing was written).\n"
        )
        assert snapshot(root, folders=True) == before
    (root / blocker).unlink() if kind == "file" else (root / blocker).rmdir()
    done = run_cmem("init", str(root), "--lang", "en")
    assert done.returncode == 0, done.stderr
    assert "cmem: init vault" in git(root, "log", "--format=%s")


def _folder_of(blocker: str) -> str:
    """The folder init makes that the blocker stands in (the whole folder it names)."""
    return {"converged": "converged/core", ".cmem": ".cmem"}.get(blocker, blocker)
