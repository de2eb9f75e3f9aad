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

import hashlib
import marshal
from pathlib import Path

from cmem.cache_file import FORMATS
from cmem.converge.words import terms
from cmem.vault.statements import Statement

CACHE_NAME = "statement-words.marshal"
# Bumped (in the registry) when `terms`, `normalize` or statement parsing changes an entry.
VERSION = FORMATS["statement-words"]


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
    because the machine folder's copy is read on every pass, and 28k small tuples in dicts took
    ~0.8 s to unmarshal where two strings a file take ~40 ms; as bytes, not str, since a str is
    decoded from UTF-8 when unmarshalled (12 against 5 ms for the 8 MB of them at 10k notes), and
    a search finds the same in either (UTF-8 is self-synchronising: a word's bytes start only
    where the word does). A word's statements are found by `find`."""

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
    def of(cls, statements: list[Statement]) -> "FileWords":
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
    def from_raw(cls, raw) -> "FileWords":
        count, keys, empty, postings = raw
        if not (isinstance(keys, bytes) and isinstance(postings, bytes)):
            raise TypeError("not an entry")
        return cls(int(count), keys, tuple(empty), postings)


def fingerprint(formats) -> str:
    """What an entry depends on besides the text: the vault's formats, and the code that makes
    words, statements and frontmatter (its files' stat, so an edited or upgraded cmem never reads old words)."""
    import cmem.text.terms
    import cmem.vault.notes
    import cmem.vault.statements
    from cmem import __version__
    from cmem.cache_file import code_stamp
    from cmem.converge import words

    code = code_stamp(words, cmem.text.terms, cmem.vault.statements, cmem.vault.notes)
    return f"{__version__} {VERSION} {code!r} {formats!r}"


def text_digest(text: str) -> str:
    return digest_of(text).hex()


# text → its digest. A pass digests the same memory files for the prompt's topic memo, this
# engine's words and the resident sizes (~4k texts, ~9 MB at 10k): each text is hashed once,
# the next ask costs a dict lookup (a str keeps its hash; the same text object is found by
# identity). The texts are the pass's own while it runs; `forget_digests` empties it when the
# pass ends, so a long-lived process (`cmem watch`, the MCP server) keeps none of them, and a
# cap bounds it within one very large pass.
_DIGESTS: dict[str, bytes] = {}
_DIGESTS_KEPT = 50_000


def digest_of(text: str) -> bytes:
    """The text's blake2b digest (16 bytes), made once per text in this process."""
    found = _DIGESTS.get(text)
    if found is None:
        found = digest_of_bytes(text.encode("utf-8", "surrogatepass"))
        known_digest(text, found)
    return found


def digest_of_bytes(data: bytes) -> bytes:
    """`digest_of` of the text whose UTF-8 bytes are `data`."""
    return hashlib.blake2b(data, digest_size=16).digest()


def known_digest(text: str, digest: bytes) -> None:
    """Tell `digest_of` the text's digest, made elsewhere from its very bytes."""
    if len(_DIGESTS) >= _DIGESTS_KEPT:
        _DIGESTS.clear()
    _DIGESTS[text] = digest


def forget_digests() -> None:
    """Drop the texts `digest_of` keeps: called when a pass ends."""
    _DIGESTS.clear()


# The entries a pass adds go to a side file while it is small: a pass writes the file it changed,
# so the next finds that one text new, and rewriting the whole copy for it (8 MB at 10k notes,
# 20-37 ms of every pass after the first) cost more than the pass's own engine work on it.
DELTA_NAME = "statement-words.new.marshal"
DELTA_MAX = 64  # entries the side file holds at most; then the whole copy is rewritten


