"""Issue 44, "done when": a newcomer adopts an Obsidian vault laid out as people keep one (PARA
folders, dated daily notes under `Journal/Daily/YYYY/MM/`, templates, callouts, a web clip) by
following the README — `cmem init`; `cmem note` writes into today's daily note; the folders
`status` lists are brought in with the lines it prints; the backlog converges with a model (a
script) in visible batches; a daily note is archived into `archive/…/Journal/Daily/…`; and each
warning about a file is said once across the commands, `doctor` listing them all."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from datetime import datetime

import yaml

from cmem.scan.scanner import scan_vault
from cmem.vault.layers import open_vault
from para_vault import DAILY_FOLDER, FILES, OLD_DAILY, TEMPLATES
from pass_helpers import FAKE
from support import git, run_cmem, write_files

EMPTY = f"{DAILY_FOLDER}/2024/05/2024-05-01.md"
# each warning about a file as status (`path: message`) and a pass (`path message`) say it
WARNED = {
    "templater": re.compile(re.escape(OLD_DAILY) + r":? frontmatter is not valid YAML"),
    "empty": re.compile(re.escape(EMPTY) + r":? is empty"),
}


def _apply(root, setting: str) -> None:
    key, _, value = setting.partition(": ")
    config = root / ".cmem/config.yaml"
    data = yaml.safe_load(config.read_text("utf-8"))
    section, name = key.split(".")
    data.setdefault(section, {})[name] = yaml.safe_load(value)
    config.write_text(yaml.safe_dump(data, allow_unicode=True), "utf-8")


def _today_path(when: datetime) -> str:
    return f"{DAILY_FOLDER}/{when:%Y/%m/%Y-%m-%d}.md"


def test_a_newcomer_adopts_a_para_vault_by_the_readme(tmp_path):
    root = tmp_path / "Obsidian Vault"
    write_files(root, FILES)
    old = time.time() - 86400  # the vault's notes predate everything cmem does to it
    for path in root.rglob("*.md"):
        os.utime(path, (old, old))
    said: list[str] = []  # every command's output after init, in order

    def cmem(*args: str, env: dict | None = None) -> str:
        done = run_cmem(*args, "--vault", str(root), env=env)
        assert done.returncode == 0, f"cmem {' '.join(args)}:\n{done.stdout}{done.stderr}"
        said.append(done.stdout + done.stderr)
        return done.stdout

    # cmem init: the daily-notes folder from Obsidian's settings, never the templates
    assert run_cmem("init", str(root), "--lang", "en").returncode == 0
    vault = open_vault(root)
    assert vault.config.extra_divergent == (DAILY_FOLDER, "sessions")
    assert (root / "sessions").is_dir()
    with open(root / ".cmem/config.yaml", "a", encoding="utf-8") as handle:
        handle.write('\ncapture:\n  heading: "## Log"\n')

    # cmem note: today's daily note, made from the core template, the line under ## Log
    before = datetime.now()
    noted = json.loads(cmem("note", "--json", "tea after lunch keeps me awake; none after 2 pm"))
    assert noted["daily"] and noted["note"] in {_today_path(before), _today_path(datetime.now())}
    daily = (root / noted["note"]).read_text("utf-8")
    assert "{{" not in daily and "## Log\n- " in daily and daily.endswith("none after 2 pm\n")

    # cmem status: the folders no layer reads, each with the config line that reads it
    status = json.loads(cmem("status", "--json"))
    cmem("status")
    for _ in range(10):
        if not status["unmanaged"]:
            break
        _apply(root, status["unmanaged"][0]["setting"])
        status = json.loads(cmem("status", "--json"))
    assert not status["unmanaged"]
    vault = open_vault(root)
    assert "03 - AREAS" in vault.config.recursive_divergent
    assert not any(n.rel.startswith(TEMPLATES) for n in vault.list_layer("divergent"))
    # what the widening brought in is backlog, not new: today's daily note alone is pending
    scan = scan_vault(vault)
    assert [p.rel for p in scan.pending if p.why == "new"] == [noted["note"]]
    backlog = len(scan.backlog)
    assert backlog >= 6 and status["pending"]["backlog"]["notes"] == backlog

    # cmem converge --backlog with a model: the plan, then one pass per visible batch
    model = {
        "FAKE_LLM_MODE": "converge",
        "FAKE_LLM_LOG": str(tmp_path / "model.log"),
        "FAKE_LLM_COUNTER": str(tmp_path / "calls"),
    }
    out = cmem(
        "converge", "--backlog", "--llm", f"{sys.executable} {FAKE}", "--budget", "500", "--yes",
        env=model,
    )  # fmt: skip
    assert f"backlog: {backlog} notes" in out and "batch 1 of" in out
    last = re.findall(r"^batch (\d+) of (\d+): converged 1 note", out, re.MULTILINE)[-1]
    assert last[0] == last[1] and int(last[0]) > backlog and "0 notes left" in out
    assert scan_vault(open_vault(root)).backlog == []
    memory = "".join(p.read_text("utf-8") for p in (root / "converged").rglob("*.md"))
    assert "(source: quoted from [[Designing APIs]])" in memory  # a web clip says so
    assert "Write the restore test before the backup job. (source: [[2024-04-30]])" in memory

    # archive a daily note: its folder kept, filed by its own month, its name (and links) unchanged
    checklist = root / "archive/ARCHIVE-CHECKLIST.md"
    lines = checklist.read_text("utf-8").splitlines()
    target = f"archive/2024-04/{OLD_DAILY}"
    assert any(f"[[2024-04-30]] → {target} ·" in line for line in lines)
    checklist.write_text(
        "\n".join(
            line.replace("- [ ]", "- [x]") if "[[2024-04-30]]" in line else line for line in lines
        )
        + "\n",
        "utf-8",
    )
    cmem("archive", "apply", "--yes")
    assert (root / target).is_file() and not (root / OLD_DAILY).exists()
    assert target in git(root, "show", "--name-only", "--format=", "HEAD")
    doctor = run_cmem("doctor", "--vault", str(root)).stdout
    assert "[[2024-04-30]] resolves to no note" not in doctor

    # each warning was said once across every command above; doctor lists what is left
    cmem("status")
    for name, pattern in WARNED.items():
        count = sum(len(pattern.findall(out)) for out in said)
        assert count == 1, f"the {name} warning was said {count} times"
    assert f"{EMPTY} is empty" in doctor
