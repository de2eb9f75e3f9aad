"""Each convergent file's statements as the builtin engine compares them: normalised keys and
an inverted index from content word to statement, kept by the file's content digest.

A pass that adds one note compares its lines with the memory layer. Reading the words of every
statement again (27,834 of them at 10k notes: parse, normalise, `terms`) was most of the pass,
although no file had changed. So the words of a file are kept in the machine folder
(`statement-words.marshal`) under the digest of its text: a file that did not change is never
parsed for them again, and a line is only scored against the statements that share one of its
words (`postings`). The cache is only ever a copy: a missing, corrupt or foreign one is rebuilt,
and an entry is found by the text's digest, so an edited file simply misses.
"""

from __future__ import annotations

from pathlib import Path

from cmem.cache_store import Kept, KeptByDigest, code_stamp, digest
from cmem.converge.builtin.line_words import terms
from cmem.text.tokens import estimate_tokens
from cmem.vault.statements import Statement

CACHE_NAME = "statement-words.marshal"


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def needle(word: str) -> bytes:
    """What starts the line of `word` in a file's postings."""
    return _utf8(f"\n{word} ")


def probe(word: str) -> tuple[str, bytes]:
    """What `FileWords.holding_each` looks for: the word and its postings line's start."""
    return (word, needle(word))


class FileWords:
    """One file's statements, in file order, as the engine compares them: their normalised
    keys, which have an empty core, and which hold each content word.

    Kept as two UTF-8 byte strings (keys one a line; "word i j" one a line for the postings)
    because the machine folder's copy is read on every pass, and two strings a file unmarshal
    far faster than small tuples in dicts; as bytes, not str, since a str is decoded from UTF-8
    when unmarshalled, and a search finds the same in either (UTF-8 is self-synchronising: a
    word's bytes start only where the word does). A word's statements are found by `find`."""

    def __init__(
        self,
        count: int,
        keys: str | bytes,
        empty: tuple[int, ...],
        postings: str | bytes,
    ):
        self.count, self.empty = count, frozenset(empty)
        self._keys = _utf8(keys) if isinstance(keys, str) else keys
        self._postings = _utf8(postings) if isinstance(postings, str) else postings
        self._split: tuple[str, ...] | None = None

    @classmethod
    def of(cls, statements: list[Statement]) -> FileWords:
        postings: dict[str, list[str]] = {}
        for index, statement in enumerate(statements):
            for word in terms(statement.core):  # words hold no space nor line break
                postings.setdefault(word, []).append(str(index))
        return cls(
            len(statements),
            "\n".join(s.key for s in statements),
            tuple(i for i, s in enumerate(statements) if not s.core),
            "".join(f"\n{word} {' '.join(found)}" for word, found in postings.items()) + "\n",
        )

    @property
    def keys(self) -> tuple[str, ...]:
        """Statement i's normalised core."""
        if self._split is None:
            keys = self._keys.decode("utf-8", "surrogatepass")
            self._split = tuple(keys.split("\n")) if self.count else ()
        return self._split

    def index_of(self, key: str) -> int | None:
        """The first statement whose key is `key`, or None: found in the joined keys, so that a
        file is not split into its keys for one equality test (the engine's duplicate check asks
        every file, ~28k keys at 10k notes, most of which nothing else of the pass reads)."""
        if not key or "\n" in key or not self.count:
            return next((i for i, old in enumerate(self.keys) if old == key), None)
        wanted = _utf8(key)
        keys, at = self._keys, self._keys.find(wanted)
        while at >= 0:
            end = at + len(wanted)
            # a whole key, not a part of a longer one (10 is the line end's byte)
            if (at == 0 or keys[at - 1] == 10) and (end == len(keys) or keys[end] == 10):
                return keys.count(b"\n", 0, at)
            at = keys.find(wanted, at + 1)
        return None

    def holding(self, word: str) -> list[int]:
        """The statements whose core holds `word`, in order."""
        found = self.holding_each([probe(word)])
        return found[0][1] if found else []

    def holding_each(self, probes: list[tuple[str, bytes]]) -> list[tuple[str, list[int]]]:
        """(word, the statements holding it) for each of the words that some statement holds;
        `probes` are `probe(word)` of each. One call a file for all of a line's words: the
        builtin engine asked `holding` 41k times for one note at 10k."""
        postings, found = self._postings, []
        for word, start in probes:
            at = postings.find(start)
            if at >= 0:
                line = postings[at + len(start) : postings.index(b"\n", at + 1)]
                found.append((word, [int(i) for i in line.split()]))
        return found

    def words(self) -> set[str]:
        """Every content word of its statements."""
        postings = self._postings.decode("utf-8", "surrogatepass")
        return {line.split(" ", 1)[0] for line in postings.split("\n") if line}

    def to_raw(self) -> tuple:
        return (self.count, self._keys, tuple(sorted(self.empty)), self._postings)

    @classmethod
    def from_raw(cls, raw) -> FileWords:
        count, keys, empty, postings = raw
        if not (isinstance(keys, bytes) and isinstance(postings, bytes)):
            raise TypeError("not an entry")
        return cls(int(count), keys, tuple(empty), postings)


