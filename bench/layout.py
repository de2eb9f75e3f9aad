"""The package's layout, measured: modules per package, module sizes, imports that run up the
layers, and import cycles; and issue 45's figures: modules outside the command table reading
`sys.argv`, references to files outside the repository, text-folding helpers, functions over 80
lines, imports of private CPython modules, modules importing a YAML library beside the one YAML
module, tokenisers and token estimates beside their one module, decision comments out of their
one shape. `docs/architecture.md` quotes its figures;
`tests/project/test_architecture.py` holds the code to its layer order.

    python bench/layout.py [PACKAGE_DIR]      # default: cli/cmem of this checkout

Imports are read with `ast`, including those inside functions (a lazy import is still a
dependency); nothing of cmem is run.
"""

from __future__ import annotations

import ast
import io
import re
import statistics
import sys
import tokenize
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "cli" / "cmem"

# The layers, bottom first. A module may import from its own layer and the layers below it,
# never from one above. Top-level modules are named by their module name, packages by theirs.
LAYERS: list[tuple[str, ...]] = [
    ("text",),  # knows nothing of cmem
    # the foundation every layer may use
    (
        "errors",
        "faults",
        "resources",
        "private",
        "atomic",
        "regular_files",
        "cache_store",
        "bounds",
    ),
    ("vault",),
    ("steps",),
    ("archive", "scan", "sessions"),
    ("sync",),  # one vault on several machines: merges through the step layer
    ("setup",),
    ("converge",),
    ("triggers",),
    ("render",),
    ("reading",),
    ("doctor",),
    # the surfaces: the commands package (the command table), its old name cli, idle_sync (sync
    # with nothing to do), pass_command (`converge` around the pass), hook_command (`hook run`),
    # invocation (one command line's state), MCP
    (
        "commands",
        "cli",
        "idle_sync",
        "pass_command",
        "hook_command",
        "invocation",
        "mcp_server",
        "__main__",
    ),
]


def module_name(path: Path, package: Path = PACKAGE) -> str:
    """`cli/cmem/vault/layers.py` -> `cmem.vault.layers`; a package's `__init__` is the package."""
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    return {module_name(path, package): path for path in sorted(package.rglob("*.py"))}


def imports(path: Path, known: set[str]) -> set[str]:
    """The cmem modules a file imports, anywhere in it (`from cmem.x import name` counts as
    `cmem.x`, `from cmem.x import submodule` as `cmem.x.submodule`)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and node.module
            and node.module.split(".")[0] == "cmem"
        ):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in known else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == "cmem")
    return found


def room(module: str) -> str:
    """The package or top-level module a module belongs to: `cmem.vault.layers` -> `vault`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer_of(module: str) -> int | None:
    name = room(module)
    for rank, members in enumerate(LAYERS):
        if name in members:
            return rank
    return None


def upward_imports(package: Path = PACKAGE) -> list[str]:
    """`importer -> imported` for every import that runs to a higher layer, and every module
    whose package is in no layer at all (a new package must be placed)."""
    found = modules(package)
    known = set(found)
    problems = []
    for name, path in found.items():
        if name == "cmem":
            continue
        rank = layer_of(name)
        if rank is None:
            problems.append(f"{name}: its package is in no layer (add it to LAYERS)")
            continue
        for target in sorted(imports(path, known)):
            target_rank = layer_of(target)
            if target_rank is not None and target_rank > rank:
                problems.append(f"{name} -> {target}")
    return problems


