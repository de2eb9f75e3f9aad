"""`cmem sync` and memory-aware merges (issue 16): a bare repository in a temp folder is the
remote, two or three clones are the machines. Real git, the builtin engine, no network.

Invariants checked after every scenario (`check_invariants`): every note exists once, no
statement is lost (present, inside a trace, or inside a conflict statement), `git fsck` is clean
on every clone, no conflict marker is committed, and the next pass on each machine works.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cmem.archive.gate import apply_archive, plan_archive
from cmem.cli import app
from cmem.converge.pipeline import PassOptions, run_pass
from cmem.errors import CmemError
from cmem.sync.conflicts_found import find_conflicts
from cmem.sync.memory_merge import (
    CONFLICT_WORD,
    MergeConflict,
    conflict_versions,
    is_conflict_statement,
    merge_frontmatter,
    merge_memory,
)
from cmem.sync.remote import OFFLINE_EXIT_CODE, sync_vault
from cmem.sync.three_way import merge_checklist, merge_plain, merge_state
from cmem.vault.layers import open_vault
from cmem.vault.notes import split_frontmatter
from cmem.vault.state_json import load_state, parse_state
from cmem.vault.statements import normalize, statement_lines
from support import git, write_files

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=timezone.utc)


# --- machines ---------------------------------------------------------------------------------


@pytest.fixture
def machines(tmp_path, sample_vault):
    """(remote, [machine a, machine b, machine c]): clones of one vault through a bare remote."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(sample_vault), str(remote)], check=True)
    clones = []
    for name in ("a", "b", "c"):
        root = tmp_path / name
        subprocess.run(["git", "clone", "-q", str(remote), str(root)], check=True)
        clones.append(root)
    return remote, clones


def note(root: Path, name: str, text: str) -> None:
    """A person writes a divergent note on that machine."""
    write_files(root, {f"{name}.md": text})


def converge(root: Path):
    result = run_pass(open_vault(root), PassOptions(engine="builtin"))
    assert result.status in ("applied", "nothing"), (result.status, result.errors)
    return result


def converge_judged(root: Path):
    """A pass that judges its notes whole — the builtin engine's reply given as a model's answer
    — so they can be archived (a note whose lines wait for a model stays out of the archive)."""
    dry = run_pass(open_vault(root), PassOptions(engine="builtin", dry_run=True))
    reply = (Path(dry.run_dir) / "response-1.txt").read_text("utf-8")
    result = run_pass(open_vault(root), PassOptions(response_text=reply))
    assert result.status == "applied", (result.status, result.errors)
    return result


def sync(root: Path):
    return sync_vault(open_vault(root), now=NOW)


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def statements_of(root: Path) -> list[str]:
    vault = open_vault(root)
    lines = []
    for file in vault.convergent_files():
        text = file.path.read_text("utf-8")
        _, body_start, _ = split_frontmatter(text)
        lines += [
            line for _, line in statement_lines("\n".join(text.split("\n")[body_start - 1 :]))
        ]
    return lines


def survives(statement: str, lines: list[str]) -> bool:
    """The statement's wording is still somewhere: as a statement, inside a trace, or inside a
    conflict statement (compared without spacing and punctuation)."""
    from cmem.vault.statements import split_statement

    flat = [normalize(line) for line in lines]
    for version in conflict_versions(
        statement
    ):  # a conflict statement survives when each version does
        core = normalize(split_statement(version)[0])
        if not any(core in line for line in flat):
            return False
    return True


def check_invariants(clones: list[Path], before: dict[Path, list[str]]) -> None:
    for root in clones:
        assert git(root, "status", "--porcelain", "--", ".cmem", "converged", "archive") == "", root
        fsck = subprocess.run(
            ["git", "-C", str(root), "fsck", "--no-progress"], capture_output=True, text=True
        )
        assert fsck.returncode == 0, fsck.stderr
        tracked = [p for p in git(root, "ls-files", "-z").split("\0") if p]
        names = [
            p.rsplit("/", 1)[-1]
            for p in tracked
            if p.endswith(".md")
            and "ARCHIVE-CHECKLIST" not in p
            and not p.startswith(("converged/", "templates/"))
            and p != "README.md"
        ]
        assert len(names) == len(set(names)), f"a note exists twice on {root.name}: {sorted(names)}"
        for path in tracked:
            data = (root / path).read_bytes()
            assert b"<<<<<<<" not in data and b">>>>>>>" not in data, path
        lines = statements_of(root)
        for machine, statements in before.items():
            for statement in statements:
                assert survives(statement, lines), (
                    f"{statement!r} (from {machine.name}) is lost on {root.name}"
                )
    for root in clones:
        converge(root)  # the next pass works on every machine


# --- scenarios --------------------------------------------------------------------------------


def test_concurrent_passes_on_two_machines_merge_per_statement(machines):
    remote, (a, b, _) = machines
    note(
        a,
        "2026-11-29 laptop",
        "- 以后都用中文回答，术语保留英文\n- 其实不是住在广州，现在住在深圳\n",
    )
    note(b, "2026-11-29 desktop", "- 我喜欢早上跑步，每天 6 点\n- 决定：简历用英文写\n")
    converge(a)
    converge(b)
    before = {a: statements_of(a), b: statements_of(b)}
    first = sync(a)
    assert (
        first.status == "synced" and first.pushed and first.merged is None
    )  # nothing to merge yet
    second = sync(b)
    assert second.merged == "merge" and second.pushed
    parents = git(b, "log", "-1", "--format=%P").split()
    assert len(parents) == 2 and head(a) in parents  # one merge commit, both parents
    assert ".cmem/state.json" in second.merged_files
    third = sync(a)
    assert third.merged == "fast-forward" and not third.pushed and head(a) == head(b)
    state = load_state(open_vault(a).state_file)
    assert (
        "2026-11-29 laptop.md" in state.notes and "2026-11-29 desktop.md" in state.notes
    )  # the union
    assert {p["id"] for p in state.passes} >= set(_pass_ids(a))
    check_invariants([a, b], before)


def _pass_ids(root: Path) -> set[str]:
    return {
        line.split(": ", 1)[1]
        for line in git(
            root, "log", "--no-merges", "--format=%(trailers:key=Cmem-Pass)"
        ).splitlines()
        if line.startswith("Cmem-Pass: ")
    } - {""}


def test_conflicting_corrections_of_one_statement_become_a_conflict_statement(machines):
    remote, (a, b, _) = machines
    profile = "converged/core/profile.md"
    old = "- 住在广州，去深圳面试可以当天往返（来源：[[2026-10-19 面试复盘]]）"
    assert old in (a / profile).read_text("utf-8")
    for root, city, day in ((a, "深圳", "2026-11-29"), (b, "杭州", "2026-11-30")):
        text = (root / profile).read_text("utf-8")
        new = f"- 住在{city}（更新于 {day}，原为：住在广州，去深圳面试可以当天往返（来源：[[2026-10-19 面试复盘]]））（来源：[[{day} 随手记]]）"
        (root / profile).write_text(text.replace(old, new), encoding="utf-8")
        git(root, "commit", "-qam", f"correction on {root.name}")
    before = {a: statements_of(a), b: statements_of(b)}
    sync(a)
    result = sync(b)
    assert result.merged == "merge" and len(result.conflicts) == 1
    conflicts = find_conflicts(open_vault(b))
    assert [c.path for c in conflicts] == [profile]
    versions = conflicts[0].versions
    assert any("深圳（更新于" in v for v in versions) and any("杭州" in v for v in versions)
    assert all("[[" in v for v in versions)  # both versions keep their sources
    # status shows it; the commit message names it
    status = CliRunner().invoke(app, ["status", "--vault", str(b), "--json"])
    assert status.exit_code == 0
    import json

    assert json.loads(status.stdout)["conflicts"][0]["path"] == profile
    assert "Conflict: converged/core/profile.md" in git(b, "log", "-1", "--format=%B")
    sync(a)
    check_invariants([a, b], before)
    assert find_conflicts(open_vault(a)) and find_conflicts(
        open_vault(b)
    )  # kept until a pass resolves it


def test_archive_apply_on_one_machine_while_the_other_edits_the_note(machines):
    remote, (a, b, _) = machines
    converge_judged(a)
    sync(a)
    sync(b)
    staged = plan_archive(open_vault(a), all_lines=True)
    assert staged.moves
    move = staged.moves[0]
    source = move.source
    apply_archive(open_vault(a), staged, now=NOW)
    assert not (a / source).exists()
    with open(b / source, "a", encoding="utf-8") as handle:
        handle.write("\n- 补充：这条是后来在台式机上加的\n")
    git(b, "commit", "-qam", "edit on b")
    before = {a: statements_of(a), b: statements_of(b)}
    sync(a)
    result = sync(b)
    assert result.merged == "merge" and source in result.kept
    for root in (a, b):
        if root == a:
            sync(a)
        assert (root / source).is_file() and "后来在台式机上加的" in (root / source).read_text(
            "utf-8"
        )
        assert not (root / move.target).exists()  # every note once: the archive copy is not kept
        state = load_state(open_vault(root).state_file)
        assert source in state.notes and move.target not in state.notes
        checklist = open_vault(root).checklist_path.read_text("utf-8")
        name = Path(source).stem
        assert f"[[{name}]]" in checklist  # staged again
    from cmem.archive.gate import list_staged

    line = next(staged for staged in list_staged(open_vault(b)) if staged.note == Path(source).stem)
    assert line.state == "changed"  # the next pass scans it again
    check_invariants([a, b], before)


