"""`cmem context` from its stored material (cmem.reading.stored_context): a warm call is answered
without the vault model, and prints byte for byte what the command prints afresh from the same vault, config
and read times — text and --json, warnings too — and never a stale bundle: each test changes the
vault as a person or a tool does and checks the next call shows the truth.

Whether a call was answered from the store is read from `python -X importtime`: a stored answer
never imports the config reader. The full command is the same command with its stored material
removed first (`support.forget_stored`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from cmem.reading import stored_context
from cmem.reading.context import build_context, gather_material, render_context_markdown
from cmem.text.tokens import estimate_tokens
from cmem.vault.layers import machine_dir_for, open_vault
from support import forget_stored, git

HOUR_AGO = time.time() - 3600
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # a GitHub token's shape, made up


def run(vault: Path, *argv: str, full: bool = False) -> tuple[str, str, bool]:
    """cmem in a real process: (stdout, stderr, answered from the store?). `full`: afresh, as a
    miss runs it."""
    if full:
        forget_stored(vault, "context")
    entry = "from cmem.cli import main"
    args = ["context", *argv, "--vault", str(vault)]
    code = f"import sys; sys.argv = ['cmem', *{args!r}]; {entry}; main()"
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stderr.splitlines(keepends=True)
    modules = {line.split("|")[-1].strip() for line in lines if line.startswith("import time:")}
    err = "".join(line for line in lines if not line.startswith("import time:"))
    return result.stdout, err, "cmem.vault.config" not in modules


def settle(root: Path) -> None:
    """Every file and folder of the vault (its .git too) an hour old, so its listing may be
    stored (the racy-timestamp rule)."""
    for folder, _dirs, files in os.walk(root):
        for name in files:
            os.utime(os.path.join(folder, name), (HOUR_AGO, HOUR_AGO), follow_symlinks=False)
        os.utime(folder, (HOUR_AGO, HOUR_AGO))


def read_times_file(vault: Path) -> Path:
    return machine_dir_for(vault.resolve()) / "read-times.json"


def same_as_full(vault: Path, *argv: str) -> str:
    """A stored answer, checked against the full command run from the same read times."""
    times = read_times_file(vault)
    before = times.read_bytes() if times.exists() else None
    light = run(vault, *argv)
    assert light[2], f"context {argv} should have been answered from the stored material"
    recorded = set(json.loads(times.read_text("utf-8")))
    if before is None:
        times.unlink()
    else:
        times.write_bytes(before)
    full = run(vault, *argv, full=True)
    assert not full[2] and light[:2] == full[:2]
    assert recorded == set(json.loads(times.read_text("utf-8")))  # the same files recorded
    return light[0]


def warm(vault: Path) -> str:
    """Store the material (a miss runs the full command, which stores it); what it printed."""
    settle(vault)
    out, _, hit = run(vault)
    assert not hit
    return out


def commit_all(vault: Path, message: str) -> None:
    git(vault, "add", "-A")
    git(vault, "commit", "-q", "-m", message)


ARGVS = [
    (),
    ("--json",),
    ("--budget", "300"),  # the index cut to fit, topic files left out
    ("--budget=300", "--json"),
    ("--topic", "python", "--budget", "100000"),  # a topic, everything fits
    ("--topic", "前端", "--json", "--budget", "100000"),
]


def test_stored_answers_print_what_the_full_command_prints(sample_vault):
    core = sample_vault / "converged" / "core"
    # three states: as shipped; a resident layer over its cap (a warning) with a credential in it;
    # a new topic file and a new pending note
    states = [
        lambda: None,
        lambda: (core / "big.md").write_text(
            "# 大文件\n\n" + "很长的常驻内容，用来超过上限。\n" * 900 + f"token {SECRET}\n",
            encoding="utf-8",
        ),
        lambda: (
            (sample_vault / "converged" / "topics" / "rust.md").write_text(
                "---\nsummary: Rust 笔记\nimportance: 9\ntags: [rust]\n---\n\n- 用 cargo\n",
                encoding="utf-8",
            ),
            (sample_vault / "2026-11-30 new.md").write_text(
                "# new\n\n- 其实不是这样，以后都改用 pnpm 了\n", encoding="utf-8"
            ),
        ),
    ]
    for change in states:
        change()
        warm(sample_vault)
        for argv in ARGVS:
            same_as_full(sample_vault, *argv)
    _, err, _ = run(sample_vault)
    assert "over resident_max_tokens" in err
    out = same_as_full(sample_vault, "--json", "--budget", "100000")
    data = json.loads(out)
    assert data["redacted"] >= 1 and SECRET not in out
    assert any(f["path"] == "converged/topics/rust.md" for f in data["situational"])
    assert data["pending_total"] >= 1 and "2026-11-30 new.md" in out


def test_warnings_are_redacted_when_gathered_and_printed_as_kept(sample_vault):
    """The material keeps its problems redacted (a note's name may hold a credential): the
    stored answer prints them without the redaction rules, as the full command does with them."""
    (sample_vault / f"note {SECRET}.md").write_bytes(b"\xef\xbb\xbf# odd\n\n- a line\n")
    warm(sample_vault)
    light, err, hit = run(sample_vault)
    assert hit and SECRET not in err and "[REDACTED:" in err and "byte-order mark" in err
    assert (light, err) == run(sample_vault, full=True)[:2]


def test_a_stored_answer_imports_nothing_heavy(sample_vault):
    (sample_vault / "odd.md").write_bytes(b"\xef\xbb\xbf# odd\n\n- a line\n")  # a warning
    warm(sample_vault)
    code = (
        "import sys; sys.argv = ['cmem', 'context', '--vault', sys.argv[1]];"
        " from cmem.cli import main; main()"
    )
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code, str(sample_vault)],
        capture_output=True,
        text=True,
    )
    modules = {line.split("|")[-1].strip() for line in result.stderr.splitlines()}
    assert "cmem.reading.stored_context" in modules
    # a stored answer's list (tests/project/test_packaging.py), and what the full `context` needs
    # for durable writes
    never = ("yaml", "ruamel", "cmem.vault", "cmem.scan", "git")
    # but where a vault is, told with `os` alone: the vault package's one module a stored answer uses
    allowed = {"cmem.vault", "cmem.vault.machine"}
    for heavy in (*never, "cmem.atomic", "tempfile"):
        found = [m for m in modules if m == heavy or m.startswith(heavy + ".")]
        assert not set(found) - allowed, heavy
    # nor OpenSSL (the rank jitter and the entry's name are checksums), nor the redaction rules
    # for its warnings (kept redacted), which it prints
    assert "warning: " in result.stderr
    assert not {"hashlib", "_hashlib", "cmem.text.secrets"} & modules


def test_a_stored_answer_records_reads(sample_vault):
    warm(sample_vault)
    read_times_file(sample_vault).unlink(missing_ok=True)
    out, _, hit = run(sample_vault, "--json")
    assert hit
    times = json.loads(read_times_file(sample_vault).read_text("utf-8"))
    included = [f["path"] for f in json.loads(out)["resident"] + json.loads(out)["situational"]]
    assert included and set(included) <= set(times)
    # the next call sees them: the index says when each file was last read
    again, _, hit = run(sample_vault, "--json")
    assert hit
    index = json.loads(again)["index"]
    assert index and all(entry["last_read"] == times[entry["path"]] for entry in index)


def test_a_memory_file_edited_in_the_same_second_is_seen(sample_vault):
    warm(sample_vault)
    profile = sample_vault / "converged" / "core" / "profile.md"
    with open(profile, "a", encoding="utf-8") as handle:
        handle.write("\n- 新加的一行：喜欢用 Neovim\n")
    out, _, hit = run(sample_vault)
    assert not hit and "喜欢用 Neovim" in out
    # just written: inside the racy window, so nothing was stored and the next call reads again
    again, _, hit = run(sample_vault)
    assert not hit and again == out
    settle(sample_vault)
    run(sample_vault)
    assert "喜欢用 Neovim" in same_as_full(sample_vault)


def test_an_edit_keeping_size_and_mtime_is_seen(sample_vault):
    before = warm(sample_vault)
    profile = sample_vault / "converged" / "core" / "profile.md"
    text = profile.read_text("utf-8")
    changed = text.replace("a", "b", 1)
    assert changed != text and len(changed.encode()) == len(text.encode())
    profile.write_text(changed, encoding="utf-8")
    os.utime(profile, (HOUR_AGO, HOUR_AGO))  # only the ctime tells
    out, _, hit = run(sample_vault)
    assert not hit and out != before


def test_topic_files_added_and_removed_are_seen(sample_vault):
    topics = sample_vault / "converged" / "topics"
    warm(sample_vault)
    (topics / "go.md").write_text("---\nsummary: Go notes\n---\n\n- gofmt\n", encoding="utf-8")
    os.utime(topics / "go.md", (HOUR_AGO, HOUR_AGO))
    out, _, hit = run(sample_vault, "--json")
    assert not hit and "converged/topics/go.md" in out
    settle(sample_vault)
    run(sample_vault)
    (topics / "job-search.md").unlink()
    out, _, hit = run(sample_vault, "--json")
    assert not hit and "converged/topics/job-search.md" not in out and "topics/go.md" in out
    settle(sample_vault)
    run(sample_vault)
    assert "converged/topics/job-search.md" not in same_as_full(sample_vault, "--json")


def test_config_change_is_seen(sample_vault):
    warm(sample_vault)
    default = json.loads(same_as_full(sample_vault, "--json"))["budget"]
    config = sample_vault / ".cmem" / "config.yaml"
    config.write_text(config.read_text("utf-8") + "\nbudget_tokens: 777\n", encoding="utf-8")
    os.utime(config, (HOUR_AGO, HOUR_AGO))  # size and ctime changed
    out, _, hit = run(sample_vault, "--json")
    assert not hit and json.loads(out)["budget"] == 777 != default
    settle(sample_vault)
    run(sample_vault)
    assert json.loads(same_as_full(sample_vault, "--json"))["budget"] == 777


def test_checkout_of_an_older_state_is_seen(sample_vault):
    git(sample_vault, "branch", "older")
    (sample_vault / "converged" / "topics" / "rust.md").write_text(
        "---\nsummary: Rust\n---\n\n- cargo clippy\n", encoding="utf-8"
    )
    commit_all(sample_vault, "a topic file")
    warm(sample_vault)
    assert "cargo clippy" in same_as_full(sample_vault)
    git(sample_vault, "checkout", "-q", "older")
    out, _, hit = run(sample_vault)
    assert not hit and "cargo clippy" not in out


@pytest.mark.parametrize("damage", ["cut after the head", "a byte of a topic text"])
def test_stored_material_not_as_written_is_a_miss(sample_vault, damage):
    """The topic files' texts are parts after the stored material, read when the bundle needs
    them: a file cut after its head, or with a text's bytes changed, is a miss (the full
    command runs and prints the truth), never a wrong bundle or a crash."""
    from cmem.reading.stored_results import entry_path

    warm(sample_vault)
    path = Path(entry_path(str(sample_vault.resolve()), "context", ()))
    data = path.read_bytes()
    base = 24 + int.from_bytes(data[16:24], "big")  # the mark, the head's length, the head
    assert len(data) > base  # the texts are after it
    if damage == "cut after the head":
        path.write_bytes(data[:base])
    else:  # a line of a topic text: the budget below prints every topic file
        last = data.rindex(b"---", base)  # each sample topic file starts with its frontmatter
        path.write_bytes(data[:last] + b"+++" + data[last + 3 :])
    out, _, hit = run(sample_vault, "--budget", "100000")
    assert not hit and "+++" not in out
    assert out == run(sample_vault, "--budget", "100000", full=True)[0]
    assert run(sample_vault, "--budget", "100000")[2]  # the full command stored it again


def test_a_topic_whose_files_do_not_fit_goes_to_the_full_command(sample_vault):
    """Excerpts from the files left out need the full-text index: not the light path's."""
    warm(sample_vault)
    light, _, hit = run(sample_vault, "--topic", "面试", "--budget", "300")
    assert not hit
    assert light == run(sample_vault, "--topic", "面试", "--budget", "300", full=True)[0]


