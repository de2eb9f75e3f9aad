"""The git processes one step starts (issue 13): where the repository is, its git folder and
whether git knows who commits are asked once per step, not once per caller (a one-note pass
asked 3, 5 and 4 times); outside a step each call still asks git. Counted, not timed."""

from __future__ import annotations

import subprocess
from collections import Counter

from cmem.converge.pipeline import PassOptions, run_pass
from cmem.steps import commits
from cmem.vault.layers import open_vault

# where the repository is and its git folder: asked together, in one process a step
LOCATING = ("rev-parse --show-toplevel", "rev-parse --absolute-git-dir")


def _git_commands(monkeypatch) -> Counter:
    """Each git command run from here on, by its words after git's own options."""
    seen: Counter = Counter()
    original = subprocess.run

    def run(argv, *args, **kwargs):
        if argv and argv[0] == "git":
            words = list(argv[1:])
            while words and words[0] in ("-c", "-C"):
                words = words[2:]
            # the subcommand; for the questions asked of it, the question too
            asked = words[:2] if words[:1] in (["rev-parse"], ["config"]) else words[:1]
            seen[" ".join(asked)] += 1
        return original(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", run)
    return seen


def test_a_pass_locates_its_repository_once(pass_vault, monkeypatch):
    seen = _git_commands(monkeypatch)
    result = run_pass(open_vault(pass_vault), PassOptions(engine="builtin"))
    assert result.status == "applied" and result.commit
    assert [seen[command] for command in LOCATING] == [1, 0], seen
    # the test environment names the author: git's config is not asked who commits
    assert seen["config user.name"] == seen["config user.email"] == 0, seen
    # HEAD names a branch: its file in the git folder says so, no symbolic-ref
    assert seen["symbolic-ref"] == 0, seen
    # the commit asks for its parent and the parent's tree in one process
    assert seen["rev-parse HEAD"] == seen["commit-tree"] == 1, seen
    assert seen["rev-parse --verify"] == 0, seen


def test_without_an_author_in_the_environment_git_is_asked_once_a_step(pass_vault, monkeypatch):
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL"):
        monkeypatch.delenv(name, raising=False)
    seen = _git_commands(monkeypatch)
    (pass_vault / "2026-11-29 notes.md").write_text("- 其实我更喜欢早上写代码。\n", "utf-8")
    result = run_pass(open_vault(pass_vault), PassOptions(engine="builtin"))
    assert result.status == "applied" and result.snapshot_commit  # two commits in one step
    assert seen["commit-tree"] == 2, seen
    # asked once for both commits (the e-mail only when a name is known: here none is)
    assert seen["config user.name"] == 1 and seen["config user.email"] <= 1, seen


def test_a_second_commit_of_a_step_knows_its_parent_while_head_stays(pass_vault, monkeypatch):
    """The snapshot and the pass's commit: the second builds on the first without asking git for
    HEAD and its tree, as long as HEAD (read from git's files) is still the commit the step made."""
    seen = _git_commands(monkeypatch)
    (pass_vault / "2026-11-29 notes.md").write_text("- 其实我更喜欢早上写代码。\n", "utf-8")
    result = run_pass(open_vault(pass_vault), PassOptions(engine="builtin"))
    assert result.status == "applied" and result.snapshot_commit
    assert seen["commit-tree"] == 2 and seen["rev-parse HEAD"] == 1, seen
    assert _parents(pass_vault, result.commit) == [result.snapshot_commit]


def test_a_commit_made_by_someone_else_within_the_step_is_built_on(pass_vault, monkeypatch):
    """HEAD moved between the step's two commits (an editor's git plugin committed): git is asked
    again and the pass's commit builds on that commit, which is never lost."""
    from cmem.converge import pipeline

    original = pipeline.check_replies

    def meanwhile(*args, **kwargs):
        (pass_vault / "elsewhere.txt").write_text("an editor's commit\n", "utf-8")
        subprocess.run(["git", "-C", str(pass_vault), "add", "elsewhere.txt"], check=True)
        subprocess.run(
            ["git", "-C", str(pass_vault), "commit", "-q", "-m", "meanwhile"], check=True
        )
        return original(*args, **kwargs)

    monkeypatch.setattr(pipeline, "check_replies", meanwhile)
    seen = _git_commands(monkeypatch)
    (pass_vault / "2026-11-29 notes.md").write_text("- 其实我更喜欢早上写代码。\n", "utf-8")
    result = run_pass(open_vault(pass_vault), PassOptions(engine="builtin"))
    assert result.status == "applied" and result.snapshot_commit
    assert seen["rev-parse HEAD"] == 2, seen  # asked again: HEAD is not the step's commit
    (between,) = _parents(pass_vault, result.commit)
    assert between != result.snapshot_commit
    assert _parents(pass_vault, between) == [result.snapshot_commit]


def _parents(root, commit: str) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(root), "rev-parse", f"{commit}^@"], capture_output=True, text=True
    )
    return out.stdout.split()


