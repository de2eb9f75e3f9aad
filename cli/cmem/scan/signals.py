"""Signals: what a scan looks for in divergent notes (SPEC §2).

Four classes in priority order — correction, preference, decision, recurring — found by cues
(zh and en, extendable in config), never inside code blocks, inline code, URLs, HTML comments,
wikilink targets or frontmatter. One line gives at most one signal: its highest-priority cue.

Matching is literal, not regex: Python's `re` over this cue set runs ~15x slower than rg, a
`str in` test per cue ~3x (perf-baselines.md §4). So a note is first tested cue by cue on one
lowercased copy; only the lines that hold a cue are looked at again, and only there do the
context rules run (word boundaries, the words around an English cue, the characters around a
Chinese one). A note without any cue costs one `lower()` and one `in` per cue.

Single, vague or emotional lines are *deferred*, not dropped: a one-off recurring cue, venting,
or a line with nothing left to act on once the cue is taken out. `converge: true` / `#converge`
confirms a note (its deferred lines become signals), `converge: false` / `#noconverge` excludes it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from cmem.text.scripts import CJK, CJK_RUN, is_cjk
from cmem.text.terms import (
    EN_FILLER,
    EN_KEY_STOP,
    ZH_KEY_BIGRAMS,
    ZH_KEY_STOP,
    ZH_UNIT_STOP,
    bigrams,
)
from cmem.vault.notes import Note, parse_frontmatter_block
from cmem.vault.state_json import line_key
from cmem.vault.statements import WIKILINK, normalize, split_statement

SIGNAL_CLASSES = ("correction", "preference", "decision", "recurring")
PRIORITY = {name: index + 1 for index, name in enumerate(SIGNAL_CLASSES)}

# Why a line is deferred rather than a signal (Deferred.kind).
ONE_OFF, VENTING, VAGUE, EXCLUDED, ALREADY_CONVERGED = (
    "one-off",
    "venting",
    "vague",
    "excluded",
    "converged",
)


@dataclass(frozen=True)
class Signal:
    note: str  # vault-relative path
    line: int  # 1-based, in the file as it is on disk
    cls: str  # one of SIGNAL_CLASSES ("class" in JSON)
    cue: str
    excerpt: str  # the line, trimmed to a readable length

    @property
    def priority(self) -> int:
        return PRIORITY[self.cls]

    def to_json(self) -> dict:
        return {
            "note": self.note,
            "line": self.line,
            "class": self.cls,
            "priority": self.priority,
            "cue": self.cue,
            "excerpt": self.excerpt,
        }


@dataclass(frozen=True)
class Deferred:
    note: str
    line: int  # 0 when the whole note is deferred
    reason: str
    cls: str | None = None  # the class the line would have, so a confirmation keeps it
    cue: str = ""
    kind: str = ""  # ONE_OFF | VENTING | VAGUE | EXCLUDED | ALREADY_CONVERGED
    excerpt: str = ""

    def to_json(self) -> dict:
        data = {"note": self.note, "line": self.line, "reason": self.reason, "kind": self.kind}
        if self.cls:
            data.update({"class": self.cls, "cue": self.cue, "excerpt": self.excerpt})
        return data


@dataclass
class PendingNote:
    """A divergent note with at least one signal not yet converged."""

    rel: str
    name: str  # wikilink name
    sha256: str
    mtime_ns: int
    signals: list[Signal] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)  # frontmatter tags and inline #tags
    links: list[str] = field(default_factory=list)  # wikilink targets in the body
    confirmed: bool = False  # `converge: true` or #converge

    @property
    def best_priority(self) -> int:
        return min((s.priority for s in self.signals), default=9)

    def to_json(self) -> dict:
        return {
            "note": self.rel,
            "name": self.name,
            "signals": len(self.signals),
            "best_priority": self.best_priority,
            "tags": self.tags,
            "links": self.links,
            "confirmed": self.confirmed,
        }


# --- cues -------------------------------------------------------------------------------


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
def _cue_index(extra: tuple[tuple[str, tuple[str, ...]], ...]) -> "CueIndex":
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


def cue_index(extra_cues: dict[str, tuple[str, ...]] | None = None) -> "CueIndex":
    extra = tuple(sorted((cls, tuple(words)) for cls, words in (extra_cues or {}).items() if words))
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


_ANCHOR_STOP = set(
    "i i'd i'll i'm i've we we'll we've you you're my the to it is am do don't not no that that's what was "
    "have with of on up as and for from got out now over would really".split()
)


class CueIndex:
    """Which cues occur in a text, at the cost of few literal scans: each `in` over a note costs
    the same whatever the cue, so the fewer literals the better. Chinese cues go through one
    regex alternation (they start with rare characters, where `re` is fast); English cues share
    word anchors (`ever` stands for never, every, don't ever), tested with `in` first."""

    def __init__(self, cues: tuple[Cue, ...]):
        self.cues = cues
        self.order = {cue: index for index, cue in enumerate(cues)}
        cjk = sorted({c.text for c in cues if not c.latin}, key=len, reverse=True)
        self.cjk_pattern = re.compile("|".join(map(re.escape, cjk))) if cjk else None
        self.cjk_by_text: dict[str, list[Cue]] = {}
        for cue in cues:
            if not cue.latin:
                self.cjk_by_text.setdefault(cue.text, []).append(cue)
        # findall's matches do not overlap: a cue overlapping a match may hide behind it
        self.may_hide = {a: [b for b in cjk if b != a and _can_overlap(a, b)] for a in cjk}
        self.anchors: dict[str, list[Cue]] = {}
        for cue in cues:
            if cue.latin:
                self.anchors.setdefault(self._anchor(cue.text), []).append(cue)

    def _anchor(self, text: str) -> str:
        words = re.findall(r"[a-z0-9'-]+", text) or [text]
        anchor = max([w for w in words if w not in _ANCHOR_STOP] or words, key=len)
        shorter = [w for w in self._anchor_words() if w != anchor and w in anchor]
        return min(shorter, key=len) if shorter else anchor

    def _anchor_words(self) -> list[str]:
        """The latin cues' one-word texts and words that may stand for a longer anchor; made
        once, not once per cue (that was most of building the index, on every cold scan)."""
        if not hasattr(self, "_words"):
            others = [c.text for c in self.cues if c.latin] + [
                w for c in self.cues if c.latin for w in c.text.split()
            ]
            self._words = [
                w
                for w in dict.fromkeys(others)
                if len(w) >= 2 and w not in _ANCHOR_STOP and " " not in w
            ]
        return self._words

    def active(self, lowered: str) -> list[Cue]:
        """The cues whose text occurs in `lowered`, in priority order."""
        found: list[Cue] = []
        if self.cjk_pattern is not None and not lowered.isascii():
            texts = set(self.cjk_pattern.findall(lowered))
            for text in list(texts):
                texts.update(
                    other
                    for other in self.may_hide[text]
                    if other not in texts and other in lowered
                )
            for text in texts:
                found.extend(self.cjk_by_text[text])
        for anchor, cues in self.anchors.items():
            if anchor in lowered:
                found.extend(cue for cue in cues if cue.text == anchor or cue.text in lowered)
        found.sort(key=self.order.__getitem__)
        return found


def _can_overlap(a: str, b: str) -> bool:
    if a in b or b in a:
        return True
    if set(a).isdisjoint(b):
        return False  # an overlap is characters in common: most pairs have none
    return any(a.endswith(b[:k]) or b.endswith(a[:k]) for k in range(1, min(len(a), len(b))))


def _fold(text: str) -> str:
    """Lowercase, and one apostrophe, so `don’t like` matches `don't like`. Keeps offsets in lines."""
    text = text.lower()
    return text.replace("’", "'") if "’" in text else text


# --- context rules ----------------------------------------------------------------------

_CLAUSE_END = set('.,;:!?()[]{}"“”—–-…/|，。；：！？、（）「」『』【】《》')
_OPENERS = "*_~`\"'“‘(>"
_LEAD = re.compile(
    r"\s*(?:[-*+>]|\d+[.)]|#+)?\s*(?:\[[ xX]\])?\s*(?:\d{1,2}:\d{2})?\s*"
)  # list marker, box, HH:MM
_LAST_WORD = re.compile(r"[a-z0-9_'-]+$")
_CONJUNCTIONS = {
    "and",
    "but",
    "so",
    "then",
    "also",
    "or",
    "plus",
    "yes",
    "no",
    "ok",
    "okay",
    "oh",
    "well",
    "hmm",
    "yeah",
    "note",
}
_PARTICLES = set("吧啊呀呢哦嘛啦喔，。；：！？、,.;:!?…～~ \t）)」』】")


def _is_word_char(ch: str) -> bool:
    if ch.isascii():
        return ch.isalnum() or ch in "_-"
    return ch.isalpha() and not is_cjk(ch)  # accented Latin letters join words, CJK does not


def _previous(low: str, pos: int) -> tuple[str, bool]:
    """(previous word, whether the cue starts a clause)."""
    before = low[:pos].rstrip().rstrip(_OPENERS).rstrip()
    if not before or before[-1] in _CLAUSE_END or _LEAD.fullmatch(before):
        return "", True
    match = _LAST_WORD.search(before)
    if not match:
        return "", True  # a switch from Chinese to English starts a clause too
    word = match.group(0).strip("'-")
    return word, word in _CONJUNCTIONS


def _latin_fits(cue: Cue, low: str, pos: int) -> bool:
    end = pos + len(cue.text)
    if pos > 0 and _is_word_char(low[pos - 1]):
        return False
    if end < len(low) and _is_word_char(low[end]):
        return False
    word, clause_start = _previous(low, pos)
    if word in cue.before_not:
        return False
    if cue.after_not:
        rest = low[end:].lstrip(" \t,")
        for phrase in cue.after_not:
            if rest.startswith(phrase) and (
                len(rest) == len(phrase) or not _is_word_char(rest[len(phrase)])
            ):
                return False
    if cue.rule == "again" and (
        _redo_before(low, pos) or _object_again(low, pos) or _generic_again(low, pos)
    ):
        return False
    if cue.rule == "own" and not _FIRST_PERSON.search(_clause_before(low, pos)):
        return False
    if cue.text in ("always", "never") and word in _MODALS and not _person_before(low, pos):
        return False  # "Aliases should always be formatted…" is a manual's rule, not the user's
    return not cue.clause_start or clause_start or word in cue.before_ok


_MODALS = {"should", "must", "will", "shall", "can", "may", "would", "could"}
_PERSONS = {"i", "we", "you", "u", "please"}
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|we|we're|we've|my|me|our|us)\b")


