"""The everyday pass, one new note through the builtin engine, does its work once (issue 13): the
prompt is assembled once, each layer is listed once, topic files and resident files are measured
once, the validator indexes path tails only when a source needs them. Counted, not timed, so a
repeated piece of work cannot come back unseen (git processes: steps/test_step_git_calls.py)."""

from __future__ import annotations

from collections import Counter

from cmem.converge import pipeline
from cmem.converge.pipeline import PassOptions, run_pass
from cmem.vault.layers import Vault, open_vault
from pass_helpers import NOTE

SECOND = "2026-11-29 notes.md"


def _counting(monkeypatch, owner, name: str) -> list:
    """Each call's arguments, the function still doing its work."""
    calls = []
    original = getattr(owner, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def test_a_one_note_pass_assembles_its_prompt_once(pass_vault, monkeypatch):
    prompts = _counting(monkeypatch, pipeline, "assemble_prompt")
    result = run_pass(open_vault(pass_vault), PassOptions(engine="builtin"))
    assert result.status == "applied" and result.converged == [NOTE]
    # one note is always taken whatever the budget: no prompt without notes is built to size it
    assert [len(args[1]) for args in prompts] == [1]


def test_with_notes_to_choose_between_the_budget_still_counts_the_fixed_prompt(
    pass_vault, monkeypatch
):
    (pass_vault / SECOND).write_text("- 其实我更喜欢早上写代码。\n", encoding="utf-8")
    prompts = _counting(monkeypatch, pipeline, "assemble_prompt")
    result = run_pass(open_vault(pass_vault), PassOptions(engine="builtin", dry_run=True))
    assert sorted(result.selected) == sorted([NOTE, SECOND])
    assert [len(args[1]) for args in prompts] == [0, 2]  # the fixed part, then the prompt


def test_a_pass_lists_each_layer_once(pass_vault, monkeypatch):
    listed = _counting(monkeypatch, Vault, "_list_layer")
    result = run_pass(open_vault(pass_vault), PassOptions(engine="builtin"))
    assert result.status == "applied"
    layers = Counter(args[1] for args in listed)
    # the scan, the originals, the validator's note names and memory files: ten asked before
    assert layers and set(layers.values()) == {1}, layers
    # the validator's names of archived notes come from `vault/archive_names.py`, by folder
    assert "archive" not in layers, layers


def test_listings_end_before_the_pass_writes(pass_vault):
    vault = open_vault(pass_vault)
    run_pass(vault, PassOptions(engine="builtin"))
    assert "_folders" not in vault.__dict__ and "_layers" not in vault.__dict__
    (pass_vault / SECOND).write_text("- 其实我更喜欢早上写代码。\n", encoding="utf-8")
    assert SECOND in [note.rel for note in vault.list_layer("divergent")]


def test_a_reply_citing_notes_by_name_indexes_no_path_tails(pass_vault, monkeypatch):
    from functools import cached_property

    from cmem.converge.validator.reply_reading import ReplyReading

    tails: list = []
    made = ReplyReading.path_tails.func
    counted = cached_property(lambda reply: tails.append(reply) or made(reply))
    counted.__set_name__(ReplyReading, "path_tails")
    monkeypatch.setattr(ReplyReading, "path_tails", counted)
    result = run_pass(open_vault(pass_vault), PassOptions(engine="builtin"))
    assert result.status == "applied"
    assert tails == []  # every path's tails are made only for a source written as a path


def test_topic_files_are_measured_once_while_their_text_stays(make_vault, monkeypatch):
    """Over the budget, each topic file's token estimate, aliases and summary words are kept in
    the machine folder by its text's digest: a second prompt measures no file again."""
    from cmem.converge import prompt

    topics = {
        f"converged/topics/t{n}.md": f"---\nsummary: 话题 {n}\n---\n# T{n}\n\n"
        + "".join(f"- 第 {i} 条关于烘焙的记录（来源：[[old]]）\n" for i in range(20))
        for n in range(12)
    }
    root = make_vault(
        {**topics, "archive/old.md": "x\n", "n.md": "我决定改用 uv 管理虚拟环境\n"},
        config_yaml="budget_tokens: 500\n",
        git=True,
    )
    run_pass(open_vault(root), PassOptions(emit_prompt=True))
    measured = _counting(monkeypatch, prompt, "estimate_tokens")
    heads = _counting(monkeypatch, prompt, "_head")
    stems = _counting(monkeypatch, prompt, "_stem")  # each file name's words, kept by name
    again = run_pass(open_vault(root), PassOptions(emit_prompt=True))
    assert again.status == "prompt"
    assert measured == [] and heads == [] and stems == []
    # the words are kept as one string a file, a word a line: loaded as one copy, no word hashed
    import marshal

    kept = marshal.loads((open_vault(root).machine_dir / prompt._TermsMemo.FILE).read_bytes())
    terms = [parts["terms"] for parts in kept["entries"].values() if "terms" in parts]
    assert terms and all(
        isinstance(words, str) and words.startswith("\n") and words.endswith("\n")
        for words in terms
    )
    (root / "converged/topics/t3.md").write_text("---\nsummary: 改过\n---\n# T3\n", "utf-8")
    run_pass(open_vault(root), PassOptions(emit_prompt=True))
    assert len(measured) == len(heads) == 1  # the edited file only
    assert stems == []  # its name did not change


def test_the_resident_size_check_measures_each_file_once(make_vault, monkeypatch):
    from cmem.converge.validator import check_sizes

    core = {
        f"converged/core/part-{n}.md": f"# Part {n}\n\n- 第 {n} 条（来源：[[old]]）\n"
        for n in range(30)
    }
    root = make_vault(
        {**core, "archive/old.md": "x\n", "n.md": "- 其实我更喜欢早上写代码。\n"},
        git=True,
    )
    measured = _counting(monkeypatch, check_sizes, "estimate_tokens")
    result = run_pass(open_vault(root), PassOptions(engine="builtin"))
    assert result.status == "applied" and result.changed
    # every resident file once, each file the reply writes once more (and the topic size check)
    assert len(measured) <= len(core) + 2 * len(result.changed), len(measured)


def test_the_builtin_engine_measures_each_resident_file_once_a_pass(make_vault, monkeypatch):
    from cmem.converge.builtin import engine as builtin
    from cmem.converge.builtin import working_copy as builtin_memory

    core = {
        f"converged/core/part-{n}.md": f"# Part {n}\n\n- 第 {n} 条（来源：[[old]]）\n"
        for n in range(30)
    }
    note = "".join(f"- 其实我更喜欢第 {n} 种写法。\n" for n in range(4))  # four placements
    root = make_vault({**core, "archive/old.md": "x\n", "n.md": note}, git=True)
    measured = _counting(monkeypatch, builtin, "estimate_tokens")
    files = _counting(monkeypatch, builtin_memory, "estimate_tokens")  # the files' own
    result = run_pass(open_vault(root), PassOptions(engine="builtin", dry_run=True))
    assert result.converged
    # each resident file once, then once more after each edit and for each added line: not all
    # 30 again for every line the engine places (the size cap is checked per line)
    assert len(measured) + len(files) <= len(core) + 3 * 4, len(measured)


def test_resident_sizes_are_kept_by_text_for_the_next_pass(make_vault, monkeypatch):
    """The validator keeps each resident file's token estimate by its text's digest: the next
    pass (engine and validator) measures only the texts it has not seen, and a file edited in
    between is measured again, its new size counted."""
    from cmem.converge.builtin import engine as builtin
    from cmem.converge.builtin import working_copy as builtin_memory
    from cmem.converge.memory import statement_words
    from cmem.converge.memory.statement_words import TokenMemo
    from cmem.converge.validator import check_sizes
    from cmem.text.tokens import estimate_tokens

    core = {
        f"converged/core/part-{n}.md": f"# Part {n}\n\n- 第 {n} 条（来源：[[old]]）\n"
        for n in range(30)
    }
    root = make_vault({**core, "archive/old.md": "x\n", "n.md": "- 其实我更喜欢早上写代码。\n"})
    vault = open_vault(root)
    vault.machine_dir.mkdir(parents=True, exist_ok=True)
    assert run_pass(vault, PassOptions(engine="builtin", dry_run=True)).converged
    edited = root / "converged/core/part-3.md"
    edited.write_text(edited.read_text("utf-8") + "- 多一条很长的陈述" * 40 + "\n", "utf-8")
    by_validator = _counting(monkeypatch, check_sizes, "estimate_tokens")
    by_engine = _counting(monkeypatch, builtin, "estimate_tokens")
    by_engine_files = _counting(monkeypatch, builtin_memory, "estimate_tokens")
    by_memo = _counting(monkeypatch, statement_words, "estimate_tokens")
    result = run_pass(open_vault(root), PassOptions(engine="builtin", dry_run=True))
    assert result.converged
    # the edited file and what the pass writes, not the 29 files left as they were
    measured = [args[0] for args in by_validator + by_engine + by_engine_files + by_memo]
    assert edited.read_text("utf-8") in measured
    assert len(measured) <= 2 + 3 * len(result.changed), len(measured)
    # what is kept is what the estimate says, the edited file's new size included
    memo = TokenMemo(vault.machine_dir)
    monkeypatch.setattr(statement_words, "estimate_tokens", lambda text: -1)
    for path in [*core, "converged/core/part-3.md"]:
        text = (root / path).read_text("utf-8")
        assert memo.tokens(text) == estimate_tokens(text)


def test_topic_names_are_made_only_for_a_line_ending_in_a_link(make_vault, monkeypatch):
    """A trailing [[topic]] is a routing hint the statement drops: the topic files' names are
    made to recognise one, and only for a line that ends in a link."""
    from cmem.converge.builtin import engine as builtin

    topics = {
        f"converged/topics/t{n}.md": f"---\nsummary: 话题 {n}\n---\n# T{n}\n\n- 第 {n} 条\n"
        for n in range(20)
    }
    named = []
    keys = builtin.MemoryFile.keys
    monkeypatch.setattr(
        builtin.MemoryFile, "keys", property(lambda f: named.append(f.rel) or keys.func(f))
    )
    root = make_vault({**topics, "n.md": "- 其实我更喜欢早上写代码。\n"})
    assert run_pass(open_vault(root), PassOptions(engine="builtin", dry_run=True)).converged
    assert named == []
    (root / "n.md").write_text("- 其实我更喜欢周三部署。 [[t3]]\n", "utf-8")
    result = run_pass(open_vault(root), PassOptions(engine="builtin", dry_run=True))
    assert result.converged and len(named) >= len(topics)
    assert "周三部署" in result.diff and "[[t3]]" not in result.diff  # the hint was dropped


def test_each_memory_text_is_digested_once_by_each_cache_a_pass(make_vault, monkeypatch):
    """The prompt's topic memo, the engine's words and the resident sizes each key memory files
    by their text's digest: each hashes a text once a pass (not once a line it places), and
    nothing is kept in the process between passes (`cmem watch`, the MCP server)."""
    import hashlib

    from cmem import cache_store

    files = {
        f"converged/{folder}/f{n}.md": f"# {folder} {n}\n\n"
        + f"- 第 {n} 条关于烘焙的记录（来源：[[old]]）\n" * 8
        for n in range(12)
        for folder in ("core", "topics")
    }
    root = make_vault(
        {**files, "archive/old.md": "x\n", "n.md": "- 其实我更喜欢早上写代码。\n"},
        config_yaml="budget_tokens: 500\n",  # over the budget: the topic files are scored
    )
    vault = open_vault(root)
    vault.machine_dir.mkdir(parents=True, exist_ok=True)
    hashed: list[str] = []
    real = cache_store.digest

    def digest(text):
        hashed.append(text)
        return real(text)

    monkeypatch.setattr(cache_store, "digest", digest)  # as `KeptByDigest.key` makes them
    monkeypatch.setattr("cmem.converge.memory.statement_words.digest", digest)
    result = run_pass(vault, PassOptions(engine="builtin", dry_run=True))
    assert result.converged
    texts = {(root / path).read_text("utf-8") for path in files}
    assert texts <= set(hashed)  # every memory file is keyed by its digest
    # at most once for each of the three caches, and the few texts the pass made
    assert max(hashed.count(text) for text in texts) <= 3
    assert len(hashed) <= 3 * len(files) + 6, len(hashed)
    assert real("x") == hashlib.blake2b(b"x", digest_size=16).digest()


def test_a_one_note_pass_over_plain_frontmatter_never_imports_yaml(pass_vault):
    """Memory files' frontmatter is plain `key: value` lines: the validator reads and checks it
    with the plain reader, so the everyday pass (config and engine words kept from an earlier
    pass) does not import yaml at all. Here with enough keys to pass the hazard check's quick test."""
    import subprocess
    import sys

    from pass_helpers import PROFILE

    profile = pass_vault / PROFILE
    keys = "".join(f"k{i}: value {i}\n" for i in range(10)) + "tags: [a, b]\naliases:\n  - x\n"
    profile.write_text(profile.read_text("utf-8").replace("---\n", "---\n" + keys, 1), "utf-8")
    code = (
        "import sys\n"
        "from cmem.converge.pipeline import PassOptions, run_pass\n"
        "from cmem.vault.layers import open_vault\n"
        "result = run_pass(open_vault(sys.argv[1]), PassOptions(engine='builtin', dry_run=True))\n"
        "print(result.status, sorted(result.changed), 'yaml' in sys.modules)\n"
    )
    argv = [sys.executable, "-c", code, str(pass_vault)]
    subprocess.run(argv, check=True, capture_output=True)  # the config and words are kept
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    assert out.split() == ["dry-run", f"['{PROFILE}']", "False"], out


def test_the_run_record_redacts_only_what_it_did_not_keep(pass_vault, monkeypatch):
    """The prompt in the run record is redacted piece by piece, each quoted file's answer kept in
    the machine folder: a second pass redacts only its notes and task, and its record holds the
    very bytes a whole redaction gives (a memory file's credential still hidden)."""
    import json

    from cmem.text import secrets
    from pass_helpers import JOBS

    jobs = pass_vault / JOBS
    key = "Xk2J9fQ0pLm7Zr4T" * 2
    jobs.write_text(jobs.read_text("utf-8") + f"- 部署 password: {key}（来源：[[x]]）\n", "utf-8")
    vault = open_vault(pass_vault)
    vault.machine_dir.mkdir(parents=True, exist_ok=True)
    whole = run_pass(vault, PassOptions(engine="builtin", emit_prompt=True)).prompt
    assert key not in whole and "[REDACTED:password]" in whole
    redacted = _counting(monkeypatch, secrets, "redact_secrets")
    records = []
    for _ in range(2):
        redacted.clear()
        result = run_pass(open_vault(pass_vault), PassOptions(engine="builtin", dry_run=True))
        assert result.status == "dry-run"
        record = vault.machine_dir / "runs" / result.pass_id
        records.append((record / "prompt.txt").read_text("utf-8"))
        assert json.loads((record / "run.json").read_text("utf-8"))["redacted"] == 1
        sizes = sum(len(args[0]) for args in redacted)
    assert records == [whole, whole]
    # the second time only the pieces not kept (the notes and the task) were redacted
    assert 0 < sizes < len(whole) / 2, (sizes, len(whole))
