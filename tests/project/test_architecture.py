"""docs/architecture.md matches the tree, and no module imports a layer above its own."""

from __future__ import annotations

import re

from support import REPO, git_init

PACKAGE = REPO / "cli" / "cmem"
DOC = REPO / "docs" / "architecture.md"


def _table_rows() -> list[tuple[str, list[str]]]:
    """(folder, module file names) for each row of the packages table: `pkg/` or top level."""
    rows = []
    for line in DOC.read_text("utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].isdigit():
            folder = cells[1].strip("`").rstrip("/") if cells[1].startswith("`") else ""
            rows.append((folder, re.findall(r"`(\w+\.py)`", cells[2])))
    return rows


def test_the_packages_table_names_every_module_of_the_tree_and_nothing_else():
    named = {
        f"{folder}/{name}" if folder else name for folder, names in _table_rows() for name in names
    }
    on_disk = {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py"
    }
    assert sorted(named - on_disk) == [], "named in docs/architecture.md, missing from cli/cmem/"
    assert sorted(on_disk - named) == [], "in cli/cmem/, missing from docs/architecture.md"


def test_every_path_and_function_the_doc_names_exists():
    text = DOC.read_text("utf-8")
    missing = []
    for rel in set(re.findall(r"`((?:\w+/)+\w+\.py)", text)):
        if not (PACKAGE / rel).is_file() and not (REPO / rel).is_file():
            missing.append(rel)
    for rel, name in set(re.findall(r"`((?:\w+/)?\w+\.py): (?:\w+\.)?(\w+)`", text)):
        path = PACKAGE / rel if (PACKAGE / rel).is_file() else REPO / rel
        if not path.is_file() or not re.search(
            rf"^\s*(?:def|class) {name}\b", path.read_text("utf-8"), re.MULTILINE
        ):
            missing.append(f"{rel}: {name}")
    assert sorted(missing) == []


def test_the_doc_lists_the_layers_in_the_order_the_test_holds(layout):
    rows = _table_rows()
    # a sub-package's rows (`converge/builtin/`) sit in their package's layer, after its own row
    doc_order = list(dict.fromkeys(folder.split("/")[0] for folder, _ in rows if folder))
    code_order = [name for layer in layout.LAYERS for name in layer if (PACKAGE / name).is_dir()]
    assert doc_order == code_order


def test_no_module_imports_a_layer_above_its_own(layout):
    assert layout.upward_imports(PACKAGE) == []


def test_no_module_imports_a_private_cpython_module(layout, tmp_path):
    """`hashlib`, never `_sha256`: a private module is renamed between versions without a word."""
    assert layout.private_imports(PACKAGE) == []
    # the rule's own cases: a lazy import, a from-import, a dynamic one, the launcher; not __future__
    (tmp_path / "cmem").mkdir()
    (tmp_path / "scripts").mkdir()
    (tmp_path / "cmem" / "a.py").write_text(
        "from __future__ import annotations\nimport os, _thread\n"
        "def f():\n    from _sha256 import sha256\n    return __import__('_json')\n",
        "utf-8",
    )
    (tmp_path / "cmem" / "b.py").write_text("import importlib\nimportlib.import_module('_md5')\n")
    (tmp_path / "scripts" / "cmem").write_text("from _hashlib import new\n", "utf-8")
    assert layout.private_imports(tmp_path / "cmem") == [
        "cmem.a:2 _thread",
        "cmem.a:4 _sha256",
        "cmem.a:5 _json",
        "cmem.b:2 _md5",
        "scripts/cmem:1 _hashlib",
    ]


def test_the_layout_measures_find_what_issue_45_counts(layout, tmp_path):
    """argv readers outside the command table, folding helpers against inline folding, long
    functions, references outside the repository: each rule on a package of its own cases."""
    package = tmp_path / "cli" / "cmem"
    (package / "commands").mkdir(parents=True)
    (package / "commands" / "app.py").write_text("import sys\nARGS = sys.argv\n", "utf-8")
    (package / "entry.py").write_text("from sys import argv\n", "utf-8")
    (package / "other.py").write_text("import sys\nsys.exit(0)\n", "utf-8")
    (package / "fold.py").write_text(
        "import unicodedata\n"
        "def fold(text):\n    return unicodedata.normalize('NFKC', text).casefold()\n"
        "def same(a, b):\n    return a.casefold() == b.casefold()\n"
        "def inline(a, b):\n    found = a.casefold() in b\n    return found\n"
        "def outer(words):\n    def key(word):\n        return word.casefold()\n"
        "    return sorted(words, key=key)\n"
        "def long():\n" + "    x = 1\n" * 80 + "    return x\n",
        "utf-8",
    )
    # `normalize` imported from unicodedata folds; a statement key's `normalize` does not
    (package / "wide.py").write_text(
        "from unicodedata import normalize\nWIDE = normalize('NFKC', 'A')\n"
        "def narrow(text):\n    found = normalize('NFKC', text)\n    return found\n",
        "utf-8",
    )
    (package / "key.py").write_text(
        "from cmem.statements import normalize\ndef key(text):\n    return normalize(text)\n",
        "utf-8",
    )
    (package / "text").mkdir()
    (package / "text" / "folding.py").write_text(
        "def fold(text):\n    return text.casefold()\n", "utf-8"
    )
    assert layout.argv_readers(package) == ["cmem.entry"]
    helpers, inline = layout.text_folding(package)
    assert helpers == {
        "cmem.fold.fold": "cmem.fold",
        "cmem.fold.outer.key": "cmem.fold",
        "cmem.fold.same": "cmem.fold",
        "cmem.text.folding.fold": "cmem.text.folding",
    }
    assert inline == ["cmem.fold.inline", "cmem.wide.narrow"]
    assert layout.fold_sites(package) == [
        "cmem.fold:3",
        "cmem.fold:3",
        "cmem.fold:5",
        "cmem.fold:5",
        "cmem.fold:7",
        "cmem.fold:11",
        "cmem.wide:2",
        "cmem.wide:4",
    ]
    assert layout.long_functions(package) == {"cmem.fold.long:13": 82}
    assert layout.long_functions(package, limit=82) == {}
    repository = tmp_path
    # the patterns by their labels, so this file names nothing outside the repository itself
    spec, shared, work = layout.OUTSIDE
    (repository / "notes.md").write_text(
        f"See {spec} §3 and {spec}.md, {shared}/design and {work}main; not {spec}IAL, a{work}b.\n"
    )
    git_init(repository)
    (repository / "untracked.md").write_text(f"{spec}\n", "utf-8")
    assert layout.outside_references(repository) == {
        spec: {"notes.md": 2},
        shared: {"notes.md": 1},
        work: {"notes.md": 1},
    }


def test_only_the_yaml_module_imports_a_yaml_library(layout):
    """One YAML reader per purpose, all in one module (issue 45): no other module reads or writes
    YAML with PyYAML or ruamel.yaml itself, lazily or not."""
    assert layout.yaml_importers(PACKAGE) == []
    named = layout.yaml_readers(PACKAGE)
    for purpose in ("read_frontmatter", "read_config_yaml", "CommentKeepingEdit", "quoted_scalar"):
        assert purpose in named


def test_the_yaml_measure_finds_every_form_of_import(layout, tmp_path):
    package = tmp_path / "cmem"
    (package / "vault").mkdir(parents=True)
    (package / "vault" / "yaml_reader.py").write_text("import yaml\ndef read_it():\n    pass\n")
    (package / "lazy.py").write_text("def f():\n    import yaml.constructor\n", "utf-8")
    (package / "round.py").write_text("x = 1\nfrom ruamel.yaml.comments import CommentedMap\n")
    (package / "near.py").write_text("import yamlish\nfrom cmem.vault import yaml_reader\n")
    assert layout.yaml_importers(package) == ["cmem.lazy:2", "cmem.round:2"]
    assert layout.yaml_readers(package) == ["read_it"]


def test_no_import_cycles(layout):
    assert layout.cycles(PACKAGE) == []


def test_the_layer_check_catches_an_upward_import(layout, tmp_path):
    """The rule can fail: a copy of the package where the vault imports the pass is caught."""
    import shutil

    copy = tmp_path / "cmem"
    shutil.copytree(
        PACKAGE,
        copy,
        ignore=shutil.ignore_patterns("__pycache__", "prompts", "vault_schema", "sample_vault"),
    )
    notes = copy / "vault" / "notes.py"
    notes.write_text(
        notes.read_text("utf-8")
        + "\n\ndef _late():\n    from cmem.converge.pipeline import run_pass\n",
        "utf-8",
    )
    (copy / "text" / "tokens.py").write_text(
        (copy / "text" / "tokens.py").read_text("utf-8") + "\nfrom cmem.text import names\n",
        "utf-8",
    )
    (copy / "text" / "names.py").write_text(
        (copy / "text" / "names.py").read_text("utf-8") + "\nfrom cmem.text import tokens\n",
        "utf-8",
    )
    assert layout.upward_imports(copy) == ["cmem.vault.notes -> cmem.converge.pipeline"]
    assert ["cmem.text.names", "cmem.text.tokens"] in layout.cycles(copy)


def test_one_way_in(layout):
    """Every command line is read by the command table (typer, `cmem/commands/`): no hand-written
    argv loop, and no module outside the table reads `sys.argv`."""
    assert layout.argv_parsers() == []
    assert layout.argv_readers() == []


def test_engines_and_rules_are_registries_the_report_reads(layout):
    """The extension points are dicts the report reads from the source, and match what the code
    runs: an engine or a rule added outside them would not be run."""
    from cmem.converge import engines
    from cmem.converge.validator import rules, validate

    found = layout.registries()
    assert found["engines"] == [repr(name) for name in engines.ENGINES]
    for label, registry in (
        ("validator rules of each file block", validate.CHANGE_RULES),
        ("validator rules of the whole reply", validate.REPLY_RULES),
    ):
        values = [getattr(rules, name, None) for name in found[label]]
        assert values == list(registry), label
        assert all(callable(check) and not isinstance(check, type) for check in registry.values())
    assert layout.rule_classes() == []


def test_the_rule_class_check_catches_a_class_of_checks(layout, tmp_path):
    import shutil

    copy = tmp_path / "cmem"
    shutil.copytree(PACKAGE, copy)
    with (copy / "converge" / "validator" / "check_sizes.py").open("a", encoding="utf-8") as out:
        out.write("\n\nclass SizeChecks:\n    pass\n")
    assert layout.rule_classes(copy) == ["cmem.converge.validator.check_sizes.SizeChecks"]


def test_decision_comments_are_in_the_one_shape(layout):
    """`# <what we do>, not <the alternative>: <why>` (docs/development.md): no comment names an
    alternative another way ("rather than", "instead of", "chosen over")."""
    assert layout.decision_comments(PACKAGE) == []


def test_the_decision_comment_rule_reads_comments_not_strings(layout, tmp_path):
    package = tmp_path / "cli" / "cmem"
    package.mkdir(parents=True)
    (tmp_path / "bench").mkdir()
    (package / "kept.py").write_text(
        "# plain loops, not any() over a generator: rather than a call a test, one loop\n"
        "import tempfile  # here, not at the top: instead of every command, the writers pay\n"
        '# "X instead of Y", "rather X than Y": a change of mind the engine reads\n'
        "# one walk over the lines finds every link\n"
        "TEXT = '# rather than a comment, a string'\n"
        "# lazily, not at import: most commands never\n"
        "# digest, and a digest in place of a stat costs more\n",
        "utf-8",
    )
    (package / "shapes.py").write_text(
        "# read the cache rather than walk the folder again\n"
        "x = 1  # chosen over a dict for speed\n"
        "# The settle is short. A long one was tried\n"
        "# instead of it: sessions ended first.\n"
        "z = 0\n"
        "# not the walk, instead of the cache: a leading not names no choice\n"
        "y = 2\n"
        "# we prefer the stat over a read\n",
        "utf-8",
    )
    (tmp_path / "bench" / "script.py").write_text("# a lock in place of a queue\n", "utf-8")
    assert layout.decision_comments(package) == [
        "cmem.shapes:1",
        "cmem.shapes:2",
        "cmem.shapes:3",
        "cmem.shapes:6",
        "cmem.shapes:8",
        "bench/script.py:1",
    ]
    assert "decision comments not in the shape: 6 (target 0)" in layout.decision_report(package)