def test_push_rejected_because_the_other_side_pushed_first(machines, monkeypatch):
    remote, (a, b, _) = machines
    note(a, "2026-11-29 laptop", "- 以后都先给结论再解释\n")
    note(b, "2026-11-29 desktop", "- 我决定周末不写代码\n")
    converge(a)
    converge(b)
    before = {a: statements_of(a), b: statements_of(b)}
    sync(b)  # b's pass is on the remote
    # a fetches, merges, and just before it pushes, b pushes again: a's push is rejected
    import cmem.sync.remote as sync_module

    real_push = sync_module.push
    calls = {"n": 0}

    def push_after_b(vault, target, commit):
        if vault.root != a:
            return real_push(vault, target, commit)
        calls["n"] += 1
        if calls["n"] == 1:
            note(b, "2026-11-30 desktop", "- 以后都用 uv 管理 Python 项目\n")
            converge(b)
            before[b] = statements_of(b)
            assert sync(b).pushed
        return real_push(vault, target, commit)

    with monkeypatch.context() as patch:  # its own patch only: the home stays isolated
        patch.setattr(sync_module, "push", push_after_b)
        result = sync(a)
    assert result.pushed and result.attempts == 2 and calls["n"] == 2
    assert head(a) == git(remote, "rev-parse", "main").strip()
    sync(b)
    assert head(a) == head(b)
    check_invariants([a, b], before)


def test_remote_missing_says_so_once_and_carries_on_locally(machines, tmp_path):
    remote, (a, _, _) = machines
    note(a, "2026-11-29 laptop", "- 以后都先给结论再解释\n")
    converge(a)
    head_before = head(a)
    shutil.move(str(remote), str(tmp_path / "elsewhere.git"))
    result = sync(a)
    assert result.status == "offline" and "cannot be reached" in result.reason and not result.pushed
    assert head(a) == head_before  # nothing changed
    cli = CliRunner().invoke(app, ["sync", "--vault", str(a)])
    assert cli.exit_code == OFFLINE_EXIT_CODE
    assert cli.output.count("cannot be reached") == 1
    as_json = CliRunner().invoke(app, ["sync", "--vault", str(a), "--json"])
    assert as_json.exit_code == OFFLINE_EXIT_CODE and '"status": "offline"' in as_json.stdout
    converge(a)  # carries on locally
    shutil.move(str(tmp_path / "elsewhere.git"), str(remote))
    assert sync(a).pushed  # and the commits go with the next sync
    check_invariants([a], {a: statements_of(a)})


def test_three_machines_converge_to_one_history(machines):
    remote, clones = machines
    for index, root in enumerate(clones):
        note(
            root,
            f"2026-11-2{index + 1} machine {index}",
            f"- 我决定第 {index + 1} 台机器只跑 agent {index}\n",
        )
        converge(root)
    before = {root: statements_of(root) for root in clones}
    for root in clones + clones:
        sync(root)
    assert len({head(root) for root in clones}) == 1
    check_invariants(clones, before)


def test_nothing_to_do_takes_no_step(machines):
    remote, (a, _, _) = machines
    result = sync(a)
    assert result.status == "nothing" and result.attempts == 1 and not result.pushed
    assert not open_vault(a).journal_dir.exists() or not any(open_vault(a).journal_dir.iterdir())


def run_main(monkeypatch, capsys, *args) -> tuple[int, str, str]:
    """Through main(), which owns error translation and exit codes."""
    from cmem.cli import main

    monkeypatch.setattr("sys.argv", ["cmem", *args])
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code or 0
    out = capsys.readouterr()
    return code, out.out, out.err


def test_no_remote_configured_is_a_clear_error(sample_vault, monkeypatch, capsys):
    code, _, err = run_main(monkeypatch, capsys, "sync", "--vault", str(sample_vault))
    assert code == 1 and "no remote to sync with" in err


def test_git_remote_setting_names_an_unknown_remote(machines, monkeypatch, capsys):
    _, (a, _, _) = machines
    (a / ".cmem/config.yaml").write_text(
        (a / ".cmem/config.yaml").read_text("utf-8") + "\ngit:\n  remote: backup\n",
        encoding="utf-8",
    )
    git(a, "commit", "-qam", "config")
    code, out, err = run_main(monkeypatch, capsys, "sync", "--vault", str(a), "--json")
    assert code == 1 and "'backup'" in out and out.startswith('{"error"')


def test_an_uncommitted_edit_the_other_side_changed_stops_the_sync(machines):
    _, (a, b, _) = machines
    (a / "README.md").write_text("changed on a\n", encoding="utf-8")
    git(a, "commit", "-qam", "readme on a")
    sync(a)
    (b / "README.md").write_text("uncommitted on b\n", encoding="utf-8")
    with pytest.raises(Exception, match=r"README\.md has changes not committed here"):
        sync(b)
    assert (b / "README.md").read_text("utf-8") == "uncommitted on b\n"  # the user's edit is intact


def test_a_real_text_conflict_names_the_file_and_commits_no_markers(machines):
    _, (a, b, _) = machines
    for root, text in ((a, "version a\n"), (b, "version b\n")):
        (root / "README.md").write_text(text, encoding="utf-8")
        git(root, "commit", "-qam", "readme")
    sync(a)
    head_before = head(b)
    with pytest.raises(MergeConflict, match=r"README\.md"):
        sync(b)
    assert head(b) == head_before and (b / "README.md").read_text("utf-8") == "version b\n"
    assert git(b, "status", "--porcelain") == ""


def test_notes_appended_on_both_machines_keep_both_lines(machines):
    _, (a, b, _) = machines
    name = "2026-11-30 notes.md"
    for root, line in ((a, "- 10:00 laptop line\n"), (b, "- 11:00 desktop line\n")):
        write_files(root, {name: "# notes\n" + line})
        git(root, "add", name)
        git(root, "commit", "-qm", "note")
    sync(a)
    sync(b)
    text = (b / name).read_text("utf-8")
    assert "laptop line" in text and "desktop line" in text and "<<<" not in text


# --- crash safety ---------------------------------------------------------------------------------

KILL_POINTS = ("journal-written", "replace", "applied", "git-commit", "committed")