def _clause_before(low: str, pos: int) -> str:
    return _CLAUSE_WORDS.search(low[:pos]).group(0)


def _person_before(low: str, pos: int) -> bool:
    """Whether the modal before a cue has a person as subject ("you should always ask", "I must
    never"): the user's rule for themselves or the assistant, not a manual's."""
    words = re.findall(r"[a-z']+", _clause_before(low, pos))
    return len(words) >= 2 and words[-2] in _PERSONS


_GENERIC = re.compile(
    r"\b(?:must|can|cannot|can't|should|will|may|might|need to|needs to|when|whenever|if)\b"
    r"|\b(?:be|been|being|is|are|gets?)\s+\w+(?:ed|en)\b"
)


def _generic_again(low: str, pos: int) -> bool:
    """ "must be trusted again", "when a statement changes again", "is scanned again": a rule or a
    passive describes how things work, not something that keeps happening to the user — unless
    the user is its subject ("when I am tired I skip lunch again")."""
    clause = _clause_before(low, pos)
    return bool(_GENERIC.search(clause)) and not _FIRST_PERSON.search(clause)


def _object_again(low: str, pos: int) -> bool:
    """ "display it again", "you can show them again": an action done once more, the way manuals
    speak; with a first-person subject ("I broke it again") it is the user's pattern."""
    clause = _clause_before(low, pos)
    words = re.findall(r"[a-z']+", clause)
    return (
        bool(words)
        and words[-1] in ("it", "them", "this", "that")
        and not _FIRST_PERSON.search(clause)
    )


