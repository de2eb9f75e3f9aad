"""A pass's status line on a real terminal (a pseudo-terminal): drawn in place, cut to the
terminal's width, cleared with the cursor shown again."""

from __future__ import annotations

import fcntl
import os
import struct
import termios
import time

import pytest

from cmem.render import status_line
from cmem.render.reports import Spinner
from cmem.render.status_line import StatusLine

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
