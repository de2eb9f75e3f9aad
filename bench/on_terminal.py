#!/usr/bin/env python3
"""Run a command as a person runs it in a terminal: its stdin, stdout and stderr on a
pseudo-terminal, whose output this script reads and throws away. bench/run.py times a one-note
pass through it, and through `--pipes` (the same wrapper, the output on pipes, as a hook or a
log gets it): a pass drew its progress with rich's live status on a terminal, whose thread kept
the pass from forking, and the benchmark, off a terminal, never saw the ~80 ms it cost.

    python bench/on_terminal.py [--pipes] COMMAND ARG…

Exits with the command's exit code.
"""

from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import sys
import termios


def on_terminal(argv: list[str]) -> int:
    reader, terminal = os.openpty()
    # a terminal as wide as a usual one (a new pseudo-terminal has 0 columns)
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {**os.environ, "TERM": os.environ.get("TERM") or "xterm-256color"}
    env.pop("NO_COLOR", None)
    process = subprocess.Popen(argv, stdin=terminal, stdout=terminal, stderr=terminal, env=env)
    os.close(terminal)
    while True:
        try:
            if not os.read(reader, 65536):
                break
        except OSError:  # EIO: every holder of the terminal's end has closed it
            break
    os.close(reader)
    return process.wait()


def on_pipes(argv: list[str]) -> int:
    process = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True)
    return process.returncode


if __name__ == "__main__":
    arguments = sys.argv[1:]
    if arguments[:1] == ["--pipes"]:
        sys.exit(on_pipes(arguments[1:]))
    sys.exit(on_terminal(arguments))
