"""One line on a terminal, redrawn in place while a pass runs: a spinner frame and what the pass
is doing ("asking the model… 12s of 300s · Ctrl-C stops; nothing is written").

Written by hand rather than with rich's live status: importing `rich.console` and starting its
status was a visible part of a one-note pass in a terminal (`script -qec`). The line's
thread writes with `os.write` on the terminal's descriptor; a stream without a descriptor (a
test's fake terminal) is written through its `write`.
"""

from __future__ import annotations

import os
import threading

# What `rich`'s "dots" spinner shows; a terminal whose encoding cannot show them gets ASCII.
FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
ASCII_FRAMES = "-\\|/"
INTERVAL = 0.1  # seconds between redraws
HIDE_CURSOR, SHOW_CURSOR, CLEAR_LINE = "\033[?25l", "\033[?25h", "\r\033[K"


class StatusLine:
    """`start(text)`, `update(text)` as often as wanted, `stop()` once (it clears the line and
    shows the cursor again; it is also safe to call twice or without a start)."""

    def __init__(self, stream):
        self.stream = stream
        self.encoding = getattr(stream, "encoding", None) or "utf-8"
        try:
            self.fd: int | None = stream.fileno()
        except (AttributeError, OSError, ValueError):
            self.fd = None  # io.UnsupportedOperation is an OSError and a ValueError
        try:
            FRAMES.encode(self.encoding)
            self.frames = FRAMES
        except (LookupError, UnicodeEncodeError):
            self.frames = ASCII_FRAMES
        self.text = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, text: str) -> None:
        self.text = text
        try:
            self.stream.flush()  # what the stream holds goes before the line, which bypasses it
        except (OSError, ValueError):
            pass
        self._write(HIDE_CURSOR + self._line(0))
        self._thread = threading.Thread(target=self._run, name="cmem-status-line", daemon=True)
        self._thread.start()

    def update(self, text: str) -> None:
        self.text = text  # the thread draws it at its next frame

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout=1)
        self._thread = None
        self._write(CLEAR_LINE + SHOW_CURSOR)

    def _run(self) -> None:
        frame = 1
        while not self._stop.wait(INTERVAL):
            self._write(self._line(frame))
            frame += 1

    def _line(self, frame: int) -> str:
        """The frame and the text, cut to the terminal's width: a line that wrapped would not
        be drawn over by the next one."""
        line = f"{self.frames[frame % len(self.frames)]} {self.text}"
        width = _columns(self.fd)
        if len(line) >= width:
            line = line[: max(width - 2, 1)] + "…"
        return CLEAR_LINE + line

    def _write(self, text: str) -> None:
        data = text.encode(self.encoding, "replace")
        try:
            if self.fd is not None:
                while data:  # a terminal may take part of it
                    data = data[os.write(self.fd, data) :]
            else:
                self.stream.write(data.decode(self.encoding))
                self.stream.flush()
        except (OSError, ValueError):
            pass  # the terminal went away: progress is not worth an error


def _columns(fd: int | None) -> int:
    """The terminal's width; 80 when it cannot say (a pseudo-terminal left at 0 columns)."""
    try:
        columns = os.get_terminal_size(fd).columns if fd is not None else 0
    except OSError:
        columns = 0
    return columns or 80
