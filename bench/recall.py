#!/usr/bin/env python3
"""Measures of `cmem recall`'s index, written to docs/benchmarks.md between `<!-- recall -->` and
`<!-- /recall -->` (the rest of the file belongs to bench/run.py and is left as it is).

    python bench/recall.py [--sizes 10000,50000] [--workdir /tmp/cmem-recall-bench] [--out docs/benchmarks.md]

- latency on synthetic vaults (bench/gen_vault.py): cold index build, warm query, the update after
  one note is edited — for the archive (70% of the notes) and the convergent layer (20%) — with
  `rg` over the same files as the floor, and the size of each index;
- the labelled query set of tests/recall_labelled.py: precision@1 of the shipped scheme (CJK
  bigrams + single characters pre-tokenised, `porter unicode61`), of FTS5's `trigram` tokenizer
  (with a LIKE fallback for queries under three characters) and of plain `unicode61`;
- `cmem context` tokens against the budget on the same vaults;
- issue 13's line, a warm `cmem recall QUERY` of the convergent layer as a whole process (the
  installed `cmem` command), paired round by round with `python -c pass` and with its floor: a
  script that does what any such recall must (stat each of the scope's memory files, since an edit
  in place must reach the index, then one FTS5 query) with the standard library alone.

Stdlib only (plus cmem itself). Timings are medians; one process, warm page cache after the first
read, 2-core machine — ratios to the floor matter more than the absolute figures.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT / "tests"))
sys.path.insert(0, str(PROJECT / "tests" / "reading"))  # test_recall's vault builders
START, END = "<!-- recall -->", "<!-- /recall -->"
RECALL_QUERY = "cache index"  # issue 13's line: the query its figures were measured with
WARM_QUERIES = [
    "latency",
    "缓存",
    "索引 性能",
    "cache index",
    "收敛",
    "schema migration",
    "部署 脚本",
    "timeout",
]


def timed(fn, *args, **kwargs):
    started = time.perf_counter()
    value = fn(*args, **kwargs)
    return time.perf_counter() - started, value


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 10 else f"{seconds:.1f} s"


def mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


# --- synthetic vaults -----------------------------------------------------------------------


def make_vault(workdir: Path, size: int) -> Path:
    root = workdir / f"vault-{size}"
    if not (root / ".cmem" / "config.yaml").is_file():
        generator = PROJECT / "bench" / "gen_vault.py"
        if not generator.is_file():
            generator = PROJECT.parent / "shared" / "bench" / "gen_vault.py"
        subprocess.run(
            [sys.executable, str(generator), str(root), "-n", str(size), "--seed", "42", "--force"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        (root / ".cmem").mkdir(exist_ok=True)
        (root / ".cmem" / "config.yaml").write_text("", encoding="utf-8")
    return root


def rg_floor(rg: str | None, folders: list[Path], query: str) -> float | None:
    if not rg:
        return None
    pattern = "|".join(re.escape(word) for word in query.split())
    runs = []
    for _ in range(3):
        elapsed, _ = timed(
            subprocess.run,
            [rg, "-c", "--no-messages", "-e", pattern, *map(str, folders)],
            stdout=subprocess.DEVNULL,
        )
        runs.append(elapsed)
    return statistics.median(runs)


def bench_scope(vault, scope: str, rg: str | None) -> dict:
    from cmem.reading.search_index import index_file, index_size, scope_files, search_scope

    files = scope_files(vault, scope)
    folders = (
        [vault.root / vault.config.archive_dir]
        if scope == "archive"
        else [vault.root / d for d in vault.convergent_dirs]
    )
    index = index_file(vault, scope)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    cold, searched = timed(search_scope, vault, scope, "latency", 10)
    rows = searched.sync.rows
    warm = []
    for query in WARM_QUERIES:
        for _ in range(3):
            warm.append(timed(search_scope, vault, scope, query, 10)[0])
    # one edit: a note gains a line with a word found nowhere else
    target = files[len(files) // 2].path
    original = target.read_bytes()
    try:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write("\n- 新词汇 zyxwvutsrq appears once\n")
        incremental, after = timed(search_scope, vault, scope, "zyxwvutsrq", 10)
        found = bool(after.hits) and after.hits[0].path == vault.rel(target)
    finally:
        target.write_bytes(original)
    search_scope(vault, scope, "latency", 10)  # back in step with the file
    floors = [f for f in (rg_floor(rg, folders, q) for q in WARM_QUERIES[:4]) if f is not None]
    read_floor, _ = timed(lambda: sum(len(f.path.read_bytes()) for f in files))
    return {
        "files": len(files),
        "rows": rows,
        "cold": cold,
        "warm": statistics.median(warm),
        "warm_max": max(warm),
        "incremental": incremental,
        "found": found,
        "size": index_size(vault, scope),
        "rg": statistics.median(floors) if floors else None,
        "read": read_floor,
        "bytes": sum(f.path.stat().st_size for f in files),
    }


def bench_process(vault_root: Path, env: dict, query: str) -> float:
    command = [
        sys.executable,
        "-m",
        "cmem",
        "recall",
        query,
        "--archive",
        "--json",
        "--vault",
        str(vault_root),
    ]
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, check=True)
    runs = [
        timed(subprocess.run, command, env=env, stdout=subprocess.DEVNULL, check=True)[0]
        for _ in range(5)
    ]
    return statistics.median(runs)


# What a warm recall cannot skip, as a script: every note it searches stat'ed (their paths read
# from a file, as cmem reads them from its stored key) and one ranked FTS5 query an index.
RECALL_FLOOR = r"""
import os, sqlite3, sys
paths, expression, weights, indexes = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
stat = os.stat
for path in open(paths, encoding="utf-8").read().split("\n"):
    if path:
        stat(path, follow_symlinks=False)
