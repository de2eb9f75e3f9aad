"""One command line: every command the light entry reads (`cmem/command_line.py`) is held to the
typer command of the same name — each option exists there, a flag as a flag, an option with a
value as one, each short form as that option's, the positional words as its arguments — so a
command line the light entry accepts is one typer accepts, and means the same."""

from __future__ import annotations

import pytest
import typer.main

from cmem import command_line
from cmem.commands.app import app


def typer_command(words: tuple[str, ...]):
    """The click command typer builds for `words` (typer may carry its own copy of click, so its
    classes are told by what they hold)."""
    command = typer.main.get_command(app)
    for word in words:
        assert hasattr(command, "commands"), words
        command = command.commands[word]
    return command


def options_of(command) -> dict:
    return {
        opt: param
        for param in command.params
        if param.param_type_name == "option"
        for opt in param.opts
    }


@pytest.mark.parametrize("words", list(command_line.COMMANDS), ids=" ".join)
def test_every_light_option_is_the_typer_commands(words):
    grammar = command_line.COMMANDS[words]
    command = typer_command(words)
    options = options_of(command)
    for flag in grammar.get("flags", ()):
        assert flag in options and options[flag].is_flag, (words, flag)
    for value in grammar.get("values", ()):
        assert value in options and not options[value].is_flag, (words, value)
    for short, long in grammar.get("aliases", {}).items():
        assert options[short] is options[long], (words, short)
    assert command_line.VAULT in options and not options[command_line.VAULT].is_flag
    arguments = [p for p in command.params if p.param_type_name == "argument"]
    positionals = grammar.get("positionals", 0)
    if positionals is None:
        assert len(arguments) == 1 and arguments[0].nargs == -1, words
    else:
        assert sum(a.nargs for a in arguments) == positionals, words


def test_the_global_flags_are_the_apps():
    root = options_of(typer.main.get_command(app))
    for flag in command_line.GLOBAL_FLAGS:
        assert flag in root and root[flag].is_flag
    assert command_line.VAULT in root


@pytest.mark.parametrize(
    "argv, words, expected",
    [
        (["status", "--json"], ("status",), {"json": True, "rescan": False}),
        (["--no-color", "status", "--vault=v"], ("status",), {"vault": "v", "no_color": True}),
        (["status", "--no-color"], ("status",), {"no_color": True}),  # hoisted, as the app does
        (["recall", "uv", "pnpm", "-n", "3"], ("recall",), {"args": ["uv", "pnpm"]}),
        (["recall", "uv", "--limit=4"], ("recall",), {"limit": ["4"]}),
        (["hook", "run", "SessionEnd", "--agent", "codex"], ("hook", "run"), {"agent": ["codex"]}),
        (["context", "--topic", "--json"], ("context",), {"topic": ["--json"], "json": False}),
    ],
)
def test_the_parser_reads_as_click_reads(argv, words, expected):
    request = command_line.parse(argv, words)
    assert request is not None
    for key, value in expected.items():
        assert request[key] == value, key


@pytest.mark.parametrize(
    "argv, words",
    [
        (["status", "--verbose"], ("status",)),  # typer says the usage error
        (["--json", "status"], ("status",)),  # a command's option before the command
        (["status", "extra"], ("status",)),
        (["scan"], ("status",)),
        (["status", "--vault", ""], ("status",)),
        (["status", "--vault"], ("status",)),  # no value: click says so
        (["recall", "uv", "-n=3"], ("recall",)),  # click reads "=3" as the value
        (["hook", "run"], ("hook", "run")),  # typer says EVENT is missing... or the caller does
        (["hook", "status"], ("hook", "run")),
    ],
)
def test_what_the_table_does_not_name_goes_to_typer(argv, words):
    request = command_line.parse(argv, words)
    assert request is None or (words == ("hook", "run") and request["args"] == [])
