#!/usr/bin/env python3
"""Memory quality over time (issue 12): scripted multi-day histories, each day's notes added and
converged in turn, measured after every pass. Writes docs/quality.md.

    python bench/quality.py [--llm CMD ...] [--only NAME ...] [--out docs/quality.md] [--workdir DIR]

Every history is a small vault (zh or en) and a few days of notes whose facts change over time:
moves, tool switches, reversed decisions, repeated habits, a correction of a correction. Each
fact has a timeline — after day N its current value is X, and Y and Z are stale. After each pass
the layer is read back and counted:

- **current once**: facts whose current value is stated by exactly one statement;
- **stale**: statements (outside a trace) still stating a superseded value;
- **duplicates**: statements saying the same as another (equal once normalised);
- **contradictions**: facts stated with their current value and a stale one at once;
- **unsourced**: statements citing no note;
- **untraced**: superseded values found in no trace (a change that lost its history);
- **lost**: signal lines (the scanner flags them) of the notes so far found in no statement
  citing the note, no trace, and not waiting in `cmem scan` (pending or deferred);
- **unseen**: lines meant as signals that the scanner does not flag at all (a scanner miss, not
  an engine loss; every line of these notes is meant as one).

The builtin engine always runs; each `--llm CMD` runs the same histories with that model
command. Passes are real (`run_pass`, git, the validator); HOME and XDG folders point into a
temporary folder so nothing touches the real home.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent
sys.path.insert(0, str(PROJECT / "cli"))


@dataclass
class Fact:
    id: str
    # (day index, current value terms (all in one statement), stale terms)
    timeline: list[tuple[int, list[str], list[str]]]

    def at(self, day: int) -> tuple[list[str], list[str]] | None:
        state = None
        for index, current, stale in self.timeline:
            if index <= day:
                state = (current, stale)
        return state


@dataclass
class History:
    name: str
    lang: str
    days: list[tuple[str, dict[str, str]]]  # (date, {note name: text}); notes of a day in order
    facts: list[Fact]
    memory: dict[str, str] = field(default_factory=dict)  # convergent files before day 0
    archived: list[str] = field(default_factory=list)  # note names the initial memory cites


def F(id: str, *timeline: tuple[int, list[str], list[str]]) -> Fact:
    return Fact(id, list(timeline))


TOOLING_EN = """---
summary: Python tooling
tags: [python, tooling]
---
# Python tooling

- Uses pipenv for managing virtualenvs (source: [[2026-09-01 notes]])
- Pins Python 3.12 for new projects (source: [[2026-09-01 notes]])
"""

PROFILE_ZH = """---
summary: 我是谁
---
# 画像

- 在找北京后端实习（来源：[[2026-09-01 随手记]]）
"""

THESIS_EN = """---
summary: thesis work
---
# Thesis

- Survey scripts run under pipenv (source: [[2026-09-01 notes]])
"""

PROFILE_EN = """---
summary: who I am
---
# Profile

## Preferences

- I prefer written feedback (source: [[2026-09-01 notes]])
- I like long design docs (source: [[2026-09-01 notes]])
"""

THESIS_ZH = """---
summary: 论文
---
# 论文

- 问卷脚本用 pipenv 管理依赖（来源：[[2026-09-01 随手记]]）
"""

PREFERENCES_ZH = """---
summary: 我是谁
---
# 画像

## 偏好

- 我喜欢文字反馈（来源：[[2026-09-01 随手记]]）
- 我喜欢写长文档记录思路（来源：[[2026-09-01 随手记]]）
"""

FRONTEND_ZH = """---
summary: 前端技术栈
---
# 前端

