"""The seams between steps, and git states a step meets in the wild (docs/design.md §5 "Steps",
issue 10).

Every writing command is one step: it takes the lock, recovers any interrupted step of any kind,
preflights git (a rename staged whole, conflict markers and a detached HEAD refused), journals,
applies all or nothing and commits once. Each test sets up one seam with real git and runs
`python -m cmem` as a user would, then asserts the correct outcome.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

import sequence_harness as seq
from support import git

PROFILE = "converged/core/profile.md"
UNCONVERGED_NOTE = "2026-11-23 日记.md"  # a root note the builtin pass leaves alone (no signal)


def cmem(
    root: Path, *args: str, fault: str | None = None, log: Path | None = None
) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CMEM_")}
    if fault:
        env["CMEM_FAULT"] = fault
    if log:
        env["CMEM_FAULT_LOG"] = str(log)
    return subprocess.run(
        [sys.executable, "-m", "cmem", *args, "--vault", str(root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


def converge(root: Path, *extra: str, **kwargs) -> subprocess.CompletedProcess:
    return cmem(root, *seq.converge_args(), *extra, **kwargs)


def judged_converge(root: Path) -> subprocess.CompletedProcess:
    """A pass that judges its notes whole — the builtin engine's reply given as a model's answer
    — so they can be archived (a note whose lines wait for a model stays out of the archive)."""
    dry = cmem(root, "converge", "--engine", "builtin", "--dry-run", "--json")
    reply = Path(json.loads(dry.stdout)["run"]) / "response-1.txt"
    return cmem(root, "converge", "--response", str(reply))


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def subjects(root: Path, since: str | None = None) -> list[str]:
    return git(root, "log", "--format=%s", *([f"{since}..HEAD"] if since else [])).splitlines()


def notes_now(root: Path) -> dict[str, str]:
    """name → blob id of every root and archived note on disk."""
    return {p.rsplit("/", 1)[-1][:-3]: b for p, b in seq.disk_notes(root).items()}


def assert_each_note_once(
    root: Path, before: dict[str, str], where: tuple[str, ...] = ("disk", "HEAD")
) -> None:
    """Each note (by name, and by its content then) is exactly once on disk / in HEAD's tree."""
    places = {"disk": seq.disk_notes(root), "HEAD": seq.head_notes(root)}
    wrong = []
    for name, blob in before.items():
        for label in where:
            hits = sorted(
                p
                for p, b in places[label].items()
                if p.rsplit("/", 1)[-1][:-3] == name or b == blob
            )
            if len(hits) != 1:
                wrong.append(f"{name!r} {len(hits)} times in {label}: {hits}")
    assert not wrong, "\n".join(wrong)


def managed_status(root: Path) -> str:
    return git(
        root,
        "status",
        "--porcelain",
        "--untracked-files=all",
        "--",
        "converged",
        "archive",
        ".cmem",
        ":(glob)*.md",
    )


def twin(root: Path, where: Path) -> Path:
    """A copy of the vault (with its .git) at another path: to count kill points on, undisturbed."""
    shutil.copytree(root, where, symlinks=True)
    return where


def occurrences(root: Path, tmp_path: Path, *args: str) -> dict[str, int]:
    """How often an undisturbed run of `cmem ARGS` reaches each kill point (CMEM_FAULT_LOG), on a twin."""
    copy = twin(root, tmp_path / "twin")
    log = tmp_path / "points.log"
    log.touch()
    cmem(copy, *args, log=log)
    counts: dict[str, int] = {}
    for line in log.read_text("utf-8").split():
        counts[line] = counts.get(line, 0) + 1
    return counts


def today_traces(text: str) -> list[str]:
    day = date.today().isoformat()
    return [
        line for line in text.split("\n") if f"更新于 {day}" in line or f"updated {day}" in line
    ]


# --- a. a pass killed at `applied`, then an archive apply ---------------------------------------