class WordsCache:
    """The machine folder's copy: read once per pass. An entry, by text digest, holds the
    file's words ("w") and what its frontmatter says ("h": the problem that keeps the engine off
    the file, and the few keys it reads), each only once made.

    Entries are found by the digest of a text, so one never goes wrong: the copy only grows
    stale (texts no file holds any more). What a pass adds is written to a side file
    (`DELTA_NAME`, read over the copy) until it would hold more than `DELTA_MAX` entries; then,
    or when more than an eighth of the copy is stale, the copy is rewritten holding only the
    entries this pass used, and the side file removed. Neither is fsynced: a lost write costs
    only the time to make its entries again."""

    def __init__(self, path: Path | None, fingerprint: str):
        self.path, self.fingerprint = path, fingerprint
        self.entries: dict[str, dict] = {}
        self.delta: dict[str, dict] = {}  # the side file's entries, as read
        self.used: dict[str, dict] = {}
        self.added: dict[str, dict] = {}  # parts this pass made
        self.has_copy = False
        if path is None:
            return
        self.entries = self._read(path)
        self.has_copy = bool(self.entries)  # a side file is written only beside a copy
        self.delta = self._read(path.with_name(DELTA_NAME))
        self.entries.update(self.delta)

    @property
    def dirty(self) -> bool:
        return bool(self.added)

    def _read(self, path: Path) -> dict[str, dict]:
        try:
            data = marshal.loads(path.read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            return {}
        if (
            isinstance(data, dict)
            and data.get("version") == VERSION
            and data.get("fingerprint") == self.fingerprint
            and isinstance(data.get("files"), dict)
        ):
            return data["files"]
        return {}

    def _part(self, digest: str, part: str):
        entry = self.entries.get(digest)
        raw = entry.get(part) if isinstance(entry, dict) else None
        if raw is not None:
            self.used.setdefault(digest, {})[part] = raw
        return raw

    def _put(self, digest: str, part: str, raw) -> None:
        self.used.setdefault(digest, {})[part] = raw
        self.added.setdefault(digest, {})[part] = raw

    def get(self, digest: str) -> FileWords | None:
        raw = self._part(digest, "w")
        try:
            return None if raw is None else FileWords.from_raw(raw)
        except (TypeError, ValueError):
            return None  # a damaged entry is rebuilt like a missing one

    def put(self, digest: str, words: FileWords) -> None:
        self._put(digest, "w", words.to_raw())

    def head(self, digest: str) -> tuple[str | None, dict] | None:
        """(problem, frontmatter keys) as `put_head` kept them, or None."""
        raw = self._part(digest, "h")
        if not (isinstance(raw, tuple) and len(raw) == 2 and isinstance(raw[1], dict)):
            return None
        return raw[0], raw[1]

    def put_head(self, digest: str, problem: str | None, meta: dict) -> None:
        try:
            marshal.dumps(meta)
        except ValueError:
            return  # a date or other YAML type marshal cannot keep: parsed again next time
        self._put(digest, "h", (problem, meta))

    def save(self) -> None:
        if self.path is None:
            return
        delta_path = self.path.with_name(DELTA_NAME)
        stale = sum(1 for digest in self.entries if digest not in self.used)
        too_stale = stale > len(self.entries) // 8
        if not self.added and not too_stale:
            return  # nothing new, and what is stale costs only its share of the read
        small = len(self.delta) + len(self.added) <= DELTA_MAX
        if self.added and self.has_copy and not too_stale and small:
            delta = dict(self.delta)
            for digest, parts in self.added.items():
                delta[digest] = {**delta.get(digest, {}), **parts}
            self._write(delta_path, delta)
            return
        self._write(self.path, self.used)
        try:
            delta_path.unlink()
        except OSError:
            pass  # none, or it stays: its entries are right for their texts whatever the copy

    def _write(self, path: Path, files: dict) -> None:
        from cmem.cache_file import write_cache

        data = {"version": VERSION, "fingerprint": self.fingerprint, "files": files}
        try:
            # the memory's own statements: its owner's only, as the run records
            write_cache(str(path), marshal.dumps(data), mode=0o600)
        except ValueError:
            pass  # a value marshal cannot hold: not kept


TOKENS_NAME = "text-tokens.marshal"


class TokenMemo:
    """The token estimate of each memory file's text, kept in the machine folder by the text's
    digest. The resident size cap is checked by the builtin engine and by the validator, each
    measuring all resident files (506 of them, 1 MB, at 10k notes) on every pass, though they
    change only when a pass or the user writes them. The validator keeps what it measured (the
    files before and the texts it accepts, so the next pass's originals are known); the engine
    only reads. Kept under the stats of the modules that define the estimate: a changed
    definition starts afresh; a missing or damaged memo only costs the time."""

    def __init__(self, machine_dir: Path | None):
        self.path = machine_dir / TOKENS_NAME if machine_dir is not None else None
        self.old: dict[bytes, int] = {}
        self.used: dict[bytes, int] = {}
        if self.path is None:
            return
        try:
            data = marshal.loads(self.path.read_bytes())
            if isinstance(data, dict) and data.get("header") == self._header():
                known = data.get("tokens")
                self.old = known if isinstance(known, dict) else {}
        except (OSError, EOFError, ValueError, TypeError):
            pass

    @staticmethod
    def _header() -> tuple:
        from cmem import __version__
        from cmem.cache_file import code_stamp
        from cmem.text import scripts, tokens

        return (FORMATS["statement-tokens"], __version__, code_stamp(tokens, scripts))

    def tokens(self, text: str, estimate) -> int:
        """`estimate(text)`, from the memo when this very text was measured before."""
        key = digest_of(text)
        found = self.old.get(key)
        if not isinstance(found, int):
            found = estimate(text)
        self.used[key] = found
        return found

    def save(self) -> None:
        """Keeps the texts measured this time (a file since rewritten or removed drops out)."""
        if self.path is None or not self.used or self.used.keys() == self.old.keys():
            return
        from cmem.cache_file import write_cache

        if self.path.parent.is_dir():  # the machine folder is made by the commands that write
            write_cache(
                str(self.path), marshal.dumps({"header": self._header(), "tokens": self.used})
            )