- 用 React 写前端（来源：[[2026-09-01 随手记]]）
"""

HISTORIES = [
    # issue 41: a switch whose old value lives in another topic file, a two-letter old side, a
    # preference naming both sides, a habit the archive held before (notes no pass converged)
    History(
        "en-honest-fallback",
        "en",
        [
            (
                "2026-10-01",
                {
                    "2026-10-01 notes": "I switched from pipenv to uv.\nSkipped the gym again.\nI'll go with Figma for the prototypes.\n"
                },
            ),
            (
                "2026-10-04",
                {
                    "2026-10-04 notes": "I switched from uv to poetry.\nCalls from now on, not written feedback.\n"
                },
            ),
            (
                "2026-10-08",
                {
                    "2026-10-08 notes": "Skipped the gym again.\nI'd rather have short bullet lists than long design docs.\n"
                },
            ),
        ],
        [
            F("survey tooling", (0, ["uv"], ["pipenv"]), (1, ["poetry"], ["pipenv", "uv"])),
            F("gym", (0, ["gym", "3 times"], []), (2, ["gym", "4 times"], ["3 times"])),
            F("prototypes", (0, ["Figma"], [])),
            F("feedback", (1, ["calls"], ["written feedback"])),
            F("docs", (2, ["bullet lists"], ["design docs"])),
        ],
        {
            "converged/topics/thesis.md": THESIS_EN,
            "converged/core/profile.md": PROFILE_EN,
            "archive/2026-09/2026-09-03 notes.md": "- Skipped the gym again.\n",
            "archive/2026-09/2026-09-10 notes.md": "- Skipped the gym again, after the night shift.\n",
        },
        ["2026-09-01 notes"],
    ),
    History(
        "zh-honest-fallback",
        "zh",
        [
            (
                "2026-10-01",
                {"2026-10-01 随手记": "从 pipenv 换成 uv\n又熬夜写代码\n我决定每天刷两道算法题\n"},
            ),
            (
                "2026-10-05",
                {"2026-10-05 随手记": "从 uv 换成 poetry 了\n以后都打电话沟通，而不是文字反馈\n"},
            ),
            (
                "2026-10-09",
                {"2026-10-09 随手记": "以后都不要长文档了，改成列要点\n又熬夜写代码了\n"},
            ),
        ],
        [
            F("dependencies", (0, ["uv"], ["pipenv"]), (1, ["poetry"], ["pipenv", "uv"])),
            F("late nights", (0, ["熬夜", "2 次"], []), (2, ["熬夜", "3 次"], ["2 次"])),
            F("practice", (0, ["算法题"], [])),
            F("feedback", (1, ["打电话"], ["文字反馈"])),
            F("docs", (2, ["列要点"], ["长文档"])),
        ],
        {
            "converged/topics/论文.md": THESIS_ZH,
            "converged/core/profile.md": PREFERENCES_ZH,
            "archive/2026-09/2026-09-05 随手记.md": "又熬夜写代码到三点\n",
        },
        ["2026-09-01 随手记"],
    ),
    History(
        "en-python-tooling",
        "en",
        [
            (
                "2026-10-01",
                {
                    "2026-10-01 notes": "I switched to uv for managing virtualenvs.\nI decided to use fish as my shell.\nI prefer Neovim for editing code.\n"
                },
            ),
            (
                "2026-10-03",
                {
                    "2026-10-03 notes": "I switched from uv to poetry for managing virtualenvs.\nActually I use Helix now, not Neovim.\nI decided to format code with black.\n"
                },
            ),
            (
                "2026-10-06",
                {
                    "2026-10-06 notes": "Actually it's Python 3.13 for new projects, not 3.12.\nI switched from fish to zsh as my shell.\nI always run pytest before committing.\nI switched from black to ruff for formatting.\n"
                },
            ),
        ],
        [
            F("venv tool", (0, ["uv"], ["pipenv"]), (1, ["poetry"], ["pipenv", "uv"])),
            F("shell", (0, ["fish"], []), (2, ["zsh"], ["fish"])),
            F("editor", (0, ["Neovim"], []), (1, ["Helix"], ["Neovim"])),
            F("python version", (2, ["3.13"], ["3.12"])),
            F("tests before commit", (2, ["pytest"], [])),
            F("formatter", (1, ["black"], []), (2, ["ruff"], ["black"])),
        ],
        {"converged/topics/tooling.md": TOOLING_EN},
        ["2026-09-01 notes"],
    ),
    History(
        "en-moves",
        "en",
        [
            (
                "2026-09-10",
                {
                    "2026-09-10 notes": "I moved to Lisbon last month.\nI decided to work from the coworking space on Tuesdays.\nSkipped breakfast again, as usual.\nI prefer trains over planes for trips under 500 km.\n"
                },
            ),
            (
                "2026-09-20",
                {
                    "2026-09-20 notes": "Actually I moved to Porto, not Lisbon.\nSkipped breakfast again before the standup.\n"
                },
            ),
            (
                "2026-10-02",
                {
                    "2026-10-02 notes": "Correction: it's Lisbon, not Porto.\nSkipped breakfast again.\nI prefer window seats on trains.\n"
                },
            ),
        ],
        [
            F(
                "city",
                (0, ["Lisbon", "2026-08"], []),
                (1, ["Porto"], ["Lisbon"]),
                (2, ["Lisbon"], ["Porto"]),
            ),
            F("tuesdays", (0, ["coworking"], [])),
            F(
                "breakfast habit",
                (1, ["breakfast", "2 times"], []),
                (2, ["breakfast", "3 times"], ["2 times"]),
            ),
            F("train seats", (2, ["window seats"], [])),
            F("trains", (0, ["trains over planes"], [])),
        ],
    ),
    History(
        "en-blog-reversal",
        "en",
        [
            (
                "2026-10-01",
                {
                    "2026-10-01 blog": "I decided to move my blog to Hugo.\n",
                    "2026-10-01 later": "Actually, the blog should stay on Ghost, not Hugo.\nI prefer dark mode in every app.\n",
                },
            ),
            (
                "2026-10-04",
                {
                    "2026-10-04 notes": "I decided to use React for the dashboard.\nForgot to push my commits again.\nFrom now on, never deploy on Fridays.\n"
                },
            ),
            (
                "2026-10-09",
                {
                    "2026-10-09 notes": "I switched my blog from Ghost to Astro.\nI switched from React to Svelte for the dashboard.\nForgot to push my commits again, same mistake.\n"
                },
            ),
        ],
        [
            F("blog engine", (0, ["Ghost"], ["Hugo"]), (2, ["Astro"], ["Ghost", "Hugo"])),
            F("dark mode", (0, ["dark mode"], [])),
            F("dashboard framework", (1, ["React"], []), (2, ["Svelte"], ["React"])),
            F("forgetting to push", (2, ["push", "2 times"], [])),
            F("friday deploys", (1, ["deploy on Fridays"], [])),
        ],
    ),
    History(
        "zh-job-search",
        "zh",
        [
            (
                "2026-10-01",
                {
                    "2026-10-01 随手记": "其实不是北京，是深圳\n又熬夜到两点，老毛病\n以后都用中文回答，术语保留英文\n"
                },
            ),
            (
                "2026-10-05",
                {
                    "2026-10-05 随手记": "面试前一晚又熬夜刷题，老毛病\n我决定先投三家公司试试水\n我决定每天刷两道算法题\n"
                },
            ),
            ("2026-10-09", {"2026-10-09 随手记": "又熬夜了，明天一定早睡\n其实不是三家，是五家\n"}),
        ],
        [
            F("city", (0, ["深圳"], ["北京"])),
            F("late nights", (1, ["熬夜", "2 次"], []), (2, ["熬夜", "3 次"], ["2 次"])),
            F("answer language", (0, ["中文回答"], [])),
            F("applications", (1, ["三家"], []), (2, ["五家"], ["三家"])),
            F("daily practice", (1, ["算法题"], [])),
        ],
        {"converged/core/profile.md": PROFILE_ZH},
        ["2026-09-01 随手记"],
    ),
    History(
        "zh-editor",
        "zh",
        [
            (
                "2026-10-05",
                {
                    "2026-10-05 随手记": "我决定用 VS Code 写代码\n上个月搬到了杭州\n以后都用 pnpm 装依赖\n"
                },
            ),
            (
                "2026-10-12",
                {"2026-10-12 随手记": "改用 Cursor 写代码，不再用 VS Code\n我更喜欢深色主题\n"},
            ),
            (
                "2026-10-20",
                {
                    "2026-10-20 随手记": "其实不是 Cursor，是 Zed\n其实不是杭州，是苏州\n我决定改用浅色主题，不再用深色主题\n"
                },
            ),
        ],
        [
            F(
                "editor",
                (0, ["VS Code"], []),
                (1, ["Cursor"], ["VS Code"]),
                (2, ["Zed"], ["Cursor", "VS Code"]),
            ),
            F("city", (0, ["杭州", "2026-09"], []), (2, ["苏州"], ["杭州"])),
            F("package manager", (0, ["pnpm"], [])),
            F("theme", (1, ["深色"], []), (2, ["浅色"], ["深色"])),
        ],
    ),
    History(
        "en-answer-language",
        "en",
        [
            (
                "2026-10-01",
                {
                    "2026-10-01 notes": "From now on, always answer me in English.\nI switched to decaf coffee.\nMissed the 9am standup again.\n"
                },
            ),
            (
                "2026-10-03",
                {
                    "2026-10-03 notes": "Actually it's Spanish, not English.\nMissed the 9am standup again, every time after a late night.\nI prefer answers without emojis.\n"
                },
            ),
            (
                "2026-10-08",
                {
                    "2026-10-08 notes": "Correction: it's English, not Spanish.\nI switched from decaf back to regular coffee.\n"
                },
            ),
        ],
        [
            F(
                "answer language",
                (0, ["English"], []),
                (1, ["Spanish"], ["English"]),
                (2, ["English"], ["Spanish"]),
            ),
            F("coffee", (0, ["decaf"], []), (2, ["regular"], ["decaf"])),
            F("standup", (1, ["standup", "2 times"], [])),
            F("emojis", (1, ["emojis"], [])),
        ],
    ),
    History(
        "zh-exercise",
        "zh",
        [
            (
                "2026-10-01",
                {"2026-10-01 日记": "我决定每周跑步三次\n又忘了喝水\n我不喜欢开会超过半小时\n"},
            ),
            ("2026-10-04", {"2026-10-04 日记": "换成每周游泳两次，不再跑步\n又忘了喝水，头疼\n"}),
            (
                "2026-10-08",
                {"2026-10-08 日记": "其实不是游泳，是骑车\n又忘了喝水\n我决定周末不看工作消息\n"},
            ),
        ],
        [
            F(
                "exercise",
                (0, ["跑步"], []),
                (1, ["游泳"], ["跑步"]),
                (2, ["骑车"], ["游泳", "跑步"]),
            ),
            F("water", (1, ["喝水", "2 次"], []), (2, ["喝水", "3 次"], ["2 次"])),
            F("meetings", (0, ["开会"], [])),
            F("weekends", (2, ["工作消息"], [])),
        ],
    ),
    History(
        "en-side-project",
        "en",
        [
            (
                "2026-03-01",
                {
                    "2026-03-01 notes": "I decided to use Postgres for the side project.\nI moved to Berlin last year.\nI prefer a split keyboard.\n"
                },
            ),
            (
                "2026-04-01",
                {
                    "2026-04-01 notes": "I'm switching from Postgres to SQLite for the side project.\nI decided to name the side project Ledger.\n"
                },
            ),
            (
                "2026-05-01",
                {
                    "2026-05-01 notes": "I moved to Munich.\nI decided to deploy the side project on Fly.io.\nActually it's Tally, not Ledger.\n"
                },
            ),
        ],
        [
            F("database", (0, ["Postgres"], []), (1, ["SQLite"], ["Postgres"])),
            F("city", (0, ["Berlin", "2025"], []), (2, ["Munich"], ["Berlin"])),
            F("keyboard", (0, ["split keyboard"], [])),
            F("deploy", (2, ["Fly.io"], [])),
            F("project name", (1, ["Ledger"], []), (2, ["Tally"], ["Ledger"])),
        ],
    ),
    History(
        "zh-frontend",
        "zh",
        [
            (
                "2026-10-01",
                {
                    "2026-10-01 随手记": "改用 Svelte 写前端\n每次都在周五晚上才开始写周报\n永远别在周五晚上发版\n"
                },
            ),
            (
                "2026-10-08",
                {
                    "2026-10-08 随手记": "其实不是 Svelte，前端改用 Vue 写\n又是周五晚上才写周报\n我决定用 Tailwind 写样式\n"
                },
            ),
            (
                "2026-10-15",
                {
                    "2026-10-15 随手记": "从 Vue 换成 Solid 写前端\n改用 UnoCSS 写样式，不再用 Tailwind\n"
                },
            ),
        ],
        [
            F(
                "frontend",
                (0, ["Svelte"], ["React"]),
                (1, ["Vue"], ["Svelte", "React"]),
                (2, ["Solid"], ["Vue", "Svelte", "React"]),
            ),
            F("weekly report", (1, ["周报", "2 次"], [])),
            F("friday release", (0, ["发版"], [])),
            F("styles", (1, ["Tailwind"], []), (2, ["UnoCSS"], ["Tailwind"])),
        ],
        {"converged/topics/前端.md": FRONTEND_ZH},
        ["2026-09-01 随手记"],
    ),
    History(
        "en-notes-app",
        "en",
        [
            (
                "2026-10-01",
                {
                    "2026-10-01 notes": "I decided to keep my notes in Obsidian.\nI'm switching to Ghostty as my terminal.\nLeft the laptop charger at the office again.\n"
                },
            ),
            (
                "2026-10-06",
                {
                    "2026-10-06 notes": "I switched from Obsidian to Logseq for notes.\nLeft the laptop charger at the office again.\nI prefer short answers with code first.\n"
                },
            ),
            (
                "2026-10-11",
                {
                    "2026-10-11 notes": "Actually it's Obsidian, not Logseq.\nI decided to sync notes with Syncthing.\n"
                },
            ),
        ],
        [
            F(
                "notes app",
                (0, ["Obsidian"], []),
                (1, ["Logseq"], ["Obsidian"]),
                (2, ["Obsidian"], ["Logseq"]),
            ),
            F("terminal", (0, ["Ghostty"], [])),
            F("charger", (1, ["charger", "2 times"], [])),
            F("answer style", (1, ["short answers"], [])),
            F("sync", (2, ["Syncthing"], [])),
        ],
    ),
    History(
        "zh-en-mixed",
        "zh",
        [
            (
                "2026-10-01",
                {"2026-10-01 随手记": "我决定用 Obsidian 管理笔记\n以后都先给结论再解释\n"},
            ),
            (
                "2026-10-02",
                {
                    "2026-10-02 notes": "I switched to Arc as my browser.\nI prefer answers in Chinese with English terms.\n"
                },
            ),
            (
                "2026-10-07",
                {"2026-10-07 随手记": "从 Arc 换成 Firefox 当浏览器\n我更喜欢早上写代码\n"},
            ),
        ],
        [
            F("notes tool", (0, ["Obsidian"], [])),
            F("answer order", (0, ["先给结论"], [])),
            F("browser", (1, ["Arc"], []), (2, ["Firefox"], ["Arc"])),
            F("coding time", (2, ["早上写代码"], [])),
            F("answer terms", (1, ["English terms"], [])),
        ],
    ),
]


# --- running ------------------------------------------------------------------------------


def _isolate(home: Path) -> None:
    os.environ.update(
        HOME=str(home),
        XDG_STATE_HOME=str(home / "state"),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_CACHE_HOME=str(home / "cache"),
        GIT_AUTHOR_NAME="bench",
        GIT_AUTHOR_EMAIL="bench@example.invalid",
        GIT_COMMITTER_NAME="bench",
        GIT_COMMITTER_EMAIL="bench@example.invalid",
        GIT_CONFIG_NOSYSTEM="1",
    )
    os.environ.pop("CMEM_LLM", None)
    os.environ.pop("CMEM_VAULT", None)


def _make_vault(root: Path, history: History) -> None:
    (root / ".cmem").mkdir(parents=True)
    (root / ".cmem" / "config.yaml").write_text(f"language: {history.lang}\n", "utf-8")
    for folder in ("converged/core", "converged/topics", "archive"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    for rel, text in history.memory.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, "utf-8")
    for name in history.archived:
        (root / "archive" / f"{name}.md").write_text("- (earlier notes)\n", "utf-8")
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(root), "commit", "-q", "-m", "bench: initial memory"], check=True
    )


@dataclass
class Counts:
    facts: int = 0
    once: int = 0
    stale: int = 0
    duplicates: int = 0
    contradictions: int = 0
    unsourced: int = 0
    untraced: int = 0
    lost: int = 0
    unseen: int = 0
    signals: int = 0
    failed_passes: int = 0
    problems: list[str] = field(default_factory=list)

    def add(self, other: Counts) -> None:
        for name in (
            "facts",
            "once",
            "stale",
            "duplicates",
            "contradictions",
            "unsourced",
            "untraced",
            "lost",
            "unseen",
            "signals",
            "failed_passes",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.problems += other.problems


def _mentions(text: str, term: str) -> bool:
    if term.isascii():
        return (
            re.search(r"(?<![\w.])" + re.escape(term) + r"(?![\w])", text, re.IGNORECASE)
            is not None
        )
    return term in text


def _layer(root: Path):
    from cmem.vault.notes import split_frontmatter
    from cmem.vault.statements import parse_statements

    statements = []
    for path in sorted((root / "converged").rglob("*.md")):
        text = path.read_text("utf-8")
        _, start, _ = split_frontmatter(text)
        for statement in parse_statements("\n".join(text.split("\n")[start - 1 :]), start):
            statements.append((path.relative_to(root).as_posix(), statement))
    return statements


def _all_traces(statement) -> list[str]:
    found, pending = [], list(statement.traces)
    while pending:
        trace = pending.pop()
        found.append(trace.old)
        pending.extend(trace.older)
    return found


def measure(root: Path, history: History, day: int, notes_so_far: dict[str, str]) -> Counts:
    """The counts of the layer after the pass of `day`."""
    from cmem.converge.coverage import line_fates
    from cmem.converge.selection import SelectedNote
    from cmem.scan.scanner import scan_vault
    from cmem.scan.signals import Signal, scan_note
    from cmem.vault.layers import NoteFile, open_vault
    from cmem.vault.notes import read_note
    from cmem.vault.statements import normalize

    counts = Counts()
    layer = _layer(root)
    cores = [(rel, s.core, s) for rel, s in layer]
    traces = [old for _, s in layer for old in _all_traces(s)]
    for fact in history.facts:
        state = fact.at(day)
        if state is None:
            continue
        current, stale = state
        counts.facts += 1
        holding = [core for _, core, _ in cores if all(_mentions(core, t) for t in current)]
        if len(holding) == 1:
            counts.once += 1
        else:
            counts.problems.append(
                f"day {day}: {fact.id}: current value {current} stated {len(holding)} times"
            )
        stale_cores = [core for _, core, _ in cores if any(_mentions(core, t) for t in stale)]
        counts.stale += len(stale_cores)
        counts.problems += [f"day {day}: {fact.id}: stale wording {core!r}" for core in stale_cores]
        if holding and stale_cores:
            counts.contradictions += 1
        for term in stale:
            if not any(_mentions(old, term) for old in traces):
                counts.untraced += 1
                counts.problems.append(f"day {day}: {fact.id}: {term!r} is in no trace")
    seen: dict[str, int] = {}
    for rel, core, statement in cores:
        key = normalize(core)
        seen[key] = seen.get(key, 0) + 1
        if not statement.sources:
            counts.unsourced += 1
            counts.problems.append(f"day {day}: unsourced statement in {rel}: {core!r}")
    counts.duplicates = sum(n - 1 for n in seen.values())
    # every line of every note so far is meant as a signal: it is in memory, or scan shows it waiting
    vault = open_vault(root)
    scan = scan_vault(vault)
    waiting = {(s.note, s.line) for s in scan.signals} | {(d.note, d.line) for d in scan.deferred}
    layer_texts = {
        p.relative_to(root).as_posix(): p.read_text("utf-8")
        for p in (root / "converged").rglob("*.md")
    }
    for name, text in notes_so_far.items():
        rel = f"{name}.md"
        lines = text.split("\n")
        note_file = read_note(NoteFile(rel, root / rel, "divergent"), vault.config.max_note_bytes)
        seen = {
            hit.line: hit.cls
            for hit in scan_note(note_file, vault.config.extra_cues, vault.config.formats).hits
        }
        for number, line in enumerate(lines, 1):
            if line.strip() and number not in seen:
                counts.unseen += 1
                counts.problems.append(
                    f"day {day}: unseen by the scanner: {rel} line {number}: {line!r}"
                )
        signals = [
            Signal(rel, n, seen[n], "", line) for n, line in enumerate(lines, 1) if n in seen
        ]
        counts.signals += len(signals)
        note = SelectedNote(rel, name, text, lines, signals)
        for fate in line_fates([note], [rel], layer_texts, vault.config.formats):
            if fate.where == "pending" and (rel, fate.line) not in waiting:
                counts.lost += 1
                counts.problems.append(
                    f"day {day}: lost: {rel} line {fate.line}: {lines[fate.line - 1]!r}"
                )
    return counts


def run_history(history: History, workdir: Path, llm: str | None = None) -> tuple[Counts, Counts]:
    """(summed over every pass, the last pass alone)."""
    from cmem.converge.pipeline import PassOptions, run_pass
    from cmem.errors import CmemError
    from cmem.vault.layers import open_vault

    root = workdir / history.name
    _make_vault(root, history)
    total, last = Counts(), Counts()
    notes_so_far: dict[str, str] = {}
    for day, (date, notes) in enumerate(history.days):
        stamp = datetime.fromisoformat(date).replace(hour=9, tzinfo=timezone.utc).timestamp()
        for order, (name, text) in enumerate(notes.items()):
            path = root / f"{name}.md"
            path.write_text(text, "utf-8")
            os.utime(
                path, (stamp + order * 60, stamp + order * 60)
            )  # notes of a day in the order written
            notes_so_far[name] = text
        now = datetime.fromisoformat(date).replace(hour=21, tzinfo=timezone.utc)
        options = (
            PassOptions(engine="llm", llm=llm, now=now)
            if llm
            else PassOptions(engine="builtin", now=now)
        )
        try:
            result = run_pass(open_vault(root), options)
            status, errors = result.status, result.errors
        except (
            CmemError
        ) as exc:  # a model command that fails or times out: the day counts as failed
            status, errors = "failed", [str(exc)]
        last = measure(root, history, day, notes_so_far)
        if status not in ("applied", "nothing"):
            last.failed_passes += 1
            last.problems.append(f"day {day}: pass {status}: {'; '.join(errors[:3])}")
        total.add(last)
    return total, last


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f} %" if whole else "–"


def table(rows: list[tuple[str, Counts, Counts]]) -> list[str]:
    out = [
        "| history | facts (last day) | current once (last day) | current once (every pass) | stale | duplicates | contradictions | unsourced | untraced | lost signals | unseen lines | failed passes |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    grand, grand_last = Counts(), Counts()
    for name, total, last in rows:
        grand.add(total)
        grand_last.add(last)
        out.append(
            f"| {name} | {last.facts} | {last.once}/{last.facts} | {total.once}/{total.facts} | {total.stale} | {total.duplicates} | "
            f"{total.contradictions} | {total.unsourced} | {total.untraced} | {total.lost} | {total.unseen} | {total.failed_passes} |"
        )
    out.append(
        f"| **all** | **{grand_last.facts}** | **{grand_last.once}/{grand_last.facts} ({_percent(grand_last.once, grand_last.facts)})** | "
        f"**{grand.once}/{grand.facts} ({_percent(grand.once, grand.facts)})** | **{grand.stale}** | **{grand.duplicates}** | "
        f"**{grand.contradictions}** | **{grand.unsourced}** | **{grand.untraced}** | **{grand.lost}** | **{grand.unseen}** | **{grand.failed_passes}** |"
    )
    return out


def run_all(
    engines: list[str | None], workdir: Path, only: list[str] | None = None
) -> dict[str, list[tuple[str, Counts, Counts]]]:
    results = {}
    for llm in engines:
        label = f"llm: `{llm}`" if llm else "builtin"
        rows = []
        for history in HISTORIES:
            if only and history.name not in only:
                continue
            folder = workdir / (re.sub(r"\W+", "-", llm)[:40] if llm else "builtin")
            folder.mkdir(parents=True, exist_ok=True)
            total, last = run_history(history, folder, llm)
            rows.append((history.name, total, last))
        results[label] = rows
    return results


def report(results, command: str) -> str:
    facts = sum(len(h.facts) for h in HISTORIES)
    out = [
        "# Memory quality benchmark",
        "",
        f"Generated by `{command}` on {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} (`bench/quality.py`).",
        "",
        f"{len(HISTORIES)} scripted histories (zh and en), {facts} facts that change over time — moves, tool switches,",
        "reversed decisions, repeated habits, corrections of corrections. Each day's notes are added and",
        "converged in turn (a real pass: git, the validator), and the layer is measured after every pass.",
        'Columns other than the two "current once" ones are summed over every pass. Targets for the',
        "builtin engine: 0 lost, 0 stale, 0 duplicates, 0 unsourced; current truth once for ≥ 95 % of facts.",
        "",
        "Read the builtin figures with care: the histories were written while the engine's rules were",
        'built, in the phrasings those rules know (explicit cues: "switched from X to Y", "其实不是 X，是 Y").',
        'A change of mind without a cue ("Svelte 真香") is outside what it can see. "Unseen lines" are',
        "lines the scanner does not flag at all; they are not engine losses, but their facts go missing.",
        "Run it with `--llm CMD` to put a model's figures beside them.",
        "",
    ]
    for label, rows in results.items():
        out += [f"## {label}", "", *table(rows), ""]
        problems = [f"- {name}: {p}" for name, total, _ in rows for p in total.problems]
        if problems:
            out += ["What the counts above are made of:", "", *problems[:60], ""]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--llm", action="append", default=[], help="also run with this model command (repeatable)"
    )
    parser.add_argument("--only", action="append", help="run only this history (repeatable)")
    parser.add_argument("--out", default=str(PROJECT / "docs" / "quality.md"))
    parser.add_argument("--workdir", help="keep the vaults here (default: a temporary folder)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cmem-quality-") as temp:
        workdir = Path(args.workdir) if args.workdir else Path(temp)
        _isolate(Path(temp) / "home")
        results = run_all([None, *args.llm], workdir, args.only)
    command = (
        "python bench/quality.py"
        + "".join(f" --llm '{c}'" for c in args.llm)
        + "".join(f" --only {o}" for o in args.only or [])
    )
    text = report(results, command)
    out = Path(args.out)
    kept = out.read_text("utf-8") if out.exists() else ""
    reach = kept.find("\n## What reaches the model")  # bench/reach.py's own section stays
    out.write_text(text.rstrip("\n") + "\n" + (kept[reach:] if reach >= 0 else ""), "utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
