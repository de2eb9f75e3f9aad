"""The fast entry point (cmem.fast): a stored result is printed only while it is still the truth.

Each test changes the vault the way a person or a tool does — an edit in the same second as the
stored listing, an archived note edited in place, a renamed folder, a config change, a checkout of
an older state — and checks that every read command then shows what a full run shows. Whether a
call was answered from the store is read from `python -X importtime`: a stored answer never
imports typer.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cmem import fast
from cmem.reading import stored_results
from support import HOUR_AGO, git, settle
from support import run_entry as shared_run_entry
from support import run_fast as cmem


def warm(vault: Path, *argv: str) -> str:
    """Store the answer to `argv` and check the next call is served from it."""
    settle(vault)
    first, hit = cmem(vault, *argv)
    assert not hit
    second, hit = cmem(vault, *argv)
    assert hit, "the second call should have been answered from the stored result"
    return second


def status_json(vault: Path, *extra: str) -> tuple[dict, bool]:
    out, hit = cmem(vault, "status", "--json", *extra)
    return json.loads(out), hit


def without_ages(data: dict) -> dict:
    data = json.loads(json.dumps(data))
    for end in data["convergent_age"].values():
        if end:
            end.pop("age_seconds")
    return data


def without_text_ages(text: str) -> str:
    """`status` text without the convergent files' ages ("(68 min old)"): they are worked out
    at print time, so two runs a moment apart may straddle a minute."""
    import re

    return re.sub(r"\(([^()]*) old\)", "(… old)", text)


CORRECTION = "\n- 其实不是这样，以后都改用 pnpm 了\n"


def test_hit_prints_what_a_miss_prints(sample_vault):
    settle(sample_vault)
    miss, hit = status_json(sample_vault)
    assert not hit
    again, hit = status_json(sample_vault)
    assert hit
    assert without_ages(again) == without_ages(miss)  # --json identical between hit and miss
    for end in ("newest", "oldest"):  # the ages are recomputed at print time, not frozen
        assert (
            abs(
                again["convergent_age"][end]["age_seconds"]
                - miss["convergent_age"][end]["age_seconds"]
            )
            <= 2
        )
    for argv in (["status"], ["scan"], ["scan", "--json"]):
        text = warm(sample_vault, *argv)
        fresh, hit = cmem(sample_vault, *argv, "--rescan")
        assert not hit and without_text_ages(fresh) == without_text_ages(text)


def test_a_stored_answer_under_a_profiler_ends_normally_and_its_profile_is_written(
    sample_vault, tmp_path
):
    """A stored answer ends the process at once (os._exit) — except under a profiler or a
    tracer, whose exit handlers write what they measured: `python -m cProfile -o F -m cmem
    status` of a stored answer leaves a profile that loads, and prints the stored answer."""
    import pstats

    text = warm(sample_vault, "status")
    profile = tmp_path / "status.prof"
    result = subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "cmem", "status"]
        + ["--vault", str(sample_vault)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert without_text_ages(result.stdout) == without_text_ages(text)
    stats = pstats.Stats(str(profile))
    assert any(name == "answer" for _, _, name in stats.stats), "the fast path was not profiled"


def test_due_is_recomputed_at_print_time(sample_vault):
    settle(sample_vault)
    status_json(sample_vault)
    entry = stored_results.load_entry(
        stored_results.entry_path(str(sample_vault.resolve()), "status", ())
    )
    payload = entry["payload"]
    last = "2026-11-30T10:00:00+00:00"
    payload["clock"].update(
        last_time=last, interval_seconds=3600.0, interval_label="min_interval_minutes (60 min)"
    )
    from datetime import datetime

    early = fast.refresh_status(
        json.loads(json.dumps(payload)), datetime.fromisoformat("2026-11-30T10:30:00+00:00")
    )
    late = fast.refresh_status(
        json.loads(json.dumps(payload)), datetime.fromisoformat("2026-11-30T11:20:00+00:00")
    )
    assert early["due"]["due"] is False and "30 min ago" in early["due"]["reason"]
    assert late["due"]["due"] is True and "80 min ago" in late["due"]["reason"]


def test_a_note_edited_in_the_same_second_as_the_listing_is_seen(sample_vault):
    # a vault just written: every mtime is within the racy window, so nothing is stored
    cmem(sample_vault, "scan", "--json")
    assert not os.path.isdir(stored_results.results_dir()) or not os.listdir(
        stored_results.results_dir()
    )
    note = sample_vault / "2026-11-27 notes.md"
    with open(note, "a", encoding="utf-8") as handle:
        handle.write(CORRECTION)
    out, hit = cmem(sample_vault, "scan", "--json")
    assert not hit and "pnpm" in out


def test_an_edit_that_keeps_size_and_mtime_is_still_seen(sample_vault):
    """A coarse clock: the note's mtime after the edit equals the stored one, its size too."""
    note = sample_vault / "2026-11-27 notes.md"
    before = note.read_text("utf-8")
    warm(sample_vault, "scan")
    changed = before.replace("a", "b", 1) if "a" in before else before
    assert len(changed.encode()) == len(before.encode()) and changed != before
    note.write_text(changed, encoding="utf-8")
    os.utime(note, (HOUR_AGO, HOUR_AGO))  # same mtime as stored: only the ctime tells
    out, hit = cmem(sample_vault, "scan")
    assert not hit


