#!/usr/bin/env python3
"""A stand-in for a model CLI, so no test ever calls a real model.

    fake_llm.py [PROMPT_FILE] [--marker TEXT] [--anything-else]

Reads the prompt from PROMPT_FILE, or else from stdin to EOF. Environment:

- FAKE_LLM_LOG: append one JSON line per call (prompt, argv, pid, pgid, mode, ...).
- FAKE_LLM_REPLIES: a folder of replies, used in name order; `.position` in it counts calls.
  When the queue is empty the fake fails (exit 4), so a test notices an unexpected extra call.
- FAKE_LLM_REPLY: the reply when no folder is given (default: a fixed line).
- FAKE_LLM_MODE: reply (default) | converge | fail | hang | grandchild | flood | no-stdin-read
  | slow | empty
  | converge (a model that reads the prompt: each note's first content line becomes a statement
  of a new topic file citing it — "quoted from" when the prompt marks the note quoted — and the
  note is converged; a note with no such line is deferred; FAKE_LLM_FAIL_AT=N fails the Nth call)
  | stubborn (ignores SIGTERM, as does a helper it forks, and hangs)
  | stream (a reply that opens a file block, then FAKE_LLM_STREAM_BYTES of content, streamed:
  a 1 GB answer costs the fake no memory)
- FAKE_LLM_DELAY: seconds `slow` sleeps before replying.
- FAKE_LLM_STDERR: what `fail` writes on stderr.
- FAKE_LLM_WHILE_THINKING: a command (a JSON list of arguments) run to its end before the reply,
  as another writer would act while a model thinks (a `git pull`, another pass).

`--marker` does nothing: it puts a unique word in the process's command line, so a test can scan
/proc for anything the fake left running.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
import time


def main(argv: list[str]) -> int:
    positional = []
    args = iter(argv)
    for arg in args:
        if arg == "--marker":
            next(args, None)
        elif not arg.startswith(
            "--"
        ):  # other --options are ignored, as a real CLI's flags would be
            positional.append(arg)
    prompt_file = positional[0] if positional else None
    mode = os.environ.get("FAKE_LLM_MODE", "reply")

    record = {
        "argv": argv,
        "mode": mode,
        "pid": os.getpid(),
        "pgid": os.getpgid(0),
        "prompt_file": prompt_file,
    }
    record["probe"] = os.environ.get("FAKE_LLM_PROBE")
    if mode == "no-stdin-read":
        record["prompt"] = None
    elif prompt_file is not None:
        record["prompt_file_mode"] = oct(stat.S_IMODE(os.stat(prompt_file).st_mode))
        with open(prompt_file, "rb") as handle:
            record["prompt"] = handle.read().decode("utf-8")
        record["stdin_bytes"] = len(sys.stdin.buffer.read())  # DEVNULL: 0, and no blocking
    else:
        record["prompt"] = sys.stdin.buffer.read().decode("utf-8")

    if mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if mode in ("grandchild", "stubborn"):
        child = os.fork()
        if child == 0:  # holds stdout and stderr open, as a forgotten helper process would
            time.sleep(3600)
            os._exit(0)
        record["grandchild_pid"] = child
    _log(record)

    if mode == "fail":
        sys.stderr.write(
            os.environ.get("FAKE_LLM_STDERR", "fake_llm: simulated failure: rate limit exceeded\n")
        )
        return 3
    if mode in ("hang", "stubborn"):
        while True:
            time.sleep(3600)
    if mode == "flood":
        block = b"x" * 65536
        while True:
            sys.stdout.buffer.write(block)
    if mode == "stream":
        sys.stdout.buffer.write(b'<convergence>\n<file path="converged/core/profile.md">\n')
        remaining = int(float(os.environ.get("FAKE_LLM_STREAM_BYTES", "1e9")))
        line = (
            b"- \xe6\x9d\xa5\xe6\xba\x90 the same statement again, and again (source: [[x]])\n"
            * 800
        )
        while remaining > 0:
            chunk = line[:remaining]
            sys.stdout.buffer.write(chunk)
            remaining -= len(chunk)
        sys.stdout.buffer.write(b"</file>\n</convergence>\n")
        return 0
    if mode == "slow":
        time.sleep(float(os.environ.get("FAKE_LLM_DELAY", "1")))
    meanwhile = os.environ.get("FAKE_LLM_WHILE_THINKING")
    if meanwhile:
        import subprocess

        subprocess.run(
            json.loads(meanwhile), check=True, stdin=subprocess.DEVNULL, stdout=sys.stderr.fileno()
        )
    if mode == "empty":
        return 0
    if mode == "converge":
        calls = _count_call()
        if calls == int(os.environ.get("FAKE_LLM_FAIL_AT", "0")):
            sys.stderr.write("fake_llm: simulated failure at this call\n")
            return 3
        sys.stdout.write(_converge_reply(record["prompt"] or ""))
        return 0

    reply = _next_reply()
    if reply is None:
        sys.stderr.write("fake_llm: no queued reply left\n")
        return 4
    sys.stdout.buffer.write(reply)
    sys.stdout.flush()
    if mode == "grandchild":
        os._exit(0)
    return 0


def _count_call() -> int:
    path = os.environ.get("FAKE_LLM_COUNTER")
    if not path:
        return 0
    try:
        with open(path, encoding="utf-8") as handle:
            calls = int(handle.read().strip() or 0) + 1
    except FileNotFoundError:
        calls = 1
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(str(calls))
    return calls


def _converge_reply(prompt: str) -> str:
    import hashlib
    import re

    notes = re.findall(
        r'<note path="([^"]+)" name="([^"]+)"( quoted="[^"]*")?>\n(.*?)\n</note>', prompt, re.S
    )
    statements, accounts = [], []
    path = (
        "converged/topics/imported-"
        + hashlib.sha1("".join(n[0] for n in notes).encode("utf-8")).hexdigest()[:8]
        + ".md"
    )
    for rel, name, quoted, body in notes:
        line = _first_content_line(body)
        if not line:
            accounts.append(f'<deferred note="{rel}" reason="nothing to keep"/>')
            continue
        mark = "quoted from " if quoted else ""
        statements.append(f"- {line} (source: {mark}[[{name}]])")
        accounts.append(f'<converged note="{rel}" into="{path}"/>')
    block = ""
    if statements:
        block = (
            f'<file path="{path}">\n# Imported notes\n\n' + "\n".join(statements) + "\n</file>\n"
        )
    return "<convergence>\n" + block + "\n".join(accounts) + "\n</convergence>\n"


def _first_content_line(body: str) -> str:
    """The first line of a numbered note body (`  3| text`) that says something: not frontmatter,
    a heading, a callout's title or a blank."""
    lines = [line.split("| ", 1)[-1] if "| " in line else "" for line in body.splitlines()]
    if lines and lines[0].strip() == "---":
        end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), 0)
        lines = lines[end + 1 :]
    for line in lines:
        text = line.strip().lstrip(">").strip()
        text = text.replace("`", "").replace("[[", "").replace("]]", "")
        if not text or text.startswith(("#", "[!")) or text == "---":
            continue
        return text.lstrip("-* ").strip()
    return ""


def _log(record: dict) -> None:
    path = os.environ.get("FAKE_LLM_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def _next_reply() -> bytes | None:
    folder = os.environ.get("FAKE_LLM_REPLIES")
    if not folder:
        return os.environ.get("FAKE_LLM_REPLY", "<convergence>\n</convergence>\n").encode("utf-8")
    names = sorted(name for name in os.listdir(folder) if not name.startswith("."))
    counter = os.path.join(folder, ".position")
    try:
        with open(counter, encoding="utf-8") as handle:
            position = int(handle.read().strip() or 0)
    except FileNotFoundError:
        position = 0
    if position >= len(names):
        return None
    with open(counter, "w", encoding="utf-8") as handle:
        handle.write(str(position + 1))
    with open(os.path.join(folder, names[position]), "rb") as handle:
        return handle.read()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