@pytest.mark.parametrize("budget", [100, 300, 800, 3000, 10**6])
def test_the_token_estimate_is_the_rendered_texts(sample_vault, budget):
    """Context.tokens sums per-line counts instead of scanning the bundle: it must equal
    estimate_tokens of the text, whatever was included, cut or left out."""
    (sample_vault / "converged" / "core" / "mixed.md").write_text(
        "# 混合 mixed\n\n- 全角，标点。カタカナ 한국어 ｆｕｌｌ e\u0301 😀\n", encoding="utf-8"
    )
    for topic in (None, "python", "前端"):
        context = build_context(open_vault(sample_vault), topic=topic, budget=budget, record=False)
        assert context.tokens == estimate_tokens(render_context_markdown(context))


def test_wide_count_matches_the_token_estimates_class():
    from cmem.text.scripts import CJK_WIDE_CHAR

    samples = [
        "",
        "ascii",
        "中文，标点。",
        "カタカナ ひらがな 한국어",
        "ｆｕｌｌ！",
        "é ü ß — …",
        "😀𠀀",
    ]
    # every code point from below the first range to past the last: each range's edges
    samples.append("".join(chr(c) for c in range(0x2F00, 0x10000) if not 0xD800 <= c < 0xE000))
    for text in samples:
        assert stored_context.wide_count(text) == len(CJK_WIDE_CHAR.findall(text)), text


