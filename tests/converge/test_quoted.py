"""Rule 16 (issue 44): one pass put an article's sentences ("How would you then actually
implement that?") into the resident profile as the user's. A note that is not the user's own
words — a web clip, a template — is marked so in the prompt; a statement from it says so in its
source (`quoted from [[…]]`) or the reply is rejected; the builtin engine, which cannot tell
whose words a cue line holds, leaves it for a model."""

from __future__ import annotations

import sys

import pytest

from cmem.converge.pipeline import PassOptions, run_pass
from cmem.scan.scanner import scan_vault
from cmem.vault.layers import open_vault
from cmem.vault.quoted import marked_quoted, quoted_reason
from pass_helpers import FAKE, model_env, prompts_sent

PROFILE = "converged/core/profile.md"
CLIP = "Designing APIs.md"
CLIP_TEXT = (
    "---\ntitle: Designing APIs\nsource: https://example.com/designing-apis\n"
    "tags: [clippings]\n---\n"
    "How would you then actually implement that? I prefer small endpoints.\n"
)


@pytest.mark.parametrize(
    ("rel", "frontmatter", "tags", "reason"),
    [
        (
            "a.md",
            {"source": "https://example.com/x"},
            [],
            "a web clip (source: https://example.com/x)",
        ),
        ("a.md", {"url": "http://example.com"}, [], "a web clip (url: http://example.com)"),
        ("a.md", {}, ["Clippings"], "a clipping (#clippings)"),
        ("Templates/Daily.md", {}, [], "a template (in Templates/)"),
        ("Meta/tpl/Daily.md", {}, [], ""),  # a folder no setting names, not named Templates
        ("a.md", {"source": "https://x.org", "quoted": False}, [], ""),  # the user's word
        ("a.md", {"quoted": True}, [], "marked `quoted: true`"),
        ("a.md", {"source": "the talk at PyCon"}, ["daily"], ""),  # no link: the user's own note
    ],
)
def test_what_is_not_the_users_own_words(rel, frontmatter, tags, reason):
    assert quoted_reason(rel, frontmatter, tags, []) == reason


def test_a_marked_source():
    assert marked_quoted("- x (source: quoted from [[Designing APIs]])", "Designing APIs")
    assert marked_quoted("- x（来源：摘自[[文章]]）", "文章")
    assert not marked_quoted("- x (source: [[Designing APIs]])", "Designing APIs")
    assert not marked_quoted(
        "- x (source: quoted from [[Other]], [[Designing APIs]])", "Designing APIs"
    )


def _reply(source: str) -> str:
    return (
        f'<convergence>\n<file path="{PROFILE}">\n# Profile\n\n'
        f"- Small endpoints are preferred, says the article {source}\n</file>\n"
        f'<converged note="{CLIP}" into="{PROFILE}"/>\n</convergence>\n'
    )


def test_a_model_must_cite_a_clipped_note_as_quoted(make_vault, monkeypatch, tmp_path):
    root = make_vault(
        {PROFILE: "# Profile\n", CLIP: CLIP_TEXT},
        config_yaml="language: en\nrepair_rounds: 0\n",
        git=True,
    )
    log = model_env(
        monkeypatch,
        tmp_path,
        [
            _reply("(source: [[Designing APIs]])"),
            _reply("(source: quoted from [[Designing APIs]])"),
        ],
    )
    options = PassOptions(llm=f"{sys.executable} {FAKE}")
    refused = run_pass(open_vault(root), options)
    assert refused.status == "failed"
    assert any(
        "16" in error and "quoted from [[Designing APIs]]" in error for error in refused.errors
    )
    assert (root / PROFILE).read_text("utf-8") == "# Profile\n"
    prompt = prompts_sent(log)[0]
    assert (
        '<note path="Designing APIs.md" name="Designing APIs" '
        'quoted="a web clip (source: https://example.com/designing-apis)">' in prompt
    )
    assert "16. Quoted words." in prompt
    applied = run_pass(open_vault(root), options)
    assert applied.status == "applied", applied.errors
    assert "(source: quoted from [[Designing APIs]])" in (root / PROFILE).read_text("utf-8")


def test_the_builtin_engine_leaves_a_clipped_note_for_a_model(make_vault):
    root = make_vault(
        {PROFILE: "# Profile\n", CLIP: CLIP_TEXT}, config_yaml="language: en\n", git=True
    )
    assert scan_vault(open_vault(root)).signals  # "actually" reads as a correction
    result = run_pass(open_vault(root), PassOptions(engine="builtin"))
    assert result.status in ("applied", "nothing")
    assert (root / PROFILE).read_text("utf-8") == "# Profile\n"
    assert any("not the user's own words" in entry["reason"] for entry in result.deferred)
