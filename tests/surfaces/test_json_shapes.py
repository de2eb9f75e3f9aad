"""Every command's `--json` keeps the field names docs/design.md §11 makes stable for agents and
scripts (fields may be added, never renamed or dropped)."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from cmem.cli import app
from support import REPO

runner = CliRunner()

# docs/design.md §11, field by field: {command: {json path: required names}}; "[]" is every list
# item.
STABLE = {
    "status": {
        "": {"vault", "layers", "pending", "last_pass", "due", "staged_archive"},
        "layers": {"divergent", "resident", "situational", "archive"},
        "layers.*": {"notes", "tokens"},
        "pending": {"notes", "signals"},
        "pending.signals": {"correction", "preference", "decision", "recurring"},
        "last_pass": {"id", "time", "commit"},
        "due": {"due", "reason"},
    },
    "scan": {
        "": {"signals", "deferred"},
        "signals[]": {"note", "line", "class", "priority", "cue", "excerpt"},
        "deferred[]": {"note", "line", "reason"},
    },
    "converge": {
        "": {
            "status",
            "pass",
            "commit",
            "changed",
            "converged",
            "deferred",
            "staged",
            "warnings",
            "errors",
        },
        "deferred[]": {"note", "reason"},
    },
    "context": {
        "": {"resident", "situational", "index", "pending", "tokens"},
        "resident[]": {"path", "content"},
        "situational[]": {"path", "content"},
        "index[]": {"path", "summary", "last_read"},
        "pending[]": {"note", "signals"},
    },
    "recall": {
        "": {"results"},
        "results[]": {"path", "score", "snippet", "layer"},
    },
    "archive list": {
        "": {"staged"},
        "staged[]": {"note", "target", "ticked", "state"},
    },
}

# Lists the sample vault's run may leave empty (nothing to check there, not a missing field).
MAY_BE_EMPTY = {("converge", "deferred[]")}

COMMANDS = {
    "status": ["status"],
    "scan": ["scan"],
    "converge": ["converge", "--engine", "builtin", "--yes"],
    "context": ["context", "--topic", "找工作", "--budget", "1700"],
    "recall": ["recall", "实习"],
    "archive list": ["archive", "list"],
}


def _values(data, path: str) -> list:
    """The objects at a dotted path; `x[]` is every item of list x, `*` every value of a mapping."""
    values = [data]
    for part in filter(None, path.split(".")):
        found = []
        for value in values:
            if part == "*":
                found += list(value.values())
            elif part.endswith("[]"):
                found += value[part[:-2]]
            else:
                found.append(value[part])
        values = found
    return values


def _run(sample_vault, command: str) -> dict:
    args = COMMANDS[command]
    if command == "converge" and "--yes" not in _options(args[0]):
        args = [a for a in args if a != "--yes"]
    if command == "archive list":  # a pass stages its notes, so there are lines to list
        _run(sample_vault, "converge")
    result = runner.invoke(
        app, [*args, "--vault", str(sample_vault), "--json"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def _options(command: str) -> set[str]:
    import typer

    group = typer.main.get_command(app)
    found = group.get_command(typer.Context(group, info_name="cmem"), command)
    return {opt for param in found.params for opt in getattr(param, "opts", [])}


@pytest.mark.parametrize("command", sorted(STABLE))
def test_json_keeps_the_spec_field_names(sample_vault, command):
    data = _run(sample_vault, command)
    for path, names in STABLE[command].items():
        values = _values(data, path)
        assert values or (command, path) in MAY_BE_EMPTY, (
            f"`cmem {command} --json` has nothing at {path or 'the top'} to check"
        )
        for value in values:
            if value is None and path == "last_pass":
                continue  # null before the first pass
            assert isinstance(value, dict) and names <= set(value), (
                f"`cmem {command} --json` {path or 'top'}: missing {names - set(value)}"
            )


def test_value_meanings(sample_vault):
    scan = _run(sample_vault, "scan")
    assert all(
        s["class"] in ("correction", "preference", "decision", "recurring")
        and 1 <= s["priority"] <= 4
        for s in scan["signals"]
    )
    converge = _run(sample_vault, "converge")
    assert converge["status"] in ("applied", "dry-run", "nothing", "busy", "failed")
    staged = _run(sample_vault, "archive list")["staged"]
    assert all(
        line["state"]
        in ("ready", "changed", "waiting", "uncited", "missing", "unparsed", "refused")
        and isinstance(line["ticked"], bool)
        for line in staged
    )
    recall = _run(sample_vault, "recall")["results"]
    assert all(
        r["layer"] in ("resident", "situational", "archive") and isinstance(r["score"], float)
        for r in recall
    )


def test_the_field_names_are_the_design_docs():
    """The names above are checked against docs/design.md §11 itself, so the two cannot drift
    apart silently."""
    text = (REPO / "docs" / "design.md").read_text("utf-8")
    section = text[text.index("## §11 JSON output") : text.index("## §12 ")]
    quoted = set(re.findall(r'["`]([a-z_]+)["`]', section))
    for command, paths in STABLE.items():
        assert f"cmem {command} --json" in section
        for names in paths.values():
            assert names <= quoted, names - quoted
