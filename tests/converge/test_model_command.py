"""run_model_command against tests/fake_llm.py: real processes, real pipes, real signals."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
import uuid
from pathlib import Path

import pytest

from cmem.converge.model.command import ModelCommandError, run_model_command
from cmem.errors import CmemError
from reliability_harness import live_pids_with
from support import TESTS

FAKE = TESTS / "fake_llm.py"


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """fake(mode, *args) -> (command, marker); the calls it logs are in fake.calls()."""
    log = tmp_path / "fake_llm.jsonl"
    monkeypatch.setenv("FAKE_LLM_LOG", str(log))

    def command(mode: str = "reply", *extra: str) -> tuple[str, str]:
        monkeypatch.setenv("FAKE_LLM_MODE", mode)
        marker = f"cmem-test-{uuid.uuid4().hex}"
        return shlex.join([sys.executable, str(FAKE), *extra, "--marker", marker]), marker

    def calls() -> list[dict]:
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text("utf-8").splitlines()]

    command.calls = calls
    return command


def alive(pid: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return fields[0] not in (b"Z", b"X")


needs_proc = pytest.mark.skipif(
    not os.path.isdir("/proc/self"), reason="scans /proc for leftover processes"
)


def test_reply_comes_back_in_queue_order(fake, tmp_path, monkeypatch):
    replies = tmp_path / "replies"
    replies.mkdir()
    (replies / "01.txt").write_text("<convergence>first</convergence>\n", "utf-8")
    (replies / "02.txt").write_text("<convergence>second 第二</convergence>\n", "utf-8")
    monkeypatch.setenv("FAKE_LLM_REPLIES", str(replies))
    command, _ = fake()
    first = run_model_command(command, "p1", timeout=5, max_output_bytes=10_000)
    second = run_model_command(command, "p2", timeout=5, max_output_bytes=10_000)
    assert first.stdout == "<convergence>first</convergence>\n"
    assert second.stdout == "<convergence>second 第二</convergence>\n"
    assert first.command == shlex.split(command)
    assert first.returncode == 0 and first.replacements == 0 and first.warnings == []
    assert 0 < first.elapsed < 5
    with pytest.raises(
        ModelCommandError, match="exit code 4"
    ):  # the queue is empty: extra calls show
        run_model_command(command, "p3", timeout=5, max_output_bytes=10_000)


def test_prompt_arrives_exactly_on_stdin(fake):
    prompt = "第一行\r\nline two with trailing spaces   \n\n\ttab\u00a0nbsp 🙂\n" * 50
    command, _ = fake()
    run_model_command(command, prompt, timeout=5, max_output_bytes=10_000)
    (call,) = fake.calls()
    assert call["prompt"] == prompt
    assert call["prompt_file"] is None


def test_prompt_file_placeholder_gets_a_private_file_and_empty_stdin(fake):
    command, _ = fake("reply", "{prompt_file}")
    result = run_model_command(command, "the prompt\n", timeout=5, max_output_bytes=10_000)
    (call,) = fake.calls()
    assert call["prompt"] == "the prompt\n"
    assert call["prompt_file_mode"] == "0o600"
    assert call["stdin_bytes"] == 0
    assert not os.path.exists(call["prompt_file"])  # removed afterwards
    assert "{prompt_file}" in result.command  # the record shows the command as configured


def test_arguments_are_never_seen_by_a_shell(fake, tmp_path):
    target = tmp_path / "pwned"
    command, _ = fake("reply", f"--x=$(touch {target}); touch {target}")
    run_model_command(command, "p", timeout=5, max_output_bytes=10_000)
    assert not target.exists()
    assert f"--x=$(touch {target}); touch {target}" in fake.calls()[0]["argv"]


def test_environment_passes_through(fake, monkeypatch):
    monkeypatch.setenv("FAKE_LLM_PROBE", "through")
    command, _ = fake()
    run_model_command(command, "p", timeout=5, max_output_bytes=10_000)
    assert fake.calls()[0]["probe"] == "through"


def test_failure_names_the_command_and_shows_the_tail_of_stderr(fake, monkeypatch):
    noise = "".join(f"noise line {n}\n" for n in range(2000))  # ~30 KB, far beyond the kept tail
    monkeypatch.setenv("FAKE_LLM_STDERR", noise + "Error: 429 rate limit exceeded\n")
    command, _ = fake("fail")
    with pytest.raises(ModelCommandError) as caught:
        run_model_command(command, "p", timeout=5, max_output_bytes=10_000)
    message = str(caught.value)
    assert "fake_llm.py" in message and "exit code 3" in message
    assert message.endswith("Error: 429 rate limit exceeded")
    assert "noise line 0\n" not in message  # only the tail
    assert caught.value.reason == "exit" and caught.value.returncode == 3
    assert len(caught.value.stderr.encode()) <= 4096


def test_command_not_found_is_one_clear_sentence():
    with pytest.raises(CmemError) as caught:
        run_model_command("no-such-model-xyz --flag", "p", timeout=5, max_output_bytes=10_000)
    assert (
        str(caught.value)
        == "model command 'no-such-model-xyz' not found; check llm.command or --llm."
    )


@pytest.mark.parametrize("command", ["", "   ", "llm 'unclosed"])
def test_empty_or_unparsable_command_is_an_error(command):
    with pytest.raises(CmemError, match=r"llm\.command"):
        run_model_command(command, "p", timeout=5, max_output_bytes=10_000)


def test_empty_response_comes_back_with_a_warning_for_the_validator_to_reject(fake):
    command, _ = fake("empty")
    result = run_model_command(command, "p", timeout=5, max_output_bytes=10_000)
    assert result.stdout == "" and "wrote nothing on stdout" in result.warnings[0]


@needs_proc
def test_hang_times_out_and_leaves_nothing_running(fake):
    command, marker = fake("hang")
    started = time.monotonic()
    with pytest.raises(ModelCommandError) as caught:
        run_model_command(command, "p", timeout=1, max_output_bytes=10_000)
    took = time.monotonic() - started
    assert took < 1 + 5
    message = str(caught.value)
    assert "timed out after 1 s" in message and "llm.timeout_seconds" in message
    assert caught.value.reason == "timeout"
    (call,) = fake.calls()
    assert call["pgid"] != os.getpgid(0)  # it ran in a process group of its own
    assert not alive(call["pid"])
    assert live_pids_with(marker) == []


@needs_proc
def test_a_group_that_ignores_sigterm_is_killed(fake):
    command, marker = fake("stubborn")
    started = time.monotonic()
    with pytest.raises(ModelCommandError, match="timed out"):
        run_model_command(command, "p", timeout=1, max_output_bytes=10_000)
    assert time.monotonic() - started < 1 + 5  # the grace period, then SIGKILL
    (call,) = fake.calls()
    assert not alive(call["pid"]) and not alive(call["grandchild_pid"])
    assert live_pids_with(marker) == []


@needs_proc
def test_grandchild_holding_stdout_does_not_hold_us(fake):
    command, marker = fake("grandchild")
    started = time.monotonic()
    result = run_model_command(command, "p", timeout=30, max_output_bytes=10_000)
    took = time.monotonic() - started
    assert result.stdout == "<convergence>\n</convergence>\n"
    assert took < 5  # nowhere near the 30 s timeout
    (call,) = fake.calls()
    assert not alive(call["grandchild_pid"])
    assert live_pids_with(marker) == []


@needs_proc
def test_flood_is_capped_with_a_clear_error(fake):
    command, marker = fake("flood")
    started = time.monotonic()
    with pytest.raises(ModelCommandError) as caught:
        run_model_command(command, "p", timeout=10, max_output_bytes=1_000_000)
    assert time.monotonic() - started < 5
    assert "more than 1000000 bytes" in str(caught.value) and "llm.max_output_bytes" in str(
        caught.value
    )
    assert caught.value.reason == "too-much-output"
    assert live_pids_with(marker) == []


def test_model_that_never_reads_stdin_cannot_deadlock_us(fake):
    command, _ = fake("no-stdin-read")
    prompt = "x" * (2 * 1024 * 1024)  # far beyond a 64 KB pipe buffer
    started = time.monotonic()
    result = run_model_command(command, prompt, timeout=10, max_output_bytes=10_000)
    assert result.stdout == "<convergence>\n</convergence>\n"
    assert time.monotonic() - started < 5


def test_large_prompt_is_delivered_whole(fake):
    prompt = "一行笔记 line of notes\n" * 60_000  # ~1.7 MB
    command, _ = fake()
    run_model_command(command, prompt, timeout=10, max_output_bytes=10_000)
    assert fake.calls()[0]["prompt"] == prompt


def test_on_tick_reports_elapsed_time_while_waiting(fake, monkeypatch):
    monkeypatch.setenv("FAKE_LLM_DELAY", "0.6")
    command, _ = fake("slow")
    ticks: list[float] = []
    run_model_command(command, "p", timeout=5, max_output_bytes=10_000, on_tick=ticks.append)
    assert len(ticks) >= 3
    assert ticks == sorted(ticks) and ticks[0] > 0


@needs_proc
def test_interrupt_while_waiting_kills_the_command(fake):
    command, marker = fake("hang")

    def interrupt(elapsed: float) -> None:
        if elapsed > 0.3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_model_command(command, "p", timeout=30, max_output_bytes=10_000, on_tick=interrupt)
    assert live_pids_with(marker) == []


def test_undecodable_output_is_replaced_and_counted(fake, tmp_path, monkeypatch):
    replies = tmp_path / "replies"
    replies.mkdir()
    (replies / "01").write_bytes(b"<convergence>caf\xe9 \xff ok \xef\xbf\xbd</convergence>")
    monkeypatch.setenv("FAKE_LLM_REPLIES", str(replies))
    command, _ = fake()
    result = run_model_command(command, "p", timeout=5, max_output_bytes=10_000)
    assert result.replacements == 2  # the U+FFFD the model wrote itself is not counted
    assert "\ufffd" in result.stdout and "not UTF-8" in result.warnings[0]


def test_a_long_command_is_shown_by_its_program_name_and_its_tail():
    from cmem.converge.model.command import _display

    deep = "/home/someone/" + "a-rather-long-folder-name/" * 6
    argv = [deep + ".venv/bin/python", deep + "tests/fake_llm.py", "--marker", "run-42"]
    shown = _display(argv)
    assert shown.startswith("python …") and shown.endswith("tests/fake_llm.py --marker run-42")
    assert len(shown) <= 100
    assert _display(["llm", "-m", "gpt-4o-mini"]) == "llm -m gpt-4o-mini"


@needs_proc
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_sigkilled_cmem_takes_the_model_and_its_helpers_with_it(fake, tmp_path):
    """cmem SIGKILLed while the model runs (no handler of cmem's runs then): the model and the
    helper it forked, both deaf to SIGTERM, die with it (the guard's death signal)."""
    import signal
    import subprocess

    from support import CMEM, run_cmem

    command, marker = fake("stubborn")
    root = tmp_path / "vault"
    assert run_cmem("init", str(root), "--lang", "en").returncode == 0
    (root / "2026-01-01 tea.md").write_text("- actually I prefer tea over coffee\n")
    cmem = subprocess.Popen(
        [*CMEM, "converge", "--llm", command, "--vault", str(root)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120  # the model starting is the event waited for
        while not fake.calls() and cmem.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        (call,) = fake.calls()
        os.kill(cmem.pid, signal.SIGKILL)
        cmem.wait()
        deadline = time.monotonic() + 60  # the kernel's signal, then the group's kill
        while (alive(call["pid"]) or alive(call["grandchild_pid"])) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(call["pid"]) and not alive(call["grandchild_pid"])
        assert live_pids_with(marker) == []
    finally:
        if cmem.poll() is None:
            cmem.kill()
        for pid in live_pids_with(marker):  # never leave one behind, even when the test fails
            os.kill(pid, signal.SIGKILL)