def _shape(context) -> tuple:
    return (
        [f.path for f in context.situational],
        [f.path for f in context.index],
        [f.path for f in context.omitted],
        context.index_total,
    )


def test_the_budget_cuts_each_part_as_the_rendered_text_would(sample_vault, monkeypatch):
    """The budget loop counts tokens from the files' stored lengths, never rendering the bundle
    (Context.tokens): at every budget, from the resident layer alone to everything in, it must
    pick what measuring the rendered text picks, and the light path must print what the full
    command prints at each budget where a part is cut off or joins."""
    topics = sample_vault / "converged" / "topics"
    for n, word in enumerate(["缓存策略", "deploy", "テスト", "review"]):
        (topics / f"extra-{n}.md").write_text(
            f"---\nsummary: {word} notes {n}\nimportance: {3 + n}\n---\n\n"
            + f"- {word} line\n" * (5 + 7 * n),
            encoding="utf-8",
        )
    warm(sample_vault)
    vault = open_vault(sample_vault)
    material = gather_material(vault)
    times = stored_context.load_read_times(str(vault.machine_dir))
    now = datetime.now().astimezone()
    full = stored_context.assemble(material, None, 10**6, times, now).tokens

    def by_text(self):
        return estimate_tokens(render_context_markdown(self))

    shapes = {}
    for budget in range(100, full + 2):
        context = stored_context.assemble(material, None, budget, times, now)
        assert context.tokens == estimate_tokens(render_context_markdown(context)), budget
        shapes[budget] = _shape(context)
    with monkeypatch.context() as patched:
        patched.setattr(stored_context.Context, "tokens", property(by_text))
        for budget in range(100, full + 2):
            reference = stored_context.assemble(material, None, budget, times, now)
            assert shapes[budget] == _shape(reference), budget
    boundaries = [b for b in range(101, full + 2) if shapes[b] != shapes[b - 1]]
    # a topic file joins, the index is cut and grows back, until everything is in
    assert len(boundaries) >= 6 and not shapes[full][2] and shapes[100][2]
    # the first budget of a shape, text and --json, through both paths: every fourth boundary
    # with the last (each pair starts the full CLI; the loops above hold every budget in process)
    for n, budget in enumerate(boundaries[::4] + boundaries[-1:]):
        # no read times: a file read seconds ago ranks by how many seconds, and the two runs'
        # clocks differ (its score, rounded in --json, could differ in the last digit)
        read_times_file(sample_vault).unlink(missing_ok=True)
        same_as_full(sample_vault, "--budget", str(budget), *(("--json",) if n % 2 else ()))


