"""The validator (docs/design.md §5): every rule alone, then a corpus of hostile and valid replies.

The validator only reads; each test checks the vault is byte-identical afterwards."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cmem.converge.validator.response import Issue, parse_response
from cmem.converge.validator.validate import (
    PassContext,
    Validation,
    format_issues,
    validate_response,
    word_tokens,
)
from cmem.vault.config import load_config
from cmem.vault.layers import Vault
from support import TESTS, snapshot

REPLIES = TESTS / "replies"
PASS_DATE = "2026-11-29"
PROFILE = "converged/core/profile.md"
JOBS = "converged/topics/job-search.md"
NOTE = "2026-11-28 随手记.md"
IDEA = "idea - svelte.md"

FRONTMATTER = """---
summary: 我是谁，想被怎样帮助
importance: 8
owner: me  # a user's own key: it must survive every rewrite
tags: [profile]
---
"""
S1 = "- 推他动手而非给鼓励（来源：[[2026-11-20 日记]]）"
S2 = "- 在找北京后端实习（更新于 2026-10-01，原为：想读研）（来源：[[2026-11-20 日记]]）"
S3 = "- 喜欢用 Python 写脚本（来源：[[2026-11-20 日记]]）"
S4 = "- 早上效率最高，下午容易分心（来源：[[2026-11-20 日记]]）"
S5 = "- 多推推他（来源：[[2026-11-20 日记]]）"
NEW = "- 以后都用 uv 管理 Python 环境（来源：[[2026-11-28 随手记]]）"


def profile(*lines: str, frontmatter: str = FRONTMATTER) -> str:
    return frontmatter + "# Profile\n\n" + "\n".join(lines) + "\n"


PROFILE_TEXT = profile(S1, S2, S3, S4, S5)
JOBS_TEXT = "---\nsummary: 找实习\n---\n# 找实习\n\n- 简历投了三家公司（来源：[[2026-11-20 日记]]）\n- 找北京的后端实习（来源：[[2026-11-20 日记]]）\n"
NOTE_TEXT = (
    "其实不是北京，我决定改找深圳的 AI Agent 实习。\n以后都用 uv 管理 Python 环境，不要再用 pip。\n"
)
IDEA_TEXT = "也许可以试试 Svelte？\n"
DIARY_TEXT = "今天想了想：推他动手而非给鼓励。在找北京后端实习。喜欢用 Python 写脚本。早上效率最高，下午容易分心。多推推他。简历投了三家公司。\n"
FACTS = "converged/topics/facts.md"
FACTS_TEXT = """# Facts

- Uses Python 3.12 for scripts (source: [[2026-11-20 日记]])
- Salary expectation ≥ €60k (source: [[2026-11-20 日记]])
- I live in Berlin. (source: [[2026-11-20 日记]])
- Freezer alarm at -5 °C (source: [[2026-11-20 日记]])
"""


REPLY_VAULT_FILES = {
    PROFILE: PROFILE_TEXT,
    JOBS: JOBS_TEXT,
    FACTS: FACTS_TEXT,
    NOTE: NOTE_TEXT,
    IDEA: IDEA_TEXT,
    "archive/2026-11/2026-11-20 日记.md": DIARY_TEXT,
    "archive/ARCHIVE-CHECKLIST.md": "# Archive checklist\n",
    "private/secrets.md": "- unmanaged\n",
}
REPLY_VAULT_CONFIG = "resident_max_tokens: 300\nsituational_max_tokens: 400\n"


def build_reply_vault(root: Path, outside: Path) -> tuple[Vault, PassContext]:
    """The vault every reply in tests/replies/ is written against, and the pass's context (also
    used by bench/hostile_by_rule.py)."""
    outside.mkdir(parents=True, exist_ok=True)
    (outside / "target.md").write_text("- outside the vault\n", encoding="utf-8")
    (root / ".cmem").mkdir(parents=True)
    (root / ".cmem" / "config.yaml").write_text(REPLY_VAULT_CONFIG, encoding="utf-8")
    for folder in ("converged/core", "converged/topics", "archive"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    for rel, text in REPLY_VAULT_FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    os.symlink(outside, root / "converged/topics/escape")
    os.symlink(outside / "target.md", root / "converged/topics/linked.md")
    vault = Vault(root=root, config=load_config(root))
    ctx = PassContext(
        pass_date=PASS_DATE,
        selected=[NOTE, IDEA],
        originals={PROFILE: PROFILE_TEXT, JOBS: JOBS_TEXT},
        note_names=vault.note_names(),
        source_texts={
            "2026-11-28 随手记": NOTE_TEXT,
            "idea - svelte": IDEA_TEXT,
            "2026-11-20 日记": DIARY_TEXT,
        },
    )
    return vault, ctx


@pytest.fixture
def reply_vault(tmp_path):
    """The vault every reply in tests/replies/ is written against, and the pass's context."""
    return build_reply_vault(tmp_path / "vault1", tmp_path / "outside")


def run(vault: Vault, ctx: PassContext, text: str) -> Validation:
    before = snapshot(vault.root, vault.root.parent / "outside", folders=True)
    result = validate_response(vault, parse_response(text.replace("{PASS_DATE}", PASS_DATE)), ctx)
    assert snapshot(vault.root, vault.root.parent / "outside", folders=True) == before, (
        "validation must not write"
    )
    return result


def reply(*blocks: str, tail: str | None = None) -> str:
    """A reply of these file blocks that accounts for the pass's notes (rule 7): the note is
    converged when a block cites it, else deferred."""
    if tail is None:
        cited = "[[2026-11-28 随手记]]" in "".join(blocks)
        first = (
            f'<converged note="{NOTE}" into="{PROFILE}"/>\n'
            if cited
            else f'<deferred note="{NOTE}" reason="nothing to keep"/>\n'
        )
        tail = first + f'<deferred note="{IDEA}" reason="vague"/>\n'
    return "<convergence>\n" + "".join(blocks) + tail + "</convergence>\n"


NOTE_ONLY = f'<converged note="{NOTE}" into="{PROFILE}"/>\n'


def block(path: str, content: str) -> str:
    return f'<file path="{path}">\n{content}</file>\n'


def rules(issues: list[Issue]) -> list[str]:
    return [issue.rule for issue in issues]


# --- the corpus ------------------------------------------------------------------------

