"""`cmem watch` with real file events: a new note and an editor's save-by-rename each lead to one
pass after the settle time, a burst of saves to one, cmem's own writes to none; temp files and
touches are ignored; polling takes over when inotify runs out; Ctrl-C stops cleanly."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from cmem.errors import CmemError
from cmem.triggers.watch import Watcher, WatchLock, is_temp_name, watch_vault
from cmem.vault.layers import open_vault
from trigger_helpers import CMEM, CONFIG, NOTE, outcomes, pass_commits, trigger_vault, wait_for

SETTLE = 0.5


class Stderr:
    """Collects a process's stderr lines on a thread, so the test can wait for one."""

    def __init__(self, process: subprocess.Popen):
        self.lines: list[str] = []
        self.thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self.thread.start()

    def _read(self, process):
        for line in process.stderr:
            self.lines.append(line.rstrip("\n"))

    def has(self, text: str) -> bool:
        return any(text in line for line in self.lines)


@pytest.fixture
def watcher_process(make_vault):
    processes = []

    def start(root: Path, *extra: str):
        process = subprocess.Popen(
            [*CMEM, "--vault", str(root), "watch", "--settle", str(SETTLE), "--verbose", *extra],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        processes.append(process)
        stderr = Stderr(process)
        wait_for(lambda: stderr.has("watching"), what="the watcher to start")
        return process, stderr

    yield start
    for process in processes:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)


def wait_outcomes(root: Path, count: int) -> list[str]:
    return wait_for(
        lambda: outcomes(root) if len(outcomes(root)) >= count else None,
        what=f"{count} outcome line(s)",
    )


def test_new_note_rename_save_and_burst_each_give_one_pass_and_own_writes_none(
    make_vault, watcher_process
):
    root = trigger_vault(make_vault, note=False)
    process, stderr = watcher_process(root)

    (root / NOTE).write_text(
        "# Notes\n\n- Actually, I prefer Svelte over React for side projects.\n", "utf-8"
    )
    assert wait_outcomes(root, 1) == ["applied"]

    # vim-style save: write a swap file, then rename it over the note
    swap = root / f".{NOTE}.swp"
    swap.write_text(
        (root / NOTE).read_text("utf-8") + "- I decided to switch to Vue at work.\n", "utf-8"
    )
    os.replace(swap, root / NOTE)
    assert wait_outcomes(root, 2) == ["applied", "applied"]

    burst = root / "2026-12-02 burst.md"
    for index in range(6):
        burst.write_text(
            "# Burst\n\n"
            + "".join(f"- line {n}\n" for n in range(index))
            + "- From now on, always write tests first.\n",
            "utf-8",
        )
    assert wait_outcomes(root, 3) == ["applied"] * 3

    # a change the due rule turns down, as a sentinel: had cmem's own writes (three commits,
    # state.json, the checklist, converged files) caused a check, it would stand before this one
    (root / "2026-12-03 plain.md").write_text("just a plain line, no signal\n", "utf-8")
    assert wait_outcomes(root, 4) == ["applied", "applied", "applied", "not-due"]
    assert len(pass_commits(root)) == 3

    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=30) in (0, 130)
    stderr.thread.join(timeout=10)
    changes = {line.split("change: ", 1)[1] for line in stderr.lines if "change: " in line}
    written = {NOTE, burst.name, "2026-12-03 plain.md"}
    own_hints = changes - written
    # cmem's own writes gave no hint at all, so no burst settled on them ("no … content changed")
    assert own_hints == set() and changes == written
    assert not stderr.has("no divergent note's content changed")
    assert stderr.has("stopped watching: 3 pass(es) from 4 due check(s)")
    print(
        f"\nwatch: hints from cmem's own writes {len(own_hints)}; passes they caused {len(outcomes(root)) - 4}"
    )


def test_ctrl_c_stops_an_idle_watcher_cleanly(make_vault, watcher_process):
    root = trigger_vault(make_vault, note=False)
    process, stderr = watcher_process(root)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=30) in (0, 130)
    stderr.thread.join(timeout=10)
    assert stderr.has("stopped watching") and not stderr.has("Traceback")


def test_one_watcher_per_vault(make_vault):
    vault = open_vault(trigger_vault(make_vault, note=False))
    with WatchLock(vault):
        with pytest.raises(CmemError, match="already watching"):
            with WatchLock(vault):
                pass


@pytest.mark.parametrize(
    "name",
    [
        ".2026-11-30 notes.md.swp",
        "2026-11-30 notes.md~",
        "4913",
        ".x.md.k2j3.cmem-tmp",
        ".#notes.md",
        "#notes.md#",
        ".goutputstream-ABC",
        "notes.md.tmp",
    ],
)
def test_temp_and_swap_files_are_not_notes(name):
    assert is_temp_name(name)