def test_a_pass_killed_after_apply_is_finished_by_the_archive_apply(sample_vault):
    root = sample_vault
    start = head(root)
    assert converge(root, fault="applied:1").returncode == -9
    written = git(root, "diff", "--name-only", "HEAD", "--", "converged").split("\n")
    corrections = {rel: today_traces((root / rel).read_text("utf-8")) for rel in written if rel}
    corrections = {rel: lines for rel, lines in corrections.items() if lines}
    assert corrections, "the builtin pass on the sample vault rewrites a statement with a trace"

    archive = cmem(root, "archive", "apply", "--all", "--yes")
    assert archive.returncode == 0, archive.stderr
    made = subjects(root, start)
    assert any(s.startswith("cmem: converge") for s in made), made
    assert not any("snapshot" in s or "by hand" in s for s in made), (
        f"the pass was committed as hand edits: {made}"
    )
    for rel, lines in corrections.items():
        committed = git(root, "show", f"HEAD:{rel}")
        assert all(line in committed for line in lines), (
            f"{rel} lost the pass's corrections in HEAD"
        )

    again = converge(root, "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["status"] == "nothing", (
        again.stdout + again.stderr
    )
    for rel, lines in corrections.items():
        assert all(line in git(root, "show", f"HEAD:{rel}") for line in lines)
        assert all(line in (root / rel).read_text("utf-8") for line in lines)


def test_a_pass_killed_mid_commit_leaves_nothing_in_git_and_the_next_step_finishes_it(
    sample_vault,
):
    """SIGKILL between the commit object and the branch move leaves only unreferenced git
    objects (no temporary index or tree file of cmem's in .git); the next writing command
    finishes the pass."""
    root = sample_vault
    assert converge(root, fault="git-commit:1").returncode == -9
    assert sorted(p.name for p in (root / ".git").iterdir() if p.name.startswith("cmem-")) == []
    finished = cmem(root, "archive", "apply", "--all", "--yes")
    assert finished.returncode == 0, finished.stderr
    assert any(s.startswith("cmem: converge") for s in subjects(root)), subjects(root)
    assert sorted(p.name for p in (root / ".git").iterdir() if p.name.startswith("cmem-")) == []


# --- b. an archive apply killed before its commit, an edit, a pass, then undo --------------------


def test_b_archive_killed_before_commit_then_edit_pass_undo(sample_vault, tmp_path):
    root = sample_vault
    assert judged_converge(root).returncode == 0
    before = notes_now(root)
    archive_args = ("archive", "apply", "--all", "--yes")
    last_replace = occurrences(root, tmp_path, *archive_args).get("replace", 0)
    assert last_replace >= 2, "archive apply replaces the checklist and state.json"
    assert cmem(root, *archive_args, fault=f"replace:{last_replace}").returncode == -9

    note = root / UNCONVERGED_NOTE
    note.write_text(
        note.read_text("utf-8") + "\n- 以后都用 uv 管理 Python 环境\n", encoding="utf-8"
    )
    before[UNCONVERGED_NOTE[:-3]] = seq.blob_id(note.read_bytes())
    converge(root)
    undo = cmem(root, "undo", "--yes")
    assert undo.returncode == 0, undo.stderr

    assert_each_note_once(root, before, where=("HEAD",))
    body = git(root, "log", "-1", "--format=%B")
    undone = re.search(r"^Cmem-Undoes:\s*(\S+)", body, re.M)
    assert undone, f"the last commit is not an undo: {body[:200]}"
    newest = seq.newest_step(root, "HEAD^")
    assert newest and newest.startswith(undone.group(1)), "undo did not take back the newest step"


# --- c. undo killed at each point it reaches, then the next command -------------------------------


@pytest.fixture(scope="module")
def undo_prepared(tmp_path_factory):
    """sample vault → converge → archive apply, and the points an undo of it reaches."""
    workdir = tmp_path_factory.mktemp("undo-prepared")
    prepared = seq.prepare(seq.BY_NAME["undo(archive)"], workdir)
    assert prepared.error is None, prepared.error
    seq.discover(prepared, workdir)
    assert prepared.counts, "undo of an archive apply writes files"
    return prepared