# reply file → (rule, the file the error names, a fragment of its message)
HOSTILE = {
    "path-dotdot.txt": ("1", "response", "'..'"),
    "path-archive-dotdot.txt": ("1", "response", "'..'"),
    "path-home-bashrc.txt": ("1", "response", "'..'"),
    "path-absolute.txt": ("1", "response", "absolute"),
    "path-windows-drive.txt": ("1", "response", "absolute"),
    "path-backslash.txt": ("1", "response", "backslash"),
    "path-windows-dotdot.txt": ("1", "response", "backslash"),
    "path-git-config.txt": ("1", "response", "hidden component"),
    "path-git-hook.txt": ("1", "response", "hidden component"),
    "path-obsidian-plugin.txt": ("1", "response", "hidden component"),
    "path-cmem-config.txt": ("1", "response", "hidden component"),
    "path-hidden-in-layer.txt": ("1", "response", "hidden component"),
    "path-into-archive.txt": ("1", "response", "outside the convergent layer"),
    "path-divergent-root.txt": ("1", "response", "outside the convergent layer"),
    "path-unmanaged-folder.txt": ("1", "response", "outside the convergent layer"),
    "path-symlink.txt": ("1", "response", "symbolic link converged/topics/escape"),
    "path-symlink-file.txt": ("1", "response", "symbolic link converged/topics/linked.md"),
    "path-lookalike-slash.txt": ("1", "response", "U+2215"),
    "path-fullwidth-slash.txt": ("1", "response", "U+FF0F"),
    "path-lookalike-dot.txt": ("1", "response", "U+2024"),
    "path-entity-lookalike.txt": ("1", "response", "U+2215"),
    "path-control-char.txt": ("1", "response", "U+001B"),
    "path-not-markdown.txt": ("1", "response", "not a Markdown file"),
    "path-empty.txt": ("1", "response", "is empty"),
    "no-source.txt": ("3", PROFILE, "no source"),
    "unknown-source.txt": ("3", PROFILE, "[[2026-11-30 不存在的笔记]] resolves to no note"),
    "lost-source.txt": ("3", PROFILE, "lost its source [[2026-11-20 日记]]"),
    "prompt-injection.txt": ("3", PROFILE, "[[SYSTEM]] resolves to no note"),
    "silent-drop.txt": ("4", PROFILE, "多推推他"),
    "changed-without-trace.txt": ("4", PROFILE, "在找北京后端实习"),
    "lost-trace.txt": ("4", PROFILE, "dated 2026-10-01"),
    "trace-wrong-date.txt": ("5", PROFILE, "dated 2026-11-01"),
    "trace-history-rewritten.txt": ("5", PROFILE, "dated 2025-01-01"),
    "resident-over-cap.txt": ("6", PROFILE, "compress"),
    "converged-unknown-note.txt": ("7", "response", "2026-11-27 别的笔记.md"),
    "deferred-archived-note.txt": ("7", "response", "archive/2026-11/2026-11-20 日记.md"),
    "converged-and-deferred.txt": ("7", "response", "both converged and deferred"),
    "converged-into-missing.txt": ("7", "response", "neither in the reply nor in the vault"),
    "mass-drop.txt": ("8", PROFILE, "2 of its 5 statements"),
    "lost-frontmatter-key.txt": ("2", PROFILE, "lost the key owner"),
    "broken-frontmatter.txt": ("2", PROFILE, "not valid YAML"),
    "frontmatter-not-closed.txt": ("2", PROFILE, "not closed"),
    "empty.txt": ("14", "response", "empty"),
    "garbage.txt": ("14", "response", "no <convergence> element"),
    "json-instead.txt": ("14", "response", "no <convergence> element"),
    "truncated-file-block.txt": ("14", "response", "no closing </file>"),
    "truncated-after-file.txt": ("14", "response", "without </convergence>"),
    "unclosed-file-before-next.txt": ("14", "response", "no closing </file> line before line"),
    "closing-tag-inline.txt": ("14", "response", "no closing </file>"),
    "duplicate-file-blocks.txt": ("14", "response", "a second file block"),
    "dropped-unclosed.txt": ("14", "response", "no closing </dropped>"),
    "nul-bytes.txt": ("15", PROFILE, "NUL"),
    "terminal-escape.txt": ("15", PROFILE, "U+001B"),
    "empty-file-content.txt": ("15", PROFILE, "empty"),
    "rest-unchanged-elision.txt": ("15", PROFILE, "elision"),
    "elision-comment-zh.txt": ("15", PROFILE, "elision"),
    # issue 11, item by item: bounded reading (content), every added line accounted for and YAML
    # parsed safely (9), loss per statement (4, 8, 10), changes are changes (4), provenance (11),
    # look-alike paths (12), caps (13), several targets (7)
    "nesting-deep-traces.txt": ("15", PROFILE, "nests brackets"),
    "nesting-deep-traces-zh.txt": ("15", PROFILE, "nests brackets"),
    "too-many-file-blocks.txt": ("13", "response", "file blocks"),
    "elision-ellipsis-item.txt": ("15", PROFILE, "elision"),
    "elision-dots-after-text.txt": ("15", PROFILE, "elision"),
    "comment-instruction.txt": ("9", PROFILE, "HTML comment"),
    "comment-multiline.txt": ("9", PROFILE, "HTML comment"),
    "heading-instruction.txt": ("9", PROFILE, "heading"),
    "heading-link.txt": ("9", PROFILE, "holds a link"),
    "heading-markdown-link.txt": ("9", PROFILE, "holds a link"),
    "heading-url.txt": ("9", PROFILE, "holds a URL"),
    "heading-too-long.txt": ("9", PROFILE, "characters long"),
    "heading-ignore-zh.txt": ("9", PROFILE, "instruction"),
    "heading-assistant-must.txt": ("9", PROFILE, "instruction"),
    "heading-code.txt": ("9", PROFILE, "holds code"),
    "heading-html.txt": ("9", PROFILE, "holds HTML"),
    "fence-shell.txt": ("9", PROFILE, "code fence"),
    "fence-tilde.txt": ("9", PROFILE, "code fence"),
    "raw-html-script.txt": ("9", PROFILE, "raw HTML"),
    "raw-html-in-sourced-statement.txt": ("9", PROFILE, "raw HTML"),
    "raw-html-details.txt": ("9", PROFILE, "raw HTML"),
    "frontmatter-instructions-key.txt": ("9", PROFILE, "adds the key 'instructions'"),
    "frontmatter-user-key-changed.txt": ("9", PROFILE, "changes the key 'owner'"),
    "frontmatter-user-key-comment-changed.txt": ("9", PROFILE, "changes the key 'owner'"),
    "frontmatter-importance-changed.txt": ("9", PROFILE, "changes the key 'importance'"),
    "frontmatter-summary-instruction.txt": ("9", PROFILE, "value of 'summary'"),
    "frontmatter-summary-url.txt": ("9", PROFILE, "holds a URL"),
    "frontmatter-tags-nested.txt": ("9", PROFILE, "nested"),
    "frontmatter-alias-link.txt": ("9", PROFILE, "holds a link"),
    "frontmatter-new-file-system-key.txt": (
        "9",
        "converged/topics/tools.md",
        "adds the key 'system'",
    ),
    "yaml-alias-bomb.txt": ("9", PROFILE, "anchor or alias"),
    "yaml-anchor-simple.txt": ("9", PROFILE, "anchor or alias"),
    "yaml-deep-nesting.txt": ("9", PROFILE, "nests deeper"),
    "yaml-bomb-new-file.txt": ("9", "converged/topics/tools.md", "anchor or alias"),
    "drop-whole-small-file.txt": ("8", JOBS, "2 of its 2"),
    "blank-unknown.txt": ("8", PROFILE, "blanked"),
    "blank-unknown-zh.txt": ("8", PROFILE, "blanked"),
    "blank-na-small-file.txt": ("8", JOBS, "1 of its 2"),
    "move-resident-to-topic.txt": ("10", PROFILE, "out of the resident layer"),
    "move-all-resident-out.txt": ("10", PROFILE, "out of the resident layer"),
    "move-preference-to-jobs.txt": ("10", PROFILE, "out of the resident layer"),
    "trace-nested-in-unrelated.txt": ("4", PROFILE, "早上效率最高"),
    "trace-nested-en.txt": ("4", FACTS, "I live in Berlin"),
    "change-question-mark.txt": ("4", FACTS, "I live in Berlin"),
    "change-currency-and-sign.txt": ("4", FACTS, "Salary expectation"),
    "change-comparison-only.txt": ("4", FACTS, "Salary expectation"),
    "change-decimal-point.txt": ("4", FACTS, "Uses Python 3.12"),
    "change-negative-number.txt": ("4", FACTS, "Freezer alarm"),
    "change-question-mark-zh.txt": ("4", PROFILE, "在找北京后端实习"),
    "source-memory-file.txt": ("11", PROFILE, "[[profile]] is converged/core/profile.md"),
    "source-topic-file.txt": ("11", PROFILE, "not a note"),
    "source-memory-path.txt": ("11", PROFILE, "not a note"),
    "source-memory-other-case.txt": ("11", PROFILE, "not a note"),
    "source-checklist.txt": ("3", PROFILE, "[[ARCHIVE-CHECKLIST]] resolves to no note"),
    "path-case-twin.txt": ("12", "response", "only by case"),
    "path-cyrillic-o.txt": ("12", "response", "look-alike"),
    "path-greek-omicron.txt": ("12", "response", "look-alike"),
    "path-fullwidth-letters.txt": ("12", "response", "look-alike"),
    "path-digit-for-letter.txt": ("12", "response", "look-alike"),
    "path-nfd.txt": ("12", "response", "NFC"),
    "path-named-like-archived-note.txt": (
        "12",
        "response",
        "named like the note [[2026-11-20 日记]]",
    ),
    "path-named-like-divergent-note.txt": (
        "12",
        "response",
        "named like the note [[idea - svelte]]",
    ),
    "path-two-new-lookalikes.txt": ("12", "response", "only by case"),
    "topic-over-cap-new-file.txt": ("13", "converged/topics/tools.md", "situational_max_tokens"),
    "topic-over-cap-grown.txt": ("13", JOBS, "situational_max_tokens"),
    "converged-into-list-missing.txt": ("7", "response", "neither in the reply nor in the vault"),
    "converged-into-list-dotdot.txt": ("7", "response", "'..'"),
    "converged-repeated-bad-target.txt": ("7", "response", "hidden component"),
}

