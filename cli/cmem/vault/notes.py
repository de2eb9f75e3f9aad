"""Reading notes robustly (docs/design.md §1).

Anything may be on disk: a byte-order mark, CRLF line ends, broken frontmatter, bytes that are
not UTF-8, NUL bytes, a 200 MB paste, a cloud placeholder with no data. Reading never fails and
never rewrites: it returns a `Note` with the problems named, and the callers decide — a note with
a problem is still read where that is safe, but cmem never rewrites it.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from cmem.regular_files import read_regular, reason_of, special_kind
from cmem.text.encodings import UTF8, decode_note
from cmem.vault.layers import (
    ARCHIVE,
    DIVERGENT,
    NEVER_READ_DIRS,
    RESIDENT,
    SITUATIONAL,
    NoteFile,
    Vault,
    is_cloud_placeholder,
    is_sync_conflict,
    is_undecodable,
    show_name,
)
from cmem.vault.yaml_reader import parse_frontmatter_block, split_frontmatter

LINKED_FOLDER = "linked-folder"  # an OddFile kind: a layer folder that leads out of the vault

# A placeholder left by a cloud client ("online-only" file) has a size but no blocks on disk.
# Small files may legitimately be stored inline with zero blocks, hence the threshold.
_DATALESS_MIN_SIZE = 4096


class _cached:
    """`functools.cached_property` without its lock: Python 3.11 takes an RLock on each first
    read, which cost as much as the split it guards (a cold scan reads thousands of notes). The
    value lands in the instance dict, which later reads find first; it depends on the note alone,
    so two threads making it at once would store equal values."""

    def __init__(self, func):
        self.func = func
        self.__doc__ = func.__doc__

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.func(instance)
        return value


@dataclass
class Note:
    file: NoteFile
    text: str = ""  # decoded, BOM removed, line ends normalised to \n
    sha256: str = ""  # of the bytes on disk
    size: int = 0
    mtime_ns: int = 0
    frontmatter: str | None = None  # the YAML block between the --- fences, if closed
    body_start: int = 1  # 1-based line number where the body starts
    problems: list[str] = field(default_factory=list)  # warnings: the note is read, never rewritten
    skip_reason: str | None = None  # set when the note is not an input at all

    @property
    def rel(self) -> str:
        return self.file.rel

    @property
    def usable(self) -> bool:
        return self.skip_reason is None

    @property
    def rewritable(self) -> bool:
        """cmem rewrites only notes it can write back exactly as UTF-8 with \\n."""
        return self.usable and not self.problems

    @_cached
    def lines(self) -> list[str]:
        return self.text.split("\n")

    @_cached
    def body(self) -> str:
        return "\n".join(self.lines[self.body_start - 1 :])

    @_cached
    def meta(self) -> dict:
        """The parsed frontmatter (`yaml_reader`: PyYAML's C loader), `{}` when absent or broken."""
        data, _ = parse_frontmatter_block(self.frontmatter)
        return data


def _size(count: int) -> str:
    return f"{count / 1e6:.1f} MB" if count >= 100_000 else f"{count / 1e3:.1f} KB"


def read_note(
    file: NoteFile,
    max_bytes: int = 2_000_000,
    raw: bytes | None = None,
    st: os.stat_result | None = None,
) -> Note:
    """`st`: the file's stat when the caller has just taken it (a scan does), to save a second."""
    note = Note(file=file)
    if st is None:
        try:
            st = os.stat(file.location, follow_symlinks=False)
        except OSError as exc:
            note.skip_reason = f"cannot be read ({exc.strerror})"
            return note
    note.size, note.mtime_ns = st.st_size, st.st_mtime_ns
    kind = special_kind(st.st_mode)
    if kind:
        note.skip_reason = NOT_A_FILE.format(kind)
        return note
    if st.st_size > max_bytes:
        note.skip_reason = (
            f"is {_size(st.st_size)}, over the {_size(max_bytes)} limit (max_note_bytes)"
        )
        return note
    if st.st_size >= _DATALESS_MIN_SIZE and getattr(st, "st_blocks", 1) == 0:
        note.skip_reason = "has no data on disk (a cloud placeholder); open it once to download it"
        return note
    if raw is None:
        try:
            raw = _read_bytes(file.location, st.st_size, max_bytes)
        except OSError as exc:
            note.skip_reason = reason_of(exc)
            return note
    note.sha256 = hashlib.sha256(raw).hexdigest()
    return _decode_into(note, raw)


_GROWN_CHUNK = 65536


def _read_bytes(location, size: int, max_bytes: int) -> bytes:
    """The file's bytes, up to `max_bytes + 1`, asked for by the size its stat gave: reading
    `max_bytes + 1` at once made a 2 MB buffer for every 2 KB note. A file that grew since the stat is read on, in chunks, to its end or the limit — the
    same bytes `open(...).read(max_bytes + 1)` returns. No Path and no file object: a scan reads
    thousands."""
    # not blocking: a file swapped for a FIFO since its stat reads as empty, never waits
    fd = os.open(location, os.O_RDONLY | os.O_NONBLOCK)
    try:
        parts = []
        got = 0
        want = min(size, max_bytes) + 1  # one more than the stat said: tells a file that grew
        while got <= max_bytes:
            chunk = os.read(fd, want)
            if not chunk:
                break
            parts.append(chunk)
            got += len(chunk)
            want = min(_GROWN_CHUNK, max_bytes + 1 - got)
    finally:
        os.close(fd)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def line_end(raw: bytes) -> bytes:
    """A file's own line end: `\r\n` when every line ends so (a `core.autocrlf` checkout), else
    `\n`. cmem compares text with `\n` and writes a file back in its own line ends."""
    return (
        b"\r\n"
        if b"\r\n" in raw and raw.count(b"\r") == raw.count(b"\r\n") == raw.count(b"\n")
        else b"\n"
    )


def _decode_into(note: Note, raw: bytes) -> Note:
    """The note's text (`text/encodings.py`: a byte-order mark, UTF-16 or UTF-32 without one,
    Windows-1252 where it is not UTF-8 — never a replacement character), and a problem naming
    the encoding whenever it was not plain UTF-8."""
    try:
        text = raw.decode("utf-8")  # the usual note: nothing more to look at
    except UnicodeDecodeError:
        text = None
    if text is None or text.startswith("\ufeff") or "\x00" in text:
        decoded = decode_note(raw)
        if decoded.text is None:
            note.skip_reason = decoded.problem
            return note
        text = decoded.text
        if decoded.bom and decoded.encoding == UTF8:
            note.problems.append("starts with a byte-order mark")
        elif decoded.encoding.startswith(("UTF-16", "UTF-32")):
            how = (
                "by its byte-order mark" if decoded.bom else "no byte-order mark; by its NUL bytes"
            )
            note.problems.append(f"is not UTF-8: read as {decoded.encoding} ({how})")
        elif not decoded.is_plain:
            note.problems.append(f"is not valid UTF-8: read as {decoded.encoding}")
    if "\r" in text:
        # CRLF throughout is a note's own line ends (a `core.autocrlf` checkout): read as `\n`,
        # nothing to say. Mixed ends, or a lone CR, are named: cmem cannot tell which is meant.
        if not (text.count("\r") == text.count("\r\n") == text.count("\n")):
            note.problems.append("mixes line ends (CRLF and LF, or a lone CR)")
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    note.text = text
    block, body_start, problem = split_frontmatter(text)
    note.frontmatter, note.body_start = block, body_start
    if problem:
        note.problems.append(problem)
    if not (block or "").strip() and not _body_of(text, block).strip():
        note.skip_reason = "is empty"
    return note


def _body_of(text: str, block: str | None) -> str:
    """`Note.body` read off the text, without splitting it into lines and joining them again:
    the text itself without frontmatter, else what follows the line that closes it (which
    starts right after the block)."""
    if block is None:
        return text
    end = text.find("\n", 4 + len(block))
    return "" if end < 0 else text[end + 1 :]


def check_frontmatter(note: Note) -> str | None:
    """A full YAML check, for `doctor` and for files cmem is about to rewrite."""
    _, error = parse_frontmatter_block(note.frontmatter)
    return error


def read_text_exact(path) -> tuple[bytes, str]:
    """Bytes and strict UTF-8 text of a file cmem may rewrite; raises UnicodeDecodeError."""
    raw = read_regular(path)
    return raw, raw.decode("utf-8")


# --- odd files --------------------------------------------------------------------------


# odd files cmem still reads (it never rewrites them); every other kind is not read at all
READ_AS_THEY_ARE = frozenset({"frontmatter", "encoding"})


@dataclass(frozen=True)
class OddFile:
    rel: str
    kind: str  # sync-conflict | cloud-placeholder | symlink | not-a-file | linked-folder | undecodable-name | empty | binary | too-large | encoding | frontmatter | unreadable
    message: str


NOT_A_FILE = "is {}, not a regular file; cmem never opens it"
_UNLISTED = "is a folder that cannot be read ({}); cmem does not read the notes in it"
UNDECODABLE = "has a name that is not valid UTF-8; cmem does not read it (rename it)"


def find_odd_names(vault: Vault) -> list[OddFile]:
    """Files that are never inputs because of what they are, found by name and type alone:
    sync-conflict copies, cloud placeholders, symlinks and names that are not UTF-8 in the
    managed folders, and layer folders that lead out of the vault (which are not read at all).

    The archive's answers are kept by folder stats (`vault/archive_names.py`), as its note
    paths are: an odd name can only come or go with its folder's own stat, and listing the ~120
    folders of a 10k vault's archive (~7k names) was most of this on every pass and scan."""
    odd = []
    folders = [vault.root]
    layer_folders = [(DIVERGENT, f) for f in vault.config.extra_divergent]
    layer_folders += [
        (layer, vault.layer_folder(layer)) for layer in (RESIDENT, SITUATIONAL, ARCHIVE)
    ]
    archive = None
    for layer, folder in layer_folders:
        problem = vault.layer_folder_problem(layer, folder)
        if problem:
            odd.append(
                OddFile(folder, LINKED_FOLDER, f"{problem}; cmem does not read or write through it")
            )
        else:
            folders.append(vault.root / folder)
            if layer == ARCHIVE:
                archive = folders[-1]
    seen: set[str] = set()
    for top in folders:
        top_rel = top.relative_to(vault.root).as_posix()
        recursive = top != vault.root and (
            top_rel not in vault.config.extra_divergent
            or top_rel in vault.config.recursive_divergent
        )
        if top == archive and recursive and not vault.listed(ARCHIVE):
            found = _archive_odd_names(vault, top_rel)
        else:
            found = []
            stack: list[str | Path] = [top]
            while stack:
                below = stack.pop()
                try:
                    entries = vault.list_folder(below)  # the scan's listing, if it has one
                except PermissionError as exc:  # its notes are not read: said, not a stop
                    found.append((vault.rel(below), "unreadable", _UNLISTED.format(exc.strerror)))
                    continue
                except OSError:
                    continue  # gone, or not a folder
                subfolders, here = odd_in_folder(vault, entries, recursive)
                stack.extend(subfolders)
                found.extend(here)
        for rel, kind, message in found:
            if rel not in seen:
                seen.add(rel)
                odd.append(OddFile(rel, kind, message))
    return sorted(odd, key=lambda o: o.rel)


def odd_in_folder(
    vault: Vault, entries: list[os.DirEntry], recursive: bool
) -> tuple[list[str], list[tuple[str, str, str]]]:
    """One folder's part of `find_odd_names`: the subfolders to look in next (when `recursive`)
    and its odd names as (vault-relative path, kind, message)."""
    subfolders: list[str] = []
    found: list[tuple[str, str, str]] = []
    for entry in entries:
        name = entry.name
        if (
            name.isascii()
            and name.endswith(".md")
            and "conflict" not in name.lower()
            and entry.is_file(follow_symlinks=False)
        ):
            # the common case, told without a regex: a plain note. An ASCII name is
            # decodable, no placeholder (`.md.icloud`), and a sync-conflict name holds
            # "conflict" in some case (for ASCII, what re.IGNORECASE matches)
            continue
        if is_undecodable(name):
            is_dir = entry.is_dir(follow_symlinks=False)
            if (recursive or not is_dir) and (is_dir or name.endswith(".md")):
                message = (
                    UNDECODABLE
                    if not is_dir
                    else "is a folder whose name is not valid UTF-8; cmem does not read the notes in it (rename it)"
                )
                found.append((show_name(vault.rel(entry.path)), "undecodable-name", message))
            continue
        if entry.is_dir(follow_symlinks=False):
            if recursive and not name.startswith(".") and name not in NEVER_READ_DIRS:
                subfolders.append(entry.path)
            continue
        if is_cloud_placeholder(name):
            found.append(
                (
                    vault.rel(entry.path),
                    "cloud-placeholder",
                    "is a cloud placeholder (not downloaded); it is not read",
                )
            )
        elif name.endswith(".md") and is_sync_conflict(name):
            found.append(
                (
                    vault.rel(entry.path),
                    "sync-conflict",
                    "is a sync-conflict copy; merge it into the original by hand",
                )
            )
        elif name.endswith(".md") and entry.is_symlink():
            found.append(
                (
                    vault.rel(entry.path),
                    "symlink",
                    "is a symbolic link; cmem does not follow links out of the vault",
                )
            )
        elif name.endswith(".md") and not entry.is_file(follow_symlinks=False):
            kind = _special(entry)
            if kind:
                found.append((vault.rel(entry.path), "not-a-file", f"{NOT_A_FILE.format(kind)}"))
        # else an ordinary file: no path arithmetic (this walks the whole archive)
    return subfolders, found


def _special(entry: os.DirEntry) -> str | None:
    """ "a FIFO", "a socket", … for a directory entry that is one (None: gone since listed)."""
    try:
        return special_kind(entry.stat(follow_symlinks=False).st_mode)
    except OSError:
        return None


def _archive_odd_names(vault: Vault, base: str) -> list[tuple[str, str, str]]:
    """`odd_in_folder` over the archive, each folder listed only when its stat changed."""
    import sys

    from cmem.cache_store import code_stamp
    from cmem.vault import layers
    from cmem.vault.archive_names import ODD_NAMES, kept_walk

    def one_folder(folder: str):
        try:
            entries = vault.list_folder(vault.root / folder)
        except PermissionError as exc:
            return [], [(folder, "unreadable", _UNLISTED.format(exc.strerror))]
        except OSError:
            return None
        subfolders, found = odd_in_folder(vault, entries, recursive=True)
        return [vault.rel(Path(sub)) for sub in subfolders], found

    # what decides an odd name besides the folder: this code and the names it tests
    version = code_stamp(sys.modules[__name__], layers)
    found = kept_walk(vault.root, base, vault.machine_dir / ODD_NAMES, repr(version), one_folder)
    return [tuple(item) for item in found]


def find_undecodable_names(vault: Vault) -> list[OddFile]:
    """Every file or folder of the vault (dot-folders aside) whose name is not UTF-8, managed or
    not: cmem skips them, but git and other tools may trip over them (for `cmem doctor`)."""
    found = []
    for folder, dirs, files in os.walk(vault.root):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in NEVER_READ_DIRS]
        for name in sorted(dirs + files):
            if is_undecodable(name):
                kind = "folder" if name in dirs else "file"
                found.append(
                    OddFile(
                        show_name(vault.rel(os.path.join(folder, name))),
                        "undecodable-name",
                        f"is a {kind} whose name is not valid UTF-8; cmem never reads it, and git may show it oddly (rename it)",
                    )
                )
        dirs[:] = [d for d in dirs if not is_undecodable(d)]
    return sorted(found, key=lambda o: o.rel)


def odd_from_note(note: Note) -> list[OddFile]:
    found = []
    if note.skip_reason:
        kind = (
            "empty"
            if "empty" in note.skip_reason
            else "binary"
            if "NUL" in note.skip_reason
            else "too-large"
            if "limit" in note.skip_reason
            else "cloud-placeholder"
            if "placeholder" in note.skip_reason
            else "unreadable"
        )
        found.append(OddFile(note.rel, kind, note.skip_reason))
    for problem in note.problems:
        kind = "frontmatter" if "frontmatter" in problem else "encoding"
        found.append(OddFile(note.rel, kind, f"{problem}; cmem reads it but never rewrites it"))
    return found


_DATE_IN_NAME = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


def note_date(name: str, fallback: date) -> date:
    """The date a note speaks from: a date in its name (daily notes), else `fallback`."""
    match = _DATE_IN_NAME.search(name)
    if match:
        try:
            return date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
        except ValueError:
            pass
    return fallback
