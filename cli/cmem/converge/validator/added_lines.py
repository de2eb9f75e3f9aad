"""Every line a pass adds to a memory file is accounted for (docs/design.md §5, rule 9).

Memory is pasted into every agent session (`cmem context`), so a reply may add only what the
validator can check: sourced statements (rules 3 and 4), blank lines, and short structural
headings. Comments, code fences, raw HTML and other blocks are never written by a pass unless the
same line was already in the file (the user's own); a heading is short text with no links, code,
URLs or instructions to an agent. In the frontmatter a pass may add or change only `summary`,
`updated`, `tags` and `aliases` (a new file may also set `importance`); every other key stays
byte for byte, and the values a pass writes are held to the heading's rules.

All checks are linear: each line is looked at once, with patterns free of nested quantifiers.
"""

from __future__ import annotations

import re

from cmem.vault.statements import WIKILINK, normalize

# Keys a pass may add or change in an existing file, and the ones a new file may set.
PASS_KEYS = frozenset({"summary", "updated", "tags", "aliases"})
NEW_FILE_KEYS = PASS_KEYS | {"importance"}
MAX_HEADING_CHARS = 80
MAX_SUMMARY_CHARS = 200

_HEADING = re.compile(r"#{1,6}(\s|$)")
_FENCE = re.compile(r"(```|~~~)")
_BREAK = re.compile(r"(-{3,}|\*{3,}|_{3,})")
_LIST_ONLY = re.compile(r"\s*(?:[-*+]|\d{1,9}[.)])(?:\s*\[[ xX]\])?\s*")
_RULE_CHARS = frozenset("|:- \t")
_HTML = re.compile(r"</?[A-Za-z][\w:-]{0,40}(\s[^<>\n]{0,500})?/?>|<!--|-->|<!\[CDATA\[|<\?")
_URL = re.compile(r"[a-z][a-z0-9+.-]{0,20}://|\bwww\.|\bmailto:", re.IGNORECASE)
_CODE = re.compile(r"`|\$\(|\|\s*(?:ba|z)?sh\b|&&|;\s*(?:rm|curl|wget)\b")
_LINK = re.compile(r"\]\(|\[\[|\]\[")
# Words addressing the reader, not describing the user: an instruction smuggled into a heading
# or a summary that every session reads.
_IMPERATIVE = re.compile(
    r"\b(?:ignore|disregard|obey|override|execute|curl|wget|sudo|chmod|rm\s+-rf|eval|exfiltrate|jailbreak)\b"
    r"|\b(?:system\s+prompt|previous\s+instructions?|these\s+instructions|instructions?\s+(?:for|to)\s+(?:the\s+)?(?:agent|assistant|model|ai))\b"
    r"|\b(?:you|agents?|assistants?|the\s+model|llms?|ai)\s+(?:must|should|shall|will\s+now|have\s+to|need\s+to)\b"
    r"|\b(?:before|after)\s+(?:any|every|each)\s+(?:task|answer|reply|session|command)\b"
    r"|^\s*(?:always|never|do\s+not|don't|please|first,?)\s+(?:run|execute|call|send|upload|delete|ignore|reply|answer|tell)\b"
    r"|忽略|无视|指令|提示词|系统提示|执行|运行命令|务必|必须先",
    re.IGNORECASE,
)
# Words a statement is blanked to, not a fact: the fact they replace is lost (docs/design.md §5
# rule 10).
_BLANKS = frozenset(
    normalize(word)
    for word in (
        "unknown",
        "unknown.",
        "unknown?",
        "none",
        "n/a",
        "na",
        "tbd",
        "todo",
        "removed",
        "deleted",
        "redacted",
        "empty",
        "null",
        "nil",
        "nothing",
        "no data",
        "not known",
        "not applicable",
        "forgotten",
        "cleared",
        "—",
        "-",
        "?",
        "未知",
        "无",
        "不详",
        "待定",
        "已删除",
        "删除",
        "空",
        "不明",
        "暂无",
        "无信息",
        "已清除",
    )
)


def holds_html(text: str) -> bool:
    """Whether a statement holds raw HTML (rule 9), which no pass writes."""
    return _HTML.search(text) is not None


def is_blank(core: str) -> bool:
    """A statement that says nothing: `Unknown.`, `N/A`, `未知`, or only punctuation."""
    key = normalize(core)
    return not key.strip("?") or key in _BLANKS