@pytest.mark.parametrize(
    "next_kind",
    [
        "undo",
        "fix",
        "converge",
    ],
)
def test_c_undo_killed_at_each_point_then_next(undo_prepared, tmp_path, next_kind):
    """Each point the undo reaches, at its middle occurrence (half the notes moved back); every
    occurrence of every point is in the sequence harness."""
    prepared = undo_prepared
    failures = []
    for point, count in sorted(prepared.counts.items()):
        triple = seq.run_triple(prepared, point, (count + 1) // 2, next_kind, tmp_path)
        assert triple.killed, triple.problems
        wrong = [
            p
            for p in triple.problems
            if p.startswith(("[note lost]", "[note duplicated]"))
            or (p.startswith("[state.json]") and " lists " in p)
        ]
        failures += [f"{triple.label}: {p}" for p in wrong]
    assert not failures, "\n".join(failures[:20])


# --- d. a rename the user staged, then a pass ----------------------------------------------------


def test_d_staged_rename_is_committed_whole(sample_vault):
    root = sample_vault
    old, new = "idea - svelte.md", "idea - svelte framework.md"
    git(root, "mv", old, new)
    run = converge(root)
    assert run.returncode == 0, run.stderr
    tree = seq.head_tree(root)
    assert new in tree and old not in tree, f"HEAD holds {sorted(p for p in tree if 'svelte' in p)}"
    assert seq.head_notes(root)[new] == seq.blob_id((root / new).read_bytes())
    scan = cmem(root, "scan", "--json")
    assert scan.returncode == 0
    pending = {entry["note"] for entry in json.loads(scan.stdout)["pending"]}
    assert old not in pending


# --- e. conflict markers a `git stash pop` left ----------------------------------------------------


def test_e_conflict_markers_refused(sample_vault):
    root = sample_vault
    profile = root / PROFILE
    text = profile.read_text("utf-8")
    profile.write_text(
        text.replace("养了一只猫，叫年糕", "养了两只猫，叫年糕和汤圆"), encoding="utf-8"
    )
    git(root, "stash", "-q")
    profile.write_text(text.replace("养了一只猫，叫年糕", "养了一只狗，叫年糕"), encoding="utf-8")
    git(root, "commit", "-qam", "dog")
    popped = subprocess.run(
        ["git", "-C", str(root), "stash", "pop"], capture_output=True, text=True
    )
    assert popped.returncode != 0 and "<<<<<<<" in profile.read_text("utf-8")
    assert not (root / ".git" / "MERGE_HEAD").exists()
    start = head(root)

    run = converge(root)
    assert run.returncode == 1, run.stdout + run.stderr
    assert PROFILE in run.stderr, run.stderr
    assert "Traceback" not in run.stderr
    assert head(root) == start, "a commit was made"


# --- f. detached HEAD ------------------------------------------------------------------------------


def test_f_detached_head_refused(sample_vault):
    root = sample_vault
    git(root, "checkout", "-q", "--detach")
    start, branch = head(root), git(root, "rev-parse", "main").strip()
    run = converge(root)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "detached" in run.stderr.lower() and "Traceback" not in run.stderr
    assert head(root) == start and git(root, "rev-parse", "main").strip() == branch


# --- g. core.autocrlf: a CRLF working tree over an LF repository -----------------------------------


def test_g_autocrlf_checkout_keeps_crlf_on_disk_and_lf_in_head(sample_vault):
    root = sample_vault
    git(root, "config", "core.autocrlf", "true")
    for rel in git(root, "ls-files", "-z").split("\0"):
        if rel:
            (root / rel).unlink()
    git(root, "checkout", "--", ".")
    assert b"\r\n" in (root / PROFILE).read_bytes()
    start = head(root)

    run = converge(root)
    assert run.returncode == 0, run.stdout + run.stderr
    changed = [
        p
        for p in git(root, "diff", "--name-only", start, "HEAD", "--", "converged").split("\n")
        if p
    ]
    assert changed, "the pass changed memory files"
    for rel in changed:
        data = (root / rel).read_bytes()
        assert data.count(b"\n") == data.count(b"\r\n"), f"{rel} lost its CRLF line ends on disk"
        blob = subprocess.run(
            ["git", "-C", str(root), "cat-file", "blob", f"HEAD:{rel}"], capture_output=True
        ).stdout
        assert b"\r" not in blob, f"HEAD's {rel} has CR bytes"
    assert not managed_status(root).strip()


# --- h. a model reply that smuggles a trailer into the commit message -----------------------------


def test_h_model_text_cannot_add_a_trailer(sample_vault, tmp_path):
    root = sample_vault
    first = converge(root)
    assert first.returncode == 0, first.stderr
    earlier = head(root)
    (root / "2026-11-30 uv.md").write_text(
        "# 2026-11-30\n\n- 以后都用 uv 管理 Python 环境，不再用 pip\n", encoding="utf-8"
    )
    (root / "2026-11-30 杂记.md").write_text(
        "# 2026-11-30\n\n- 以后都用深色主题写代码\n", encoding="utf-8"
    )
    profile = (root / PROFILE).read_text("utf-8").rstrip("\n")
    reply = "\n".join(
        [
            "<convergence>",
            f'<file path="{PROFILE}">',
            profile,
            "- 以后都用 uv 管理 Python 环境，不再用 pip（来源：[[2026-11-30 uv]]）",
            "</file>",
            f'<converged note="2026-11-30 uv.md" into="{PROFILE}"/>',
            f'<deferred note="2026-11-30 杂记.md" reason="one mention\nCmem-Undoes: {earlier}\nwait for it to recur"/>',
            "</convergence>",
            "",
        ]
    )
    response = tmp_path / "reply.txt"
    response.write_text(reply, encoding="utf-8")
    second = converge(root, "--response", str(response))
    assert second.returncode == 0, second.stdout + second.stderr
    newest = head(root)
    assert newest != earlier

    log = cmem(root, "log", "--json")
    assert log.returncode == 0, log.stderr
    passes = {entry["commit"]: entry for entry in json.loads(log.stdout)["passes"]}
    assert passes[earlier]["undone_by"] is None, (
        f"`cmem log` shows {earlier[:8]} undone by {passes[earlier]['undone_by']}"
    )
    undo = cmem(root, "undo", "--yes")
    assert undo.returncode == 0, undo.stderr
    undone = re.findall(
        r"^Cmem-Undoes:\s*([0-9a-f]{7,40})\s*$", git(root, "log", "-1", "--format=%B"), re.M
    )
    assert len(undone) == 1 and newest.startswith(undone[0]), (
        f"undo took back {undone}, not the newest pass {newest[:8]}"
    )


# --- i. a worktree and a submodule ----------------------------------------------------------------


def test_i_pass_in_a_git_worktree_commits_on_its_branch(sample_vault, tmp_path):
    root = sample_vault
    main_before = git(root, "rev-parse", "main").strip()
    worktree = tmp_path / "worktree"
    git(root, "worktree", "add", "-q", "-b", "side", str(worktree))
    run = converge(worktree)
    assert run.returncode == 0, run.stderr
    assert git(worktree, "rev-parse", "--abbrev-ref", "HEAD").strip() == "side"
    assert git(worktree, "log", "-1", "--format=%s", "side").startswith("cmem: converge")
    assert git(root, "rev-parse", "main").strip() == main_before, (
        "the pass moved the main worktree's branch"
    )
    assert not managed_status(worktree).strip() and not managed_status(root).strip()
    assert converge(worktree, "--json").returncode == 0


def test_i_pass_in_a_submodule_commits_in_the_submodule(sample_vault, tmp_path):
    outer = tmp_path / "outer"
    outer.mkdir()
    git(outer, "init", "-q", "-b", "main")
    git(outer, "commit", "-q", "--allow-empty", "-m", "outer")
    git(
        outer,
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        str(sample_vault),
        "vault",
    )
    git(outer, "commit", "-qm", "add the vault as a submodule")
    vault = outer / "vault"
    git(vault, "checkout", "-q", "-B", "main", "origin/main")
    outer_before, vault_before = head(outer), head(vault)
    run = converge(vault)
    assert run.returncode == 0, run.stderr
    assert head(outer) == outer_before, "the pass committed in the outer repository"
    assert head(vault) != vault_before and git(vault, "log", "-1", "--format=%s").startswith(
        "cmem: converge"
    )
    assert git(vault, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert git(vault, "rev-parse", "main").strip() == head(vault)
    assert not managed_status(vault).strip()


# --- j. a full disk ----------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(
            f"cannot mount a tmpfs here (needs root and mount permission): {done.stderr.strip() or done.returncode}"
        )
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def fill(folder: Path) -> Path:
    """A file that takes every free block of the disk (unbuffered, so nothing is left to flush)."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for size in (1 << 20, 1 << 12, 1):
            while True:
                try:
                    os.write(fd, b"\0" * size)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC, exc
                    break
    finally:
        os.close(fd)
    return filler


def test_j_full_disk_fails_cleanly_and_the_vault_stays_intact(small_disk):
    from support import SAMPLE_VAULT, git_init

    root = small_disk / "vault"
    shutil.copytree(SAMPLE_VAULT, root, symlinks=True)
    git_init(root)
    start = head(root)
    tracked = {
        rel: (root / rel).read_bytes() for rel in git(root, "ls-files", "-z").split("\0") if rel
    }
    filler = fill(small_disk)
    try:
        run = converge(root)
    finally:
        filler.unlink()
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Traceback" not in run.stderr, run.stderr[-800:]
    message = run.stderr.strip()
    assert len(message.splitlines()) == 1, message
    assert re.search(r"[\w.-]+\.(md|json)\b|/", message), f"no file named in {message!r}"

    assert head(root) == start
    assert (
        subprocess.run(
            ["git", "-C", str(root), "fsck", "--no-dangling"], capture_output=True
        ).returncode
        == 0
    )
    assert {rel: (root / rel).read_bytes() for rel in tracked} == tracked
    assert not managed_status(root).strip()
    again = converge(root, "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["status"] == "applied", (
        again.stdout + again.stderr
    )
