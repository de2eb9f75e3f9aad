"""A pass's status line on a real terminal (a pseudo-terminal): drawn in place, cut to the
terminal's width, cleared with the cursor shown again, and — its thread holding nothing a child
needs — it does not keep a pass from forking (`cmem/fork_safety.py`)."""

from __future__ import annotations

import fcntl
import os
import struct
import termios
import threading
import time

import pytest

from cmem import fork_safety
from cmem.render import status_line
from cmem.render.reports import Spinner
from cmem.render.status_line import StatusLine
from cmem.scan import in_processes, scanner
from cmem.scan.in_processes import PARALLEL_MIN_ITEMS, PROCESSES_VARIABLE
from cmem.vault.layers import DIVERGENT, open_vault
from support import forks_from_now

pytestmark = pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")


class _Terminal:
    """The writing end of a pseudo-terminal, as a stream (`fileno`, `isatty`, `encoding`); what
    was drawn is read from the other end."""

    def __init__(self, columns: int = 80, encoding: str = "utf-8"):
        self.reader, self.fd = os.openpty()
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
        self.encoding = encoding
        os.set_blocking(self.reader, False)

    def fileno(self) -> int:
        return self.fd

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> None:  # never used when there is a descriptor
        raise AssertionError("the status line writes to the descriptor")

    def flush(self) -> None:
        pass

    def drawn(self) -> str:
        out = b""
        while True:
            try:
                chunk = os.read(self.reader, 65536)
            except BlockingIOError:
                return out.decode("utf-8", "replace")
            if not chunk:
                return out.decode("utf-8", "replace")
            out += chunk

    def close(self) -> None:
        os.close(self.fd)
        os.close(self.reader)


@pytest.fixture
def terminal():
    made = []

    def make(**kwargs) -> _Terminal:
        made.append(_Terminal(**kwargs))
        return made[-1]

    yield make
    for each in made:
        each.close()


def test_the_line_is_redrawn_then_cleared_with_the_cursor_shown(terminal, monkeypatch):
    monkeypatch.setattr(status_line, "INTERVAL", 0.01)
    screen = terminal()
    line = StatusLine(screen)
    line.start("scanning…")
    time.sleep(0.1)
    line.update("asking the model… 3s")
    time.sleep(0.1)
    line.stop()
    line.stop()  # twice is harmless
    drawn = screen.drawn()
    assert drawn.startswith(status_line.HIDE_CURSOR)
    assert drawn.endswith(status_line.CLEAR_LINE + status_line.SHOW_CURSOR)
    frames = drawn.split(status_line.CLEAR_LINE)[1:-1]
    assert any(f.endswith(" scanning…") for f in frames)
    assert any(f.endswith(" asking the model… 3s") for f in frames)
    assert len({f[0] for f in frames}) > 1  # the spinner turns
    assert "\n" not in drawn


def test_a_line_wider_than_the_terminal_is_cut_so_it_never_wraps(terminal, monkeypatch):
    monkeypatch.setattr(status_line, "INTERVAL", 0.01)
    screen = terminal(columns=30)
    line = StatusLine(screen)
    line.start("asking the model… 12s of 300s · Ctrl-C stops; nothing is written")
    time.sleep(0.05)
    line.stop()
    frames = screen.drawn().split(status_line.CLEAR_LINE)[1:-1]
    assert frames and all(len(f) <= 29 and f.endswith("…") for f in frames)


def test_a_terminal_that_cannot_show_the_frames_gets_ascii(terminal):
    screen = terminal(encoding="ascii")
    line = StatusLine(screen)
    line.start("scanning")
    line.stop()
    drawn = screen.drawn()
    assert drawn.isascii() and "- scanning" in drawn


def test_the_spinner_uses_the_terminal_line_and_term_dumb_gets_plain_lines(terminal, monkeypatch):
    monkeypatch.delenv("TERM", raising=False)
    screen = terminal()
    spinner = Spinner(stream=screen)
    spinner("asking the model", 1.0, 300)
    assert isinstance(spinner._status, StatusLine)
    spinner.done()
    assert spinner._status is None and "1s of 300s" in screen.drawn()
    monkeypatch.setenv("TERM", "dumb")  # no escape codes: the lines a log gets
    dumb = terminal()
    dumb.write = lambda text: os.write(dumb.fd, text.encode())
    spinner = Spinner(stream=dumb)
    spinner("asking the model", 1.0)
    spinner.done()
    assert spinner._status is None and dumb.drawn() == "asking the model…\r\n"


def test_a_running_status_line_does_not_keep_the_scan_to_one_process(terminal, monkeypatch):
    monkeypatch.delenv(PROCESSES_VARIABLE, raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    line = StatusLine(terminal())
    line.start("scanning")
    try:
        assert fork_safety.threads_beside() == 0
        assert in_processes.workers(100 * PARALLEL_MIN_ITEMS) == 2
        # a thread nobody registered (a watcher, a server's worker) still does
        stop = threading.Event()
        other = threading.Thread(target=stop.wait)
        other.start()
        try:
            assert fork_safety.threads_beside() == 1
            assert in_processes.workers(100 * PARALLEL_MIN_ITEMS) == 1
        finally:
            stop.set()
            other.join()
    finally:
        line.stop()
    assert not fork_safety._safe  # unregistered when it stops


def test_a_line_without_a_descriptor_is_not_counted_fork_safe():
    import io

    class FakeTerminal(io.StringIO):
        def isatty(self):
            return True

    line = StatusLine(FakeTerminal())
    line.start("scanning")
    try:
        assert fork_safety.threads_beside() == 1  # it writes through Python's io: not safe
    finally:
        line.stop()


def test_notes_are_read_in_forked_processes_while_the_line_turns(
    sample_vault, terminal, monkeypatch
):
    """A real fork while the line's thread draws: the children's entries are the ones one
    process reads, and the line is drawn before, during and after."""
    import shutil

    monkeypatch.setattr(status_line, "INTERVAL", 0.001)
    for path in sorted(sample_vault.glob("*.md")):
        for number in range(25):
            shutil.copyfile(path, sample_vault / f"copy {number} {path.name}")
    vault = open_vault(sample_vault)
    files = [(file, file.lstat()) for file in vault.list_layer(DIVERGENT)]
    assert len(files) >= PARALLEL_MIN_ITEMS
    alone = [scanner._read_entry(file, vault, st) for file, st in files]
    forks = forks_from_now(monkeypatch)
    monkeypatch.delenv(PROCESSES_VARIABLE, raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    screen = terminal()
    line = StatusLine(screen)
    line.start("scanning")
    try:
        forked = scanner._read_entries(files, vault)  # as many processes as `workers` says
    finally:
        line.stop()
    plain = [{k: v for k, v in e.to_json().items() if k != "r"} for e in forked]
    assert plain == [{k: v for k, v in e.to_json().items() if k != "r"} for e in alone]
    assert len(forks) == 1
    assert screen.drawn().count("scanning") > 1