weights = [float(w) for w in weights.split(",")]
marks = ", ".join("?" * len(weights))
for index in indexes:
    db = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    rows = db.execute(
        "SELECT rows.path, rows.text, best.score FROM (SELECT rowid, bm25(entries, " + marks + ") AS score"
        " FROM entries WHERE entries MATCH ? ORDER BY score LIMIT 50) AS best"
        " JOIN rows ON rows.id = best.rowid ORDER BY best.score",
        [*weights, expression],
    ).fetchall()
    sys.stdout.write("\n".join(text for _, text, _ in rows) + "\n")
"""
RECALL_ROUNDS = 15


def bench_recall_line(vault, env: dict, query: str, workdir: Path) -> dict:
    """The warm recall of the whole vault (memory, then notes), the same after `--`, `python -c
    pass` and the floor, in turn each round (one warm-up round dropped); medians of the times and
    of the round-by-round ratios."""
    from cmem.reading.index_query import WEIGHTS, match_expression, query_terms
    from cmem.reading.search_index import NOTES, index_file, scope_files

    launcher = Path(sys.executable).parent / "cmem"
    cmem = [str(launcher)] if launcher.exists() else [sys.executable, "-m", "cmem"]
    recall = [*cmem, "--vault", str(vault.root), "recall", *query.split()]
    dashes = [*cmem, "--vault", str(vault.root), "recall", "--", query]
    subprocess.run(recall, env=env, stdout=subprocess.DEVNULL, check=True)  # index, key stored
    time.sleep(2.2)  # cmem's racy window: a key taken sooner after a change is not stored
    for argv in (recall, dashes):
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
    searched = [f.path for f in vault.convergent_files()] + [
        f.path for f in scope_files(vault, NOTES)
    ]
    paths = workdir / f"recall-floor-paths-{len(searched)}.txt"
    paths.write_text("\n".join(str(path) for path in searched), encoding="utf-8")
    floor = [
        sys.executable,
        "-c",
        RECALL_FLOOR,
        str(paths),
        match_expression(query_terms(query), "OR"),
        ",".join(map(str, WEIGHTS)),  # cmem's own field weights, so the floor ranks as recall does
        str(index_file(vault, "convergent")),
        str(index_file(vault, NOTES)),
    ]
    commands = {
        "recall": recall,
        "dashes": dashes,
        "pass": [sys.executable, "-c", "pass"],
        "floor": floor,
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for round_no in range(RECALL_ROUNDS + 1):
        for name, argv in commands.items():
            seconds = timed(subprocess.run, argv, env=env, stdout=subprocess.DEVNULL, check=True)[0]
            if round_no:
                times[name].append(seconds)
    ratio = lambda a, b: statistics.median(x / y for x, y in zip(times[a], times[b]))
    return {
        "files": len(searched),
        "recall": statistics.median(times["recall"]),
        "dashes": statistics.median(times["dashes"]),
        "pass": statistics.median(times["pass"]),
        "floor": statistics.median(times["floor"]),
        "recall/pass": ratio("recall", "pass"),
        "dashes/pass": ratio("dashes", "pass"),
        "floor/pass": ratio("floor", "pass"),
        "recall/floor": ratio("recall", "floor"),
    }


def bench_context(vault) -> list[tuple[int, str, int, int, int]]:
    from cmem.reading.context import build_context

    out = []
    topics = (None, "缓存 latency") if len(vault.convergent_files()) > 20 else (None, "令牌桶 限流")
    budgets = (4000, 12000, 50000) if len(vault.convergent_files()) > 20 else (1700, 2500, 4000)
    for budget in budgets:
        for topic in topics:
            context = build_context(vault, topic=topic, budget=budget, record=False)
            out.append(
                (
                    budget,
                    topic or "—",
                    context.tokens,
                    len(context.situational),
                    len(context.excerpts),
                )
            )
    return out


# --- tokenizer schemes on the labelled set --------------------------------------------------


def labelled_vault(workdir: Path) -> Path:
    from recall_labelled import EXTRA_FILES

    root = workdir / "labelled"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(PROJECT / "sample-vault", root)
    for rel, text in EXTRA_FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def scheme_precision(vault) -> dict[str, dict]:
    from cmem.reading.recall import recall_memory
    from cmem.reading.search_index import note_rows
    from cmem.text.scripts import CJK_RUN as _CJK_RUN
    from cmem.text.words import word_runs
    from recall_labelled import QUERIES, is_right

    rows = [row for f in vault.convergent_files() for row in note_rows(vault, f, "convergent")[0]]
    from cmem.reading.search_index import display_text

    rows = [row.__class__(**{**row.__dict__, "text": display_text(row.text)}) for row in rows]
    two_char = [q for q in QUERIES if len(q[0]) == 2 and _CJK_RUN.fullmatch(q[0])]
    results: dict[str, dict] = {}

    def score(name: str, first_of) -> None:
        right = [
            q for q in QUERIES if (hit := first_of(q[0])) and is_right(hit[0], hit[1], q[1], q[2])
        ]
        found2 = [q for q in two_char if first_of(q[0])]
        right2 = [q for q in two_char if q in right]
        results[name] = {
            "p1": len(right) / len(QUERIES),
            "two_found": len(found2),
            "two_right": len(right2),
            "two": len(two_char),
        }

    def shipped(query):
        hits = recall_memory(vault, query, record=False, limit=1).results
        return (hits[0].hit.path, hits[0].hit.text) if hits else None

    score("CJK bigrams + characters, porter unicode61 (shipped)", shipped)

    for name, tokenizer in (
        ("FTS5 trigram (+ an unranked scan for 1–2 characters)", "trigram"),
        ("plain unicode61", "unicode61"),
    ):
        db = sqlite3.connect(":memory:")
        db.execute(
            f"CREATE VIRTUAL TABLE t USING fts5(path UNINDEXED, text, place, tokenize='{tokenizer}')"
        )
        db.executemany(
            "INSERT INTO t VALUES (?, ?, ?)",
            [(r.path, r.text, f"{Path(r.path).stem} {r.heading}") for r in rows],
        )

        def first(query, db=db, tokenizer=tokenizer):
            words = [w for w in re.split(r"\s+", query.strip().lower()) if w]
            if tokenizer == "unicode61":
                words = word_runs(query.lower())
            long_words = [w for w in words if tokenizer != "trigram" or len(w) >= 3]
            if long_words:
                for operator in (" AND ", " OR "):
                    expression = operator.join('"' + w.replace('"', '""') + '"' for w in long_words)
                    row = db.execute(
                        "SELECT path, text FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 1",
                        (expression,),
                    ).fetchone()
                    if row:
                        return row
                return None
            if (
                tokenizer == "trigram" and words
            ):  # a scan: found or not, no ranking (LIKE on the trigram
                # table itself returns nothing for a pattern under three characters in SQLite 3.40)
                return db.execute(
                    "SELECT path, text FROM t WHERE instr(text, ?) > 0 LIMIT 1", (words[0],)
                ).fetchone()
            return None

        score(name, first)
    return results


# --- report ---------------------------------------------------------------------------------


def render(sizes, scopes, processes, contexts, schemes, rg, lines=None) -> str:
    out = [START, "## Recall: the full-text index (`bench/recall.py`)", ""]
    out += [
        "The index is SQLite FTS5 in the state folder, one row per statement; warm calls stat every file",
        "of the scope (the manifest) before querying, so an edit is seen on the next call. Floors: `rg -c`",
        "over the same folder for the same words (a whole process), and reading the same bytes in Python.",
        "",
        "| vault | scope | files | statements | bytes | cold build | read floor | warm query (median / max) | rg floor | warm ÷ rg | after one edit | found | index size |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | :---: | ---: |",
    ]
    for (size, scope), m in scopes.items():
        ratio = f"{m['warm'] / m['rg']:.2f}" if m["rg"] else "—"
        out.append(
            f"| {size // 1000}k | {scope} | {m['files']} | {m['rows']} | {mb(m['bytes'])} | {ms(m['cold'])} | {ms(m['read'])} | "
            f"{ms(m['warm'])} / {ms(m['warm_max'])} | {ms(m['rg']) if m['rg'] else '—'} | {ratio} | {ms(m['incremental'])} | "
            f"{'yes' if m['found'] else 'NO'} | {mb(m['size'])} |"
        )
    if processes:
        out += [
            "",
            "A whole `cmem recall QUERY --archive --json` process (start-up included), warm: "
            + ", ".join(f"{size // 1000}k {ms(t)}" for size, t in processes.items())
            + ".",
        ]
    if lines:
        out += [
            "",
            f"Issue 13's line, for the whole vault since issue 44: a warm `cmem recall {RECALL_QUERY}`"
            " (memory, then every note outside the archive) and the same as"
            f' `cmem recall -- "{RECALL_QUERY}"`, whole processes (the installed `cmem`), paired in'
            f" {RECALL_ROUNDS} rounds with `python -c pass` and with its floor — a script that only"
            " stats the notes searched (an edit in place must reach the index) and runs one ranked"
            " FTS5 query on each of the two indexes (target ≤ 4× `python -c pass` at 50k):",
            "",
            "| vault | notes searched | recall | recall -- | `python -c pass` | floor | recall ÷ pass | recall -- ÷ pass | floor ÷ pass | recall ÷ floor |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for size, m in lines.items():
            out.append(
                f"| {size // 1000}k | {m['files']} | {ms(m['recall'])} | {ms(m['dashes'])} | {ms(m['pass'])} | {ms(m['floor'])} | "
                f"{m['recall/pass']:.2f}× | {m['dashes/pass']:.2f}× | {m['floor/pass']:.2f}× | {m['recall/floor']:.2f}× |"
            )
        out += ["", *recall_verdicts(lines)]
    out += [
        "",
        "Warm queries: " + ", ".join(f"`{q}`" for q in WARM_QUERIES) + " (three runs each).",
        "",
    ]
    out += [
        "A warm call is a stat of every file of the scope (when no folder changed, the manifest's paths",
        "stand for the listing) plus one BM25 query; `rg` must read every byte, so the index wins as the",
        "vault grows, and an edit costs one file's re-index. The cold build (about 0.85 ms a note: read,",
        "split into statements, tokenise, insert) runs once; the index is about 3.5× the text it covers",
        "(contentless FTS5 with positions; a content table with `detail=column` was 6× and slower to rank).",
        "The synthetic vaults' vocabulary is tiny, so every query word matches a large share of the rows —",
        "a worst case for BM25's cost; a real vault's rarer words rank faster.",
        "",
    ]
    out += [
        "### Chinese: which tokenizer",
        "",
        "The labelled set of `tests/recall_labelled.py` (sample vault + four topic files, "
        f"{len(__import__('recall_labelled').QUERIES)} queries, zh and en), precision@1, and the queries that are exactly two Chinese characters:",
        "",
        "| scheme | precision@1 | two-character queries found | … ranked right first |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, m in schemes.items():
        out.append(
            f"| {name} | {m['p1']:.3f} | {m['two_found']}/{m['two']} | {m['two_right']}/{m['two']} |"
        )
    out += [
        "",
        "`trigram` cannot match a term under three characters, and most Chinese words are two (in SQLite",
        "3.40 even `LIKE '%房租%'` on the trigram table returns nothing). Such a query needs a scan of every",
        "row (`instr`) with no ranking — on this small set the first row holding the word happened to be the",
        "right one; on a large vault it is the first of thousands — and in a mixed query (`Tailwind 样式`)",
        "the two-character word is dropped from the ranked match. Plain `unicode61` makes a whole CJK run one",
        "token, so a word inside a sentence is never found. The shipped scheme indexes CJK runs as characters",
        "plus bigrams and queries them as bigrams: a two-character word is one exact token with its own BM25",
        "weight, in the same ranked query as the English words.",
        "",
    ]
    out += [
        "### `cmem context` tokens against the budget",
        "",
        "| vault | budget | topic | tokens | topic files in full | excerpts |",
        "| --- | ---: | --- | ---: | ---: | ---: |",
    ]
    for size, rows in contexts.items():
        for budget, topic, tokens, files, excerpts in rows:
            out.append(f"| {size} | {budget} | {topic} | {tokens} | {files} | {excerpts} |")
    out += [
        "",
        "The resident files, the index of every topic file and the pending notes are always included. On",
        "the sample vault (plus a 300-statement topic file) the bundle stays within each budget and fills the",
        "space a left-out file would need with its statements that match the topic. The synthetic vaults have",
        "5% of their notes in the resident layer and 10% pending — hundreds of thousands of tokens that are",
        "always included — so there the bundle is over any budget: the fixed part, not the topic files, is",
        "what a real vault must keep small (`resident_max_tokens`, converging pending notes).",
        "",
    ]
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    out += [
        f"Run: {time.strftime('%Y-%m-%d %H:%M')}, Python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}, rg: {Path(rg).name if rg else 'not found'},",
        f"{os.cpu_count()} cores, load average at the end {load} (other work on the machine inflates every figure, floors included).",
        END,
    ]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,50000")
    parser.add_argument("--workdir", default=str(Path(tempfile.gettempdir()) / "cmem-recall-bench"))
    parser.add_argument("--out", default=str(PROJECT / "docs" / "benchmarks.md"))
    parser.add_argument("--rg", default=None)
    args = parser.parse_args()
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    state = workdir / "state"
    os.environ["XDG_STATE_HOME"] = str(state)
    rg = (
        args.rg
        or shutil.which("rg")
        or (
            str(Path(sys.executable).parent / "rg")
            if (Path(sys.executable).parent / "rg").exists()
            else None
        )
    )

    from cmem.vault.layers import open_vault

    labelled = open_vault(labelled_vault(workdir))
    schemes = scheme_precision(labelled)
    for name, m in schemes.items():
        print(
            f"{name}: precision@1 {m['p1']:.3f}, two-character {m['two_found']}/{m['two']} found, {m['two_right']} right",
            flush=True,
        )
    scopes, processes, contexts, lines = {}, {}, {}, {}
    from test_recall import _big_topic

    (labelled.root / "converged/topics/questions.md").write_text(_big_topic(300), encoding="utf-8")
    contexts["sample + 5 topic files"] = bench_context(labelled)
    env = dict(os.environ, NO_COLOR="1")
    # whole processes run as an installed cmem does, with its bytecode written and kept
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for size in [int(s) for s in args.sizes.split(",") if s]:
        root = make_vault(workdir, size)
        vault = open_vault(root)
        for scope in ("archive", "convergent"):
            scopes[(size, scope)] = measured = bench_scope(vault, scope, rg)
            print(
                size,
                scope,
                {k: (round(v, 4) if isinstance(v, float) else v) for k, v in measured.items()},
                flush=True,
            )
        processes[size] = bench_process(root, env, "缓存 latency")
        lines[size] = bench_recall_line(vault, env, RECALL_QUERY, workdir)
        print(size, "recall line", {k: round(v, 4) for k, v in lines[size].items()}, flush=True)
        contexts[f"{size // 1000}k"] = bench_context(vault)
    section = render(args.sizes, scopes, processes, contexts, schemes, rg, lines)
    from report_section import write_section  # beside this script, which runs as one

    write_section(Path(args.out), section, START, END)
    print(section)


RECALL_TARGET = 4.0  # issue 13: a warm recall at 50k ≤ 4× `python -c pass`


def recall_verdicts(lines: dict) -> list[str]:
    """The line at 50k met or missed, and, when missed, whether its floor alone passes it."""
    m = lines.get(50_000)
    if not m:
        return []
    if m["recall/pass"] <= RECALL_TARGET:
        return [f"At 50k the line is met: {m['recall/pass']:.2f}× `python -c pass`."]
    if m["floor/pass"] > RECALL_TARGET:
        return [
            f"At 50k the line is missed: {m['recall/pass']:.2f}× `python -c pass`; its floor alone"
            f" (a stat of each of the {m['files']} notes searched and a ranked query an index) is"
            f" {m['floor/pass']:.2f}×, over the line before recall does anything of its own."
            " Meeting it needs a floor that stats fewer files (folders checked by their mtimes,"
            " an edit made in place shown late), which recall does not allow."
        ]
    return [
        f"At 50k the line is missed: {m['recall/pass']:.2f}× `python -c pass`; its floor is"
        f" {m['floor/pass']:.2f}×, so the rest is recall's own work."
    ]


if __name__ == "__main__":
    main()
