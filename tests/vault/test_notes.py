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