@pytest.mark.parametrize("point", KILL_POINTS)
def test_a_sync_killed_mid_merge_is_finished_or_undone_by_the_next_command(machines, point):
    remote, (a, b, _) = machines
    note(a, "2026-11-29 laptop", "- 以后都先给结论再解释\n")
    note(b, "2026-11-29 desktop", "- 我决定周末不写代码\n")
    converge(a)
    converge(b)
    before = {a: statements_of(a), b: statements_of(b)}
    sync(a)
    env = {**os.environ, "CMEM_FAULT": point}
    killed = subprocess.run(
        [sys.executable, "-m", "cmem", "sync", "--vault", str(b)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert killed.returncode == -9, killed.stderr
    # the next command finishes or undoes it, then syncs
    again = CliRunner().invoke(app, ["sync", "--vault", str(b)])
    assert again.exit_code == 0, again.output
    sync(a)
    assert head(a) == head(b)
    merges = git(b, "log", "--merges", "--format=%H").split()
    assert len(merges) == 1  # the merge was made once
    check_invariants([a, b], before)


@pytest.mark.parametrize("point", ("replace", "applied"))
def test_a_fast_forward_killed_midway_is_finished_by_the_next_command(machines, point):
    _, (a, b, _) = machines
    note(a, "2026-11-29 laptop", "- 以后都先给结论再解释\n")
    converge(a)
    sync(a)
    env = {**os.environ, "CMEM_FAULT": point}
    killed = subprocess.run(
        [sys.executable, "-m", "cmem", "sync", "--vault", str(b)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert killed.returncode == -9, killed.stderr
    status = CliRunner().invoke(app, ["status", "--vault", str(b)])
    assert status.exit_code == 0
    again = CliRunner().invoke(app, ["sync", "--vault", str(b)])
    assert again.exit_code == 0, again.output
    assert head(a) == head(b) and git(b, "status", "--porcelain") == ""


# --- the merges on their own ------------------------------------------------------------------------

BASE = """---
summary: who
updated: 2026-10-20
tags: [a]
---
# Profile

- Lives in Guangzhou (source: [[n1]])
- Looking for a Beijing backend internship (source: [[n1]])
- Has a cat (source: [[n1]])
"""


def _rewrite(text: str, old: str, new: str, day: str, source: str) -> str:
    return text.replace(
        f"- {old} (source: [[n1]])",
        f"- {new} (updated {day}, was: {old} (source: [[n1]])) (source: [[{source}]])",
    )


def test_merge_memory_keeps_both_sides_statements_and_merges_frontmatter_per_key():
    ours = (
        BASE.replace("updated: 2026-10-20", "updated: 2026-11-30")
        + "- Likes tea (source: [[a1]])\n"
    )
    ours = _rewrite(ours, "Has a cat", "Has two cats", "2026-11-30", "a2")
    theirs = BASE.replace("updated: 2026-10-20", "updated: 2026-11-29").replace(
        "tags: [a]", "tags: [a, b]"
    )
    theirs = theirs + "- Runs every morning (source: [[b1]])\n"
    theirs = theirs.replace(
        "- Lives in Guangzhou (source: [[n1]])", "- Lives in Guangzhou (source: [[n1]], [[b3]])"
    )
    merged = merge_memory("p.md", BASE, ours, theirs, "2026-11-30")
    assert merged.conflicts == []
    text = merged.text
    assert "updated: 2026-11-30" in text and "tags: [a, b]" in text
    assert (
        "Has two cats (updated 2026-11-30, was: Has a cat" in text
    )  # the one-sided rewrite, with its trace
    assert "Likes tea" in text and "Runs every morning" in text
    assert "[[n1]], [[b3]]" in text
    assert text.count("Has") == 2  # one statement (its trace holds the old wording), not two


def test_merge_memory_same_statement_rewritten_differently_is_one_conflict_statement():
    ours = _rewrite(
        BASE,
        "Looking for a Beijing backend internship",
        "Looking for a Shenzhen AI internship",
        "2026-11-30",
        "a2",
    )
    theirs = _rewrite(
        BASE,
        "Looking for a Beijing backend internship",
        "Looking for a Hangzhou internship",
        "2026-11-29",
        "b2",
    )
    merged = merge_memory("p.md", BASE, ours, theirs, "2026-11-30")
    assert len(merged.conflicts) == 1
    line = merged.conflicts[0]
    assert is_conflict_statement(line) and CONFLICT_WORD in line
    versions = conflict_versions(line)
    assert len(versions) == 2 and "[[a2]]" in versions[0] and "[[b2]]" in versions[1]
    # merging the result again with either side changes nothing more (idempotent)
    again = merge_memory("p.md", ours, merged.text, theirs, "2026-11-30")
    assert again.text.count(CONFLICT_WORD) == 1


def test_merge_memory_a_further_rewrite_of_the_same_rewrite_is_taken_not_a_conflict():
    rewritten = _rewrite(
        BASE, "Has a cat", "Has two cats", "2026-11-29", "b2"
    )  # both machines made this rewrite
    further = rewritten.replace(
        "- Has two cats (updated 2026-11-29, was: Has a cat (source: [[n1]])) (source: [[b2]])",
        "- Has three cats (updated 2026-11-30, was: Has two cats (updated 2026-11-29, was: Has a cat (source: [[n1]])) (source: [[b2]])) (source: [[a3]])",
    )
    assert further != rewritten
    for ours, theirs in ((further, rewritten), (rewritten, further)):
        merged = merge_memory("p.md", BASE, ours, theirs, "2026-11-30")
        assert merged.conflicts == [] and "- Has three cats" in merged.text


def test_merge_memory_removed_on_one_side_and_rewritten_on_the_other_keeps_the_rewrite():
    ours = BASE.replace("- Has a cat (source: [[n1]])\n", "")
    theirs = _rewrite(BASE, "Has a cat", "Has two cats", "2026-11-29", "b2")
    merged = merge_memory("p.md", BASE, ours, theirs, "2026-11-30")
    assert "Has two cats" in merged.text and merged.notices


def test_merge_memory_text_outside_statements_changed_both_ways_is_a_conflict():
    ours = BASE.replace("# Profile", "# Who he is")
    theirs = BASE.replace("# Profile", "# About him")
    with pytest.raises(MergeConflict, match=r"p\.md"):
        merge_memory("p.md", BASE, ours, theirs, "2026-11-30")


def test_merge_memory_both_created_the_same_file():
    ours = "# Travel\n\n- Likes trains (source: [[a]])\n"
    theirs = "# Travel\n\n- Hates flying (source: [[b]])\n"
    text = merge_memory("t.md", None, ours, theirs, "2026-11-30").text
    assert text.count("# Travel") == 1 and "Likes trains" in text and "Hates flying" in text


def test_merge_memory_keeps_crlf():
    ours = (BASE + "- Likes tea (source: [[a1]])\n").replace("\n", "\r\n")
    merged = merge_memory(
        "p.md",
        BASE.replace("\n", "\r\n"),
        ours,
        BASE.replace("\n", "\r\n") + "- x (source: [[b]])\r\n",
        "2026-11-30",
    )
    assert "\r\n" in merged.text and "\n" not in merged.text.replace("\r\n", "")


def test_merge_state_is_a_union():
    def state(notes: dict, passes: list) -> bytes:
        import json

        return json.dumps({"version": 1, "notes": notes, "passes": passes}).encode()

    entry = lambda sha, time, lines: {
        "sha256": sha,
        "lines": lines,
        "pass": "p",
        "time": time,
        "into": [],
    }
    base = state({"n0.md": entry("0", "2026-11-01", ["x"])}, [{"id": "p0", "time": "2026-11-01"}])
    ours = state(
        {"n0.md": entry("1", "2026-11-02", ["y"]), "a.md": entry("a", "2026-11-02", [])},
        [{"id": "p0", "time": "2026-11-01"}, {"id": "pa", "time": "2026-11-02"}],
    )
    theirs = state(
        {"n0.md": entry("2", "2026-11-03", ["z"]), "b.md": entry("b", "2026-11-03", [])},
        [{"id": "p0", "time": "2026-11-01"}, {"id": "pb", "time": "2026-11-03"}],
    )
    merged = parse_state(merge_state(base, ours, theirs).decode(), "state.json")
    assert set(merged.notes) == {"n0.md", "a.md", "b.md"}
    assert merged.notes["n0.md"].sha256 == "2" and merged.notes["n0.md"].lines == {"y", "z"}
    assert [p["id"] for p in merged.passes] == ["p0", "pa", "pb"]


def test_merge_state_keeps_the_landed_side_first_within_one_second():
    """Pass times have one-second steps and ids end in random hex: two passes in one second
    keep the order they landed in (the other side's first), never the order of their ids."""
    import json

    def state(passes: list) -> bytes:
        return json.dumps({"version": 1, "notes": {}, "passes": passes}).encode()

    second = "2026-11-02T10:00:00Z"
    base = state([{"id": "p0", "time": "2026-11-01"}])
    for mine, other in (
        ("20261102-100000-ffff", "20261102-100000-0000"),
        ("20261102-100000-0000", "20261102-100000-ffff"),
    ):
        ours = state([{"id": "p0", "time": "2026-11-01"}, {"id": mine, "time": second}])
        theirs = state([{"id": "p0", "time": "2026-11-01"}, {"id": other, "time": second}])
        merged = parse_state(merge_state(base, ours, theirs).decode(), "state.json")
        assert [p["id"] for p in merged.passes] == ["p0", other, mine]


def test_merge_checklist_per_note():
    header = "# Archive checklist\n"
    line = lambda name, box=" ": (
        f"- [{box}] [[{name}]] → archive/2026-11/{name}.md · into [[profile]] · sha256:abcd"
    )
    base = f"{header}\n## 2026-11-28 · pass p0\n{line('n1')}\n{line('n2')}\n"
    ours = f"{header}\n## 2026-11-28 · pass p0\n{line('n1', 'x')}\n{line('n2')}\n\n## 2026-11-29 · pass pa\n{line('a1')}\n"
    theirs = f"{header}\n## 2026-11-28 · pass p0\n{line('n1')}\n\n## 2026-11-30 · pass pb\n{line('b1')}\n"
    merged = merge_checklist("c.md", base, ours, theirs)
    assert "- [x] [[n1]]" in merged  # ticked here
    assert "[[n2]]" not in merged  # archived there
    assert "[[a1]]" in merged and "[[b1]]" in merged and "<<<" not in merged


def test_merge_plain_appends_on_both_sides_and_refuses_overlaps():
    assert merge_plain("n.md", "a\n", "a\nb\n", "a\nc\n") == "a\nb\nc\n"
    with pytest.raises(MergeConflict, match=r"n\.md"):
        merge_plain("n.md", "a\nb\n", "a\nx\n", "a\ny\n")


def test_undo_after_a_sync_reverts_a_pass_never_the_merge(machines, monkeypatch, capsys):
    _, (a, b, _) = machines
    converge(a)  # the sample notes, on one machine
    sync(a)
    sync(b)
    note(a, "2026-11-29 laptop", "- 以后都先给结论再解释\n")
    note(b, "2026-11-29 desktop", "- 我决定周末不写代码\n")
    converge(a)
    converge(b)
    sync(a)
    assert sync(b).merged == "merge"
    merge = head(b)
    from cmem.archive.undo import plan_undo

    plan = plan_undo(open_vault(b))
    assert (
        plan.target is not None and plan.target.sha != merge and "converge" in plan.target.subject
    )
    code, out, err = run_main(monkeypatch, capsys, "undo", "--yes", "--vault", str(b), "--json")
    assert code == 0, (out, err)
    assert git(b, "log", "-1", "--format=%P").split() == [
        merge
    ]  # a plain commit on top: history kept
    code, out, _ = run_main(monkeypatch, capsys, "log", "--vault", str(b), "--json")
    assert code == 0 and merge not in out


# --- git.sync: auto -------------------------------------------------------------------------------


def _auto(machines_list: list[Path], note_too: bool = False) -> None:
    for root in machines_list:
        config = root / ".cmem/config.yaml"
        extra = "\ngit:\n  sync: auto\n" + ("  sync_note: true\n" if note_too else "")
        config.write_text(config.read_text("utf-8") + extra, encoding="utf-8")
        git(root, "commit", "-qam", "sync: auto")


def test_auto_sync_runs_before_and_after_a_pass(machines, monkeypatch, capsys):
    remote, (a, b, _) = machines
    _auto([a, b])
    note(a, "2026-11-29 laptop", "- 以后都先给结论再解释\n")
    code, _, err = run_main(
        monkeypatch, capsys, "converge", "--engine", "builtin", "--vault", str(a)
    )
    assert code == 0, err
    assert git(remote, "rev-parse", "main").strip() == head(a)  # pushed after the pass
    note(b, "2026-11-29 desktop", "- 我决定周末不写代码\n")
    code, _, err = run_main(
        monkeypatch, capsys, "converge", "--engine", "builtin", "--vault", str(b)
    )
    assert code == 0, err
    assert git(remote, "rev-parse", "main").strip() == head(b)
    assert head(a) in git(b, "rev-list", "HEAD").split()  # b synced a's pass in before its own
    merged = "\n".join(statements_of(b))
    # the builtin engine states what holds (cue words such as 以后都 and 我决定 stripped)
    assert "先给结论再解释" in merged and "周末不写代码" in merged


def test_auto_sync_offline_says_so_once_and_the_pass_runs(machines, monkeypatch, capsys, tmp_path):
    remote, (a, _, _) = machines
    _auto([a])
    shutil.move(str(remote), str(tmp_path / "gone.git"))
    note(a, "2026-11-29 laptop", "- 以后都先给结论再解释\n")
    code, out, err = run_main(
        monkeypatch, capsys, "converge", "--engine", "builtin", "--vault", str(a), "--json"
    )
    assert code == 0
    import json

    assert json.loads(out)["status"] == "applied"
    assert err.count("warning: offline:") == 1 and err.count("cannot be reached") == 1


def test_auto_sync_takes_notes_along_when_configured(machines, monkeypatch, capsys):
    remote, (a, b, _) = machines
    _auto([a, b], note_too=True)
    sync(a)
    sync(b)
    code, out, err = run_main(
        monkeypatch, capsys, "note", "--vault", str(a), "--json", "拍照备份都放 NAS"
    )
    assert code == 0, err
    import json

    rel = json.loads(out)["note"]
    sync(b)
    assert "拍照备份都放 NAS" in (b / rel).read_text("utf-8")


def test_auto_sync_off_by_default_leaves_the_remote_alone(machines, monkeypatch, capsys):
    remote, (a, _, _) = machines
    before = git(remote, "rev-parse", "main").strip()
    note(a, "2026-11-29 laptop", "- 以后都先给结论再解释\n")
    code, _, _ = run_main(monkeypatch, capsys, "converge", "--engine", "builtin", "--vault", str(a))
    assert code == 0 and git(remote, "rev-parse", "main").strip() == before


def test_the_next_pass_is_given_the_conflict_statements_to_resolve(machines):
    _, (a, b, _) = machines
    topic = "converged/topics/job-search.md"
    text = (a / topic).read_text("utf-8")
    line = next(found for _, found in statement_lines(text) if found.startswith("- "))
    conflict = "- ⚠ conflict (2026-11-30): 住在深圳（来源：[[x]]） ⟷ 住在杭州（来源：[[y]]）"
    (a / topic).write_text(text.replace(line, line + "\n" + conflict), encoding="utf-8")
    git(a, "commit", "-qam", "a conflict a sync left")
    note(a, "2026-11-29 laptop", "- 以后都先给结论再解释\n")
    prompt = run_pass(open_vault(a), PassOptions(engine="builtin", emit_prompt=True)).prompt
    assert (
        conflict in prompt and "冲突条目" in prompt and topic in prompt.split("冲突条目")[-1]
    )  # the sample vault is zh
    converge(
        a
    )  # the builtin engine cannot judge between two wordings: it keeps the conflict, never drops it
    assert conflict in (a / topic).read_text("utf-8")


def test_first_sync_to_an_empty_remote_named_by_git_remote_creates_the_branch(
    sample_vault, tmp_path
):
    remote = tmp_path / "empty.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    git(sample_vault, "remote", "add", "backup", str(remote))
    config = sample_vault / ".cmem/config.yaml"
    config.write_text(
        config.read_text("utf-8") + "\ngit:\n  remote: backup\n", encoding="utf-8"
    )  # left uncommitted
    result = sync(sample_vault)
    assert result.pushed and result.snapshot  # the config edit was committed first, and went along
    assert git(remote, "rev-parse", "main").strip() == head(sample_vault)
    assert sync(sample_vault).status == "nothing"


def test_merge_memory_one_side_renamed_a_heading_the_other_added_statements():
    ours = BASE.replace("# Profile", "# Who he is")
    theirs = BASE + "- Runs every morning (source: [[b1]])\n"
    text = merge_memory("p.md", BASE, ours, theirs, "2026-11-30").text
    assert "# Who he is" in text and "# Profile" not in text and "Runs every morning" in text
    reverse = merge_memory("p.md", BASE, theirs, ours, "2026-11-30").text
    assert (
        "# Who he is" in reverse and "# Profile" not in reverse and "Runs every morning" in reverse
    )


def test_the_sync_benchmark_runs_and_prints_its_figures():
    """A smoke test (no timing asserted, docs/design.md §12): bench/sync.py still runs end to
    end."""
    from support import REPO

    result = subprocess.run(
        [sys.executable, str(REPO / "bench" / "sync.py"), "--runs", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert (
        "cmem sync (nothing to do) vs git fetch" in result.stdout
        and "the floor" in result.stdout
        and "the full path's own work" in result.stdout
    )
    # the idle answer is what was timed: the bench checks it comes, before and after the timing
    assert "idle answer after" in result.stdout


def test_a_model_pass_resolves_a_conflict_statement_keeping_both_versions_in_its_trace(
    sample_vault,
):
    """What the prompt asks for passes the validator: one statement, a trace of today quoting the
    whole conflict statement (so both versions and their traces stay in history), both sources."""
    profile = sample_vault / "converged/core/profile.md"
    old = "- 住在广州，去深圳面试可以当天往返（来源：[[2026-10-19 面试复盘]]）"
    was = "住在广州，去深圳面试可以当天往返（来源：[[2026-10-19 面试复盘]]）"
    conflict = (
        f"- ⚠ conflict (2026-11-30): 住在深圳（更新于 2026-11-29，原为：{was}）（来源：[[2026-11-28 随手记]]）"
        f" ⟷ 住在杭州（更新于 2026-11-30，原为：{was}）（来源：[[2026-11-24 随手记]]）"
    )
    text = profile.read_text("utf-8")
    assert old in text
    profile.write_text(text.replace(old, conflict), encoding="utf-8")
    write_files(sample_vault, {"2026-11-30 搬家.md": "- 其实不是住在杭州，现在住在深圳\n"})
    git(sample_vault, "add", "-A")
    git(sample_vault, "commit", "-qm", "a conflict a sync left, and a note that settles it")
    assert find_conflicts(open_vault(sample_vault))
    resolved = (
        f"- 住在深圳（更新于 2026-11-30，原为：{conflict[2:]}）"
        "（来源：[[2026-11-28 随手记]]、[[2026-11-24 随手记]]、[[2026-11-30 搬家]]）"
    )
    new_profile = profile.read_text("utf-8").replace(conflict, resolved)
    response = (
        f'<convergence>\n<file path="converged/core/profile.md">\n{new_profile.rstrip()}\n</file>\n'
        '<converged note="2026-11-30 搬家.md" into="converged/core/profile.md"/>\n</convergence>\n'
    )
    result = run_pass(
        open_vault(sample_vault),
        PassOptions(response_text=response, only=["2026-11-30 搬家"], now=NOW),
    )
    assert result.status == "applied", result.errors
    assert not find_conflicts(open_vault(sample_vault))
    final = profile.read_text("utf-8")
    assert (
        "住在杭州" in final and "住在深圳（更新于 2026-11-30" in final
    )  # the other version is in the trace


def test_a_vault_inside_a_larger_repository_is_refused(tmp_path, monkeypatch, capsys):
    outer = tmp_path / "outer"
    vault = outer / "memory"
    (vault / ".cmem").mkdir(parents=True)
    (vault / ".cmem/config.yaml").write_text("git:\n  allow_parent_repo: true\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q", "-b", "main", str(outer)], check=True)
    git(outer, "add", "-A")
    git(outer, "commit", "-qm", "init")
    code, _, err = run_main(monkeypatch, capsys, "sync", "--vault", str(vault))
    assert code == 1 and "not the top of its own git repository" in err
    assert "files outside the vault" in err and "cmem init --repo own" in err


def test_a_note_edited_on_both_machines_and_archived_on_one_keeps_both_edits_in_place(machines):
    _, (a, b, _) = machines
    source = "2026-11-27 notes.md"
    with open(a / source, "a", encoding="utf-8") as handle:
        handle.write("- 以后都用 uv 管理 Python 项目\n")  # edited on a, converged, then archived
    converge_judged(a)
    staged = plan_archive(open_vault(a), all_lines=True)
    assert any(m.source == source for m in staged.moves)
    apply_archive(open_vault(a), staged, now=NOW)
    with open(b / source, "a", encoding="utf-8") as handle:
        handle.write("- 补充：台式机上写的一行\n")
    git(b, "commit", "-qam", "edit on b")
    before = {a: statements_of(a), b: statements_of(b)}
    sync(a)
    result = sync(b)
    assert source in result.kept
    text = (b / source).read_text("utf-8")
    assert "以后都用 uv 管理 Python 项目" in text and "台式机上写的一行" in text
    assert not [
        p
        for p in git(b, "ls-files", "-z", "archive").split("\0")
        if p.endswith("2026-11-27 notes.md")
    ]
    sync(a)
    check_invariants([a, b], before)


def test_merge_plain_keeps_lines_both_sides_inserted_at_the_same_place():
    base = "# n\n- one\n- two\n"
    ours = "# n\n- zero\n- one\n- two\n- ours\n"
    theirs = "# n\n- one\n- two\n- theirs\n"
    merged = merge_plain("n.md", base, ours, theirs)
    assert merged == "# n\n- zero\n- one\n- two\n- ours\n- theirs\n"


# --- interleavings --------------------------------------------------------------------------------

SIGNAL_LINES = [
    "以后都用 uv 管理 Python 项目",
    "我决定周末不写代码",
    "其实不是住在广州，现在住在深圳",
    "以后都先给结论再解释",
    "改用 Svelte 写前端",
    "我决定简历用英文写",
    "以后都用中文回答",
]


@pytest.mark.parametrize("seed", [5, 25])
def test_random_interleavings_of_three_machines_keep_every_invariant(machines, seed):
    """Notes, edits, passes, archive applies and syncs on three machines in a seeded random order
    (seeds that once found bugs: a checklist section emptied on both sides, an archived note
    edited on both, lines inserted at the same place); then everyone syncs until they agree."""
    import random

    _, clones = machines
    rnd = random.Random(seed)
    seen: dict[Path, list[str]] = {root: [] for root in clones}
    for step in range(30):
        root = rnd.choice(clones)
        action = rnd.choice(["note", "note", "converge", "sync", "sync", "archive", "edit"])
        if action == "note":
            note(
                root,
                f"2026-11-{rnd.randint(1, 28):02d} {root.name}{step}",
                f"- {rnd.choice(SIGNAL_LINES)} {step}\n",
            )
        elif action == "converge":
            converge(root)
            seen[root] += statements_of(root)
        elif action == "sync":
            sync(root)
        elif action == "archive":
            plan = plan_archive(open_vault(root), all_lines=True)
            if plan.moves:
                apply_archive(open_vault(root), plan, now=NOW)
        else:
            notes = sorted(root.glob("2026-11-*.md"))
            if notes:
                with open(rnd.choice(notes), "a", encoding="utf-8") as handle:
                    handle.write(f"- 补充 {step}\n")
    for _ in range(2):
        for root in clones:
            sync(root)
    assert len({head(root) for root in clones}) == 1
    check_invariants(clones, {root: list(dict.fromkeys(lines)) for root, lines in seen.items()})


def test_sync_json_fields(machines, monkeypatch, capsys):
    _, (a, b, _) = machines
    note(a, "2026-11-29 laptop", "- 以后都先给结论再解释\n")
    converge(a)
    code, out, _ = run_main(monkeypatch, capsys, "sync", "--vault", str(a), "--json")
    import json

    data = json.loads(out)
    assert code == 0 and data["status"] == "synced" and data["pushed"] is True
    assert {
        "status",
        "remote",
        "branch",
        "merged",
        "commit",
        "pushed",
        "attempts",
        "reason",
        "snapshot",
        "changed",
        "merged_files",
        "conflicts",
        "kept",
        "notices",
    } <= set(data)
    code, out, _ = run_main(monkeypatch, capsys, "sync", "--vault", str(b), "--json")
    data = json.loads(out)
    assert data["merged"] == "fast-forward" and data["commit"] == head(a) and data["changed"]
    code, out, _ = run_main(monkeypatch, capsys, "sync", "--vault", str(b))
    assert code == 0 and "up to date with origin/main" in out


def test_auto_sync_around_a_pass_started_by_watch(machines):
    from cmem.triggers.watch import Watcher

    remote, (a, _, _) = machines
    _auto([a])
    note(a, "2026-11-29 laptop", "- 以后都先给结论再解释\n")
    messages: list[str] = []
    outcome = Watcher(open_vault(a), 0.0, messages.append)._converge()
    assert outcome.status == "applied", outcome
    assert git(remote, "rev-parse", "main").strip() == head(a)


def test_auto_sync_after_a_pass_an_agent_applies_over_mcp(machines):
    from cmem.mcp_server import MemoryTools

    remote, (a, _, _) = machines
    _auto([a])
    write_files(a, {"2026-11-30 搬家.md": "- 其实不是住在杭州，现在住在深圳\n"})
    profile = (a / "converged/core/profile.md").read_text("utf-8").rstrip("\n")
    response = (
        f'<convergence>\n<file path="converged/core/profile.md">\n{profile}\n'
        "- 现在住在深圳（来源：[[2026-11-30 搬家]]）\n</file>\n"
        '<converged note="2026-11-30 搬家.md" into="converged/core/profile.md"/>\n</convergence>\n'
    )
    data = MemoryTools(a).converge_apply(response, notes=["2026-11-30 搬家"])
    assert data["status"] == "applied", data
    assert data["sync"] == "synced" and git(remote, "rev-parse", "main").strip() == head(a)


def test_doctor_says_which_remote_sync_uses_or_why_it_cannot(machines, sample_vault):
    from cmem.doctor.checks import run_doctor

    _, (a, _, _) = machines
    _auto([a])
    found = [f for f in run_doctor(open_vault(a)) if f.check == "sync" and "cmem sync" in f.message]
    assert found and found[0].level == "ok" and "origin/main" in found[0].message
    _auto([sample_vault])  # auto, but no remote at all
    found = [
        f
        for f in run_doctor(open_vault(sample_vault))
        if f.check == "sync" and "cmem sync" in f.message
    ]
    assert found and found[0].level == "warn" and "no remote to sync with" in found[0].message


# --- nothing to do: the light path (cmem.sync.idle) -------------------------------------------


def _settle(*roots: Path, refresh: bool = True) -> None:
    """Date every file and folder an hour back, .git too: as a vault nobody touched for a while
    looks, so its listing may be stored (the racy-timestamp rule of cmem.reading.stored_results).
    `refresh=False` leaves git's index holding the files' old times, as after files are touched:
    a `git status` then refreshes and rewrites it, if it may."""
    past = datetime.now().timestamp() - 3600
    for root in roots:
        for folder, _, files in os.walk(root):
            for name in files:
                os.utime(os.path.join(folder, name), (past, past), follow_symlinks=False)
            os.utime(folder, (past, past))
        if refresh and (root / ".git" / "index").exists():
            # the index as git leaves it after a commit: holding the files' new times (else the
            # next git status refreshes and rewrites it) and written after them (a file as new
            # as the index is "racily clean", and git status would rewrite it too)
            git(root, "update-index", "-q", "--refresh")
            os.utime(root / ".git" / "index", (past + 60, past + 60))


def cmem_sync(root: Path, tmp_path: Path, *args: str) -> tuple[int, str, str, list[str]]:
    """`cmem sync` as the installed command runs it, with a `git` on PATH that logs each call cmem
    makes (git's own children run git-core directly and are not logged): (exit code, stdout,
    stderr, the git subcommands run, in order)."""
    fake = tmp_path / "fake-bin"
    fake.mkdir(exist_ok=True)
    log = tmp_path / "git-calls.log"
    log.write_text("", encoding="utf-8")
    real = shutil.which("git")
    (fake / "git").write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n')
    (fake / "git").chmod(0o755)
    env = dict(os.environ, PATH=f"{fake}{os.pathsep}{os.environ['PATH']}")
    result = subprocess.run(
        [sys.executable, "-m", "cmem", "sync", "--vault", str(root), *args],
        capture_output=True,
        text=True,
        env=env,
    )
    calls = []
    for line in log.read_text(encoding="utf-8").splitlines():
        words = line.split()
        # the subcommand: the first word after the -c options, `-C <folder>` and git's own flags
        index = 0
        while index < len(words) and (words[index] in ("-c", "-C") or words[index][:2] == "--"):
            index += 1 if words[index][:2] == "--" else 2
        calls.append(words[index] if index < len(words) else "")
    return result.returncode, result.stdout, result.stderr, calls


def _idle_clone(machines, tmp_path) -> Path:
    """Machine a, synced once by the full path with its files settled, so the light path has
    what it needs; the sync after it must take the light path."""
    remote, (a, b, _) = machines
    _settle(a, remote)
    code, out, _, calls = cmem_sync(a, tmp_path)
    assert code == 0 and out == "up to date with origin/main\n" and "status" in calls
    return a


def test_nothing_to_do_runs_one_fetch_and_nothing_else(machines, tmp_path):
    a = _idle_clone(machines, tmp_path)
    for args in ((), ("--json",)):
        code, out, err, calls = cmem_sync(a, tmp_path, *args)
        assert calls == ["fetch"], calls  # no git config, no git status, no rev-parse
        assert code == 0 and err == ""
    full = CliRunner().invoke(app, ["sync", "--vault", str(a), "--json"])
    assert out == full.stdout  # the full CLI's --json, byte for byte
    assert '"status": "nothing"' in out


def test_the_light_path_hands_over_when_there_is_something_to_do(machines, tmp_path):
    remote, (_, b, _) = machines
    a = _idle_clone(machines, tmp_path)
    # an edit since the last sync: the full path commits it and pushes it
    note(a, "2026-11-29 edit", "- 以后都先给结论\n")
    code, out, _, calls = cmem_sync(a, tmp_path)
    assert code == 0 and "status" in calls and "pushed to origin/main" in out
    assert git(a, "status", "--porcelain") == ""
    # the remote moved: the other machine pushed; the fetch sees it and the full path merges
    _settle(a, remote)
    assert "status" in cmem_sync(a, tmp_path)[3]  # the full path, which stores for the next
    assert cmem_sync(a, tmp_path)[3] == ["fetch"]
    note(b, "2026-11-28 other", "- 我决定每周五复盘\n")
    sync(b)
    code, out, _, calls = cmem_sync(a, tmp_path)
    assert code == 0 and calls[0] == "fetch" and len(calls) > 1 and "fast-forwarded" in out
    assert (a / "2026-11-28 other.md").exists()
    # this machine ahead (a commit made with git itself): the full path pushes it
    _settle(a, remote)
    cmem_sync(a, tmp_path)
    assert cmem_sync(a, tmp_path)[3] == ["fetch"]
    note(a, "2026-11-27 local", "- 记住：先写测试\n")
    git(a, "add", "-A")
    git(a, "commit", "-qm", "by hand")
    code, out, _, calls = cmem_sync(a, tmp_path)
    assert code == 0 and "push" in calls and "pushed to origin/main" in out
    assert git(remote, "rev-parse", "main").strip() == head(a)


def test_the_light_path_hands_over_while_a_step_runs_or_was_interrupted(machines, tmp_path):
    import fcntl

    a = _idle_clone(machines, tmp_path)
    vault = open_vault(a)
    lock = vault.machine_dir / "pass.lock"
    with open(lock, "a+") as handle:  # a pass running on this machine holds the step lock
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        code, out, _, calls = cmem_sync(a, tmp_path)
        assert code == 0 and "status" in calls and out == "up to date with origin/main\n"
    assert cmem_sync(a, tmp_path)[3] == ["fetch"]  # the lock released: light again
    (vault.journal_dir / "step-1").mkdir(parents=True)  # a step a killed process left
    _, _, _, calls = cmem_sync(a, tmp_path)
    assert calls != ["fetch"]
    shutil.rmtree(vault.journal_dir / "step-1")


def test_the_light_path_hands_over_on_a_new_branch_a_config_change_or_an_unstaged_index(
    machines, tmp_path
):
    remote, _ = machines
    a = _idle_clone(machines, tmp_path)
    git(a, "rm", "-q", "--cached", "README.md")  # the index changed, the files did not
    code, out, _, calls = cmem_sync(a, tmp_path)
    assert calls != ["fetch"]
    git(a, "reset", "-q")
    _settle(a, remote)
    cmem_sync(a, tmp_path)
    assert cmem_sync(a, tmp_path)[3] == ["fetch"]
    git(a, "remote", "set-url", "origin", str(remote) + "-moved")  # .git/config rewritten
    code, out, err, calls = cmem_sync(a, tmp_path)
    assert code == OFFLINE_EXIT_CODE and "cannot be reached" in err and calls != ["fetch"]
    git(a, "remote", "set-url", "origin", str(remote))
    git(a, "checkout", "-q", "-b", "elsewhere")  # another branch, no upstream
    code, out, err, calls = cmem_sync(a, tmp_path)
    assert code == 1 and "no remote to sync with" in err


# --- the sync record: this machine's last sync, shown by status --------------------------------


def status_of(root: Path, *args: str) -> tuple[str, bool]:
    """`cmem status ARGS` through the installed entry point: (stdout, served from the stored
    result — the config reader never imported)."""
    argv = ["status", "--vault", str(root), *args]
    code = f"import sys; sys.argv = ['cmem', *{argv!r}]; from cmem.cli import main; main()"
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout, " cmem.vault.config\n" not in result.stderr


def test_status_shows_the_last_sync_of_this_machine(machines, tmp_path):
    import json

    remote, (a, b, _) = machines
    before, _ = status_of(a, "--json")
    assert json.loads(before)["last_sync"] is None and "last sync" not in status_of(a)[0]
    note(a, "2026-11-29 laptop", "- 以后都先给结论\n")
    assert cmem_sync(a, tmp_path)[0] == 0
    last = json.loads(status_of(a, "--json")[0])["last_sync"]
    assert (last["outcome"], last["remote"]) == ("pushed", "origin/main")
    assert last["age_seconds"] < 600 and last["time"]
    assert re.search(r"\n  last sync \d+ s ago: pushed \(origin/main\)\n", status_of(a)[0])
    # kept in the machine folder, never in the vault: nothing for git to carry or conflict on
    assert git(a, "status", "--porcelain") == "" and "last_sync" not in (
        a / ".cmem" / "state.json"
    ).read_text("utf-8")
    assert (open_vault(a).machine_dir / "last-sync").exists()
    sync(b)  # b fast-forwards to a's note: merged
    assert json.loads(status_of(b, "--json")[0])["last_sync"]["outcome"] == "merged"
    shutil.move(str(remote), str(tmp_path / "elsewhere.git"))
    assert cmem_sync(a, tmp_path)[0] == OFFLINE_EXIT_CODE
    text, _ = status_of(a)
    assert "ago: offline (origin/main) — the remote origin cannot be reached" in text
    git(a, "remote", "remove", "origin")
    assert cmem_sync(a, tmp_path)[0] == 1
    last = json.loads(status_of(a, "--json")[0])["last_sync"]
    assert last["outcome"] == "refused" and "no remote to sync with" in last["detail"]


def test_a_stored_status_shows_the_newest_sync(machines, tmp_path):
    import json

    remote, _ = machines
    a = _idle_clone(machines, tmp_path)
    _settle(a, remote)
    status_of(a, "--json")  # computed and stored
    first, hit = status_of(a, "--json")
    assert hit and json.loads(first)["last_sync"]["outcome"] == "up to date"
    record = open_vault(a).machine_dir / "last-sync"
    text = record.read_text("utf-8").replace("outcome: up to date", "outcome: offline")
    record.write_text(text, encoding="utf-8")  # as an offline sync since would leave it
    again, hit = status_of(a, "--json")
    assert hit and json.loads(again)["last_sync"]["outcome"] == "offline"


# --- unattended remotes never prompt ------------------------------------------------------------


def _fake_ssh(tmp_path: Path) -> tuple[Path, Path]:
    """A `ssh` on PATH that logs its arguments and GIT_TERMINAL_PROMPT, then runs the remote
    command here (the last argument), so an ssh remote works with no network: (bin, log)."""
    fake, log = tmp_path / "ssh-bin", tmp_path / "ssh.log"
    fake.mkdir(exist_ok=True)
    (fake / "ssh").write_text(
        "#!/bin/sh\n"
        f'echo "$* prompt=$GIT_TERMINAL_PROMPT" >> "{log}"\n'
        'for last; do :; done\nexec sh -c "$last"\n',
        encoding="utf-8",
    )
    (fake / "ssh").chmod(0o755)
    log.write_text("", encoding="utf-8")
    return fake, log


def test_sync_runs_ssh_in_batch_mode_and_git_without_prompts(machines, tmp_path, monkeypatch):
    remote, (a, b, _) = machines
    fake, log = _fake_ssh(tmp_path)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv(
        "GIT_TERMINAL_PROMPT", "1"
    )  # even a user's own setting: a hook must not wait
    git(a, "remote", "set-url", "origin", f"somehost:{remote}")  # scp-like: git runs ssh
    note(a, "2026-11-29 laptop", "- 以后都先给结论\n")
    result = sync(a)
    assert result.pushed and git(remote, "rev-parse", "main").strip() == head(a)
    calls = log.read_text("utf-8").splitlines()
    assert len(calls) == 2  # the fetch and the push, both through the fake ssh
    assert all(
        "-o BatchMode=yes" in call and "somehost" in call and call.endswith("prompt=0")
        for call in calls
    ), calls
    # the light path's fetch runs with the same environment
    _settle(a, remote)
    cmem_sync(a, tmp_path)
    log.write_text("", encoding="utf-8")
    code, _, _, git_calls = cmem_sync(a, tmp_path)
    assert code == 0 and git_calls == ["fetch"]
    assert "-o BatchMode=yes" in log.read_text("utf-8")
    # the user's own ssh is left alone: GIT_SSH_COMMAND, or core.sshCommand
    git(b, "remote", "set-url", "origin", f"ssh://somehost{remote}")
    log.write_text("", encoding="utf-8")
    monkeypatch.setenv("GIT_SSH_COMMAND", "ssh -o User=me")
    assert sync(b).status == "synced"
    assert "User=me" in log.read_text("utf-8") and "BatchMode" not in log.read_text("utf-8")
    monkeypatch.delenv("GIT_SSH_COMMAND")
    git(b, "config", "core.sshCommand", "ssh -o User=config")
    log.write_text("", encoding="utf-8")
    sync(b)
    assert "User=config" in log.read_text("utf-8") and "BatchMode" not in log.read_text("utf-8")


# --- file modes ---------------------------------------------------------------------------------


def _mode(root: Path, path: str) -> tuple[str, bool]:
    """(the mode HEAD holds, whether the file on disk is executable)."""
    listed = git(root, "ls-tree", "HEAD", "--", path).split()
    return listed[0], os.access(root / path, os.X_OK)


def _commit_by_hand(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)


def test_merges_keep_an_executable_file_executable(machines):
    remote, (a, b, _) = machines
    write_files(a, {"bin/tidy.sh": "#!/bin/sh\necho tidy\n"})
    _commit_by_hand(a, "a script")
    sync(a)
    sync(b)
    assert _mode(b, "bin/tidy.sh") == ("100644", False)
    # made executable on one machine while the other wrote a note: b's merge takes the mode
    (a / "bin" / "tidy.sh").chmod(0o755)
    _commit_by_hand(a, "chmod +x")
    note(b, "2026-11-29 desk", "- 我决定每周五复盘\n")
    _commit_by_hand(b, "a note")
    sync(a)
    result = sync(b)
    assert result.merged == "merge"
    assert _mode(b, "bin/tidy.sh") == ("100755", True)
    sync(a)
    assert _mode(a, "bin/tidy.sh") == ("100755", True)
    # the script edited on one machine, a note on the other: the merged script stays executable
    write_files(a, {"bin/tidy.sh": "#!/bin/sh\necho tidier\n"})
    _commit_by_hand(a, "edit the script")
    note(b, "2026-11-28 desk", "- 以后都先给结论\n")
    _commit_by_hand(b, "another note")
    sync(a)
    assert sync(b).merged == "merge"
    assert _mode(b, "bin/tidy.sh") == ("100755", True)
    assert "tidier" in (b / "bin" / "tidy.sh").read_text("utf-8")
    # and a new executable file that arrives by fast-forward is executable on disk too
    write_files(a, {"bin/new.sh": "#!/bin/sh\n"})
    (a / "bin" / "new.sh").chmod(0o755)
    _commit_by_hand(a, "a new script")
    sync(b)
    sync(a)
    assert sync(b).merged == "fast-forward"
    assert _mode(b, "bin/new.sh") == ("100755", True)
    assert git(b, "status", "--porcelain") == ""


# --- what sync leaves to git ------------------------------------------------------------------


@pytest.mark.parametrize("diverged", [False, True])
def test_a_symbolic_link_from_the_other_machine_is_named_and_the_vault_left_intact(
    machines, diverged
):
    remote, (a, b, _) = machines
    os.symlink("README.md", b / "shortcut.md")
    _commit_by_hand(b, "a link")
    sync(b)
    if diverged:  # a merge, not a fast-forward
        note(a, "2026-11-29 laptop", "- 以后都先给结论\n")
        _commit_by_hand(a, "a note")
    before = (head(a), git(a, "status", "--porcelain"))
    with pytest.raises(CmemError, match=r"shortcut\.md is a symbolic link") as raised:
        sync(a)
    assert "merge it with git" in str(raised.value)
    assert (head(a), git(a, "status", "--porcelain")) == before  # nothing merged, nothing written
    assert not os.path.lexists(a / "shortcut.md")
    record = open_vault(a).machine_dir / "last-sync"
    assert "outcome: refused" in record.read_text("utf-8")


def test_the_light_path_hands_over_when_an_archived_note_is_edited_in_place(machines, tmp_path):
    # status reads the archive by folder times alone; sync must see such an edit, to commit it
    a = _idle_clone(machines, tmp_path)
    archived = next(p for p in (a / "archive").rglob("*.md") if "CHECKLIST" not in p.name)
    archived.write_text(archived.read_text("utf-8") + "- 补一句\n", encoding="utf-8")
    code, out, _, calls = cmem_sync(a, tmp_path)
    assert code == 0 and "status" in calls and "pushed to origin/main" in out
    assert git(a, "status", "--porcelain") == ""


# --- the full path leaves git's index alone; one fetch, whatever the outcome ---------------------


def _index_stat(root: Path) -> tuple[int, int, int]:
    st = (root / ".git" / "index").stat()
    return st.st_ino, st.st_mtime_ns, st.st_size


def test_the_sync_after_a_full_one_is_light_though_git_status_would_rewrite_the_index(
    machines, tmp_path
):
    # the files touched (an hour back) but git's index not refreshed: a git status allowed to
    # write would rewrite it, and the key the full sync stores (the index is in it) would be stale
    remote, (a, _, _) = machines
    _settle(a, remote, refresh=False)
    before = _index_stat(a)
    code, out, _, calls = cmem_sync(a, tmp_path)
    assert code == 0 and out == "up to date with origin/main\n" and "status" in calls
    assert _index_stat(a) == before  # the full sync's git status did not write it
    assert cmem_sync(a, tmp_path)[3] == ["fetch"]  # so the very next sync is light
    # the setup is the one described: git's own status, allowed to, does rewrite the index
    git(a, "status", "--porcelain")
    assert _index_stat(a) != before
    assert cmem_sync(a, tmp_path)[3] != ["fetch"]  # and a rewritten index is a miss


def test_an_edit_made_around_the_full_syncs_look_for_edits_is_never_missed(
    machines, tmp_path, monkeypatch, capsys
):
    """The key is taken before the full path's git status, which no longer refreshes the index:
    an edit before that status is committed by this sync, one after it misses the stored key."""
    from cmem.commands.sync import sync as sync_command
    from cmem.steps import preflight

    remote, (a, _, _) = machines
    real = preflight.managed_changes

    def edit_then_look(vault, **options):
        note(a, "2026-11-29 before", "- 以后都先给结论\n")
        return real(vault, **options)

    _settle(a, remote)
    monkeypatch.setattr(preflight, "managed_changes", edit_then_look)
    sync_command(vault=a, as_json=False)
    assert "pushed to origin/main" in capsys.readouterr().out
    assert git(a, "status", "--porcelain") == ""

    def look_then_edit(vault, **options):
        found = real(vault, **options)
        note(a, "2026-11-29 after", "- 我决定每周五复盘\n")
        return found

    _settle(a, remote)
    monkeypatch.setattr(preflight, "managed_changes", look_then_edit)
    sync_command(vault=a, as_json=False)
    assert capsys.readouterr().out == "up to date with origin/main\n"  # it looked before the edit
    monkeypatch.setattr(preflight, "managed_changes", real)
    code, out, _, calls = cmem_sync(a, tmp_path)  # the stored key misses: the full path commits it
    assert code == 0 and "status" in calls and "pushed to origin/main" in out
    assert "2026-11-29 after.md" in git(remote, "ls-tree", "--name-only", "main")


def test_the_idle_answer_walks_the_notes_while_git_fetches(machines, tmp_path, monkeypatch, capsys):
    """The fetch is most of an idle sync's time, and the walk of the notes needs nothing from it:
    the two overlap. The fake git's fetch says it started, then waits for the walk; the walk
    waits for the fetch to have started. Walked before the fetch, or after it (the fetch would
    give up waiting and fail), the sync would not be "up to date" from the idle answer."""
    from cmem import idle_sync
    from cmem.commands.sync import sync as sync_command

    a = _idle_clone(machines, tmp_path)
    started, walked = tmp_path / "fetch-started", tmp_path / "walked"
    fake = tmp_path / "waiting-bin"
    fake.mkdir()
    real = shutil.which("git")
    (fake / "git").write_text(
        "#!/bin/sh\n"
        'case " $* " in *" fetch "*)\n'
        f'  : > "{started}"\n'
        f'  i=0; while [ ! -e "{walked}" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done\n'
        f'  [ -e "{walked}" ] || {{ echo "the walk did not run during the fetch" >&2; exit 1; }};;\n'
        "esac\n"
        f'exec "{real}" "$@"\n'
    )
    (fake / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    walk = idle_sync.listing_matches
    during = []

    def walk_then_mark(entry, root):
        for _ in range(200):  # git takes a moment to start: wait for it, but not forever
            if started.exists():
                break
            time.sleep(0.05)
        during.append(started.exists())
        matched = walk(entry, root)
        walked.touch()
        return matched

    monkeypatch.setattr(idle_sync, "listing_matches", walk_then_mark)
    assert idle_sync.answer(a, False)[0] is not None and during == [True]
    started.unlink()
    walked.unlink()
    sync_command(vault=a, as_json=False)
    assert during == [True, True]
    assert capsys.readouterr().out == "up to date with origin/main\n"


def test_an_idle_sync_that_finds_an_edit_hands_its_fetch_to_the_full_path(machines, tmp_path):
    """The walk runs during the fetch, so a note edited since the stored sync is found after one
    fetch: the full path takes that fetch, commits the edit and pushes it."""
    from cmem import idle_sync

    remote, _ = machines
    a = _idle_clone(machines, tmp_path)
    assert cmem_sync(a, tmp_path)[3] == ["fetch"]
    with (a / "2026-11-29 laptop.md").open("a", encoding="utf-8") as handle:
        handle.write("- 以后都先给结论\n")
    shown, fetched = idle_sync.answer(a, False)
    assert shown is None  # the key misses: the full path's work
    assert fetched is not None and fetched["code"] == 0  # after the fetch it hands over
    code, out, _, calls = cmem_sync(a, tmp_path)
    assert code == 0 and "pushed to origin/main" in out
    assert calls.count("fetch") == 1 and calls[0] == "fetch" and "status" in calls, calls
    assert "2026-11-29 laptop.md" in git(remote, "ls-tree", "--name-only", "main")


def test_an_offline_sync_fetches_once_and_says_so_as_the_full_path_does(machines, tmp_path):
    remote, (_, b, _) = machines
    a = _idle_clone(machines, tmp_path)
    away = tmp_path / "away.git"
    shutil.move(str(remote), str(away))  # the remote unreachable; the stored key still matches
    code, out, err, calls = cmem_sync(a, tmp_path)
    assert calls.count("fetch") == 1, calls  # the light path's fetch, handed over, not run again
    assert calls[0] == "fetch" and "status" in calls  # and the full path reported it
    assert code == OFFLINE_EXIT_CODE and out == ""
    reason = sync_vault(open_vault(a)).reason  # the full path's own words, fetching itself
    assert "cannot be reached" in reason and reason in err
    code, out, _, calls = cmem_sync(a, tmp_path, "--json")
    assert calls.count("fetch") == 1 and code == OFFLINE_EXIT_CODE
    assert '"status": "offline"' in out and "cannot be reached" in out
    # back online, the other machine pushed: the fetch that saw it is the only one
    shutil.move(str(away), str(remote))
    _settle(a, remote)
    cmem_sync(a, tmp_path)
    assert cmem_sync(a, tmp_path)[3] == ["fetch"]
    note(b, "2026-11-28 other", "- 我决定每周五复盘\n")
    sync(b)
    code, out, _, calls = cmem_sync(a, tmp_path)
    assert code == 0 and "fast-forwarded" in out and calls.count("fetch") == 1, calls
    assert head(a) == head(b)


@pytest.mark.parametrize(
    "how, point",
    # a fast-forward makes no commit of its own: it is killed before or after its files
    [("merge", point) for point in KILL_POINTS]
    + [("fast-forward", point) for point in ("journal-written", "replace", "applied")],
)
def test_an_executable_file_stays_executable_when_a_killed_merge_is_recovered(machines, how, point):
    _, (a, b, _) = machines
    write_files(a, {"bin/tidy.sh": "#!/bin/sh\necho tidy\n"})
    _commit_by_hand(a, "a script")
    sync(a)
    sync(b)
    (a / "bin" / "tidy.sh").chmod(0o755)  # made executable on one machine
    write_files(a, {"bin/new.sh": "#!/bin/sh\n"})
    (a / "bin" / "new.sh").chmod(0o755)  # and a new executable file
    _commit_by_hand(a, "chmod +x, a new script")
    sync(a)
    if how == "merge":  # the other machine wrote a note meanwhile
        note(b, "2026-11-29 desk", "- 我决定每周五复盘\n")
        _commit_by_hand(b, "a note")
    killed = subprocess.run(
        [sys.executable, "-m", "cmem", "sync", "--vault", str(b)],
        env={**os.environ, "CMEM_FAULT": point},
        capture_output=True,
        text=True,
    )
    assert killed.returncode == -9, killed.stderr
    # the repair alone (every writing command makes it first): the step finished or undone,
    # what it leaves on disk is what it committed, modes included
    fixed = CliRunner().invoke(app, ["doctor", "--fix", "--yes", "--vault", str(b)])
    assert "rolled" in fixed.output or "finished" in fixed.output or "committed" in fixed.output
    assert git(b, "status", "--porcelain") == ""  # a lost mode would show as a change
    for script in ("bin/tidy.sh", "bin/new.sh"):
        if git(b, "ls-tree", "HEAD", "--", script):
            mode, executable = _mode(b, script)
            assert executable == (mode == "100755"), (script, mode)
    again = CliRunner().invoke(app, ["sync", "--vault", str(b)])
    assert again.exit_code == 0, again.output
    assert _mode(b, "bin/tidy.sh") == ("100755", True)
    assert _mode(b, "bin/new.sh") == ("100755", True)
    assert git(b, "status", "--porcelain") == ""


def _submodule_source(tmp_path: Path) -> Path:
    """A small repository to add as a submodule, with one commit."""
    lib = tmp_path / "lib-source"
    lib.mkdir()
    git(lib, "init", "-q", "-b", "main")
    write_files(lib, {"lib.txt": "one\n"})
    git(lib, "add", "-A")
    git(lib, "commit", "-qm", "lib: one")
    return lib


def _refused(root: Path, path: str) -> None:
    """The sync stops naming `path`, and nothing in the vault moved."""
    before = (head(root), git(root, "status", "--porcelain"))
    with pytest.raises(CmemError, match=rf"{re.escape(path)} is a symbolic link or submodule"):
        sync(root)
    assert (head(root), git(root, "status", "--porcelain")) == before
    assert "outcome: refused" in (open_vault(root).machine_dir / "last-sync").read_text("utf-8")


@pytest.mark.parametrize("diverged", [False, True])
def test_a_submodule_the_other_machine_added_or_moved_stops_the_sync_naming_it(
    machines, tmp_path, diverged
):
    remote, (a, b, _) = machines
    lib = _submodule_source(tmp_path)
    file_ok = ["-c", "protocol.file.allow=always"]  # a local path as the submodule's url
    git(b, *file_ok, "submodule", "add", "-q", str(lib), "lib")
    _commit_by_hand(b, "a submodule")
    sync(b)
    if diverged:  # a merge, not a fast-forward
        note(a, "2026-11-29 laptop", "- 以后都先给结论\n")
        _commit_by_hand(a, "a note")
    _refused(a, "lib")
    assert not (a / "lib").exists() and not (a / ".gitmodules").exists()
    # merged with git by hand, as the message says; then the other machine moves the submodule
    git(a, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
    sync(a)
    write_files(lib, {"lib.txt": "two\n"})
    git(lib, "commit", "-qam", "lib: two")
    git(b / "lib", "pull", "-q", "origin", "main")
    _commit_by_hand(b, "the submodule moved on")
    sync(b)
    if diverged:
        note(a, "2026-11-28 laptop", "- 我决定周末不写代码\n")
        _commit_by_hand(a, "another note")
    _refused(a, "lib")
    assert (
        git(a, "ls-tree", "HEAD", "lib").split()[2] != git(b, "ls-tree", "HEAD", "lib").split()[2]
    )


# --- one statement edited by hand differently on two machines (issue 35) ------------------------


def _edit(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new)


@pytest.mark.parametrize(
    "ours_new, theirs_new",
    [
        # both edited in place, no trace, the source kept
        ("- Lives in Shenzhen (source: [[n1]])", "- Lives in Hangzhou (source: [[n1]])"),
        # both edited, one of them with a new source
        ("- Lives in Shenzhen now (source: [[a9]])", "- Lives in Hangzhou (source: [[n1]])"),
        # reworded past recognition, but in its place: still the one statement
        ("- Moved to Shenzhen in 2026 (source: [[a9]])", "- Lives in Hangzhou (source: [[n1]])"),
        # one edited by hand, the other rewrote it with a trace
        (
            "- Lives in Shenzhen (source: [[n1]])",
            "- Lives in Hangzhou (updated 2026-11-29, was: Lives in Guangzhou (source: [[n1]])) "
            "(source: [[b2]])",
        ),
    ],
)
def test_merge_memory_one_statement_edited_differently_on_both_sides_is_a_conflict(
    ours_new, theirs_new
):
    old = "- Lives in Guangzhou (source: [[n1]])"
    ours, theirs = _edit(BASE, old, ours_new), _edit(BASE, old, theirs_new)
    for a, b in ((ours, theirs), (theirs, ours)):
        merged = merge_memory("p.md", BASE, a, b, "2026-11-30")
        assert len(merged.conflicts) == 1, merged.text
        versions = conflict_versions(merged.conflicts[0])
        assert any("Shenzhen" in v for v in versions) and any("Hangzhou" in v for v in versions)
        # one statement, not both wordings side by side
        assert merged.text.count("Shenzhen") == 1 and merged.text.count("Hangzhou") == 1
        assert "Looking for a Beijing backend internship" in merged.text
        assert "Has a cat" in merged.text


def test_merge_memory_hand_edits_that_are_not_one_statement_changed_twice_merge_quietly():
    # one side edits a statement, the other edits another: both edits, no conflict
    ours = _edit(BASE, "Lives in Guangzhou", "Lives in Shenzhen")
    theirs = _edit(BASE, "Has a cat", "Has two cats")
    merged = merge_memory("p.md", BASE, ours, theirs, "2026-11-30")
    assert merged.conflicts == []
    assert "Lives in Shenzhen" in merged.text and "Has two cats" in merged.text
    assert "Guangzhou" not in merged.text and "Has a cat" not in merged.text
    # one side edits, the other leaves it: the edit
    merged = merge_memory("p.md", BASE, ours, BASE, "2026-11-30")
    assert merged.conflicts == [] and merged.text == ours
    # the same edit on both sides: taken once
    merged = merge_memory("p.md", BASE, ours, ours, "2026-11-30")
    assert merged.conflicts == [] and merged.text.count("Shenzhen") == 1
    # a removal on one side beside unrelated new statements, the other side's edit of another
    removed = _edit(
        BASE,
        "- Has a cat (source: [[n1]])\n",
        "- Plays the violin (source: [[a3]])\n- Sleeps early (source: [[a3]])\n",
    )
    merged = merge_memory("p.md", BASE, removed, ours, "2026-11-30")
    assert merged.conflicts == []
    assert "Plays the violin" in merged.text and "Lives in Shenzhen" in merged.text
    assert "Has a cat" not in merged.text


def test_a_conflict_holding_a_credential_is_shown_redacted_by_sync(machines):
    """Issue 43: what `cmem sync` prints of a conflict statement is memory text, shown as every
    surface shows it: the light path's text and JSON and the full CLI's alike."""
    from support import run_cmem

    remote, (a, b, _) = machines
    profile = "converged/core/profile.md"
    old = "- 住在广州，去深圳面试可以当天往返（来源：[[2026-10-19 面试复盘]]）"
    secrets = {a: "Wq4Zx8Lm2Np6", b: "Rt7Ys3Kd9Fg1"}
    for root in (a, b):
        text = (root / profile).read_text("utf-8")
        new = old.replace("住在广州", f"家里 WiFi 密码 {secrets[root]}，住在广州")
        (root / profile).write_text(text.replace(old, new), encoding="utf-8")
        git(root, "commit", "-qam", f"hand edit on {root.name}")
    assert run_cmem("--vault", str(a), "sync").returncode == 0
    second = run_cmem("--vault", str(b), "sync", "--json")
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["conflicts"] and "[REDACTED:password]" in second.stdout
    assert all(secret not in second.stdout + second.stderr for secret in secrets.values())
    assert all(secret in (b / profile).read_text("utf-8") for secret in secrets.values())


def test_one_statement_edited_by_hand_on_two_machines_is_named_and_kept_until_resolved(machines):
    """Real clones, real `cmem sync` processes: the conflict is in sync's output and `--json`,
    in `cmem status` on both machines, and survives further syncs."""
    from support import run_cmem

    remote, (a, b, _) = machines
    profile = "converged/core/profile.md"
    old = "- 住在广州，去深圳面试可以当天往返（来源：[[2026-10-19 面试复盘]]）"
    for root, city in ((a, "深圳"), (b, "杭州")):
        text = (root / profile).read_text("utf-8")
        new = old.replace("住在广州", f"住在{city}")
        (root / profile).write_text(text.replace(old, new), encoding="utf-8")
        git(root, "commit", "-qam", f"hand edit on {root.name}")
    first = run_cmem("--vault", str(a), "sync")
    assert first.returncode == 0, first.stderr
    second = run_cmem("--vault", str(b), "sync", "--json")
    assert second.returncode == 0, second.stderr
    data = json.loads(second.stdout)
    assert len(data["conflicts"]) == 1 and data["conflicts"][0].startswith(profile)
    assert "住在深圳" in data["conflicts"][0] and "住在杭州" in data["conflicts"][0]
    text = (b / profile).read_text("utf-8")
    assert text.count("住在深圳") == 1 and text.count("住在杭州") == 1
    assert "住在广州" not in text
    for root in (a, b):
        again = run_cmem("--vault", str(root), "sync")
        assert again.returncode == 0, again.stderr
        status = run_cmem("--vault", str(root), "status", "--json")
        conflicts = json.loads(status.stdout)["conflicts"]
        assert [c["path"] for c in conflicts] == [profile], root.name
        human = run_cmem("--vault", str(root), "status")
        assert "conflict statements (1)" in human.stdout


def test_a_frontmatter_key_both_machines_changed_is_not_merged_through_an_anchor():
    """Both sides' values are read as a note's frontmatter is, so anchors and aliases are refused
    (a merge compares the values: an alias bomb's comparison would never end); this machine's
    value is kept and said, as for any value that cannot be merged. Plain lists still merge."""
    base = "tags: [a]\nsummary: s\n"
    bomb = "tags: &x [a, b]\nsummary: s\n"
    nested = "tags: [&y [a], *y, *y]\nsummary: s\n"
    theirs = "tags: [a, c]\nsummary: s\n"
    for ours in (bomb, nested):
        notices: list[str] = []
        merged = merge_frontmatter("p.md", base, ours, theirs, notices)
        assert merged == ours
        assert notices == [
            "p.md: frontmatter key 'tags' was changed on both machines; this machine's value was kept"
        ]
    notices = []
    merged = merge_frontmatter("p.md", base, "tags: [a, b]\nsummary: s\n", theirs, notices)
    assert merged == "tags: [a, b, c]\nsummary: s\n" and notices == []
