"""The builtin engine's word index: a change is scored only against statements sharing a word
with it (the work no longer grows with every statement of the layer), the statement it picks
is the one a full scan picks, and the machine folder's copy of the words is only a copy."""

from __future__ import annotations

import marshal
import math
import random

from builtin_helpers import DATE, OLD_NOTES, TOOLING_EN, note_with, originals_of, run
from cmem.converge.builtin import engine as builtin
from cmem.converge.builtin import working_copy as builtin_memory
from cmem.converge.builtin.corrections import holds, old_sides, side_words, specific
from cmem.converge.builtin.line_words import old_side_terms, terms
from cmem.converge.builtin.slots import slots_of
from cmem.converge.memory.statement_words import CACHE_NAME
from cmem.vault.layers import open_vault

SWITCH_NOTE = "- Switched from pip to uv for projects\n"


def filler(count: int) -> str:
    """A topic file of `count` statements sharing no word with SWITCH_NOTE."""
    lines = [f"- Waters garden bed {i:04d} every Sunday morning" for i in range(count)]
    return "---\nsummary: garden\n---\n# Garden\n\n" + "\n".join(lines) + "\n"


def passes(monkeypatch) -> list:
    """Every `PassWork` the engine makes from now on, to read its comparison count."""
    made = []

    class Counted(builtin.PassWork):
        def __init__(self, *args):
            super().__init__(*args)
            made.append(self)

    monkeypatch.setattr(builtin, "PassWork", Counted)
    return made


def test_a_change_is_compared_only_with_statements_sharing_its_words(make_vault, monkeypatch):
    made = passes(monkeypatch)
    results = {}
    for size in (10, 2000):
        root = make_vault(
            {
                "converged/topics/python-tooling.md": TOOLING_EN,
                "converged/topics/garden.md": filler(size),
                "n.md": SWITCH_NOTE,
                **OLD_NOTES,
            },
            config_yaml="language: en\n",
        )
        _, files, _ = run(root, [note_with(root, "n.md", [(1, "decision")])])
        results[size] = files["converged/topics/python-tooling.md"]
    # the rewrite lands on the pip statement either way, and the 1,990 more statements that
    # share no word with the line were never scored
    assert results[10] == results[2000]
    assert "was: Uses pip and venv for projects" in results[10]
    assert made[0].compared == made[1].compared
    assert 0 < made[1].compared <= 3  # the three tooling statements at most


def full_scan(work, note, text, preferred):
    """`_best_match` without the index: every statement scored (the reference)."""
    new_terms, old_terms = terms(text), old_side_terms(text)
    sides = old_sides(text)
    for side in sides:
        new_terms = new_terms | side_words(side)
    mine = {(rel, key) for rel, key, by in work.written if by == note.rel}
    candidates = [
        (f, s, terms(s.core)) for f in work.writable(preferred) for s in f.statements(work.formats)
    ]
    candidates = [c for c in candidates if c[1].core]
    frequency: dict[str, int] = {}
    for _, _, words in candidates:
        for word in words:
            frequency[word] = frequency.get(word, 0) + 1
    best, best_score = None, 0.0
    slots = slots_of(text)
    for file, statement, words in candidates:
        shared = new_terms & words
        same_slot = bool(slots & slots_of(statement.core))
        if not shared and not same_slot:
            continue
        written = (file.rel, statement.key) in mine
        held = [side for side in sides if holds(statement.core, side)]
        if sides:
            if not any(specific(side) or shared - side_words(side) for side in held):
                if not (same_slot and not written):
                    continue
        elif written or (len(shared) < 2 and not same_slot):
            continue
        score = sum(
            (1 + math.log(len(candidates) / max(frequency.get(w, 0), 1)))
            * (2 if w in old_terms else 1)
            for w in sorted(shared)
        )
        score += 3 if same_slot else 0
        score += 4 * len(held)
        score *= 1.5 if file.rel in preferred else 1
        if score > best_score:
            best, best_score = (file, statement), score
    return best


