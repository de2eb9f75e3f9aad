import os

from cmem.text.tokens import estimate_tokens
from cmem.vault.layers import DIVERGENT, NoteFile, open_vault
from cmem.vault.notes import find_odd_names, odd_from_note, read_note


def _read(root, rel, **kw):
    return read_note(NoteFile(rel, root / rel, DIVERGENT), **kw)


def test_odd_notes_are_read_safely_and_named(make_vault):
    root = make_vault(
        {
            "bom.md": "\ufeff# hi\n我喜欢早起\n".encode("utf-8"),
            "crlf.md": b"# hi\r\nI prefer tea\r\n",
            "mixed.md": b"# hi\r\nI prefer tea\n",
            "badfm.md": "---\nkey: [unclosed\n---\nbody\n",
            "openfm.md": "---\nkey: 1\nbody never closed\n",
            "latin1.md": "caf\xe9 cr\xe8me\n".encode("latin-1"),
            "nul.md": b"abc\x00def\n",
            "empty.md": "\n\n",
            "big.md": "x" * 5000,
        },
        config_yaml="max_note_bytes: 1024\n",
    )
    before = {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()}
    bom = _read(root, "bom.md")
    assert (
        bom.usable
        and bom.text.startswith("# hi")
        and "byte-order mark" in bom.problems[0]
        and not bom.rewritable
    )
    crlf = _read(root, "crlf.md")
    assert crlf.usable and "\r" not in crlf.text and crlf.lines[1] == "I prefer tea"
    assert crlf.problems == []  # CRLF throughout: a core.autocrlf checkout, nothing odd
    mixed = _read(root, "mixed.md")
    assert (
        mixed.usable
        and "\r" not in mixed.text
        and any("mixes line ends" in p for p in mixed.problems)
    )
    bad = _read(root, "badfm.md")
    assert bad.usable and bad.meta == {}
    from cmem.vault.notes import check_frontmatter

    assert "not valid YAML" in check_frontmatter(bad)
    assert any("not closed" in p for p in _read(root, "openfm.md").problems)
    latin = _read(root, "latin1.md")
    assert latin.usable and "not valid UTF-8" in latin.problems[0]
    assert latin.text == "café crème\n" and "Windows-1252" in latin.problems[0]
    assert "NUL" in _read(root, "nul.md").skip_reason
    assert "empty" in _read(root, "empty.md").skip_reason
    big = _read(root, "big.md", max_bytes=1024)
    assert "limit" in big.skip_reason
    kinds = {
        o.kind
        for name in ("bom.md", "nul.md", "empty.md")
        for o in odd_from_note(_read(root, name))
    }
    assert kinds == {"encoding", "binary", "empty"}
    after = {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()}
    assert before == after