_REDO = {
    "try",
    "tried",
    "trying",
    "retry",
    "read",
    "reread",
    "rerun",
    "restart",
    "watch",
    "watched",
    "listen",
    "check",
    "checked",
}
_CLAUSE_WORDS = re.compile(r"[^.,;:!?()\"“”—–]*$")


def _redo_before(low: str, pos: int) -> bool:
    """A verb of doing-once-more a few words back: "read the chapter again" repeats an action
    on purpose, "the build broke again" is the pattern."""
    clause = _CLAUSE_WORDS.search(low[:pos]).group(0)
    return any(word in _REDO for word in re.findall(r"[a-z']+", clause)[-4:])


_YOU_NOT_AFTER = (
    "名",
    "称",
    "及",
    "不是",
    "何必",
    "何尝",
    "怎样",
    "怎么样",
    "如何",
    "能怎样",
    "有什么",
    "何妨",
)
_ZH_CLAUSE_END = set("，。；：！？、,.;:!?\n")


def _you_fits(low: str, pos: int) -> bool:
    """又 as "again" (又熬夜了), not as "and / also" (又快又好, 既…又…, 而又), not 又名 / 又称,
    not the rhetorical 又不是 / 又如何, not a fraction (一又二分之一)."""
    if low.startswith(_YOU_NOT_AFTER, pos + 1) or "分之" in low[pos + 1 : pos + 5]:
        return False
    if pos > 0 and low[pos - 1] == "而":
        return False
    start = pos
    while start > 0 and low[start - 1] not in _ZH_CLAUSE_END:
        start -= 1
    end = pos + 1
    while end < len(low) and low[end] not in _ZH_CLAUSE_END:
        end += 1
    if "又" in low[max(start, pos - 5) : pos] or "又" in low[pos + 1 : min(end, pos + 6)]:
        return False  # 又X又Y
    return "既" not in low[start:pos]


