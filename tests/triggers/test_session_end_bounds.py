"""The work after a session's end is bounded (issue 42): on a vault whose caches are cold (a big
folder just adopted), each session end reads a share of what a pass reads — the scan's entries,
the builtin engine's words, the prompt's topic terms — and the pass waits until all of it is kept;
the next session end goes on where the last stopped. Counted by reads, never timed: the clock is a
stand-in that moves one tick per file read."""

from __future__ import annotations

import time

from cmem.scan import scan_cache
from cmem.scan.scanner import scan_vault
from cmem.setup.init import init_vault
from cmem.triggers import agent_session
from cmem.triggers.hook_record import read_record
from cmem.vault.layers import open_vault
from support import git, settle

NOTES = 9


def _cold_vault(tmp_path):
    root = tmp_path / "v"
    init_vault(root, "en")
    for index in range(NOTES):
        (root / f"2026-11-{10 + index} notes.md").write_text(
            f"# notes\n\n- I prefer tabs over spaces in project {index}\n", "utf-8"
        )
    for index in range(4):
        (root / f"converged/topics/topic {index}.md").write_text(
            f"---\nsummary: topic {index}\n---\n# Topic\n\n- fact {index} (source: [[n]])\n",
            "utf-8",
        )
    git(root, "add", "-A")
    git(root, "commit", "-qm", "notes")
    settle(root)  # older than the racy-timestamp window: what is read of them may be kept
    return open_vault(root)


def test_a_session_end_on_a_cold_vault_reads_a_share_and_the_pass_waits(tmp_path):
    vault = _cold_vault(tmp_path)
    head = git(vault.root, "rev-parse", "HEAD")
    agent_session.converge_after(vault, "claude-code", warm_seconds=-1)  # no time at all
    record = read_record(str(vault.machine_dir), "claude-code", "pass")
    assert record["status"] == agent_session.WARMING and "first time" in record["reason"]
    assert git(vault.root, "rev-parse", "HEAD") == head  # no pass
    agent_session.converge_after(vault, "claude-code", warm_seconds=600)
    record = read_record(str(vault.machine_dir), "claude-code", "pass")
    assert record["status"] == "applied", record
    assert git(vault.root, "log", "-1", "--format=%s").startswith("cmem: converge")


def test_the_first_scan_is_read_a_share_at_a_time_and_resumed(tmp_path, monkeypatch):
    vault = _cold_vault(tmp_path)
    clock = [0.0]
    read_entry, convergent_entry = scan_cache._read_entry, scan_cache._convergent_entry

    def ticking(read):
        def tick(*args, **kwargs):
            clock[0] += 1
            return read(*args, **kwargs)

        return tick

    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(scan_cache, "_read_entry", ticking(read_entry))
    monkeypatch.setattr(scan_cache, "_convergent_entry", ticking(convergent_entry))
    memory = len(vault.convergent_files())
    calls, reads = 0, []
    while True:
        calls += 1
        before = clock[0]
        done = scan_cache.warm(vault, clock[0] + 3)  # three ticks: three files a call at most
        reads.append(clock[0] - before)
        if done:
            break
        assert calls < 20
    # every file read once, a share per call: notes first, then the memory files
    assert sum(reads) == NOTES + memory and max(reads) <= 4 and calls >= 3, reads
    monkeypatch.setattr(time, "monotonic", time.perf_counter)
    scanned = scan_vault(vault)
    assert scanned.notes_read == 0 and scanned.notes_scanned == NOTES
