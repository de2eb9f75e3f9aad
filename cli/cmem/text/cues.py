"""The cue vocabulary (docs/design.md §2): the four signal classes in priority order, the literal
cues of each class (zh and en) with the context each must or must not stand in, and `CueIndex`,
which tells which cues a text holds in one pass over it.

Text only, knowing nothing else of cmem: the scan's context rules (`scan/matching.py`) read
these cues, and users add their own with `signals.extra_cues` in the config. A newcomer adds a
cue to the tables `_CORRECTION`, `_PREFERENCE`, `_DECISION`, `_RECURRING` below.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

SIGNAL_CLASSES = ("correction", "preference", "decision", "recurring")
PRIORITY = {name: index + 1 for index, name in enumerate(SIGNAL_CLASSES)}


@dataclass(frozen=True)
class Cue:
    """One literal cue and the context it must (not) stand in. `text` is lowercase.

    Latin cues match on word boundaries; `before_not` and `before_ok` are whole previous words,
    `after_not` phrases that may follow. CJK cues match inside text; `before_not` and `after_not`
    are strings that may not touch the cue (不对 in 对不对 or 不对称), and `alone` wants a
    punctuation mark, a particle or the line end right after (决定了， but not 决定了命运)."""

    text: str
    cls: str
    latin: bool
    before_not: tuple[str, ...] = ()
    after_not: tuple[str, ...] = ()
    clause_start: bool = False  # latin: only at the start of a clause, or after a `before_ok` word
    before_ok: tuple[str, ...] = ()
    alone: bool = False
    rule: str = ""  # a named special rule ("you" for 又)

    @property
    def priority(self) -> int:
        return PRIORITY[self.cls]


def _en(
    text: str, start: bool = False, ok: str = "", before: str = "", after: str = "", rule: str = ""
) -> dict:
    return {
        "text": text,
        "latin": True,
        "clause_start": start,
        "before_ok": tuple(ok.split()),
        "rule": rule,
        "before_not": tuple(before.split()),
        "after_not": tuple(p.strip() for p in after.split("|") if p.strip()),
    }


def _zh(text: str, before: str = "", after: str = "", alone: bool = False, rule: str = "") -> dict:
    return {
        "text": text,
        "latin": False,
        "before_not": tuple(before.split()),
        "after_not": tuple(after.split()),
        "alone": alone,
        "rule": rule,
    }


_NOT_A_SLIP = "别 怕 会 能 易 免 防 不要 不会 避免"  # 别写错了 warns, it does not correct
_CORRECTION = [
    _zh(
        "其实不是", after="很 太 那么 非常 特别 十分 所有 每"
    ),  # 其实不是很难: a remark, not a correction
    _zh("你写错了"),
    _zh("写错了", before=_NOT_A_SLIP),
    _zh("你搞错了"),
    _zh("搞错了", before=_NOT_A_SLIP),
    _zh("弄错了", before=_NOT_A_SLIP),
    _zh("说错了", before=_NOT_A_SLIP),
    _zh("记错了", before=_NOT_A_SLIP),
    _zh("我说的是", after="真 对 实话 事实"),
    _zh("我的意思是"),
    # 更正式 / 更正确 / 更正常 are 更 + an adjective
    _zh("更正", after="式 确 常 经 宗 面 义 直 规 当 好 大 新 多"),
    _zh("纠正"),
    # 对不对 asks; 不对称, 不对劲, 不对外, 不对齐 … are words of their own
    _zh(
        "不对",
        before="对",
        after="称 劲 付 口 应 等 头 路 症 号 盘 味 齐 焦 接 比 吗 外 准 着 立 抗 象 照 话 手 位 版",
    ),
    _en("that's wrong"),
    _en("that is wrong"),
    _en("that's not right"),
    _en("that is not right"),
    _en("that's not true"),
    _en("that's incorrect"),
    _en("you're wrong"),
    _en("you got it wrong"),
    _en("you got that wrong"),
    _en("not what i meant"),
    _en("not what i said"),
    _en("scratch that"),
    _en("i misspoke"),
    _en("i was wrong"),
    _en("i stand corrected"),
    _en("i meant", after="to|it|well"),  # "I meant to call" is an intention
    # "actually" is mostly filler ("it actually works"); it corrects at a clause start or after a copula
    _en("actually", start=True, ok="is was are were it's that's isn't wasn't aren't no"),
    _en("correction", start=True),  # "error correction" is a noun phrase
]

_BIE_WORDS = "特 区 分 告 类 性 级 个 识 辨 差 离 派 鉴 判 甄 送 道 惜 久 诀 临 话 作 拜 永 职"  # 特别再, 分别再 …
_PREFERENCE = [
    # 我喜欢的编辑器是 Helix states a preference, 我喜欢的那家店关门了 tells a story: see _de_fits
    _zh("我不喜欢", rule="de"),
    _zh("我更喜欢", rule="de"),
    _zh("我最喜欢", rule="de"),
    _zh("我喜欢", rule="de"),
    _zh("我讨厌", rule="de"),
    _zh("我偏好"),
    _zh("我倾向于"),
    _zh("永远别"),
    _zh("永远不要"),
    _zh("千万别"),
    _zh("千万不要"),
    _zh("以后都", after="行 可以 再说 好说 不知道 一样 没"),
    _zh("以后别"),
    _zh("以后不要"),
    _zh("以后一律"),
    _zh("不要再", before="要"),  # 要不要再试一次 asks
    _zh("别再", before=_BIE_WORDS),
    _zh("一律", before="篇"),  # 千篇一律
    _zh("务必"),
    _zh("请始终"),
    _zh("请一直"),
    _zh("我的原则"),
    _en("i prefer"),
    _en("i'd prefer"),
    _en("i would prefer"),
    _en("i'd rather"),
    _en("i would rather"),
    _en("i like", after="to think"),
    _en("i really like"),
    _en("i don't like"),
    _en("i do not like"),
    _en("i don't really like"),
    _en("i really don't like"),
    _en("i dislike"),
    _en("i can't stand"),
    _en("i hate", after="to say|to admit|to break"),
    _en("from now on"),
    _en("don't ever"),
    _en("do not ever"),
    _en("please don't"),
    _en("please do not"),
    _en("rule of thumb"),
    _en("my rule"),
    _en("going forward", before="is are was were be been keep kept it's that's we're they're"),
    # never/always state a rule in the imperative or with a subject that chooses ("I never …");
    # "never mind", "not always", "I've never been", "I always forget" are not rules
    _en(
        "never",
        start=True,
        ok="please should must to will i'll we'll shall i we just",
        before="not almost nearly hardly i've we've you've they've have has had",
        after="mind|knew|know|got|get|thought|think|saw|seen|heard|had|was|were|did|been|ever|really|worked|works|understood|learned",
    ),
    _en(
        "always",
        start=True,
        ok="please should must to will i'll we'll shall i we just",
        before="not almost nearly as like isn't aren't wasn't weren't",
        after="forget|forgot|forgets|been|had|was|were|seem|seems|happens|on|the|a|an|late|breaks|fails|crashes|gets|got|ends|wanted|thought|knew",
    ),
]

_DECISION = [
    _zh("我决定", after="不了 不下"),
    _zh("我们决定", after="不了 不下"),
    _zh("决定了", alone=True),  # 性格决定了命运 is "determined"
    _zh("改用", before="修 更 篡 批 删 涂 窜 整", after="户 例 途 法"),  # 修改用户, 改用例
    _zh(
        "换成", before="转 兑 替 切", after="本 员 绩 果 功"
    ),  # 转换成 converts, 换成本 is 换 + 成本
    _zh("换用"),
    _zh("搬到了"),
    _zh("搬家到"),
    _zh("想通了"),
    _zh("想明白了"),
    _zh("就这么定了"),
    _zh("定下来了"),
    _zh("不再用"),
    _zh("拍板"),
    _en("i decided"),
    _en("i've decided"),
    _en("i have decided"),
    _en("we decided"),
    _en("we've decided"),
    _en("we have decided"),
    _en("decided to", before="he she they it who you"),
    _en("i'm switching"),
    _en("i am switching"),
    _en("switching to"),
    _en("switched to"),
    _en("switching from"),
    _en("switched from"),
    _en("i moved to"),
    _en("i've moved to"),
    _en("we moved to"),
    # "I switched my blog from Ghost to Astro": the object sits between the verb and from/to
    _en("i switched"),
    _en("i've switched"),
    _en("i have switched"),
    _en("we switched"),
    _en("we've switched"),
    _en("i'll go with"),
    _en("we'll go with"),
    _en(
        "going with",
        before="it it's how's what's",
        after="the flow|friends|a friend|my|her|him|them|us|family|mom|dad|someone|somebody|you",
    ),
    _en(
        "figured out", before="haven't hasn't havent not never can't cannot couldn't didn't to yet"
    ),
    _en("i chose"),
    _en("we chose"),
    _en("i've chosen"),
    _en("settled on"),
    _en("changed my mind"),
    _en("made up my mind"),
    _en("stopped using"),
    _en("no longer using"),
    _en("i'm dropping"),
    _en("i am dropping"),
]

_RECURRING = [
    _zh("每次都"),
    _zh("每回都"),
    _zh("老毛病"),
    _zh("老是"),
    _zh("总是", before="不 并不"),
    _zh("一再"),
    _zh("屡次"),
    _zh("一而再"),
    _zh("反反复复"),
    _zh("又", rule="you"),
    _en("every time", after="zone|zones"),
    _en("every single time"),
    _en("as usual"),
    _en("over and over"),
    _en("time and again"),
    _en("keeps happening"),
    _en("keep forgetting"),
    _en("keeps forgetting"),
    _en("same mistake"),
    _en("for the nth time"),
    _en("always forget"),
    _en("always forgets"),
    # with a subject that does not choose, always/never describe a pattern ("I always end up
    # rewriting it", like 总是) — the user's own only: "cmem never reads them", "the plugin
    # always asks" is how a manual speaks; as rules they matched above, as preferences
    _en(
        "always",
        before="not almost nearly as like isn't aren't wasn't weren't",
        after="on|the|a|an|been|had|was|were|wanted|thought|knew",
        rule="own",
    ),
    _en(
        "never",
        before="not almost nearly hardly i've we've you've they've have has had",
        after="mind|knew|know|thought|think|been|ever|really|understood|learned|again",
        rule="own",
    ),
    # "again" is also "once more" (once again, try again, read the chapter again, then again)
    _en(
        "again",
        rule="again",
        before="once try tried trying retry check checked read reread run rerun ran start started "
        "restart see seeing meet meeting over say said ask asked tell think thinking then and",
    ),
]

_TABLE = {
    "correction": _CORRECTION,
    "preference": _PREFERENCE,
    "decision": _DECISION,
    "recurring": _RECURRING,
}


@lru_cache(maxsize=16)
def _cue_index(extra: tuple[tuple[str, tuple[str, ...]], ...]) -> CueIndex:
    """All cues in priority order (a class's configured cues before its built-in ones), indexed."""
    extra_by_class = dict(extra)
    cues: list[Cue] = []
    for cls in SIGNAL_CLASSES:
        for text in extra_by_class.get(cls, ()):
            text = _fold(text.strip())
            if text:
                cues.append(Cue(text=text, cls=cls, latin=text.isascii()))
        for spec in _TABLE[cls]:
            cues.append(Cue(cls=cls, **spec))
    return CueIndex(tuple(cues))


def cue_index(extra_cues: dict[str, tuple[str, ...]] | None = None) -> CueIndex:
    if not extra_cues:
        return _cue_index(())  # the common case, asked once a note by a scan: no key to build
    extra = tuple(sorted((cls, tuple(words)) for cls, words in extra_cues.items() if words))
    return _cue_index(extra)


def cue_set(extra_cues: dict[str, tuple[str, ...]] | None = None) -> tuple[Cue, ...]:
    return cue_index(extra_cues).cues


def cue_fingerprint(extra_cues: dict[str, tuple[str, ...]] | None = None) -> str:
    """Changes whenever detection would: the scan cache keys on it."""
    return repr(
        [
            (c.text, c.cls, c.before_not, c.after_not, c.clause_start, c.before_ok, c.alone, c.rule)
            for c in cue_set(extra_cues)
        ]
    )


class CueIndex:
    """Which cues occur in a text, found in one pass over it: an Aho-Corasick automaton of every
    cue text (pyahocorasick, in C) reports each occurrence, overlapping ones included, so the
    answer is exactly "the cues whose text is in it".

    It replaced one `in` scan per cue (or per shared English anchor: 46 of them) and a regex
    alternation for the Chinese cues with overlap checks: each `in` runs at memory speed, but 46
    of them read a note 46 times. The automaton's one pass finds a note's cues in less time,
    and its index is built faster than the anchors and overlaps were before every cold scan."""

    def __init__(self, cues: tuple[Cue, ...]):
        import ahocorasick  # here: commands that read the cue tables alone never build an index

        self.cues = cues
        self.order = {cue: index for index, cue in enumerate(cues)}
        self.by_text: dict[str, list[Cue]] = {}
        for cue in cues:
            self.by_text.setdefault(cue.text, []).append(cue)
        self._automaton = ahocorasick.Automaton()
        for text in self.by_text:
            self._automaton.add_word(text, text)
        if self.by_text:
            self._automaton.make_automaton()

    def active(self, lowered: str) -> list[Cue]:
        """The cues whose text occurs in `lowered`, in priority order."""
        return self.find(lowered)[0]

    def find(self, lowered: str) -> tuple[list[Cue], list[int]]:
        """`active(lowered)`, and where their texts occur: the index of each occurrence's last
        character, ascending (the scan's candidate lines come from these, with no second search)."""
        if not self.by_text:
            return [], []
        ends, texts = [], set()
        for end, text in self._automaton.iter(lowered):
            ends.append(end)
            texts.add(text)
        if not texts:
            return [], []
        found = [cue for text in texts for cue in self.by_text[text]]
        found.sort(key=self.order.__getitem__)
        return found, ends


def _fold(text: str) -> str:
    """Lowercase, and one apostrophe, so `don’t like` matches `don't like`. Keeps offsets in lines."""
    text = text.lower()
    return text.replace("’", "'") if "’" in text else text
