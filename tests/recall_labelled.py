"""A labelled query set for `cmem recall`: the sample vault plus four more topic files, and 30
queries (Chinese, English, mixed) each with the statement that must rank first. Used by
tests/reading/test_recall.py (precision@1 with a floor) and bench/recall.py (the figure in
docs/benchmarks.md)."""

from __future__ import annotations

EXTRA_FILES = {
    "converged/topics/health.md": """---
summary: 运动、睡眠和饮食习惯
importance: 5
tags: [health]
---
# 健康

- 每天早上跑步 5 公里，周末去爬山（来源：[[2026-10-05 notes]]）
- 咖啡一天最多两杯，下午三点以后不喝（来源：[[2026-10-05 notes]]）
- 膝盖有旧伤，跑步前要热身十分钟（来源：[[2026-09-30 日记]]）
- 晚上十二点前睡觉，熬夜的第二天效率很差（来源：[[2026-10-18 随手记]]）
- 体检发现维生素 D 偏低，每天补充一粒（来源：[[2026-09-30 日记]]）
""",
    "converged/topics/reading.md": """---
summary: 在读的书和读论文的习惯
importance: 4
tags: [reading]
---
# 阅读

- 正在读《深入理解计算机系统》，每周两章（来源：[[2026-09-30 日记]]）
- 喜欢科幻小说，最爱刘慈欣的《三体》（来源：[[2026-09-30 日记]]）
- Reads papers on agent evaluation every Friday afternoon (source: [[2026-10-05 notes]])
- Keeps reading notes in Obsidian, one note per book (source: [[2026-10-05 notes]])
""",
    "converged/topics/home-lab.md": """---
summary: The home lab and how it is backed up
importance: 3
tags: [homelab, ops]
---
# Home lab

- Runs a Raspberry Pi 5 at home for Home Assistant and Pi-hole (source: [[2026-10-05 notes]])
- Backs up the vault nightly with restic to a Backblaze bucket (source: [[2026-10-05 notes]])
- The router runs OpenWrt; never upgrade its firmware on a weekday (source: [[2026-10-05 notes]])
- Uses Tailscale to reach the home lab from the laptop (source: [[2026-10-05 notes]])
- Docker compose files live in ~/lab, one folder per service (source: [[2026-10-05 notes]])
""",
    "converged/topics/finance.md": """---
summary: 存钱、信用卡和房租
importance: 4
tags: [finance]
---
# 理财

- 每月工资到账后先存 30% 到指数基金（来源：[[2026-10-18 随手记]]）
- 信用卡只用一张，每月 5 号自动还款（来源：[[2026-10-18 随手记]]）
- 房租每月 3200 元，押一付三（来源：[[2026-10-18 随手记]]）
- 不碰加密货币，看不懂的风险不买（来源：[[2026-10-18 随手记]]）
""",
}

# (query, path, a fragment of the statement that must come first)
QUERIES = [
    ("深圳 实习", "converged/core/profile.md", "在找深圳 AI Agent 实习"),
    ("猫", "converged/core/profile.md", "养了一只猫"),
    ("膝盖", "converged/topics/health.md", "膝盖有旧伤"),
    ("跑步 公里", "converged/topics/health.md", "每天早上跑步"),
    ("咖啡", "converged/topics/health.md", "咖啡一天最多两杯"),
    ("睡觉", "converged/topics/health.md", "十二点前睡觉"),
    ("三体", "converged/topics/reading.md", "最爱刘慈欣"),
    ("指数基金", "converged/topics/finance.md", "先存 30%"),
    ("信用卡还款", "converged/topics/finance.md", "信用卡只用一张"),
    ("房租", "converged/topics/finance.md", "房租每月"),
    ("加密货币", "converged/topics/finance.md", "不碰加密货币"),
    ("框图", "converged/topics/job-search.md", "没有先画整体框图"),
    ("北京", "converged/core/profile.md", "在找深圳 AI Agent 实习"),
    ("广州", "converged/core/profile.md", "住在广州"),
    ("口语", "converged/core/profile.md", "英文口语面试会紧张"),
    ("最小例子", "converged/core/methodology.md", "先给能跑的最小例子"),
    ("几点写代码", "converged/core/profile.md", "22 点以后写代码"),
    ("Tailwind 样式", "converged/topics/frontend-stack.md", "样式用 Tailwind"),
    ("function calling 面试", "converged/topics/job-search.md", "function calling"),
    ("ruff", "converged/topics/python-tooling.md", "Lints and formats with ruff"),
    ("black flake8", "converged/topics/python-tooling.md", "Lints and formats with ruff"),
    ("pytest", "converged/topics/python-tooling.md", "Runs tests with pytest"),
    ("commit message", "converged/core/methodology.md", "Commit messages in English"),
    ("restic backups", "converged/topics/home-lab.md", "Backs up the vault nightly"),
    ("upgrading firmware", "converged/topics/home-lab.md", "never upgrade its firmware"),
    ("Raspberry Pi", "converged/topics/home-lab.md", "Runs a Raspberry Pi 5"),
    ("tailscale laptop", "converged/topics/home-lab.md", "Uses Tailscale"),
    ("evaluation papers", "converged/topics/reading.md", "Reads papers on agent evaluation"),
    (
        "which Python version for new projects",
        "converged/topics/python-tooling.md",
        "Pins Python 3.12",
    ),
    ("React Vite 前端", "converged/topics/frontend-stack.md", "个人项目用 React 写前端"),
    ("服务端渲染", "converged/topics/frontend-stack.md", "不碰 Next.js 的服务端渲染"),
    ("英文 commit", "converged/core/methodology.md", "Commit messages in English"),
]


def is_right(result_path: str, result_text: str, path: str, fragment: str) -> bool:
    return result_path == path and fragment in result_text