WORDS = (
    "pip uv poetry react svelte vue berlin munich tea coffee vim helix emacs python rust".split()
)


def test_the_index_picks_what_a_full_scan_picks(make_vault):
    rng = random.Random(13)
    files = {}
    for number in range(12):
        lines = [f"- {' '.join(rng.sample(WORDS, rng.randint(1, 4)))}" for _ in range(15)]
        lines += ["- I live in Berlin", "- I moved to Lisbon last year"] if number == 3 else []
        folder = "core" if number < 2 else "topics"
        files[f"converged/{folder}/f{number}.md"] = "# F\n\n" + "\n".join(lines) + "\n"
    root = make_vault(
        {**files, "n.md": "- x\n"},
        config_yaml="language: en\nresident_max_tokens: 100000\n",
    )
    vault = open_vault(root)
    note = note_with(root, "n.md", [(1, "decision")])
    originals = originals_of(root)
    lines = [
        f"switched from {a} to {b} {c}" for a, b, c in (rng.sample(WORDS, 3) for _ in range(60))
    ] + ["I moved to Munich", "not vim, helix now", "replaces tea with coffee"]
    checked = 0
    for line in lines:
        for preferred in (set(), {"converged/topics/f5.md"}):
            work = builtin.PassWork(vault, originals, DATE)
            expected = full_scan(work, note, line, preferred)
            found = builtin.best_match(work, note, line, preferred)
            assert (found and (found[0].rel, found[1])) == (
                expected and (expected[0].rel, expected[1])
            ), line
            checked += found is not None
    assert checked > 20  # most lines found a statement to replace: the comparison meant something


def test_the_words_kept_in_the_machine_folder_are_only_a_copy(make_vault, monkeypatch):
    root = make_vault(
        {"converged/topics/python-tooling.md": TOOLING_EN, "n.md": SWITCH_NOTE, **OLD_NOTES},
        config_yaml="language: en\n",
    )
    vault = open_vault(root)
    vault.machine_dir.mkdir(parents=True, exist_ok=True)
    note = [note_with(root, "n.md", [(1, "decision")])]
    first = builtin.builtin_response(vault, note, originals_of(root), DATE)
    cache = vault.machine_dir / CACHE_NAME
    assert cache.is_file()
    made = passes(monkeypatch)
    # read from the copy: the same reply, and no file parsed for its words
    parsed = []
    original = builtin_memory.FileWords.of
    monkeypatch.setattr(builtin_memory.FileWords, "of", lambda s: parsed.append(1) or original(s))
    heads = []
    parse_head = builtin_memory.parse_frontmatter_block
    monkeypatch.setattr(
        builtin_memory, "parse_frontmatter_block", lambda b: heads.append(1) or parse_head(b)
    )
    assert builtin.builtin_response(vault, note, originals_of(root), DATE) == first
    assert parsed == [] and heads == [] and made
    # a damaged copy is rebuilt, never believed
    cache.write_bytes(b"\x00garbage")
    assert builtin.builtin_response(vault, note, originals_of(root), DATE) == first
    assert parsed and heads


def test_a_line_looks_up_its_words_once_a_file_and_no_keys_it_did_not_write(
    make_vault, monkeypatch
):
    """Each file is asked once for all of a line's words (not once a word), and the keys of a
    file are looked through for what the note wrote only where it wrote something."""
    from cmem.converge.memory.statement_words import FileWords

    topics = {f"converged/topics/garden-{n}.md": filler(30) for n in range(40)}
    root = make_vault(
        {
            "converged/topics/python-tooling.md": TOOLING_EN,
            "n.md": SWITCH_NOTE,
            **OLD_NOTES,
            **topics,
        },
        config_yaml="language: en\n",
    )
    asked, single = [], []
    each, one = FileWords.holding_each, FileWords.holding
    monkeypatch.setattr(FileWords, "holding_each", lambda s, n: asked.append(n) or each(s, n))
    monkeypatch.setattr(FileWords, "holding", lambda s, w: single.append(w) or one(s, w))
    keys_read = []
    original_keys = FileWords.keys
    monkeypatch.setattr(
        FileWords, "keys", property(lambda s: keys_read.append(s) or original_keys.fget(s))
    )
    run(root, [note_with(root, "n.md", [(1, "decision")])])
    assert single == []
    assert 0 < len(asked) <= 2 * (len(topics) + 1)  # once a file for each line matched
    # a change's duplicate must be equal: looked up in each file's joined keys, none split
    # (it read every file's keys once, 41+); nothing else reads them for a file it did not write
    assert keys_read == []


