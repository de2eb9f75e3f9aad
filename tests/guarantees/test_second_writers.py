"""Second writers (issue 6): Obsidian's autosave, a sync client or the user writes while a pass
runs; and another git command holds `.git/index.lock`.

The rule: no user edit is ever overwritten, and every write the pass skips because of one is
reported. test_converge.py has the single deterministic case (the profile edited during the model
call); here are the random-timing trials (tests/reliability_harness.py), the input note edited
mid-pass, and the bounded wait on git's lock.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import reliability_harness as harness
import reply_variants as rv
from cmem.converge.pipeline import PassOptions, run_pass
from cmem.errors import GitError
from cmem.scan.scanner import scan_vault
from cmem.steps import commits as history
from cmem.vault.layers import open_vault
from cmem.vault.state_json import load_state


def assert_no_loss(figures: dict) -> None:
    assert figures["edits_lost"] == 0, figures["problems"]
    assert figures["skipped_reported"] == figures["skipped_writes"], figures["problems"]
    assert figures["unreported"] == 0 and figures["partial"] == 0, figures["problems"]


def test_second_writer_trials(tmp_path):
    figures = harness.run_writer_trials(20, tmp_path, seed=20)
    assert figures["trials"] == 20
    assert_no_loss(figures)


@pytest.mark.slow
def test_second_writer_trials_many(tmp_path):
    figures = harness.run_writer_trials(200, tmp_path, seed=200)
    assert_no_loss(figures)
    # the random timing reached every phase, and the pass both refused and warned
    assert all(count > 0 for count in figures["by_phase"].values()), figures["by_phase"]
    assert figures["skipped_writes"] > 0 and figures["inputs_changed_warned"] > 0


@pytest.fixture
def corpus_vault(tmp_path) -> Path:
    root, _ = harness.fresh_vault(harness.make_corpus_template(tmp_path), tmp_path, "vault")
    return root


def editing_model(tmp_path: Path, path: Path, text: str, reply: str) -> str:
    """A model command that, while it "thinks", saves `text` into `path` as an editor would."""
    script = tmp_path / "editing_model.py"
    script.write_text(
        "import os, sys, pathlib\n"
        "sys.stdin.read()\n"
        f"tmp = pathlib.Path({str(path)!r} + '.swp')\n"
        f"tmp.write_text({text!r}, encoding='utf-8')\n"
        f"os.replace(tmp, {str(path)!r})\n"
        f"sys.stdout.write({reply!r})\n",
        encoding="utf-8",
    )
    return f"{sys.executable} {script}"


def test_an_input_note_saved_during_the_model_call_is_kept_named_and_stays_pending(
    corpus_vault, tmp_path
):
    note = corpus_vault / rv.NOTE
    edited = rv.NOTE_TEXT + "其实不是深圳，我决定留在杭州找实习。\n"
    command = editing_model(tmp_path, note, edited, harness.WRITER_REPLY)
    result = run_pass(
        open_vault(corpus_vault), PassOptions(engine="llm", llm=command, now=harness.PASS_NOW)
    )
    assert result.status == "applied"
    assert note.read_text("utf-8") == edited  # never rewritten
    warning = next(w for w in result.warnings if rv.NOTE in w)
    assert "changed while the pass ran" in warning and "next pass" in warning
    assert (
        warning
        in subprocess.run(
            ["git", "-C", str(corpus_vault), "log", "-1", "--format=%B"],
            capture_output=True,
            text=True,
        ).stdout
    )
    # what the pass did not see is still pending; the note is not ready to archive
    vault = open_vault(corpus_vault)
    pending = {p.rel: [s.excerpt for s in p.signals] for p in scan_vault(vault).pending}
    assert any("杭州" in excerpt for excerpt in pending[rv.NOTE])
    assert (
        load_state(vault.state_file).notes[rv.NOTE].sha256
        != harness.hashlib.sha256(edited.encode()).hexdigest()
    )
    from cmem.archive.gate import list_staged

    assert {line.note: line.state for line in list_staged(vault)}[
        rv.NOTE.removesuffix(".md")
    ] == "changed"


def test_a_checklist_tick_during_the_model_call_is_kept(corpus_vault, tmp_path):
    checklist = corpus_vault / harness.CHECKLIST
    edited = checklist.read_text("utf-8") + "\n- [x] [[old note]] → archive/2026-10/old note.md\n"
    command = editing_model(tmp_path, checklist, edited, harness.WRITER_REPLY)
    result = run_pass(
        open_vault(corpus_vault), PassOptions(engine="llm", llm=command, now=harness.PASS_NOW)
    )
    assert result.status == "applied"
    text = checklist.read_text("utf-8")
    assert (
        text.startswith(edited.rstrip("\n")) and "[[2026-11-28 随手记]]" in text
    )  # the tick, then the pass's lines


# --- git's index.lock ---------------------------------------------------------------------------


def test_a_held_index_lock_is_waited_for_then_named(corpus_vault, monkeypatch):
    monkeypatch.setattr(history, "INDEX_LOCK_WAIT_SECONDS", 0.5)
    (corpus_vault / rv.NOTE).write_text(
        rv.NOTE_TEXT + "- 以后都先写测试\n", encoding="utf-8"
    )  # a hand edit to snapshot
    lock = corpus_vault / ".git/index.lock"
    lock.write_text("")
    before = harness.snapshot(corpus_vault)
    started = time.monotonic()
    with pytest.raises(GitError) as caught:
        run_pass(open_vault(corpus_vault), PassOptions(engine="builtin", now=harness.PASS_NOW))
    assert 0.5 <= time.monotonic() - started < 5
    assert str(lock) in str(caught.value) and "another git command is running" in str(caught.value)
    assert "waited 0.5 s" in str(caught.value) and "cmem doctor --fix" in str(caught.value)
    assert harness.snapshot(corpus_vault) == before and lock.exists()  # never deleted


def test_an_index_lock_released_during_the_wait_lets_the_pass_run(corpus_vault):
    lock = corpus_vault / ".git/index.lock"
    lock.write_text("")
    threading.Timer(0.4, lock.unlink).start()
    result = run_pass(open_vault(corpus_vault), PassOptions(engine="builtin", now=harness.PASS_NOW))
    assert result.status == "applied" and result.commit


def test_a_lock_taken_between_apply_and_commit_is_waited_for(corpus_vault, monkeypatch):
    lock = corpus_vault / ".git/index.lock"
    real_commit = history.commit_files

    def obsidian_git_commits_first(root, files, message, **options):
        if message.startswith("cmem: converge"):
            lock.write_text("")
            threading.Timer(0.3, lock.unlink).start()
        return real_commit(root, files, message, **options)

    monkeypatch.setattr(history, "commit_files", obsidian_git_commits_first)
    result = run_pass(open_vault(corpus_vault), PassOptions(engine="builtin", now=harness.PASS_NOW))
    assert result.status == "applied" and result.commit and not lock.exists()


@pytest.mark.slow
def test_cmem_converge_with_a_held_index_lock_exits_within_ten_seconds(corpus_vault):
    lock = corpus_vault / ".git/index.lock"
    lock.write_text("")
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cmem",
            "converge",
            "--engine",
            "builtin",
            "--vault",
            str(corpus_vault),
        ],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    took = time.monotonic() - started
    assert done.returncode == 1 and took <= 10, (took, done.stderr)
    assert (
        done.stderr.startswith("error: ")
        and str(lock) in done.stderr
        and len(done.stderr.strip().splitlines()) == 1
    )
