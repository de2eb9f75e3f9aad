#!/usr/bin/env python3
"""What reaches the model (issue 33): histories written as people write, converged day by day.

    python bench/reach.py [--out docs/quality.md] [--workdir DIR] [--budget TOKENS]

Two histories — twelve days of English notes, ten days of Chinese ones — written without
steering the wording toward cmem's cue words: moves, switches, a client's rate, a contract's end,
changes of mind, small talk. Each names the facts a person would want remembered. Every day's
notes are added and a real pass runs (`run_pass`, git, the validator) with a stand-in model
(`tests/quoting_model.py`) that records every prompt and converges each line it is asked to judge,
quoted, so every pass is applied.

Measured:
- **reach**: the share of facts whose line was among a prompt's lines to judge;
- **under cue gating**: the share a scan that sent only notes with a cue line (cmem 0.1) reached;
- **re-sent unchanged**: notes sent again though nothing in them changed (should be 0);
- **prompt tokens** per pass and per converged note (the token estimate of docs/design.md §12).

Replaces its own section of docs/quality.md ("## What reaches the model").
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent
sys.path.insert(0, str(PROJECT / "cli"))

SECTION = "## What reaches the model"


@dataclass
class History:
    name: str
    lang: str
    days: list[tuple[str, dict[str, str]]]  # (date, {note name: text})
    facts: list[tuple[str, str]]  # (note name, a phrase of the line that holds the fact)


EN = History(
    "en-twelve-days",
    "en",
    [
        (
            "2026-11-01",
            {
                "2026-11-01 notes": "Bluefin is on bun for now, installs are fast.\nLong run along the river, 12 km.\n"
            },
        ),
        (
            "2026-11-02",
            {
                "2026-11-02 notes": "Met Priya for coffee. She runs the design team at Acme.\nI prefer mornings for deep work, meetings after lunch.\n"
            },
        ),
        (
            "2026-11-03",
            {
                "2026-11-03 notes": "Moved to Berlin, finally. Flat in Neukölln, third floor.\nThe movers broke a lamp.\n"
            },
        ),
        (
            "2026-11-04",
            {
                "2026-11-04 notes": "Switched Bluefin back to pnpm; bun kept breaking the lockfile.\n"
            },
        ),
        (
            "2026-11-05",
            {
                "2026-11-05 notes": "New client: Acme Logistics. 95 EUR an hour, contract ends 2027-03-31.\nTuesdays and Thursdays at their office.\n",
                "idea - podcast": "Maybe start a podcast about boring tech.\n",
            },
        ),
        ("2026-11-06", {"2026-11-06 notes": "Decided: I'm taking the Acme offer.\nRainy.\n"}),
        (
            "2026-11-07",
            {"2026-11-07 notes": "From next week the Bluefin sync moves to Thursdays at 17:00.\n"},
        ),
        (
            "2026-11-08",
            {
                "2026-11-08 notes": "Turns out the Acme rate is 100 EUR, not 95 — I misread the offer.\n"
            },
        ),
        (
            "2026-11-09",
            {"2026-11-09 notes": "From now on, no bun suggestions: it is pnpm everywhere now.\n"},
        ),
        (
            "2026-11-10",
            {
                "2026-11-10 notes": "Sleeping badly since the move; blackout curtains ordered.\n",
                "meeting - acme kickoff": "Kickoff with Acme: the warehouse app, Django and Postgres.\nMy contact is Tom Becker.\n",
            },
        ),
        (
            "2026-11-11",
            {"2026-11-11 notes": "Running three times a week now, Monday Wednesday Saturday.\n"},
        ),
        (
            "2026-11-12",
            {
                "2026-11-12 notes": "My German course starts in January, evenings, Goethe-Institut.\nCooked lentil soup.\n"
            },
        ),
    ],
    [
        ("2026-11-01 notes", "bun for now"),
        ("2026-11-02 notes", "design team at Acme"),
        ("2026-11-02 notes", "mornings for deep work"),
        ("2026-11-03 notes", "Moved to Berlin"),
        ("2026-11-04 notes", "back to pnpm"),
        ("2026-11-05 notes", "95 EUR an hour"),
        ("2026-11-05 notes", "Tuesdays and Thursdays"),
        ("2026-11-06 notes", "taking the Acme offer"),
        ("2026-11-07 notes", "Thursdays at 17:00"),
        ("2026-11-08 notes", "100 EUR"),
        ("2026-11-09 notes", "pnpm everywhere"),
        ("2026-11-10 notes", "Sleeping badly"),
        ("meeting - acme kickoff", "Django and Postgres"),
        ("meeting - acme kickoff", "Tom Becker"),
        ("2026-11-11 notes", "three times a week"),
        ("2026-11-12 notes", "German course starts in January"),
    ],
)

ZH = History(
    "zh-ten-days",
    "zh",
    [
        ("2026-11-20", {"2026-11-20 日记": "在找北京的后端实习，投了三家。\n晚上吃了火锅。\n"}),
        ("2026-11-21", {"2026-11-21 日记": "修正一下：不是北京，是深圳，方向改成 AI Agent。\n"}),
        ("2026-11-22", {"2026-11-22 日记": "和字节约了一面，周三下午三点。\n"}),
        ("2026-11-23", {"2026-11-23 日记": "一面改到周四上午十点。\n有点紧张。\n"}),
        ("2026-11-24", {"2026-11-24 日记": "编辑器又换回 VS Code，Neovim 配置太花时间。\n"}),
        ("2026-11-25", {"2026-11-25 日记": "房租涨到 4500 了，打算年后搬家。\n"}),
        ("2026-11-26", {"2026-11-26 日记": "我决定接那个外包：做小程序，报价两万，月底交付。\n"}),
        ("2026-11-27", {"2026-11-27 日记": "跑步改成每周三次，膝盖好多了。\n"}),
        ("2026-11-28", {"2026-11-28 日记": "妈妈生日是腊月初八，要提前订蛋糕。\n下雨。\n"}),
        ("2026-11-29", {"2026-11-29 日记": "以后都把面试复盘写在 notes 里，别只记在脑子里。\n"}),
    ],
    [
        ("2026-11-20 日记", "北京的后端实习"),
        ("2026-11-21 日记", "是深圳"),
        ("2026-11-22 日记", "约了一面"),
        ("2026-11-23 日记", "改到周四"),
        ("2026-11-24 日记", "又换回 VS Code"),
        ("2026-11-25 日记", "房租涨到 4500"),
        ("2026-11-26 日记", "决定接那个外包"),
        ("2026-11-27 日记", "每周三次"),
        ("2026-11-28 日记", "腊月初八"),
        ("2026-11-29 日记", "面试复盘"),
    ],
)

HISTORIES = [EN, ZH]


def _isolate(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    os.environ["HOME"] = str(home)
    for name, sub in (("XDG_STATE_HOME", ".local/state"), ("XDG_CONFIG_HOME", ".config")):
        os.environ[name] = str(home / sub)
    os.environ.update(
        GIT_AUTHOR_NAME="bench",
        GIT_AUTHOR_EMAIL="bench@example.com",
        GIT_COMMITTER_NAME="bench",
        GIT_COMMITTER_EMAIL="bench@example.com",
        GIT_CONFIG_NOSYSTEM="1",
    )
    os.environ.pop("CMEM_LLM", None)


def _make_vault(root: Path, history: History, budget: int | None) -> None:
    import subprocess

    (root / ".cmem").mkdir(parents=True)
    config = f"language: {history.lang}\nrepair_rounds: 0\n"
    if budget:
        config += f"budget_tokens: {budget}\n"
    (root / ".cmem" / "config.yaml").write_text(config, "utf-8")
    (root / ".cmem" / "state.json").write_text('{"version": 1, "notes": {}, "passes": []}\n')
    for folder in ("converged/core", "converged/topics", "archive"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), "commit", "-q", "-m", "init"], check=True)


def _judged(prompt: str) -> dict[str, list[str]]:
    """The lines each note of a prompt is to be judged on (`tests/quoting_model.py` reads them the
    same way)."""
    sys.path.insert(0, str(HERE.parent / "tests"))
    from quoting_model import judged_lines

    return judged_lines(prompt)


@dataclass
class Figures:
    facts: int = 0
    reached: int = 0
    gated: int = 0  # reached under cue gating (notes with a cue line only)
    passes: int = 0
    prompt_tokens: int = 0
    converged: int = 0
    resent: int = 0
    failed: int = 0


def run_history(history: History, workdir: Path, budget: int | None = None) -> Figures:
    from cmem.converge.pipeline import PassOptions, run_pass
    from cmem.scan.scanner import scan_vault
    from cmem.text.tokens import estimate_tokens
    from cmem.vault.layers import open_vault

    root = workdir / history.name
    _make_vault(root, history, budget)
    log = workdir / f"{history.name}.prompts.jsonl"
    os.environ["REACH_LOG"] = str(log)
    command = f"{sys.executable} {HERE.parent / 'tests' / 'quoting_model.py'}"
    figures = Figures(facts=len(history.facts))
    judged_text: dict[str, str] = {}
    sent: dict[str, str] = {}  # note → its bytes when last sent
    gated_notes: set[str] = set()
    for date, notes in history.days:
        stamp = datetime.fromisoformat(date).replace(hour=9, tzinfo=timezone.utc).timestamp()
        for order, (name, text) in enumerate(notes.items()):
            path = root / f"{name}.md"
            path.write_text(text, "utf-8")
            os.utime(path, (stamp + order * 60, stamp + order * 60))
        scan = scan_vault(open_vault(root))
        gated_notes |= {p.name for p in scan.pending if p.signals}
        before = log.read_text("utf-8").count("\n") if log.exists() else 0
        now = datetime.fromisoformat(date).replace(hour=21, tzinfo=timezone.utc)
        result = run_pass(open_vault(root), PassOptions(llm=command, now=now))
        figures.failed += result.status == "failed"
        lines = log.read_text("utf-8").splitlines()[before:] if log.exists() else []
        for line in lines:
            prompt = json.loads(line)["prompt"]
            figures.passes += 1
            figures.prompt_tokens += estimate_tokens(prompt)
            for name, judged in _judged(prompt).items():
                text = (root / f"{name}.md").read_text("utf-8")
                if sent.get(name) == text:
                    figures.resent += 1
                sent[name] = text
                judged_text[name] = judged_text.get(name, "") + "\n".join(judged)
        figures.converged += len(result.converged)
    for note, phrase in history.facts:
        figures.reached += phrase in judged_text.get(note, "")
        figures.gated += note in gated_notes
    return figures


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f} %" if whole else "—"


def report(results: list[tuple[History, Figures]], command: str) -> list[str]:
    out = [
        SECTION,
        "",
        f"Generated by `{command}` on {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC (`bench/reach.py`).",
        "",
        "Histories written as people write — no wording steered toward cue words — converged day by",
        "day with a stand-in model that converges every line it is asked to judge. *Reach* is the",
        "share of the facts a person would want remembered whose line was among a prompt's lines",
        "to judge; *under cue gating* is what a scan that sends only notes with a cue line (cmem",
        "0.1) would have reached. Within the budget the reach must be 100 %.",
        "",
        "| history | facts | reach | under cue gating | passes | re-sent unchanged | prompt tokens / pass | prompt tokens / converged note | failed passes |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for history, f in results:
        per_pass = f.prompt_tokens // f.passes if f.passes else 0
        per_note = f.prompt_tokens // f.converged if f.converged else 0
        out.append(
            f"| {history.name} | {f.facts} | {f.reached}/{f.facts} ({_percent(f.reached, f.facts)}) "
            f"| {f.gated}/{f.facts} ({_percent(f.gated, f.facts)}) | {f.passes} | {f.resent} "
            f"| {per_pass} | {per_note} | {f.failed} |"
        )
    return out


def splice(path: Path, section: list[str]) -> None:
    """Replace (or append) this report's section of docs/quality.md, leaving the rest."""
    text = path.read_text("utf-8") if path.exists() else "# Memory quality benchmark\n"
    start = text.find(SECTION)
    if start >= 0:
        end = text.find("\n## ", start + len(SECTION))
        text = text[:start] + text[end + 1 :] if end >= 0 else text[:start]
    path.write_text(text.rstrip("\n") + "\n\n" + "\n".join(section) + "\n", "utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(PROJECT / "docs" / "quality.md"))
    parser.add_argument("--workdir", help="keep the vaults and prompts here")
    parser.add_argument("--budget", type=int, help="budget_tokens for the vaults")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cmem-reach-") as temp:
        workdir = Path(args.workdir) if args.workdir else Path(temp)
        workdir.mkdir(parents=True, exist_ok=True)
        _isolate(Path(temp) / "home")
        results = [(h, run_history(h, workdir, args.budget)) for h in HISTORIES]
    command = "python bench/reach.py" + (f" --budget {args.budget}" if args.budget else "")
    section = report(results, command)
    splice(Path(args.out), section)
    print("\n".join(section))
    return 0


if __name__ == "__main__":
    sys.exit(main())