VALID_PROFILE = profile(
    S1,
    "- 在找深圳 AI Agent 实习（更新于 2026-11-29，原为：在找北京后端实习（更新于 2026-10-01，原为：想读研））（来源：[[2026-11-28 随手记]]）",
    S3,
    S4,
    "- 以后都用 uv 管理 Python 环境，不再用 pip（来源：[[2026-11-28 随手记]]）",
)
# reply file → (exact writes, converged notes, deferred notes)
VALID = {
    "correction-with-trace.txt": ({PROFILE: VALID_PROFILE}, [NOTE], [IDEA]),
    "new-topic-file.txt": (
        {
            "converged/topics/tools.md": "---\nsummary: tools I use\n---\n# Tools\n\n- 以后都用 uv 管理 Python 环境，不要再用 pip（来源：[[2026-11-28 随手记]]）\n"
        },
        [NOTE],
        [IDEA],
    ),
    "crlf-single-quotes.txt": (
        {
            JOBS: "---\nsummary: 找实习\n---\n# 找实习\n\n- 简历投了三家公司（来源：[[2026-11-20 日记]]）\n- 改找深圳的 AI Agent 实习（更新于 2026-11-29，原为：找北京的后端实习）（来源：[[2026-11-28 随手记]]）\n"
        },
        [NOTE],
        [IDEA],
    ),
    "only-deferred.txt": ({}, [], [NOTE, IDEA]),
    "converged-into-several.txt": (
        {
            PROFILE: profile(S1, S2, S3, S4, S5, NEW),
            JOBS: JOBS_TEXT + "- 改找深圳的 AI Agent 实习（来源：[[2026-11-28 随手记]]）\n",
        },
        [NOTE],
        [IDEA],
    ),
    "converged-repeated-elements.txt": (
        {
            PROFILE: profile(S1, S2, S3, S4, S5, NEW),
            JOBS: JOBS_TEXT + "- 改找深圳的 AI Agent 实习（来源：[[2026-11-28 随手记]]）\n",
        },
        [NOTE],
        [IDEA],
    ),
}


def test_the_corpus_and_its_expectations_match():
    assert sorted(p.name for p in (REPLIES / "hostile").glob("*.txt")) == sorted(HOSTILE)
    assert len(HOSTILE) >= 30
    assert sorted(p.name for p in (REPLIES / "valid").glob("*.txt")) == sorted(VALID)
    # the bytes these replies test must survive checkouts (tests/replies/.gitattributes)
    assert b"\r\n" in (REPLIES / "valid" / "crlf-single-quotes.txt").read_bytes()
    assert b"\x00" in (REPLIES / "hostile" / "nul-bytes.txt").read_bytes()


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_reply_is_rejected(reply_vault, name):
    vault, ctx = reply_vault
    rule, file, fragment = HOSTILE[name]
    result = run(vault, ctx, (REPLIES / "hostile" / name).read_bytes().decode("utf-8"))
    assert not result.ok and result.writes == {} and result.bases == {}
    matching = [
        issue
        for issue in result.errors
        if issue.rule == rule and issue.file == file and fragment in issue.message
    ]
    assert matching, (
        f"expected rule {rule} on {file} with {fragment!r}, got:\n{format_issues(result.errors)}"
    )


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_reply_is_accepted(reply_vault, name):
    vault, ctx = reply_vault
    writes, converged, deferred = VALID[name]
    result = run(vault, ctx, (REPLIES / "valid" / name).read_bytes().decode("utf-8"))
    assert result.errors == [], format_issues(result.errors)
    assert result.writes == writes
    assert [entry.note for entry in result.converged] == converged
    assert [entry.note for entry in result.deferred] == deferred
    assert all(result.bases[path] == ctx.originals.get(path) for path in writes)


def test_valid_reply_warnings_name_unknown_parts(reply_vault):
    vault, ctx = reply_vault
    result = run(
        vault, ctx, (REPLIES / "valid" / "crlf-single-quotes.txt").read_bytes().decode("utf-8")
    )
    messages = " ".join(issue.message for issue in result.warnings)
    assert "'confidence'" in messages and "<summary>" in messages
    assert result.deferred[0].reason == '"maybe" & a question'


# --- rule by rule ----------------------------------------------------------------------


def test_issue_reads_like_a_compiler_message():
    assert (
        str(Issue(PROFILE, 4, "3", "statement has no source"))
        == f"{PROFILE}:4: statement has no source (rule 3)"
    )
    assert str(Issue(PROFILE, 0, "content", "empty")) == f"{PROFILE}: empty (content)"
    assert format_issues([Issue("response", 2, "format", "x")]) == "- response:2: x (format)"


def test_unchanged_file_is_not_written(reply_vault):
    vault, ctx = reply_vault
    result = run(vault, ctx, reply(block(PROFILE, PROFILE_TEXT)))
    assert result.ok and result.writes == {}


def test_new_content_ends_with_one_newline(reply_vault):
    vault, ctx = reply_vault
    result = run(vault, ctx, reply(block(PROFILE, profile(S1, S2, S3, S4, S5, NEW) + "\n\n\n")))
    assert result.ok, format_issues(result.errors)
    assert result.writes[PROFILE] == profile(S1, S2, S3, S4, S5, NEW)


@pytest.mark.parametrize(
    "path",
    [
        "converged/core/../core/profile.md",
        "converged//core/profile.md",
        "./converged/core/profile.md",
        "converged/core/profile.MD",
        "converged/core/pro\u200bfile.md",
        "converged/core/profile\uff0emd",
        "converged/core/ profile.md",
        "converged/core/x.sync-conflict-20261128-101010-ABCDEF.md",
        "converged",
        "converged/core",
        "archive/x.md",
        "x.md",
    ],
)
def test_rule1_paths_are_refused(reply_vault, path):
    vault, ctx = reply_vault
    result = run(vault, ctx, reply(block(path, NEW + "\n")))
    assert "1" in rules(result.errors), format_issues(result.errors)


def test_rule1_a_folder_is_not_a_file(reply_vault):
    vault, ctx = reply_vault
    (vault.root / "converged/topics/sub.md").mkdir()
    result = run(vault, ctx, reply(block("converged/topics/sub.md", NEW + "\n")))
    assert any(i.rule == "1" and "is a folder" in i.message for i in result.errors)


