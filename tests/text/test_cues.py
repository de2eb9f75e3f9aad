"""The cue index: which cues a text holds, found in one pass, must be exactly the cues whose text
occurs in it, in priority order: overlapping cues, a cue inside another, cues split by other
characters, characters outside the BMP."""

import random

from cmem.text.cues import cue_index


def _plain(index, lowered: str) -> list:
    return [cue for cue in index.cues if cue.text in lowered]


def test_active_cues_are_the_cues_whose_text_occurs():
    # an extra cue outside the BMP too: the automaton's offsets must count code points as
    # Python does (pyahocorasick issue 53 was an end offset off by one after such a character)
    extra = {
        "decision": ("ship it", "café", "c++", "fix:", "\U0001f680 ship"),
        "recurring": ("déjà vu",),
    }
    indexes = [cue_index(), cue_index(extra)]
    cues = sorted({cue.text for cue in indexes[1].cues})
    # cue texts, their pieces (an anchor without its cue), and characters that sit between
    # ASCII ones: a match in the ASCII characters alone need not be one in the text
    pieces = [*cues, *(text[: len(text) // 2] for text in cues), *(text[1:] for text in cues)]
    pieces += [" ", "中", "é", "i̇", "ß", "’", "'", "\n", "n", "ever", "go", "\U0001f600"]
    pieces += ["\udcff", "\U00022472"]  # a byte that was not UTF-8 (surrogateescape), a CJK ext. B
    chooser = random.Random(13)
    texts = ["", "ne中ver", "neéver", "i like", "i l中ike", "又熬夜", "又又", "不对称", "ş"]
    texts += [text[:cut] + "中" + text[cut:] for text in cues for cut in range(1, len(text))]
    for _ in range(4000):
        texts.append("".join(chooser.choice(pieces) for _ in range(chooser.randint(0, 8))))
    for index in indexes:
        for text in texts:
            assert index.active(text) == _plain(index, text), text
            assert index.find(text)[1] == _ends(index, text), text


def _ends(index, lowered: str) -> list[int]:
    """Where each occurrence of each cue text ends (its last character), ascending."""
    ends = []
    for text in {cue.text for cue in index.cues}:
        pos = lowered.find(text)
        while pos >= 0:
            ends.append(pos + len(text) - 1)
            pos = lowered.find(text, pos + 1)
    return sorted(ends)


def test_no_extra_cues_is_one_index_however_it_is_said():
    assert cue_index() is cue_index(None) is cue_index({}) is cue_index({"decision": ()})
    assert cue_index({"decision": ("ship it",)}) is not cue_index()
