"""`cmem status` shows, per installed agent hook, when it last fired, what it captured and whether
the last capture or pass failed (docs/design.md §14) — also when the status is answered from a
stored result, whose key does not hold the hooks' records: they are read at print time."""

from __future__ import annotations

import json

from cmem.setup.agent_hooks import plan_agent_install
from cmem.setup.hooks import apply_hook_plan
from cmem.setup.init import init_vault
from cmem.triggers.hook_record import write_record
from cmem.vault.layers import open_vault
from support import run_entry, settle


def _vault(tmp_path):
    root = tmp_path / "v"
    init_vault(root, "en")
    vault = open_vault(root)
    project = tmp_path / "project"
    project.mkdir()
    apply_hook_plan(plan_agent_install(vault, project, "codex"), vault)
    return vault


def _status(vault, *extra) -> tuple[dict | str, set[str]]:
    code, out, err, modules = run_entry("cmem.cli", ["status", "--vault", str(vault.root), *extra])
    assert code == 0, err
    return (json.loads(out) if "--json" in extra else out), modules


def test_status_shows_each_agent_hook_and_what_went_wrong(tmp_path):
    vault = _vault(tmp_path)
    machine = str(vault.machine_dir)
    data, _ = _status(vault, "--json")
    (codex,) = data["agent_hooks"]
    assert codex["agent"] == "codex" and codex["last_fired"] is None and codex["installed"]
    text, _ = _status(vault)
    assert "Codex" in text and "never fired" in text
    settle(vault.root)
    _status(vault)  # stored now: the vault is settled
    write_record(
        machine, "codex", "fired", {"time": "2026-11-30T10:00:00+0000", "event": "SessionEnd"}
    )
    write_record(
        machine,
        "codex",
        "capture",
        {"time": "2026-11-30T10:00:01+0000", "status": "captured", "turns": 3,
         "notes": ["sessions/2026-11-30 codex harbor 9cd5.md"], "error": None},
    )  # fmt: skip
    write_record(
        machine, "codex", "pass", {"time": "2026-11-30T10:00:02+0000", "status": "failed", "error": "the model command timed out"}
    )  # fmt: skip
    text, modules = _status(vault)
    assert (
        "cmem.vault.config" not in modules
    )  # answered from the stored result, with the new records
    assert "last fired" in text and "(SessionEnd)" in text
    assert "captured 3 turns → sessions/2026-11-30 codex harbor 9cd5.md" in text
    assert "the last pass failed: the model command timed out" in text
    data, _ = _status(vault, "--json")
    (codex,) = data["agent_hooks"]
    assert codex["failing"] is True and codex["last_capture"]["turns"] == 3
    assert codex["last_fired"]["age_seconds"] > 0
    write_record(
        machine, "codex", "capture", {"time": "2026-11-30T11:00:00+0000", "status": "failed", "error": "x.jsonl is not a transcript"}
    )  # fmt: skip
    text, _ = _status(vault)
    assert "the last capture failed: x.jsonl is not a transcript" in text


def test_a_credential_in_a_record_read_at_print_time_is_shown_redacted(tmp_path):
    """The hooks' records and the last sync are read when the status is printed, the stored
    fields having been redacted when it was made: what is read then is redacted too, whether
    the status is made afresh or answered from the stored result."""
    from cmem.sync.record import write_record as write_sync_record

    vault = _vault(tmp_path)
    machine = str(vault.machine_dir)
    key = "ghp_" + "Zq7" * 12
    write_sync_record(
        machine, "offline", f"https://me:{key}@example.org/memory.git", f"token {key}"
    )
    write_record(
        machine, "codex", "pass", {"time": "2026-11-30T10:00:02+0000", "status": "failed", "error": f"the model said {key}"}
    )  # fmt: skip
    settle(vault.root)
    for _ in ("afresh", "stored"):
        for extra in ((), ("--json",)):
            shown, _ = _status(vault, *extra)
            text = json.dumps(shown) if extra else shown
            assert key not in text and "[REDACTED" in text, text
    _, modules = _status(vault)
    assert "cmem.vault.config" not in modules  # the last call was answered from the stored result