def test_rule1_a_fifo_is_refused_without_opening_it(reply_vault):
    vault, ctx = reply_vault
    os.mkfifo(vault.root / "converged/core/pipe.md")
    result = run(vault, ctx, reply(block("converged/core/pipe.md", NEW + "\n")))
    assert any(i.rule == "1" and "not a regular file" in i.message for i in result.errors)


def test_rule1_a_linked_layer_folder_is_refused(make_vault, tmp_path):
    real = tmp_path / "elsewhere"
    real.mkdir()
    root = make_vault({NOTE: NOTE_TEXT})
    os.rmdir(root / "converged/topics")
    os.symlink(real, root / "converged/topics")
    vault = Vault(root=root, config=load_config(root))
    ctx = PassContext(PASS_DATE, [NOTE], {}, vault.note_names())
    result = validate_response(
        vault, parse_response(reply(block("converged/topics/new.md", NEW + "\n"), tail="")), ctx
    )
    assert any(
        i.rule == "1" and "symbolic link converged/topics" in i.message for i in result.errors
    )
    assert not (real / "new.md").exists()


def test_rule1_new_file_in_a_new_subfolder_is_fine(reply_vault):
    vault, ctx = reply_vault
    result = run(
        vault,
        ctx,
        reply(
            block("converged/topics/tools/python.md", NEW + "\n"),
            tail=f'<converged note="{NOTE}" into="converged/topics/tools/python.md"/>\n<deferred note="{IDEA}" reason="vague"/>\n',
        ),
    )
    assert result.ok, format_issues(result.errors)
    assert result.writes == {"converged/topics/tools/python.md": NEW + "\n"}
    assert result.bases == {"converged/topics/tools/python.md": None}


def test_rule2_frontmatter_keys_survive(reply_vault):
    vault, ctx = reply_vault
    lost = profile(S1, S2, S3, S4, S5, frontmatter="---\nsummary: x\nimportance: 8\n---\n")
    result = run(vault, ctx, reply(block(PROFILE, lost)))
    (issue,) = [i for i in result.errors if i.rule == "2"]
    assert "owner, tags" in issue.message and issue.line == 1
    added = profile(
        S1, S2, S3, S4, S5, frontmatter=FRONTMATTER.replace("tags:", "updated: 2026-11-29\ntags:")
    )
    assert run(vault, ctx, reply(block(PROFILE, added))).ok


def test_rule2_no_frontmatter_at_all_loses_keys(reply_vault):
    vault, ctx = reply_vault
    result = run(vault, ctx, reply(block(PROFILE, profile(S1, S2, S3, S4, S5, frontmatter=""))))
    assert any(
        i.rule == "2" and "summary, importance, owner, tags" in i.message for i in result.errors
    )


def test_rule2_broken_yaml_names_its_line(reply_vault):
    vault, ctx = reply_vault
    broken = profile(
        S1, S2, S3, S4, S5, frontmatter=FRONTMATTER.replace("importance: 8", "importance: [8")
    )
    (issue,) = [i for i in run(vault, ctx, reply(block(PROFILE, broken))).errors if i.rule == "2"]
    assert issue.line > 1 and "YAML" in issue.message


def test_rule2_current_file_with_broken_frontmatter_is_never_rewritten(reply_vault):
    vault, ctx = reply_vault
    ctx.originals[PROFILE] = "---\nsummary: [broken\n---\n" + S1 + "\n"
    result = run(vault, ctx, reply(block(PROFILE, "---\nsummary: fixed\n---\n" + S1 + "\n")))
    assert any(i.rule == "15" and "fix it by hand" in i.message for i in result.errors)


def test_rule3_new_statement_needs_a_resolving_source(reply_vault):
    vault, ctx = reply_vault
    result = run(
        vault,
        ctx,
        reply(
            block(PROFILE, profile(S1, S2, S3, S4, S5, "- 用 uv", "- 用 uv 2（来源：[[nowhere]]）"))
        ),
    )
    found = {(i.line, i.rule) for i in result.errors}
    assert found == {(14, "3"), (15, "3")}


@pytest.mark.parametrize(
    "link",
    [
        "[[2026-11-28 随手记.md]]",
        "[[2026-11-28 随手记|the note]]",
        "[[2026-11-28 随手记#heading]]",
        "[[archive/2026-11/2026-11-20 日记]]",
        "[[2026-11/2026-11-20 日记]]",
        "[[IDEA - SVELTE]]",
    ],
)
def test_rule3_source_resolution_is_obsidian_like(reply_vault, link):
    vault, ctx = reply_vault
    result = run(
        vault,
        ctx,
        reply(
            block(
                PROFILE,
                profile(S1, S2, S3, S4, S5, f"- 以后都用 uv 管理 Python 环境（来源：{link}）"),
            )
        ),
    )
    assert result.ok, format_issues(result.errors)


@pytest.mark.parametrize("link", ["[[profile]]", "[[Job-Search]]", "[[converged/topics/facts]]"])
def test_rule11_a_memory_file_is_not_a_source(reply_vault, link):
    vault, ctx = reply_vault
    result = run(
        vault,
        ctx,
        reply(
            block(
                PROFILE,
                profile(S1, S2, S3, S4, S5, f"- 以后都用 uv 管理 Python 环境（来源：{link}）"),
            )
        ),
    )
    assert rules(result.errors) == ["11"] and "not a note" in result.errors[0].message


def test_rule3_english_source_format_is_understood(reply_vault):
    vault, ctx = reply_vault
    result = run(
        vault,
        ctx,
        reply(
            block(
                PROFILE,
                profile(S1, S2, S3, S4, S5, "- always use uv (source: [[2026-11-28 随手记]])"),
            )
        ),
    )
    assert result.ok, format_issues(result.errors)


def test_rule3_kept_statement_may_keep_a_broken_source(make_vault):
    root = make_vault({PROFILE: "- old fact (source: [[gone]])\n", NOTE: NOTE_TEXT})
    vault = Vault(root=root, config=load_config(root))
    ctx = PassContext(
        PASS_DATE, [NOTE], {PROFILE: "- old fact (source: [[gone]])\n"}, vault.note_names()
    )
    result = validate_response(
        vault,
        parse_response(
            reply(block(PROFILE, "- old fact (source: [[gone]])\n" + NEW + "\n"), tail=NOTE_ONLY)
        ),
        ctx,
    )
    assert result.ok, format_issues(result.errors)


def test_rule3_hand_written_statement_without_source_is_kept(make_vault):
    text = "- the user's own words, no source\n"
    root = make_vault({PROFILE: text, NOTE: NOTE_TEXT})
    vault = Vault(root=root, config=load_config(root))
    ctx = PassContext(PASS_DATE, [NOTE], {PROFILE: text}, vault.note_names())
    result = validate_response(
        vault, parse_response(reply(block(PROFILE, text + NEW + "\n"), tail=NOTE_ONLY)), ctx
    )
    assert result.ok, format_issues(result.errors)


def test_rule4_gone_statement_is_named_with_its_old_line(reply_vault):
    vault, ctx = reply_vault
    result = run(vault, ctx, reply(block(PROFILE, profile(S1, S2, S3, S5))))
    (issue,) = result.errors
    assert (issue.file, issue.line, issue.rule) == (PROFILE, 12, "4")
    assert "早上效率最高" in issue.message and "<dropped>" in issue.message


def test_rule4_dropped_entry_allows_removal(reply_vault):
    vault, ctx = reply_vault
    dropped = f'<dropped file="{PROFILE}" reason="merged">- 早上效率最高，下午容易分心（来源：[[2026-11-20 日记]]）</dropped>\n'
    result = run(vault, ctx, reply(block(PROFILE, profile(S1, S2, S3, S5)), dropped))
    assert result.ok, format_issues(result.errors)


