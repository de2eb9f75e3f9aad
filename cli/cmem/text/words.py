"""Text split into words and terms: the one module that does (issue 45).

Each function names the split it makes and why it differs from the others; what a caller then
leaves out (stop words, stems) is its own rule, in its own module. Callers fold first
(`text/folding.py`) where they compare; splits that keep case say so. Chinese (and Japanese,
Korean) has no spaces: its runs come out as bigrams (`text/terms.py: bigrams`), single
characters or whole runs, as each use needs. Knows nothing else of cmem.

Patterns are compiled on first use: a stored `context` imports `topic_terms` and compiles
nothing unless a topic is asked.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (which imports re)
if TYPE_CHECKING:
    import re
    from collections.abc import Iterator

# Letters and digits of any script, nothing else: a word as Unicode sees it.
WORD_RUN = r"[^\W_]+"
# A tool's or a thing's name as the builtin engine compares lines (folded text): `node.js`, `c++`,
# `c#`, `snake_case` stay one word.
TOOL_WORD = r"[a-z0-9][a-z0-9.+#_-]*"
# A context topic's words (lower-cased): as `TOOL_WORD` without `#`, which a topic never holds.
TOPIC_WORD = r"[a-z0-9][a-z0-9_+.-]*"
# A word as written, case and position kept, for substituting it in place: an ASCII start, then
# any word characters (`uv管理` is one word there).
WRITTEN_WORD = r"[A-Za-z0-9][\w.+#-]*"
# A name that may fill a slot (lower-cased): a letter first, never inside a longer name.
SLOT_NAME = r"(?<![a-z0-9_.+#-])[a-z][a-z0-9+#-]*"
# A capitalised name, not the tail of a word: what a Chinese line names in Latin letters.
CAPITALISED_NAME = r"(?<![A-Za-z])[A-Z][A-Za-z0-9.+#-]+"
# A phrase's tokens, punctuation included: a noun phrase ends at any mark.
PHRASE_TOKEN = r"[A-Za-z][A-Za-z0-9.+#-]*(?:['’][A-Za-z]+)?|\d[\w.]*|[^\sA-Za-z\d]"
# Latin letters alone: how many Latin words a line holds, against its CJK characters.
LATIN_LETTERS = r"[A-Za-z]+"
# English words with their apostrophes (lower-cased): `i'm`, `don't` are the words a clause reads.
CLAUSE_WORD = r"[a-z']+"
# An English word of two letters or more, hyphens and apostrophes inside (lower-cased): a key.
KEY_WORD = r"[a-z][a-z'-]+"
# A Latin word, or any one character outside ASCII: the content-unit count's tokens (a class of
# every CJK code point would find the same, at the cost of compiling it).
UNIT_TOKEN = r"[a-z0-9][a-z0-9'_-]*|[^\x00-\x7f]"
# Whole ASCII words, and those all in capitals: shouting is told by their share.
LATIN_WORD = r"(?a)\b[A-Za-z][A-Za-z']*\b"
CAPS_WORD = r"(?a)\b[A-Z][A-Z']+\b"
# The parts of an identifier: `publicKey`, `PUBLIC_KEY`, `api-key` split where a word starts.
IDENTIFIER_PART = r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])"

_COMPILED: dict[str, re.Pattern[str]] = {}


def pattern(source: str) -> re.Pattern[str]:
    """One of this module's patterns, compiled once."""
    found = _COMPILED.get(source)
    if found is None:
        import re

        found = _COMPILED[source] = re.compile(source)
    return found


def word_runs(text: str) -> list[str]:
    """Runs of letters and digits, any script, punctuation and `_` between: the widest split."""
    return pattern(WORD_RUN).findall(text)


def script_parts(text: str) -> list[tuple[str, bool]]:
    """Each word run (`word_runs`) cut where its script changes, in order, as (part, whether a
    CJK run): `uv管理依赖` is `uv` and `管理依赖`, the runs a word-less script needs split apart."""
    parts: list[tuple[str, bool]] = []
    for run in word_runs(text):
        if run.isascii():
            parts.append((run, False))
            continue
        at = 0
        for match in cjk_run_matches(run):
            if match.start() > at:
                parts.append((run[at : match.start()], False))
            parts.append((match.group(), True))
            at = match.end()
        if at < len(run):
            parts.append((run[at:], False))
    return parts


