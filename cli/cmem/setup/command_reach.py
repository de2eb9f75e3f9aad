"""Which files of the vault a model command can run: what `cmem trust` hashes with the command
(docs/design.md §4). A trusted command must never run a vault file that a later commit or sync
changed without asking again, so the command's words are read for every vault file they reach:

- a word (or an `--option=value`'s value) naming a file of the vault. A *program* — the command
  word (`./tools/m.sh`), what a shell, Python or another interpreter runs (`sh x`, `node x`,
  `source x`), a module run by `python -m pkg.mod` (`pkg/mod.py`, `pkg/mod/__main__.py`, the
  packages' `__init__.py`) or imported by `python -c` code, a file with a script's extension or
  its executable bit — may run the files beside it, so its whole folder is part of the trust
  (Python's byte-code caches aside), and so are the vault files its own text names or, for
  Python, imports. Any other file is *data*, hashed alone (`--config=tools/cfg.toml`).
- the words of a shell's `-c` script (`sh -c 'exec ./tools/m.sh'`, `bash -lc '…'`) and of its
  command substitutions, read as the command's own (`cd` into a vault folder followed).
- a link inside the vault is part of the trust by where it points.

Where the reach cannot be known the command is refused with the reason (`UnknownReach`), never
trusted blind: inline code of an interpreter other than Python (`node -e`), Python code that
loads or runs code other than by import statements (`__import__`, `importlib`, `exec`,
`subprocess`), a shell script that `eval`s or builds a path from a variable, a program at the
vault's root, in a dot-folder or a layer folder (notes that change every day sit beside it), a
program folder of more than `MAX_FILES` files.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import shlex
from pathlib import Path

from cmem.errors import CmemError
from cmem.vault.layers import Vault

MAX_FILES = 500  # files in a program's folder: beyond, a folder of its own is asked for
MAX_DEPTH = 8  # programs reached through programs
SCRIPT_EXTENSIONS = frozenset(
    ".sh .bash .zsh .ksh .fish .py .pyw .js .mjs .cjs .ts .mts .cts .rb .pl .pm .php .lua .r"
    " .ps1 .bat .cmd .tcl .awk .jl .exs .swift".split()
)
SHELLS = frozenset("sh bash zsh dash ksh mksh ash yash busybox".split())
PYTHON = re.compile(r"(?:python|pypy)(?:[0-9.]*)(?:\.exe)?")
# interpreters whose first word that is no option is the program they run; their inline code
INTERPRETERS = {
    "node": ("-e", "--eval", "-p", "--print"),
    "nodejs": ("-e", "--eval", "-p", "--print"),
    "deno": ("eval",),
    "bun": ("-e", "--eval", "-p", "--print"),
    "ruby": ("-e",),
    "perl": ("-e", "-E"),
    "php": ("-r",),
    "lua": ("-e",),
    "luajit": ("-e",),
    "rscript": ("-e",),
    "tsx": ("-e", "--eval"),
    "ts-node": ("-e", "--eval", "-p", "--print"),
    "osascript": ("-e",),
    "pwsh": ("-c", "-command", "-encodedcommand"),
    "powershell": ("-c", "-command", "-encodedcommand"),
    "awk": (),
    "gawk": (),
    "julia": ("-e", "--eval"),
    "elixir": ("-e", "--eval"),
}
# words that run the word after them (their own options skipped)
WRAPPERS = frozenset(
    "exec env nohup nice ionice timeout stdbuf time command builtin sudo doas setsid chrt taskset"
    " caffeinate xargs npx pnpx bunx uvx pipx uv poetry pipenv pdm hatch rye conda run".split()
)
SOURCES = frozenset({"source", "."})
SEPARATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", "{", "}", "!", "then", "do", "else"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_SUBSTITUTION = re.compile(r"\$\(([^()]*)\)|`([^`]*)`")
_PATH_TOKEN = re.compile(r"[\w@%+=:,.~/-]*[/.][\w@%+=:,.~/-]*")
# calls that load or run code other than by an import statement: Python code using one cannot be judged
_DYNAMIC_NAMES = frozenset({"__import__", "exec", "eval", "compile", "execfile", "breakpoint"})
_DYNAMIC_MODULES = frozenset({"importlib", "imp", "runpy", "subprocess", "pkgutil", "zipimport"})
_DYNAMIC_OS = re.compile(r"system|popen|exec\w*|spawn\w*|posix_spawn\w*|startfile")


class UnknownReach(CmemError):
    """A vault's model command whose reach into the vault cannot be known: never trusted."""