def test_rule4_dropped_for_another_file_does_not_count(reply_vault):
    vault, ctx = reply_vault
    dropped = f'<dropped file="{JOBS}" reason="merged">早上效率最高，下午容易分心</dropped>\n'
    result = run(vault, ctx, reply(block(PROFILE, profile(S1, S2, S3, S5)), dropped))
    assert "4" in rules(result.errors)
    assert any("does not rewrite" in w.message for w in result.warnings)


def test_rule4_punctuation_and_annotations_do_not_count_as_change(reply_vault):
    vault, ctx = reply_vault
    reworded = "* 早上效率最高 下午容易分心 （来源：[[2026-11-20 日记]]）"
    result = run(vault, ctx, reply(block(PROFILE, profile(S1, S2, S3, reworded, S5))))
    assert result.ok, format_issues(result.errors)


def test_rule4_a_statement_moved_to_another_file_is_kept_and_reported(reply_vault):
    vault, ctx = reply_vault
    moved = "- 简历投了三家公司（来源：[[2026-11-20 日记]]）"
    jobs = JOBS_TEXT.replace(moved + "\n", "")
    resume = "converged/topics/resume.md"
    result = run(vault, ctx, reply(block(JOBS, jobs), block(resume, "# 简历\n\n" + moved + "\n")))
    assert result.ok, format_issues(result.errors)
    assert set(result.writes) == {JOBS, resume}
    assert result.moves == [{"statement": "简历投了三家公司", "from": JOBS, "to": [resume]}]


def test_rule10_moving_out_of_the_resident_layer_needs_allow_shrink(reply_vault):
    vault, ctx = reply_vault
    moved = JOBS_TEXT + "- 早上效率最高，下午容易分心（来源：[[2026-11-20 日记]]）\n"
    result = run(vault, ctx, reply(block(PROFILE, profile(S1, S2, S3, S5)), block(JOBS, moved)))
    assert [(i.rule, i.file, i.line) for i in result.errors] == [("10", PROFILE, 12)]
    assert "out of the resident layer" in result.errors[0].message
    ctx.allow_shrink = True
    result = run(vault, ctx, reply(block(PROFILE, profile(S1, S2, S3, S5)), block(JOBS, moved)))
    assert result.ok and result.moves == [
        {"statement": "早上效率最高，下午容易分心", "from": PROFILE, "to": [JOBS]}
    ]


def test_rule4_a_trace_in_another_file_quotes_it(reply_vault):
    vault, ctx = reply_vault
    changed = (
        JOBS_TEXT
        + f"- 改找深圳（更新于 {PASS_DATE}，原为：在找北京后端实习（更新于 2026-10-01，原为：想读研））（来源：[[2026-11-28 随手记]]）\n"
    )
    result = run(vault, ctx, reply(block(PROFILE, profile(S1, S3, S4, S5)), block(JOBS, changed)))
    assert result.ok, format_issues(result.errors)


def test_rule4_changing_a_statement_again_must_nest_its_old_trace(reply_vault):
    vault, ctx = reply_vault
    flat = f"- 在找深圳 AI Agent 实习（更新于 {PASS_DATE}，原为：在找北京后端实习）（来源：[[2026-11-28 随手记]]）"
    result = run(vault, ctx, reply(block(PROFILE, profile(S1, flat, S3, S4, S5))))
    assert [(i.rule, i.line) for i in result.errors] == [("4", 10)]
    assert "nested" in result.errors[0].message


def test_rule4_a_statement_changed_twice_in_one_pass_keeps_its_chain(reply_vault):
    """X → Y → Z in one pass (two notes, one after the other): Y was never in the file, so X nested
    under Y's trace is still the chain's own rewrite (the builtin engine writes this)."""
    vault, ctx = reply_vault
    twice = (
        f"- 在找深圳 AI Agent 实习（更新于 {PASS_DATE}，原为：在找深圳后端实习（更新于 {PASS_DATE}，"
        f"原为：在找北京后端实习（更新于 2026-10-01，原为：想读研）））（来源：[[2026-11-28 随手记]]）"
    )
    result = run(vault, ctx, reply(block(PROFILE, profile(S1, twice, S3, S4, S5))))
    assert result.ok, format_issues(result.errors)


def test_rule4_an_old_trace_quoting_the_words_is_not_a_rewrite(make_vault):
    """Only a trace this pass wrote may account for a removed statement."""
    text = "- B（更新于 2026-10-01，原为：A）（来源：[[2026-11-28 随手记]]）\n- A（来源：[[2026-11-28 随手记]]）\n"
    root = make_vault({PROFILE: text, NOTE: NOTE_TEXT})
    vault = Vault(root=root, config=load_config(root))
    ctx = PassContext(PASS_DATE, [NOTE], {PROFILE: text}, vault.note_names())
    result = validate_response(
        vault,
        parse_response(
            reply(block(PROFILE, text.split("\n")[0] + "\n" + NEW + "\n"), tail=NOTE_ONLY)
        ),
        ctx,
    )
    assert [(i.rule, i.line) for i in result.errors] == [("4", 2)]


def test_rule4_file_not_handed_to_the_pass_is_read_from_disk(reply_vault):
    vault, ctx = reply_vault
    del ctx.originals[JOBS]
    result = run(vault, ctx, reply(block(JOBS, "# 找实习\n\n" + NEW + "\n")))
    assert {i.rule for i in result.errors} == {"2", "4"}


def test_rule5_a_new_trace_is_dated_by_a_note_it_cites_or_the_pass(reply_vault):
    """The change came from 2026-11-28's note: its date or the pass's passes; any other date,
    and a date after the pass, is refused."""
    vault, ctx = reply_vault

    def changed(day: str) -> str:
        return f"- 在找深圳 AI Agent 实习（更新于 {day}，原为：在找北京后端实习（更新于 2026-10-01，原为：想读研））（来源：[[2026-11-28 随手记]]）"

    for day in ("2026-11-28", PASS_DATE):
        result = run(vault, ctx, reply(block(PROFILE, profile(S1, changed(day), S3, S4, S5))))
        assert result.ok, format_issues(result.errors)
    for day in ("2026-11-27", "2026-12-01"):
        result = run(vault, ctx, reply(block(PROFILE, profile(S1, changed(day), S3, S4, S5))))
        assert [(i.rule, i.line) for i in result.errors] == [("5", 10)], day
        assert PASS_DATE in result.errors[0].message and "2026-11-28" in result.errors[0].message


def test_rule5_a_moved_statement_keeps_its_old_trace_date(reply_vault):
    vault, ctx = reply_vault
    ctx.allow_shrink = True  # the move is out of the resident layer (rule 10)
    result = run(
        vault,
        ctx,
        reply(block(PROFILE, profile(S1, S3, S4, S5)), block(JOBS, JOBS_TEXT + S2 + "\n")),
    )
    assert result.ok, format_issues(result.errors)


def test_rule6_resident_cap(reply_vault):
    vault, ctx = reply_vault
    long = "- " + "以后都用 uv 管理 Python 环境" * 16 + "（来源：[[2026-11-28 随手记]]）"
    result = run(vault, ctx, reply(block(PROFILE, profile(S1, S2, S3, S4, S5, long))))
    (issue,) = [i for i in result.errors if i.rule == "6"]
    assert issue.file == PROFILE and "300" in issue.message and "compress" in issue.message


def test_rule6_counts_other_resident_files(reply_vault):
    vault, ctx = reply_vault
    (vault.root / "converged/core/methodology.md").write_text(
        "- " + "方法" * 80 + "（来源：[[2026-11-20 日记]]）\n", encoding="utf-8"
    )
    result = run(vault, ctx, reply(block(PROFILE, profile(S1, S2, S3, S4, S5, NEW))))
    assert "6" in rules(result.errors)