def test_a_key_is_found_in_the_joined_keys_as_in_the_split_ones():
    from cmem.converge.memory.statement_words import FileWords

    rng = random.Random(13)
    alphabet = ["a", "b", "ab", "ba", "", "用", "a b"]
    for _ in range(500):
        keys = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 3))) for _ in range(6)]
        words = FileWords(len(keys), "\n".join(keys), (), "\n")
        for key in [*keys, *alphabet, "zz", "a\nb", "aa", "bab"]:
            expected = next((i for i, old in enumerate(keys) if old == key), None)
            assert words.index_of(key) == expected, (keys, key)
    assert FileWords(0, "", (), "\n").index_of("") is None  # no statement, not one empty key


def test_a_kept_entry_of_another_shape_is_rebuilt():
    from cmem.converge.memory.statement_words import FileWords, WordsCache
    from cmem.vault.statements import Statement

    words = FileWords.of([Statement(1, "- uv", "Uses uv for projects", [], [])])
    cache = WordsCache(None, "")
    for raw in (words.to_raw()[:3], (*words.to_raw(), b"\xff"), (*words.to_raw()[:3], None)):
        cache.entries["d"] = {"w": raw}
        assert cache.get("d") is None


def test_a_file_split_late_is_the_file_split_at_once():
    """A memory file is split into lines only when asked: its lines, its text joined again and
    its body's first line are those of the text split when it was loaded."""
    rng = random.Random(13)
    pieces = ["---", "summary: x", "# T", "- a", "", "  ", "- 其实", "\r"]
    for _ in range(300):
        text = "\n".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
        text += rng.choice(["", "\n", "\n\n"])
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        late, early = (
            builtin_memory._load("f.md", text),
            builtin.MemoryFile("f.md", list(lines), {}),
        )
        assert late.joined() == "\n".join(lines) and late.body_start == early.body_start
        assert late.tokens() == early.tokens()
        assert late.lines == lines and late.joined() == "\n".join(lines)


def test_the_named_files_are_those_each_name_finds_in_turn(make_vault):
    """A note's links, then tags, name memory files by file name, alias or tag: in the order of
    the names, each name's files in path order, none twice — as a look through every file for
    each name in turn finds them."""
    from cmem.converge.builtin.line_words import name_key
    from cmem.converge.selection import SelectedNote

    rng = random.Random(13)
    labels = ["uv", "Python-Tooling", "python tooling", "shell", "Fish", "编辑器", "vim"]
    files = {}
    for number in range(30):
        tags = ", ".join(rng.sample(labels[:4], rng.randint(0, 2)))
        aliases = ", ".join(rng.sample(labels[3:], rng.randint(0, 2)))
        folder = "core" if number < 5 else "topics"
        name = rng.choice([f"f{number}", f"{rng.choice(labels)}-{number}"])
        files[f"converged/{folder}/{name}.md"] = (
            f"---\ntags: [{tags}]\naliases: [{aliases}]\n---\n# F\n\n- x {number}\n"
        )
    root = make_vault({**files, "n.md": "- x\n"}, config_yaml="language: en\n")
    vault = open_vault(root)
    work = builtin.PassWork(vault, originals_of(root), DATE)
    several = 0
    for _ in range(50):
        links = rng.sample([*labels, "fish", "", "none", "f3"], rng.randint(0, 3))
        tags = rng.sample([*labels, "Shell"], rng.randint(0, 3))
        note = SelectedNote("n.md", "n", "- x\n", ["- x"], [], tags, links)
        expected: list[str] = []
        for name in [*links, *tags]:
            key = name_key(name)
            for rel, file in sorted(work.files.items()):
                if key and key in file.keys and rel not in expected:
                    expected.append(rel)
        assert builtin._named_files(work, note) == expected, (links, tags)
        several += len(expected) > 1
    assert several > 10  # names found several files: their order was compared