def words_and_bigrams(text: str) -> list[str]:
    """Words, and the bigrams of each CJK run (a one-character run stays one), in order: what a
    search term or an overlap of two texts is made of, since one CJK character matches too much."""
    if text.isascii():  # no CJK run: the CJK tables are not even imported (a light recall)
        return word_runs(text)
    from cmem.text.terms import bigrams

    found: list[str] = []
    for part, cjk in script_parts(text):
        if cjk:
            found.extend(bigrams(part) or [part])
        else:
            found.append(part)
    return found


def cjk_run_matches(text: str) -> Iterator[re.Match[str]]:
    """Each run of CJK characters (Han, kana, Hangul) with its position."""
    from cmem.text.scripts import CJK_RUN

    return CJK_RUN.finditer(text)


def cjk_runs(text: str) -> list[str]:
    """Each run of CJK characters (Han, kana, Hangul): where a script without spaces is written."""
    from cmem.text.scripts import CJK_RUN

    return CJK_RUN.findall(text)


def han_runs(text: str) -> list[str]:
    """Each run of Chinese characters alone: the builtin engine's bigrams and old sides, which
    kana and Hangul never hold."""
    from cmem.text.scripts import HAN_RUN

    return HAN_RUN.findall(text)


def cjk_spaced(text: str) -> str:
    """The text with each CJK run written as its characters and its bigrams, space-separated, and
    everything else as it was: a CJK run as a word tokenizer (SQLite's `unicode61`) can index."""
    from cmem.text.terms import bigrams

    parts = []
    position = 0
    for match in cjk_run_matches(text):
        parts.append(text[position : match.start()])
        run = match.group()
        parts.append(" ".join(run))
        if len(run) > 1:
            parts.append(" ".join(bigrams(run)))
        position = match.end()
    parts.append(text[position:])
    return " ".join(parts)


def tool_words(text: str) -> list[str]:
    """`TOOL_WORD`s of folded text: the words the builtin engine compares lines by."""
    return pattern(TOOL_WORD).findall(text)


def topic_terms(topic: str) -> list[str]:
    """A context topic's terms: English words of two characters or more and Chinese character
    pairs (a one-character run stays, so a two-character query still matches)."""
    from cmem.text.terms import bigrams

    terms = [w for w in pattern(TOPIC_WORD).findall(topic.lower()) if len(w) > 1]
    if not topic.isascii():
        for run in han_runs(topic):
            terms.extend(bigrams(run) or [run])
    return terms


def written_words(text: str) -> list[re.Match[str]]:
    """`WRITTEN_WORD`s with their positions, case kept."""
    return list(pattern(WRITTEN_WORD).finditer(text))


def name_words(text: str) -> list[str]:
    """`SLOT_NAME`s of lower-cased text, in order."""
    return pattern(SLOT_NAME).findall(text)


def capitalised_names(text: str) -> list[str]:
    """`CAPITALISED_NAME`s, in order."""
    return pattern(CAPITALISED_NAME).findall(text)


def phrase_tokens(text: str) -> list[str]:
    """`PHRASE_TOKEN`s: words, numbers and each punctuation mark, in order."""
    return pattern(PHRASE_TOKEN).findall(text)


def latin_word_count(text: str) -> int:
    """How many runs of Latin letters the text holds."""
    return len(pattern(LATIN_LETTERS).findall(text))


def clause_words(text: str) -> list[str]:
    """`CLAUSE_WORD`s of lower-cased text, in order."""
    return pattern(CLAUSE_WORD).findall(text)


def key_words(text: str) -> Iterator[str]:
    """`KEY_WORD`s of lower-cased text, one at a time: a caller that has enough stops reading."""
    return (match.group() for match in pattern(KEY_WORD).finditer(text))


def unit_tokens(text: str) -> Iterator[str]:
    """`UNIT_TOKEN`s, one at a time: the count stops as soon as it has enough."""
    return (match.group() for match in pattern(UNIT_TOKEN).finditer(text))


def latin_words(text: str) -> list[str]:
    """Whole ASCII words (`LATIN_WORD`), case kept."""
    return pattern(LATIN_WORD).findall(text)


def caps_words(text: str) -> list[str]:
    """Whole ASCII words in capitals (`CAPS_WORD`)."""
    return pattern(CAPS_WORD).findall(text)


def identifier_parts(text: str) -> list[str]:
    """The words of an identifier (`IDENTIFIER_PART`), case kept."""
    return pattern(IDENTIFIER_PART).findall(text)