def test_rule6_already_over_cap_but_shrinking_or_untouched_is_a_warning(reply_vault):
    vault, ctx = reply_vault
    (vault.root / "converged/core/methodology.md").write_text(
        "- " + "方法" * 80 + "（来源：[[2026-11-20 日记]]）\n", encoding="utf-8"
    )
    untouched = run(
        vault,
        ctx,
        reply(
            block(JOBS, JOBS_TEXT + NEW + "\n"),
            tail=f'<converged note="{NOTE}" into="{JOBS}"/>\n<deferred note="{IDEA}" reason="x"/>\n',
        ),
    )
    assert untouched.ok and "6" in rules(untouched.warnings)
    dropped = f'<dropped file="{PROFILE}" reason="duplicate">多推推他</dropped>\n'
    shrinking = run(vault, ctx, reply(block(PROFILE, profile(S1, S2, S3, S4)), dropped))
    assert shrinking.ok and "6" in rules(shrinking.warnings)


def test_rule7_notes_match_by_path_or_name(reply_vault):
    vault, ctx = reply_vault
    tail = f'<converged note="[[2026-11-28 随手记]]" into="{PROFILE}"/>\n<deferred note="idea - svelte" reason="x"/>\n'
    result = run(vault, ctx, reply(block(PROFILE, profile(S1, S2, S3, S4, S5, NEW)), tail=tail))
    assert (
        result.ok
        and [c.note for c in result.converged] == [NOTE]
        and [d.note for d in result.deferred] == [IDEA]
    )


def test_rule7_unaccounted_notes_stay_pending_with_a_warning(reply_vault):
    """A note no element names was not judged: it is neither converged nor deferred (issue 43)."""
    vault, ctx = reply_vault
    result = run(
        vault,
        ctx,
        reply(
            block(PROFILE, profile(S1, S2, S3, S4, S5, NEW)),
            tail=f'<converged note="{NOTE}" into="{PROFILE}"/>\n',
        ),
    )
    assert result.ok and result.deferred == []
    assert [(w.file, w.rule) for w in result.warnings] == [(IDEA, "unaccounted")]
    assert "stays pending" in result.warnings[0].message


def test_rule7_a_reply_that_accounts_for_no_note_and_changes_nothing_is_rejected(reply_vault):
    vault, ctx = reply_vault
    for silent in (reply(tail=""), "<convergence>not valid</convergence>\n"):
        result = run(vault, ctx, silent)
        assert [(i.rule, i.file) for i in result.errors] == [("7", "response")]
        assert "none of the 2 notes" in result.errors[0].message
    # one note deferred, or one file changed, is an answer: the others stay pending
    assert run(vault, ctx, reply(tail=f'<deferred note="{IDEA}" reason="vague"/>\n')).ok
    changed = run(vault, ctx, reply(block(PROFILE, profile(S1, S2, S3, S4, S5, NEW)), tail=""))
    assert "7" not in rules(changed.errors)


def test_rule7_deferred_lines_without_converged_keep_their_reasons(reply_vault):
    """Issue 41: `<deferred lines=…>` alone accounts for those lines with the reason written."""
    vault, ctx = reply_vault
    tail = (
        f'<deferred note="{NOTE}" lines="3" reason="a passing mood"/>\n'
        f'<deferred note="{IDEA}" reason="vague"/>\n'
    )
    result = run(vault, ctx, reply(tail=tail))
    assert result.ok
    assert [(d.note, d.reason, d.lines) for d in result.deferred] == [
        (IDEA, "vague", ()),
        (NOTE, "a passing mood", (3,)),
    ]
    assert result.line_reasons == {NOTE: {3: "a passing mood"}}
    assert [(w.file, w.rule) for w in result.warnings] == [(NOTE, "unaccounted")]
    assert "other lines stay pending" in result.warnings[0].message


def test_rule7_converged_into_a_file_that_does_not_cite_it_warns(reply_vault):
    vault, ctx = reply_vault
    result = run(
        vault,
        ctx,
        reply(
            block(PROFILE, profile(S1, S2, S3, S4, S5, NEW)),
            tail=f'<converged note="{NOTE}" into="{PROFILE}, {JOBS}"/>\n<deferred note="{IDEA}" reason="x"/>\n',
        ),
    )
    assert result.ok
    assert [(w.file, w.rule) for w in result.warnings] == [(JOBS, "converged")]
    assert result.converged[0].into == [PROFILE, JOBS]


def test_rule7_converged_into_an_unsafe_path_is_refused(reply_vault):
    vault, ctx = reply_vault
    result = run(
        vault,
        ctx,
        reply(
            tail=f'<converged note="{NOTE}" into="../../etc/passwd"/>\n<deferred note="{IDEA}" reason="x"/>\n'
        ),
    )
    assert [(i.rule, i.line) for i in result.errors] == [("7", 2)] and "'..'" in result.errors[
        0
    ].message


def test_rule8_quarter_is_the_limit_and_allow_shrink_lifts_it(reply_vault):
    vault, ctx = reply_vault
    drop_one = f'<dropped file="{PROFILE}" reason="duplicate">多推推他</dropped>\n'
    assert run(vault, ctx, reply(block(PROFILE, profile(S1, S2, S3, S4)), drop_one)).ok  # 1 of 5
    drop_two = (
        drop_one
        + f'<dropped file="{PROFILE}" reason="stale">早上效率最高，下午容易分心</dropped>\n'
    )
    result = run(vault, ctx, reply(block(PROFILE, profile(S1, S2, S3)), drop_two))
    assert [(i.rule, i.file) for i in result.errors] == [("8", PROFILE)]
    ctx.allow_shrink = True
    assert run(vault, ctx, reply(block(PROFILE, profile(S1, S2, S3)), drop_two)).ok


def test_rule8_a_rewrite_with_a_trace_is_not_a_drop(reply_vault):
    vault, ctx = reply_vault
    changed = f"- 早上效率最高（更新于 {PASS_DATE}，原为：早上效率最高，下午容易分心）（来源：[[2026-11-28 随手记]]）"
    drops = f'<dropped file="{PROFILE}" reason="duplicate">多推推他</dropped>\n<dropped file="{PROFILE}" reason="changed">早上效率最高，下午容易分心</dropped>\n'
    assert run(vault, ctx, reply(block(PROFILE, profile(S1, S2, S3, changed)), drops)).ok


def test_rule8_a_small_file_may_drop_one_duplicate_never_two(make_vault):
    """Rule 8 in a file of two or three statements: one may go (a duplicate merged elsewhere —
    with a strict quarter no duplicate could ever leave such a file), two of three is refused
    unless --allow-shrink."""
    text = "- a（来源：[[2026-11-28 随手记]]）\n- b（来源：[[2026-11-28 随手记]]）\n- c（来源：[[2026-11-28 随手记]]）\n"
    root = make_vault({PROFILE: text, NOTE: NOTE_TEXT})
    vault = Vault(root=root, config=load_config(root))
    ctx = PassContext(PASS_DATE, [NOTE], {PROFILE: text}, vault.note_names())
    drops = f'<dropped file="{PROFILE}" reason="x">a</dropped>\n<dropped file="{PROFILE}" reason="x">b</dropped>\n'
    text_reply = reply(
        block(PROFILE, "- c（来源：[[2026-11-28 随手记]]）\n"), drops, tail=NOTE_ONLY
    )
    result = validate_response(vault, parse_response(text_reply), ctx)
    assert [(i.rule, i.file) for i in result.errors] == [
        ("8", PROFILE)
    ] and "2 of its 3" in result.errors[0].message
    one = f'<dropped file="{PROFILE}" reason="duplicate of c">a</dropped>\n'
    kept = "- b（来源：[[2026-11-28 随手记]]）\n- c（来源：[[2026-11-28 随手记]]）\n"
    fine = reply(block(PROFILE, kept), one, tail=NOTE_ONLY)
    assert validate_response(vault, parse_response(fine), ctx).ok
    ctx.allow_shrink = True
    assert validate_response(vault, parse_response(text_reply), ctx).ok