def test_only_divergent_notes_are_hints(make_vault):
    root = trigger_vault(make_vault, note=False)
    watcher = Watcher(open_vault(root), SETTLE, report=lambda message: None)
    for rel in (
        ".git/index.lock",
        ".git/COMMIT_EDITMSG",
        ".cmem/state.json",
        "converged/core/profile.md",
        "archive/ARCHIVE-CHECKLIST.md",
        "README.md",
        "notes.txt",
        ".notes.md.swp",
        "x.sync-conflict-20261130-101010-ABC.md",
    ):
        assert watcher.relevant(str(root / rel)) is None, rel
    assert watcher.relevant(str(root / "2026-11-30 notes.md")) == "2026-11-30 notes.md"


def run_in_thread(vault, **kwargs):
    stop = threading.Event()
    messages: list[str] = []
    calls: list[int] = []
    summary = {}

    def trigger():
        calls.append(1)

        class Outcome:
            status, reason, result = "not-due", "test", None

        return Outcome()

    def target():
        summary["value"] = watch_vault(
            vault,
            SETTLE,
            report=messages.append,
            verbose=messages.append,
            stop=stop,
            trigger=trigger,
            **kwargs,
        )

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    wait_for(lambda: any("watching" in m for m in messages), what="the watcher to start")
    return stop, thread, messages, calls, summary


def test_a_touch_without_a_content_change_runs_no_check(make_vault):
    root = trigger_vault(make_vault)
    stop, thread, messages, calls, summary = run_in_thread(open_vault(root))
    os.utime(root / NOTE)  # an editor that saves unchanged bytes
    (root / NOTE).write_bytes((root / NOTE).read_bytes())
    wait_for(
        lambda: any("no divergent note's content changed" in m for m in messages),
        what="the burst to settle",
    )
    (root / NOTE).write_text("- I decided to go with Rust.\n", "utf-8")
    wait_for(lambda: calls, what="a check after a real change")
    stop.set()
    thread.join(timeout=30)
    assert len(calls) == 1 and summary["value"].unchanged >= 1


def test_falls_back_to_polling_with_a_warning_when_inotify_runs_out(make_vault):
    from watchdog.observers import Observer

    class ExhaustedObserver(Observer):
        def start(self):
            raise OSError(errno.ENOSPC, "inotify watch limit reached")

    root = trigger_vault(make_vault, note=False)
    stop, thread, messages, calls, summary = run_in_thread(
        open_vault(root), observer_factory=ExhaustedObserver
    )
    assert any(m.startswith("warning:") and "polling" in m and "inotify" in m for m in messages)
    (root / "2026-12-01 new.md").write_text("- I decided to go with Rust.\n", "utf-8")
    wait_for(lambda: calls, what="a check seen by polling")
    stop.set()
    thread.join(timeout=30)
    assert summary["value"].polling and len(calls) == 1


def test_a_configured_folder_made_later_is_watched_once_it_appears(make_vault):
    """Issue 44: `sessions/` was in the config but never made, and `watch` warned about it. A
    folder that does not exist yet (a clone's empty one, a daily note's new month) is waited
    for, never warned about, and watched from the moment it appears — rescan_seconds is an
    hour here, so only a file event can report the notes below."""
    root = trigger_vault(
        make_vault,
        config=CONFIG + "divergent:\n  extra_folders: [sessions, journal/**]\n",
        note=False,
    )
    stop, thread, messages, calls, summary = run_in_thread(open_vault(root), rescan_seconds=3600)
    assert not any(m.startswith("warning") for m in messages)
    assert any("sessions/, journal/ once made" in m for m in messages)
    (root / "sessions").mkdir()
    (root / "sessions/2026-12-01 claude-code x 1a2b.md").write_text(
        "- I decided to go with Rust.\n", "utf-8"
    )
    wait_for(lambda: calls, what="a check after a note in the new folder")
    (root / "journal/2026/12").mkdir(parents=True)  # a new month, two folders deep
    (root / "journal/2026/12/2026-12-02.md").write_text("- From now on, tea.\n", "utf-8")
    wait_for(lambda: len(calls) == 2, what="a check after a note in the new month's folder")
    stop.set()
    thread.join(timeout=30)
    assert summary["value"].checks == 2


def test_the_default_settle_is_short_enough_for_a_short_session():
    import inspect

    from cmem.commands.triggers import watch
    from cmem.triggers.watch import DEFAULT_SETTLE

    # the command line's default is the watcher's (typer needs it written out)
    assert DEFAULT_SETTLE == 30.0
    assert inspect.signature(watch).parameters["settle"].default == DEFAULT_SETTLE
