"""Notes in other encodings through real passes (issue 35): a Latin-1 note's `café`, a UTF-16
note's words reach memory as they are — by the builtin engine and through a model's prompt —
with a warning naming the note and what it was read as; no replacement character is ever written
into memory, and the notes themselves are never rewritten."""

from __future__ import annotations

import json
import sys

import pytest

from support import TESTS, git, run_cmem

FAKE = TESTS / "fake_llm.py"
PROFILE = "converged/core/profile.md"
NOTES = {
    "latin.md": ("# notes\n\n- I prefer café au lait in the morning\n", "latin-1", "Windows-1252"),
    "windows.md": ("# notes\n\n- I prefer “quiet” mornings — €0 spent\n", "cp1252", "Windows-1252"),
    "utf16.md": ("# notes\n\n- I prefer working at night, naïvely\n", "utf-16", "UTF-16 LE"),
    "utf16be.md": ("# notes\n\n- I prefer green tea over Kaffee\n", "utf-16-be", "UTF-16 BE"),
    "utf32.md": ("# 随手记\n\n- 我喜欢早起跑步\n", "utf-32", "UTF-32 LE"),
    "mixed.md": (None, None, "UTF-8, with the bytes"),
}
MIXED = "# notes\n\n- I prefer été ".encode() + "déjà vu\n".encode("latin-1")


@pytest.fixture
def vault(tmp_path):
    root = tmp_path / "vault"
    assert run_cmem("init", str(root), "--lang", "en").returncode == 0
    for rel, (text, codec, _) in NOTES.items():
        (root / rel).write_bytes(MIXED if text is None else text.encode(codec))
    return root


def _words(rel: str) -> str:
    text = NOTES[rel][0]
    return text.split("- ", 1)[1].strip() if text else "I prefer été déjà vu"


def _check(root, result, before):
    assert result.returncode == 0, result.stderr
    memory = "".join(p.read_text("utf-8") for p in (root / "converged").rglob("*.md"))
    assert "\ufffd" not in memory
    for rel, (_, _, encoding) in NOTES.items():
        assert (root / rel).read_bytes() == before[rel]  # never rewritten
        warned = [line for line in result.stdout.splitlines() if rel in line and encoding in line]
        assert len(warned) == 1, (rel, result.stdout)
    return memory


def test_the_builtin_engine_writes_what_the_notes_say(vault):
    before = {rel: (vault / rel).read_bytes() for rel in NOTES}
    scan = json.loads(run_cmem("--vault", str(vault), "scan", "--json").stdout)
    assert {s["note"] for s in scan["signals"]} == set(NOTES)
    assert all("\ufffd" not in s["excerpt"] for s in scan["signals"])
    result = run_cmem("--vault", str(vault), "converge", "--engine", "builtin")
    memory = _check(vault, result, before)
    for rel in NOTES:
        core = _words(rel).removeprefix("I prefer ").removeprefix("我喜欢")
        assert core in memory, (rel, memory)
    assert "\ufffd" not in git(vault, "show", "HEAD")


def test_a_model_is_shown_the_decoded_notes(vault, tmp_path):
    """The prompt holds the notes' words, not U+FFFD; a reply quoting them is accepted."""
    before = {rel: (vault / rel).read_bytes() for rel in NOTES}
    lines = "\n".join(f"- {_words(rel)} (source: [[{rel[:-3]}]])" for rel in NOTES)
    converged = "\n".join(f'<converged note="{rel}" into="{PROFILE}"/>' for rel in NOTES)
    reply = (
        f'<convergence>\n<file path="{PROFILE}">\n# Profile\n\n{lines}\n</file>\n'
        f"{converged}\n</convergence>\n"
    )
    log = tmp_path / "fake.log"
    env = {"FAKE_LLM_REPLY": reply, "FAKE_LLM_LOG": str(log)}
    result = run_cmem(
        "--vault", str(vault), "converge", "--llm", f"{sys.executable} {FAKE}", env=env
    )
    memory = _check(vault, result, before)
    prompt = json.loads(log.read_text("utf-8").splitlines()[0])["prompt"]
    assert "\ufffd" not in prompt
    for rel in NOTES:
        assert _words(rel) in prompt and _words(rel) in memory
