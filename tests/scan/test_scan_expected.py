"""`scan_note` on every note of sample-vault/ and every case of the labelled corpus, compared
with a stored expectation (tests/scan/scan_notes.expected.json): a change made for speed must leave
every hit, flag, tag and link as it was. The corpus checks the class per case; this checks the
whole result, line numbers, excerpts and keys included.

A deliberate change of detection regenerates the file: `PYTHONPATH=tests python tests/scan/test_scan_expected.py`,
and the diff of the JSON is reviewed with the change."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from cmem.scan.signals import scan_note
from cmem.vault.layers import DIVERGENT, NoteFile
from cmem.vault.notes import read_note
from support import SAMPLE_VAULT, TESTS

EXPECTED = Path(__file__).resolve().parent / "scan_notes.expected.json"
# Configured cues too: they take the same paths as the built-in ones, before them in a class.
EXTRA_CUES = {"preference": ("always", "my habit"), "decision": ("决定",)}


def _cases() -> list[tuple[str, bytes]]:
    """(name, content): the sample vault's notes as they are, and each corpus case plain, under
    frontmatter with a fenced copy (the blocked-line paths), and in capitals."""
    cases = [
        (path.relative_to(SAMPLE_VAULT).as_posix(), path.read_bytes())
        for path in sorted(SAMPLE_VAULT.rglob("*.md"))
    ]
    for tsv in sorted((TESTS / "corpus").glob("*.tsv")):
        for number, raw in enumerate(tsv.read_text("utf-8").split("\n"), 1):
            if not raw.strip() or raw.startswith("#"):
                continue
            text = raw.split("\t", 1)[1].replace("\\n", "\n").replace("\\t", "\t")
            fenced = f"---\ntags: [x]\n---\n{text}\n```\n{text}\n```\n<!-- {text}\n-->{text}\n"
            for variant, body in (("plain", text), ("blocks", fenced), ("caps", text.upper())):
                cases.append((f"{tsv.name}:{number}:{variant}", body.encode("utf-8")))
    return cases


def scan_all(folder: Path) -> dict[str, list]:
    results = {}
    for number, (name, content) in enumerate(_cases()):
        path = folder / f"{number}.md"
        path.write_bytes(content)
        note = read_note(NoteFile(path.name, path, DIVERGENT))
        for suffix, extra in (("", None), (" +cues", EXTRA_CUES)):
            scanned = scan_note(note, extra)
            flags = scanned.flags
            results[name + suffix] = [
                [hit.to_list() for hit in scanned.hits],
                [flags.confirmed, flags.excluded, flags.reason, flags.tags, flags.problem],
                scanned.links,
            ]
    return json.loads(json.dumps(results, ensure_ascii=False))  # tuples as lists, as stored


def test_every_note_scans_as_stored(tmp_path):
    expected = json.loads(EXPECTED.read_text("utf-8"))
    got = scan_all(tmp_path)
    assert sorted(got) == sorted(expected)
    changed = [name for name in expected if got[name] != expected[name]]
    assert not changed, f"{len(changed)} notes scan differently, first {changed[0]!r}:\n" + (
        f"  stored {expected[changed[0]]}\n  now    {got[changed[0]]}"
    )


if __name__ == "__main__":  # regenerate after a deliberate change of detection
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        data = scan_all(Path(folder))
    EXPECTED.write_text(json.dumps(data, ensure_ascii=False, indent=0) + "\n", "utf-8")
    print(f"{len(data)} results written to {EXPECTED}", file=sys.stderr)
