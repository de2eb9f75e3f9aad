"""docs/cli.md is generated from the typer app by docs/cli.py: the page on disk is what the
generator writes now, and what `cmem … --help` prints in an 80-column terminal."""

import importlib.util
import re

import pytest

from support import REPO, run_entry

PAGE = REPO / "docs" / "cli.md"


@pytest.fixture(scope="module")
def generator():
    spec = importlib.util.spec_from_file_location("cli_reference", REPO / "docs" / "cli.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_command_reference_is_generated_from_the_app_and_not_stale(generator, monkeypatch):
    # the caller's terminal is no part of the page: a wide one, with colour asked for
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert PAGE.read_text("utf-8") == generator.render(), (
        "docs/cli.md is stale: run python docs/cli.py"
    )
    assert generator.main(["--check"]) == 0


def test_the_reference_holds_every_command_and_sub_command_of_the_table(generator):
    headings = re.findall(r"^#{2,4} (cmem(?: [\w-]+)*)$", PAGE.read_text("utf-8"), re.MULTILINE)
    assert headings == [
        "cmem" + "".join(f" {w}" for w in path) for path in generator.command_paths()
    ]
    for group, sub in (("archive", "apply"), ("hook", "install"), ("hook", "run")):
        assert f"cmem {group} {sub}" in headings
    assert {"cmem init", "cmem converge", "cmem recall", "cmem agent-instructions"} <= set(headings)


@pytest.mark.parametrize("path", [(), ("converge",), ("hook", "install")])
def test_the_page_says_what_the_real_command_prints(generator, path):
    """Through the installed entry (`cmem.cli`) in an 80-column terminal."""
    code, out, err, _ = run_entry("cmem.cli", [*path, "--help"], env=generator.HELP_ENV)
    assert code == 0, err
    assert out.strip("\n") == generator.help_text(path)
    block = f"```\n{generator.help_text(path)}\n```"
    assert block in PAGE.read_text("utf-8")


def test_check_mode_fails_on_a_stale_page(generator, tmp_path, monkeypatch, capsys):
    stale = tmp_path / "cli.md"
    stale.write_text(PAGE.read_text("utf-8").replace("Show this message and exit.", "Help."))
    monkeypatch.setattr(generator, "PAGE", stale)
    assert generator.main(["--check"]) == 1
    assert "stale: run python docs/cli.py" in capsys.readouterr().err
    assert generator.main([]) == 0 and stale.read_text("utf-8") == PAGE.read_text("utf-8")
