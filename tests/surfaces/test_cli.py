"""The CLI through typer's CliRunner: exit codes, --json shapes (docs/design.md §11), one-sentence
errors."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from typer.testing import CliRunner

from cmem.cli import app
from support import git

runner = CliRunner()


def cmem(*args, input=None):
    return runner.invoke(app, list(args), input=input, catch_exceptions=False)


def run_main(monkeypatch, capsys, *args) -> tuple[int, str, str]:
    """Through main(), which owns error translation and exit codes."""
    from cmem.cli import main

    monkeypatch.setattr("sys.argv", ["cmem", *args])
    with pytest.raises(SystemExit) as excinfo:
        main()
    out = capsys.readouterr()
    return excinfo.value.code or 0, out.out, out.err


def test_help_and_version():
    result = cmem("--help")
    assert result.exit_code == 0 and "converge" in result.output
    assert cmem("--version").output.startswith("cmem ")


def test_no_vault_is_one_clear_error(monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_main(monkeypatch, capsys, "status")
    assert code == 1 and err.startswith("error: ") and "cmem init" in err and err.count("\n") == 1


def test_bad_config_names_the_key(monkeypatch, capsys, sample_vault):
    (sample_vault / ".cmem/config.yaml").write_text("budget_tokens: many\n", encoding="utf-8")
    code, out, err = run_main(monkeypatch, capsys, "--vault", str(sample_vault), "status")
    assert code == 1 and "'budget_tokens'" in err and "config.yaml" in err


def test_json_error(monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_main(monkeypatch, capsys, "scan", "--json")
    assert code == 1 and "error" in json.loads(out)


def test_json_does_not_leak_into_the_next_invocation(monkeypatch, capsys, tmp_path):
    """Two command lines in one process (an MCP server, a test run): `--json` belongs to the
    first; the second, which has no --json at all, reports its error as text on stderr."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run_main(monkeypatch, capsys, "scan", "--json")
    assert code == 1 and "error" in json.loads(out)
    code, out, err = run_main(monkeypatch, capsys, "watch")
    assert code == 1 and out == "" and err.startswith("error: ") and "cmem init" in err


def test_the_global_vault_is_the_default_of_each_command_and_of_that_invocation_only(
    monkeypatch, capsys, tmp_path, sample_vault
):
    first = cmem("--vault", str(sample_vault), "log", "--json")
    assert first.exit_code == 0 and "passes" in json.loads(first.output)
    monkeypatch.chdir(tmp_path)  # no vault here, and the last command line's --vault is gone
    code, out, err = run_main(monkeypatch, capsys, "log", "--json")
    assert code == 1 and "cmem init" in json.loads(out)["error"]


def test_no_command_writes_module_level_state(sample_vault, tmp_path, monkeypatch):
    """The command modules keep nothing between invocations: every name at module level is
    bound to the same object, with the same contents, after a run of commands as before."""
    import importlib
    import pkgutil

    package = importlib.import_module("cmem.commands")
    modules = [
        importlib.import_module(f"cmem.commands.{info.name}")
        for info in pkgutil.iter_modules(package.__path__)
    ]

    def state():
        return {
            (module.__name__, name): (id(value), repr(value))
            for module in modules
            for name, value in vars(module).items()
            if isinstance(value, (dict, list, set, bool, int, str, type(None)))
            and not name.startswith("__")
        }

    before = state()
    monkeypatch.chdir(tmp_path)
    runs = [
        ["scan", "--json"],  # an error (no vault here), under --json
        ["--vault", str(sample_vault), "--no-color", "status", "--json"],
        ["note", "a line", "--vault", str(sample_vault)],
    ]
    results = [runner.invoke(app, args) for args in runs]
    assert [result.exit_code for result in results] == [1, 0, 0]
    assert state() == before


def test_usage_error_exits_2(monkeypatch, capsys):
    code, out, err = run_main(monkeypatch, capsys, "no-such-command")
    assert code == 2


def test_init_then_idempotent(tmp_path):
    target = tmp_path / "notes"
    first = cmem("init", str(target), "--lang", "en", "--json")
    assert first.exit_code == 0 and json.loads(first.output)["changed"] is True
    second = cmem("init", str(target))
    assert second.exit_code == 0 and "nothing changed" in second.output


