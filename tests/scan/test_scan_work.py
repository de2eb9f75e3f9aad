"""The per-hit work of a cold scan, counted rather than timed: each cue line pays only for the
checks that can change its verdict (issue 13). The verdicts themselves are held by
tests/scan/test_scan_expected.py; these say the costly steps are skipped when they cannot matter."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from cmem.scan import recurrence, signals, tone
from cmem.scan.signals import detect_line
from cmem.text import words
from cmem.text.cues import cue_set
from cmem.text.scripts import CJK_RUN
from cmem.text.terms import EN_KEY_STOP, ZH_KEY_BIGRAMS, ZH_KEY_STOP, bigrams
from cmem.vault.layers import DIVERGENT, NoteFile
from cmem.vault.notes import read_note


class _Counted:
    """A compiled pattern that counts how often each method is called and how many matches
    are consumed."""

    def __init__(self, pattern, calls: Counter):
        self.pattern, self.calls = pattern, calls

    def __getattr__(self, name):
        method = getattr(self.pattern, name)

        def counted(*args, **kwargs):
            self.calls[name] += 1
            found = method(*args, **kwargs)
            if name == "finditer":
                return self._consumed(found)
            return found

        return counted

    def _consumed(self, matches):
        for match in matches:
            self.calls["consumed"] += 1
            yield match


@pytest.fixture
def calls(monkeypatch) -> Counter:
    counts = Counter()
    monkeypatch.setattr(tone, "_BANGS", _Counted(tone._BANGS, counts))
    # the shouting check's and the content count's patterns, as `text/words.py` hands them out
    counted = {
        source: _Counted(words.pattern(source), counts)
        for source in (words.CAPS_WORD, words.UNIT_TOKEN)
    }
    original = words.pattern
    monkeypatch.setattr(words, "pattern", lambda source: counted.get(source) or original(source))
    return counts


def test_content_units_stops_reading_tokens_once_it_has_enough(calls):
    line = " ".join(f"word{n} deploy" for n in range(200))
    assert tone.content_units(line, 2) == 2
    assert calls["consumed"] == 1  # one Latin word is two units: the other 399 never tokenised
    calls.clear()
    assert tone.content_units(line) == 800  # without a bound every token still counts


def test_a_calm_cue_line_skips_the_bang_and_shouting_checks(calls):
    hit = detect_line("- I decided to move the build to the new runner next week", cue_set())
    assert hit is not None and hit.kind == ""
    assert calls["search"] == 0  # fewer than three ! or ?: _BANGS cannot match
    calls.clear()
    hit = detect_line("- 我决定以后周会改到周二上午，大家觉得呢？", cue_set())
    assert hit is not None and hit.kind == ""
    assert calls["search"] == calls["findall"] == 0  # no capital letter: nobody shouts


def test_the_checks_still_run_where_they_can_match(calls):
    hit = detect_line("- I decided to move the build again!!!", cue_set())
    assert hit is not None and hit.kind == "venting" and calls["search"] == 1
    calls.clear()
    hit = detect_line("- WE DECIDED THIS IS THE WORST BUILD EVER", cue_set())
    assert hit is not None and hit.kind == "venting" and calls["findall"] >= 1


def test_a_line_runs_only_the_masks_it_can_match(monkeypatch):
    from cmem.scan import masking

    counts = Counter()
    counted = tuple((_Counted(pattern, counts), needs) for pattern, needs in masking._INLINE_MASKS)
    monkeypatch.setattr(masking, "_INLINE_MASKS", counted)
    line = "又忘了更新 [[周报]]，下次先写 `draft` 再发"
    assert (
        masking.mask_inline(line) == "又忘了更新 " + " " * 4 + "]]，下次先写 " + " " * 7 + " 再发"
    )
    assert counts["sub"] == 2  # the wikilink and the inline code; no comment, URL or link target
    counts.clear()
    assert masking.mask_inline("see WWW.Example.com [here](x)") == "see " + " " * 15 + " [here    "
    assert counts["sub"] == 2


def _sentence_around_stepping(low: str, start: int, end: int) -> str:
    """sentence_around as it was: a Python step per character (issue 13 made it a search)."""
    head = start
    while head > 0 and low[head - 1] not in recurrence._SENTENCE_END:
        head -= 1
    tail = end
    while tail < len(low) and low[tail] not in recurrence._SENTENCE_END:
        tail += 1
    return low[head:start] + " " + low[end:tail]


def _phrase_keys_reading_all(text: str) -> list[str]:
    """phrase_keys as it was: every key of the sentence gathered, the first MAX_KEYS kept."""
    keys: dict[str, None] = {}
    for run in CJK_RUN.findall(text):
        for pair in bigrams(run):
            if pair[0] not in ZH_KEY_STOP and pair[1] not in ZH_KEY_STOP:
                if pair not in ZH_KEY_BIGRAMS:
                    keys[pair] = None
    for word in words.key_words(text):
        word = word.strip("'-")
        if len(word) >= 4 and word not in EN_KEY_STOP:
            keys[recurrence._stem(word)] = None
    return sorted(list(keys)[: recurrence.MAX_KEYS])


def test_sentence_and_keys_are_what_the_full_walks_gave():
    rng = random.Random(13)
    alphabet = [*"ab 又熬夜刷题到两点，", *recurrence._SENTENCE_END, " deploying", " the build"]
    alphabet += [
        "今天",
        "一直",
        "的",
        "我",
        "把",
        "睡觉",
        "熬夜改",
        "ＡＢ",
    ]  # stop characters, key stop bigrams
    for _ in range(10_000):
        low = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        start = rng.randint(0, len(low))
        end = rng.randint(start, len(low))
        assert recurrence.sentence_around(low, start, end) == _sentence_around_stepping(
            low, start, end
        ), (low, start, end)
        assert recurrence.phrase_keys(low) == _phrase_keys_reading_all(low), low


def _note(tmp_path, text: str):
    path = tmp_path / "note.md"
    path.write_text(text, "utf-8")
    return read_note(NoteFile(path.name, path, DIVERGENT))


def test_links_are_searched_in_the_body_and_walked_line_by_line_only_under_blocks(
    tmp_path, monkeypatch
):
    walks = Counter()
    walk = signals.wikilinks

    def counted(lines, blocked):
        walks["lines"] += 1
        return walk(lines, blocked)

    monkeypatch.setattr(signals, "wikilinks", counted)
    plain = (
        "---\nsee: [[Meta]]\n---\n- 我决定改用 [[Svelte]]，见 [[周报|上周]]\n- [[Svelte]] again\n"
    )
    assert signals.scan_note(_note(tmp_path, plain)).links == ["Svelte", "周报"]
    assert walks["lines"] == 0  # the frontmatter's [[Meta]] is skipped by starting after it
    fenced = plain + "```\n[[Code]]\n```\n"
    assert signals.scan_note(_note(tmp_path, fenced)).links == ["Svelte", "周报"]
    assert walks["lines"] == 1
