import hashlib
import subprocess
from pathlib import Path

import pytest

from cmem.errors import UsageError
from cmem.setup.init import ParentRepoChoiceNeeded, init_vault
from conftest import git, write_files

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
    assert set(after) - set(before) == {".cmem/config.yaml", ".cmem/state.json", "archive/ARCHIVE-CHECKLIST.md", ".gitignore"}
    assert report.repository == "created"
    committed = git(root, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(committed) == [".cmem/config.yaml", ".cmem/state.json", ".gitignore", "archive/ARCHIVE-CHECKLIST.md"]


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
    assert subprocess.run(["git", "-C", str(parent), "rev-parse", "HEAD"], capture_output=True).returncode != 0


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