def stored_texts(material: dict, path: Path) -> tuple[dict, stored_context.StoredTexts]:
    """The material as `cmem context` stores it (its topic texts as parts of a file at `path`),
    read back as a stored answer reads it."""
    from cmem.cache_store import Kept

    kept_material, parts = stored_context.stored_material(material)
    Kept(path, "stored-results").write({"payload": kept_material}, parts=parts)
    reader = Kept(path, "stored-results")
    return reader.read()["payload"], stored_context.StoredTexts(reader)


def test_topic_files_are_read_only_when_the_bundle_needs_them(sample_vault, tmp_path, monkeypatch):
    """The stored material keeps the topic files' contents as parts after it (StoredTexts): a
    bundle whose budget leaves them all out, with no topic to match, never reads one."""
    material, texts = stored_texts(gather_material(open_vault(sample_vault)), tmp_path / "m")
    read = []
    real_get = stored_context.StoredTexts.get
    monkeypatch.setattr(
        stored_context.StoredTexts, "get", lambda self, at: read.append(at) or real_get(self, at)
    )
    now = datetime.now().astimezone()
    cut = stored_context.assemble(material, None, 100, {}, now, texts)
    render_context_markdown(cut), cut.to_json()
    assert cut.omitted and not cut.situational and read == []
    fits = stored_context.assemble(material, None, 10**6, {}, now, texts)
    assert "- Uses pip and venv" in render_context_markdown(fits)
    assert len(read) == len(fits.situational) > 0
    assert stored_context.assemble(material, "python", 100, {}, now, texts).omitted
    assert len(read) > len(fits.situational)  # a topic is matched in the files' text


