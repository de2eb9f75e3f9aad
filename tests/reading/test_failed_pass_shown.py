"""A failed pass shows in `status` and `doctor`, not only in `cmem log` (issue 35), until a later
pass succeeds — in this machine's run records, told through one file of the machine folder
that the stored status's key holds, so a status served by the light entry after the failure is
never the one stored before it. Real `cmem` processes and a real failing model command."""

from __future__ import annotations

import json
import sys

import pytest

from support import git, run_cmem, run_stored, settle
from trigger_helpers import trigger_vault

# A model that reads the prompt and fails, as a model whose API key ran out does.
FAILING = f"{sys.executable} -c \"import sys; sys.stdin.read(); sys.exit('quota exceeded')\""


def failed_vault(make_vault):
    root = trigger_vault(make_vault)  # its note committed: a pass makes no snapshot commit
    assert git(root, "status", "--porcelain") == ""
    return root


def fail_a_pass(root) -> str:
    done = run_cmem("--vault", str(root), "converge", "--llm", FAILING, "--json")
    assert done.returncode == 1, done.stderr
    return json.loads(done.stdout)["error"] if done.stdout.strip() else done.stderr


def status(root) -> dict:
    done = run_cmem("--vault", str(root), "status", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def doctor(root) -> list[dict]:
    done = run_cmem("--vault", str(root), "doctor", "--json")
    return json.loads(done.stdout)["findings"]


def test_status_and_doctor_show_a_failed_pass_until_a_later_one_succeeds(make_vault):
    root = failed_vault(make_vault)
    assert status(root)["failed_pass"] is None
    fail_a_pass(root)
    failed = status(root)["failed_pass"]
    assert failed is not None
    assert failed["status"] == "failed" and "quota exceeded" in failed["reason"]
    assert failed["id"] and failed["run"] and failed["time"]
    text = run_cmem("--vault", str(root), "status").stdout
    assert "failed" in text and failed["id"] in text and "cmem log" in text
    findings = [f for f in doctor(root) if f["check"] == "failed pass"]
    assert len(findings) == 1 and findings[0]["level"] == "warn"
    assert failed["id"] in findings[0]["message"] and "quota exceeded" in findings[0]["message"]
    # a second failure replaces the first: the newest one is shown
    fail_a_pass(root)
    again = status(root)["failed_pass"]
    assert again["id"] != failed["id"]
    # a pass that succeeds ends it
    ok = run_cmem("--vault", str(root), "converge", "--engine", "builtin", "--json")
    assert ok.returncode == 0 and json.loads(ok.stdout)["status"] == "applied", ok.stdout
    assert status(root)["failed_pass"] is None
    assert [f["level"] for f in doctor(root) if f["check"] == "failed pass"] in ([], ["ok"])
    assert "failed" not in run_cmem("--vault", str(root), "status").stdout.split("passes")[-1]


def test_a_refused_pass_shows_too(make_vault):
    root = failed_vault(make_vault)
    config = root / ".cmem" / "config.yaml"
    config.write_text(config.read_text("utf-8") + "llm:\n  command: my-model\n", "utf-8")
    git(root, "commit", "-qam", "a model command named by the vault")
    done = run_cmem("--vault", str(root), "converge")
    assert done.returncode == 1 and "trust" in done.stderr
    failed = status(root)["failed_pass"]
    assert failed is not None and failed["status"] == "refused" and "trust" in failed["reason"]


def test_a_pass_that_succeeds_on_another_machine_ends_it_here_too(make_vault):
    """The failure is this machine's; the pass that succeeded is state.json's, which a sync
    brings: a later successful pass from anywhere ends the notice."""
    root = failed_vault(make_vault)
    fail_a_pass(root)
    assert status(root)["failed_pass"] is not None
    state_file = root / ".cmem" / "state.json"
    data = json.loads(state_file.read_text("utf-8")) if state_file.exists() else None
    if data is None:
        data = {"version": 1, "notes": {}, "passes": []}
    from datetime import datetime, timedelta

    later = (datetime.now().astimezone() + timedelta(seconds=5)).isoformat(timespec="seconds")
    data["passes"].append(
        {
            "id": "20991231-000000-beef",
            "time": later,
            "engine": "llm",
            "model": None,
            "notes": [],
            "changed": [],
            "warnings": 0,
            "kind": "converge",
        }
    )
    state_file.write_text(json.dumps(data, indent=1) + "\n", "utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "sync: a pass made on the laptop")
    assert status(root)["failed_pass"] is None


@pytest.mark.parametrize("form", ["json", "text"])
def test_a_stored_status_is_not_served_across_a_failure(make_vault, form):
    root = failed_vault(make_vault)
    argv = ["status", "--json"] if form == "json" else ["status"]
    settle(root)
    run_stored(root, *argv)
    before, hit = run_stored(root, *argv)
    assert hit  # stored: the second call was answered without the full CLI
    fail_a_pass(root)
    from cmem.vault.layers import open_vault

    settle(root)
    settle(open_vault(root).machine_dir)  # as it is once the failure is old news
    after, hit = run_stored(root, *argv)
    assert not hit
    if form == "json":
        assert json.loads(before)["failed_pass"] is None
        assert json.loads(after)["failed_pass"]["status"] == "failed"
    else:
        assert "quota exceeded" in after and "quota exceeded" not in before
    stored, hit = run_stored(root, *argv)  # and the status stored after it shows it
    assert hit and stored == after
