"""Failures are loud (issue 14): a failed, refused or interrupted pass says how many times the
model was asked, what was and was not written and what to do next, and `cmem log` lists it with
its reason, rounds, run record and snapshot commit. Real processes, real git, the fake model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from pass_helpers import FAKE, NOTE, PROFILE
from support import git, snapshot


def cmem(*args: str, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k not in ("CMEM_VAULT", "CMEM_LLM")}
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "cmem", *args],
        capture_output=True,
        text=True,
        env=full,
        stdin=subprocess.DEVNULL,
        timeout=120,
        **kwargs,
    )


def fake_env(tmp_path: Path, replies: list[str], mode: str = "reply") -> dict:
    queue = tmp_path / "queue"
    queue.mkdir(exist_ok=True)
    for index, text in enumerate(replies):
        (queue / f"{index:03d}.txt").write_text(text, encoding="utf-8")
    return {
        "FAKE_LLM_REPLIES": str(queue),
        "FAKE_LLM_LOG": str(tmp_path / "fake.log"),
        "FAKE_LLM_MODE": mode,
    }


def hand_edit(root: Path) -> None:
    """An edit of a memory file by hand: the pass commits it first as a snapshot."""
    with open(root / PROFILE, "a", encoding="utf-8") as handle:
        handle.write("- 周末喜欢爬山（来源：[[2026-11-20 日记]]）\n")


def log_entries(root: Path) -> list[dict]:
    done = cmem("log", "--json", "--vault", str(root))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["passes"]


def test_a_rejected_pass_names_the_rounds_the_snapshot_and_is_in_the_log(pass_vault, tmp_path):
    (pass_vault / ".cmem/config.yaml").write_text(
        "repair_rounds: 2\nllm:\n  timeout_seconds: 20\n", encoding="utf-8"
    )
    hand_edit(pass_vault)
    llm = f"{sys.executable} {FAKE}"
    done = cmem(
        "converge",
        "--llm",
        llm,
        "--vault",
        str(pass_vault),
        env=fake_env(tmp_path, ["no answer"] * 3),
    )
    assert done.returncode == 1
    assert "the model was asked 3 times (1 + 2 repair rounds)" in done.stderr
    assert "no memory file was written and no note was marked converged" in done.stderr
    snapshot_sha = git(pass_vault, "rev-parse", "HEAD").strip()
    assert f"your notes and edits were committed first as {snapshot_sha[:8]}" in done.stderr
    assert "run record: " in done.stderr and "next: " in done.stderr
    entry = log_entries(pass_vault)[0]
    assert entry["status"] == "failed" and entry["rounds"] == 3 and entry["commit"] is None
    assert (
        entry["snapshot_commit"] == snapshot_sha
        and Path(entry["run"]).is_dir()
        and entry["notes"] == [NOTE]
    )
    assert "rejected after asking 3 times" in entry["reason"] and entry["errors"]
    text = cmem("log", "--vault", str(pass_vault)).stdout
    assert (
        "converge failed" in text
        and "3 times (2 repair rounds)" in text
        and snapshot_sha[:8] in text
    )


def test_a_model_command_failure_is_in_the_log_with_its_reason(pass_vault, tmp_path):
    llm = f"{sys.executable} {FAKE}"
    done = cmem(
        "converge",
        "--llm",
        llm,
        "--vault",
        str(pass_vault),
        env=fake_env(tmp_path, [], mode="fail"),
    )
    assert done.returncode == 1 and "rate limit" in done.stderr
    assert (
        "the model was asked once; no memory file was written" in done.stderr
        and "next: " in done.stderr
    )
    entry = log_entries(pass_vault)[0]
    assert entry["status"] == "failed" and entry["rounds"] == 1 and "rate limit" in entry["reason"]


def test_a_refused_pass_is_in_the_log(pass_vault, tmp_path):
    (pass_vault / ".cmem/config.yaml").write_text(
        f'llm:\n  command: "{sys.executable} {FAKE}"\n', encoding="utf-8"
    )
    done = cmem("converge", "--vault", str(pass_vault), env=fake_env(tmp_path, []))
    assert (
        done.returncode == 1
        and "`cmem trust`" in done.stderr
        and "the model was not asked" in done.stderr
    )
    assert not (tmp_path / "fake.log").exists()
    entry = log_entries(pass_vault)[0]
    assert entry["status"] == "refused" and entry["rounds"] == 0
    assert "converge refused" in cmem("log", "--vault", str(pass_vault)).stdout


def only_ctrl_c_ends_it(root: Path) -> None:
    """The vault's model timeout out of the way (the fixture's is 5 s): a loaded machine took
    longer than that from the model's start to the Ctrl-C, and the pass ended as timed out. Now
    the test waits for its event (the model started), and only the Ctrl-C can end the pass."""
    config = root / ".cmem/config.yaml"
    text = config.read_text("utf-8")
    assert "timeout_seconds: 5\n" in text
    config.write_text(text.replace("timeout_seconds: 5\n", "timeout_seconds: 86400\n"), "utf-8")
    git(root, "commit", "-qam", "the model's timeout out of the way")  # a clean tree, as before


def test_ctrl_c_says_what_was_and_was_not_done(pass_vault, tmp_path):
    only_ctrl_c_ends_it(pass_vault)
    before = snapshot(pass_vault)
    llm = f"{sys.executable} {FAKE}"
    env = {k: v for k, v in os.environ.items() if k not in ("CMEM_VAULT", "CMEM_LLM")}
    env.update(fake_env(tmp_path, [], mode="hang"))
    process = subprocess.Popen(
        [sys.executable, "-m", "cmem", "converge", "--llm", llm, "--vault", str(pass_vault)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    log = tmp_path / "fake.log"
    while not (log.exists() and log.read_text("utf-8").strip()):  # the model is running
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    model_pid = json.loads(log.read_text("utf-8").splitlines()[0])["pid"]
    process.send_signal(signal.SIGINT)
    _out, err = process.communicate(timeout=60)
    assert process.returncode == 130
    assert err.startswith("interrupted") or "\ninterrupted\n" in err
    assert "the model command was stopped" in err and "no memory file was written" in err
    assert "the pending notes stay pending" in err and "run record: " in err
    assert snapshot(pass_vault) == before  # nothing written, HEAD unchanged
    try:
        os.kill(model_pid, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    assert not alive, "the model command outlived the interrupted pass"
    entry = log_entries(pass_vault)[0]
    assert entry["status"] == "interrupted" and entry["rounds"] == 1
    assert "converge interrupted" in cmem("log", "--vault", str(pass_vault)).stdout


def test_ctrl_c_on_a_terminal_clears_the_status_line_and_shows_the_cursor(pass_vault, tmp_path):
    """The same interrupt with the output on a (pseudo-)terminal, as a person sees it: the
    status line was drawn while the model ran, and the interrupted pass cleared it and showed
    the cursor again before saying what was done (`render/status_line.py`)."""
    from cmem.render import status_line

    only_ctrl_c_ends_it(pass_vault)
    before = snapshot(pass_vault)
    llm = f"{sys.executable} {FAKE}"
    env = {k: v for k, v in os.environ.items() if k not in ("CMEM_VAULT", "CMEM_LLM", "NO_COLOR")}
    env.update(fake_env(tmp_path, [], mode="hang"), TERM="xterm")
    reader, terminal = os.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "cmem", "converge", "--llm", llm, "--vault", str(pass_vault)],
        stdin=subprocess.DEVNULL,
        stdout=terminal,
        stderr=terminal,
        env=env,
    )
    os.close(terminal)
    drawn = b""

    def read_some() -> None:
        nonlocal drawn
        import select

        while select.select([reader], [], [], 0.05)[0]:
            try:
                chunk = os.read(reader, 65536)
            except OSError:  # EIO: the process closed its end
                return
            if not chunk:
                return
            drawn += chunk

    log = tmp_path / "fake.log"
    deadline = time.monotonic() + 60
    while not (log.exists() and log.read_text("utf-8").strip() and b"asking the model" in drawn):
        assert process.poll() is None and time.monotonic() < deadline, drawn
        read_some()
    process.send_signal(signal.SIGINT)
    while process.poll() is None:
        read_some()
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError(drawn)
    read_some()  # what it wrote before it exited (then the end reads as EIO)
    os.close(reader)
    text = drawn.decode("utf-8", "replace")
    assert process.returncode == 130, text
    hidden = text.rindex(status_line.HIDE_CURSOR)
    shown = text.rindex(status_line.SHOW_CURSOR)
    assert hidden < shown < text.index("interrupted", hidden), text
    assert text[:shown].endswith(status_line.CLEAR_LINE), text  # the line wiped, then the cursor
    assert "no memory file was written" in text
    assert snapshot(pass_vault) == before
