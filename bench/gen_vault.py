#!/usr/bin/env python3
"""Deterministic synthetic Obsidian-style vault generator (stdlib only).

Used for cmem performance benchmarks (`bench/run.py`). Copied unchanged (apart from this
paragraph) from the shared research tree, `shared/bench/gen_vault.py`, the generator behind
`shared/research/perf-baselines.md`, so the project is self-contained and its vaults are the
ones the baselines were measured on.

    python3 gen_vault.py OUT_DIR -n 10000 [--seed 42] [--force]

Layout produced (fractions of N notes):
    ./                  ~10%  "divergent" layer (loose notes at the vault root)
    converged/core/     ~5%
    converged/topics/   ~15%  (in ~N/200 topic sub-folders)
    archive/YYYY/MM/    ~70%
    attachments/        ~N/200 small binary .png files (not notes)
    .obsidian/          ~15 JSON config files (app, workspace, plugins/*/data.json ...)

Note contents:
    * total size lognormal (sigma 1.0) clipped to [150 B, 50 KB] before the last
      block: measured median ~1.45 KB, p95 ~6.9 KB, p99 ~13.5 KB, max ~50 KB
      (N=50k: 115.6 MB of notes; N=10k: 22.9 MB)
    * ~70% of notes start with YAML frontmatter (title, tags list, date, aliases,
      sometimes status/layer/source/confidence); mixed block/flow list styles
    * paragraphs in English, Chinese, or mixed; headings; bullet lists;
      [[wikilinks]] (some with |alias or #heading) to other notes of the vault;
      fenced code blocks in ~30% of notes
    * ~5% of paragraphs carry one "signal" sentence (actually / I prefer /
      I decided / 其实不是 / 我喜欢 / 以后都 / 改用 / 又 / 每次都 ...)
    * file mtimes are set deterministically (notes: over ~2 years before
      2026-01-01; attachments and .obsidian: 2026-01-01); folder mtimes are not

Same seed + same N  =>  byte-identical tree (file names, contents and mtimes).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import sys
import time

EN_WORDS = (
    "the of and to in is that for it as with was on be by this are from or have an "
    "not which at but they you were all we can there been has their more one will "
    "would about what so out if up when into some could them time other than then "
    "only its over also after use two how our work first well way even new want "
    "because any these give day most us note vault memory layer agent session "
    "context prompt token model cache index query search file folder commit branch "
    "merge review test build deploy config python rust script function class module "
    "package import export parse render schema field value list map set queue "
    "thread process latency throughput benchmark profile refactor design pattern "
    "interface client server request response error retry timeout log metric trace "
    "database table column row migration backup restore sync conflict diff patch "
    "release version tag changelog issue ticket plan goal decision tradeoff option "
    "summary draft idea question answer reference link source quote example"
).split()

ZH_PHRASES = (
    "我们 今天 讨论 一下 这个 问题 的 方案 需要 考虑 性能 和 可维护性 "
    "记忆 笔记 仓库 分层 收敛 发散 归档 标签 索引 检索 上下文 模型 会话 "
    "代码 测试 部署 配置 依赖 版本 提交 分支 合并 冲突 文件 目录 脚本 "
    "函数 模块 接口 数据 结构 缓存 延迟 吞吐 优化 重构 设计 模式 "
    "用户 习惯 偏好 决定 规则 流程 工具 命令 参数 输出 日志 错误 "
    "但是 因为 所以 如果 然后 而且 或者 虽然 已经 可能 应该 必须 "
    "比较 简单 复杂 快速 稳定 清楚 重要 主要 具体 基本 一般 最后 "
    "项目 团队 计划 目标 进度 风险 文档 说明 示例 参考 链接 来源 "
    "又一次 经常 有时候 其实 也许 大概 终于 总是 一直 还是 就是"
).split()
ZH_PUNCT = ("，", "，", "，", "。", "；", "：", "、")

SIGNAL_EN = (
    "Actually, that is not how it works; the {w} goes through the {w2} first.",
    "I prefer {w} over {w2} for this kind of work.",
    "I decided to keep the {w} in a separate {w2} from now on.",
    "Actually I was wrong about the {w}.",
    "Going forward I prefer short {w} names.",
    "I decided: no more {w} in the {w2}.",
)
SIGNAL_ZH = (
    "其实不是这样的，{z}应该先经过{z2}。",
    "我喜欢把{z}放在{z2}里面。",
    "以后都用{z}来处理{z2}。",
    "这里改用{z}，不再用{z2}。",
    "又忘了更新{z}，{z2}又坏了。",
    "每次都要手动{z}，太麻烦了。",
    "我决定以后都用{z}。",
)

CODE_SNIPPETS = (
    (
        "python",
        [
            "def load_notes(root):",
            "    out = []",
            "    for entry in os.scandir(root):",
            "        if entry.name.endswith('.md'):",
            "            out.append(entry.path)",
            "    return out",
        ],
    ),
    (
        "bash",
        [
            "git add -A && git commit -m 'update notes'",
            "rg -n 'TODO' --glob '*.md' .",
            "cmem status --layer divergent",
        ],
    ),
    (
        "yaml",
        [
            "layer: converged",
            "tags: [memory, agent]",
            "confidence: 0.8",
        ],
    ),
    (
        "json",
        [
            '{"name": "vault", "version": 3,',
            ' "plugins": ["dataview", "templater"]}',
        ],
    ),
    (
        "rust",
        [
            "fn main() {",
            "    let v: Vec<u32> = (0..10).collect();",
            '    println!("{:?}", v);',
            "}",
        ],
    ),
)

TAGS = (
    "memory agent python rust git obsidian idea todo project/cmem project/web "
    "reading meeting decision preference workflow 工具 想法 笔记 复盘 日记 "
    "perf design bug howto review"
).split()

OBSIDIAN_PLUGINS = (
    "dataview",
    "templater-obsidian",
    "obsidian-git",
    "calendar",
    "tag-wrangler",
    "obsidian-linter",
)


def en_sentence(rng: random.Random) -> str:
    n = rng.randint(6, 18)
    words = [rng.choice(EN_WORDS) for _ in range(n)]
    words[0] = words[0].capitalize()
    return " ".join(words) + rng.choice((".", ".", ".", "?", "!"))


def zh_sentence(rng: random.Random) -> str:
    n = rng.randint(5, 14)
    parts = []
    for i in range(n):
        parts.append(rng.choice(ZH_PHRASES))
        if i < n - 1 and rng.random() < 0.15:
            parts.append(rng.choice(ZH_PUNCT[:3]))
    return "".join(parts) + "。"


def signal_sentence(rng: random.Random) -> str:
    if rng.random() < 0.5:
        t = rng.choice(SIGNAL_EN)
        return t.format(w=rng.choice(EN_WORDS), w2=rng.choice(EN_WORDS))
    t = rng.choice(SIGNAL_ZH)
    return t.format(z=rng.choice(ZH_PHRASES), z2=rng.choice(ZH_PHRASES))


def wikilink(rng: random.Random, titles: list[str]) -> str:
    t = rng.choice(titles)
    r = rng.random()
    if r < 0.15:
        return f"[[{t}|{rng.choice(EN_WORDS)}]]"
    if r < 0.22:
        return f"[[{t}#{rng.choice(EN_WORDS).capitalize()}]]"
    return f"[[{t}]]"


def paragraph(rng: random.Random, lang: str, titles: list[str]) -> str:
    n = rng.randint(1, 5)
    sents = []
    for _ in range(n):
        if lang == "en" or (lang == "mix" and rng.random() < 0.5):
            s = en_sentence(rng)
        else:
            s = zh_sentence(rng)
        if rng.random() < 0.12:
            s += " " + wikilink(rng, titles)
        sents.append(s)
    if rng.random() < 0.05:  # ~5% of paragraphs carry a signal sentence
        sents.insert(rng.randint(0, len(sents)), signal_sentence(rng))
    sep = "" if lang == "zh" else " "
    return sep.join(sents)


def bullet_list(rng: random.Random, titles: list[str]) -> str:
    items = []
    for _ in range(rng.randint(2, 7)):
        if rng.random() < 0.5:
            body = en_sentence(rng)
        else:
            body = zh_sentence(rng)
        if rng.random() < 0.2:
            body += " " + wikilink(rng, titles)
        prefix = "- [ ] " if rng.random() < 0.1 else "- "
        items.append(prefix + body)
    return "\n".join(items)


def code_block(rng: random.Random) -> str:
    lang, lines = rng.choice(CODE_SNIPPETS)
    k = rng.randint(1, 3)
    return "```" + lang + "\n" + "\n".join(lines * k) + "\n```"


def yq(s: str) -> str:
    """Quote a YAML scalar when it needs it."""
    if any(c in s for c in ":#[]{},&*!|>'\"%@`") or s[:1] in "-?" or s.strip() != s:
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return s


def frontmatter(rng: random.Random, title: str, layer: str, day: str) -> str:
    tags = rng.sample(TAGS, rng.randint(0, 5))
    lines = ["---", f"title: {yq(title)}"]
    if rng.random() < 0.5:
        lines.append("tags: [" + ", ".join(tags) + "]")
    else:
        if tags:
            lines.append("tags:")
            lines.extend(f"  - {t}" for t in tags)
        else:
            lines.append("tags: []")
    lines.append(f"date: {day}")
    if rng.random() < 0.6:
        al = [rng.choice(EN_WORDS) + " " + rng.choice(EN_WORDS) for _ in range(rng.randint(1, 3))]
        if rng.random() < 0.3:
            al.append(rng.choice(ZH_PHRASES) + rng.choice(ZH_PHRASES))
        lines.append("aliases:")
        lines.extend(f"  - {yq(a)}" for a in al)
    else:
        lines.append("aliases: []")
    if rng.random() < 0.4:
        lines.append(f"layer: {layer}")
    if rng.random() < 0.3:
        lines.append(f"status: {rng.choice(['draft', 'active', 'stable', 'superseded'])}")
    if rng.random() < 0.2:
        lines.append(f"confidence: {rng.randint(1, 9) / 10}")
    if rng.random() < 0.15:
        lines.append(f"source: {yq('session ' + str(rng.randint(1, 999)))}")
    if rng.random() < 0.1:
        lines.append("related:")
        lines.extend(
            f'  - "[[{rng.choice(EN_WORDS)} {rng.choice(EN_WORDS)}]]"'
            for _ in range(rng.randint(1, 3))
        )
    lines.append("---")
    return "\n".join(lines) + "\n"


def target_size(rng: random.Random) -> int:
    # lognormal, median 1300 B target (the last block overshoots: ~1.5 KB real)
    v = int(math.exp(rng.gauss(math.log(1300), 1.0)))
    return max(150, min(50_000, v))


def make_title(rng: random.Random, i: int) -> str:
    r = rng.random()
    if r < 0.55:
        words = [rng.choice(EN_WORDS) for _ in range(rng.randint(2, 5))]
        words[0] = words[0].capitalize()
        return " ".join(words) + f" {i}"
    if r < 0.85:
        return "".join(rng.choice(ZH_PHRASES) for _ in range(rng.randint(2, 4))) + f"{i}"
    return (
        rng.choice(EN_WORDS).capitalize()
        + " "
        + "".join(rng.choice(ZH_PHRASES) for _ in range(2))
        + f" {i}"
    )


def note_text(rng: random.Random, title: str, layer: str, day: str, titles: list[str]) -> str:
    size = target_size(rng)
    out = []
    if rng.random() < 0.70:
        out.append(frontmatter(rng, title, layer, day))
    out.append(f"# {title}\n")
    lang = rng.choices(("en", "zh", "mix"), weights=(0.4, 0.3, 0.3))[0]
    nbytes = sum(len(s.encode("utf-8")) for s in out)
    has_code = rng.random() < 0.30
    code_at = rng.randint(1, 4)
    k = 0
    while nbytes < size:
        k += 1
        r = rng.random()
        if has_code and k == code_at:
            block = code_block(rng)
        elif r < 0.08:
            block = "## " + (en_sentence(rng)[:-1] if lang == "en" else zh_sentence(rng)[:-1])
        elif r < 0.22:
            block = bullet_list(rng, titles)
        else:
            block = paragraph(rng, lang, titles)
        block += "\n"
        out.append(block)
        nbytes += len(block.encode("utf-8")) + 1
    return "\n".join(out)


def safe_name(title: str) -> str:
    return "".join("-" if c in '/\\:*?"<>|#^[]' else c for c in title)


def write_obsidian(root: str, rng: random.Random, n_titles: list[str]) -> None:
    ob = os.path.join(root, ".obsidian")
    os.makedirs(os.path.join(ob, "plugins"), exist_ok=True)
    files = {
        "app.json": {
            "alwaysUpdateLinks": True,
            "newFileLocation": "root",
            "attachmentFolderPath": "attachments",
            "showLineNumber": True,
        },
        "appearance.json": {"theme": "obsidian", "baseFontSize": 16, "cssTheme": "Minimal"},
        "core-plugins.json": [
            "file-explorer",
            "global-search",
            "switcher",
            "graph",
            "backlink",
            "outgoing-link",
            "tag-pane",
            "page-preview",
            "daily-notes",
            "templates",
            "note-composer",
            "command-palette",
            "editor-status",
            "outline",
        ],
        "community-plugins.json": list(OBSIDIAN_PLUGINS),
        "hotkeys.json": {"editor:toggle-checklist-status": [{"modifiers": ["Mod"], "key": "L"}]},
        "graph.json": {
            "collapse-filter": True,
            "search": "",
            "showTags": False,
            "showAttachments": False,
            "hideUnresolved": False,
            "lineSizeMultiplier": 1,
            "nodeSizeMultiplier": 1,
        },
        "workspace.json": {
            "main": {
                "id": "root",
                "type": "split",
                "children": [
                    {
                        "id": f"leaf{i}",
                        "type": "leaf",
                        "state": {
                            "type": "markdown",
                            "state": {"file": t + ".md", "mode": "source"},
                        },
                    }
                    for i, t in enumerate(n_titles[:20])
                ],
            },
            "lastOpenFiles": [t + ".md" for t in n_titles[:50]],
        },
    }
    for name, data in files.items():
        with open(os.path.join(ob, name), "w", encoding="utf-8") as f:
            json.dump(data, f, ensure_ascii=False, indent=2)
    for p in OBSIDIAN_PLUGINS:
        d = os.path.join(ob, "plugins", p)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "manifest.json"), "w", encoding="utf-8") as f:
            json.dump(
                {"id": p, "name": p.title(), "version": "1.0.0", "minAppVersion": "1.4.0"},
                f,
                indent=2,
            )
        with open(os.path.join(d, "data.json"), "w", encoding="utf-8") as f:
            json.dump(
                {"enabled": True, "settings": {f"k{j}": rng.randint(0, 100) for j in range(20)}},
                f,
                indent=2,
            )


def generate(out: str, n: int, seed: int) -> dict:
    rng = random.Random(seed)
    # 1. decide titles and folders
    titles = []
    seen = set()
    for i in range(n):
        t = make_title(rng, i)
        while safe_name(t) in seen:
            t += "x"
        seen.add(safe_name(t))
        titles.append(t)
    n_topics = max(3, n // 200)
    topic_names = [f"{rng.choice(EN_WORDS)}-{i:03d}" for i in range(n_topics)]
    placements = []
    for _ in range(n):
        r = rng.random()
        if r < 0.10:
            placements.append(("divergent", ""))
        elif r < 0.15:
            placements.append(("converged", os.path.join("converged", "core")))
        elif r < 0.30:
            placements.append(
                ("converged", os.path.join("converged", "topics", rng.choice(topic_names)))
            )
        else:
            y = rng.choice((2021, 2022, 2023, 2024, 2025))
            placements.append(
                ("archive", os.path.join("archive", str(y), f"{rng.randint(1, 12):02d}"))
            )
    # 2. write notes
    base_epoch = 1767225600  # 2026-01-01T00:00:00Z
    total = 0
    sizes = []
    for title, (layer, folder) in zip(titles, placements):
        d = os.path.join(out, folder)
        os.makedirs(d, exist_ok=True)
        mt = base_epoch - rng.randint(0, 2 * 365 * 86400)
        tm = time.gmtime(mt - rng.randint(0, 30 * 86400))
        day = f"{tm.tm_year}-{tm.tm_mon:02d}-{tm.tm_mday:02d}"
        text = note_text(rng, title, layer, day, titles)
        data = text.encode("utf-8")
        p = os.path.join(d, safe_name(title) + ".md")
        with open(p, "wb") as f:
            f.write(data)
        os.utime(p, (mt, mt))
        total += len(data)
        sizes.append(len(data))
    # 3. attachments (non-note files) and .obsidian
    att = os.path.join(out, "attachments")
    os.makedirs(att, exist_ok=True)
    for j in range(max(1, n // 200)):
        with open(os.path.join(att, f"image-{j:05d}.png"), "wb") as f:
            f.write(b"\x89PNG\r\n\x1a\n" + rng.randbytes(rng.randint(2_000, 60_000)))
    write_obsidian(out, rng, [safe_name(t) for t in titles])
    for sub in ("attachments", ".obsidian"):
        for dp, _dn, fn in os.walk(os.path.join(out, sub)):
            for name in fn:
                os.utime(os.path.join(dp, name), (base_epoch, base_epoch))
    sizes.sort()
    return {
        "notes": n,
        "bytes": total,
        "median": sizes[n // 2],
        "p95": sizes[int(n * 0.95)],
        "p99": sizes[int(n * 0.99)],
        "max": sizes[-1],
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("-n", type=int, default=1000, help="number of notes")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--force", action="store_true", help="delete OUT first")
    a = ap.parse_args(argv)
    if os.path.exists(a.out):
        if not a.force:
            print(f"{a.out} exists (use --force)", file=sys.stderr)
            return 2
        shutil.rmtree(a.out)
    os.makedirs(a.out)
    st = generate(a.out, a.n, a.seed)
    print(json.dumps(st))
    return 0


if __name__ == "__main__":
    sys.exit(main())
