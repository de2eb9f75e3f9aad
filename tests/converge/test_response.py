"""Parsing replies in the response format (docs/design.md §5): tolerant where nothing can be lost,
strict where something could."""

from __future__ import annotations

import pytest

from cmem.converge.validator.response import (
    MAX_ERRORS,
    ConvergedEntry,
    DeferredEntry,
    DroppedEntry,
    FileBlock,
    parse_response,
    unescape,
)

DESIGN_EXAMPLE = """<convergence>
<file path="converged/core/profile.md">
---
summary: who I am and how I want to be helped
updated: 2026-11-29
---
# Profile
- 推他动手而非给鼓励（来源：[[2026-11-20 日记]]）
- 在找深圳 AI Agent 实习（更新于 2026-11-29，原为：在找北京后端实习）（来源：[[2026-11-28 随手记]]）
</file>
<dropped file="converged/core/profile.md" reason="duplicate of 推他动手而非给鼓励">多推推他</dropped>
<converged note="2026-11-28 随手记.md" into="converged/core/profile.md"/>
<deferred note="idea - svelte.md" reason="one vague mention; wait for it to recur"/>
</convergence>
"""


def messages(issues) -> str:
    return "\n".join(str(issue) for issue in issues)


def test_the_spec_example():
    response = parse_response(DESIGN_EXAMPLE)
    assert response.ok and response.warnings == []
    (file,) = response.files
    assert file.path == "converged/core/profile.md" and file.line == 2
    assert file.content.startswith("---\nsummary: who I am") and file.content.endswith(
        "原为：在找北京后端实习）（来源：[[2026-11-28 随手记]]）"
    )
    assert response.dropped == [
        DroppedEntry("converged/core/profile.md", "多推推他", "duplicate of 推他动手而非给鼓励", 11)
    ]
    assert response.converged == [
        ConvergedEntry("2026-11-28 随手记.md", ["converged/core/profile.md"], 12)
    ]
    assert response.deferred == [
        DeferredEntry("idea - svelte.md", "one vague mention; wait for it to recur", 13)
    ]


def test_chat_and_fences_around_the_element_are_ignored():
    text = (
        "Sure — I read your notes. I'll answer with a <convergence> element:\n\n```xml\n"
        + DESIGN_EXAMPLE
        + "```\n\nLet me know!\n"
    )
    response = parse_response(text)
    assert response.ok and response.warnings == []
    assert response.files[0].line == 5


def test_crlf_and_bom_are_normalised():
    response = parse_response("\ufeff" + DESIGN_EXAMPLE.replace("\n", "\r\n"))
    assert response.ok
    assert "\r" not in response.files[0].content
    assert response.files[0].line == 2


def test_missing_element_and_empty_reply():
    (error,) = parse_response("I could not find anything worth remembering.").errors
    assert error.rule == "14" and "no <convergence> element" in error.message
    assert "empty" in parse_response("  \n").errors[0].message


def test_missing_closing_convergence_is_an_error():
    response = parse_response(DESIGN_EXAMPLE.replace("</convergence>\n", ""))
    assert "without </convergence>" in messages(response.errors)


def test_file_content_runs_to_the_first_line_that_is_exactly_the_closing_tag():
    text = '<convergence>\n<file path="a.md">\n- writes `</file>` in a sentence\n  </file>  \n</convergence>'
    response = parse_response(text)
    assert response.ok
    assert response.files == [FileBlock("a.md", "- writes `</file>` in a sentence", 2)]


def test_unclosed_file_block_is_an_error():
    response = parse_response('<convergence>\n<file path="a.md">\n- one\n- two')
    assert any("no closing </file>" in e.message and e.line == 2 for e in response.errors)
    assert response.files == []


def test_file_block_that_runs_into_the_next_one_is_an_error():
    text = '<convergence>\n<file path="a.md">\n- one</file>\n<file path="b.md">\n- two\n</file>\n</convergence>\n'
    response = parse_response(text)
    assert [e.line for e in response.errors] == [2]
    assert [f.path for f in response.files] == ["b.md"]


def test_file_block_that_runs_into_the_end_of_the_element_is_an_error():
    response = parse_response('<convergence>\n<file path="a.md">\n- one\n</convergence>\n')
    assert len(response.errors) == 1 and "before line 4" in response.errors[0].message


def test_duplicate_file_blocks_are_an_error():
    text = '<convergence>\n<file path="a.md">\n- one\n</file>\n<file path="a.md">\n- two\n</file>\n</convergence>'
    response = parse_response(text)
    assert [(e.line, e.rule) for e in response.errors] == [(5, "14")]
    assert "first is at line 2" in response.errors[0].message


def test_content_on_the_tag_line_or_a_self_closing_file_is_an_error():
    assert not parse_response('<convergence>\n<file path="a.md">- one\n</file>\n</convergence>').ok
    assert (
        "self-closing"
        in parse_response('<convergence>\n<file path="a.md"/>\n</convergence>').errors[0].message
    )
    assert (
        "without a path"
        in parse_response("<convergence>\n<file>\n- x\n</file>\n</convergence>").errors[0].message
    )


def test_quotes_and_entities_in_attributes():
    text = """<convergence>
<deferred note='a "quoted" name.md' reason="x &amp; y &lt;z&gt; &quot;q&quot; &apos;a&apos; &#x4e2d;&#25991; &unknown;"/>
<converged note=plain.md into=converged/topics/a.md/>
</convergence>"""
    response = parse_response(text)
    assert response.ok, messages(response.errors)
    assert response.deferred[0].note == 'a "quoted" name.md'
    assert response.deferred[0].reason == "x & y <z> \"q\" 'a' 中文 &unknown;"
    assert response.converged[0] == ConvergedEntry("plain.md", ["converged/topics/a.md"], 3)


