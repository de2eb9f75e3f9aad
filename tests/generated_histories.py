"""Multi-day histories made by a seeded generator, for the builtin engine's property test (issue
35: the builtin engine never writes a reply its validator rejects).

A history is a vault's settings and a few days of notes, written as people write them: habits
logged day after day, preferences, decisions, switches and corrections of what earlier days said,
daily-note templates linking the days around them, tags, callouts and tasks, odd but legal note
names (spaces, CJK, emoji, dots, parentheses, apostrophes), Chinese and English mixed, long
lines, and every kind of source and trace format the config schema accepts. `random.Random(seed)`
alone decides it, so a seed names one history for good.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

# (source, source_separator, trace): one of each kind of format the schema accepts — the two
# languages' own, a source with no closing text, other bracket pairs, other separators
FORMATS: list[tuple[str | None, str | None, str | None]] = [
    (None, None, None),
    ("— {links}", None, None),
    ("src: {links}", " ", None),
    ("[from {links}]", "; ", "[changed {date}, was: {old}]"),
    ("【来源：{links}】", "、", "【{date} 前为：{old}】"),
    ("<{links}>", ", ", "{{date}: {old}}"),
    ("(via {links})", " & ", "(since {date}; before: {old})"),
    ("(source: {links})", ", ", "（更新于 {date}，原为：{old}）"),
    ("（来源：{links}）", "、", "(updated {date}, was: {old})"),
    ("← {links}", " · ", "«{date}: {old}»"),
    ("from: {links}.", ", ", "({date} → {old})"),
]

_PIECES = ["src", "from", "via", "来源", "see", "—", "·", "←", "note", "出处", "n."]
_OPENERS = ["(", "[", "（", "【", "{", "«", "<", "〔", "「"]
_CLOSERS = [")", "]", "）", "】", "}", "»", ">", "〕", "」", ".", "", ";"]


def random_format(rng: random.Random) -> tuple[str, str, str]:
    """A source, separator and trace made of random pieces: the property test keeps those the
    config schema accepts, and each of those must then work end to end."""
    opener, closer = rng.choice(_OPENERS + [""]), rng.choice(_CLOSERS)
    piece = rng.choice(_PIECES)
    spacer = rng.choice(["", " ", ": ", "：", " - "])
    source = f"{opener}{piece}{spacer}{{links}}{closer}"
    separator = rng.choice([", ", "; ", "、", " ", "", " | ", " and "])
    t_open, t_close = rng.choice(_OPENERS + ["", "~"]), rng.choice(_CLOSERS + ["~"])
    word = rng.choice(["updated", "was", "改", "changed", "until"])
    trace = (
        f"{t_open}{word} {{date}}{rng.choice([', was: ', ': ', '，原为：', ' / '])}{{old}}{t_close}"
    )
    return source, separator, trace


def accepted(source: str | None, separator: str | None, trace: str | None) -> bool:
    """Whether the config schema (and the config's own checks) accept these formats."""
    from pathlib import Path

    from cmem.errors import CmemError
    from cmem.vault.config import parse_config

    chosen = {"source": source, "source_separator": separator, "trace": trace}
    formats = {key: value for key, value in chosen.items() if value is not None}
    try:
        parse_config({"formats": formats}, Path("config.yaml"))
    except CmemError:
        return False
    return True


# --- what people write ------------------------------------------------------------------------

EN_TOOLS = ["uv", "poetry", "pipenv", "pdm", "conda", "hatch"]
EN_EDITORS = ["Neovim", "Helix", "Emacs", "VS Code", "Zed"]
EN_SHELLS = ["fish", "zsh", "bash", "nushell"]
EN_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
ZH_CITIES = ["北京", "上海", "深圳", "杭州", "成都"]
ZH_TOOLS = ["React", "Svelte", "Vue", "Solid"]
HABITS_EN = [
    "Skipped the gym again.",
    "Forgot to push my branch again, as usual",
    "Stayed up past 2am again",
    "Skipped Dutch again: I plan it for the evening and every time it fails",
    "Missed breakfast again",
    "Again I checked email before doing deep work.",
]
HABITS_ZH = [
    "又熬夜到两点",
    "又忘了喝水",
    "每次都在周五晚上才开始写周报",
    "又没吃早饭，老毛病",
    "又把手机带上床了",
]
NAMES = [
    "Bob's notes (work)",
    "café ☕ ideas",
    "v2.0 plan",
    "周报 · 第三周",
    "idea - svelte 🚀",
    "a.b.c",
    "Q&A with Anna",
    "读书笔记《三体》",
    "2026",
    "12-05",
    "meeting @ 10.30",
    "C# tips",
    "mix 中文 and English",
]
TAGS = [
    "#health",
    "#2026",
    "#project/frontend",
    "#项目/求职",
    "#daily",
    "#idea",
    "#Shell",
    "#work-life",
]


@dataclass
class History:
    seed: int
    language: str
    config_yaml: str
    days: list[tuple[str, dict[str, str]]] = field(default_factory=list)  # (date, {rel: text})
    archive_after: set[int] = field(default_factory=set)  # days after whose pass all is archived

    def describe(self) -> str:
        notes = sum(len(notes) for _, notes in self.days)
        return f"seed {self.seed}: {self.language}, {len(self.days)} days, {notes} note writes\n{self.config_yaml}"


class _Writer:
    """The person of one history: what they said so far, so later days correct and switch it."""

    def __init__(self, rng: random.Random, language: str):
        self.rng, self.language = rng, language
        self.tool = rng.choice(EN_TOOLS)
        self.editor = rng.choice(EN_EDITORS)
        self.shell = rng.choice(EN_SHELLS)
        self.sessions = rng.randint(1, 4)
        self.python = rng.choice(["3.11", "3.12"])
        self.standup = rng.choice(EN_DAYS)
        self.city = rng.choice(ZH_CITIES)
        self.frontend = rng.choice(ZH_TOOLS)
        self.habits = rng.sample(HABITS_ZH if language == "zh" else HABITS_EN, 2)
        self.said: set[str] = set()  # the facts stated so far, which later lines may change

    def _other(self, pool: list[str], current: str) -> str:
        return self.rng.choice([item for item in pool if item != current])

    def line(self) -> str:
        rng = self.rng
        kinds = ["habit", "habit", "prefer", "decide", "change", "change", "mixed", "plain"]
        kinds += ["long", "zh" if self.language == "en" else "en", "odd"]
        kind = rng.choice(kinds)
        if kind == "habit":
            return rng.choice(self.habits)
        if kind == "prefer":
            return self._statement()
        if kind == "decide":
            return self._decision()
        if kind == "change" and self.said:
            return self._change(rng.choice(sorted(self.said)))
        if kind == "mixed":
            return rng.choice(
                [
                    "以后都用 uv 管理 Python 环境，不要再用 pip。",
                    "I prefer 早上写代码, afternoons for meetings",
                    "我决定用 fish 做默认 shell",
                    "Actually 周会 is on Thursday now, not Tuesday",
                ]
            )
        if kind == "odd":
            # what breaks an engine that only quotes: HTML, brackets, code, links, URLs,
            # text that looks like a source or a trace
            return rng.choice(
                [
                    "I prefer <kbd>Ctrl</kbd>+<kbd>K</kbd> for search",
                    "I prefer tea (really, not coffee :)",
                    "I always answer in English — see [[Q&A with Anna]]",
                    "From now on, use `uv run` for scripts",
                    "I decided: the blog goes on https://example.com/blog",
                    "我决定（暂定）用 Hugo 写博客",
                    "Actually (updated 2026-01-01, was: nothing) I prefer decaf",
                    "I prefer [[idea - svelte 🚀]] over React",
                    "I like the source: [[2026]] idea — [[v2.0 plan]]",
                    "I prefer 3 < 4 and 5 > 2 as examples",
                    "I always keep [brackets] and {braces} and «quotes» in notes",
                    "以后都用【方括号】标注待办（重要）",
                    "I prefer tea [from [[a.b.c]]] honestly",
                ]
            )
        if kind == "long":
            return rng.choice(
                [
                    "Hey Anna, thanks for the tips yesterday. I prefer meeting in the mornings, honestly, since afternoons are packed. Let me know if Thursday works, and say hi to Tom!",
                    "Long day. I decided to stop checking Slack after 6pm because it keeps me up, and the team agreed it is fine, so from now on my status says offline after six and I will answer in the morning, which should help with sleep too.",
                    "今天和导师聊了很久，他说我太急了。我决定以后每周只投五家公司，认真准备每一家，不再海投。晚上吃了火锅。",
                ]
            )
        if kind in ("zh", "en") and kind != self.language:
            return rng.choice(
                ["我喜欢安静的咖啡馆", "其实不是周二，是周三开组会"]
                if kind == "zh"
                else ["I prefer tea over coffee.", "I always write the test first."]
            )
        return rng.choice(
            [
                "Lunch with Tom, nothing special.",
                "- [ ] buy milk",
                "> [!note] mood: tired",
                "Read about CRDTs (https://crdt.tech) tonight.",
                "`git commit --amend` again broke my history",
                "今天天气不错",
            ]
        )

    def _statement(self) -> str:
        rng = self.rng
        if self.language == "zh":
            choice = rng.choice(["city", "frontend", "sessions"])
            self.said.add(choice)
            if choice == "city":
                return f"我在找{self.city}的后端实习，以后都优先看这边"
            if choice == "frontend":
                return f"我喜欢用 {self.frontend} 写前端"
            return f"以后都每周练 {self.sessions} 次荷兰语"
        choice = rng.choice(["editor", "tool", "sessions", "python", "standup"])
        self.said.add(choice)
        return {
            "editor": f"I prefer {self.editor} for editing code.",
            "tool": f"From now on I use {self.tool} for managing virtualenvs.",
            "sessions": f"From now on I do {self.sessions} Dutch sessions a week.",
            "python": f"I always pin Python {self.python} for new projects.",
            "standup": f"I prefer the standup on {self.standup} mornings.",
        }[choice]

    def _decision(self) -> str:
        if self.language == "zh":
            self.said.add("frontend")
            return f"我决定用 {self.frontend} 写前端"
        self.said.add("shell")
        return f"I decided to use {self.shell} as my shell."

    def _change(self, what: str) -> str:
        rng = self.rng
        if what == "city":
            old, self.city = self.city, self._other(ZH_CITIES, self.city)
            return rng.choice(
                [f"其实不是{old}，是{self.city}", f"更正：不是{old}，是{self.city}的实习"]
            )
        if what == "frontend":
            old, self.frontend = self.frontend, self._other(ZH_TOOLS, self.frontend)
            return rng.choice(
                [f"从 {old} 改用 {self.frontend} 写前端", f"改用 {self.frontend}，不再用 {old}"]
            )
        if what == "sessions":
            old, self.sessions = self.sessions, self.sessions % 4 + 1
            if self.language == "zh":
                return f"其实不是每周 {old} 次，是每周 {self.sessions} 次荷兰语"
            return f"I meant {self.sessions} sessions a week, not {old}"
        if what == "editor":
            old, self.editor = self.editor, self._other(EN_EDITORS, self.editor)
            return rng.choice(
                [
                    f"Actually I use {self.editor} now, not {old}",
                    f"I switched from {old} to {self.editor} for editing code.",
                ]
            )
        if what == "tool":
            old, self.tool = self.tool, self._other(EN_TOOLS, self.tool)
            return f"I switched from {old} to {self.tool} for managing virtualenvs."
        if what == "python":
            old, self.python = self.python, self._other(["3.11", "3.12", "3.13"], self.python)
            return f"Actually it's Python {self.python} for new projects, not {old}."
        if what == "standup":
            old, self.standup = self.standup, self._other(EN_DAYS, self.standup)
            return f"Correction: the standup is on {self.standup}, not {old}."
        old, self.shell = self.shell, self._other(EN_SHELLS, self.shell)
        return f"I switched from {old} to {self.shell} as my shell."


def _day_name(rng: random.Random, day: date, language: str) -> str:
    iso = day.isoformat()
    choices = [iso, f"{iso} notes", f"Daily {iso}", f"{iso} 日记", f"{iso} 随手记"]
    return rng.choice(choices[:3] if language == "en" and rng.random() < 0.7 else choices)


def _template(rng: random.Random, day: date, names: dict[date, str]) -> list[str]:
    """A daily-note template's lines: links to the days around, a heading, tags."""
    previous = names.get(day - timedelta(days=1)) or (day - timedelta(days=1)).isoformat()
    following = (day + timedelta(days=1)).isoformat()
    return rng.choice(
        [
            [f"<< [[{previous}]] | [[{following}]] >>", "", "## Log"],
            [f"Previous: [[{previous}]]", ""],
            ["---", f"date: {day.isoformat()}", "tags: [daily]", "---", f"# {day.isoformat()}", ""],
            [f"[[{day.year}]] · [[{previous}]]", rng.choice(TAGS), ""],
            [],
        ]
    )


def generate(seed: int, days: int | None = None, fixed_format: int | None = None) -> History:
    rng = random.Random(seed)
    language = rng.choice(["en", "zh"])
    writer = _Writer(rng, language)
    lines = [f"language: {language}"]
    if fixed_format is not None:
        source, separator, trace = FORMATS[fixed_format % len(FORMATS)]
    elif rng.random() < 0.3:
        source, separator, trace = random_format(rng)
        if not accepted(source, separator, trace):
            source, separator, trace = rng.choice(FORMATS)
    else:
        source, separator, trace = rng.choice(FORMATS)
    chosen = {"source": source, "source_separator": separator, "trace": trace}
    if any(chosen.values()):
        lines.append("formats:")
        for key, value in chosen.items():
            if value is not None:
                escaped = value.replace("\\", "\\\\").replace('"', '\\"')
                lines.append(f'  {key}: "{escaped}"')
    history = History(seed, language, "\n".join(lines) + "\n")
    start = date(2026, rng.randint(1, 12), rng.randint(1, 20))
    day, names, written = start, {}, {}
    retired: set[str] = set()  # notes that may be archived by now: never written again
    if days is None:  # a quarter of them long: a habit logged over weeks
        days = rng.randint(15, 25) if rng.random() < 0.25 else rng.randint(4, 12)
    for _ in range(days):
        notes: dict[str, str] = {}
        name = _day_name(rng, day, language)
        names[day] = name
        body = _template(rng, day, names)
        body += [writer.line() for _ in range(rng.randint(1, 4))]
        if rng.random() < 0.3:
            body[-1] = body[-1] + " " + rng.choice(TAGS)
        notes[f"{name}.md"] = "\n".join(body) + "\n"
        odd_names = [f"{odd}.md" for odd in NAMES if f"{odd}.md" not in retired]
        if odd_names and rng.random() < 0.35:
            odd = rng.choice(odd_names)
            notes[odd] = written.get(odd, "") + writer.line() + "\n"
        if written and rng.random() < 0.2:
            # an earlier note edited: a line added to it, a later day
            earlier = rng.choice(sorted(written))
            notes[earlier] = written[earlier] + writer.line() + "\n"
        written.update(notes)
        if rng.random() < 0.15:
            history.archive_after.add(len(history.days))
            retired |= set(written)
            written = {}
        history.days.append((day.isoformat(), notes))
        day += timedelta(days=rng.choice([1, 1, 1, 2, 3]))
    return history


# --- converging one, day by day ----------------------------------------------------------

_DATE_OR_YEAR = re.compile(r"\d{4}(?:-\d{2}(?:-\d{2})?)?|\d{2}-\d{2}")


def make_vault(root: Path, history: History) -> Path:
    """An empty vault with the history's settings, under git."""
    (root / ".cmem").mkdir(parents=True)
    (root / ".cmem" / "config.yaml").write_text(history.config_yaml, encoding="utf-8")
    for folder in ("converged/core", "converged/topics", "archive"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["commit", "-q", "-m", "init", "--allow-empty"],
    ):
        subprocess.run(["git", "-C", str(root), *args], check=True)
    return root


def layer_problems(root: Path) -> list[str]:
    """What makes the convergent layer invalid: frontmatter that does not parse, a statement
    without a source or citing no note, a memory file named like a note, a date or a year."""
    from cmem.converge.validator.allowed_paths import skeleton
    from cmem.vault.layers import open_vault
    from cmem.vault.notes import split_frontmatter
    from cmem.vault.statements import parse_statements
    from cmem.vault.yaml_reader import read_frontmatter

    vault = open_vault(root)
    formats = vault.config.formats
    names = vault.note_names()
    notes = {
        name
        for name, paths in names.items()
        if any(vault.layer_of(p) in ("divergent", "archive") for p in paths)
    }
    shapes = {skeleton(name) for name in notes}
    problems = []
    for file in vault.convergent_files():
        text = file.path.read_text("utf-8")
        block, start, problem = split_frontmatter(text)
        if problem or read_frontmatter(block)[1]:
            problems.append(f"{file.rel}: frontmatter does not parse")
        stem = file.rel.rsplit("/", 1)[-1].removesuffix(".md")
        if skeleton(stem) in shapes:
            problems.append(f"{file.rel} is named like a note")
        if _DATE_OR_YEAR.fullmatch(stem):
            problems.append(f"{file.rel} is named like a date or a year")
        body = "\n".join(text.split("\n")[start - 1 :])
        for statement in parse_statements(body, start, formats):
            if not statement.sources:
                problems.append(f"{file.rel}:{statement.line_no}: no source: {statement.text!r}")
            for name in statement.sources:
                if name not in notes:
                    problems.append(f"{file.rel}:{statement.line_no}: [[{name}]] is no note")
    return problems


def converge_history(history: History, root: Path, passes: list | None = None) -> list[str]:
    """Every day written and converged; the problems found, each naming its day. `passes`, when
    given, gets each pass's result."""
    from cmem.archive.gate import apply_archive, plan_archive
    from cmem.converge.pipeline import PassOptions, run_pass
    from cmem.errors import CmemError
    from cmem.vault.layers import open_vault

    make_vault(root, history)
    problems: list[str] = []
    for index, (day, notes) in enumerate(history.days):
        stamp = datetime.fromisoformat(day).replace(hour=9, tzinfo=timezone.utc).timestamp()
        for order, (rel, text) in enumerate(notes.items()):
            path = root / rel
            path.write_text(text, encoding="utf-8")
            os.utime(path, (stamp + order * 60, stamp + order * 60))
        now = datetime.fromisoformat(day).replace(hour=21, tzinfo=timezone.utc)
        try:
            result = run_pass(open_vault(root), PassOptions(engine="builtin", now=now))
        except CmemError as exc:
            problems.append(f"day {index} ({day}): {exc}")
            break
        if passes is not None:
            passes.append(result)
        if result.status not in ("applied", "nothing"):
            problems.append(f"day {index} ({day}): pass {result.status}: {result.errors}")
            break
        problems += [f"day {index} ({day}): {p}" for p in layer_problems(root)]
        if problems:
            break
        if index in history.archive_after:
            vault = open_vault(root)
            apply_archive(vault, plan_archive(vault, all_lines=True), now=now)
            problems += [f"day {index} ({day}), archived: {p}" for p in layer_problems(root)]
    return problems