def test_new_signal_after_the_store_is_seen_by_status_and_scan(sample_vault):
    before = warm(sample_vault, "status", "--json")
    warm(sample_vault, "scan")
    with open(sample_vault / "2026-11-27 notes.md", "a", encoding="utf-8") as handle:
        handle.write(CORRECTION)
    after, hit = status_json(sample_vault)
    assert not hit
    assert sum(after["pending"]["signals"].values()) > sum(
        json.loads(before)["pending"]["signals"].values()
    )
    out, hit = cmem(sample_vault, "scan")
    assert not hit and "pnpm" in out


def test_archived_note_edited_in_place_is_labelled_and_rescan_shows_it(sample_vault):
    warm(sample_vault, "status", "--json")
    stored, _ = status_json(sample_vault)
    assert "layers.archive.tokens" in stored["may_be_stale"]
    text, _ = cmem(sample_vault, "status")
    assert "--rescan" in next(
        line for line in text.splitlines() if line.strip().startswith("archive")
    )
    archived = next(
        p for p in (sample_vault / "archive").rglob("*.md") if p.name != "ARCHIVE-CHECKLIST.md"
    )
    with open(archived, "a", encoding="utf-8") as handle:  # in place: its folder's mtime stays
        handle.write("\n" + "an archived line edited in place " * 200 + "\n")
    stale, hit = status_json(sample_vault)
    assert hit and stale["layers"]["archive"]["tokens"] == stored["layers"]["archive"]["tokens"]
    fresh, hit = status_json(sample_vault, "--rescan")
    assert not hit and fresh["layers"]["archive"]["tokens"] > stored["layers"]["archive"]["tokens"]
    settle(sample_vault)
    cmem(sample_vault, "status", "--json")
    after, hit = status_json(sample_vault)  # the rescan refreshed what is stored
    assert hit and after["layers"]["archive"]["tokens"] == fresh["layers"]["archive"]["tokens"]


def test_renamed_and_moved_folders_are_seen(sample_vault):
    before = json.loads(warm(sample_vault, "status", "--json"))
    month = next(p for p in (sample_vault / "archive").iterdir() if p.is_dir())
    month.rename(month.with_name("1999-01"))  # a renamed archive folder: its parent's mtime moves
    moved, hit = status_json(sample_vault)
    assert not hit and moved["layers"] == before["layers"]
    settle(sample_vault)
    cmem(sample_vault, "status", "--json")
    archived = next((sample_vault / "archive" / "1999-01").glob("*.md"))
    shutil.move(str(archived), str(sample_vault / archived.name))  # out of a nested archive folder
    after, hit = status_json(sample_vault)
    assert not hit
    assert after["layers"]["archive"]["notes"] == before["layers"]["archive"]["notes"] - 1
    assert after["layers"]["divergent"]["notes"] == before["layers"]["divergent"]["notes"] + 1


def test_config_change_is_seen(sample_vault):
    before = json.loads(warm(sample_vault, "status", "--json"))
    config = sample_vault / ".cmem" / "config.yaml"
    config.write_text(config.read_text("utf-8") + "\nbudget_tokens: 7777\n", encoding="utf-8")
    os.utime(config, (HOUR_AGO, HOUR_AGO))  # even with its old mtime: size and ctime changed
    after, hit = status_json(sample_vault)
    assert (
        not hit and after["budgets"]["budget_tokens"] == 7777 != before["budgets"]["budget_tokens"]
    )


