#!/usr/bin/env python3
"""The hand-written reply corpus by validator rule (issue 11), for docs/reliability.md.

    python bench/hostile_by_rule.py [--out docs/reliability.md] [--print]

Runs every reply in tests/replies/ through the validator alone, against the vault
`tests/converge/test_validate.py` builds (`build_reply_vault`), and counts per rule: hostile replies,
replies rejected, replies rejected *for that rule* (the expected error, on the expected file);
then the valid corpus (hand-written and the 200 generated replies): false rejections, and how
often a faithful statement — including a translation between Chinese and English — is warned as
a possible invention. Takes a few seconds; it rewrites only the section between its markers in
docs/reliability.md (`bench/reliability.py --hostile-by-rule` does the same).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent
TESTS = PROJECT / "tests"
START, END = "<!-- hostile-by-rule:start -->", "<!-- hostile-by-rule:end -->"

RULES = {
    "1": "paths outside the convergent layer (absolute, `..`, links, look-alikes of `/` and `.`, not `.md`)",
    "2": "frontmatter that does not parse or lost a key",
    "3": "a new statement without a source, or a source that resolves to nothing",
    "4": "a statement gone without a trace keeping its words, a merge, a move or `<dropped>` (incl. changed numbers, signs, `?`)",
    "5": "a new trace dated neither by a note it cites nor the pass date, or after the pass",
    "6": "the resident layer over `resident_max_tokens`",
    "7": "`<converged>`/`<deferred>` naming a note not in the pass, an unusable target, or a converged note no statement cites",
    "8": "more than a quarter of a file of four or more statements dropped or blanked",
    "9": "an added line that is not a statement, blank or short plain heading; frontmatter keys; YAML anchors",
    "10": "moves out of the resident layer; more than a quarter of the memory layer lost",
    "11": "a source that is a memory file, not a note",
    "12": "a new path not NFC, a look-alike of a memory file, or named like a note",
    "13": "a topic file over `situational_max_tokens`, a reply over the size or file-block limit",
    "14": "replies that cannot be read (truncated, malformed, duplicated)",
    "15": "NUL, control characters, elisions, brackets nested too deep, replacement characters",
}

# Faithful statements in the other language than the note they cite: a translation is not an
# invention. (note text, statement) — the statement is what a good model writes.
TRANSLATIONS = [
    (
        "以后都用 uv 管理 Python 环境，不要再用 pip。",
        "- Uses uv for Python environments instead of pip (source: [[n]])",
    ),
    (
        "其实不是北京，我决定改找深圳的 AI Agent 实习。",
        "- Looking for an AI Agent internship in Shenzhen, not Beijing (source: [[n]])",
    ),
    (
        "我决定以后都用 Svelte 写前端，不再用 React。",
        "- Writes frontends in Svelte now, no longer React (source: [[n]])",
    ),
    (
        "每次开会前都先写好议程，这是老习惯了。",
        "- Always writes an agenda before each meeting (source: [[n]])",
    ),
    (
        "早上效率最高，下午容易分心。",
        "- Most productive in the morning, easily distracted in the afternoon (source: [[n]])",
    ),
    ("推他动手而非给鼓励。", "- Push him to act rather than encourage him (source: [[n]])"),
    (
        "简历投了三家公司：字节、腾讯和阿里。",
        "- Sent the CV to 3 companies: ByteDance, Tencent and Alibaba (source: [[n]])",
    ),
    (
        "我喜欢用 Python 写脚本，不喜欢用 Bash。",
        "- Prefers Python over Bash for scripts (source: [[n]])",
    ),
    (
        "I switched from Flask to FastAPI for side projects.",
        "- 业余项目从 Flask 换成了 FastAPI（来源：[[n]]）",
    ),
    ("I prefer tea over coffee in the afternoon.", "- 下午喜欢喝茶而不是咖啡（来源：[[n]]）"),
    (
        "From now on, always run the tests before pushing to GitHub.",
        "- 推送到 GitHub 之前总是先跑测试（来源：[[n]]）",
    ),
    (
        "I decided to move my notes from Notion to Obsidian.",
        "- 决定把笔记从 Notion 搬到 Obsidian（来源：[[n]]）",
    ),
    (
        "My budget for the new laptop is 1500 euros.",
        "- 新笔记本电脑的预算是 1500 欧元（来源：[[n]]）",
    ),
    (
        "I run three times a week, usually in the evening.",
        "- 每周跑步三次，通常在晚上（来源：[[n]]）",
    ),
]


def measure() -> dict:
    sys.path.insert(0, str(TESTS))
    sys.path.insert(0, str(TESTS / "converge"))  # test_validate's reply vault and corpus table
    import test_validate as tv

    import reply_variants as rv
    from cmem.converge.validator.response import parse_response
    from cmem.converge.validator.validate import PassContext, validate_response
    from cmem.vault.config import load_config
    from cmem.vault.layers import Vault

    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="cmem-hostile-by-rule-"))
    vault, ctx = tv.build_reply_vault(work / "vault", work / "outside")

    def check(text: str):
        return validate_response(
            vault, parse_response(text.replace("{PASS_DATE}", tv.PASS_DATE)), ctx
        )

    by_rule: dict[str, Counter] = {}
    missed = []
    for name, (rule, file, fragment) in sorted(tv.HOSTILE.items()):
        result = check((tv.REPLIES / "hostile" / name).read_bytes().decode("utf-8"))
        counts = by_rule.setdefault(rule, Counter())
        counts["replies"] += 1
        counts["rejected"] += not result.ok and not result.writes
        hit = any(
            i.rule == rule and i.file == file and fragment in i.message for i in result.errors
        )
        counts["for_rule"] += hit
        if not hit:
            missed.append(name)
    valid_hand = [
        check((tv.REPLIES / "valid" / name).read_bytes().decode("utf-8"))
        for name in sorted(tv.VALID)
    ]
    corpus_root = rv.build_corpus_vault(work / "corpus", work / "corpus-outside", git=False)
    from cmem.vault.layers import open_vault

    corpus_vault = open_vault(corpus_root)
    corpus_ctx = rv.corpus_context(corpus_vault)
    generated = [
        validate_response(corpus_vault, parse_response(v.text), corpus_ctx)
        for v in rv.valid_variants()
    ]
    new_statements = warned = 0
    for variant, result in zip(rv.valid_variants(), generated):
        if not result.ok:
            continue
        for path, text in variant.files.items():
            base = (
                rv.PROFILE_TEXT if path == rv.PROFILE else rv.JOBS_TEXT if path == rv.JOBS else ""
            )
            new_statements += sum(
                1 for line in text.splitlines() if line.startswith("- ") and line not in base
            )
        warned += len(result.inventions)
    # translations, each in its own one-note vault
    translated_warned = 0
    for index, (note, statement) in enumerate(TRANSLATIONS):
        root = work / f"translation-{index}"
        (root / ".cmem").mkdir(parents=True)
        (root / ".cmem" / "config.yaml").write_text("", encoding="utf-8")
        (root / "converged/core").mkdir(parents=True)
        (root / "n.md").write_text(note + "\n", encoding="utf-8")
        one = Vault(root=root, config=load_config(root))
        one_ctx = PassContext(
            tv.PASS_DATE, ["n.md"], {}, one.note_names(), source_texts={"n": note}
        )
        text = f'<convergence>\n<file path="converged/core/profile.md">\n{statement}\n</file>\n<converged note="n.md" into="converged/core/profile.md"/>\n</convergence>\n'
        result = validate_response(one, parse_response(text), one_ctx)
        assert result.ok, (statement, [str(e) for e in result.errors])
        translated_warned += bool(result.inventions)
    return {
        "by_rule": by_rule,
        "missed": missed,
        "valid_hand": (len(valid_hand), sum(not r.ok for r in valid_hand)),
        "valid_generated": (len(generated), sum(not r.ok for r in generated)),
        "invention": (new_statements, warned),
        "translations": (len(TRANSLATIONS), translated_warned),
        "seconds": round(time.monotonic() - started, 1),
    }


def render(f: dict) -> str:
    total = sum(c["replies"] for c in f["by_rule"].values())
    rejected = sum(c["rejected"] for c in f["by_rule"].values())
    for_rule = sum(c["for_rule"] for c in f["by_rule"].values())
    order = sorted(f["by_rule"], key=lambda r: (not r.isdigit(), int(r) if r.isdigit() else 0, r))
    lines = [
        START,
        "## The hand-written hostile corpus, by rule",
        "",
        f"Every reply in `tests/replies/hostile/` ({total}) through the validator alone, against the vault "
        "`tests/converge/test_validate.py` builds; each must be rejected and must trip the rule `HOSTILE` names, on the file it names. "
        f"Reproduce with `python bench/hostile_by_rule.py` ({f['seconds']} s; it rewrites only this section).",
        "",
        "| Rule | What it refuses | Replies | Rejected | For this rule |",
        "| --- | --- | --- | --- | --- |",
    ]
    for rule in order:
        c = f["by_rule"][rule]
        lines.append(
            f"| {rule} | {RULES.get(rule, '')} | {c['replies']} | {c['rejected']} | {c['for_rule']} |"
        )
    lines.append(f"| all | | {total} | {rejected} | {for_rule} |")
    hand, hand_bad = f["valid_hand"]
    gen, gen_bad = f["valid_generated"]
    new, warned = f["invention"]
    tr, tr_warned = f["translations"]
    lines += [
        "",
        f"Valid replies: {hand} hand-written, {hand_bad} falsely rejected; {gen} generated (`tests/reply_variants.py`), "
        f"{gen_bad} falsely rejected ({gen_bad / gen:.1%}; target ≤ 1%).",
        f"Possible-invention warnings on faithful statements: {warned} of {new} new statements in the generated valid replies "
        f"({(warned / new if new else 0):.1%}); {tr_warned} of {tr} translations between Chinese and English "
        f"({tr_warned / tr:.0%}; across scripts a statement is judged on the names and numbers one side offers, not on a 30% word overlap).",
    ]
    if f["missed"]:
        lines.append(f"Not rejected for their rule: {', '.join(f['missed'])}.")
    lines.append(END)
    return "\n".join(lines) + "\n"


def splice(document: str, section: str) -> str:
    """The document with its marked section replaced (or appended when it has none)."""
    if START in document and END in document:
        head, rest = document.split(START, 1)
        tail = rest.split(END, 1)[1].lstrip("\n")
        return head + section + ("\n" + tail if tail else "")
    return document.rstrip("\n") + "\n\n" + section


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=PROJECT / "docs" / "reliability.md")
    parser.add_argument(
        "--print", action="store_true", help="Print the section instead of writing it."
    )
    args = parser.parse_args(argv)
    figures = measure()
    section = render(figures)
    if args.print:
        print(section)
    else:
        current = args.out.read_text("utf-8") if args.out.exists() else "# Reliability figures\n"
        args.out.write_text(splice(current, section), encoding="utf-8")
        print(section)
    by_rule = figures["by_rule"].values()
    ok = not figures["missed"] and all(c["rejected"] == c["replies"] for c in by_rule)
    ok = (
        ok
        and figures["valid_hand"][1] == 0
        and figures["valid_generated"][1] <= figures["valid_generated"][0] // 100
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
