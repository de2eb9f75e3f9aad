"""Real model CLIs' output (issue 14): ANSI codes and a reasoning model's leading thinking are
removed before parsing — unit cases, then replies captured in the shapes `llm`, `ollama run` and
`claude -p` print (tests/replies/captured/), each through the real pass from the fake model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cmem.converge.model.reply_text import clean_reply
from cmem.converge.pipeline import run_pass
from cmem.converge.validator.response import parse_response
from cmem.vault.layers import open_vault
from pass_helpers import NOTE, PROFILE, llm_options, model_env, today
from support import TESTS, git

CAPTURED = sorted((TESTS / "replies" / "captured").glob("*.txt"))
ANSWER = '<convergence>\n<deferred note="a.md" reason="vague"/>\n</convergence>\n'


def test_plain_replies_pass_through_unchanged():
    for text in (ANSWER, "chat first\n" + ANSWER, "a\r\nb\rc", ""):
        assert clean_reply(text).text == text and clean_reply(text).removed == []


def test_ansi_codes_are_removed_and_a_spinner_leaves_nothing():
    raw = (
        "\x1b[?25l\x1b[1G⠙ \x1b[K\x1b[1G⠹ \x1b[K\x1b[2K\x1b[1G\x1b[?25h\x1b[1m<convergence>\x1b[0m\n"
        '\x1b[32m<deferred note="a.md" reason="vague"/>\x1b[0m\n\x1b]0;title\x07</convergence>\n'
    )
    cleaned = clean_reply(raw)
    assert cleaned.text == ANSWER
    assert cleaned.removed and "ANSI escape codes" in cleaned.removed[0]


def test_a_leading_think_block_is_removed_even_when_it_drafts_a_convergence_element():
    think = '<think>\nLet me draft:\n<convergence>\n<file path="x.md">\n- draft\n</file>\n</convergence>\nno, defer it.\n</think>\n\n'
    cleaned = clean_reply(think + ANSWER)
    assert cleaned.text.strip() == ANSWER.strip()
    # the line numbers are the raw output's: the answer starts where it started
    assert cleaned.text.split("\n").index("<convergence>") == (think + ANSWER).split("\n").index(
        "<convergence>", 3
    )
    response = parse_response(cleaned.text)
    assert response.ok and [d.note for d in response.deferred] == ["a.md"] and not response.files
    # without the cleaning the draft is what the parser would read
    assert parse_response(think + ANSWER).files


def test_ollamas_thinking_frame_is_removed():
    raw = "Thinking...\nI could answer <convergence></convergence>.\n...done thinking.\n\n" + ANSWER
    assert clean_reply(raw).text.lstrip("\n") == ANSWER


@pytest.mark.parametrize(
    "text",
    [
        ANSWER
        + "<think>after the answer</think>\n",  # not leading: the parser warns about trailing text, nothing is cut
        "<think>never closed\n"
        + ANSWER,  # an unclosed block is not removed: the parser sees it all
        "Intro.\n<think>x</think>\n" + ANSWER,  # not at the start
    ],
)
def test_only_a_leading_closed_block_is_removed(text):
    assert clean_reply(text).text == text


@pytest.mark.parametrize("reply_file", CAPTURED, ids=[p.stem for p in CAPTURED])
def test_captured_replies_apply_through_the_real_pass(
    pass_vault, monkeypatch, tmp_path, reply_file
):
    reply = reply_file.read_text("utf-8").replace("{date}", today())
    model_env(monkeypatch, tmp_path, [reply])
    result = run_pass(open_vault(pass_vault), llm_options())
    assert result.status == "applied", result.errors
    profile = (pass_vault / PROFILE).read_text("utf-8")
    assert (
        "- 在找深圳 AI Agent 实习（更新于" in profile
        and "draft" not in profile
        and "\x1b" not in profile
    )
    assert result.converged == [NOTE]
    run = Path(result.run_dir)
    assert (run / "response-1.txt").read_text(
        "utf-8"
    ) == reply  # the record keeps the output as printed
    removed = json.loads((run / "validation-1.json").read_text("utf-8"))["removed"]
    assert bool(removed) == (reply_file.stem.startswith(("ansi", "ollama")))
    assert git(pass_vault, "log", "-1", "--format=%s").startswith("cmem: converge")


def test_the_captured_shapes_are_all_there():
    assert {p.stem for p in CAPTURED} >= {
        "llm-fenced",
        "claude-p",
        "ollama-think",
        "ollama-thinking-frame",
        "ansi-colours",
        "ansi-and-think",
    }
