"""Stop words: the words that say nothing about what a line is about, in one place.

Each use leaves out a different amount, so the lists are built from shared parts rather than
forced into one:

- `EN_GRAMMAR`: English articles, pronouns, prepositions, auxiliaries — left out everywhere.
  Alone, it is what the validator's invention check leaves out (`converge/validator/validate.py`).
- `EN_STOP`: the builtin engine's terms and leading words (`converge/builtin/line_words.py`): grammar plus
  common verbs and adverbs (a decision about "always use uv" is about uv).
- `EN_FILLER`: the scan's content units (`scan/tone.py`): grammar plus chat filler (lol, ok,
  stuff) — a line of filler says nothing worth a memory.
- `EN_KEY_STOP`: the scan's recurrence keys: filler plus words of time and routine, which every
  recurring line shares ("again today", "every week").
- `ZH_COMMON_BIGRAMS`: Chinese two-character words that carry no topic (这个, 因为); with
  `ZH_CUE_BIGRAMS` (the builtin engine: bigrams of the cue words themselves, which every
  correction shares) or `ZH_KEY_BIGRAMS` (recurrence keys: time words, hedges).
- `ZH_FUNCTION_CHARS`: single Chinese characters that are particles, pronouns and auxiliaries;
  the content-unit count adds filler and light verbs (`ZH_UNIT_STOP`), the recurrence keys add
  prepositions and the passive (`ZH_KEY_STOP`).
- `EN_QUERY_STOP` and `is_query_stop`: what a recall query leaves out, so that its function words
  ("how", "did", "the", 了, 的) never outrank its content words (`reading/index_query.py`).
"""

from __future__ import annotations

EN_GRAMMAR = frozenset(
    "a an and are as at be but by for from has have he her his i in is it its me my no not of on "
    "or our she so that the their them they this to was we were what when which who will with you "
    "your".split()
)
EN_STOP = EN_GRAMMAR | frozenset(
    "about actually after again all also always any been before being can could did do does done "
    "each every get go going got had here how i'm if into it's just made make may might mine more "
    "most must never new now off one only out over really same should some still than then there "
    "these those too up use used using very went while why would yes".split()
)
# Words a rewording may add without changing a fact: the stop words and a few more, less those
# of frequency, quantity, modality and negation, which do change one ("I sometimes live …").
EN_FACTLESS = (EN_STOP | frozenset("am where whose".split())) - frozenset(
    "again all always any can could each every may might more most must never new only same "
    "should some still would".split()
)
EN_FILLER = EN_GRAMMAR | frozenset(
    "again anyway did didn't do does don't here hmm i'd i'll i'm i've it's just lol now oh ok okay "
    "one really stuff that's there these thing things those though too very way well yes".split()
)
EN_KEY_STOP = EN_FILLER | frozenset(
    "about after all any before day every first get gets go goes going got had into keep keeps "
    "last made make more much once over same some still take then time times today tomorrow took "
    "us usual week went yesterday".split()
)

ZH_COMMON_BIGRAMS = frozenset(
    "什么 但是 可以 因为 就是 已经 怎么 我们 所以 时候 每次 毛病 没有 老毛 还是 这个 那个".split()
)
ZH_CUE_BIGRAMS = ZH_COMMON_BIGRAMS | frozenset(
    "其实 实不 不是 我说 说的 的是 以后 后都 永远 远别 不要 要再 我喜 喜欢 我不 不喜 次都 我决 决定 "
    "定了 想通 通了 改用 换成 改成 不再 不用 真正 一个 的时".split()
)
ZH_KEY_BIGRAMS = ZH_COMMON_BIGRAMS | frozenset(
    "一下 一直 上午 下午 今天 他们 总是 感觉 早上 明天 昨天 晚上 然后 现在 真的 老是 自己 觉得 "
    "问题".split()
)

ZH_FUNCTION_CHARS = frozenset(
    "一不与个也了他会你再去又吗吧呀呢和啊在太她它就很我是有来没的着能要说过还这那都"
)
ZH_UNIT_STOP = ZH_FUNCTION_CHARS | frozenset("下么些做哈哦啦喔嗯嘛地对弄得想搞样欸点诶")
ZH_KEY_STOP = ZH_FUNCTION_CHARS | frozenset("到把给被让")

# A question's own grammar: the question words and auxiliaries that every question shares. "never",
# "always", "new" stay: they change what is asked.
EN_QUERY_STOP = EN_GRAMMAR | frozenset(
    "about am any been being can could did do does doing had how into just many much shall should "
    "some than then there these those very where whom whose why would "
    # what an apostrophe leaves of a contraction or a possessive ("Jon's", "don't")
    "s t d ll m re ve".split()
)
# Particles that glue a Chinese sentence together: a bigram holding one straddles two words
# (去了, 的书) unless it is one of the few words they make.
ZH_PARTICLES = frozenset("的了吗呢吧啊呀嘛哦么")
ZH_PARTICLE_WORDS = frozenset("了解 的确 目的".split())


def is_query_stop(term: str) -> bool:
    """Whether a recall query's term (a word, or a CJK bigram or character) is a function word."""
    if term.isascii():
        return term in EN_QUERY_STOP
    if len(term) == 1:
        return term in ZH_UNIT_STOP
    if len(term) != 2 or term in ZH_PARTICLE_WORDS:
        return False
    if term in ZH_COMMON_BIGRAMS or all(char in ZH_FUNCTION_CHARS for char in term):
        return True
    return any(char in ZH_PARTICLES for char in term)


def bigrams(run: str) -> list[str]:
    """Every two neighbouring characters of a CJK run: Chinese has no spaces, and two characters
    are the shortest unit that carries a topic. A one-character run has none; callers that keep
    it say `bigrams(run) or [run]`."""
    return [run[i : i + 2] for i in range(len(run) - 1)]