def _cjk_fits(cue: Cue, low: str, pos: int) -> bool:
    end = pos + len(cue.text)
    if any(low.endswith(before, 0, pos) for before in cue.before_not):
        return False
    if any(low.startswith(after, end) for after in cue.after_not):
        return False
    if cue.alone and end < len(low) and low[end] not in _PARTICLES:
        return False
    if cue.rule == "you":
        return _you_fits(low, pos)
    if cue.rule == "de" and low.startswith("的", end):
        return "是" in _clause_after(low, end)
    if cue.cls == "recurring" and low.startswith(("会", "能", "将", "可以"), end):
        # "插件每次都会自动同步": what a program does each time, not the user's pattern
        start = pos
        while start > 0 and low[start - 1] not in _ZH_CLAUSE_END:
            start -= 1
        return "我" in low[start:pos]
    return True


def _clause_after(low: str, end: int) -> str:
    stop = end
    while stop < len(low) and low[stop] not in _ZH_CLAUSE_END:
        stop += 1
    return low[end:stop]


def find_cue(low: str, cues) -> tuple[Cue, int] | None:
    """The first cue, in priority order, that occurs in `low` (a masked, folded line) in a
    context that fits it, with its offset."""
    for cue in cues:
        pos = low.find(cue.text)
        while pos >= 0:
            if _latin_fits(cue, low, pos) if cue.latin else _cjk_fits(cue, low, pos):
                return cue, pos
            pos = low.find(cue.text, pos + 1)
    return None


# --- masking: code, URLs, comments, link targets ----------------------------------------

_INLINE_MASKS = (
    re.compile(r"<!--.*?(?:-->|$)"),  # an HTML comment (to the line end when it runs on)
    re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)"),  # inline code, any run of backticks
    re.compile(r"(?:https?|ftp|file)://[^\s<>()\[\]]+|\bwww\.[^\s<>()\[\]]+", re.IGNORECASE),
    re.compile(r"\]\([^)\s]*\)"),  # a Markdown link destination
    # A wikilink target names a note, it says nothing: [[又一年]] is a title. The linked note is
    # scanned on its own if it is divergent. The alias after | is the user's text and stays.
    re.compile(r"\[\[[^\]|\n]*"),
)


def _blank(match: re.Match) -> str:
    return " " * len(match.group(0))


def mask_inline(line: str) -> str:
    """The line with code, URLs, comments and link targets blanked out (offsets kept)."""
    if (
        "`" not in line
        and "<!--" not in line
        and "://" not in line
        and "www." not in line
        and "[" not in line
    ):
        return line
    for pattern in _INLINE_MASKS:
        line = pattern.sub(_blank, line)
    return line


def blocked_lines(lines: list[str], body_start: int) -> tuple[set[int], set[int]]:
    """(0-based indices of lines never scanned: frontmatter, fenced code, inside a multi-line
    HTML comment; indices of lines that *end* such a comment, whose head is blanked)."""
    blocked = set(range(body_start - 1))
    comment_tails: set[int] = set()
    fence = ""
    in_comment = False
    for index in range(body_start - 1, len(lines)):
        stripped = lines[index].strip()
        if fence:
            blocked.add(index)
            if stripped.startswith(fence) and not stripped[len(fence) :].strip(fence[0]).strip():
                fence = ""
            continue
        if in_comment:
            if "-->" in lines[index]:
                in_comment = False
                comment_tails.add(index)
            else:
                blocked.add(index)
            continue
        if stripped.startswith(("```", "~~~")):
            run = len(stripped) - len(stripped.lstrip(stripped[0]))
            fence = stripped[0] * run
            blocked.add(index)
            continue
        opened = lines[index].rfind("<!--")
        if opened >= 0 and "-->" not in lines[index][opened:]:
            in_comment = True
    return blocked, comment_tails


# --- deferral: venting and vague lines --------------------------------------------------

