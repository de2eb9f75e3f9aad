"""The topic files a prompt quotes whole (`prompt.touched_situational`) are chosen from words kept
in the machine folder (each text's words, each file name's words): the choice is
the one the words made afresh give, with the memo cold, warm, and after files are edited."""

from __future__ import annotations

import random

from builtin_helpers import note_with
from cmem.converge import prompt
from cmem.converge.builtin.line_words import name_key, terms
from cmem.vault.layers import open_vault

WORDS = (
    "pip uv poetry react svelte vue berlin munich tea coffee vim helix emacs python rust "
    "部署 测试 基准 收敛 笔记 缓存 索引"
).split()


def reference(vault, notes, originals, limit):
    """The choice as it was made before anything was kept: every word made again."""
    base = vault.config.situational_dir + "/"
    paths = sorted(p for p in originals if p.startswith(base))
    costs = {p: prompt.estimate_tokens(originals[p]) for p in paths}
    named = {name_key(n) for note in notes for n in note.tags + note.links}
    wanted = set()
    for note in notes:
        for signal in note.signals:
            wanted |= terms(note.lines[signal.line - 1])
        wanted |= {t for n in note.tags + note.links for t in terms(n.replace("-", " "))}
    scored = []
    for path in paths:
        text = originals[path]
        stem = path[len(base) : -3].rsplit("/", 1)[-1]
        aliases = prompt._aliases(text)
        if name_key(stem) in named or {name_key(a) for a in aliases} & named:
            scored.append((-1000.0, path))
            continue
        head = terms(" ".join(aliases)) | terms(prompt._summary(text))
        words = terms(stem.replace("-", " ").replace("_", " ")) | head
        score = 3 * len(wanted & words) + len(wanted & terms(text))
        if score:
            scored.append((-float(score), path))
    chosen, used = [], 0
    for _, path in sorted(scored):
        if chosen and used + costs[path] > limit:
            continue
        chosen.append(path)
        used += costs[path]
    return sorted(chosen)


def topic(rng) -> str:
    tags = ", ".join(rng.sample(WORDS, rng.randint(0, 2)))
    lines = [
        f"- {' '.join(rng.sample(WORDS, rng.randint(1, 4)))}" for _ in range(rng.randint(1, 6))
    ]
    return (
        f"---\nsummary: {rng.choice(WORDS)}\ntags: [{tags}]\n---\n# T\n\n" + "\n".join(lines) + "\n"
    )


def test_the_kept_words_choose_what_fresh_words_choose(make_vault):
    rng = random.Random(13)
    files = {f"converged/topics/{rng.choice(WORDS)}-{n}.md": topic(rng) for n in range(40)}
    root = make_vault({**files, "n.md": "- x\n"}, config_yaml="language: en\n")
    vault = open_vault(root)
    vault.machine_dir.mkdir(parents=True, exist_ok=True)
    checked = 0
    for round_ in range(30):
        if round_ % 10 == 9:  # some files edited: their kept words no longer answer
            for path in rng.sample(sorted(files), 5):
                (root / path).write_text(topic(rng), "utf-8")
        originals = {p: (root / p).read_text("utf-8") for p in files}
        line = " ".join(rng.sample(WORDS, rng.randint(1, 4)))
        (root / "n.md").write_text(f"- {line}\n", "utf-8")
        tags = rng.sample(WORDS, rng.randint(0, 1))
        note = note_with(root, "n.md", [(1, "decision")], tags=tags)
        limit = rng.choice([30, 80, 200])
        expected = reference(vault, [note], originals, limit)
        for _ in range(2):  # the memo as this round found it, then as it left it
            assert prompt.touched_situational(vault, [note], originals, limit) == expected, line
        checked += 0 < len(expected) < len(files)
    assert checked > 10  # the budget chose between files: the comparison meant something


def test_a_topic_file_is_named_by_aliases_and_summary_in_any_yaml_form(make_vault):
    """Aliases as a block list, a folded summary: read as every note's frontmatter is, so a note
    tagged with an alias quotes the file; a `summary:` line in the body is not the summary."""
    files = {
        "converged/topics/editors.md": "---\nsummary: >-\n  The editor\n  I use\naliases:\n"
        "  - Helix Setup\ntags:\n  - tools\n---\n# Editors\n\n- helix with its defaults\n",
        "converged/topics/drinks.md": "---\ntags: [tea]\n---\n# Drinks\n\nsummary: not this\n"
        + "- green tea in the morning\n" * 20,
    }
    root = make_vault({**files, "n.md": "- a line\n"}, config_yaml="language: en\n")
    vault = open_vault(root)
    vault.machine_dir.mkdir(parents=True, exist_ok=True)
    originals = {p: (root / p).read_text("utf-8") for p in files}
    editors, drinks = (originals[p] for p in sorted(files, reverse=True))
    assert prompt._aliases(editors) == ["Helix Setup", "tools"]
    assert (prompt._summary(editors), prompt._summary(drinks)) == ("The editor I use", "")
    note = note_with(root, "n.md", [(1, "decision")], tags=["helix-setup"])
    limit = prompt.estimate_tokens(editors)  # not both: the choice is by the names
    assert prompt.touched_situational(vault, [note], originals, limit) == [
        "converged/topics/editors.md"
    ]
