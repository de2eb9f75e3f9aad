"""Stored answers (`reading/stored_results.py`): a stored result is printed only while it is still
the truth.

Each test changes the vault the way a person or a tool does — an edit in the same second as the
stored listing, an archived note edited in place, a renamed folder, a config change, a checkout of
an older state — and checks that every read command then shows what a full run shows. Whether a
call was answered from the store is read from `python -X importtime`: a stored answer imports
neither the config reader nor the scanner (`support.AFRESH_MODULES`).
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

from cmem import idle_sync
from cmem.commands.common import show_stored
from cmem.reading import stored_results
from cmem.reading.stored_status import refresh_status
from support import AFRESH_MODULES, HOUR_AGO, forget_stored, git, run_cmem, settle
from support import run_entry as shared_run_entry
from support import run_stored as cmem


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


def test_an_entry_is_taken_only_for_what_it_answers(sample_vault):
    """An entry's file is named by checksums of its vault, command and parameters: one found
    under another's name (two sharing it) is a miss, never the other command's answer."""
    root = str(sample_vault.resolve())
    warm(sample_vault, "status")
    status = stored_results.entry_path(root, "status", ())
    scan = stored_results.entry_path(root, "scan", (False, False))
    shutil.copyfile(status, scan)
    assert stored_results.valid_entry(root, "status", ()) is not None
    assert stored_results.valid_entry(root, "scan", (False, False)) is None
    assert stored_results.load_entry(root, "scan", (False, False)) is None
    assert stored_results.load_entry(root, "status", ("other",)) is None
    out, hit = cmem(sample_vault, "scan")
    assert not hit and out == cmem(sample_vault, "scan", "--rescan")[0]


def test_entries_an_older_cmem_named_otherwise_are_removed_when_one_is_stored(sample_vault):
    """Entries named by a sha256 prefix (an older cmem's) are read by no one: storing an entry
    removes them; this cmem's entries and a temp file in flight stay."""
    root = str(sample_vault.resolve())
    warm(sample_vault, "status")
    folder = stored_results.results_dir()
    older = os.path.join(folder, "0123456789abcdef" * 2 + ".marshal")
    in_flight = os.path.join(folder, "0123456789abcdef.marshal.4242.tmp")
    for path in (older, in_flight):
        with open(path, "wb") as handle:
            handle.write(b"x" * 1000)
    forget_stored(sample_vault, "scan", (False, False))
    cmem(sample_vault, "scan")  # a miss: the scan's entry is stored
    assert not os.path.exists(older) and os.path.exists(in_flight)
    assert os.path.exists(stored_results.entry_path(root, "status", ()))
    assert os.path.exists(stored_results.entry_path(root, "scan", (False, False)))


def test_due_is_recomputed_at_print_time(sample_vault):
    settle(sample_vault)
    status_json(sample_vault)
    entry = stored_results.load_entry(str(sample_vault.resolve()), "status", ())
    payload = entry["payload"]
    last = "2026-11-30T10:00:00+00:00"
    payload["clock"].update(
        last_time=last, interval_seconds=3600.0, interval_label="min_interval_minutes (60 min)"
    )
    from datetime import datetime

    early = refresh_status(
        json.loads(json.dumps(payload)), datetime.fromisoformat("2026-11-30T10:30:00+00:00")
    )
    late = refresh_status(
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
    # the step layer's own lock file, held as a running pass holds it
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


@pytest.mark.parametrize("argv", [["status"], ["scan"], ["status", "--json"]])
def test_an_unknown_argument_is_a_usage_error_with_a_stored_answer_at_hand(argv, sample_vault):
    warm(sample_vault, *argv)
    code, _, err, _ = shared_run_entry(
        "cmem.cli", [*argv, "--verbose", "--vault", str(sample_vault)]
    )
    assert code == 2 and "--verbose" in err


def _raw_run(vault: Path, argv: list[str], encoding: str) -> tuple[bytes, bool]:
    """`cmem ARGV` through the entry point with stdout in `encoding`: (its bytes, a hit?)."""
    code = (
        f"import sys; sys.argv = ['cmem', *{[*argv, '--vault', str(vault)]!r}];"
        " from cmem.cli import main; main()"
    )
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        capture_output=True,
        env=dict(os.environ, PYTHONIOENCODING=encoding),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return (
        result.stdout,
        not any(f" {name}\n".encode() in result.stderr for name in AFRESH_MODULES),
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
    if encoding in ("utf-8", "ascii"):  # click takes an ASCII stdout for a C locale: UTF-8
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
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(sys, "stdout", stream)
            show_stored("其实\n".encode())
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

    converge = run_cmem("converge", "--engine", "builtin", "--vault", str(sample_vault))
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
        assert run_entry("cmem.cli", ["sync", "--vault", str(clone)])[0] == 0
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
def test_sync_says_each_outcome_and_an_idle_one_after_one_fetch(
    tmp_path, sample_vault, kind, code, as_json
):
    argv_tail = ["--json"] if as_json else []
    folder = sync_world(tmp_path, sample_vault, kind)
    found, out, err, modules = run_entry("cmem.cli", ["sync", "--vault", str(folder), *argv_tail])
    assert found == code, err
    assert (out + err).strip()  # each case says something
    if kind == "up to date, stored":  # told by the idle answer: no sync machinery
        assert "cmem.sync.remote" not in modules
        fresh = sync_world(tmp_path, sample_vault, "up to date")  # the same paths, nothing stored
        full = run_entry("cmem.cli", ["sync", "--vault", str(fresh), *argv_tail])
        assert (found, out, err) == full[:3]  # what the full sync says of the same state
    elif kind == "up to date":  # nothing stored yet: the full sync ran, and stores
        assert "cmem.sync.remote" in modules


def test_the_idle_sync_leaves_an_interrupted_step_to_the_full_sync(
    tmp_path, sample_vault, monkeypatch
):
    """An interrupted step: the full sync finishes or undoes it first, and says so."""
    from cmem.vault.layers import open_vault

    for name, value in GIT_DATES.items():  # the stored sync was keyed with them
        monkeypatch.setenv(name, value)

    clone = sync_world(tmp_path, sample_vault, "up to date, stored")
    assert idle_sync.answer(clone, False)[0] is not None
    (open_vault(clone).journal_dir / "step-1").mkdir(parents=True)
    assert idle_sync.answer(clone, False) == (None, None)


def _into_a_closed_pipe(argv: list[str]) -> tuple[int, str, str, set[str]]:
    """`cmem ARGV` through the entry point, its stdout a pipe nobody reads (`cmem … | head -0`):
    the read end is closed before it starts, so its first write fails (EPIPE)."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        return shared_run_entry("cmem.cli", argv, GIT_DATES, stdout=writer)
    finally:
        os.close(writer)


def test_an_answer_into_a_closed_pipe_ends_quietly(tmp_path, sample_vault):
    """No traceback, exit 1, when the reader went away: a stored answer, a scan, an idle sync."""
    warm(sample_vault, "status")
    assert not cmem(sample_vault, "scan")[1]  # stored (as bytes) beside it, nothing re-dated
    clone = sync_world(tmp_path, sample_vault, "up to date, stored")
    for argv in (
        ["status", "--vault", str(sample_vault)],
        ["scan", "--vault", str(sample_vault)],
        ["--version"],
        ["sync", "--vault", str(clone)],
        ["scan", "--vault", str(sample_vault), "--rescan"],  # a scan afresh
    ):
        code, _, said, modules = _into_a_closed_pipe(argv)
        assert (code, said) == (1, ""), (argv, said)
        assert "cmem.sync.remote" not in modules, argv
        if argv[0] in ("status", "scan") and "--rescan" not in argv:
            assert "cmem.scan.scanner" not in modules, argv  # a stored answer
    # a sync with work to do pushes before it reports: the push is done, only its report had
    # no reader
    pushing = sync_world(tmp_path, sample_vault, "push")
    code, _, said, modules = _into_a_closed_pipe(["sync", "--vault", str(pushing)])
    assert (code, said) == (1, "") and "cmem.sync.remote" in modules
    assert git(pushing, "rev-parse", "HEAD") == git(pushing, "rev-parse", "origin/main")


def test_the_entry_point_collects_cyclic_garbage_less_often():
    """`main` raises the collector's first threshold before any command runs (a cold scan made
    ~100 collections at the default 700), and never lowers one set higher already."""
    from cmem.commands.app import GC_THRESHOLDS

    probe = (
        "import gc, sys\n"
        "gc.set_threshold(int(sys.argv[1]), 10, 10)\n"
        "import cmem.commands.app as entry\n"
        "entry.app = lambda **options: print(gc.get_threshold()[0])\n"
        "entry.main()\n"
    )
    for before, after in (("700", GC_THRESHOLDS[0]), ("900000", 900000)):
        out = subprocess.run(
            [sys.executable, "-c", probe, before], capture_output=True, text=True, check=True
        ).stdout
        assert int(out) == after