def command_reach(vault: Vault, command: str) -> dict[str, str]:
    """Every vault file `command` can run (by the rules above) with the sha256 of its content
    (of its target, for a link), sorted by path; `UnknownReach` when that cannot be known."""
    reach = _Reach(vault)
    reach.walk(_split(command, shell=False), 0)
    return dict(sorted(reach.files.items()))


def _split(text: str, shell: bool) -> list[str]:
    """The words of a command cmem runs itself (no shell: `;` is a word) or of a shell's script
    (its operators are words of their own)."""
    try:
        if not shell:
            return shlex.split(text)
        lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()")
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:
        return text.split()


class _Reach:
    def __init__(self, vault: Vault):
        self.vault = vault
        self.root = Path(vault.root).resolve()
        self.files: dict[str, str] = {}
        self.folders: set[Path] = set()
        self.programs: set[Path] = set()
        self.bases = [self.root]
        try:
            self.bases.append(Path.cwd())  # where the command runs: relative names from there too
        except OSError:
            pass

    # --- reading words ---------------------------------------------------------------------

    def walk(self, words: list[str], depth: int) -> None:
        """One command line's words: the command word and what it runs, then its arguments."""
        index, expect = 0, True
        while index < len(words):
            word = words[index]
            if word in SEPARATORS:
                index, expect = index + 1, True
                continue
            if not expect:
                self.named(word, depth)
                index += 1
                continue
            name = os.path.basename(word).lower()
            if _ASSIGNMENT.match(word) or name in WRAPPERS or word.startswith("-"):
                index += 1  # `FOO=1 cmd`, `env -i cmd`, `timeout 60 cmd`: the command is later
                continue
            expect = False
            index = self.command(name, word, words, index + 1, depth)

    def command(self, name: str, word: str, words: list[str], index: int, depth: int) -> int:
        """The command word `word` at `words[index - 1]`: what it runs; the index after it."""
        if name in SHELLS:
            return self.shell(words, index, depth)
        if PYTHON.fullmatch(name):
            return self.python(words, index, depth)
        if name in INTERPRETERS:
            return self.interpreter(name, words, index, depth)
        if name in SOURCES:
            return self.program_word(words, index, depth)
        if name == "eval":
            raise self.unknown(f"`{word}` runs text cmem cannot read before it runs")
        if name == "cd" and index < len(words):
            self.enter(words[index])
            return index + 1
        self.named(word, depth, program=True)
        return index

    def shell(self, words: list[str], index: int, depth: int) -> int:
        """`sh [options] -c SCRIPT [$0 …]` or `sh [options] FILE …`."""
        while index < len(words) and words[index].startswith(("-", "+")):
            option = words[index]
            index += 1
            if option in ("-o", "+o", "-O", "+O") and index < len(words):
                index += 1
            elif not option.startswith("--") and "c" in option and index < len(words):
                self.script(words[index], depth)
                return index + 1
        return self.program_word(words, index, depth)

    def script(self, text: str, depth: int) -> None:
        """A shell's `-c` script: its words and its command substitutions' as the command's."""
        if depth > MAX_DEPTH:
            raise self.unknown("its shell scripts nest too deep to follow")
        for match in _SUBSTITUTION.finditer(text):
            self.script(match.group(1) if match.group(1) is not None else match.group(2), depth + 1)
        words = _split(_SUBSTITUTION.sub(" ", text), shell=True)
        for position, word in enumerate(words):
            if "$" in word and ("/" in word or (position and words[position - 1] in SOURCES)):
                raise self.unknown(f"its shell script builds a path from a variable (`{word}`)")
        saved = list(self.bases)
        try:
            self.walk(words, depth + 1)
        finally:
            self.bases = saved

    def python(self, words: list[str], index: int, depth: int) -> int:
        """`python [options] (-m MODULE | -c CODE | FILE | -) …`."""
        while index < len(words) and words[index].startswith("-") and words[index] != "-":
            option = words[index]
            index += 1
            if option == "-m" or (option.startswith("-m") and len(option) > 2):
                module = option[2:] or (words[index] if index < len(words) else "")
                self.module(module, self.bases, depth)
                return index + (0 if option[2:] else 1)
            if option == "-c" or (option.startswith("-c") and len(option) > 2):
                code = option[2:] or (words[index] if index < len(words) else "")
                self.python_code(code, self.bases, depth, inline=True)
                return index + (0 if option[2:] else 1)
            if option in ("-W", "-X", "--check-hash-based-pycs") and index < len(words):
                index += 1
        return self.program_word(words, index, depth)

    def interpreter(self, name: str, words: list[str], index: int, depth: int) -> int:
        """`node [options] FILE …` and the like; their inline code cannot be judged."""
        inline = INTERPRETERS[name]
        if name in ("deno", "bun") and index < len(words) and words[index] == "run":
            index += 1
        while index < len(words) and words[index].startswith("-"):
            option = words[index].lower()
            if option.split("=", 1)[0] in inline or (name == "deno" and option == "eval"):
                raise self.unknown(
                    f"`{name} {words[index]}` runs inline code, which may load any file of the vault"
                )
            self.named(words[index], depth, program=True)  # `-r ./hook.js`, `--import=./x.mjs`
            index += 1
        if index < len(words) and words[index].lower() in inline:
            raise self.unknown(f"`{name} {words[index]}` runs inline code cmem cannot follow")
        return self.program_word(words, index, depth)

    def program_word(self, words: list[str], index: int, depth: int) -> int:
        if index < len(words):
            self.named(words[index], depth, program=True)
            return index + 1
        return index

    def enter(self, folder: str) -> None:
        """`cd FOLDER` in a shell script: later relative names are looked up from there too."""
        for base in list(self.bases):
            path = (base / folder).resolve() if not os.path.isabs(folder) else Path(folder)
            if path.is_dir():
                self.bases.insert(0, path)
                return

    # --- Python ----------------------------------------------------------------------------

    def module(self, dotted: str, bases: list[Path], depth: int) -> None:
        """A module `python -m` runs or code imports: its file, its `__main__.py` and its
        packages' `__init__.py`, wherever Python would find them in the vault."""
        parts = [part for part in dotted.split(".") if part]
        if not parts or not all(part.isidentifier() for part in parts):
            return
        for base in bases:
            for end in range(1, len(parts) + 1):
                stem = base.joinpath(*parts[:end])
                for candidate in (stem.with_name(stem.name + ".py"), stem / "__init__.py"):
                    self.program_path(candidate, depth)
                if end == len(parts):
                    self.program_path(stem / "__main__.py", depth)

    def python_code(self, code: str, bases: list[Path], depth: int, inline: bool) -> None:
        """The vault modules Python `code` imports; inline code that loads or runs code any
        other way cannot be judged (a file's own code is covered by its folder)."""
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError):
            if inline:
                raise self.unknown("its `python -c` code does not parse") from None
            return
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.module(alias.name, bases, depth)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                self.module(node.module, bases, depth)
                for alias in node.names:
                    self.module(f"{node.module}.{alias.name}", bases, depth)
            if inline and _loads_dynamically(node):
                raise self.unknown(
                    "its `python -c` code loads or runs code other than by an import statement"
                )

    # --- files -----------------------------------------------------------------------------

    def named(self, word: str, depth: int, program: bool = False) -> None:
        """A word that may name a vault file (itself, or the value of `--option=value`)."""
        for name in (word, word.split("=", 1)[1] if word.startswith("-") and "=" in word else ""):
            if not name or name.startswith("-") or "{prompt_file}" in name:
                continue
            path = Path(name).expanduser()
            for candidate in [path] if path.is_absolute() else [b / path for b in self.bases]:
                self.file(candidate, depth, program)

    def program_path(self, candidate: Path, depth: int) -> None:
        self.file(candidate, depth, program=True)

    def file(self, candidate: Path, depth: int, program: bool) -> None:
        inside = self.inside(candidate)
        if inside is None:
            return
        rel, resolved = inside
        if resolved is None:  # a link in the vault that leads out of it: trusted by its target
            self.files[rel] = _digest(("link -> " + os.readlink(self.root / rel)).encode())
            return
        if not resolved.is_file():
            return
        if program or resolved.suffix.lower() in SCRIPT_EXTENSIONS or os.access(resolved, os.X_OK):
            self.program(resolved, rel, depth)
        else:
            self.files[rel] = _file_digest(resolved)

    def inside(self, candidate: Path) -> tuple[str, Path | None] | None:
        """(its path in the vault, its resolved path or None for a link out) when `candidate`
        is in the vault, by its own path or by where it resolves."""
        try:
            resolved = candidate.resolve()
        except (OSError, RuntimeError):
            return None
        if resolved.is_relative_to(self.root):
            return resolved.relative_to(self.root).as_posix(), resolved
        lexical = Path(os.path.normpath(candidate.absolute()))
        if lexical.is_relative_to(self.root) and os.path.islink(lexical):
            return lexical.relative_to(self.root).as_posix(), None
        return None

    def program(self, path: Path, rel: str, depth: int) -> None:
        """A program of the vault: its folder, and what its text names or imports."""
        if path in self.programs:
            return
        if depth > MAX_DEPTH:
            raise self.unknown("its scripts run scripts too deep to follow")
        self.programs.add(path)
        folder = path.parent
        problem = self.folder_problem(folder)
        if problem:
            raise self.unknown(f"it runs {rel}, {problem}")
        self.hash_folder(folder, rel)
        try:
            text = path.read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            return  # a binary program: its folder is what can be known
        bases = [folder, *self.bases]
        if path.suffix.lower() in (".py", ".pyw"):
            self.python_code(text, bases, depth + 1, inline=False)
        saved = self.bases
        self.bases = bases
        try:
            for token in set(_PATH_TOKEN.findall(text)):
                if token.strip("./") and len(token) < 300:
                    self.named(token, depth + 1, program=False)
        finally:
            self.bases = saved

    def folder_problem(self, folder: Path) -> str | None:
        rel = folder.relative_to(self.root).as_posix() if folder != self.root else ""
        if rel == "":
            return "and a script at the vault's root sits beside notes that change every day"
        if rel.split("/", 1)[0].startswith("."):
            return f"and a script in {rel}/ sits beside files cmem or git rewrite"
        if self.vault.layer_of(rel + "/-.md") is not None:
            return f"and a script in {rel}/ sits beside notes or memory that change every day"
        return None

    def hash_folder(self, folder: Path, rel: str) -> None:
        if folder in self.folders:
            return
        self.folders.add(folder)
        count = 0
        for current, dirs, names in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in names:
                count += 1
                if count > MAX_FILES:
                    raise self.unknown(
                        f"it runs {rel}, whose folder holds more than {MAX_FILES} files"
                    )
                path = Path(current) / name
                key = path.relative_to(self.root).as_posix()
                if os.path.islink(path):
                    self.files[key] = _digest(("link -> " + os.readlink(path)).encode())
                elif path.is_file():
                    self.files[key] = _file_digest(path)

    def unknown(self, reason: str) -> UnknownReach:
        return UnknownReach(reason)


def _loads_dynamically(node: ast.AST) -> bool:
    if isinstance(node, ast.Name):
        return node.id in _DYNAMIC_NAMES
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        names = [alias.name for alias in node.names]
        module = node.module if isinstance(node, ast.ImportFrom) else None
        return any(name.split(".")[0] in _DYNAMIC_MODULES for name in [*names, module or ""])
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        if node.value.id in _DYNAMIC_MODULES:
            return True
        if node.value.id == "os" and _DYNAMIC_OS.fullmatch(node.attr):
            return True
        return node.value.id == "sys" and node.attr in ("path", "meta_path", "path_hooks")
    return False


def _file_digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return _digest(b"unreadable")


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
