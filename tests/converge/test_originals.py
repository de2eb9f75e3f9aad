"""The pass reads every memory file (`converge/memory/files.py: read_originals`) with plain system calls: each
answer is the one `steps/changes.py: current_bytes` gives, whatever the file holds or is."""

from __future__ import annotations

import random

from cmem.converge.memory.files import _file_bytes, read_originals
from cmem.steps.changes import current_bytes
from cmem.vault.layers import open_vault


def test_plain_reads_give_what_current_bytes_gives(tmp_path):
    rng = random.Random(13)
    cases = {
        "empty.md": b"",
        "crlf.md": b"# T\r\n\r\n- a\r\n",
        "not-utf8.md": b"- caf\xe9\n",
        "nul.md": b"a\x00b\n",
        "exact.md": b"x" * (1 << 16),
        "large.md": bytes(rng.randrange(256) for _ in range(300_000)),
        "zh.md": "- 其实我更喜欢早上写代码。\n".encode() * 5000,
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "folder.md").mkdir()
    (tmp_path / "plain").write_bytes(b"x")
    names = [*cases, "folder.md", "missing.md", "plain/below.md"]
    for name in names:
        location = str(tmp_path / name)
        assert _file_bytes(location) == current_bytes(location), name
    assert _file_bytes(str(tmp_path / "large.md")) == cases["large.md"]


def test_the_originals_are_the_files_as_read(make_vault):
    files = {
        "converged/core/profile.md": "# P\n\n- 其实我更喜欢早上写代码。\n",
        "converged/topics/crlf.md": "# C\r\n\r\n- uses uv\r\n",
        "converged/topics/plain.md": "# Plain\n\n- uses uv\n" * 2000,
    }
    root = make_vault(files)
    (root / "converged/topics/latin1.md").write_bytes(b"- caf\xe9\n")
    texts, raws = read_originals(open_vault(root))
    for rel in [*files, "converged/topics/latin1.md"]:
        raw = (root / rel).read_bytes()
        assert raws[rel] == raw
        if rel.endswith("latin1.md"):  # not UTF-8: read as a note is, never with U+FFFD
            assert texts[rel] == "- café\n"
        else:
            assert texts[rel] == raw.decode("utf-8").replace("\r\n", "\n")
