"""One rulebook (docs/design.md §5): the prompts (zh and en), the validator and the examples agree.

- every rule the validator rejects by is `converge/validator/rules.py`'s, by number — never a bare string;
- both prompts state every rule under its number, with an example (`E.g. `…``) that is a piece
  of the prompt's own example reply;
- that example reply, written against the vault the prompt describes, validates with no error.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from cmem.converge.prompt import instructions
from cmem.converge.validator import rules
from cmem.converge.validator.response import parse_response
from cmem.converge.validator.validate import PassContext, validate_response
from cmem.vault.config import load_config
from cmem.vault.layers import Vault
from support import write_files

ROOT = Path(__file__).resolve().parents[2]
CONVERGE = ROOT / "cli/cmem/converge/validator"
# the validator: the reading of a reply, one module per rule's idea, the parser
SOURCES = [
    CONVERGE / "reply_reading.py",
    *sorted(CONVERGE.glob("check_*.py")),
    CONVERGE / "response.py",
]

NOTES = {
    "en": {
        "2026-11-20 journal.md": "Push him to act rather than encourage him. Give him a nudge when he stalls.\n"
        "He wants to be pushed to act. Looking for a backend job in Beijing.\n"
        "Bluefin uses bun as its package manager; the sync is on Mondays.\n",
        "2026-11-28 notes.md": "# 28 Nov\nActually I'm after an AI-agent internship in Shenzhen now\nMeh, rainy day\n"
        "Started a Go course, Saturday mornings\n",
        "2026-11-08 notes.md": "Switched Bluefin back to pnpm\nFrom next week the Bluefin sync moves to Thursdays\n",
        "go errors article.md": "---\nsource: https://example.com/go-errors\n---\n"
        "Go returns errors as values rather than throwing them.\n",
        "idea - svelte.md": "maybe svelte?\n",
    },
    "zh": {
        "2026-11-20 日记.md": "推他动手而非给鼓励。他卡住时推他一把。希望被推着动手。在找北京后端实习。"
        "Bluefin 用 bun 管理依赖，同步在周一。\n",
        "2026-11-28 随手记.md": "# 11 月 28 日\n其实我现在想找深圳的 AI Agent 实习\n下雨，烦\n开始上 Go 课程，周六上午\n",
        "2026-11-08 随手记.md": "Bluefin 又换回 pnpm 了\n下周起 Bluefin 的同步改到周四\n",
        "go 错误处理文章.md": "---\nsource: https://example.com/go-errors\n---\n"
        "Go 把错误当作值返回，而不是抛出。\n",
        "idea - svelte.md": "也许试试 svelte？\n",
    },
}
BEFORE = ("converged/core/profile.md", "converged/topics/bluefin.md")


def _rule_args(path: Path) -> list[tuple[int, ast.expr]]:
    """The rule argument of every rejection in a module: `reply.error(file, line, RULE, …)` and
    `Issue(file, line, RULE, …)` appended to `errors`."""
    tree = ast.parse(path.read_text("utf-8"))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "error" and len(node.args) >= 3:
            if isinstance(func.value, ast.Name) and func.value.id in ("self", "reply"):
                rule = node.args[2]
                # `A if … else B`: each of the two is a rule
                found += (
                    [(node.lineno, r) for r in (rule.body, rule.orelse)]
                    if isinstance(rule, ast.IfExp)
                    else [(node.lineno, rule)]
                )
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "append"
            and isinstance(func.value, ast.Attribute)
            and func.value.attr == "errors"
        ):
            for arg in node.args:
                if isinstance(arg, ast.Call) and getattr(arg.func, "id", "") == "Issue":
                    found.append((node.lineno, arg.args[2]))
    return found


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_every_rejection_cites_a_rule_of_the_rulebook(path):
    args = _rule_args(path)
    # a module of warnings only (the invention check) rejects nothing
    assert args or "reply.warn(" in path.read_text("utf-8"), f"no rejection found in {path.name}"
    names = {
        name
        for name, value in vars(rules).items()
        if isinstance(value, str) and value in rules.RULES
    }
    for line, arg in args:
        if isinstance(arg, ast.Name) and arg.id == "rule":
            continue  # `error(self, file, line, rule, message)` passes its argument on
        assert isinstance(arg, ast.Name) and arg.id in names, (
            f"{path.name}:{line}: a rejection cites {ast.unparse(arg)}, not a rule of converge/validator/rules.py"
        )


def test_the_validators_registry_is_keyed_by_the_rulebook():
    """Each check `validate_response` runs is registered under the rule it checks (a number of
    the rulebook) or the warning it gives (a word of `rules.WARNINGS`), and checks it."""
    from cmem.converge.validator import validate

    assert _rule_args(CONVERGE / "check_sources.py")  # the turn citations' check
    for registry in (validate.CHANGE_RULES, validate.REPLY_RULES):
        assert registry and all(key in rules.RULES or key in rules.WARNINGS for key in registry)
    assert len(set(validate.CHANGE_RULES) | set(validate.REPLY_RULES)) == len(
        validate.CHANGE_RULES
    ) + len(validate.REPLY_RULES)


def _before(text: str, path: str = BEFORE[0]) -> str:
    """A file as the prompt's example shows it before the pass: the block that starts a line
    (the rules quote its opening tag too, inline), the first one for its path."""
    start = re.search(rf'^<file path="{path}">$', text, re.MULTILINE).end() + 1
    return text[start : text.index("</file>", start)]


def _vault(root: Path, language: str) -> Vault:
    (root / ".cmem").mkdir(parents=True)
    (root / ".cmem" / "config.yaml").write_text(f"language: {language}\n", encoding="utf-8")
    for folder in ("converged/core", "converged/topics", "archive"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    return Vault(root=root, config=load_config(root))


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_prompt_states_every_rule_by_its_number_with_an_example(tmp_path, language):
    text = instructions(_vault(tmp_path / "v", language))
    reply = text[text.rindex("<convergence>") :]
    before = _before(text)
    for number in rules.RULES:
        match = re.search(rf"^{number}\. (.+?)(?=^\d+\. |^# )", text, re.MULTILINE | re.DOTALL)
        assert match, f"rule {number} is not stated in the {language} prompt"
        body = match.group(1)
        example = re.search(r"(?:E\.g\.|例：)\s*`([^`]+)`", body)
        assert example, f"rule {number} of the {language} prompt has no example"
        fragment = " ".join(example.group(1).split())
        assert fragment in " ".join(reply.split()) or fragment in " ".join(before.split()), (
            f"the example of rule {number} ({fragment!r}) is not in the {language} example reply"
        )


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_prompts_example_reply_validates(tmp_path, language):
    root = tmp_path / "v"
    vault = _vault(root, language)
    text = instructions(vault)
    before = {path: _before(text, path) for path in BEFORE}
    write_files(root, {**before, **NOTES[language]})
    vault = Vault(root=root, config=load_config(root))
    names = list(NOTES[language])
    selected = [name for name in names if "11-20" not in name]
    article = next(name for name in names if "go " in name)
    context = PassContext(
        pass_date="2026-11-29",
        selected=selected,
        originals=dict(before),
        note_names=vault.note_names(),
        source_texts={name.removesuffix(".md"): NOTES[language][name] for name in names},
        line_counts={name: NOTES[language][name].count("\n") + 1 for name in selected},
        quoted={article.removesuffix(".md"): "a web clip"},  # rule 16 holds for it
    )
    reply = text[text.rindex("<convergence>") :]
    result = validate_response(vault, parse_response(reply), context)
    assert not result.errors, "\n".join(str(e) for e in result.errors)
    assert sorted(result.writes) == [*BEFORE, "converged/topics/go-course.md"]
    assert not [w for w in result.warnings if w.rule == "invention"], result.warnings
    assert {entry.note for entry in result.converged} == set(selected[:3])
    partly = [d for d in result.deferred if d.lines]
    assert [d.lines for d in partly] == [(3,)]
    assert len(result.merged) >= 2, result.merged


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_rejection_names_the_rule_as_the_prompt_numbers_it(tmp_path, language):
    """A reply that drops a statement silently is rejected by rule 4, and the prompt's rule 4 is
    the one about losing nothing."""
    root = tmp_path / "v"
    vault = _vault(root, language)
    text = instructions(vault)
    before = _before(text)
    write_files(root, {"converged/core/profile.md": before, **NOTES[language]})
    vault = Vault(root=root, config=load_config(root))
    kept = before.splitlines()
    cut = "\n".join(line for line in kept if "Beijing" not in line and "北京" not in line) + "\n"
    note = next(name for name in NOTES[language] if "11-28" in name)
    reply = (
        f'<convergence>\n<file path="converged/core/profile.md">\n{cut}</file>\n'
        f'<converged note="{note}" into="converged/core/profile.md"/>\n</convergence>\n'
    )
    context = PassContext(
        pass_date="2026-11-29",
        selected=[note],
        originals={"converged/core/profile.md": before},
        note_names=vault.note_names(),
    )
    result = validate_response(vault, parse_response(reply), context)
    assert [e.rule for e in result.errors if "gone" in e.message] == [rules.NOTHING_LOST]
    assert "(rule 4)" in str(result.errors[0])
    stated = re.search(r"^4\. (.*)$", text, re.MULTILINE).group(1)
    assert stated.startswith(("Nothing is lost.", "不丢东西。"))