def test_user_config_and_cmem_variables_are_part_of_the_key(sample_vault, monkeypatch):
    warm(sample_vault, "status", "--json")
    monkeypatch.setenv("CMEM_LLM", "echo")
    _, hit = status_json(sample_vault)
    assert not hit
    warm(sample_vault, "status", "--json")
    monkeypatch.setenv(
        "XDG_CONFIG_HOME", str(sample_vault.parent / "elsewhere")
    )  # another user config
    _, hit = status_json(sample_vault)
    assert not hit


def test_checkout_of_an_older_state_is_seen(sample_vault):
    git(sample_vault, "branch", "older")
    with open(sample_vault / "2026-11-27 notes.md", "a", encoding="utf-8") as handle:
        handle.write(CORRECTION)
    (sample_vault / "2026-11-30 new.md").write_text(
        "# new\n\n- 我喜欢早上写代码\n", encoding="utf-8"
    )
    git(sample_vault, "add", "-A")
    git(sample_vault, "commit", "-q", "-m", "newer notes")
    newer = json.loads(warm(sample_vault, "status", "--json"))
    warm(sample_vault, "scan")
    git(sample_vault, "checkout", "-q", "older")
    older, hit = status_json(sample_vault)
    assert not hit
    assert older["layers"]["divergent"]["notes"] == newer["layers"]["divergent"]["notes"] - 1
    out, hit = cmem(sample_vault, "scan")
    assert not hit and "pnpm" not in out


