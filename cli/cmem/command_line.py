"""The command line the light entry reads, as data, and the one parser of it.

`cmem.fast` answers some commands before typer is imported (from a stored result, or running
`sync`, `scan`, a background spawn and the agent hooks' `hook run` without the command table).
Each reads its words here; anything the table does not name hands the command line to typer,
which says every usage error. `tests/surfaces/test_command_line.py` holds every entry to the
typer command of the same name (each option exists there, a flag as a flag, a value as a value),
so the two command lines cannot drift. Stdlib only: the light paths import it.
"""

from __future__ import annotations

# Written before the command or after it (the app hoists them: `commands/app.py`).
GLOBAL_FLAGS = ("--no-color",)
# Every light command takes `--vault V` (or `--vault=V`) wherever it stands; the last one wins.
VAULT = "--vault"

# command words → flags, options taking a value, short forms, positional words (None: any number)
COMMANDS: dict[tuple[str, ...], dict] = {
    ("status",): {"flags": ("--json", "--rescan")},
    ("scan",): {"flags": ("--json", "--rescan")},
    ("sync",): {"flags": ("--json",)},
    ("context",): {"flags": ("--json",), "values": ("--topic", "--budget")},
    ("recall",): {
        "flags": ("--archive", "--json"),
        "values": ("--limit",),
        "aliases": {"-n": "--limit"},
        "positionals": None,
    },
    # the light path runs only the background spawn (every shell exit) and --emit-prompt's
    # stored answer; a pass itself runs through typer
    ("converge",): {
        "flags": (
            "--emit-prompt",
            "--propose",
            "--allow-shrink",
            "--quiet",
            "--if-due",
            "--scheduled",
            "--background",
            "--json",
        ),
        "values": ("--engine", "--llm", "--only"),
        "aliases": {"-q": "--quiet"},
    },
    ("hook", "run"): {
        "flags": ("--detached",),
        "values": ("--agent", "--transcript", "--session-id", "--cwd"),
        "positionals": 1,
    },
}


# Every number a command takes, with its bounds (inclusive): typer's options, the light paths
# and the MCP tools read them here, so no door lets through what another refuses.
BOUNDS: dict[str, tuple[float, float]] = {
    "context --budget": (100, 1_000_000),  # tokens
    "converge --budget": (500, 1_000_000),  # tokens
    "recall --limit": (1, 1_000),
    "log --limit": (1, 100_000),
    "watch --settle": (0.0, 86_400.0),  # seconds: a day at most
    "capture --since": (60.0, 3650 * 86_400.0),  # seconds: a minute to ten years
}


def out_of_bounds(key: str, value: float) -> str | None:
    """ "must be from LOW to HIGH, not VALUE" when `value` is outside `BOUNDS[key]` or is no
    finite number; None when it is within. Each door puts its own name for the option first."""
    low, high = BOUNDS[key]
    if value == value and low <= value <= high:  # NaN is no number: it fails the first test
        return None
    return f"must be from {_number(low)} to {_number(high)}, not {value!r}"


def _number(value: float) -> str:
    return f"{int(value):,}" if value == int(value) else str(value)


def parse(argv: list[str], words: tuple[str, ...]) -> dict | None:
    """`[--vault V] [--no-color] WORDS [OPTION …]` for the command `words` of the table, or None
    for anything else (then typer decides). A flag is kept as a bool under its name without `--`
    (`if-due`), an option's values as the list of them in order (`--opt V` or `--opt=V`, the
    value taken whatever it looks like, as click takes it), the positional words under "args"
    (after `--`, every word, even one that starts with `-`),
    the last `--vault` under "vault" (None: not given)."""
    grammar = COMMANDS[words]
    flags, values = grammar.get("flags", ()), grammar.get("values", ())
    aliases, positionals = grammar.get("aliases", {}), grammar.get("positionals", 0)
    request: dict = {
        "command": None,
        "vault": None,
        "no_color": False,
        "args": [],
        **{flag[2:]: False for flag in flags},
        **{option[2:]: [] for option in values},
    }
    matched = 0  # how many of the command's words were read
    args = list(argv)
    while args:
        arg = args.pop(0)
        name, equals, inline = arg.partition("=")
        if name == VAULT and (equals or args):  # `--vault=` is the empty vault, refused below
            request["vault"] = inline if equals else args.pop(0)
        elif arg in GLOBAL_FLAGS:
            request["no_color"] = True
        elif matched < len(words):
            if arg != words[matched]:
                return None
            matched += 1
        elif arg == "--":  # as click reads it: every word after it is positional
            if positionals is not None and len(request["args"]) + len(args) > positionals:
                return None
            request["args"] += args
            args = []
        elif aliases.get(arg, arg) in flags:
            request[aliases.get(arg, arg)[2:]] = True
        elif aliases.get(name, name) in values and (_inline(name, equals) or args):
            value = inline if _inline(name, equals) else args.pop(0)
            request[aliases.get(name, name)[2:]].append(value)
        elif not arg.startswith("-") and (
            positionals is None or len(request["args"]) < positionals
        ):
            request["args"].append(arg)
        else:
            return None
    if matched < len(words) or request["vault"] == "":
        return None
    request["command"] = words[0]
    return request


def _inline(name: str, equals: str) -> bool:
    """`--opt=V` carries its value; a short option's `-n=5` is not one click reads as 5."""
    return bool(equals) and name.startswith("--")