_VENTING_ZH = (
    "烦死",
    "气死",
    "累死",
    "受不了",
    "烦躁",
    "妈的",
    "去死",
    "我靠",
    "卧槽",
    "艹",
    "抓狂",
    "心累",
    "无语",
    "真服了",
    "我服了",
    "郁闷",
    "我崩溃",
    "要崩溃",
    "心态崩",
    "好烦",
    "烦烦",
    "啊啊啊",
    "淦",
)
_VENTING_EN = (
    "ugh",
    "ughh",
    "argh",
    "fml",
    "wtf",
    "ffs",
    "dammit",
    "damn it",
    "goddamn",
    "so annoying",
    "so annoyed",
    "sick of",
    "fed up",
    "i hate this",
)
_BANGS = re.compile(r"[!！]{3,}|[!?！？]{4,}")
_CAPS_WORD = re.compile(r"\b[A-Z][A-Z']+\b", re.ASCII)
_LATIN_WORD = re.compile(r"\b[A-Za-z][A-Za-z']*\b", re.ASCII)


def _venting(masked: str, low: str, cue_pos: int, cue_len: int) -> bool:
    # the Chinese markers cannot occur in an ASCII line; `in` before _word_at saves its call
    if (
        (not low.isascii() and any(marker in low for marker in _VENTING_ZH))
        or _BANGS.search(low)
        or _breakdown(low)
    ):
        return True
    if any(marker in low and _word_at(low, marker) for marker in _VENTING_EN):
        return True
    # Shouting: five or more all-caps words making most of the line. A capitalised cue on its
    # own ("NEVER push to main") is emphasis, not venting, so the cue is left out of the count.
    rest = masked[:cue_pos] + " " + masked[cue_pos + cue_len :]
    caps = _CAPS_WORD.findall(rest)
    if len(caps) < 5:
        return False  # most lines: the words need not be counted
    return len(caps) >= 0.8 * len(_LATIN_WORD.findall(rest))


def _breakdown(low: str) -> bool:
    """崩溃 as an outcry (崩溃，又改需求 / 要崩溃了), not a crash (程序崩溃了, 又崩溃了)."""
    pos = low.find("崩溃")
    while pos >= 0:
        before = low[:pos].rstrip()
        if not before or before[-1] in _ZH_CLAUSE_END or before[-1] in "我要快真好都心":
            return True
        pos = low.find("崩溃", pos + 1)
    return False


def _word_at(low: str, phrase: str) -> bool:
    pos = low.find(phrase)
    while pos >= 0:
        end = pos + len(phrase)
        if (pos == 0 or not _is_word_char(low[pos - 1])) and (
            end == len(low) or not _is_word_char(low[end])
        ):
            return True
        pos = low.find(phrase, pos + 1)
    return False


_TIMES = re.compile(r"\d{1,2}:\d{2}|\d{4}-\d{2}-\d{2}")
_TOKENS = re.compile(rf"[a-z0-9][a-z0-9'_-]*|[{CJK}]")


def content_units(text: str, enough: int = 1 << 30) -> int:
    """How much is said: a Chinese character counts 1, a Latin word 2; particles, pronouns,
    filler words and times count nothing. Stops counting at `enough`."""
    units = 0
    for token in _TOKENS.findall(_TIMES.sub(" ", text) if ":" in text or "-" in text else text):
        if len(token) == 1 and not token.isascii():
            units += token not in ZH_UNIT_STOP
        elif token not in EN_FILLER and not token.isdigit():
            units += 2
        if units >= enough:
            break
    return units


MIN_CONTENT_UNITS = 2


# --- recurrence keys --------------------------------------------------------------------

_EN_WORD = re.compile(r"[a-z][a-z'-]+")


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


MAX_KEYS = 8
_SENTENCE_END = set("。！？!?；;\n")


def sentence_around(low: str, start: int, end: int) -> str:
    """The sentence holding low[start:end], without that span."""
    head = start
    while head > 0 and low[head - 1] not in _SENTENCE_END:
        head -= 1
    tail = end
    while tail < len(low) and low[tail] not in _SENTENCE_END:
        tail += 1
    return low[head:start] + " " + low[end:tail]


def phrase_keys(text: str) -> list[str]:
    """Key phrases of a recurring cue's sentence (the cue taken out): Chinese bigrams of content
    characters and English content words, lightly stemmed, at most MAX_KEYS of them. Two notes
    whose recurring lines share a key repeat the same pattern (又熬夜到两点 / 又熬夜刷题 share 熬夜)."""
    keys: dict[str, None] = {}
    for run in CJK_RUN.findall(text):
        for pair in bigrams(run):
            if (
                pair[0] not in ZH_KEY_STOP
                and pair[1] not in ZH_KEY_STOP
                and pair not in ZH_KEY_BIGRAMS
            ):
                keys[pair] = None
    for word in _EN_WORD.findall(text):
        word = word.strip("'-")
        if len(word) >= 4 and word not in EN_KEY_STOP:
            keys[_stem(word)] = None
    return sorted(list(keys)[:MAX_KEYS])


