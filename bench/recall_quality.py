#!/usr/bin/env python3
"""How well `cmem recall` finds what a person asks for, beside plain BM25 over the same lines,
written to docs/benchmarks.md between `<!-- recall-quality -->` and `<!-- /recall-quality -->`.

    python bench/recall_quality.py [--conversations 6] [--sessions 18] [--seed 7] [--out docs/benchmarks.md]

Two sets, both generated here, deterministic with the seed:

- **An adopted vault**: laid out like an Obsidian PARA vault (numbered top folders, nested
  project and resource folders, daily notes under `Journal/Daily/YYYY/MM/`, a templates folder
  named by `.obsidian/templates.json`, callouts), filler notes that share the facts' words, and
  planted facts, each with a query written in other words than the fact. Top-1 and top-3: the
  planted note among the first hits. Template hits are counted (recall must give none).
- **Long multi-session dialogues**: two speakers a conversation, one note a session (`Name: line`),
  small talk between the facts. A fact is said outright, or said in a reply to the other speaker's
  question; each question of the set asks for one fact in the words a person would use — for a
  reply, the asker's words, not the reply's. R@1/5/10: an evidence line among the first k lines.

Plain BM25 is Okapi BM25 (k1 1.2, b 0.75) over the same lines, lower-case words, no stemming, no
stop words, each line its own document (no titles, headings or neighbours). cmem is `recall` as a
person runs it (`reading/recall.py: recall_memory`, the default scope, ten results), on vaults
made in a temporary folder. Stdlib only (plus cmem itself).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
START, END = "<!-- recall-quality -->", "<!-- /recall-quality -->"
WORD = re.compile(r"[^\W_]+")

# --- plain BM25 ---------------------------------------------------------------------------------


class PlainBM25:
    """Okapi BM25 over lines: the baseline every lexical retriever is measured against."""

    def __init__(self, docs: list[str], k1: float = 1.2, b: float = 0.75):
        self.tokens = [WORD.findall(doc.lower()) for doc in docs]
        self.k1, self.b = k1, b
        self.avgdl = sum(map(len, self.tokens)) / max(1, len(self.tokens))
        frequency: Counter = Counter()
        for tokens in self.tokens:
            frequency.update(set(tokens))
        n = len(self.tokens)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in frequency.items()}
        self.counts = [Counter(tokens) for tokens in self.tokens]

    def top(self, query: str, k: int) -> list[int]:
        terms = set(WORD.findall(query.lower()))
        scored = []
        for i, (counts, tokens) in enumerate(zip(self.counts, self.tokens)):
            score = 0.0
            for term in terms:
                tf = counts.get(term)
                if tf:
                    norm = self.k1 * (1 - self.b + self.b * len(tokens) / self.avgdl)
                    score += self.idf[term] * tf * (self.k1 + 1) / (tf + norm)
            if score:
                scored.append((-score, i))
        return [i for _, i in sorted(scored)[:k]]


# --- a vault on disk, searched as a person does -------------------------------------------------


def write_vault(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / ".cmem").mkdir(exist_ok=True)
    (root / ".cmem" / "config.yaml").write_text("language: en\n", encoding="utf-8")


def cmem_top(vault, query: str, k: int = 10) -> list[tuple[str, int]]:
    from cmem.reading.recall import recall_memory

    results = recall_memory(vault, query, limit=k, record=False).results
    return [(r.hit.path, r.hit.line) for r in results]


def note_lines(files: dict[str, str]) -> list[tuple[str, int, str]]:
    """(path, line, text) of every non-blank line of the notes: what plain BM25 searches."""
    out = []
    for rel, text in sorted(files.items()):
        if not rel.endswith(".md") or rel.startswith(".") or "/." in rel:
            continue
        for number, line in enumerate(text.split("\n"), 1):
            if line.strip() and line.strip() != "---":
                out.append((rel, number, line))
    return out


# --- (a) an adopted PARA vault ------------------------------------------------------------------

# (path, text, query in other words): the fact each query must find; a text of "" is an empty note
PLANTED = [
    (
        "03 - RESOURCES/Tech/Docker/Docker housekeeping.md",
        "# Docker housekeeping\n\n## Dangling volumes\n\n```bash\ndocker volume prune -f\n```\n",
        "docker cleanup orphaned volumes",
    ),
    ("03 - RESOURCES/Tech/Git/Git-Crypt.md", "", "git-crypt"),
    (
        "03 - AREAS/Journal/Daily/2024/03/2024-03-12.md",
        "# 2024-03-12\n\n> [!tip] Dentist\n> The dentist moved my check-up to Thursday at 3pm.\n",
        "when is my dental appointment",
    ),
    (
        "02 - AREAS/Finance/Rent.md",
        "# Rent\n\n- Landlord is Mrs. Okafor; rent is 1,450 EUR due on the 3rd.\n",
        "how much do I pay the landlord",
    ),
    (
        "01 - PROJECTS/Home server/Backups.md",
        "# Backups\n\nRestic runs every night at 02:00 to the Backblaze B2 bucket `homelab-bk`.\n",
        "which bucket do nightly backups go to",
    ),
    (
        "02 - AREAS/Health/Allergies.md",
        "# Allergies\n\n> [!warning]\n> Allergic to penicillin: hives in 2019.\n",
        "what antibiotic am I allergic to",
    ),
    (
        "03 - RESOURCES/Recipes/Shakshuka.md",
        "# Shakshuka\n\n1. Simmer tomatoes, cumin and paprika for ten minutes.\n2. Crack the eggs in and cover.\n",
        "egg tomato recipe with cumin",
    ),
    (
        "01 - PROJECTS/Thesis/Supervisor meeting.md",
        "# Supervisor meeting\n\n- Dr. Lindqvist wants the literature review by May 15.\n",
        "deadline for the lit review",
    ),
    (
        "03 - AREAS/Journal/Daily/2024/05/2024-05-02.md",
        "# 2024-05-02\n\n- Car service at Autohaus Brenner, the timing belt was replaced.\n",
        "when was the timing belt changed",
    ),
    (
        "03 - RESOURCES/Tech/Linux/SSH config.md",
        "# SSH config\n\n```\nHost pi\n  HostName 192.168.1.40\n  User ubuntu\n```\n",
        "ip address of the raspberry pi ssh host",
    ),
    (
        "02 - AREAS/Family/Birthdays.md",
        "# Birthdays\n\n- Mum: 14 August. Likes orchids.\n- Jonas: 2 February.\n",
        "when is mum's birthday",
    ),
    (
        "03 - RESOURCES/Books/Thinking, Fast and Slow.md",
        "# Thinking, Fast and Slow\n\n> [!quote]\n> Nothing in life is as important as you think it is while you are thinking about it.\n",
        "kahneman book notes thinking fast",
    ),
    (
        "01 - PROJECTS/Garden/Tomatoes.md",
        "# Tomatoes\n\n- Sow indoors mid March, plant out after the last frost (around May 10).\n",
        "when to plant out tomato seedlings",
    ),
    (
        "03 - RESOURCES/Tech/Python/uv cheatsheet.md",
        "# uv cheatsheet\n\n- `uv tool install ruff` puts a tool on the PATH without a venv.\n",
        "install a python cli tool globally",
    ),
    (
        "02 - AREAS/Car/Insurance.md",
        "# Insurance\n\n- Policy HUK-7731-22, renews every 1 January; no-claims class SF 12.\n",
        "car insurance policy number",
    ),
    (
        "03 - AREAS/Journal/Daily/2023/11/2023-11-20.md",
        "# 2023-11-20\n\n- Lost the spare key of the bike lock; the code lock is 4-7-1-9 now.\n",
        "bike lock combination",
    ),
    (
        "01 - PROJECTS/Move to Lisbon/Checklist.md",
        "# Checklist\n\n- [ ] Register at the Junta de Freguesia for the NIF.\n- [x] Book movers for 12 June.\n",
        "tax number registration lisbon",
    ),
    (
        "03 - RESOURCES/Tech/Postgres/Vacuum.md",
        "# Vacuum\n\nAutovacuum was off on the analytics db, which is why the table bloated to 40 GB.\n",
        "why did the postgres table get so big",
    ),
    (
        "02 - AREAS/Work/1-1 with Priya.md",
        "# 1-1 with Priya\n\n- Priya prefers async updates in the #infra channel over meetings.\n",
        "how does priya like to get updates",
    ),
    (
        "03 - RESOURCES/Travel/Japan 2025.md",
        "# Japan 2025\n\n- JR Pass not worth it for our route; buy Suica and single shinkansen tickets.\n",
        "is the rail pass worth it in japan",
    ),
    (
        "03 - RESOURCES/Tech/Kubernetes/Kubectl.md",
        "# Kubectl\n\n- `kubectl rollout restart deploy/api` restarts pods without downtime.\n",
        "restart kubernetes pods without downtime",
    ),
    (
        "02 - AREAS/Health/Running.md",
        "# Running\n\n- Knee hurts after 12 km; keep long runs under 10 km until physio says otherwise.\n",
        "how far can I run with my knee",
    ),
]

_FILLER_WORDS = (
    "docker volumes backup meeting project review plan rent bucket night tomato eggs book python "
    "tool policy car bike lock key pods deploy knee physio birthday family travel rail ticket "
    "table database update channel garden frost registration tax checklist dentist appointment "
    "ssh host config landlord supervisor deadline recipe insurance running"
).split()
_FILLER_LINES = [
    "- Talked about the {0} with the team, nothing decided yet.",
    "- Need to look at the {0} again before the {1} next week.",
    "- Idea: write down how the {0} and the {1} fit together.",
    "- The {0} took longer than planned; moved the {1} to Friday.",
    "- Read an article about {0} and {1}, saved it for later.",
    "- Remember to ask about the {0} when the {1} comes up.",
    "Spent the morning on {0}; the {1} can wait.",
    "> [!note] {0}\n> Check the {1} first.",
]


def para_vault(seed: int, filler: int = 400) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """The files of a PARA vault with planted facts, and the (query, note) pairs."""
    rng = random.Random(seed)
    files: dict[str, str] = {
        ".obsidian/templates.json": '{"folder": "99 - META/Templates"}',
        ".obsidian/daily-notes.json": '{"folder": "03 - AREAS/Journal/Daily", "format": "YYYY/MM/YYYY-MM-DD"}',
        ".obsidian/app.json": "{}",
        # templates hold every query's words: recall must never answer from them
        "99 - META/Templates/Daily.md": "# <% tp.date.now() %>\n\n> [!tip] Dentist appointment\n> docker volumes cleanup, landlord rent, bucket backups\n",
        "99 - META/Templates/Meeting.md": "# Meeting\n\n- deadline review, supervisor, lit review, priya updates\n",
    }
    folders = [
        "00 - INBOX",
        "01 - PROJECTS/Home server",
        "01 - PROJECTS/Thesis",
        "02 - AREAS/Work",
        "02 - AREAS/Finance",
        "03 - RESOURCES/Tech/Docker",
        "03 - RESOURCES/Tech/Linux",
        "03 - RESOURCES/Recipes",
        "04 - ARCHIVE/2022",
    ]
    for i in range(filler):
        topic = rng.choice(_FILLER_WORDS)
        lines = [f"# {topic.title()} notes {i}", ""]
        for _ in range(rng.randint(2, 6)):
            lines.append(rng.choice(_FILLER_LINES).format(*rng.sample(_FILLER_WORDS, 2)))
        if i % 3 == 0:  # a daily note: one a day, over two years
            day = time.strftime("%Y-%m-%d", time.gmtime(1672531200 + 86400 * (i // 3) * 2))
            rel = f"03 - AREAS/Journal/Daily/{day[:4]}/{day[5:7]}/{day}.md"
        else:
            rel = f"{folders[i % len(folders)]}/{topic} notes {i}.md"
        files[rel] = "\n".join(lines) + "\n"
    files.update({path: text for path, text, _query in PLANTED})
    return files, [(query, path) for path, _text, query in PLANTED]


def bench_vault(workdir: Path, seed: int) -> dict:
    from cmem.vault.layers import open_vault

    files, queries = para_vault(seed)
    root = workdir / "para-vault"
    write_vault(root, files)
    vault = open_vault(root)
    lines = note_lines(files)
    plain = PlainBM25([text for _p, _n, text in lines])
    scores = {"cmem": [0, 0], "bm25": [0, 0]}
    templates = 0
    started = time.perf_counter()
    for query, note in queries:
        found = [path for path, _line in cmem_top(vault, query, 3)]
        templates += sum("/Templates/" in path for path in found)
        baseline = [lines[i][0] for i in plain.top(query, 3)]
        for name, paths in (("cmem", found), ("bm25", baseline)):
            scores[name][0] += paths[:1] == [note]
            scores[name][1] += note in paths
    return {
        "notes": sum(1 for rel in files if rel.endswith(".md")),
        "queries": len(queries),
        "scores": scores,
        "templates": templates,
        "seconds": time.perf_counter() - started,
    }


# --- (b) long multi-session dialogues -----------------------------------------------------------

NAMES = ["Caroline", "Melanie", "Jon", "Gina", "Tim", "Audrey", "Nate", "Joanna", "Sam", "Evan"]
PETS = ["Biscuit", "Pepper", "Mochi", "Oscar", "Luna", "Ziggy"]
CITIES = ["Lisbon", "Denver", "Osaka", "Toronto", "Nairobi", "Seville", "Prague"]
HOBBIES = ["pottery", "rock climbing", "salsa", "birdwatching", "woodworking", "chess"]
INSTRUMENTS = ["violin", "ukulele", "cello", "drums", "saxophone"]
JOBS = ["nurse", "welder", "librarian", "paramedic", "architect", "baker"]
BOOKS = ["Dune", "Beloved", "Circe", "Educated", "Piranesi"]
NUMBERS = ["two", "three", "four", "five", "six", "seven", "eight"]

# (who asks first: None for a fact said outright, the asker's line, the evidence line, the
# question of the set). {a} says the fact, {b} asks; slots are filled from the lists above.
FACTS = [
    (
        "How long have you been married?",
        "{n} years already! Time flies.",
        "How long has {a} been married?",
    ),
    (
        "Where did you go on vacation this summer?",
        "We spent two weeks in {city}, the food was amazing.",
        "Where did {a} go on vacation in the summer?",
    ),
    (
        "What's your new puppy called?",
        "{pet}! She chews everything in sight.",
        "What is the name of {a}'s new puppy?",
    ),
    (
        "What do you do for work these days?",
        "I started as a {job} at the county hospital in March.",
        "What does {a} do for work?",
    ),
    (
        "Which instrument are you learning?",
        "The {instrument}, my neighbour gives me lessons on Sundays.",
        "Which instrument is {a} learning?",
    ),
    (
        "What book are you reading right now?",
        "{book}, I can't put it down.",
        "What book is {a} reading?",
    ),
    (
        "How many kids do you have now?",
        "{n}, and they keep me busy!",
        "How many kids does {a} have?",
    ),
    (
        "What made you pick up {hobby}?",
        "My therapist suggested it to calm my mind after the accident.",
        "Why did {a} start {hobby}?",
    ),
    (
        "Who did you go to the concert with?",
        "My cousin Dana came along, she knew every song.",
        "Who went to the concert with {a}?",
    ),
    (
        "When is your sister's wedding?",
        "Next October, in a vineyard up north.",
        "When is the wedding of {a}'s sister?",
    ),
    (
        None,
        "I finally signed up for a {hobby} class at the community centre.",
        "What class did {a} sign up for at the community centre?",
    ),
    (
        None,
        "My grandmother left me her old {instrument} and I have been restoring it.",
        "What did {a}'s grandmother leave her?",
    ),
    (
        None,
        "We adopted a rescue cat from the shelter on Elm Street last week.",
        "Where did {a} adopt the rescue cat from?",
    ),
    (
        None,
        "I ran my first half marathon in {city} and finished in under two hours.",
        "Where did {a} run a half marathon?",
    ),
    (
        None,
        "I've been volunteering at the food bank every Saturday morning.",
        "When does {a} volunteer at the food bank?",
    ),
    (
        None,
        "Painting sunsets on the lake has become my way to unwind.",
        "What does {a} paint to relax?",
    ),
    (
        "How did the job interview go?",
        "Really well, they offered me the position on the spot.",
        "What was the outcome of {a}'s job interview?",
    ),
    (
        "Did you ever fix the leaking roof?",
        "Yes, a contractor replaced the shingles in May.",
        "Who fixed the leaking roof at {a}'s house?",
    ),
]
SMALL_TALK = [
    "How are you doing today?",
    "That's so great to hear!",
    "What have you been up to lately?",
    "Oh wow, tell me more about it.",
    "I know what you mean, it has been a long week.",
    "Haha, that sounds like so much fun.",
    "Did you do anything fun this weekend?",
    "Thanks, I really appreciate you saying that.",
    "How is your family doing?",
    "I have been so busy with work, but it is good.",
    "That must have been hard for you.",
    "What are you going to do next?",
    "I'm really proud of you for that.",
    "Have you been to the new cafe downtown?",
    "We should catch up more often!",
    "It was a long drive but worth it.",
    "Do you have any plans for the holidays?",
    "My kids loved it when we went last year.",
    "I can't believe it has been a year already.",
    "What was the best part?",
]


def dialogues(seed: int, conversations: int, sessions: int) -> list[dict]:
    """Conversations of sessions of turns, with the questions each asks of them: every fact once
    a speaker, two or three a session, among small talk."""
    rng = random.Random(seed)
    out = []
    for _ in range(conversations):
        a, b = rng.sample(NAMES, 2)
        placed = [(fact, who) for fact in FACTS for who in (a, b)]
        rng.shuffle(placed)
        per_session = -(-len(placed) // sessions)
        notes: dict[str, list[str]] = {}
        questions = []
        for s in range(sessions):
            rel = f"Chats/{a} and {b}/session {s + 1:02d}.md"
            # blocks of turns: a fact's exchange is never split by another one
            blocks: list[list[tuple[str, str]]] = [
                [(rng.choice((a, b)), rng.choice(SMALL_TALK))] for _ in range(rng.randint(10, 16))
            ]
            evidence = []
            for (asked, said, question), speaker in placed[s * per_session : (s + 1) * per_session]:
                other = b if speaker == a else a
                slots = {
                    "a": speaker,
                    "n": rng.choice(NUMBERS),
                    "city": rng.choice(CITIES),
                    "pet": rng.choice(PETS),
                    "job": rng.choice(JOBS),
                    "instrument": rng.choice(INSTRUMENTS),
                    "book": rng.choice(BOOKS),
                    "hobby": rng.choice(HOBBIES),
                }
                block = [(other, asked.format(**slots))] if asked else []
                block.append((speaker, said.format(**slots)))
                blocks.insert(rng.randint(1, len(blocks)), block)
                evidence.append((question.format(**slots), block[-1]))
            turns = [turn for block in blocks for turn in block]
            for question, turn in evidence:  # line numbers once every block is in place
                line = next(i for i, t in enumerate(turns) if t is turn) + 3
                questions.append((question, rel, line))
            notes[rel] = [f"# Session {s + 1}", ""] + [f"{who}: {line}" for who, line in turns]
        out.append({"notes": notes, "questions": questions})
    return out


def bench_dialogues(workdir: Path, seed: int, conversations: int, sessions: int) -> dict:
    from cmem.vault.layers import open_vault

    ks = (1, 5, 10)
    hits = {"cmem": Counter(), "bm25": Counter()}
    total = turns = 0
    started = time.perf_counter()
    for number, conversation in enumerate(dialogues(seed, conversations, sessions)):
        files = {rel: "\n".join(lines) + "\n" for rel, lines in conversation["notes"].items()}
        root = workdir / f"dialogue-{number}"
        write_vault(root, files)
        vault = open_vault(root)
        lines = note_lines(files)
        turns += sum(1 for _p, _n, text in lines if not text.startswith("#"))
        plain = PlainBM25([text for _p, _n, text in lines])
        for question, rel, line in conversation["questions"]:
            total += 1
            found = cmem_top(vault, question, max(ks))
            baseline = [(lines[i][0], lines[i][1]) for i in plain.top(question, max(ks))]
            for name, ranked in (("cmem", found), ("bm25", baseline)):
                for k in ks:
                    hits[name][k] += (rel, line) in ranked[:k]
    recall = {name: {k: hits[name][k] / max(1, total) for k in ks} for name in hits}
    return {
        "conversations": conversations,
        "sessions": sessions,
        "turns": turns,
        "questions": total,
        "recall": recall,
        "seconds": time.perf_counter() - started,
    }


# --- report -------------------------------------------------------------------------------------


def render(vault: dict, talk: dict, seed: int) -> str:
    n = vault["queries"]
    pct = lambda x: f"{100 * x:.1f}%"
    out = [
        START,
        "## Recall quality (`bench/recall_quality.py`)",
        "",
        f"`python bench/recall_quality.py --seed {seed} --conversations {talk['conversations']} "
        f"--sessions {talk['sessions']}`: both sets generated by the script, searched in the same run"
        " by `cmem recall` (the default scope, ten results) and by plain BM25 (Okapi, k1 1.2,"
        " b 0.75) over the same lines (each line its own document: no title, heading or"
        " neighbour).",
        "",
        f"**An adopted PARA vault** ({vault['notes']} notes: numbered top folders, nested project"
        " and resource folders, daily notes under `Journal/Daily/YYYY/MM/`, a templates folder"
        f" named by `.obsidian/templates.json`, callouts), {n} planted facts, each asked for in"
        " other words than it is written in:",
        "",
        "| | top-1 | top-3 |",
        "| --- | ---: | ---: |",
    ]
    for name, label in (("cmem", "`cmem recall`"), ("bm25", "plain BM25 over the lines")):
        top1, top3 = vault["scores"][name]
        out.append(f"| {label} | {top1}/{n} ({pct(top1 / n)}) | {top3}/{n} ({pct(top3 / n)}) |")
    out += [
        "",
        f"Hits from the templates folder among cmem's first three: {vault['templates']}."
        " basic-memory could not be run beside it here: every release needs Python ≥ 3.12, this"
        " machine has 3.11 and no registry it reaches offers a newer Python, so the issue's own"
        " side-by-side (5 of 10 top hits relevant with `include_unmanaged`, 6 of 10 for"
        " basic-memory, on a real vault) is not repeated on this set.",
        "",
        f"**Long multi-session dialogues**: {talk['conversations']} conversations of"
        f" {talk['sessions']} sessions ({talk['turns']} turns), {talk['questions']} questions;"
        f" {sum(1 for fact in FACTS if fact[0])} of the {len(FACTS)} kinds of fact are told in a"
        " reply to the other speaker's question, and a question about one uses the asker's words,"
        " not the reply's; each fact is told once by each speaker, so the speaker's name must"
        " decide. R@k: the evidence line among the first k lines. Plain BM25 finds the asker's"
        " line for a reply whose words are all in the question, never the reply: its figure is"
        " bounded by the facts told outright, which is the gap the exchanges close.",
        "",
        "| | R@1 | R@5 | R@10 |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, label in (("cmem", "`cmem recall`"), ("bm25", "plain BM25 over the lines")):
        r = talk["recall"][name]
        out.append(f"| {label} | {pct(r[1])} | {pct(r[5])} | {pct(r[10])} |")
    out += [
        "",
        "What makes the difference: a question's function words are left out of the query"
        " (`text/terms.py: is_query_stop`), so they never outrank its content words; a line"
        " holding more of the query's words ranks first; a reply is indexed with the turn it"
        " answers, and a question and its reply are one unit whose line shown first is the reply"
        " (`reading/exchanges.py`, `index_query._as_exchanges`); a note's title, folders,"
        " headings and callout titles are fields of each line (a match there counts half), and"
        " an empty note has a title row; each note's best line comes before any note's second."
        " The misses on the vault share no word with their fact (dental/dentist, lit/literature)"
        " or lose to a shorter line with the same words. The issue's held-out benchmark of"
        " long dialogues (1,536 questions) is not in this repository: its figures (cmem 64.8%"
        " R@10 before this change, plain BM25 56.6%, a published dense retriever 67.5%) are the"
        " issue's, not this script's.",
        "",
        f"Run: {time.strftime('%Y-%m-%d %H:%M')}, Python {sys.version.split()[0]};"
        f" vault set {vault['seconds']:.1f} s, dialogues {talk['seconds']:.1f} s (whole recalls,"
        " index syncs included).",
        END,
    ]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=6)
    parser.add_argument("--sessions", type=int, default=18)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--out", default=str(PROJECT / "docs" / "benchmarks.md"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(args.workdir or scratch)
        os.environ["XDG_STATE_HOME"] = str(workdir / "state")
        vault = bench_vault(workdir, args.seed)
        print("adopted vault", vault, flush=True)
        talk = bench_dialogues(workdir, args.seed, args.conversations, args.sessions)
        print("dialogues", talk, flush=True)
    section = render(vault, talk, args.seed)
    from report_section import write_section  # beside this script, which runs as one

    write_section(Path(args.out), section, START, END)
    print(section)


if __name__ == "__main__":
    main()