def fingerprint(formats) -> tuple:
    """What an entry depends on besides the text: the vault's formats, and the code that makes
    words, statements and frontmatter (its files' stat, so an edited cmem never reads old words)."""
    import cmem.text.terms
    import cmem.vault.notes
    import cmem.vault.statements
    from cmem.converge.builtin import line_words

    code = code_stamp(line_words, cmem.text.terms, cmem.vault.statements, cmem.vault.notes)
    return (code, repr(formats))


def text_digest(text: str) -> bytes:
    return digest(text)


# The entries a pass adds go to a side file while it is small: a pass writes the file it changed,
# so the next finds that one text new, and the whole copy need not be rewritten for it.
DELTA_NAME = "statement-words.new.marshal"
DELTA_MAX = 64  # entries the side file holds at most; then the whole copy is rewritten


class WordsCache:
    """The machine folder's copy, read once per pass: by text digest, the file's words ("w") and
    what its frontmatter says ("h": the problem that keeps the engine off the file, and the few
    keys it reads), each only once made. A `KeptByDigest` with a side file (`DELTA_NAME`), 0600:
    the memory's own statements are its owner's only."""

    def __init__(self, path: Path | None, fingerprint: tuple | str):
        main = Kept(path, "statement-words", fingerprint)
        side = Kept(
            None if path is None else path.with_name(DELTA_NAME), "statement-words", fingerprint
        )
        self.store = KeptByDigest(main, side, DELTA_MAX)

    @property
    def entries(self) -> dict:
        return self.store.entries

    @property
    def delta(self) -> dict:
        return self.store.side_entries

    @property
    def added(self) -> dict:
        return self.store.added

    @property
    def dirty(self) -> bool:
        return bool(self.store.added)

    def get(self, digest: bytes) -> FileWords | None:
        raw = self.store.get(digest, "w")
        try:
            return None if raw is None else FileWords.from_raw(raw)
        except (TypeError, ValueError):
            return None  # a damaged entry is rebuilt like a missing one

    def put(self, digest: bytes, words: FileWords) -> None:
        self.store.put(digest, "w", words.to_raw())

    def head(self, digest: bytes) -> tuple[str | None, dict] | None:
        """(problem, frontmatter keys) as `put_head` kept them, or None."""
        raw = self.store.get(digest, "h")
        if not (isinstance(raw, tuple) and len(raw) == 2 and isinstance(raw[1], dict)):
            return None
        return raw[0], raw[1]

    def put_head(self, digest: bytes, problem: str | None, meta: dict) -> None:
        self.store.put(digest, "h", (problem, meta))

    def save(self) -> None:
        self.store.save(mode=0o600)


TOKENS_NAME = "text-tokens.marshal"


class TokenMemo:
    """The token estimate of each memory file's text, by the text's digest. The resident size cap
    is checked by the builtin engine and by the validator, each measuring all resident files on
    every pass, though they change only when a pass or the user writes them. The validator keeps
    what it measured (the files before and the texts it accepts, so the next pass's originals are
    known); the engine only reads. Kept under the stats of the modules that define the estimate."""

    def __init__(self, machine_dir: Path | None):
        from cmem.text import scripts, tokens

        path = machine_dir / TOKENS_NAME if machine_dir is not None else None
        self.machine_dir = machine_dir
        self.store = KeptByDigest(Kept(path, "statement-tokens", code_stamp(tokens, scripts)))

    def tokens(self, text: str) -> int:
        """`estimate_tokens(text)`, from the memo when this very text was measured before."""
        return self.store.made(
            self.store.key(text),
            "t",
            lambda: estimate_tokens(text),
            valid=lambda n: isinstance(n, int),
        )

    def save(self) -> None:
        """Keeps the texts measured this time (a file since rewritten or removed drops out)."""
        if self.machine_dir is not None and self.machine_dir.is_dir():
            self.store.save()  # the machine folder is made by the commands that write
