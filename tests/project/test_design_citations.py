"""The design lives in the repository: nothing cites a file outside it, and every citation of
docs/design.md names a section, a rule or an anchor the document has."""

from __future__ import annotations

import re
import subprocess
from typing import get_args

from cmem.archive.checklist import LineState
from cmem.converge.validator.rules import RULES
from support import REPO

DESIGN = REPO / "docs" / "design.md"
# Transcripts recorded from the real agent CLIs, kept byte for byte: the paths in them are what
# the agents wrote, data for the parsers, not citations.
RECORDED = "tests/sessions/fixtures/real/"
# A citation of the old contract, or a path that only exists beside one checkout on one machine.
OUTSIDE = re.compile(r"\bSPEC\b|SPEC\.md|\.\./shared\b|(?<![\w~.])/work/")
# `docs/design.md §5`, `design.md §3–5`, `docs/design.md §14, §15`, `§5 rule 12`, `§5, rule 9`
CITATION = re.compile(
    r"(?:docs/)?design\.md\)? §(\d+)((?:\s*(?:–|-|,|, and)\s*§?\d+(?!\.\d))*)"
    r"(?:,? rules? (\d+))?"
)
# this test and the layout measure that counts the same patterns name what they look for
NAMING = ("tests/project/test_design_citations.py", "bench/layout.py")
ANCHOR = re.compile(r"design\.md#([\w-]+)")


def _tracked() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout
    return [p for p in listed.decode("utf-8").split("\0") if p]


def _texts():
    for rel in _tracked():
        path = REPO / rel
        if rel.startswith(RECORDED) or not path.is_file() or path.is_symlink():
            continue
        yield rel, path.read_bytes().decode("utf-8", "replace")


def outside_citations(text: str) -> list[str]:
    return [m.group(0) for m in OUTSIDE.finditer(text)]


def cited_sections(text: str) -> list[tuple[int, int | None]]:
    """(section, rule or None) of every citation of the design document in `text`."""
    found: list[tuple[int, int | None]] = []
    for m in CITATION.finditer(text):
        first = int(m.group(1))
        found.append((first, int(m.group(3)) if m.group(3) else None))
        rest = m.group(2)
        for number in re.findall(r"\d+", rest):
            if re.search(rf"[–-]\s*§?{number}\b", rest):
                found += [(n, None) for n in range(first + 1, int(number) + 1)]
            else:
                found.append((int(number), None))
    return found


def _sections() -> dict[int, str]:
    text = DESIGN.read_text("utf-8")
    return {int(n): title for n, title in re.findall(r"^## §(\d+) (.+)$", text, re.MULTILINE)}


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation gone, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _section_text(number: int) -> str:
    text = DESIGN.read_text("utf-8")
    start = re.search(rf"^## §{number} ", text, re.MULTILINE)
    assert start, f"docs/design.md has no §{number}"
    end = re.search(r"^## §", text[start.end() :], re.MULTILINE)
    return text[start.start() : start.end() + end.start() if end else len(text)]


def test_nothing_cites_a_file_outside_the_repository():
    found = [
        f"{rel}: {hit}"
        for rel, text in _texts()
        if rel not in NAMING
        for hit in outside_citations(text)
    ]
    assert found == []


def test_the_outside_check_finds_what_it_is_for():
    planted = "per SPEC §9; see ../shared/research/x.md and /work/shared/design/SPEC.md"
    assert len(outside_citations(planted)) == 4
    ordinary = "_SPECIAL, SPECS, ~/work/**, /home/me/work/tidepool, a specification"
    assert outside_citations(ordinary) == []


def test_every_citation_names_a_section_of_the_design():
    sections = _sections()
    assert sorted(sections) == list(range(1, len(sections) + 1)), "sections are numbered 1..n"
    rules = set(re.findall(r"^\| (\d+) \|", _section_text(5), re.MULTILINE))
    cited = 0
    for rel, text in _texts():
        for section, rule in cited_sections(text):
            cited += 1
            assert section in sections, f"{rel} cites docs/design.md §{section}, which is not there"
            if rule is not None:
                assert str(rule) in rules, f"{rel} cites rule {rule}, not in docs/design.md §5"
    assert cited > 100  # the code cites the design; a broken pattern would find none


def test_citations_are_read_with_their_lists_and_ranges():
    text = "(docs/design.md §3–5) (docs/design.md §14, §15) (docs/design.md §5 rule 12)"
    assert cited_sections(text) == [
        (3, None),
        (4, None),
        (5, None),
        (14, None),
        (15, None),
        (5, 12),
    ]


def test_every_link_into_the_design_names_a_heading():
    text = DESIGN.read_text("utf-8")
    anchors = {_slug(h) for h in re.findall(r"^#{2,3} (.+)$", text, re.MULTILINE)}
    for rel, body in _texts():
        if rel.endswith(".md"):
            for anchor in ANCHOR.findall(body):
                assert anchor in anchors, f"{rel} links design.md#{anchor}, no such heading"


def test_the_rulebook_and_the_archive_states_are_the_codes():
    """The rule table of §5 and the state table of §6 list what the code has, no more, no less."""
    rules = re.findall(r"^\| (\d+) \|", _section_text(5), re.MULTILINE)
    assert rules == list(RULES)
    states = re.findall(r"^\| `(\w+)` \|", _section_text(6), re.MULTILINE)
    assert sorted(states) == sorted(get_args(LineState))
