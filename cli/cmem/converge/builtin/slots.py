"""Slots: what holds one value at a time, for the builtin engine (docs/design.md §4, issue 41) — where one
lives, and the tool of a kind one uses (a Python package manager, a shell, an editor, …).

A switch or correction into a slot is about the statement holding the slot's other value,
wherever that statement lives, even when the line names no old side: after "I switched to uv",
"Survey scripts run under pipenv" becomes "Survey scripts run under uv" with a trace, so a chain
of switches (pipenv → uv → poetry) leaves one current statement, never a stale one in another
file. A name that is also a common word (fish, ghost, arc) counts only beside a word of its
kind ("shell", "blog", "browser"), so "I like fish" is no shell.
"""

from __future__ import annotations

import re
from functools import lru_cache

from cmem.converge.builtin.line_words import without_cue
from cmem.text.folding import fold_case
from cmem.text.words import name_words

HOME = "home"
_HOME = re.compile(
    r"^(?:i|we)(?:'ve| have)?\s+(?:moved\s+to|live\s+in|relocated\s+to)\b|搬到|搬家到|住在",
    re.IGNORECASE,
)

# (kind, names that say the kind alone, names that need a word of the kind, words of the kind)
_KINDS = [
    ("python packaging", "pip pipenv poetry conda pdm uv rye", "", "virtualenv venv 依赖"),
    ("shell", "zsh bash nushell", "fish", "shell"),
    ("editor", "vim neovim nvim helix emacs vscode sublime", "zed cursor", "editor 编辑器"),
    ("terminal", "iterm iterm2 alacritty wezterm ghostty", "kitty warp", "terminal 终端"),
    ("notes app", "obsidian notion logseq evernote", "bear", "notes 笔记"),
    ("browser", "firefox", "chrome safari arc brave edge", "browser 浏览器"),
    ("frontend", "react svelte vue angular solidjs", "solid", "frontend 前端"),
    ("blog", "hugo jekyll wordpress astro", "ghost", "blog 博客"),
]


@lru_cache(maxsize=4096)
def _values(text: str) -> dict[str, tuple[str, ...]]:
    """kind → the names of that kind a text holds, in order (lower case)."""
    low = fold_case(text)
    # ASCII edges: a Chinese line may hold a name without spaces ("用uv管理依赖")
    words = name_words(low)
    present = set(words)
    found: dict[str, tuple[str, ...]] = {}
    for kind, alone, beside, context in _KINDS:
        with_context = any(c in present or (not c.isascii() and c in low) for c in context.split())
        allowed = set(alone.split()) | (set(beside.split()) if with_context else set())
        names = tuple(dict.fromkeys(w for w in words if w in allowed))
        if names:
            found[kind] = names
    return found


def slots_of(text: str) -> frozenset[str]:
    """The slots a line or statement fills: where one lives, and the kinds of tool it names."""
    slots = set(_values(text))
    if _HOME.search(without_cue(text.strip())):
        slots.add(HOME)
    return frozenset(slots)


def slot_swap(core: str, new: str) -> tuple[str, str, str] | None:
    """(`core` with the new name in place, the old name, the new name as written) when `new`
    puts another name of a kind into a statement holding one: the one name of that kind `core`
    holds and `new` does not, standing once in it, and the one name `new` brings."""
    held, brought = _values(core), _values(new)
    for kind, names in brought.items():
        olds = [n for n in held.get(kind, ()) if n not in names]
        fresh = [n for n in names if n not in held.get(kind, ())]
        if len(olds) != 1 or len(fresh) != 1:
            continue
        places = list(_named(olds[0]).finditer(core))
        spelled = _named(fresh[0]).search(new)
        if len(places) == 1 and spelled is not None:
            at = places[0]
            return (
                core[: at.start()] + spelled.group(0) + core[at.end() :],
                at.group(0),
                spelled.group(0),
            )
    return None


def _named(name: str) -> re.Pattern:
    return re.compile(rf"(?<![a-z0-9_.+#-]){re.escape(name)}(?![a-z0-9_+#-])", re.IGNORECASE)


def slot_names(slots: frozenset[str]) -> list[str]:
    """Every name of these kinds: the words a statement filling one of them holds."""
    return [
        name
        for kind, alone, beside, _ in _KINDS
        if kind in slots
        for name in (alone + " " + beside).split()
    ]
