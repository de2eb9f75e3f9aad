"""Notes that are not the user's own words (issue 44): a web clip or a pasted article, a template.
What such a note says is someone else's, so a statement taken from it says so in its source
(`(source: quoted from [[Designing APIs]])`, rule 16) — one pass put an article's sentences
into a resident profile as if the user had said them.

Told from the note alone, in this order:
- frontmatter `quoted: true` / `quoted: false`: the user's word, either way;
- a note in a templates folder (Obsidian's settings, or a folder named `Templates`);
- frontmatter naming where it came from with a link: `source:`, `url:`, `source_url:`,
  `original_url:`, `link:` holding `http(s)://…` (Obsidian Web Clipper, MarkDownload, Omnivore);
- a clipper's tag: `clippings` (Web Clipper's default), `clipping`, `clipped`, `webclip`,
  `web-clip`, `readwise`, `omnivore`.
A note the user wrote with a `source:` of their own (a book, a talk) reads as quoted: say
`quoted: false` in it. Text pasted into a note of the user's own cannot be told apart here; the
prompt asks the model to cite it as quoted all the same."""

from __future__ import annotations

import re

URL_KEYS = ("source", "url", "source_url", "original_url", "link")
CLIPPER_TAGS = frozenset(
    {"clippings", "clipping", "clipped", "webclip", "web-clip", "readwise", "omnivore"}
)
_URL = re.compile(r"^\s*https?://\S+", re.IGNORECASE)

# the words that mark a source as quoted, per note language (`format_source(quoted=True)`)
QUOTED_MARKS = {"en": "quoted from", "zh": "摘自"}


def quoted_reason(rel: str, frontmatter: dict, tags: list[str], templates: list[str]) -> str:
    """Why the note at `rel` is not the user's own words, or "" when it is (as far as can be told)."""
    from cmem.vault.obsidian import is_template_folder

    said = frontmatter.get("quoted")
    if isinstance(said, bool):
        return "marked `quoted: true`" if said else ""
    folder = rel.rpartition("/")[0]
    if folder and is_template_folder(folder, templates):
        return f"a template (in {folder}/)"
    for key in URL_KEYS:
        value = frontmatter.get(key)
        if isinstance(value, str) and _URL.match(value):
            return f"a web clip ({key}: {value.strip()})"
    clipped = sorted(CLIPPER_TAGS & {tag.lower() for tag in tags})
    if clipped:
        return f"a clipping (#{clipped[0]})"
    return ""


def marked_quoted(line: str, name: str) -> bool:
    """Whether a statement's source marks the note `name` as quoted: `quoted from [[name…`."""
    marks = "|".join(re.escape(mark) for mark in QUOTED_MARKS.values())
    return re.search(rf"(?:{marks})\s*\[\[{re.escape(name)}[\]|#]", line, re.IGNORECASE) is not None