def test_attribute_value_may_hold_angle_brackets():
    response = parse_response(
        '<convergence>\n<deferred note="n.md" reason="a > b, c < d"/>\n</convergence>'
    )
    assert response.ok and response.deferred[0].reason == "a > b, c < d"


def test_into_lists_several_files():
    response = parse_response(
        '<convergence>\n<converged note="n.md" into=" a.md,b.md , c.md,"/>\n</convergence>'
    )
    assert response.converged[0].into == ["a.md", "b.md", "c.md"]


def test_converged_needs_a_note_and_into():
    assert (
        "does not say into which files"
        in parse_response('<convergence>\n<converged note="n.md"/>\n</convergence>')
        .errors[0]
        .message
    )
    assert (
        "without a note"
        in parse_response('<convergence>\n<converged into="a.md"/>\n</convergence>')
        .errors[0]
        .message
    )


def test_deferred_reason_may_be_its_text_and_missing_reason_warns():
    response = parse_response(
        '<convergence>\n<deferred note="n.md">too vague</deferred>\n<deferred note="m.md"/>\n</convergence>'
    )
    assert response.ok
    assert [d.reason for d in response.deferred] == ["too vague", ""]
    assert [w.line for w in response.warnings] == [3]


def test_dropped_statement_may_span_lines_and_hold_tag_like_text():
    text = '<convergence>\n<dropped file="a.md" reason="dup">\n- uses <kbd>Ctrl</kbd> &amp; C（来源：[[x]]）\n</dropped>\n</convergence>'
    response = parse_response(text)
    assert response.ok, messages(response.errors)
    assert response.dropped == [
        DroppedEntry("a.md", "- uses <kbd>Ctrl</kbd> & C（来源：[[x]]）", "dup", 2)
    ]


def test_dropped_errors():
    assert (
        "no closing </dropped>"
        in parse_response('<convergence>\n<dropped file="a.md" reason="x">old\n</convergence>')
        .errors[0]
        .message
    )
    assert (
        "must hold the removed statement"
        in parse_response('<convergence>\n<dropped file="a.md" reason="x"/>\n</convergence>')
        .errors[0]
        .message
    )
    assert (
        "without a file"
        in parse_response("<convergence>\n<dropped>old</dropped>\n</convergence>").errors[0].message
    )


def test_unknown_elements_and_attributes_are_warnings():
    text = '<convergence version="2">\n<thinking>hmm</thinking>\n<file path="a.md" mode="append">\n- x\n</file>\n<note>hi</note>\n</convergence>'
    response = parse_response(text)
    assert response.ok and response.files[0].content == "- x"
    found = messages(response.warnings)
    for fragment in ("'version'", "<thinking>", "'mode'", "<note>", "'hmm'"):
        assert fragment in found
    assert {w.rule for w in response.warnings} == {"unknown"}


def test_a_second_element_is_refused_not_half_applied():
    # "here is a better one": applying the first would apply the answer the model retracted
    text = (
        DESIGN_EXAMPLE
        + '\nOops, here is a better one:\n<convergence>\n<file path="b.md">\n- y\n</file>\n</convergence>\n'
    )
    response = parse_response(text)
    assert not response.ok and "a second <convergence> element" in messages(response.errors)


def test_text_after_the_first_element_is_ignored():
    text = DESIGN_EXAMPLE + "\nI used one `<convergence>` element, as asked.\n"
    response = parse_response(text)
    assert response.ok and [f.path for f in response.files] == ["converged/core/profile.md"]
    assert "after the first </convergence> is ignored" in messages(response.warnings)


def test_an_element_quoted_in_chat_does_not_start_the_reply():
    text = 'I\'ll use a `<convergence>` element as asked.\n<convergence>\n<deferred note="n.md" reason="x"/>\n</convergence>\n'
    response = parse_response(text)
    assert response.ok and response.warnings == [] and response.deferred[0].line == 3


def test_a_fence_around_the_file_content_is_removed():
    text = '<convergence>\n<file path="a.md">\n```markdown\n---\nsummary: x\n---\n- one\n```\n</file>\n</convergence>'
    response = parse_response(text)
    assert response.files[0].content == "---\nsummary: x\n---\n- one"
    assert "code fence" in messages(response.warnings)


def test_a_file_that_merely_contains_a_code_block_keeps_it():
    content = "- one\n\n```\ncode\n```\n\n- two"
    response = parse_response(
        f'<convergence>\n<file path="a.md">\n{content}\n</file>\n</convergence>'
    )
    assert response.files[0].content == content and response.warnings == []


def test_leading_and_trailing_blank_lines_of_a_file_are_dropped():
    response = parse_response(
        '<convergence>\n<file path="a.md">\n\n\n---\nsummary: x\n---\n- one\n\n\n</file>\n</convergence>'
    )
    assert response.files[0].content == "---\nsummary: x\n---\n- one"


@pytest.mark.parametrize(
    ("entity", "char"),
    [("&#0;", "\x00"), ("&#x2215;", "\u2215"), ("&#1114112;", "&#1114112;"), ("&amp;lt;", "&lt;")],
)
def test_unescape_is_single_pass_and_keeps_what_it_cannot_read(entity, char):
    assert unescape(entity) == char


def test_a_hopeless_reply_stops_at_a_bounded_list():
    response = parse_response(
        "<convergence>\n" + "<dropped file='a' reason='x'>\n<thinking/>\n" * 5000
    )
    assert len(response.errors) == MAX_ERRORS + 1 and "not read" in response.errors[-1].message
    assert len(response.warnings) <= MAX_ERRORS + 1
