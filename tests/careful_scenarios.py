"""Vaults as people keep them, for the replies a careful model writes from cmem's prompt alone
(`tests/replies/careful/`, checked by `tests/converge/test_careful_replies.py`).

Each scenario is a vault (its files, its config) and the day of the pass. The replies in
`tests/replies/careful/<scenario>/*.txt` were written by reading nothing but the prompt
`cmem converge --emit-prompt` prints for that vault (`python tests/careful_scenarios.py OUT`
writes those prompts), never the validator's code: they are what the prompt teaches.
"""

from __future__ import annotations

import sys
from pathlib import Path

EN = "language: en\n"
ZH = "language: zh\n"

SCENARIOS: dict[str, dict] = {
    # a week of English notes with changes of mind, no cue words, and noise
    "en-week": {
        "config": EN,
        "date": "2026-11-24",
        "files": {
            "converged/core/profile.md": (
                "---\nsummary: who I am and how I want to be helped\nupdated: 2026-11-01\n---\n"
                "# Profile\n\n"
                "- Lives in Lisbon (source: [[2026-10-02 notes]])\n"
                "- Works freelance as a backend developer (source: [[2026-10-02 notes]])\n"
                "- Prefers short answers with code first (source: [[2026-10-02 notes]])\n"
                "- Wants answers short, code first (source: [[2026-10-05 notes]])\n"
            ),
            "converged/topics/bluefin.md": (
                "---\nsummary: the Bluefin side project\n---\n# Bluefin\n\n"
                "- Bluefin uses bun as its package manager (source: [[2026-10-05 notes]])\n"
                "- The Bluefin sync is on Mondays (source: [[2026-10-05 notes]])\n"
            ),
            "archive/2026-10/2026-10-02 notes.md": "I live in Lisbon and freelance on backends. Short answers, code first please.\n",
            "archive/2026-10/2026-10-05 notes.md": "Bluefin: bun for packages. Sync on Mondays. Again: short answers.\n",
            "2026-11-08 notes.md": "Moved to Berlin last week, the flat is in Neukölln.\nRainy all day.\n",
            "2026-11-12 notes.md": (
                "Switched Bluefin back to pnpm, bun kept breaking the lockfile.\n"
                "From next week the Bluefin sync moves to Thursdays.\n"
            ),
            "2026-11-20 notes.md": (
                "New client: Acme Logistics, 95 EUR/h, contract ends 2027-03-31.\n"
                "Decided: I'm taking it. Tuesdays and Thursdays at their office.\n"
                "Bought a new kettle.\n"
            ),
        },
    },
    # 十天的中文笔记：纠正、又换回、约了一面、改到
    "zh-days": {
        "config": ZH,
        "date": "2026-11-29",
        "files": {
            "converged/core/profile.md": (
                "---\nsummary: 我是谁、想被怎样帮助\nupdated: 2026-11-01\n---\n# 画像\n\n"
                "- 在找北京后端实习（来源：[[2026-10-10 日记]]）\n"
                "- 喜欢先看结论再看细节（来源：[[2026-10-10 日记]]）\n"
                "- 每周跑步两次（来源：[[2026-10-12 日记]]）\n"
            ),
            "converged/topics/job-search.md": (
                "---\nsummary: 找实习\n---\n# 找实习\n\n"
                "- 简历投了三家公司（来源：[[2026-10-12 日记]]）\n"
            ),
            "archive/2026-10/2026-10-10 日记.md": "在找北京的后端实习。我喜欢先看结论再看细节。\n",
            "archive/2026-10/2026-10-12 日记.md": "简历投了三家公司。每周跑步两次。\n",
            "2026-11-20 日记.md": "修正一下：不是北京，是深圳，想找 AI Agent 方向的实习。\n今天有点累。\n",
            "2026-11-24 日记.md": "和字节约了一面，时间改到下周三下午。\n",
            "2026-11-27 日记.md": "跑步改到每周三次，上次说两次是写错了。\n楼下新开了一家面馆。\n",
        },
    },
    # a Chinese vault, a note in English; a changed note whose first lines were converged before
    "mixed-changed": {
        "config": ZH,
        "date": "2026-12-02",
        "files": {
            "converged/core/profile.md": (
                "---\nsummary: 我是谁\n---\n# 画像\n\n"
                "- 用 Neovim 写代码（来源：[[2026-11-01 notes]]）\n"
                "- 住在上海（来源：[[2026-11-01 notes]]）\n"
            ),
            "2026-11-01 notes.md": "I write code in Neovim.\nI live in Shanghai.\n",
            ".cmem/state.json": None,  # filled by the scenario builder: 2026-11-01 converged
            "2026-11-30 notes.md": "Trying Helix this week instead of Neovim.\nHelix it is, from now on.\nCoffee was bad.\n",
        },
        # the lines of these notes a pass converged before (the note then changed)
        "converged_before": {
            "2026-11-01 notes.md": ["I write code in Neovim.", "I live in Shanghai."]
        },
        "appended": {"2026-11-01 notes.md": "Moved to Hangzhou in November.\n"},
    },
}


def build(root: Path, name: str) -> None:
    """The scenario's vault at `root` (a git repository, its state as the scenario says)."""
    import hashlib
    import json
    import subprocess

    scenario = SCENARIOS[name]
    (root / ".cmem").mkdir(parents=True, exist_ok=True)
    (root / ".cmem" / "config.yaml").write_text(scenario["config"], encoding="utf-8")
    for folder in ("converged/core", "converged/topics", "archive"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    for rel, text in scenario["files"].items():
        if text is None:
            continue
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    notes = {}
    for rel, lines in scenario.get("converged_before", {}).items():
        raw = (root / rel).read_bytes()
        notes[rel] = {
            "sha256": hashlib.sha256(raw).hexdigest(),
            "lines": sorted(
                hashlib.sha1(" ".join(x.split()).encode()).hexdigest()[:12] for x in lines
            ),
            "pass": "20261101-120000-abcd",
            "time": "2026-11-01T12:00:00+00:00",
            "into": ["converged/core/profile.md"],
        }
    (root / ".cmem" / "state.json").write_text(
        json.dumps({"version": 1, "notes": notes, "passes": []}), encoding="utf-8"
    )
    for rel, more in scenario.get("appended", {}).items():
        with open(root / rel, "a", encoding="utf-8") as handle:
            handle.write(more)
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), "commit", "-q", "-m", "notes"], check=True)


def emit_prompts(out: Path) -> None:
    """The prompt of each scenario, as `cmem converge --emit-prompt` prints it, into `out`."""
    import tempfile
    from datetime import datetime

    from cmem.converge.pipeline import PassOptions, run_pass
    from cmem.vault.layers import open_vault

    out.mkdir(parents=True, exist_ok=True)
    for name, scenario in SCENARIOS.items():
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder) / name
            build(root, name)
            now = datetime.fromisoformat(scenario["date"] + "T18:00:00+00:00")
            result = run_pass(open_vault(root), PassOptions(emit_prompt=True, now=now))
            (out / f"{name}.prompt.txt").write_text(result.prompt, encoding="utf-8")


if __name__ == "__main__":
    emit_prompts(Path(sys.argv[1]))
