"""A model command's raw output made into the reply the parser reads (issue 14).

Real model CLIs add things around the answer that are no part of it:

- ANSI escape codes (colours, cursor moves, a spinner's line clears), which some CLIs print even
  when stdout is not a terminal;
- a reasoning model's thinking before the answer: a leading `<think>…</think>` block (DeepSeek-R1,
  Qwen3 and others through `llm` or `ollama run`), or ollama's own `Thinking...` … `...done
  thinking.` frame. The thinking may itself draft or quote `<convergence>`, which the parser would
  otherwise take for the answer.

Both are removed before parsing. Line numbers stay those of the raw output (a removed block
leaves its line breaks behind), so a parser message still points into the run record's
`response-N.txt`, which keeps the output exactly as the command printed it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# CSI (ESC [ … final byte), OSC (ESC ] … BEL or ST), DCS/SOS/PM/APC strings, and two-byte escapes.
_ANSI = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[PX^_][^\x1b]*(?:\x1b\\)?|[@-Z\\-_])|\x9b[0-?]*[ -/]*[@-~]"
)
# What returns the cursor to the start of the line (CR, "column 1", "erase line"): a spinner's
# frames are drawn over each other, and only what follows the last return is on screen.
_LINE_RESET = re.compile(r"\r(?!\n)|\x1b\[[0-9]*G|\x1b\[2K")
# Only at the very start (after blank lines): thinking the model does after its answer, or a
# `<think>` it quotes inside a statement, is left for the parser to see.
_THINK = re.compile(r"\A\s*<(think|thinking|reasoning)>.*?</\1[ \t]*>", re.DOTALL | re.IGNORECASE)
_OLLAMA_THINKING = re.compile(
    r"\A\s*Thinking\.\.\.[ \t]*\n.*?\n\.\.\.done thinking\.[ \t]*(?=\n|\Z)", re.DOTALL
)


@dataclass
class CleanReply:
    text: str
    removed: list[str] = field(default_factory=list)  # what was taken out, for the run record


def clean_reply(raw: str) -> CleanReply:
    """`raw` without ANSI codes and without a leading thinking block."""
    removed = []
    text = raw
    if "\x1b" in raw or "\x9b" in raw:
        # a terminal's output: replay the line returns first, so a spinner leaves nothing behind
        lines = []
        for line in raw.replace("\r\n", "\n").split("\n"):
            lines.append(_LINE_RESET.split(line)[-1] if _LINE_RESET.search(line) else line)
        text = "\n".join(lines)
        text, codes = _ANSI.subn("", text)
        removed.append(f"{codes} ANSI escape codes")
    for pattern, name in (
        (_THINK, "a leading <think> block"),
        (_OLLAMA_THINKING, "a leading Thinking... block"),
    ):
        match = pattern.match(text)
        if match:
            breaks = match.group(0).count("\n")
            text = "\n" * breaks + text[match.end() :]  # keep the line numbers of the raw output
            removed.append(f"{name} ({breaks + 1} lines)")
    return CleanReply(text, removed)
