"""The pass every converge-facing test file starts from: a small Chinese vault under git with a
profile, a topic file and one note, the fake model's wiring (`model_env`, `llm_options`) and a valid
reply (`VALID`). `pass_vault` is a fixture, registered for every test by conftest.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cmem.converge.pipeline import PassOptions
from support import TESTS

FAKE = TESTS / "fake_llm.py"
HOSTILE = sorted((TESTS / "replies" / "hostile").glob("*.txt"))
PROFILE = "converged/core/profile.md"
JOBS = "converged/topics/job-search.md"
NOTE = "2026-11-28 随手记.md"
PROFILE_TEXT = """---
summary: 我是谁，想被怎样帮助
importance: 8
owner: me  # a user's own key
---
# Profile

- 推他动手而非给鼓励（来源：[[2026-11-20 日记]]）
- 在找北京后端实习（更新于 2026-10-01，原为：想读研）（来源：[[2026-11-20 日记]]）
- 喜欢用 Python 写脚本（来源：[[2026-11-20 日记]]）
- 早上效率最高，下午容易分心（来源：[[2026-11-20 日记]]）
"""
NOTE_TEXT = "# 随手记\n\n- 其实不是北京，我决定改找深圳的 AI Agent 实习。\n- 以后都用 uv 管理 Python 环境，不要再用 pip。\n"


@pytest.fixture
def pass_vault(make_vault):
    root = make_vault(
        {
            PROFILE: PROFILE_TEXT,
            JOBS: "---\nsummary: 找实习\n---\n# 找实习\n\n- 简历投了三家公司（来源：[[2026-11-20 日记]]）\n",
            NOTE: NOTE_TEXT,
            "archive/2026-11/2026-11-20 日记.md": "推他动手而非给鼓励。在找北京后端实习。喜欢用 Python 写脚本。早上效率最高。简历投了三家公司。\n",
            "archive/ARCHIVE-CHECKLIST.md": "# Archive checklist\n",
            ".cmem/state.json": '{"version": 1, "notes": {}, "passes": []}\n',
        },
        config_yaml="repair_rounds: 0\nllm:\n  timeout_seconds: 5\n",
        git=True,
    )
    return root


def model_env(monkeypatch, tmp_path, replies: list[str], mode: str = "reply") -> Path:
    folder = tmp_path / "replies-queue"
    folder.mkdir(exist_ok=True)
    for index, text in enumerate(replies):
        (folder / f"{index:03d}.txt").write_text(text, encoding="utf-8")
    log = tmp_path / "fake.log"
    monkeypatch.setenv("FAKE_LLM_REPLIES", str(folder))
    monkeypatch.setenv("FAKE_LLM_LOG", str(log))
    monkeypatch.setenv("FAKE_LLM_MODE", mode)
    return log


def llm_options(**extra) -> PassOptions:
    return PassOptions(engine="llm", llm=f"{sys.executable} {FAKE}", **extra)


def prompts_sent(log: Path) -> list[str]:
    return [json.loads(line)["prompt"] for line in log.read_text("utf-8").splitlines()]


VALID = f"""Here is the pass.
<convergence>
<file path="{PROFILE}">
---
summary: 我是谁，想被怎样帮助
importance: 8
owner: me  # a user's own key
updated: {{date}}
---
# Profile

- 推他动手而非给鼓励（来源：[[2026-11-20 日记]]）
- 在找深圳 AI Agent 实习（更新于 {{date}}，原为：在找北京后端实习（更新于 2026-10-01，原为：想读研））（来源：[[2026-11-28 随手记]]）
- 喜欢用 Python 写脚本（来源：[[2026-11-20 日记]]）
- 早上效率最高，下午容易分心（来源：[[2026-11-20 日记]]）
- 以后都用 uv 管理 Python 环境，不再用 pip（来源：[[2026-11-28 随手记]]）
</file>
<converged note="{NOTE}" into="{PROFILE}"/>
</convergence>
"""


def today() -> str:
    from datetime import datetime

    return datetime.now().astimezone().date().isoformat()