def test_outside_a_step_git_is_asked_each_time(tmp_path):
    outer, inner = tmp_path / "outer", tmp_path / "outer" / "inner"
    inner.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(outer)], check=True)
    assert commits.toplevel(inner) == outer.resolve()
    subprocess.run(["git", "init", "-q", str(inner)], check=True)
    assert commits.toplevel(inner) == inner.resolve()  # nothing remembered the first answer
    with commits.one_repository():
        assert commits.git_dir(inner) == (inner / ".git").resolve()
        assert commits.git_dir(inner) == (inner / ".git").resolve()
    assert commits._memory() is None  # the step's memory ends with it


def test_a_steps_memory_belongs_to_its_thread(tmp_path):
    """`cmem watch` and `cmem mcp` run steps in threads: one thread's step neither sees another's
    memory nor ends it when it ends."""
    import threading

    root = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    inside, entered, leave = [], threading.Event(), threading.Event()

    def other_step():
        with commits.one_repository():
            commits.git_dir(root)
            inside.append(commits._memory())
            entered.set()
            leave.wait(30)
            inside.append(commits._memory())

    worker = threading.Thread(target=other_step)
    with commits.one_repository():
        mine = commits._memory()
        worker.start()
        assert entered.wait(30)
        assert inside[0] is not mine and ("git_dir", str(root)) not in mine
    assert commits._memory() is None  # this thread's step ended
    leave.set()
    worker.join(30)
    assert inside[1] is inside[0]  # the other thread's step kept its memory to its end


def test_what_head_names_is_read_from_its_file_and_from_git_where_the_file_cannot_tell(
    tmp_path, monkeypatch
):
    root = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    seen = _git_commands(monkeypatch)
    assert commits.head_is_a_branch(root) and seen["symbolic-ref"] == 0
    subprocess.run(["git", "-C", str(root), "checkout", "-q", "--detach"], check=True)
    assert not commits.head_is_a_branch(root) and seen["symbolic-ref"] == 0
    # a reftable repository's HEAD file is a placeholder: then git answers
    (root / ".git" / "HEAD").write_text("ref: refs/heads/.invalid\n", "utf-8")
    commits.head_is_a_branch(root)
    assert seen["symbolic-ref"] == 1
    unborn = tmp_path / "unborn"
    subprocess.run(["git", "init", "-q", str(unborn)], check=True)
    assert commits._head_and_tree(unborn) == (None, None)  # a first commit has no parent


def test_within_a_step_one_process_locates_a_repository_or_finds_none(tmp_path, monkeypatch):
    plain, bare = tmp_path / "plain", tmp_path / "bare.git"
    plain.mkdir()
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    seen = _git_commands(monkeypatch)
    with commits.one_repository():
        assert commits.toplevel(plain) is None and commits.toplevel(plain) is None
        assert seen["rev-parse --show-toplevel"] == 1, seen  # no repository: one process
        # a bare repository has a git folder and no top folder: asked alone, as outside a step
        assert commits.git_dir(bare) == bare.resolve()
        assert commits.toplevel(bare) is None


def test_a_snapshot_of_many_files_hashes_them_in_one_git(tmp_path, monkeypatch):
    """An adopted vault's first snapshot commits every note it holds: their blobs come from one
    `git hash-object --stdin-paths`, not one git each; a link and names a line cannot carry are
    hashed alone, and git sees the commit as it sees the files."""
    import os

    from support import git, git_init

    root = tmp_path / "v"
    root.mkdir()
    git_init(root)
    (root / "gone.md").write_text("old\n", "utf-8")
    git(root, "add", "gone.md")
    git(root, "commit", "-qm", "first")
    (root / "gone.md").unlink()
    names = [f"note {index:02d}.md" for index in range(40)]
    for name in names:
        (root / name).write_text(f"# {name}\n\n- 其实 line\r\n", "utf-8")
    (root / "run.md").write_text("x\n", "utf-8")
    (root / "run.md").chmod(0o755)
    os.symlink("note 00.md", root / "link.md")
    odd = ['"quoted.md', "two\nlines.md"]
    for name in odd:
        (root / name).write_text("odd\n", "utf-8")
    paths = [*names, "run.md", "link.md", *odd, "gone.md"]
    seen = _git_commands(monkeypatch)
    assert commits.commit_files(root, {}, "snapshot", from_disk=paths)
    # the files, the link, each odd name, and the trees (`steps/git_trees.py`: one for all)
    assert seen["hash-object"] == 1 + 1 + len(odd) + 1, seen
    assert git(root, "status", "--porcelain", "-z") == ""
    tree = git(root, "ls-tree", "-z", "HEAD").split("\0")
    modes = {line.split("\t", 1)[1]: line.split(" ", 1)[0] for line in tree if line}
    assert modes["run.md"] == "100755" and modes["link.md"] == "120000"
    assert set(modes) == set(paths) - {"gone.md"}