def text_problem(text: str, limit: int) -> str | None:
    """Why `text` is not short structural text (a heading, a summary, a tag), or None."""
    if len(text) > limit:
        return f"is {len(text)} characters long (at most {limit})"
    if _LINK.search(text) or WIKILINK.search(text):
        return "holds a link"
    if _URL.search(text):
        return "holds a URL"
    if _HTML.search(text):
        return "holds HTML"
    if _CODE.search(text):
        return "holds code"
    if _IMPERATIVE.search(text):
        return "reads as an instruction to an agent"
    return None


def unaccounted_lines(
    text: str, body_start: int, statement_lines: set[int], before: set[str]
) -> list[tuple[int, str]]:
    """(line, why) for every body line that is neither a statement, blank, a short structural
    heading, a table rule or thematic break, nor a line the file already had. Lines inside a fence
    or a comment are judged with it; a statement holding raw HTML is named too."""
    problems: list[tuple[int, str]] = []
    lines = text.split("\n")
    fence = ""
    in_comment = False
    for number in range(body_start, len(lines) + 1):
        line = lines[number - 1]
        stripped = line.strip()
        known = stripped in before
        if fence:
            if stripped.startswith(fence):
                fence = ""
            if not known:
                problems.append(
                    (number, "a line of a code block; a pass writes statements, not code")
                )
            continue
        if in_comment:
            in_comment = "-->" not in stripped
            if not known:
                problems.append((number, "a line of an HTML comment; a pass never writes comments"))
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            if not known:
                problems.append((number, "a code fence; a pass writes statements, not code"))
            continue
        if stripped.startswith("<!--"):
            in_comment = "-->" not in stripped
            if not known:
                problems.append((number, "an HTML comment; a pass never writes comments"))
            continue
        if known or not stripped:
            continue
        if _HEADING.match(stripped):
            problem = text_problem(stripped.lstrip("#").strip(), MAX_HEADING_CHARS)
            if problem:
                problems.append(
                    (number, f"this heading {problem}; a heading is short structural text")
                )
            continue
        if _is_table_rule(stripped) or _BREAK.fullmatch(stripped) or _LIST_ONLY.fullmatch(line):
            continue
        if number in statement_lines:
            if holds_html(stripped):
                problems.append((number, "this statement holds raw HTML; write plain text"))
            continue
        problems.append((number, "this line is not a statement, a heading or a blank line"))
    return problems


def _is_table_rule(stripped: str) -> bool:
    return "---" in stripped and set(stripped) <= _RULE_CHARS


_TOP_KEY = re.compile(
    r"""(?:"([^"\n]{1,200})"|'([^'\n]{1,200})'|([^\s#:'"\-?][^:\n]{0,200}?))\s*:(?:\s|$)"""
)


def frontmatter_keys(block: str | None) -> dict[str, str]:
    """Top-level key → its raw text (the key's line and every indented or list line after it),
    for comparing keys byte for byte. Comments and blank lines belong to the key before them."""
    keys: dict[str, str] = {}
    current: str | None = None
    for line in (block or "").split("\n"):
        match = None if line[:1] in (" ", "\t", "-", "#", "") else _TOP_KEY.match(line)
        if match:
            current = next(group for group in match.groups() if group is not None).strip()
            keys[current] = line.rstrip()
        elif current is not None:
            keys[current] += "\n" + line.rstrip()
    return {key: raw.rstrip("\n") for key, raw in keys.items()}


def frontmatter_problems(
    base_block: str | None, new_block: str | None, new_data: dict, new_file: bool
) -> list[str]:
    """Why the new frontmatter changes more than a pass may: keys outside the allowed set added
    or changed, and values of allowed keys that are not short structural text."""
    problems = []
    before, after = frontmatter_keys(base_block), frontmatter_keys(new_block)
    allowed = NEW_FILE_KEYS if new_file else PASS_KEYS
    for key, raw in after.items():
        if key in allowed:
            if before.get(key) != raw:
                problems.extend(_value_problems(key, new_data.get(key)))
            continue
        if key not in before:
            problems.append(
                f"adds the key {key!r}; a pass may add or change only {', '.join(sorted(allowed))}"
            )
        elif before[key] != raw:
            problems.append(
                f"changes the key {key!r}; a pass may change only {', '.join(sorted(PASS_KEYS))} — keep the others byte for byte"
            )
    return problems


def _value_problems(key: str, value) -> list[str]:
    values = value if isinstance(value, list) else [value]
    problems = []
    for item in values:
        if isinstance(item, (dict, list)):
            problems.append(f"the value of {key!r} is nested; write plain text")
            continue
        if item is None:
            continue
        problem = text_problem(
            str(item), MAX_SUMMARY_CHARS if key == "summary" else MAX_HEADING_CHARS
        )
        if problem:
            problems.append(f"the value of {key!r} {problem}")
    return problems