def test_status_json_shape(sample_vault):
    result = cmem("status", "--vault", str(sample_vault), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data) >= {"vault", "layers", "pending", "last_pass", "due", "staged_archive"}
    assert set(data["layers"]) == {"divergent", "resident", "situational", "archive"}
    for layer in data["layers"].values():
        assert set(layer) >= {"notes", "tokens"}
    assert set(data["pending"]["signals"]) == {"correction", "preference", "decision", "recurring"}
    assert data["pending"]["notes"] > 0 and data["due"]["due"] is True
    assert data["last_pass"]["id"] == "20261020-213000-a1b2"
    ages = data["convergent_age"]
    assert ages["newest"]["path"].startswith("converged/") and ages["oldest"]["path"].startswith(
        "converged/"
    )
    assert 0 <= ages["newest"]["age_seconds"] <= ages["oldest"]["age_seconds"]


def test_scan_json_shape(sample_vault):
    data = json.loads(cmem("scan", "--vault", str(sample_vault), "--json").output)
    assert data["signals"] and data["deferred"]
    for signal in data["signals"]:
        assert set(signal) >= {"note", "line", "class", "priority", "cue", "excerpt"}
        assert signal["class"] in ("correction", "preference", "decision", "recurring")
        assert (
            signal["priority"]
            == ("correction", "preference", "decision", "recurring").index(signal["class"]) + 1
        )
        line = (sample_vault / signal["note"]).read_text("utf-8").split("\n")[signal["line"] - 1]
        assert signal["cue"].lower() in line.lower()
    for deferred in data["deferred"]:
        assert set(deferred) >= {"note", "line", "reason"}


def test_note_appends_to_todays_capture(sample_vault, monkeypatch):
    monkeypatch.chdir(sample_vault / "converged")  # discovery from a subfolder
    first = cmem("note", "以后都用", "uv", "--json")
    assert first.exit_code == 0, first.output
    data = json.loads(first.output)
    name = f"{datetime.now().strftime('%Y-%m-%d')} 随手记.md"
    assert data["note"] == name and data["created"] is True
    cmem("note", "第二条")
    text = (sample_vault / name).read_text("utf-8")
    assert text.count("\n- ") == 2 and text.rstrip().endswith("第二条") and "以后都用 uv" in text


def test_note_refuses_empty_text(sample_vault):
    result = runner.invoke(app, ["note", "  ", "--vault", str(sample_vault)])
    assert result.exit_code != 0


def test_context_markdown_and_json(sample_vault):
    text = cmem("context", "--vault", str(sample_vault), "--topic", "找工作 job").output
    assert "reference material" in text and "converged/core/profile.md" in text
    assert "archive/2026-10" not in text  # the archive is never included
    data = json.loads(cmem("context", "--vault", str(sample_vault), "--json").output)
    assert set(data) >= {"resident", "situational", "index", "pending", "tokens"}
    assert {f["path"] for f in data["resident"]} == {
        "converged/core/profile.md",
        "converged/core/methodology.md",
    }
    assert all(set(i) >= {"path", "summary", "last_read"} for i in data["index"])
    assert data["pending"] and all(set(p) >= {"note", "signals"} for p in data["pending"])


def test_context_over_budget_ranks_and_says_what_was_left_out(sample_vault):
    data = json.loads(
        cmem(
            "context",
            "--vault",
            str(sample_vault),
            "--budget",
            "1550",
            "--topic",
            "python",
            "--json",
        ).output
    )
    included = [f["path"] for f in data["situational"]]
    assert "converged/topics/python-tooling.md" in included
    assert data["omitted"], "a 1550-token budget cannot hold every topic file"
    assert data["tokens"] <= 1550
    text = cmem(
        "context", "--vault", str(sample_vault), "--budget", "1550", "--topic", "python"
    ).output
    assert "Left out" in text and "cmem recall" in text


def test_doctor_on_the_sample_vault_is_clean(sample_vault):
    result = cmem("doctor", "--vault", str(sample_vault), "--json")
    data = json.loads(result.output)
    problems = [f for f in data["findings"] if f["level"] not in ("ok", "note")]
    assert result.exit_code == 0 and problems == []
    # what waits is said, never hidden behind "all clear" (issue 33)
    assert any(f["check"] == "pending" and f["level"] == "note" for f in data["findings"])
    text = cmem("doctor", "--vault", str(sample_vault)).output
    assert "all clear" not in text and "no problems; pending: 7 notes" in text


def test_doctor_reports_broken_sources_and_git_trouble(sample_vault):
    with open(sample_vault / "converged/topics/job-search.md", "a", encoding="utf-8") as handle:
        handle.write("- 新的一行（来源：[[不存在的笔记]]）\n")
    (sample_vault / ".git/MERGE_HEAD").write_text("0" * 40 + "\n")
    result = cmem("doctor", "--vault", str(sample_vault))
    assert result.exit_code == 1
    assert (
        "[[不存在的笔记]] resolves to no note" in result.output
        and "merge is in progress" in result.output
    )


