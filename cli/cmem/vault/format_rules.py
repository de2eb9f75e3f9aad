"""Which source and trace formats can be read back (`formats.*` in the config, docs/design.md §1):
what cmem writes with a format it must find again, in every statement, nested or not.

- A source template holds `{links}` once, with text before it: a bare `{links}` cannot be told
  from a link the statement itself makes. Its closing text may be empty (`— {links}`): the
  annotation is then its opening text and a run of links.
- A trace template holds `{date}` and then `{old}`, once each, and opens with a bracket and closes
  with its pair (`(updated {date}, was: {old})`, `【{date} 前为：{old}】`): `{old}` may hold
  older traces, and only a bracket pair says where the outer one ends.
- Neither holds a line break, `[[`/`]]` or what reads as an HTML tag (`<was …>`: rule 9 refuses
  raw HTML), and a separator holds no bracket of a link.

Apart from `config.py` so that `statements.py`, which reads the formats, states the one table of
brackets both use, and stdlib only: a light `cmem recall` imports it.
"""

from __future__ import annotations

import re

# Each opening bracket a format may start with, and its closing pair.
BRACKETS = {
    "(": ")",
    "（": "）",
    "[": "]",
    "【": "】",
    "{": "}",
    "〔": "〕",
    "「": "」",
    "『": "』",
    "«": "»",
    "<": ">",
    "《": "》",
    "〈": "〉",
}


def _shape_problem(template: str) -> str | None:
    if "\n" in template or "\r" in template:
        return "it must be one line"
    if "[[" in template or "]]" in template:
        return "it must not hold [[ or ]], which would read as a link"
    if re.search(r"<[A-Za-z/!?]", template):
        return "it must not look like an HTML tag (< then a letter), which no pass writes"
    return None


def source_problem(template: str) -> str | None:
    """Why a source template cannot be read back, or None."""
    problem = _shape_problem(template)
    if problem:
        return problem
    if template.count("{links}") != 1:
        return "it must hold {links} exactly once"
    if not template.split("{links}", 1)[0].strip():
        return "it must hold text before {links}, or a source could not be told from a link"
    return None


def separator_problem(separator: str) -> str | None:
    if "\n" in separator or "\r" in separator:
        return "it must be one line"
    if "[" in separator or "]" in separator:
        return "it must not hold [ or ], which would read as part of a link"
    return None


def trace_problem(template: str) -> str | None:
    """Why a trace template cannot be read back (nested, as traces are), or None."""
    problem = _shape_problem(template)
    if problem:
        return problem
    if template.count("{date}") != 1 or template.count("{old}") != 1:
        return "it must hold {date} and {old} exactly once each"
    if template.index("{date}") > template.index("{old}"):
        return "{date} must come before {old}"
    opener, closer = template[:1], template[-1:]
    placeholder_edge = template.startswith("{date}") or template.endswith("{old}")
    if BRACKETS.get(opener) != closer or placeholder_edge:
        return "it must open with a bracket and close with its pair, so a trace can nest inside the next one"
    return None


# The example each message gives, by setting.
EXAMPLES = {
    "source": "(source: {links})",
    "source_separator": ", ",
    "trace": "(updated {date}, was: {old})",
}
PROBLEMS = {"source": source_problem, "source_separator": separator_problem, "trace": trace_problem}