def test_read_times_are_written_as_json_writes_them_and_read_back_from_their_copy(tmp_path):
    """The light path neither parses nor writes the read times with `json` (times_json, and a
    marshal copy stamped with the JSON file's stat); the JSON file stays the record."""
    tricky = {
        "converged/topics/a.md": "2026-11-30T10:00:00+00:00",
        'q"uote\\back\nline\ttab\x01.md': "x",
        "中文/笔记 · — ….md": "\u2028",
        "".join(map(chr, range(0x20)))
        + "\x7f": "\udcff",  # every control character, a lone surrogate
    }
    for times in ({}, {"a": "b"}, tricky):
        assert stored_context.times_json(times) == json.dumps(
            times, ensure_ascii=False, indent=0, sort_keys=True
        )
    machine = tmp_path / "machine"
    now = datetime.now().astimezone()
    stored_context.record_reads(str(machine), list(tricky), now)
    record = json.loads((machine / stored_context.READ_TIMES).read_text("utf-8"))
    assert set(record) == set(tricky) and (machine / stored_context.READ_TIMES_COPY).exists()
    assert stored_context.load_read_times(str(machine)) == record
    # the JSON file changed by someone else (an older cmem, a hand edit): it wins over the copy
    record["converged/topics/a.md"] = "2020-01-01T00:00:00+00:00"
    (machine / stored_context.READ_TIMES).write_text(json.dumps(record), "utf-8")
    assert stored_context.load_read_times(str(machine)) == record
    (machine / stored_context.READ_TIMES).unlink()
    assert stored_context.load_read_times(str(machine)) == {}


def test_a_topic_names_its_file_by_alias_as_a_project_does(sample_vault):
    """`--topic chaoxi` finds `潮汐.md` by its alias, as SessionStart finds a project's file
    (`reading/project_topic.py`), in the full command and from the stored material alike; no
    word of the topic is in its name, summary, tags or statements."""
    topics = sample_vault / "converged" / "topics"
    (topics / "潮汐.md").write_text(
        "---\nsummary: 潮汐项目的约定\naliases: [chaoxi]\n---\n# 潮汐\n\n- 用 pnpm 和 Node 20\n",
        encoding="utf-8",
    )
    (topics / "Tide Pool.md").write_text("# Tide pool\n\n- Tests run with vitest\n", "utf-8")
    vault = open_vault(sample_vault)
    material = gather_material(vault)
    now = datetime.now().astimezone()
    for topic, path in (
        ("chaoxi", "converged/topics/潮汐.md"),
        ("tide-pool", "converged/topics/Tide Pool.md"),
    ):
        full = build_context(vault, topic=topic, budget=1500, record=False)
        light = stored_context.assemble(material, topic, 1500, {}, now)  # what the light path runs
        for context in (full, light):
            assert context.omitted, "a budget that leaves files out ranks the topic's first"
            assert [f.path for f in context.situational if f.matches_topic] == [path], topic
            assert context.situational[0].path == path


def test_the_rank_jitter_is_the_same_in_every_process_and_moves_with_the_day():
    """docs/design.md §8: the jitter is the CRC-32 of the day and the path scaled to [0, 0.5), so
    another process (another hash seed) ranks a day's files alike, and another day differently."""
    from zlib import crc32

    code = (
        "import json\n"
        "from datetime import datetime\n"
        "from cmem.reading.stored_context import ContextFile, rank_scores\n"
        "now = datetime.fromisoformat('2026-12-03T10:00:00+00:00')\n"
        "files = [ContextFile(f'converged/topics/t{i}.md', '', importance=0) for i in range(200)]\n"
        "print(json.dumps(rank_scores(files, now)))\n"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2")
    ]
    assert runs[0] == runs[1]
    jitters = [score - 5 for score in json.loads(runs[0])]  # never read: recency at its cap, 5
    assert all(0 <= j < 0.5 for j in jitters) and len(set(jitters)) == 200
    assert max(jitters) - min(jitters) > 0.45  # spread over the range
    assert jitters[7] == crc32(b"2026-12-03:converged/topics/t7.md") / 2**32 * 0.5
    files = [stored_context.ContextFile(f"converged/topics/t{i}.md", "") for i in range(200)]
    day = stored_context.rank_scores(files, datetime.fromisoformat("2026-12-03T10:00:00+00:00"))
    later = stored_context.rank_scores(files, datetime.fromisoformat("2026-12-04T10:00:00+00:00"))
    order = sorted(range(200), key=day.__getitem__)
    assert order == sorted(range(200), key=jitters.__getitem__)
    assert order != sorted(range(200), key=later.__getitem__)