def test_converge_json_shape_and_demo(tmp_path):
    result = cmem("demo", str(tmp_path / "demo"), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)["pass"]
    assert data["status"] == "applied"
    assert set(data) >= {
        "status",
        "pass",
        "commit",
        "changed",
        "converged",
        "deferred",
        "staged",
        "warnings",
        "errors",
    }
    again = json.loads(cmem("converge", "--vault", str(tmp_path / "demo"), "--json").output)
    assert again["status"] == "nothing"


def test_converge_dry_run_shows_a_diff(sample_vault):
    head = git(sample_vault, "rev-parse", "HEAD")
    result = cmem("converge", "--vault", str(sample_vault), "--engine", "builtin", "--dry-run")
    assert (
        result.exit_code == 0 and "dry run" in result.output and "+++ b/converged/" in result.output
    )
    assert git(sample_vault, "rev-parse", "HEAD") == head


def test_exit_codes_of_typer_exit_reach_the_shell(sample_vault, tmp_path):
    """`raise typer.Exit(1)` must exit 1 from the real entry point (doctor with errors)."""
    import subprocess
    import sys

    (sample_vault / ".git/MERGE_HEAD").write_text("0" * 40 + "\n")
    result = subprocess.run(
        [sys.executable, "-m", "cmem", "doctor", "--vault", str(sample_vault)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1, result.stdout + result.stderr


def test_note_after_todays_note_was_archived_gets_a_new_name(sample_vault):
    from cmem.archive.checklist import archive_target
    from cmem.vault.layers import open_vault

    vault = open_vault(sample_vault)
    today = datetime.now().strftime("%Y-%m-%d")
    archived = sample_vault / archive_target(
        vault.config.archive_dir, vault.config.archive_pattern, f"{today} 随手记.md", today
    )
    archived.parent.mkdir(parents=True, exist_ok=True)
    archived.write_text("- 已归档\n", encoding="utf-8")
    data = json.loads(cmem("note", "新的一条", "--vault", str(sample_vault), "--json").output)
    assert data["note"] == f"{today} 随手记 2.md"


def test_context_lists_a_few_pending_notes_and_counts_the_rest(make_vault):
    files = {
        f"2026-11-{day:02d} note {n}.md": f"- 我决定第 {day}-{n} 件事改用新的做法\n"
        for day in range(1, 29)
        for n in range(2)
    }
    root = make_vault(files)
    data = json.loads(cmem("context", "--vault", str(root), "--json").output)
    assert data["pending_total"] == 56 and len(data["pending"]) == 20
    text = cmem("context", "--vault", str(root)).output
    assert "… and 36 more pending notes" in text


def test_doctor_warns_about_a_detached_head(sample_vault):
    head = git(sample_vault, "rev-parse", "HEAD").strip()
    git(sample_vault, "checkout", "-q", "--detach", head)
    result = cmem("doctor", "--vault", str(sample_vault))
    assert "HEAD is detached" in result.output


def test_a_command_line_builds_the_command_it_names_and_help_lists_them_all(sample_vault):
    """The command table (`commands/app.py: CommandTable`) imports a command's module only when a
    line names it; `--help` lists every command of `COMMANDS`, in its order."""
    from cmem.commands.app import COMMANDS
    from support import run_entry

    code, _, err, modules = run_entry("cmem.cli", ["status", "--vault", str(sample_vault)])
    assert code == 0, err
    assert "cmem.commands.reading" in modules
    others = {"converge", "archive", "setup", "triggers", "doctor", "sync"}
    assert not {f"cmem.commands.{name}" for name in others} & modules
    code, out, _, modules = run_entry("cmem.cli", ["--help"])
    listed = [line.split()[0] for line in out.split("Commands:")[1].splitlines() if line.strip()]
    assert code == 0 and listed == list(COMMANDS)
    assert {f"cmem.commands.{name}" for name in others} <= modules


def test_a_mistyped_command_is_told_the_near_one(monkeypatch, capsys):
    """The table builds commands on demand; a typo still gets typer's suggestion, from them all."""
    code, _, err = run_main(monkeypatch, capsys, "stat")
    assert code == 2 and "No such command 'stat'. Did you mean 'status'?" in err
    code, _, err = run_main(monkeypatch, capsys, "agent-instruction")
    assert code == 2 and "'agent-instructions'" in err