def test_rule8_a_small_file_never_loses_all_and_never_blanks(reply_vault):
    vault, ctx = reply_vault
    for name, fragment in (
        ("drop-whole-small-file.txt", "2 of its 2"),
        ("blank-na-small-file.txt", "1 of its 2"),
    ):
        result = run(vault, ctx, (REPLIES / "hostile" / name).read_bytes().decode("utf-8"))
        assert [i.rule for i in result.errors] == ["8"] and fragment in result.errors[0].message


def test_content_nul_and_empty_are_refused(reply_vault):
    vault, ctx = reply_vault
    assert any(
        i.rule == "15" and "NUL" in i.message
        for i in run(vault, ctx, reply(block(PROFILE, "- a\x00\n"))).errors
    )
    assert any(
        i.rule == "15" and "empty" in i.message
        for i in run(vault, ctx, reply(block(PROFILE, " \n\n"))).errors
    )


def test_content_elision_lines(reply_vault):
    vault, ctx = reply_vault
    for line in (
        "...",
        "- …",
        "<!-- rest of the file unchanged -->",
        "（其余内容不变）",
        "// remaining statements omitted",
    ):
        result = run(vault, ctx, reply(block(PROFILE, profile(S1, S2, S3, S4, S5, line))))
        assert "15" in rules(result.errors), line
    ok = run(
        vault,
        ctx,
        reply(
            block(
                PROFILE,
                profile(
                    S1, S2, S3, S4, S5, "- 其余的原则不变：先动手（来源：[[2026-11-28 随手记]]）"
                ),
            )
        ),
    )
    assert ok.ok, format_issues(ok.errors)


def test_content_elision_check_spares_lines_the_file_already_had(make_vault):
    text = "- everything else stays the same as before\n"
    root = make_vault({PROFILE: text, NOTE: NOTE_TEXT})
    vault = Vault(root=root, config=load_config(root))
    ctx = PassContext(PASS_DATE, [NOTE], {PROFILE: text}, vault.note_names())
    result = validate_response(
        vault, parse_response(reply(block(PROFILE, text + NEW + "\n"), tail=NOTE_ONLY)), ctx
    )
    assert result.ok, format_issues(result.errors)


def test_writing_over_an_undecodable_file_is_refused(reply_vault):
    vault, ctx = reply_vault
    (vault.root / "converged/topics/latin1.md").write_bytes(b"- caf\xe9\n")
    result = run(vault, ctx, reply(block("converged/topics/latin1.md", NEW + "\n")))
    assert any(i.rule == "15" and "UTF-8" in i.message for i in result.errors)


def test_every_error_is_reported_at_once(reply_vault):
    vault, ctx = reply_vault
    text = reply(
        block(PROFILE, profile(S1, S2, S3, S4, "- 无来源")),
        block(".git/config", "x\n"),
        tail='<converged note="nope.md" into="x.md"/>\n',
    )
    assert {"1", "3", "4", "7"} <= set(rules(run(vault, ctx, text).errors))


# --- warnings: possible invention ---------------------------------------------------------


def test_invention_warning(reply_vault):
    vault, ctx = reply_vault
    invented = "- 计划明年去火星定居并学习量子物理（来源：[[2026-11-28 随手记]]）"
    result = run(vault, ctx, reply(block(PROFILE, profile(S1, S2, S3, S4, S5, NEW, invented))))
    assert result.ok
    assert [(w.rule, w.line) for w in result.warnings] == [("invention", 15)]


def test_invention_warning_in_english(make_vault):
    note = "I switched to uv for Python environments.\n"
    root = make_vault({"notes.md": note})
    vault = Vault(root=root, config=load_config(root))
    ctx = PassContext(PASS_DATE, ["notes.md"], {}, vault.note_names(), source_texts={"notes": note})
    text = reply(
        block(
            PROFILE,
            "- Uses uv for Python environments (source: [[notes]])\n- Wants to become an astronaut on Mars (source: [[notes]])\n",
        ),
        tail=f'<converged note="notes.md" into="{PROFILE}"/>\n',
    )
    result = validate_response(vault, parse_response(text), ctx)
    assert result.ok and [(w.rule, w.line) for w in result.warnings] == [("invention", 2)]


def test_word_tokens_use_cjk_bigrams():
    assert word_tokens("在找深圳 AI Agent 实习") == {"在找", "找深", "深圳", "ai", "agent", "实习"}
    assert word_tokens("The cat, the hat!") == {"cat", "hat"}


# --- issue 11: several targets, loss, identity, provenance --------------------------------


@pytest.mark.parametrize("name", ["converged-into-several.txt", "converged-repeated-elements.txt"])
def test_a_note_converged_into_several_files_lists_them_all(reply_vault, name):
    vault, ctx = reply_vault
    result = run(vault, ctx, (REPLIES / "valid" / name).read_text("utf-8"))
    assert result.ok, format_issues(result.errors)
    assert [(c.note, c.into) for c in result.converged] == [(NOTE, [PROFILE, JOBS])]
    assert not [w for w in result.warnings if w.rule in ("unknown", "converged")]


def test_blanking_counts_as_loss_and_a_single_rewrite_does_not(reply_vault):
    vault, ctx = reply_vault
    blank = f"- Unknown (updated {PASS_DATE}, was: 多推推他) (source: [[2026-11-28 随手记]])"
    assert run(vault, ctx, reply(block(PROFILE, profile(S1, S2, S3, S4, blank)))).ok  # 1 of 5
    blank2 = f"- 未知（更新于 {PASS_DATE}，原为：早上效率最高，下午容易分心）（来源：[[2026-11-28 随手记]]）"
    result = run(vault, ctx, reply(block(PROFILE, profile(S1, S2, S3, blank2, blank))))
    assert [(i.rule, i.file) for i in result.errors] == [
        ("8", PROFILE)
    ] and "2 blanked" in result.errors[0].message


def test_losses_spread_over_files_count_against_the_whole_layer(make_vault):
    """Six one-statement topic files: dropping two is within each file's rule (one statement
    is below rule 8's two) but a third of the memory layer (rule 10)."""
    files = {
        f"converged/topics/t{i}.md": f"- fact {i}（来源：[[2026-11-28 随手记]]）\n"
        for i in range(6)
    }
    root = make_vault({**files, NOTE: NOTE_TEXT})
    vault = Vault(root=root, config=load_config(root))
    ctx = PassContext(PASS_DATE, [NOTE], dict(files), vault.note_names())
    drops = "".join(
        f'<dropped file="converged/topics/t{i}.md" reason="x">fact {i}</dropped>\n' for i in (0, 1)
    )
    blocks = block("converged/topics/t0.md", "# t0\n") + block("converged/topics/t1.md", "# t1\n")
    result = validate_response(
        vault,
        parse_response(reply(blocks, drops, tail=f'<deferred note="{NOTE}" reason="x"/>\n')),
        ctx,
    )
    assert [(i.rule, i.file) for i in result.errors] == [
        ("10", "response")
    ] and "2 of the 6" in result.errors[0].message
    ctx.allow_shrink = True
    assert validate_response(
        vault,
        parse_response(reply(blocks, drops, tail=f'<deferred note="{NOTE}" reason="x"/>\n')),
        ctx,
    ).ok


