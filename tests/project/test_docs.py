"""Every command appears in the README and has help text; the README's test command is the one
CI runs."""

import re

import typer

from cmem.cli import app
from support import REPO


def _commands():
    group = typer.main.get_command(app)
    context = typer.Context(group, info_name="cmem")
    for name in sorted(group.list_commands(context)):
        command = group.get_command(context, name)
        yield name, command
        for sub_name, sub in sorted(getattr(command, "commands", {}).items()):
            yield f"{name} {sub_name}", sub


def test_every_command_is_in_the_readme_with_help():
    readme = (REPO / "README.md").read_text("utf-8")
    names = []
    for name, command in _commands():
        names.append(name)
        assert f"cmem {name}" in readme, f"`cmem {name}` is not documented in README.md"
        assert (command.help or command.short_help or "").strip(), f"`cmem {name}` has no help text"
    assert {"init", "status", "scan", "note", "context", "doctor", "converge", "demo"} <= set(names)


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text("utf-8")
    ci = (REPO / ".ci" / "run").read_text("utf-8")
    assert "python -m pytest -q" in readme and re.search(r"^python -m pytest -q$", ci, re.MULTILINE)
    assert "venv" in ci
