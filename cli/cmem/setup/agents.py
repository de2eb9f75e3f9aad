"""`cmem agent-instructions` (docs/design.md §7, "after a complex task"): the text an agent needs in
its instructions file — read `cmem context` at the start, capture with `cmem note`, ask the user
before converging after a complex task, never touch the archive. The texts are package data
(`prompts/agent-instructions.{en,zh}.md`); this module fills in the agent and the vault.

The file is `AGENTS.md`: Codex, Cursor, Copilot and Gemini read it, and so does Claude Code in a
project without a CLAUDE.md. cmem is named by its absolute path (an agent's shell may not have
cmem's virtual environment on PATH)."""

from __future__ import annotations

import shlex

from cmem.resources import PromptTemplate
from cmem.vault.layers import Vault

AGENT_FILES = {"claude-code": "AGENTS.md", "codex": "AGENTS.md", "generic": "AGENTS.md"}

_AGENT_LINES = {
    "en": {
        "claude-code": "\nThis text belongs in `AGENTS.md` (Claude Code reads it when the project has no `CLAUDE.md`;\n"
        "with one, put it there). `cmem hook install --agent claude-code` in the project gives each session\n"
        "its memory at the start and captures it at the end, so step 1 then happens by itself.\n",
        "codex": "\nThis text belongs in `AGENTS.md`. `cmem hook install --agent codex` gives each session its memory\n"
        "at the start and captures it at the end (Codex asks you to trust a new hook once, in /hooks).\n",
        "generic": "\nThis text belongs in `AGENTS.md`, which Codex, Cursor, Copilot, Gemini and (without a\n"
        "`CLAUDE.md`) Claude Code read.\n",
    },
    "zh": {
        "claude-code": "\n这段文字放在 `AGENTS.md` 里（项目没有 `CLAUDE.md` 时 Claude Code 会读它；有的话就放进\n"
        "`CLAUDE.md`）。在项目里运行 `cmem hook install --agent claude-code`，每次会话开始时自动带上记忆、\n"
        "结束时自动记下会话，第 1 条就不用手动做了。\n",
        "codex": "\n这段文字放在 `AGENTS.md` 里。运行 `cmem hook install --agent codex`，每次会话开始时自动带上记忆、\n"
        "结束时自动记下会话（Codex 会请你在 /hooks 里信任一次新的钩子）。\n",
        "generic": "\n这段文字放在 `AGENTS.md` 里：Codex、Cursor、Copilot、Gemini 都读它，项目没有 `CLAUDE.md` 时\n"
        "Claude Code 也读。\n",
    },
}


def agent_instructions(agent: str, lang: str | None, vault: Vault | None) -> str:
    language = lang or (vault.config.language if vault is not None else "en")
    if language not in _AGENT_LINES:
        language = "en"
    from cmem.setup.hooks import cmem_executable

    program = " ".join(shlex.quote(word) for word in cmem_executable())
    if vault is not None:
        root = str(vault.root.resolve())
        command = f"{program} --vault {shlex.quote(root)}"
        vault_line = (
            f" It is at `{root}`; the commands below name it, so they work from any folder."
            if language == "en"
            else f"它在 `{root}`；下面的命令都带着这个路径，在任何目录下都能用。"
        )
    else:
        command = program
        vault_line = (
            " cmem finds it from `$CMEM_VAULT`, `--vault PATH`, or the nearest folder above holding `.cmem/`."
            if language == "en"
            else "cmem 通过 `$CMEM_VAULT`、`--vault PATH` 或上层最近的含 `.cmem/` 的目录找到它。"
        )
    text = PromptTemplate(f"agent-instructions.{language}.md").render(
        cmem=command,
        vault_line=vault_line,
        agent_line=_AGENT_LINES[language][agent],
    )
    return text.rstrip("\n") + "\n"