# --- per-note detection -----------------------------------------------------------------


def defer_reason(kind: str, cue: str, min_recurrence: int | None = None) -> str:
    """Why a cue line waits (Deferred.reason), for the kinds a single note can tell."""
    if kind == VAGUE:
        return f"too vague to act on (little besides '{cue}'); add detail or confirm the note"
    if kind == VENTING:
        return "emotional (venting); waits until it recurs or the note is confirmed"
    where = f"{min_recurrence} notes" if min_recurrence else "other notes"
    return (
        f"one-off recurring cue '{cue}'; waits until it recurs in {where} or the note is confirmed"
    )


@dataclass(frozen=True)
class Hit:
    """A cue found on one line, before the vault-wide rules (state, recurrence, guard) apply."""

    line: int  # 1-based
    cls: str
    cue: str
    excerpt: str
    kind: str = ""  # "" for a signal, else why it is deferred (ONE_OFF, VENTING, VAGUE)
    line_key: str = ""  # state.line_key of the line: "new lines only" for edited notes
    content_key: str = (
        ""  # normalised statement (scan.py caches a digest): the guard and re-emergence
    )
    keys: tuple[str, ...] = ()  # recurrence key phrases (recurring class only)

    @property
    def reason(self) -> str:
        return defer_reason(self.kind, self.cue) if self.kind else ""

    def to_list(self) -> list:
        return [
            self.line,
            self.cls,
            self.cue,
            self.excerpt,
            self.kind,
            self.line_key,
            self.content_key,
            list(self.keys),
        ]

    @classmethod
    def from_list(cls, data: list) -> "Hit":
        line, klass, cue, excerpt, kind, lkey, ckey, keys = data
        return cls(
            int(line),
            str(klass),
            str(cue),
            str(excerpt),
            str(kind),
            str(lkey),
            str(ckey),
            tuple(keys),
        )


@dataclass
class NoteFlags:
    confirmed: bool = False
    excluded: bool = False
    reason: str = ""  # which flag confirmed or excluded it
    tags: list[str] = field(default_factory=list)
    problem: str | None = None  # frontmatter that does not parse


@dataclass
class NoteScan:
    """What one note holds for the scanner: cached per (path, mtime, size)."""

    hits: list[Hit] = field(default_factory=list)
    flags: NoteFlags = field(default_factory=NoteFlags)
    links: list[str] = field(default_factory=list)


MAX_EXCERPT = 200


