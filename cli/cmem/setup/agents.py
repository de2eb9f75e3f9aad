"""`cmem agent-instructions` (SPEC §7, "after a complex task"): the text an agent needs in its
instructions file — read `cmem context` at the start, capture with `cmem note`, ask the user
before converging after a complex task, never touch the archive. The texts are package data
(`prompts/agent-instructions.{en,zh}.md`); this module fills in the agent and the vault."""

from __future__ import annotations

import shlex

from cmem.resources import PromptTemplate
from cmem.vault.layers import Vault

AGENT_FILES = {"claude-code": "CLAUDE.md", "codex": "AGENTS.md", "generic": "AGENTS.md"}

_AGENT_LINES = {
    "en": {
        "claude-code": "\nThis text belongs in `CLAUDE.md`. To converge when a Claude Code session ends (only when a pass is due,\n"
        "in the background), the user can run `cmem hook install --agent claude-code` in the project.\n",
        "codex": "\nThis text belongs in `AGENTS.md`. Codex has no session-end hook: asking after a complex task (rule 3)\n"
        "and the user's shell hook (`cmem hook install`) are what converge memory.\n",
        "generic": "",
    },
    "zh": {
        "claude-code": "\n这段文字放在 `CLAUDE.md` 里。想在 Claude Code 会话结束时自动收敛（只在该收敛时、在后台进行），\n"
        "用户可以在项目里运行 `cmem hook install --agent claude-code`。\n",
        "codex": "\n这段文字放在 `AGENTS.md` 里。Codex 没有会话结束钩子：靠复杂任务后的询问（第 3 条）和用户的\n"
        "shell 钩子（`cmem hook install`）来收敛记忆。\n",
        "generic": "",
    },
}


def agent_instructions(agent: str, lang: str | None, vault: Vault | None) -> str:
    language = lang or (vault.config.language if vault is not None else "en")
    if language not in _AGENT_LINES:
        language = "en"
    if vault is not None:
        root = str(vault.root.resolve())
        command = f"cmem --vault {shlex.quote(root)}"
        vault_line = (
            f" It is at `{root}`; the commands below name it, so they work from any folder."
            if language == "en"
            else f"它在 `{root}`；下面的命令都带着这个路径，在任何目录下都能用。"
        )
    else:
        command = "cmem"
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