def test_a_statement_kept_only_inside_another_statements_history_is_lost(reply_vault):
    vault, ctx = reply_vault
    hidden = f"- 推他动手（更新于 {PASS_DATE}，原为：推他动手而非给鼓励（更新于 {PASS_DATE}，原为：多推推他））（来源：[[2026-11-28 随手记]]）"
    result = run(vault, ctx, reply(block(PROFILE, profile(hidden, S2, S3, S4))))
    assert [(i.rule, i.line) for i in result.errors] == [("4", 13)] and "多推推他" in result.errors[
        0
    ].message
    merged = (
        f"- 推他动手而非给鼓励（更新于 {PASS_DATE}，原为：多推推他）（来源：[[2026-11-20 日记]]）"
    )
    assert run(
        vault, ctx, reply(block(PROFILE, profile(merged, S2, S3, S4)))
    ).ok  # a merge: its own top-level trace


@pytest.mark.parametrize(
    "old, new",
    [
        ("I live in Berlin.", "I live in Berlin?"),
        ("Salary expectation ≥ €60k", "Salary expectation ≤ $60k"),
        ("Uses Python 3.12 for scripts", "Uses Python 31.2 for scripts"),
        ("Freezer alarm at -5 °C", "Freezer alarm at 5 °C"),
        ("I live in Berlin.", "I do not live in Berlin."),
    ],
)
def test_signs_numbers_and_question_marks_are_part_of_a_statement(reply_vault, old, new):
    vault, ctx = reply_vault
    changed = FACTS_TEXT.replace(old, new)
    result = run(
        vault,
        ctx,
        reply(
            block(FACTS, changed),
            tail=f'<deferred note="{NOTE}" reason="x"/>\n<deferred note="{IDEA}" reason="x"/>\n',
        ),
    )
    assert [i.rule for i in result.errors] == ["4"] and old.rstrip(".") in result.errors[0].message
    traced = FACTS_TEXT.replace(
        f"- {old} (source: [[2026-11-20 日记]])",
        f"- {new} (updated {PASS_DATE}, was: {old}) (source: [[2026-11-28 随手记]])",
    )
    assert run(
        vault,
        ctx,
        reply(
            block(FACTS, traced),
            tail=f'<deferred note="{NOTE}" reason="x"/>\n<deferred note="{IDEA}" reason="x"/>\n',
        ),
    ).ok


def test_invention_is_checked_against_any_cited_note_not_only_the_pass(reply_vault):
    vault, ctx = reply_vault
    invented = "- 计划明年去火星定居并学习量子物理（来源：[[2026-11-20 日记]]）"  # the archived diary never says it
    ctx.source_texts.pop("2026-11-20 日记")  # read from the archive, as a pass does
    result = run(vault, ctx, reply(block(PROFILE, profile(S1, S2, S3, S4, S5, NEW, invented))))
    assert result.ok and [(w.rule, w.line) for w in result.inventions] == [("invention", 15)]
    assert (
        "[[2026-11-20 日记]]" in result.inventions[0].message
        and "cite the note" in result.inventions[0].message
    )


def test_a_faithful_translation_is_not_invention(make_vault):
    note = "以后都用 uv 管理 Python 环境，不要再用 pip。\n早上效率最高，下午容易分心。\n"
    root = make_vault({NOTE: note})
    vault = Vault(root=root, config=load_config(root))
    ctx = PassContext(
        PASS_DATE, [NOTE], {}, vault.note_names(), source_texts={"2026-11-28 随手记": note}
    )
    statements = "- Uses uv for Python environments instead of pip (source: [[2026-11-28 随手记]])\n- Wants to become an astronaut on Mars (source: [[2026-11-28 随手记]])\n"
    result = validate_response(
        vault, parse_response(reply(block(PROFILE, statements), tail=NOTE_ONLY)), ctx
    )
    assert result.ok and [w.line for w in result.inventions] == [2]


def test_an_archived_source_resolves_only_while_the_note_is_there(reply_vault):
    """The archive's names are kept by folder stats between passes (`vault/archive_names.py`):
    a source citing an archived note that was deleted or moved since is judged on the archive
    as it is now, never on the names kept."""
    from dataclasses import replace

    from support import settle

    vault, ctx = reply_vault
    vault.machine_dir.mkdir(parents=True, exist_ok=True)
    cited = "- 简历投了三家公司（来源：[[2026-11-20 日记]]）"
    text = reply(block(PROFILE, profile(S1, S2, S3, S4, S5, cited)))

    def source_errors() -> list[str]:
        # each pass after the vault settled (an hour later), so its folders' names were kept
        settle(vault.root)
        now = replace(ctx, note_names=Vault(root=vault.root, config=vault.config).note_names())
        return [str(i) for i in run(vault, now, text).errors if i.rule == "3"]

    assert source_errors() == []
    assert source_errors() == []  # from the names kept
    diary = vault.root / "archive/2026-11/2026-11-20 日记.md"
    moved = vault.root / "archive/2026-12/2026-11-20 日记.md"
    moved.parent.mkdir()
    os.rename(diary, moved)
    assert source_errors() == []  # found where it went
    moved.unlink()
    assert [e for e in source_errors() if "[[2026-11-20 日记]] resolves to no note" in e]


def test_rule6_resident_texts_are_the_files_read_and_the_rest_of_the_folder(
    reply_vault, monkeypatch
):
    """The resident files as the size cap counts them: the pass's own texts without a second
    look at the disk, the files it did not read from the disk, never a FIFO, and nothing
    from outside the resident folder; the same as every file looked at and classified."""
    from cmem.converge.validator.reply_reading import ReplyReading
    from cmem.converge.validator.response import Response
    from cmem.converge.validator.validate import RESIDENT
    from cmem.vault.notes import read_note

    vault, ctx = reply_vault
    core = vault.root / "converged/core"
    (core / "unread.md").write_text("- 没读过的文件（来源：[[2026-11-20 日记]]）\n", "utf-8")
    os.mkfifo(core / "pipe.md")
    ctx.originals["converged/core/new.md"] = None  # a file the reply creates
    ctx.originals["converged/topics/t.md"] = "- a topic\n"

    expected = {}  # as it was made before: every listed file looked at, every original classified
    for file in vault.list_layer(RESIDENT):
        if file.path.is_file():
            text = ctx.originals.get(file.rel)
            expected[file.rel] = text if text is not None else read_note(file, 10**6).text
    for path, text in ctx.originals.items():
        if text is not None and vault.layer_of(path) == RESIDENT:
            expected.setdefault(path, text)

    looked, classified = [], []
    is_file, layer_of = Path.is_file, Vault.layer_of
    monkeypatch.setattr(Path, "is_file", lambda p: looked.append(p.name) or is_file(p))
    monkeypatch.setattr(Vault, "layer_of", lambda v, r: classified.append(r) or layer_of(v, r))
    reply = ReplyReading(vault, Response(), ctx, Validation())
    assert reply.resident_texts == expected
    assert "converged/core/unread.md" in expected and "converged/core/pipe.md" not in expected
    # the file the pass did not read; the FIFO is not even listed (the walks take regular files)
    assert sorted(looked) == ["unread.md"]
    assert "converged/topics/t.md" not in classified


def test_a_reply_fact_is_made_once_for_each_reading(reply_vault):
    """A rule module's fact (`@reply_fact`) is made the first time a rule asks, kept for the
    other rules of the same reply, and made afresh for the next reply (a repair round's)."""
    from cmem.converge.validator.reply_reading import ReplyReading, reply_fact
    from cmem.converge.validator.response import Response

    vault, ctx = reply_vault
    made = []

    @reply_fact
    def fact(reply):
        made.append(reply)
        return {"n": len(made)}

    first, second = (ReplyReading(vault, Response(), ctx, Validation()) for _ in range(2))
    assert fact(first) is fact(first) and made == [first]
    assert fact(second) == {"n": 2} and made == [first, second]
    assert fact(first) == {"n": 1}