def excerpt_of(line: str, pos: int) -> str:
    text = line.strip()
    if len(text) <= MAX_EXCERPT:
        return text
    offset = max(0, pos - (len(line) - len(line.lstrip())) - MAX_EXCERPT // 3)
    piece = text[offset : offset + MAX_EXCERPT]
    return ("…" if offset else "") + piece + ("…" if offset + MAX_EXCERPT < len(text) else "")


_TS_PREFIX = re.compile(r"^\s*(?:[-*+]|\d+[.)])?\s*(?:\[[ xX]\]\s*)?\d{1,2}:\d{2}\s+")


def content_key(line: str, formats=None) -> str:
    """The normalised statement a line makes: no list marker, capture time, source or trace."""
    core, _, _ = split_statement(_TS_PREFIX.sub("", line), formats)
    return normalize(core)


def detect_line(
    line: str, cues, line_no: int = 0, masked: str | None = None, formats=None
) -> Hit | None:
    """The one signal a line gives (or would give, if it were not deferred), or None."""
    masked = mask_inline(line) if masked is None else masked
    low = _fold(masked)
    found = find_cue(low, [c for c in cues if c.text in low])
    if found is None:
        return None
    cue, pos = found
    kind = ""
    rest = low[:pos] + " " + low[pos + len(cue.text) :]
    if content_units(_LEAD.sub(" ", rest, count=1), MIN_CONTENT_UNITS) < MIN_CONTENT_UNITS:
        kind = VAGUE
    elif cue.cls != "correction" and _venting(masked, low, pos, len(cue.text)):
        kind = (
            VENTING  # a correction stays a signal however angry: the user is saying what is wrong
        )
    elif cue.cls == "recurring":
        kind = ONE_OFF
    keys = (
        tuple(phrase_keys(sentence_around(low, pos, pos + len(cue.text))))
        if cue.cls == "recurring"
        else ()
    )
    return Hit(
        line_no,
        cue.cls,
        cue.text,
        excerpt_of(line, pos),
        kind,
        line_key(line),
        content_key(line, formats),
        keys,
    )


def scan_note(note: Note, extra_cues: dict | None = None, formats=None) -> NoteScan:
    """Every cue line of one (usable) note, its flags, tags and links."""
    lowered = _fold(note.text)
    flags = read_flags(note, lowered)
    result = NoteScan(flags=flags)
    if flags.excluded:
        return result
    active = cue_index(extra_cues).active(lowered)
    if not active:
        return result
    # The lines a cue occurs on, found by one `find` run per cue over the whole text instead of
    # every cue tested on every line; frontmatter lines are never candidates. lower() never adds
    # or drops a line end, so line indices in `lowered` are the note's own.
    candidates = _cue_lines(lowered, active, note.body_start - 1)
    if not candidates:
        return result
    lines = note.lines
    # Without fences or comments the only blocked lines are the frontmatter's (blocked_lines
    # would return just those): the walk over the lines is needed only when a block may exist.
    blocked, tails = (
        blocked_lines(lines, note.body_start)
        if _has_blocks(lowered)
        else (set(range(note.body_start - 1)), set())
    )
    for index in sorted(candidates):
        if index in blocked:
            continue
        line = lines[index]
        # matched on the line as written: lower() leaves whitespace, #, > and | as they are
        if _NOT_THE_USERS_VOICE.match(line):
            continue  # headings, quotes and callouts name or cite; they never say what the user wants
        masked = mask_inline(_blank_comment_head(line) if index in tails else line)
        hit = detect_line(line, active, index + 1, masked, formats)
        if hit is not None:
            result.hits.append(hit)
    if result.hits:
        result.flags.tags = _merge_tags(flags.tags, inline_tags(lines, blocked))
        result.links = wikilinks(lines, blocked)
    return result


# headings, quotes and callouts, and table rows: a manual's or someone else's words, or data
_NOT_THE_USERS_VOICE = re.compile(r"^\s{0,3}(?:#{1,6}(?:\s|$)|>|\|)")


def _has_blocks(lowered: str) -> bool:
    return "```" in lowered or "~~~" in lowered or "<!--" in lowered


def _blank_comment_head(line: str) -> str:
    end = line.find("-->") + 3
    return " " * end + line[end:]


def detect_signals(
    note: Note, extra_cues: dict | None = None
) -> tuple[list[Signal], list[Deferred]]:
    """Signals and deferred lines of one note on its own: confirmation and exclusion apply,
    recurrence across notes, the state and the feedback-loop guard do not (see scan.py)."""
    scanned = scan_note(note, extra_cues)
    if scanned.flags.excluded:
        return [], [Deferred(note.rel, 0, excluded_reason(scanned.flags), kind=EXCLUDED)]
    signals, deferred = [], []
    for hit in scanned.hits:
        if not hit.kind or scanned.flags.confirmed:
            signals.append(Signal(note.rel, hit.line, hit.cls, hit.cue, hit.excerpt))
        else:
            deferred.append(
                Deferred(note.rel, hit.line, hit.reason, hit.cls, hit.cue, hit.kind, hit.excerpt)
            )
    return signals, deferred


def excluded_reason(flags: NoteFlags) -> str:
    return f"excluded from convergence ({flags.reason})"


# --- flags, tags and links, read without parsing YAML -----------------------------------

_FM_KEY = re.compile(r"(\w[\w .-]*?):(?: +(.*?))?[ \t]*$")  # PyYAML wants a space after the colon
_FM_ITEM = re.compile(r"[ \t]*-[ \t]+(.*?)[ \t]*$")
_FLOW_ITEM = r"""\s*(?:"[^"\\,]*"|'[^',]*'|[^\s"'\[\]{},#][^"'\[\]{},#]*?)\s*"""
_PLAIN_SCALAR = re.compile(
    rf"""(?:"[^"\\]*"|'[^']*'|[^\s"'\[\]{{}}&*!|>%@`#,][^#]*?|\[(?:{_FLOW_ITEM}(?:,{_FLOW_ITEM})*)?\])?(?:[ \t]+#.*)?"""
)
_TRUE, _FALSE = {"true", "yes", "on"}, {"false", "no", "off"}


def _plain_frontmatter(block: str) -> dict | None:
    """The frontmatter's top-level keys, when it is plain `key: scalar`, `key: [a, b]` and
    `key:` + `- item` lines — nearly every note. None for anything else (then YAML decides)."""
    data: dict = {}
    current = None
    for raw in block.split("\n"):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        if "\t" in raw[: len(raw) - len(raw.lstrip())]:
            return None  # tabs in indentation are a YAML error: let the parser name it
        item = _FM_ITEM.fullmatch(raw)
        if item and current is not None and isinstance(data[current], list):
            if not _PLAIN_SCALAR.fullmatch(item.group(1)) or ": " in item.group(1):
                return None
            data[current].append(_unquote(item.group(1)))
            continue
        key = _FM_KEY.fullmatch(raw)
        if not key or raw[0].isspace():
            return None
        value = key.group(2) or ""
        if not _PLAIN_SCALAR.fullmatch(value) or ": " in value.split(" #")[0]:
            return None
        current = key.group(1)
        data[current] = (
            _flow_list(value) if value.startswith("[") else ([] if not value else _unquote(value))
        )
    return data


def _unquote(value: str) -> str:
    if "#" in value and not value.startswith(("'", '"')):
        value = re.sub(r"[ \t]+#.*$", "", value)
    return value.strip().strip("'\"")


def _flow_list(value: str) -> list[str]:
    inner = re.sub(r"[ \t]+#.*$", "", value).strip()[1:-1]
    return [_unquote(part) for part in inner.split(",") if part.strip()]


def _as_bool(value) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    return None


def _as_tags(value) -> list[str]:
    if isinstance(value, str):
        value = re.split(r"[,\s]+", value)
    if not isinstance(value, list):
        return []
    return [str(tag).strip().lstrip("#") for tag in value if str(tag).strip().lstrip("#")]


def read_flags(note: Note, lowered: str | None = None) -> NoteFlags:
    """`converge:` and `tags:` from the frontmatter, and #converge / #noconverge in the body.
    The YAML parser runs only for frontmatter that is not plain (and then reports errors)."""
    flags = NoteFlags()
    lowered = _fold(note.text) if lowered is None else lowered
    converge = None
    if note.frontmatter and note.frontmatter.strip():
        data = _plain_frontmatter(note.frontmatter)
        if data is None:
            data, flags.problem = parse_frontmatter_block(note.frontmatter)
        converge = _as_bool(data.get("converge"))
        flags.tags = _as_tags(data.get("tags"))
    tags = set(flags.tags)
    if "#converge" in lowered or "#noconverge" in lowered:
        blocked, _ = blocked_lines(note.lines, note.body_start)
        tags |= set(inline_tags(note.lines, blocked))
    if converge is False or "noconverge" in tags:
        flags.excluded, flags.reason = (
            True,
            "converge: false" if converge is False else "#noconverge",
        )
    elif converge is True or "converge" in tags:
        flags.confirmed, flags.reason = True, "converge: true" if converge is True else "#converge"
    return flags


_TAG = re.compile(r"(?<![\w#&/])#([^\s#\[\](){}<>,.;:!?\"'`，。；：！？、（）「」]+)")


def inline_tags(lines: list[str], blocked: set[int]) -> list[str]:
    """Obsidian #tags in the body (a tag needs a non-digit: #123 is not one)."""
    found: dict[str, None] = {}
    for index, line in enumerate(lines):
        if index in blocked or "#" not in line:
            continue
        for match in _TAG.finditer(mask_inline(line)):
            tag = match.group(1).rstrip("/")
            if tag and not tag.isdigit():
                found[tag] = None
    return list(found)


def wikilinks(lines: list[str], blocked: set[int]) -> list[str]:
    found: dict[str, None] = {}
    for index, line in enumerate(lines):
        if index in blocked or "[[" not in line:
            continue
        for match in WIKILINK.finditer(line):
            found[match.group(1).strip()] = None
    return list(found)


def _merge_tags(first: list[str], second: list[str]) -> list[str]:
    return list(dict.fromkeys([*first, *second]))


def _cue_lines(lowered: str, cues, first: int) -> set[int]:
    """0-based indices of the lines, from line `first` on, that hold one of the cues' texts
    (cue texts hold no line end, so an occurrence lies on one line)."""
    found: set[int] = set()
    for text in {cue.text for cue in cues}:
        line, counted = 0, 0  # line index of offset `counted`
        pos = lowered.find(text)
        while pos >= 0:
            line += lowered.count("\n", counted, pos)
            counted = pos
            if line >= first:
                found.add(line)
            end = lowered.find("\n", pos)  # the rest of this line is a candidate already
            if end < 0:
                break
            pos = lowered.find(text, end + 1)
    return found