def test_odd_names(make_vault, tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("secret\n")
    root = make_vault(
        {
            "x.sync-conflict-20261128-101010-ABCDEF.md": "a",
            "x (conflicted copy 2026-11-28).md": "a",
            ".x.md.icloud": b"bplist",
            "real.md": "a",
        }
    )
    os.symlink(outside, root / "link.md")
    vault = open_vault(root)
    odd = {o.rel: o.kind for o in find_odd_names(vault)}
    assert odd == {
        "x.sync-conflict-20261128-101010-ABCDEF.md": "sync-conflict",
        "x (conflicted copy 2026-11-28).md": "sync-conflict",
        ".x.md.icloud": "cloud-placeholder",
        "link.md": "symlink",
    }
    assert [n.rel for n in vault.list_layer(DIVERGENT)] == ["real.md"]


def test_token_estimate():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd" * 10) == 10
    assert estimate_tokens("我喜欢早起") == 5
    assert estimate_tokens("我喜欢 uv") == 3 + 1


def test_a_note_is_read_by_its_size_and_whole_if_it_grew_since_its_stat(tmp_path, monkeypatch):
    """read_note asks the system for the size the stat gave (+1), not for max_bytes + 1 (a 2 MB
    buffer for every note); a file that grew after the stat is still read to its end or the
    limit, as one read of max_bytes + 1 would have."""
    from cmem.vault.layers import NoteFile
    from cmem.vault.notes import read_note

    path = tmp_path / "a.md"
    path.write_text("- first line\n", encoding="utf-8")
    file = NoteFile("a.md", str(path), "divergent")
    stale = os.stat(path)
    path.write_text("- first line\n" + "- grown line\n" * 20_000, encoding="utf-8")
    asked = []
    real_read = os.read

    def read(fd, size):
        asked.append(size)
        return real_read(fd, size)

    monkeypatch.setattr(os, "read", read)
    size = os.stat(path).st_size
    assert read_note(file, st=os.stat(path)).text == path.read_text(encoding="utf-8")
    assert asked[0] == size + 1 and max(asked) == size + 1  # never max_bytes + 1 (2,000,001)
    # grown since the stat: read on, in chunks, to the end ...
    asked.clear()
    assert read_note(file, st=stale).text == path.read_text(encoding="utf-8")
    assert asked[0] == stale.st_size + 1 and max(asked) == 65_536
    # ... or to the limit, as before
    limit = 1000
    capped = read_note(file, max_bytes=limit, st=stale)
    assert capped.size == stale.st_size and len(capped.text) == limit + 1


def test_odd_names_in_any_case_and_script_are_found_past_the_plain_name_shortcut(make_vault):
    """find_odd_names passes plain ASCII note names without its regex: a conflict copy in any
    case, a linked note, a folder named like a note and non-ASCII names must still be told."""
    root = make_vault(
        {
            "a (CONFLICT 1).md": "a",
            "b.SYNC-CONFLICT-20261128-101010-ABCDEF.md": "a",
            "c (Conflicted Copy 2026-11-28).md": "a",
            "笔记 (conflict 2).md": "a",
            "CONFLıCT (conflict 3).md": "a",
            "plain conflictless.md": "a",
            "archive/2026-11/d (Conflict 1).md": "a",
            "archive/e.md/f (conflict 1).md": "a",
            "real.md": "a",
        }
    )
    os.symlink(root / "real.md", root / "link.md")
    odd = {o.rel: o.kind for o in find_odd_names(open_vault(root))}
    assert odd == {
        "a (CONFLICT 1).md": "sync-conflict",
        "b.SYNC-CONFLICT-20261128-101010-ABCDEF.md": "sync-conflict",
        "c (Conflicted Copy 2026-11-28).md": "sync-conflict",
        "笔记 (conflict 2).md": "sync-conflict",
        "CONFLıCT (conflict 3).md": "sync-conflict",
        "archive/2026-11/d (Conflict 1).md": "sync-conflict",
        "archive/e.md/f (conflict 1).md": "sync-conflict",
        "link.md": "symlink",
    }


def test_the_body_read_off_the_text_is_the_body_of_the_lines():
    """`read_note` tells an empty note by `_body_of`, the text after the frontmatter's closing
    line, not by joining the lines: it must be `Note.body` for any text, and the empty notes
    the ones whose body and frontmatter hold only whitespace."""
    import random

    from cmem.vault import notes
    from cmem.vault.yaml_reader import split_frontmatter

    pieces = ["---", "...", "--- ", "---\t", "\n", " ", "\t", "a: 1", "# x", "body", "\u3000", "-"]
    chooser = random.Random(13)
    texts = ["", "---", "---\n", "---\n---", "---\n---\n", "---\n---\n \n", "---\na\n...\nb"]
    for _ in range(20_000):
        opening = chooser.choice(["", "---\n"])  # half of them open a frontmatter block
        texts.append(
            opening + "".join(chooser.choice(pieces) for _ in range(chooser.randint(0, 9)))
        )
    closed = 0
    for text in texts:
        block, body_start, _ = split_frontmatter(text)
        closed += block is not None
        note = notes.Note(NoteFile("n.md", "n.md", DIVERGENT), text=text, body_start=body_start)
        assert notes._body_of(text, block) == note.body, repr(text)
        raw = text.encode("utf-8")
        empty = not note.body.strip() and not (block or "").strip()
        read = notes._decode_into(notes.Note(NoteFile("n.md", "n.md", DIVERGENT)), raw)
        assert (read.skip_reason == "is empty") == empty, repr(text)
    assert closed > 500  # the frontmatter cases are covered, not only plain texts