def test_an_ascii_name_key_is_the_key_the_full_rule_makes():
    import re
    import unicodedata

    from cmem.converge.builtin.line_words import name_key

    def full(name: str) -> str:
        return re.sub(r"[\s_\-–—/]+", "", unicodedata.normalize("NFKC", name).casefold())

    rng = random.Random(13)
    alphabet = [chr(i) for i in range(128)] + ["–", "—", "中", "Ａ", "ß", "\xa0", "\u3000", "İ"]
    for _ in range(20000):
        name = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
        assert name_key(name) == full(name), repr(name)


def _words_of(core: str):
    from cmem.converge.memory.statement_words import FileWords
    from cmem.vault.statements import Statement

    return FileWords.of([Statement(1, f"- {core}", core, [], [])])


def test_what_a_pass_adds_goes_to_a_side_file_and_the_copy_is_rewritten_only_when_it_is_full(
    tmp_path,
):
    """A pass adds the words of the one file its predecessor wrote: written beside the copy,
    not the whole copy again (8 MB at 10k notes); read over it by the next pass; past
    `DELTA_MAX` entries (or an eighth of the copy stale) the copy is rewritten and the side file
    removed. Every entry stays right for its text whichever file holds it."""
    from cmem.converge.memory.statement_words import DELTA_MAX, DELTA_NAME, WordsCache

    path = tmp_path / CACHE_NAME
    side = tmp_path / DELTA_NAME
    first = WordsCache(path, "fp")
    for n in range(200):
        first.put(f"d{n}", _words_of(f"statement {n}"))
    first.save()
    assert path.is_file() and not side.exists()  # no copy yet: the copy itself is written
    copy = path.read_bytes()

    def a_pass(new: list[int], gone: tuple[int, ...] = ()) -> WordsCache:
        cache = WordsCache(path, "fp")
        for n in range(200 + 1000):
            if n in gone:
                continue
            if cache.get(f"d{n}") is None and (n < 200 or n in new):
                cache.put(f"d{n}", _words_of(f"statement {n}"))
        cache.save()
        return cache

    a_pass([200])
    assert path.read_bytes() == copy and side.is_file()  # the copy untouched
    again = WordsCache(path, "fp")
    assert again.get("d200").keys == _words_of("statement 200").keys and not again.added
    a_pass([201])
    assert path.read_bytes() == copy and len(WordsCache(path, "fp").delta) == 2
    # the side file full: the copy is rewritten with everything used, the side file removed
    a_pass(list(range(202, 202 + DELTA_MAX)))
    assert path.read_bytes() != copy and not side.exists()
    full = WordsCache(path, "fp")
    assert len(full.entries) == 202 + DELTA_MAX
    # files gone: a few stale entries are left; more than an eighth rewrite the copy without them
    copy = path.read_bytes()
    a_pass([], gone=(0, 1))
    assert path.read_bytes() == copy
    a_pass([], gone=tuple(range(60)))
    assert "d0" not in WordsCache(path, "fp").entries and "d100" in WordsCache(path, "fp").entries
    # a damaged or foreign side file is not believed, and the next save replaces it
    a_pass([900])
    for damage in (b"\x00garbage", side.read_bytes()[:20]):
        side.write_bytes(damage)
        assert WordsCache(path, "fp").get("d900") is None
    side.write_bytes(marshal.dumps({"stamp": ("statement-words", 0), "entries": {}}))
    cache = a_pass([900])
    assert cache.added and WordsCache(path, "fp").get("d900") is not None
    assert oct(path.stat().st_mode & 0o777) == oct(0o600) == oct(side.stat().st_mode & 0o777)
