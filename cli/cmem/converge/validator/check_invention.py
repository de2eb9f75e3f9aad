"""The invention warnings: a statement few of whose words occur in the notes it cites may be
invented; a statement changed without a trace (kept as a rewording or a merge of an old one)
whose added words occur in none of the notes it cites may change a fact unseen ("I sometimes live
in Berlin" for "I live in Berlin"). The model is asked once to cite the note that says it, trace
the change, or drop it; then the reply is applied with the warning in the commit."""

from __future__ import annotations

from functools import lru_cache

from cmem.converge.validator.reply_reading import (
    ChangeRule,
    ReplyReading,
    ReplyRule,
    RuleKey,
    reply_fact,
    short_text,
)
from cmem.converge.validator.rules import INVENTION, UNTRACED
from cmem.text.folding import fold
from cmem.text.scripts import cjk_count
from cmem.text.terms import EN_GRAMMAR, bigrams
from cmem.text.words import latin_word_count, script_parts

# Below this share of a statement's words found in its cited notes, it may be invented.
INVENTION_THRESHOLD = 0.3
# A statement in one script citing a note in another (an English statement from a Chinese note)
# shares only names and numbers with it (uv, Python, 1500): across scripts, a statement is
# suspect only when the names and numbers there are to share are not shared at all.
_INVENTION_MIN_TOKENS = 3


@reply_fact
def _words_by_note(reply: ReplyReading) -> dict[str, set[str]]:
    """Cited note name → its words (filled by `source_words`)."""
    return {}


def source_words(reply: ReplyReading, name: str) -> set[str]:
    """A cited note's words, tokenised once however many statements cite it."""
    words = _words_by_note(reply)
    if name not in words:
        words[name] = word_tokens(reply.cited_text(name) or "")
    return words[name]


def check_invention(reply: ReplyReading) -> None:
    for change in reply.changes:
        base_keys = change.base.keys if change.base else set()
        for statement in change.new.statements:
            if statement.key in base_keys:
                continue
            cited = [name for name in statement.sources if reply.cited_text(name) is not None]
            words = word_tokens(statement.core)
            if not cited or len(words) < _INVENTION_MIN_TOKENS:
                continue
            note_words = set().union(*(source_words(reply, name) for name in cited))
            overlap = len(words & note_words) / len(words)
            if any(
                _mostly_cjk(statement.core) == _mostly_cjk(reply.cited_text(name) or "")
                for name in cited
            ):
                suspect = overlap < INVENTION_THRESHOLD
            else:
                # a translation: judge on the names and numbers (ASCII words) one side offers
                offered = {
                    w for w in (words if _mostly_cjk(statement.core) else note_words) if w.isascii()
                }
                suspect = bool(offered) and not (
                    offered & (note_words if _mostly_cjk(statement.core) else words)
                )
            if suspect:
                links = ", ".join(f"[[{name}]]" for name in cited)
                reply.warn(
                    change.path,
                    statement.line_no,
                    INVENTION,
                    f"few of the words of {short_text(statement.core, 50)!r} occur in its cited source {links} ({overlap:.0%}); it may be invented — cite the note that says this, or drop it",
                )


def _mostly_cjk(text: str) -> bool:
    """Written mostly in Chinese (or Japanese, Korean): a CJK character against a Latin word."""
    return cjk_count(text) > latin_word_count(text)


def word_tokens(text: str) -> set[str]:
    """Words for overlap: lower-cased words of other scripts, and bigrams of each CJK run (CJK
    is not written with spaces, and single characters match too easily)."""
    tokens: set[str] = set()
    for part, cjk in script_parts(fold(text)):
        if cjk:
            tokens.update(bigrams(part) or [part])
        elif part not in EN_GRAMMAR and (len(part) > 1 or part.isdigit()):
            tokens.add(part)
    return tokens


@reply_fact
def _stems_by_note(reply: ReplyReading) -> dict[str, frozenset[str]]:
    """Cited note name → its content words as rule 4 compares them (filled by `source_stems`)."""
    return {}


def source_stems(reply: ReplyReading, name: str) -> frozenset[str]:
    from cmem.converge.validator.kept_words import kept_words

    stems = _stems_by_note(reply)
    if name not in stems:
        stems[name] = kept_words(reply.cited_text(name) or "")
    return stems[name]


@lru_cache(maxsize=1)
def _factless() -> frozenset[str]:
    from cmem.converge.validator.kept_words import kept_words
    from cmem.text.terms import EN_FACTLESS

    return kept_words(" ".join(EN_FACTLESS))


def check_untraced_changes(reply: ReplyReading) -> None:
    """A statement that took an old one's place without a trace (a merge, declared or found:
    every old word kept) and added words that no note it cites holds: the change of fact a
    trace would have declared may hide in them."""
    from cmem.converge.validator.kept_words import kept_words

    olds: dict[tuple[str, str], set[str]] = {}  # (file, new statement) → the old words it holds
    for merged in reply.result.merged:
        key = (merged["file"], merged["into"])
        olds.setdefault(key, set()).update(kept_words(merged["statement"]))
    by_core = {
        (change.path, statement.core): statement
        for change in reply.changes
        for statement in change.new.statements
    }
    for (path, core), old_words in olds.items():
        statement = by_core.get((path, core))
        cited = (
            [n for n in statement.sources if reply.cited_text(n) is not None] if statement else []
        )
        if statement is None or not cited:
            continue
        added = set(kept_words(core)) - old_words - _factless()
        supported = set().union(*(source_stems(reply, name) for name in cited))
        unsupported = sorted(added - supported)
        if not added or len(unsupported) < len(added):
            continue  # it adds nothing, or its sources say some of what it adds
        links = ", ".join(f"[[{name}]]" for name in cited)
        reply.warn(
            path,
            statement.line_no,
            UNTRACED,
            f"{short_text(core, 50)!r} changes an old statement without a trace, by words none of "
            f"its sources {links} holds ({', '.join(unsupported[:5])}); if a fact changed, rewrite "
            "it with a trace and cite the note that says so, else keep the old wording",
        )


# The rules this module checks, each under its id, in the order they run: on each file block,
# then on the reply as a whole (`validate.py` runs the modules in `RULE_MODULES` order).
CHANGE_RULES: dict[RuleKey, ChangeRule] = {}
REPLY_RULES: dict[RuleKey, ReplyRule] = {
    INVENTION: check_invention,
    UNTRACED: check_untraced_changes,
}
