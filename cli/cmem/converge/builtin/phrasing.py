"""A signal line as a statement of memory, for the builtin engine (docs/design.md §4): the user's own
words, with what made it a quote taken off.

- Cue words and hedges go: "Actually", "其实", "I decided to", "I switched from X to", "改用",
  "not X" / "，不是X" — the old side is what the rewrite's trace keeps, not the new statement.
- A switch is stated as what holds now: "I switched from uv to poetry for X" → "I use poetry
  for X"; "从 pip 改用 uv" → "用 uv"; "I moved to Porto" → "I live in Porto".
- Relative dates are resolved against the note's date: "last month" → "since 2026-10",
  "上个月" → "自 2026-10 起", "yesterday" → "on 2026-11-27".

Rules are lexical and few; a line none of them fits is kept as written. Nothing is invented:
every word of the result is the user's, or a date, or one of the fixed verbs above.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

from cmem.text.scripts import han_count
from cmem.text.words import latin_word_count


def _month_before(day: date) -> str:
    first = day.replace(day=1) - timedelta(days=1)
    return f"{first.year:04d}-{first.month:02d}"


# --- English ------------------------------------------------------------------------------

_EN_HEDGES = re.compile(
    r"^(?:actually|honestly|well|so|ok(?:ay)?|anyway|update|correction|note|ps|btw|fyi|to be clear|scratch that|"
    r"that's wrong|that is wrong|that's not right|i was wrong|i stand corrected|i misspoke|"
    r"i think|i guess|i mean|i meant|oh|hmm|ah|in fact|to be honest)\b\s*[,:;.!—–-]*\s*",
    re.IGNORECASE,
)
_EN_NOT_TAIL = re.compile(
    r"\s*(?:[,;—–]|\s-)\s*(?:and\s+|but\s+)?(?:not|no longer)\s+[^,;!?]+?[.!]?\s*$", re.IGNORECASE
)
_EN_NOT_PAREN = re.compile(r"\s*\(not\s+[^()]+\)", re.IGNORECASE)
# "I prefer calls instead of written feedback", "I'd rather have calls than written feedback":
# what holds now stays, the other side goes to the trace
_EN_INSTEAD_TAIL = re.compile(
    r"\s*,?\s+(?:instead of|rather than)\s+[^,;!?]+?[.!]?\s*$", re.IGNORECASE
)
_EN_RATHER_THAN = re.compile(r"^(.*?\brather\s+(?!than\b)\S.*?)\s+than\s+[^,;!?]+?[.!]?\s*$", re.I)
_EN_SWITCH = re.compile(
    r"^(?:i|we)(?:'ve|'m| have| am)?\s+(?:(?:just|finally|now)\s+)?"
    r"(?:switch(?:ed|ing)?|mov(?:ed|ing)|migrat(?:ed|ing)|chang(?:ed|ing))\s+(?:over\s+)?(?:from\s+.+?\s+)?to\s+",
    re.IGNORECASE,
)
# "I switched my blog from Ghost to Astro": the object between the verb and from/to
_EN_SWITCH_OBJECT = re.compile(
    r"^(i|we)(?:'ve| have)?\s+(?:(?:just|finally|now)\s+)?(?:switched|moved|migrated|changed)\s+"
    r"((?:my|our|the)\s+[^,;]+?)\s+(?:over\s+)?from\s+.+?\s+to\s+(.+)$",
    re.IGNORECASE,
)
_EN_SWITCH_BARE = re.compile(r"^switch(?:ed|ing)\s+(?:from\s+.+?\s+)?to\s+", re.IGNORECASE)
_EN_CHOSE = re.compile(
    r"^(?:i|we)(?:'ll| will)?\s+(?:go with|chose|settled on|picked)\s+", re.IGNORECASE
)
_EN_DECIDED = re.compile(
    r"^(?:i|we)(?:'ve| have)?\s+decided(?:\s+to|\s*[:,]|\s+that|(?=\s+(?:i|we)\b))\s*",
    re.IGNORECASE,
)
_EN_CLAUSE_START = re.compile(r"^(?:i|we)\b", re.IGNORECASE)  # "I decided I'm going …"
_EN_DECIDED_BARE = re.compile(r"^decided(?:\s+to|\s*[:,])\s*", re.IGNORECASE)
_EN_MOVED_PLACE = re.compile(r"^(?:[Ii]|[Ww]e)(?:'ve| have)?\s+moved\s+to\s+(?=[A-Z])")
_EN_FROM_NOW = re.compile(r"^(?:from now on|going forward)\s*,?\s*", re.IGNORECASE)

_EN_RELATIVE = [
    (re.compile(r"\blast month\b", re.IGNORECASE), lambda d: f"since {_month_before(d)}"),
    (re.compile(r"\bthis month\b", re.IGNORECASE), lambda d: f"since {d.year:04d}-{d.month:02d}"),
    (
        re.compile(r"\blast week\b", re.IGNORECASE),
        lambda d: f"since {(d - timedelta(days=7)).isoformat()}",
    ),
    (re.compile(r"\blast year\b", re.IGNORECASE), lambda d: f"since {d.year - 1}"),
    (re.compile(r"\bthis year\b", re.IGNORECASE), lambda d: f"since {d.year}"),
    (
        re.compile(r"\byesterday\b", re.IGNORECASE),
        lambda d: f"on {(d - timedelta(days=1)).isoformat()}",
    ),
    (
        re.compile(r"\b(?:today|this morning|tonight|this evening)\b", re.IGNORECASE),
        lambda d: f"on {d.isoformat()}",
    ),
]


def _event(text: str, match: re.Match, resolved: str) -> str:
    """ "since 2026-10" for a state, "in 2026-10" after a past event ("I moved to Lisbon last month")."""
    if resolved.startswith("since ") and re.search(r"\b\w+ed\b", text[: match.start()]):
        return "in " + resolved[6:]
    return resolved


def _en_statement(text: str, day: date) -> str:
    for _ in range(3):  # "Actually, scratch that: …"
        stripped = _EN_HEDGES.sub("", text, count=1)
        if stripped == text or not stripped.strip():
            break
        text = stripped
    text = _EN_FROM_NOW.sub("", text) or text
    text = _EN_NOT_PAREN.sub("", text)
    for tail_pattern in (_EN_NOT_TAIL, _EN_INSTEAD_TAIL):
        tail = tail_pattern.sub("", text)
        text = tail if tail.strip() else text
    text = _EN_RATHER_THAN.sub(r"\1", text)
    switched_object = _EN_SWITCH_OBJECT.match(text)
    if (
        switched_object
    ):  # → "I use Astro for my blog": what holds now, the old side goes to the trace
        who, thing, new = switched_object.groups()
        text = f"{'We' if who.lower() == 'we' else 'I'} use {new.strip().rstrip('.!')} for {thing}"
    elif not _EN_MOVED_PLACE.match(text):  # "I moved to Porto" says what holds now already
        # "going with X", "I chose X" stay as written: what was chosen is not always a tool one uses
        for pattern, verb in (
            (_EN_DECIDED, "I "),
            (_EN_DECIDED_BARE, "I "),
            (_EN_SWITCH, "I use "),
            (_EN_SWITCH_BARE, "I use "),
        ):
            match = pattern.match(text)
            if match and text[match.end() :].strip():
                rest = text[match.end() :]
                subject = "We " if match.group(0).lower().startswith("we") else "I "
                if _EN_CLAUSE_START.match(rest):
                    subject = ""  # the clause decided has its own subject
                text = (subject + verb[2:] if verb != "I " else subject) + rest
                break
    for pattern, replace in _EN_RELATIVE:
        text = pattern.sub(lambda m: _event(text, m, replace(day)), text)
    text = text.strip().rstrip(".!").strip()
    return text[:1].upper() + text[1:] if text else text


# --- Chinese ------------------------------------------------------------------------------

_ZH_HEDGES = re.compile(
    r"^(?:其实|说实话|老实说|更正|纠正|补充|想通了|决定了|就这么定了|定下来了|对了|嗯|哦|好吧|我说错了|我记错了|你写错了|写错了|搞错了|不对)\s*[：:，,。！!]*\s*"
)
_ZH_NOT_IS = re.compile(r"^(?:其实)?不是(.+?)[，,]\s*(?:而)?是(.+)$")
_ZH_I_MEANT = re.compile(r"^(?:我说的是|我的意思是)\s*[：:，,]?\s*")
_ZH_NOT_TAIL = re.compile(r"[，,；;]\s*(?:(?:而)?不是|不再用?|不用)[^，,；;。]+[。！]?$")
_ZH_SWITCH = re.compile(r"^(?:我|我们)?(?:决定)?(?:从.+?)?(?:改用|换成|换用|换到|改成|转向)")
_ZH_DECIDED = re.compile(r"^(?:我|我们)(?:已经)?决定(?:了)?\s*[：:，,]?\s*")
_ZH_FROM_NOW = re.compile(r"^以后都")
# "以后都不要长文档了，改成列要点" → "以后都列要点": the old side goes to the trace
_ZH_NO_MORE = re.compile(r"^(.*?)不要再?.+?了[，,]\s*(?:改成|换成|改用|换用)\s*(.+)$")

_ZH_RELATIVE = [
    # never inside a longer word: 上周五 is a day, 上个月底 a point, not "since"
    (re.compile(r"上个?月(?![初中底末])"), lambda d: f"自 {_month_before(d)} 起"),
    (re.compile(r"(?:这个?月|本月)(?![初中底末])"), lambda d: f"自 {d.year:04d}-{d.month:02d} 起"),
    (
        re.compile(r"(?:上周|上个星期|上星期)(?![一二三四五六日天末])"),
        lambda d: f"自 {(d - timedelta(days=7)).isoformat()} 起",
    ),
    (re.compile(r"去年"), lambda d: f"自 {d.year - 1} 年起"),
    (re.compile(r"今年"), lambda d: f"自 {d.year} 年起"),
    (re.compile(r"昨天|昨晚"), lambda d: f"{(d - timedelta(days=1)).isoformat()}"),
    (re.compile(r"今天|今晚"), lambda d: f"{d.isoformat()}"),
]


def _zh_statement(text: str, day: date) -> str:
    for _ in range(3):
        stripped = _ZH_HEDGES.sub("", text, count=1)
        if stripped == text or not stripped.strip():
            break
        text = stripped
    not_is = _ZH_NOT_IS.match(text)
    if not_is:
        if (
            len(not_is.group(2).strip()) >= 6
        ):  # "是深圳" alone says nothing; the rewrite substitutes it
            text = not_is.group(2)
    else:
        lead = re.sub(
            r"^不是[^，,。]+[，,]\s*", "", text
        )  # "不是 Svelte，前端改用 Vue 写": the old side goes
        text = lead if lead.strip() else text
    text = _ZH_I_MEANT.sub("", text) or text
    no_more = _ZH_NO_MORE.match(text)
    if no_more:
        text = no_more.group(1) + no_more.group(2)
    tail = _ZH_NOT_TAIL.sub("", text)
    text = tail if tail.strip() else text
    switch = _ZH_SWITCH.match(text)
    if switch and text[switch.end() :].strip():
        rest = text[switch.end() :].lstrip()
        # "改用 Svelte 写前端" → "用 Svelte 写前端"; "换成每周游泳两次" → "每周游泳两次"
        text = (
            ("用 " + rest)
            if rest[:1].isascii() or switch.group(0).endswith(("改用", "换用"))
            else rest
        )
        text = text.replace("用 ", "用", 1) if not rest[:1].isascii() else text
    else:
        decided = _ZH_DECIDED.match(text)
        if decided and text[decided.end() :].strip():
            text = text[decided.end() :]
    for pattern, replace in _ZH_RELATIVE:
        text = pattern.sub(lambda m: replace(day), text)
    return text.strip().rstrip("。！!").strip()


def is_chinese(text: str) -> bool:
    """More Han characters than Latin letters (kana or Hangul do not make a line Chinese)."""
    cjk = han_count(text)
    return cjk > 0 and cjk * 2 >= sum(ch.isascii() and ch.isalpha() for ch in text)


def statement_text(text: str, day: date) -> str:
    """The quoted line (`words.quote_line`) as a statement; never empty when `text` is not."""
    result = _zh_statement(text, day) if _said_in_chinese(text) else _en_statement(text, day)
    return result if result.strip() else text


def _said_in_chinese(text: str) -> bool:
    """Whether a line's grammar is Chinese: as many Han characters as Latin words, so a line
    naming tools ("从 pipenv 换成 uv") is read by the Chinese rules."""
    return is_chinese(text) or han_count(text) >= max(1, latin_word_count(text))


_SUB_ZH = re.compile(r"(?:其实)?不是([^，,。；;]{1,12})[，,]\s*(?:而)?是([^，,。；;]{1,12})")
_SUB_EN = re.compile(
    r"(?:it's\s+|it is\s+|that's\s+|that is\s+)?([\w+#-]+(?:\.\w+)*)\s*,\s*not\s+([\w+#-]+(?:\.\w+)*)\s*[.!]?\s*",
    re.IGNORECASE,
)
_SUB_EN_NOT = re.compile(r"\bnot\s+([\w.+#-]+)\s*,\s*(?:but\s+)?([\w.+#-]+)\b", re.IGNORECASE)


def substitution(text: str) -> tuple[str, str] | None:
    """(old, new) of a short "不是 X，是 Y" / "Y, not X" correction: the rewrite puts Y in place
    of X inside the statement it corrects, so "在找北京后端实习" becomes "在找深圳后端实习"."""
    match = _SUB_ZH.search(text)
    if match:
        return match.group(1).strip(), match.group(2).strip()
    bare = text
    for _ in range(3):
        bare = _EN_HEDGES.sub("", bare, count=1)
    match = _SUB_EN.fullmatch(bare)  # only "(it's) Y, not X" as a whole: a longer line is restated
    if match:
        return match.group(2), match.group(1)
    match = _SUB_EN_NOT.search(text)
    if match:
        return match.group(1).rstrip("."), match.group(2).rstrip(".")
    return None


# --- what a line is about -----------------------------------------------------------------

_SUBJECTS = [  # (pattern, en name, zh name): a topic file is named from its subject
    (
        r"\b(?:uv|pip|pipenv|poetry|conda|virtualenvs?|venv|pyenv|pdm|hatch|rye)\b",
        "Python tooling",
        "Python 工具链",
    ),
    (r"\b(?:fish|zsh|bash|nushell|shell)\b", "Shell", "Shell"),
    (r"\b(?:vim|neovim|nvim|helix|emacs|vs ?code|sublime|zed|editor)\b|编辑器", "Editor", "编辑器"),
    (r"\b(?:blog|hugo|ghost|jekyll|wordpress)\b|博客", "Blog", "博客"),
    (r"\b(?:react|svelte|vue|angular|solidjs|frontend)\b|前端", "Frontend", "前端"),
    (r"\b(?:iterm2?|alacritty|kitty|wezterm|ghostty|terminal)\b|终端", "Terminal", "终端"),
    (r"\b(?:obsidian|notion|logseq|evernote)\b|笔记软件", "Notes app", "笔记工具"),
    (r"\b(?:firefox|chrome|safari|browser)\b|浏览器", "Browser", "浏览器"),
    (r"\b(?:postgres(?:ql)?|mysql|sqlite|mongodb|database)\b|数据库", "Database", "数据库"),
    (r"\b(?:live in|moved to|relocat\w*|apartment)\b|搬到|搬去|搬家|住在", "Home", "住处"),
    (
        r"\b(?:job|internship|interview|offer|résumé|resume|cv)\b|实习|求职|面试|工作机会|简历|网申"
        r"|投(?:了|递)?[^，,。]{0,4}公司",
        "Job search",
        "求职",
    ),
    (r"\b(?:gym|running|workout|exercise|yoga|swim\w*)\b|跑步|健身|锻炼|游泳", "Exercise", "运动"),
    (r"\b(?:laptop|macbook|thinkpad|keyboard|monitor)\b|电脑|笔记本电脑|键盘", "Hardware", "设备"),
]


def subject_of(text: str) -> str | None:
    """The subject a decision is about, for naming a new topic file ("I decided to use fish as my
    shell" → "Shell"); None when no known subject fits."""
    zh = is_chinese(text)
    # compiled on first use (re keeps them), not at import: only a decision routed by its
    # subject needs them, and compiling them all slowed every pass's start-up
    for pattern, en, zh_name in _SUBJECTS:
        if re.search(pattern, text, re.IGNORECASE):
            return zh_name if zh else en
    return None