def test_a_running_pass_is_never_hidden_by_a_stored_status(sample_vault):
    stored = json.loads(warm(sample_vault, "status", "--json"))
    assert stored["running"] is False
    from cmem.steps.lock import lock_path
    from cmem.vault.layers import machine_dir_for

    state = machine_dir_for(sample_vault.resolve())
    state.mkdir(parents=True, exist_ok=True)
    # the step layer's own lock file: the fast path names it without importing the lock module
    fd = os.open(lock_path(state), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        now, hit = status_json(sample_vault)
        assert not hit and now["running"] is True
    finally:
        os.close(fd)


def test_racy_listing_is_not_storable(tmp_path):
    root = tmp_path / "v"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("x", encoding="utf-8")
    settle(root)
    key, storable = stored_results.KeyWalk(str(root), [], []).result()
    assert storable
    (root / "sub" / "b.md").write_text("y", encoding="utf-8")  # now: inside the granularity window
    key2, storable = stored_results.KeyWalk(str(root), [], []).result()
    assert not storable and key2 != key
    settle(root)
    os.symlink(root / "sub", root / "link")
    _, storable = stored_results.KeyWalk(str(root), [], []).result()
    assert not storable  # a link's target is outside the key


def test_folder_only_layers_are_not_stat_per_note(tmp_path):
    root = tmp_path / "v"
    (root / "archive" / "2020").mkdir(parents=True)
    note = root / "archive" / "2020" / "old.md"
    note.write_text("old", encoding="utf-8")
    settle(root)
    key, _ = stored_results.KeyWalk(str(root), [], ["archive"]).result()
    note.write_text("older and longer", encoding="utf-8")
    os.utime(note, (HOUR_AGO, HOUR_AGO))
    assert (
        stored_results.KeyWalk(str(root), [], ["archive"]).result()[0] == key
    )  # by design: the figure is labelled
    assert stored_results.KeyWalk(str(root), [], []).result()[0] != key


def test_help_and_version_are_served_without_typer(tmp_path):
    first, hit = cmem(None, "--help")
    assert not hit and "converge" in first
    second, hit = cmem(None, "--help")
    assert hit and second == first
    sub, _ = cmem(None, "status", "--help")
    sub_again, hit = cmem(None, "status", "--help")
    assert hit and sub_again == sub and "--rescan" in sub
    version, hit = cmem(None, "--version")
    assert hit and version.startswith("cmem ")


def test_the_stored_help_is_keyed_on_every_module_the_help_is_written_in():
    """The commands live in a package: an edited help line in any of its modules (or a module
    added) must miss the stored help, not only an edit of cli.py."""
    commands = Path(fast.__file__).parent / "commands"
    names = [name for name, _, _ in fast.help_sources()]
    assert set(names) == {"cli.py", *(path.name for path in commands.glob("*.py"))}
    assert "reading.py" in names and "app.py" in names


@pytest.mark.parametrize("argv", [["status"], ["scan"], ["status", "--json"]])
def test_unknown_arguments_go_to_the_real_cli(argv, sample_vault):
    warm(sample_vault, *argv)
    assert fast.parse_read([*argv, "--verbose"]) is None
    assert fast.parse_read(["--vault", "x", *argv, "--no-color"])["command"] == argv[0]


def _raw_run(vault: Path, argv: list[str], encoding: str) -> tuple[bytes, bool]:
    """`cmem ARGV` through the entry point with stdout in `encoding`: (its bytes, a hit?)."""
    code = (
        f"import sys; sys.argv = ['cmem', *{[*argv, '--vault', str(vault)]!r}];"
        " from cmem.fast import main; main()"
    )
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        capture_output=True,
        env=dict(os.environ, PYTHONIOENCODING=encoding),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return (
        result.stdout,
        b"| typer" not in result.stderr and b"cmem.scan.scanner" not in result.stderr,
    )


@pytest.mark.parametrize("encoding", ["utf-8", "latin-1", "ascii"])
def test_a_stored_output_prints_the_bytes_its_miss_printed_in_any_encoding(sample_vault, encoding):
    """A stored scan is kept as UTF-8 bytes and written to stdout's buffer as they are; a
    stream that does not encode UTF-8 gets the text, escaped as the miss escaped it."""
    (sample_vault / "mixed.md").write_text(
        "- 其实不是这样，以后都改用 pnpm 了 — don’t use npm\n", encoding="utf-8"
    )
    settle(sample_vault)
    miss, hit = _raw_run(sample_vault, ["scan"], encoding)
    assert not hit and b"pnpm" in miss
    again, hit = _raw_run(sample_vault, ["scan"], encoding)
    assert hit and again == miss
    if encoding == "utf-8":
        assert "其实不是".encode() in again
    else:
        assert b"\\u5176" in again or b"\\xe5" in again  # escaped, as the miss printed it


def test_a_stored_output_is_bytes_unless_utf8_cannot_encode_it_and_prints_in_order():
    text = "a name that was not UTF-8: \udcff.md\n"
    assert stored_results.printed(text) == {"stdout": text}
    assert stored_results.printed("其实 ok\n") == {"stdout": "其实 ok\n".encode()}
    # what the text layer holds is written first; then the bytes as they are, or their text
    for encoding, expected in (
        ("utf-8", "a\n其实\n".encode()),
        ("latin-1", b"a\n\\u5176\\u5b9e\n"),
    ):
        raw = io.BytesIO()
        stream = io.TextIOWrapper(raw, encoding=encoding, errors="backslashreplace")
        stream.write("a\n")
        fast._put("其实\n".encode(), stream)
        assert raw.getvalue() == expected


def test_head_sha_reads_the_git_files_as_git_does(sample_vault):
    from cmem.steps.git_head import head_sha

    assert head_sha(str(sample_vault)) == git(sample_vault, "rev-parse", "HEAD").strip()
    git(sample_vault, "pack-refs", "--all")  # the branch now only in packed-refs
    assert head_sha(str(sample_vault)) == git(sample_vault, "rev-parse", "HEAD").strip()
    git(sample_vault, "checkout", "-q", "--detach")
    assert head_sha(str(sample_vault)) == git(sample_vault, "rev-parse", "HEAD").strip()


def test_status_finds_the_pass_commit_without_git_while_head_stands_still(
    sample_vault, monkeypatch
):
    from cmem.reading import status
    from cmem.steps import commits as history
    from cmem.vault.layers import open_vault

    converge = subprocess.run(
        [
            sys.executable,
            "-m",
            "cmem",
            "converge",
            "--engine",
            "builtin",
            "--vault",
            str(sample_vault),
        ],
        capture_output=True,
        text=True,
    )
    assert converge.returncode == 0, converge.stderr
    vault = open_vault(sample_vault)
    first = status.build_status(vault).last_pass
    assert first["commit"] == git(sample_vault, "rev-parse", "HEAD").strip()

    def no_git(*args, **kwargs):
        raise AssertionError("status started git while HEAD stood still")

    with monkeypatch.context() as patch:  # its own patch only: the home stays isolated
        patch.setattr(history, "find_pass_commit", no_git)
        assert status.build_status(open_vault(sample_vault)).last_pass["commit"] == first["commit"]
    (sample_vault / "other.md").write_text("x\n", encoding="utf-8")
    git(sample_vault, "add", "-A")
    git(sample_vault, "commit", "-q", "-m", "later")  # HEAD moved: asked again, same pass commit
    calls = []
    real = history.find_pass_commit
    monkeypatch.setattr(history, "find_pass_commit", lambda *a: calls.append(a) or real(*a))
    assert (
        status.build_status(open_vault(sample_vault)).last_pass["commit"] == first["commit"]
        and calls
    )


def test_context_metadata_memo_follows_the_text(sample_vault):
    """`cmem context` keeps what each memory file's text gives (summary, tags, tokens) keyed by
    the text: a second bundle equals the first, and an edited file is parsed again."""
    from cmem.reading import context as context_module
    from cmem.vault.layers import open_vault

    first = context_module.build_context(open_vault(sample_vault), record=False).to_json()
    assert (open_vault(sample_vault).machine_dir / context_module.META_CACHE).exists()
    again = context_module.build_context(open_vault(sample_vault), record=False).to_json()
    assert again == first
    topic = next((sample_vault / "converged" / "topics").rglob("*.md"))
    text = topic.read_text("utf-8")
    body = text.split("---", 2)[2] if text.startswith("---") else text
    topic.write_text("---\nsummary: a summary written just now\n---\n" + body, encoding="utf-8")
    edited = context_module.build_context(open_vault(sample_vault), record=False).to_json()
    assert any(item["summary"] == "a summary written just now" for item in edited["index"]) or any(
        "a summary written just now" in item["content"] for item in edited["situational"]
    )


def test_unchanged_archive_folders_are_not_listed_again(tmp_path, monkeypatch):
    """With a stored key, an archive folder whose mtime stands still is not listed again (its
    subfolders come from the key); one that changed is, and what changed in it shows."""
    root = tmp_path / "v"
    for month in ("2020/01", "2020/02", "2021/01"):
        (root / "archive" / month).mkdir(parents=True)
        (root / "archive" / month / "n.md").write_text("x", encoding="utf-8")
    (root / "top.md").write_text("x", encoding="utf-8")
    settle(root)
    stored, storable = stored_results.KeyWalk(str(root), [], ["archive"]).result()
    assert storable
    listed = []
    real = os.scandir

    def where(folder) -> str:  # the light walk lists a folder by its descriptor
        if isinstance(folder, int):
            folder = os.readlink(f"/proc/self/fd/{folder}")
        return os.path.relpath(os.path.realpath(folder), os.path.realpath(root))

    monkeypatch.setattr(
        stored_results.os, "scandir", lambda folder: listed.append(where(folder)) or real(folder)
    )
    again, _ = stored_results.KeyWalk(str(root), [], ["archive"], stored).result()
    assert again == stored and listed == ["."]  # only the root (notes are stat'ed there) was listed
    listed.clear()
    (root / "archive" / "2020" / "02" / "deeper").mkdir()  # a new folder, then a note in it
    (root / "archive" / "2020" / "02" / "deeper" / "m.md").write_text("y", encoding="utf-8")
    settle(root)
    changed, _ = stored_results.KeyWalk(str(root), [], ["archive"], stored).result()
    assert changed != stored and "archive/2020/02" in listed and "archive/2020/02/deeper" in listed
    assert (
        changed == stored_results.KeyWalk(str(root), [], ["archive"]).result()[0]
    )  # the same key as a full listing


def test_a_note_added_deep_in_the_archive_is_counted(sample_vault):
    before = json.loads(warm(sample_vault, "status", "--json"))
    month = next(p for p in (sample_vault / "archive").iterdir() if p.is_dir())
    (month / "sub").mkdir()
    (month / "sub" / "late.md").write_text("# late\n\nan archived note\n", encoding="utf-8")
    settle(sample_vault)
    after, hit = status_json(sample_vault)
    assert (
        not hit and after["layers"]["archive"]["notes"] == before["layers"]["archive"]["notes"] + 1
    )


def test_a_stored_status_shows_unmanaged_folders_as_a_fresh_one_does(sample_vault):
    (sample_vault / "projects").mkdir()
    for n in range(3):
        (sample_vault / "projects" / f"p{n}.md").write_text(f"# p{n}\n", encoding="utf-8")
    text = warm(sample_vault, "status")
    fresh, hit = cmem(sample_vault, "status", "--rescan")
    assert not hit and without_text_ages(fresh) == without_text_ages(text)
    assert "not read:" in text
    data, hit = status_json(sample_vault)
    assert data["unmanaged"] and "conflicts" in data


# --- sync: the light path prints what the full CLI prints ------------------------------------

# fixed commit dates, so a world built twice has the same commits (its ids are in --json)
GIT_DATES = {
    "GIT_AUTHOR_DATE": "2026-11-30T10:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-11-30T10:00:00+00:00",
}


def sync_world(tmp_path: Path, sample_vault: Path, kind: str) -> Path:
    """A remote and a clone, built afresh at the same paths each call (errors name the vault's
    path), in the state `kind` names; returns the folder to sync."""
    base = tmp_path / "world"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir()
    env = dict(os.environ, **GIT_DATES)
    run = lambda *args: subprocess.run(args, env=env, check=True, capture_output=True)
    remote, clone = base / "remote.git", base / "a"
    run("git", "clone", "-q", "--bare", str(sample_vault), str(remote))
    run("git", "clone", "-q", str(remote), str(clone))
    if kind == "fast-forward":  # another machine pushed a note
        other = base / "b"
        run("git", "clone", "-q", str(remote), str(other))
        (other / "2026-11-29 other.md").write_text("- 以后都先给结论\n", encoding="utf-8")
        run("git", "-C", str(other), "add", "-A")
        run("git", "-C", str(other), "commit", "-qm", "note on b")
        run("git", "-C", str(other), "push", "-q")
    elif kind == "push":  # this machine committed a note the remote lacks
        (clone / "2026-11-29 here.md").write_text("- 我决定先写测试\n", encoding="utf-8")
        run("git", "-C", str(clone), "add", "-A")
        run("git", "-C", str(clone), "commit", "-qm", "note on a")
    elif kind == "offline":
        remote.rename(base / "elsewhere.git")
    elif kind == "no remote":
        run("git", "-C", str(clone), "remote", "remove", "origin")
    elif kind == "not a vault":
        (base / "plain").mkdir()
        return base / "plain"
    elif kind == "up to date, stored":  # quiet for a while, then synced once: the light path
        settled = settle(clone)  # (cmem.sync.idle) answers the next sync
        git(clone, "update-index", "-q", "--refresh")  # the index as git leaves it, newer than
        os.utime(clone / ".git" / "index", (settled + 60, settled + 60))  # the files
        assert run_entry("cmem.fast", ["sync", "--vault", str(clone)])[0] == 0
    return clone


def run_entry(module: str, argv: list[str]) -> tuple[int, str, str, set[str]]:
    """support.run_entry, with the git dates these tests commit with."""
    return shared_run_entry(module, argv, GIT_DATES)


@pytest.mark.parametrize(
    "kind, code",
    [
        ("up to date", 0),
        ("up to date, stored", 0),
        ("fast-forward", 0),
        ("push", 0),
        ("offline", 3),
        ("no remote", 1),
        ("not a vault", 1),
    ],
)
@pytest.mark.parametrize("as_json", [False, True])
def test_sync_light_path_prints_what_the_full_cli_prints(
    tmp_path, sample_vault, kind, code, as_json
):
    argv_tail = ["--json"] if as_json else []
    answers = []
    for module in ("cmem.fast", "cmem.cli"):
        folder = sync_world(tmp_path, sample_vault, kind)
        answers.append(run_entry(module, ["sync", "--vault", str(folder), *argv_tail]))
    (light_code, light_out, light_err, light_modules), (full_code, full_out, full_err, _) = answers
    assert (light_code, light_out, light_err) == (full_code, full_out, full_err)
    assert light_code == code, light_err
    assert "typer" not in light_modules and "cmem.cli" not in light_modules
    # told in os alone: no subprocess, no pathlib, no sync machinery (cmem.sync.idle), nothing
    # that loads collections (array did, 3 ms: the stored key's stats are marshalled instead)
    if kind == "up to date, stored":
        heavy = {"cmem.sync.remote", "subprocess", "pathlib", "json", "array", "collections"}
        assert not heavy & light_modules
    elif kind == "up to date":  # nothing stored yet: the full sync ran, and stores
        assert "cmem.sync.remote" in light_modules
    assert (light_out + light_err).strip()  # each case says something


def test_sync_light_path_hands_over_what_it_does_not_know(tmp_path, sample_vault):
    assert fast.parse_sync(["sync", "--vault", "v", "--json"]) == {
        "vault": "v",
        "json": True,
        "no_color": False,
    }
    assert fast.parse_sync(["--vault", "a", "--no-color", "sync", "--vault=b"])["vault"] == "b"
    for argv in (["sync", "--help"], ["sync", "--verbose"], ["status"], ["--json", "sync"]):
        assert fast.parse_sync(argv) is None, argv
    assert fast.parse_sync(["sync", "--vault", ""]) is None
    # an interrupted step: the full CLI finishes or undoes it first, and says so
    from cmem.vault.layers import open_vault

    clone = sync_world(tmp_path, sample_vault, "up to date")
    request = {"vault": str(clone), "json": False, "no_color": False}
    assert fast.run_sync(request) == 0
    (open_vault(clone).journal_dir / "step-1").mkdir(parents=True)
    assert fast.run_sync(request) is None


def _into_a_closed_pipe(argv: list[str]) -> tuple[int, str, str, set[str]]:
    """`cmem ARGV` through the entry point, its stdout a pipe nobody reads (`cmem … | head -0`):
    the read end is closed before it starts, so its first write fails (EPIPE)."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        return shared_run_entry("cmem.fast", argv, GIT_DATES, stdout=writer)
    finally:
        os.close(writer)


def test_a_light_answer_into_a_closed_pipe_ends_quietly(tmp_path, sample_vault):
    """No traceback, exit 1, as the full CLI ends when its reader went away; and it was the
    light path that answered (typer never imported), from a stored result, scanning or syncing."""
    warm(sample_vault, "status")
    assert not cmem(sample_vault, "scan")[1]  # stored (as bytes) beside it, nothing re-dated
    clone = sync_world(tmp_path, sample_vault, "up to date, stored")
    for argv in (
        ["status", "--vault", str(sample_vault)],
        ["scan", "--vault", str(sample_vault)],
        ["--version"],
        ["sync", "--vault", str(clone)],
        ["scan", "--vault", str(sample_vault), "--rescan"],  # a cold scan, run without typer
    ):
        code, _, said, modules = _into_a_closed_pipe(argv)
        assert (code, said) == (1, ""), (argv, said)
        assert not {"typer", "cmem.sync.remote"} & modules, argv
        if argv[0] in ("status", "scan") and "--rescan" not in argv:
            assert "cmem.scan.scanner" not in modules, argv  # a stored answer
    # a sync with work to do runs in full here too (still without typer), and pushes before it
    # reports: the push is done, only its report had no reader
    pushing = sync_world(tmp_path, sample_vault, "push")
    code, _, said, modules = _into_a_closed_pipe(["sync", "--vault", str(pushing)])
    assert (code, said) == (1, "") and "cmem.sync.remote" in modules and "typer" not in modules
    assert git(pushing, "rev-parse", "HEAD") == git(pushing, "rev-parse", "origin/main")


def test_the_entry_point_collects_cyclic_garbage_less_often():
    """`cmem.fast.main` raises the collector's first threshold before any command runs (a cold
    scan made ~100 collections at the default 700), and never lowers one set higher already."""
    probe = (
        "import gc, sys\n"
        "gc.set_threshold(int(sys.argv[1]), 10, 10)\n"
        "import cmem.fast\n"
        "cmem.fast._main = lambda: print(gc.get_threshold()[0])\n"
        "cmem.fast.main()\n"
    )
    for before, after in (("700", fast.GC_THRESHOLDS[0]), ("900000", 900000)):
        out = subprocess.run(
            [sys.executable, "-c", probe, before], capture_output=True, text=True, check=True
        ).stdout
        assert int(out) == after