def cycles(package: Path = PACKAGE) -> list[list[str]]:
    """Groups of modules that import each other in a circle (Tarjan's strongly connected
    components of the import graph, lazy imports included)."""
    found = modules(package)
    known = set(found)
    graph = {
        name: sorted(t for t in imports(path, known) if t in known and t != name)
        for name, path in found.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for name in graph:
        if name not in index:
            visit(name)
    return groups


def sizes(package: Path = PACKAGE) -> dict[str, int]:
    """Lines per module (as `wc -l` counts them), `__init__` files left out."""
    return {
        name: len(path.read_text("utf-8").splitlines())
        for name, path in modules(package).items()
        if path.name != "__init__.py"
    }


# A module past this many lines holds more than one idea (issue 36).
MODULE_LINE_LIMIT = 800


def over_limit(package: Path = PACKAGE, limit: int = MODULE_LINE_LIMIT) -> dict[str, int]:
    return {name: n for name, n in sorted(sizes(package).items()) if n > limit}


# The pass's package keeps at its top what runs a pass; engines and the validator are sub-packages
# (issue 45).
CONVERGE_TOP_LIMIT = 15


def converge_top_level(package: Path = PACKAGE) -> int:
    """Modules directly in `converge/`, `__init__.py` not counted."""
    return sum(1 for path in (package / "converge").glob("*.py") if path.name != "__init__.py")


def argv_parsers(package: Path = PACKAGE) -> list[str]:
    """Functions that read a command line by hand: a parameter named `argv` and a loop popping
    words off a list. The command table (typer) reads every command line: none is expected."""
    found = []
    for name, path in modules(package).items():
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not isinstance(node, ast.FunctionDef):
                continue
            if "argv" not in [a.arg for a in node.args.args]:
                continue
            pops = any(
                isinstance(inner, ast.Call)
                and isinstance(inner.func, ast.Attribute)
                and inner.func.attr == "pop"
                for loop in ast.walk(node)
                if isinstance(loop, (ast.While, ast.For))
                for inner in ast.walk(loop)
            )
            if pops:
                found.append(f"{name}.{node.name}")
    return sorted(found)


def _imported_names(tree: ast.AST):
    """(line, module) of every absolute import in a tree, the dynamic ones by a constant name
    (`importlib.import_module("x")`, `__import__("x")`) included."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module
        elif (
            isinstance(node, ast.Call)
            and ast.unparse(node.func) in ("__import__", "import_module", "importlib.import_module")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.lineno, node.args[0].value


def private_imports(package: Path = PACKAGE) -> list[str]:
    """Imports of a private module (`_sha256`, `_json`: a top-level name starting with `_`,
    `__future__` aside), in the package and the launcher beside it: CPython renames them
    between versions without a word (`_sha256` became `_sha2` in 3.12)."""
    scripts = package.parent / "scripts"
    files = {**modules(package), **{f"scripts/{p.name}": p for p in sorted(scripts.glob("*"))}}
    return sorted(
        f"{name}:{line} {module}"
        for name, path in files.items()
        if path.is_file()
        for line, module in _imported_names(ast.parse(path.read_text("utf-8")))
        if module.split(".")[0].startswith("_") and module != "__future__"
    )


# The command table: the one package that reads the command line (issue 45).
COMMAND_TABLE = "cmem.commands"


def argv_readers(package: Path = PACKAGE) -> list[str]:
    """Modules outside the command table that read `sys.argv` (`sys.argv`, `from sys import
    argv`): each is a way into the CLI beside the table."""
    found = []
    for name, path in modules(package).items():
        if name == COMMAND_TABLE or name.startswith(COMMAND_TABLE + "."):
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            reads = (
                isinstance(node, ast.Attribute)
                and node.attr == "argv"
                and isinstance(node.value, ast.Name)
                and node.value.id == "sys"
            ) or (
                isinstance(node, ast.ImportFrom)
                and node.module == "sys"
                and any(alias.name == "argv" for alias in node.names)
            )
            if reads:
                found.append(name)
                break
    return sorted(found)


# What names a file outside the repository: the design contract and the shared folder beside the
# checkout, and the workplace's absolute paths (issue 45). This file's own patterns are left out.
OUTSIDE = {
    "SPEC": re.compile(r"\bSPEC\b"),
    "../shared": re.compile(r"\.\./shared\b"),
    "/work/": re.compile(r"(?<![\w~.])/work/"),  # `~/work/**` is a user's example glob
}
# Left out as tests/project/test_design_citations.py leaves them out: transcripts recorded from
# the real agents (their paths are data) and the test that names the patterns it looks for.
OUTSIDE_EXEMPT = ("tests/sessions/fixtures/real/", "tests/project/test_design_citations.py")


def outside_references(repository: Path = PACKAGE.parent.parent) -> dict[str, dict[str, int]]:
    """For each pattern of `OUTSIDE`, its occurrences in each file git tracks, by file."""
    import subprocess

    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=repository, capture_output=True, check=True
    ).stdout.decode("utf-8", "surrogateescape")
    found: dict[str, dict[str, int]] = {label: {} for label in OUTSIDE}
    for rel in listed.split("\0"):
        path = repository / rel
        if not rel or rel.startswith(OUTSIDE_EXEMPT) or not path.is_file():
            continue
        if path.resolve() == Path(__file__).resolve():
            continue
        try:
            text = path.read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # a binary file names nothing
        for label, pattern in OUTSIDE.items():
            count = len(pattern.findall(text))
            if count:
                found[label][rel] = count
    return found


def _functions(package: Path):
    """(module, qualified name, node) of every function and method, nested ones included."""
    for name, path in modules(package).items():

        def walk(node: ast.AST, prefix: str):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield name, prefix + child.name, child
                    yield from walk(child, f"{prefix}{child.name}.")
                elif isinstance(child, ast.ClassDef):
                    yield from walk(child, f"{prefix}{child.name}.")
                else:
                    yield from walk(child, prefix)

        yield from walk(ast.parse(path.read_text("utf-8")), "")


# The one module that folds text (issue 45): every other module calls its functions.
FOLDING_MODULE = "cmem.text.folding"


def _bare_normalize(tree: ast.AST) -> bool:
    """Whether a module imports `normalize` from `unicodedata` (a bare `normalize(...)` of
    another module, such as a statement's key, folds nothing by itself)."""
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module == "unicodedata"
        and any(alias.name == "normalize" and alias.asname is None for alias in node.names)
        for node in ast.walk(tree)
    )


def _folds(node: ast.AST, bare_normalize: bool = False) -> bool:
    """A call of `.casefold()` or `unicodedata.normalize` (`normalize` imported from it too)."""
    if not isinstance(node, ast.Call):
        return False
    called = ast.unparse(node.func)
    return (
        called.endswith(".casefold")
        or called == "unicodedata.normalize"
        or (bare_normalize and called == "normalize")
    )


def fold_sites(package: Path = PACKAGE) -> list[str]:
    """`module:line` of every fold call outside the folding module, anywhere in a file (module
    level included): each one text folding done beside the one helper module."""
    found = []
    for name, path in modules(package).items():
        if name == FOLDING_MODULE:
            continue
        tree = ast.parse(path.read_text("utf-8"))
        bare = _bare_normalize(tree)
        found += [f"{name}:{node.lineno}" for node in ast.walk(tree) if _folds(node, bare)]
    return sorted(found, key=lambda site: (site.rsplit(":", 1)[0], int(site.rsplit(":", 1)[1])))


def _own_nodes(function: ast.AST):
    """A function's own nodes, those of the functions and lambdas it defines left out."""
    pending = list(ast.iter_child_nodes(function))
    while pending:
        node = pending.pop()
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield node
            pending.extend(ast.iter_child_nodes(node))


def text_folding(package: Path = PACKAGE) -> tuple[dict[str, str], list[str]]:
    """(helpers, each with its module; inline): functions that fold text for comparison. A helper returns the folded
    text (a `return` whose value calls `.casefold()` or `unicodedata.normalize`): one idea, so
    one helper (issue 45). Inline: the functions folding text some other way, a helper's work
    done in place."""
    helpers: dict[str, str] = {}
    inline: list[str] = []
    paths = modules(package)
    bare = {
        name: _bare_normalize(ast.parse(path.read_text("utf-8"))) for name, path in paths.items()
    }
    for module, qualified, function in _functions(package):
        own = list(_own_nodes(function))
        if not any(_folds(node, bare[module]) for node in own):
            continue
        returns = [node.value for node in own if isinstance(node, ast.Return) and node.value]
        folded = any(_folds(node, bare[module]) for value in returns for node in ast.walk(value))
        if folded:
            helpers[f"{module}.{qualified}"] = module
        else:
            inline.append(f"{module}.{qualified}")
    return dict(sorted(helpers.items())), sorted(inline)


# The one module that imports a YAML library (issue 45): every other module calls its functions.
YAML_MODULE = "cmem.vault.yaml_reader"
YAML_LIBRARIES = ("yaml", "ruamel")


def yaml_importers(package: Path = PACKAGE) -> list[str]:
    """`module:line` of every import of PyYAML or ruamel.yaml outside the YAML module, lazy ones
    included: each one YAML read or written beside the named readers."""
    found = []
    for name, path in modules(package).items():
        if name == YAML_MODULE:
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                named = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                named = [node.module]
            else:
                continue
            if any(module.split(".")[0] in YAML_LIBRARIES for module in named):
                found.append(f"{name}:{node.lineno}")
    return found


def yaml_readers(package: Path = PACKAGE) -> list[str]:
    """The YAML module's public functions and classes, in file order: one a purpose."""
    path = modules(package).get(YAML_MODULE)
    if path is None:
        return []
    tree = ast.parse(path.read_text("utf-8"))
    kinds = (ast.FunctionDef, ast.ClassDef)
    return [n.name for n in tree.body if isinstance(n, kinds) and not n.name.startswith("_")]


# The one module that splits text into words and terms, and the one token estimate (issue 45).
WORDS_MODULE = "cmem.text.words"
TOKENS_MODULE = "cmem.text.tokens"
_SPLITTERS = {"findall", "finditer", "split"}
# A class of word characters: `\w`, `[^\W_]`, a class naming a letter or digit range, or one of
# the CJK classes of `text/scripts.py` (`{HAN}`, `{CJK}` in an f-string).
_WORD_CLASS = re.compile(r"\\w|\[\^?[^\]]*(?:\\w|\\W|a-z|A-Z|0-9|\{HAN\}|\{CJK\})[^\]]*\]")
_LOOKAROUND = re.compile(r"\(\?<?[=!](?:[^()]|\([^()]*\))*\)|\\b|\^|\\A|\(\?[aiLmsux]+\)")


def _alternatives(source: str) -> list[str]:
    """A regex's top-level alternatives (`|` outside groups and classes)."""
    parts, depth, in_class, start, at = [], 0, False, 0, 0
    while at < len(source):
        char = source[at]
        if char == "\\":
            at += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            at += 1 if source[at + 1 : at + 2] != "]" else 2
            continue
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            parts.append(source[start:at])
            start = at + 1
        at += 1
    return [*parts, source[start:]]


def word_pattern(source: str) -> bool:
    r"""Whether a regex matches words: one of its alternatives starts (lookarounds, anchors and
    flags aside) with a class of word characters that must match and goes on (`\w+`, `[a-z][a-z-]*`;
    not `[a-z]*`, nor `[A-Za-z]` alone, which counts letters)."""
    for alternative in _alternatives(source):
        rest = _LOOKAROUND.sub("", alternative)
        first = _WORD_CLASS.match(rest)
        after = rest[first.end() :] if first else ""
        # repeated, or followed by more word characters: a word, not one character counted
        if first and (after[:1] in ("+", "{") or _WORD_CLASS.match(after)):
            return True
    return False


def _pattern_sources(tree: ast.Module) -> dict[str, ast.expr]:
    """A module's top-level names bound to a pattern's source: `X = re.compile("…")`, `X = "…"`,
    and the entries of a dict of sources (`{"HAN_RUN": f"[{HAN}]+"}`) by their keys."""
    found: dict[str, ast.expr] = {}
    for node in tree.body:
        if not (isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        value = node.value
        if isinstance(value, ast.Call) and ast.unparse(value.func) == "re.compile" and value.args:
            value = value.args[0]
        for target in targets:
            if isinstance(target, ast.Name):
                found[target.id] = value
        if isinstance(value, ast.Dict):
            for key, entry in zip(value.keys, value.values):
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    found.setdefault(key.value, entry)
    return found


def _source(expr: ast.expr | None, names: dict[str, ast.expr], depth: int = 0) -> str | None:
    """The regex source an expression stands for: a string, an f-string, a name bound to one (in
    the module or the module it is imported from), a call given one (`re.compile(…)`,
    `pattern(…)`), or an attribute of the module holding it (`words.KEY_WORD`)."""
    if expr is None or depth > 4:
        return None
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value
    if isinstance(expr, ast.JoinedStr):
        return "".join(
            part.value if isinstance(part, ast.Constant) else "{" + ast.unparse(part.value) + "}"
            for part in expr.values
            if isinstance(part, (ast.Constant, ast.FormattedValue))
        )
    if isinstance(expr, ast.Name) and expr.id in names:
        return _source(names[expr.id], names, depth + 1)
    if isinstance(expr, ast.Attribute) and expr.attr in names:
        return _source(names[expr.attr], names, depth + 1)
    if isinstance(expr, ast.Call) and expr.args:
        return _source(expr.args[0], names, depth + 1)
    return None


def _sources_in_reach(package: Path) -> dict[str, dict[str, ast.expr]]:
    """Each module's pattern names, with those of the cmem modules it imports names from."""
    trees = {name: ast.parse(path.read_text("utf-8")) for name, path in modules(package).items()}
    own = {name: _pattern_sources(tree) for name, tree in trees.items()}
    reach: dict[str, dict[str, ast.expr]] = {}
    for name, tree in trees.items():
        names: dict[str, ast.expr] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in own:
                for alias in node.names:
                    if alias.name in own[node.module]:
                        names[alias.asname or alias.name] = own[node.module][alias.name]
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:  # `from cmem.text import words`: its names by attribute
                    names.update(own.get(f"{node.module}.{alias.name}", {}))
        reach[name] = {**names, **own[name]}
    return reach


def _splits_words(node: ast.AST, names: dict[str, ast.expr]) -> bool:
    """A call of `findall`, `finditer` or `split` with a word pattern (`word_pattern`), the
    pattern given as the call's first argument (`re.findall(…)`) or as what it is called on."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    if node.func.attr not in _SPLITTERS:
        return False
    owner = node.func.value
    if isinstance(owner, ast.Name) and owner.id == "re":
        source = _source(node.args[0] if node.args else None, names)
    else:
        source = _source(owner, names)
    return source is not None and word_pattern(source)


def tokenisers(package: Path = PACKAGE) -> dict[str, list[str]]:
    """Module → its functions that split text into words or terms: a `findall`, `finditer` or
    `split` with a pattern of word characters (`_splits_words`). One idea, so one module."""
    reach = _sources_in_reach(package)
    found: dict[str, list[str]] = defaultdict(list)
    for module, qualified, function in _functions(package):
        if any(_splits_words(node, reach[module]) for node in _own_nodes(function)):
            found[module].append(qualified)
    return dict(sorted(found.items()))


def _chars_per_token(package: Path) -> int:
    value = _assigned(modules(package)[TOKENS_MODULE], "CHARS_PER_TOKEN")
    return value.value if isinstance(value, ast.Constant) else 4


def _counts_characters(expr: ast.expr) -> bool:
    """Whether an expression measures text: it calls `len`, or it rounds up (`… + 3`)."""
    return any(
        (isinstance(node, ast.Call) and ast.unparse(node.func) == "len")
        or (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Add)
            and isinstance(node.right, ast.Constant)
        )
        for node in ast.walk(expr)
    )


def token_estimates(package: Path = PACKAGE) -> list[str]:
    """`module.function:line` of each division of a character count by the chars-per-token
    constant outside `text/tokens.py` (`len(text) // 4`, `(n + 3) // 4`): a token estimate of
    its own, beside the one every budget figure goes through."""
    per = _chars_per_token(package)
    found = []
    for module, qualified, function in _functions(package):
        if module == TOKENS_MODULE:
            continue
        for node in _own_nodes(function):
            if (
                isinstance(node, ast.BinOp)
                and isinstance(node.op, (ast.Div, ast.FloorDiv))
                and (
                    (isinstance(node.right, ast.Constant) and node.right.value == per)
                    or ast.unparse(node.right).endswith("CHARS_PER_TOKEN")
                )
                and _counts_characters(node.left)
            ):
                found.append(f"{module}.{qualified}:{node.lineno}")
    return sorted(found)


# A function a newcomer reads in one screen (issue 45).
FUNCTION_LINE_LIMIT = 80


def long_functions(package: Path = PACKAGE, limit: int = FUNCTION_LINE_LIMIT) -> dict[str, int]:
    """Functions over `limit` lines, `def` to last line (decorators aside), longest first."""
    lengths = {
        f"{module}.{qualified}:{node.lineno}": node.end_lineno - node.lineno + 1
        for module, qualified, node in _functions(package)
    }
    over = [(where, n) for where, n in lengths.items() if n > limit]
    return dict(sorted(over, key=lambda item: (-item[1], item[0])))


# The extension points: each registry's module and name (issue 36). The validator's registries
# are gathered from the rule modules `RULE_MODULES` names, each holding its own dict of that name.
REGISTRIES = {
    "engines": ("cmem.converge.engines", "ENGINES"),
    "validator rules of each file block": ("cmem.converge.validator.validate", "CHANGE_RULES"),
    "validator rules of the whole reply": ("cmem.converge.validator.validate", "REPLY_RULES"),
}
RULE_MODULES = ("cmem.converge.validator.validate", "RULE_MODULES")


def _assigned(path: Path, name: str) -> ast.expr | None:
    """The value a module's top level assigns to `name`, as source (`X = …` or `X: T = …`)."""
    for node in ast.parse(path.read_text("utf-8")).body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if isinstance(target, ast.Name) and target.id == name:
            return node.value
    return None


def _dict_keys(path: Path, name: str) -> list[str]:
    value = _assigned(path, name)
    if isinstance(value, ast.Dict):
        return [ast.unparse(key) for key in value.keys if key is not None]
    return []


def registries(package: Path = PACKAGE) -> dict[str, list[str]]:
    """Each registry's keys as the source writes them (`"llm"`, `FRONTMATTER`), read without
    importing the package: a dict written out, or one gathered from the rule modules in order."""
    found: dict[str, list[str]] = {}
    paths = modules(package)
    holder, listed = RULE_MODULES
    value = _assigned(paths[holder], listed)
    rule_modules = [
        f"{holder.rsplit('.', 1)[0]}.{element.id}"
        for element in (value.elts if isinstance(value, ast.Tuple) else [])
        if isinstance(element, ast.Name)
    ]
    for label, (module, name) in REGISTRIES.items():
        keys = _dict_keys(paths[module], name)
        if not keys and module == holder:
            keys = [
                key for rule_module in rule_modules for key in _dict_keys(paths[rule_module], name)
            ]
        found[label] = keys
    return found


def rule_classes(package: Path = PACKAGE) -> list[str]:
    """Classes in the validator's rule modules (`converge/validator/check_….py`): a rule is a function
    registered under its id, so there should be none."""
    return sorted(
        f"{name}.{node.name}"
        for name, path in modules(package).items()
        if name.startswith("cmem.converge.validator.check_")
        for node in ast.parse(path.read_text("utf-8")).body
        if isinstance(node, ast.ClassDef)
    )


# A timing or a ratio: measurements belong in docs/benchmarks.md, not in the code (issue 36).
FIGURE = re.compile(r"\d\s?(ms|µs|ns)\b|\d(\.\d+)?\s?(×|x\b)")
# A comment says one line of why; a block past this many lines is an essay (issue 36).
COMMENT_BLOCK_LIMIT = 3


def prose(package: Path = PACKAGE) -> dict:
    """The code's comments: how many lines and their mean length, blocks of full-line comments
    longer than `COMMENT_BLOCK_LIMIT`, and comments and docstring lines carrying a figure."""
    lengths: list[int] = []
    blocks: list[str] = []
    figures: list[str] = []
    for name, path in modules(package).items():
        text = path.read_text("utf-8")
        lines = text.splitlines()
        run: list[int] = []
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type != tokenize.COMMENT:
                continue
            row = token.start[0]
            lengths.append(len(token.string))
            if FIGURE.search(token.string):
                figures.append(f"{name}:{row}")
            if not lines[row - 1].lstrip().startswith("#"):
                continue  # a trailing comment starts no block
            if run and row == run[-1] + 1:
                run.append(row)
                continue
            if len(run) > COMMENT_BLOCK_LIMIT:
                blocks.append(f"{name}:{run[0]} ({len(run)} lines)")
            run = [row]
        if len(run) > COMMENT_BLOCK_LIMIT:
            blocks.append(f"{name}:{run[0]} ({len(run)} lines)")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node, clean=False)
                if doc and isinstance(node.body[0], ast.Expr):
                    first = node.body[0].lineno
                    figures += [
                        f"{name}:{first + at}"
                        for at, line in enumerate(doc.splitlines())
                        if FIGURE.search(line)
                    ]
    return {
        "comment_lines": len(lengths),
        "mean_length": statistics.mean(lengths) if lengths else 0.0,
        "long_blocks": sorted(blocks),
        "figures": sorted(figures),
    }


# A comment naming an alternative: a choice the code made, or turned down (issue 45).
ALTERNATIVE = re.compile(
    r"\b(?:rather than|instead of|in place of|as opposed to|in preference to)\b"
    r"|\b(?:chose|chosen|prefer|preferred|picked|favou?red)\b(?:\s+\S+){0,3}?\s+over\b",
    re.IGNORECASE,
)
# Quoted text and code in a comment: an example the code reads ("X instead of Y"), no choice.
QUOTED = re.compile(r'"[^"]*"|“[^”]*”|`[^`]*`|「[^」]*」')
# The one shape of a decision comment (docs/development.md): `# <what we do>, not <the
# alternative>: <why>`, on the first line of its block; the why may run on below.
DECISION_SHAPE = re.compile(r"^#\s*(?!not\b)\S.*?, not \S.*?:(?:\s|$)")


def _comment_blocks(text: str):
    """(line, lines) of each comment block of a source, read with `tokenize` (a `#` in a string
    is no comment): a run of full-line comments, or a comment after code on its own."""
    lines = text.splitlines()
    block: list[str] = []
    start = last = 0
    last_full = False
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type != tokenize.COMMENT:
            continue
        row = token.start[0]
        full_line = lines[row - 1].lstrip().startswith("#")
        if block and full_line and row == last + 1 and last_full:
            block.append(token.string)
        else:
            if block:
                yield start, block
            block, start = [token.string], row
        last, last_full = row, full_line
    if block:
        yield start, block


def decision_comments(package: Path = PACKAGE) -> list[str]:
    """`module:line` of each decision comment not in the shape, in the package and the `bench/`
    scripts beside it (`bench/run.py:12`). A comment block is a decision comment when it names an
    alternative (`ALTERNATIVE`: "rather than", "instead of", "in place of", "chosen over"…)
    anywhere outside quotes and backticks (`QUOTED`: an example of the text the code reads names
    no choice of its own); it is in the shape when its first line reads `# <what we do>, not <the
    alternative>: <why>` (`DECISION_SHAPE`). A comment that only describes what something does
    in place of another is held to the shape too: one way of naming an alternative reads best."""
    bench = package.parent.parent / "bench"
    files = {**modules(package), **{f"bench/{p.name}": p for p in sorted(bench.glob("*.py"))}}
    found = []
    for name, path in files.items():
        for line, block in _comment_blocks(path.read_text("utf-8")):
            words = QUOTED.sub(" ", " ".join(block))
            if ALTERNATIVE.search(words) and not DECISION_SHAPE.match(block[0]):
                found.append(f"{name}:{line}")
    return found


def decision_report(package: Path = PACKAGE) -> str:
    """The decision comments out of the shape docs/development.md gives, one line each."""
    found = decision_comments(package)
    return "\n".join(
        [f"decision comments not in the shape: {len(found)} (target 0)"]
        + [f"  {where}" for where in found]
    )


def percentile(values: list[int], share: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def _listed(out: list[str], heading: str, items) -> None:
    """A figure's line, then each item it counts on a line of its own, indented."""
    out.append(heading)
    out += [f"  {item}" for item in items]


def report(package: Path = PACKAGE) -> str:
    lines_by_module = sizes(package)
    per_folder: dict[str, int] = defaultdict(int)
    for path in modules(package).values():
        if path.name != "__init__.py":
            per_folder[str(path.parent.relative_to(package.parent))] += 1
    values = list(lines_by_module.values())
    out = [f"modules: {len(values)} (without __init__.py)"]
    out += [f"  {folder}/: {count}" for folder, count in sorted(per_folder.items())]
    out.append(
        f"module lines: median {statistics.median(values):.0f}, p90 {percentile(values, 0.9)}, "
        f"max {max(values)} ({max(lines_by_module, key=lines_by_module.get)})"
    )
    top = converge_top_level(package)
    out.append(f"converge/ top-level modules: {top} (target ≤ {CONVERGE_TOP_LIMIT})")
    big = over_limit(package)
    out.append(f"modules over {MODULE_LINE_LIMIT} lines: {len(big)}")
    out += [f"  {name}: {n}" for name, n in big.items()]
    parsers = argv_parsers(package)
    _listed(out, f"hand-written command-line parsers: {len(parsers)}", parsers)
    readers = argv_readers(package)
    _listed(out, f"modules outside the command table reading sys.argv: {len(readers)}", readers)
    if (package.parent.parent / ".git").exists():
        outside = outside_references(package.parent.parent)
        total = sum(sum(files.values()) for files in outside.values())
        files = set().union(*outside.values())
        out.append(f"references to files outside the repository: {total} in {len(files)} files")
        for label, by_file in outside.items():
            out.append(f"  {label}: {sum(by_file.values())} in {len(by_file)} files")
    helpers, inline = text_folding(package)
    by_module: dict[str, list[str]] = defaultdict(list)
    for name, module in helpers.items():
        by_module[module].append(name.removeprefix(module + "."))
    out.append(
        f"text-folding helper modules (functions returning text through .casefold() or "
        f"unicodedata.normalize): {len(by_module)} (target 1, {FOLDING_MODULE})"
    )
    out += [f"  {module}: {', '.join(names)}" for module, names in sorted(by_module.items())]
    _listed(out, f"functions folding text inline, without a helper: {len(inline)}", inline)
    sites = fold_sites(package)
    _listed(out, f"fold calls outside {FOLDING_MODULE}: {len(sites)}", sites)
    yaml_sites = yaml_importers(package)
    _listed(
        out,
        f"modules importing a YAML library outside {YAML_MODULE}: "
        f"{len({site.rsplit(':', 1)[0] for site in yaml_sites})} (target 0)",
        yaml_sites,
    )
    out.append(
        f"named YAML readers and writers ({YAML_MODULE}): {', '.join(yaml_readers(package))}"
    )
    splitters = tokenisers(package)
    out.append(
        f"tokeniser modules (functions splitting text with a word pattern): {len(splitters)} "
        f"(target 1, {WORDS_MODULE})"
    )
    out += [f"  {module}: {', '.join(names)}" for module, names in splitters.items()]
    estimates = token_estimates(package)
    _listed(out, f"token estimates outside {TOKENS_MODULE}: {len(estimates)} (target 0)", estimates)
    long = long_functions(package)
    out.append(f"functions over {FUNCTION_LINE_LIMIT} lines: {len(long)}")
    out += [f"  {where} ({n} lines)" for where, n in long.items()]
    private = private_imports(package)
    _listed(out, f"imports of private CPython modules: {len(private)}", private)
    for label, keys in registries(package).items():
        out.append(f"{label}: {len(keys)} registered ({', '.join(keys)})")
    classes = rule_classes(package)
    _listed(out, f"classes in the validator's rule modules: {len(classes)}", classes)
    upward = upward_imports(package)
    _listed(out, f"imports running up the layers: {len(upward)}", upward)
    groups = cycles(package)
    out.append(f"import cycles: {len(groups)}")
    out += [f"  {' -> '.join(group)}" for group in groups]
    comments = prose(package)
    out.append(
        f"comment lines: {comments['comment_lines']}, mean {comments['mean_length']:.0f} characters"
    )
    out.append(f"comment blocks over {COMMENT_BLOCK_LIMIT} lines: {len(comments['long_blocks'])}")
    out += [f"  {where}" for where in comments["long_blocks"]]
    out.append(f"comments and docstrings carrying a timing: {len(comments['figures'])}")
    out += [f"  {where}" for where in comments["figures"]]
    out.append(decision_report(package))
    return "\n".join(out)


if __name__ == "__main__":
    measured = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else PACKAGE
    print(report(measured))
