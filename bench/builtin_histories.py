#!/usr/bin/env python3
"""The builtin engine never writes a reply its validator rejects (issue 35), counted over the
generated histories of `tests/generated_histories.py`, for docs/reliability.md.

    python bench/builtin_histories.py [--seeds 100:260] [--write]

Each seed is one multi-day history (habits logged day after day, corrections and switches of
earlier days, daily-note templates linking other days, tags, odd note names, zh and en, every kind
of source and trace format the config accepts), converged day by day through the real pass
(`run_pass`, git, the validator) with the builtin engine; after every pass the layer is checked
(frontmatter parses, every statement cites a note, no memory file named like a note, a date or a
year). The default seeds are the ones `pytest -m slow tests/converge/test_builtin_histories.py`
runs. HOME and the XDG folders point into a temporary folder. `--write` replaces this section of
docs/reliability.md (bench/reliability.py keeps it when it rewrites the file).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent
DOC = PROJECT / "docs" / "reliability.md"
START = "<!-- builtin-histories:start (python bench/builtin_histories.py --write) -->"
END = "<!-- builtin-histories:end -->"

sys.path.insert(0, str(PROJECT / "tests"))
sys.path.insert(0, str(PROJECT / "cli"))

# What a deferral's reason says, by the words it starts with or holds.
_REASONS = [
    ("a sentence too long for a statement", "longer than a statement should be"),
    ("would not read back (HTML, or read as a source or trace)", "would not read back"),
    ("a name no wikilink can hold", "which a wikilink cannot cite"),
    ("a credential", "holds a credential"),
    ("the resident cap", "size cap"),
    ("no cue line the engine can use", "no signal line to keep"),
]


def _isolate(folder: Path) -> None:
    os.environ["HOME"] = str(folder / "home")
    for name, sub in (
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_STATE_HOME", ".local/state"),
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_DATA_HOME", ".local/share"),
    ):
        os.environ[name] = str(folder / "home" / sub)
    for name in ("CMEM_VAULT", "CMEM_LLM", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        os.environ.pop(name, None)
    os.environ.setdefault("GIT_AUTHOR_NAME", "cmem bench")
    os.environ.setdefault("GIT_AUTHOR_EMAIL", "bench@example.com")
    os.environ.setdefault("GIT_COMMITTER_NAME", "cmem bench")
    os.environ.setdefault("GIT_COMMITTER_EMAIL", "bench@example.com")
    os.environ["GIT_CONFIG_NOSYSTEM"] = "1"


def measure(seeds: range) -> dict:
    import generated_histories as histories

    figures: dict = {
        "histories": 0,
        "long": 0,
        "days": 0,
        "writes": 0,
        "statuses": Counter(),
        "failing": [],
        "languages": Counter(),
        "formats": set(),
        "archived": 0,
        "deferred": Counter(),
        "converged": 0,
    }
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="cmem-builtin-histories-") as folder:
        _isolate(Path(folder))
        for seed in seeds:
            history = histories.generate(seed)
            passes: list = []
            problems = histories.converge_history(history, Path(folder) / f"seed-{seed}", passes)
            figures["histories"] += 1
            figures["long"] += len(history.days) >= 15
            figures["days"] += len(history.days)
            figures["writes"] += sum(len(notes) for _, notes in history.days)
            figures["languages"][history.language] += 1
            figures["formats"].add(history.config_yaml.split("\n", 1)[1])
            figures["archived"] += len(history.archive_after)
            for result in passes:
                figures["statuses"][result.status] += 1
                figures["converged"] += len(result.converged)
                for deferred in result.deferred:
                    kind = next(
                        (k for k, words in _REASONS if words in deferred["reason"]), "other"
                    )
                    figures["deferred"][kind] += 1
            if problems:
                figures["failing"].append((seed, problems[0]))
    figures["seconds"] = round(time.monotonic() - started, 1)
    figures["seeds"] = seeds
    return figures


def section(figures: dict) -> str:
    statuses = figures["statuses"]
    passes = sum(statuses.values())
    failing = figures["failing"]
    deferred = ", ".join(f"{kind} {n}" for kind, n in figures["deferred"].most_common()) or "none"
    seeds = figures["seeds"]
    lines = [
        START,
        "## The builtin engine over generated histories",
        "",
        f"Reproduce with `python bench/builtin_histories.py --seeds {seeds.start}:{seeds.stop}` "
        f"({figures['seconds']:.0f} s; `--write` updates this section); the same seeds are "
        "`pytest -m slow tests/converge/test_builtin_histories.py`, and three seeds and one "
        "history per format run by default.",
        "",
        f"{figures['histories']} histories made by a seeded generator (`tests/generated_histories.py`, seeds "
        f"{seeds.start}–{seeds.stop - 1}): {figures['days']} days ({figures['long']} histories of 15 days or more), "
        f"{figures['writes']} note writes — habits logged day after day, corrections and switches of what "
        "earlier days said, a note correcting its own correction, daily-note templates linking the days around "
        "them and the year, tags (`#2026` among them), callouts, tasks, HTML, URLs, brackets, odd but legal "
        "note names (spaces, CJK, emoji, dots, parentheses, apostrophes, `C#`), zh "
        f"{figures['languages']['zh']} and en {figures['languages']['en']} with lines of the other language, "
        f"{len(figures['formats'])} different source and trace format settings (the languages' own, sources "
        "with no closing text, other bracket pairs and separators, and random ones the config accepts), "
        f"with everything staged archived {figures['archived']} times on the way. Each day is a real pass "
        "(`run_pass`, git, the validator); after each the layer is checked.",
        "",
        "| Measure | Result | Target |",
        "| --- | --- | --- |",
        f"| Passes | {passes}: applied {statuses['applied']}, nothing to do {statuses['nothing']}, "
        f"failed {statuses['failed']}, other {passes - statuses['applied'] - statuses['nothing'] - statuses['failed']} | "
        "none failed |",
        f"| Histories with a pass its validator rejected or a layer problem | {len(failing)} of "
        f"{figures['histories']} | 0 |",
        f"| Notes converged | {figures['converged']} | |",
        f"| Notes or lines left for a model, by reason | {deferred} | |",
        "",
        "Failing seeds: "
        + ("; ".join(f"{seed}: {problem[:200]}" for seed, problem in failing) or "none")
        + ".",
        "",
        "Bugs this found in the engine, each fixed at its cause (issue 35): a count's fourth update "
        "dropped the third's trace; a daily note's link to the previous day named a topic file; a source "
        "format with no closing text was not read back, nor were names holding a format's bracket or "
        "traces of a custom format nested; a source added inside `[from [[a]]]` went after the wrong `]]`; "
        "a format reading as an HTML tag (`<was {date}: {old}>`) failed rule 9 (the config now refuses it); a line holding HTML was copied; a statement said "
        "again after the pass rewrote it, or a twin of a rewritten one, lost its sources; a trace of a "
        "flip-flop within one day repeated an older trace's date and words; a correction of the "
        "engine's own line in the same note was added beside it.",
        END,
    ]
    return "\n".join(lines) + "\n"


def splice(text: str, new: str) -> str:
    if START in text and END in text:
        before, rest = text.split(START, 1)
        after = rest.split(END, 1)[1].lstrip("\n")
        return before + new + ("\n" + after if after else "")
    return text.rstrip("\n") + "\n\n" + new


def kept_section(doc: Path = DOC) -> str:
    """The section as the file holds it (bench/reliability.py keeps it: it takes minutes)."""
    text = doc.read_text("utf-8") if doc.exists() else ""
    if START not in text or END not in text:
        return ""
    return START + text.split(START, 1)[1].split(END, 1)[0] + END + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="100:260", help="first:last+1 (default 100:260)")
    parser.add_argument(
        "--write", action="store_true", help=f"update the section in {DOC.relative_to(PROJECT)}"
    )
    args = parser.parse_args()
    first, last = (int(part) for part in args.seeds.split(":"))
    figures = measure(range(first, last))
    new = section(figures)
    if args.write:
        DOC.write_text(splice(DOC.read_text("utf-8"), new), encoding="utf-8")
    print(new, end="")
    return 1 if figures["failing"] or figures["statuses"]["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
