"""Odd notes through every command (issue 6): a byte-order mark, mixed line ends, broken or unclosed
frontmatter, undecodable bytes, NUL, a huge note, a symbolic link, sync-conflict copies, a cloud
placeholder and a dataless file, empty and blank notes — and memory files with NUL.

Each command runs as a user runs it (a subprocess): no traceback, every odd file byte-identical
afterwards, and no odd file named more than once; the commands that read the notes (status,
scan, context, doctor, converge) name each one exactly once — but a warning about a note is
said once on this machine (issue 44): `status` says it, the pass after it does not (its commit
and `cmem log` would repeat it at every pass), `scan` and `doctor` list every one always.
test_notes.py tests reading them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import git

CONFLICT = "n.sync-conflict-20260101-120000-ABCDEFG.md"
# file -> (bytes, a fragment of the warning that names it)
ODD = {
    "bom.md": ("\ufeff# bom\n\nI prefer tea in the morning\n".encode(), "byte-order mark"),
    "crlf.md": (b"# crlf\r\n\nI decided to use uv for every project\r\n", "mixes line ends"),
    "badfm.md": (b"---\nkey: [unclosed\n---\nI prefer vim keybindings\n", "not valid YAML"),
    "openfm.md": (b"---\nkey: 1\nI prefer tabs over spaces\n", "not closed"),
    "latin1.md": ("caf\xe9: I prefer coffee after lunch\n".encode("latin-1"), "not valid UTF-8"),
    "nul.md": (b"I prefer\x00 binary\n", "NUL"),
    "utf16.md": ("# utf16\n\nI prefer green tea\n".encode("utf-16"), "UTF-16"),
    "utf16be.md": ("# utf16\n\nI prefer black tea\n".encode("utf-16-be"), "UTF-16 BE"),
    "huge.md": (b"I prefer long notes\n" * 400, "over the"),
    CONFLICT: (b"I prefer the other device's version\n", "sync-conflict"),
    "n (conflicted copy).md": (b"I prefer Dropbox's copy\n", "sync-conflict"),
    ".n.md.icloud": (b"bplist00\xd4\x01\x02", "cloud placeholder"),
    "empty.md": (b"", "is empty"),
    "blank.md": (b"\n\n   \n", "is empty"),
}
MEMORY_ODD = {
    "converged/topics/nul-topic.md": (b"# x\n\x00\x01\n", "NUL"),
}
COMMANDS = [
    ["status"],
    ["scan"],
    ["context"],
    ["doctor"],
    ["converge", "--engine", "builtin"],
    ["note", "I prefer short notes"],
    ["archive", "list"],
    ["recall", "tea"],
    ["log"],
    ["trace", "tea"],
]
NAMING = {"status", "scan", "context", "doctor", "converge"}


@pytest.fixture
def odd_vault(tmp_path) -> tuple[Path, dict[str, tuple[bytes, str]]]:
    root = tmp_path / "vault"
    done = subprocess.run(
        [sys.executable, "-m", "cmem", "init", str(root), "--lang", "en"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    with open(root / ".cmem/config.yaml", "a", encoding="utf-8") as handle:
        handle.write("max_note_bytes: 6000\n")
    files = dict(ODD) | dict(MEMORY_ODD)
    for rel, (data, _) in files.items():
        (root / rel).write_bytes(data)
    outside = tmp_path / "outside.md"
    outside.write_bytes(b"I prefer secrets outside\n")
    os.symlink(outside, root / "link.md")
    files["link.md"] = (b"link", "symbolic link")
    dataless = root / "dataless.md"  # size on disk, no blocks: an evicted iCloud/OneDrive file
    with open(dataless, "wb") as handle:
        handle.truncate(5000)
    if os.stat(dataless).st_blocks == 0:
        files["dataless.md"] = (dataless.read_bytes(), "no data on disk")
    else:
        dataless.unlink()
    (root / "good.md").write_text("I prefer good notes\n", encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "odd notes")
    return root, files


def _bytes(root: Path, rel: str) -> bytes:
    path = root / rel
    return (
        b"link:" + os.readlink(path).encode() + path.read_bytes()
        if path.is_symlink()
        else path.read_bytes()
    )


def test_odd_notes_through_every_command(odd_vault, tmp_path):
    root, files = odd_vault
    before = {rel: _bytes(root, rel) for rel in files}
    said: set[str] = set()  # the odd notes a status or a pass has said already
    for args in COMMANDS:
        done = subprocess.run(
            [sys.executable, "-m", "cmem", *args, "--vault", str(root)],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=120,
        )
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"{args}: exit {done.returncode}\n{output}"
        assert "Traceback" not in output, f"{args}:\n{output}"
        for rel, (_, fragment) in files.items():
            assert _bytes(root, rel) == before[rel], f"{args} changed {rel}"
            named = [line for line in output.splitlines() if rel in line and fragment in line]
            required = args[0] in NAMING and (
                rel in ODD
                or rel == "link.md"
                or rel == "dataless.md"
                or args[0] in ("doctor", "converge")
            )
            if args[0] in ("status", "converge") and rel in said:
                assert not named, f"`cmem {' '.join(args)}` says {rel} again:\n{output}"
            elif required:
                if args[0] in ("status", "converge") and rel not in MEMORY_ODD:
                    said.add(rel)
                assert len(named) == 1, (
                    f"`cmem {' '.join(args)}` names {rel} {len(named)} times:\n{output}"
                )
            else:
                assert len(named) <= 1, (
                    f"`cmem {' '.join(args)}` names {rel} {len(named)} times:\n{output}"
                )
    assert git(root, "log", "-1", "--format=%s").startswith("cmem: converge")


@pytest.mark.parametrize("rel", ["bom.md", "crlf.md", "latin1.md", "nul.md", "link.md"])
def test_an_odd_capture_note_is_never_appended_to(tmp_path, rel, monkeypatch):
    """`cmem note` writes one file, today's capture note: when that note is odd it says so and leaves it."""
    root = tmp_path / "vault"
    subprocess.run(
        [sys.executable, "-m", "cmem", "init", str(root), "--lang", "en"],
        capture_output=True,
        check=True,
    )
    with open(root / ".cmem/config.yaml", "a", encoding="utf-8") as handle:
        handle.write('capture:\n  name_pattern: "{date} inbox"\n')
    from datetime import datetime

    today = root / f"{datetime.now().strftime('%Y-%m-%d')} inbox.md"
    if rel == "link.md":
        target = tmp_path / "elsewhere.md"
        target.write_bytes(b"not yours\n")
        os.symlink(target, today)
        data = b"not yours\n"
    else:
        data = ODD[rel][0]
        today.write_bytes(data)
    done = subprocess.run(
        [sys.executable, "-m", "cmem", "note", "a thought", "--vault", str(root)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and done.stderr.startswith("error: ") and today.name in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert today.read_bytes() == data
