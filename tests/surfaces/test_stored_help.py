"""A help page printed again from what typer printed for it last (`commands/stored_help.py`):
the same bytes, without typer, while nothing it was made from has changed; afresh otherwise."""

import os
import subprocess
import sys

import pytest

from cmem.commands.stored_help import is_help_line
from support import run_entry

HELP_LINES = [["--help"], ["-h"], ["status", "--help"], ["archive", "apply", "-h"]]


def _pages() -> dict:
    from cmem.cache_store import Kept
    from cmem.private import state_root

    return Kept(os.path.join(state_root(), "help.marshal"), "help-pages").read()


def _help(argv: list[str], **env: str) -> tuple[str, bool]:
    """(the page printed, whether typer printed it)."""
    code, out, err, modules = run_entry("cmem.cli", argv, env)
    assert code == 0, err
    return out, "typer" in modules


@pytest.mark.parametrize("argv", HELP_LINES)
def test_a_help_page_is_printed_again_as_typer_printed_it(argv):
    fresh, by_typer = _help(argv)
    assert by_typer and fresh.startswith("Usage: cmem")
    again, by_typer = _help(argv)
    assert again == fresh and not by_typer


def test_each_help_line_keeps_its_own_page():
    pages = {tuple(argv): _help(argv)[0] for argv in HELP_LINES}
    for argv in HELP_LINES:
        page, by_typer = _help(argv)
        assert page == pages[tuple(argv)] and not by_typer


def test_the_page_is_made_afresh_for_another_width():
    wide, _ = _help(["--help"], COLUMNS="120")
    narrow, by_typer = _help(["--help"], COLUMNS="60")
    assert by_typer and narrow != wide
    assert max(map(len, narrow.splitlines())) <= 60
    assert _help(["--help"], COLUMNS="60") == (narrow, False)


def test_a_changed_module_file_prints_the_page_afresh():
    """Every module file loaded when the page was printed is part of its key: cmem's command
    modules and typer's among them; one whose stat differs makes the next line a typer run."""
    page, _ = _help(["--help"])
    entry = next(iter(_pages().values()))
    paths = [path for path, _, _ in entry["files"]]
    for part in ("commands/reading.py", "commands/app.py", "typer/main.py"):
        assert any(path.replace(os.sep, "/").endswith(part) for path in paths), part
    _rewrite_pages(
        lambda files: [(p, m + 1 if p.endswith("reading.py") else m, s) for p, m, s in files]
    )
    again, by_typer = _help(["--help"])
    assert by_typer and again == page


@pytest.mark.parametrize(
    "damage", [b"", b"not marshal", b"cmem-kept-parts\n\x00\x00\x00\x00\x00\x00\x00\xff"]
)
def test_a_damaged_file_of_pages_is_a_typer_run(damage):
    page, _ = _help(["--help"])
    from cmem.private import state_root

    with open(os.path.join(state_root(), "help.marshal"), "wb") as handle:
        handle.write(damage)
    assert _help(["--help"]) == (page, True)
    assert _help(["--help"]) == (page, False)


def test_an_ascii_stream_prints_the_page_by_typer_every_time():
    """On a stream click re-wraps (ASCII), what typer prints passes the copy: nothing is kept,
    and every call is a typer run that prints the whole page."""
    first = _help(["--help"], PYTHONIOENCODING="ascii")
    assert first[1] and first[0].startswith("Usage: cmem")
    assert _help(["--help"], PYTHONIOENCODING="ascii") == first


def _help_into_a_closed_pipe() -> tuple[int, str]:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before cmem writes a byte
    code = "import sys; sys.argv = ['cmem', '--help']; from cmem.cli import main; main()"
    try:
        result = subprocess.run(
            [sys.executable, "-c", code], stdout=write_end, stderr=subprocess.PIPE, text=True
        )
    finally:
        os.close(write_end)
    return result.returncode, result.stderr


def test_a_reader_gone_ends_the_page_quietly_either_way():
    """`cmem --help | head -0`: exit 1 and nothing on stderr, from typer as from the stored page."""
    assert _help_into_a_closed_pipe() == (1, "")  # typer's run: nothing is kept
    _help(["--help"])
    assert _help(["--help"])[1] is False  # the page is stored now
    assert _help_into_a_closed_pipe() == (1, "")


@pytest.mark.parametrize(
    "entry",
    [
        {"text": 3, "setting": None, "files": []},
        "not a dict",
    ],
)
def test_a_stored_entry_of_another_shape_is_a_typer_run(entry):
    page, _ = _help(["--help"])
    from cmem.cache_store import Kept
    from cmem.private import state_root

    kept = Kept(os.path.join(state_root(), "help.marshal"), "help-pages")
    kept.write(dict.fromkeys(kept.read(), entry))
    assert _help(["--help"]) == (page, True)


def test_a_files_list_of_another_shape_is_a_typer_run():
    page, _ = _help(["--help"])
    _rewrite_pages(lambda files: [("only-two", 1)])
    assert _help(["--help"]) == (page, True)


def test_a_line_that_fails_keeps_no_page():
    code, _, err, _ = run_entry("cmem.cli", ["no-such-command", "--help"])
    assert code == 2 and "No such command" in err
    assert ("cmem", "no-such-command", "--help") not in _pages()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--help"], True),
        (["-h"], True),
        (["note", "some words", "--help"], True),
        (["archive", "apply", "--help"], True),
        ([], False),
        (["status"], False),
        (["note", "--", "--help"], False),  # text after `--`, not a flag
        (["--vault", "v", "--help"], False),  # an option before it: its value could be anything
        (["status", "--json", "--help"], False),
        (["", "--help"], False),
        (["a", "b", "c", "--help"], False),
        (["--help", "status"], False),
    ],
)
def test_what_a_help_line_is(args, expected):
    assert is_help_line(args) is expected


def _rewrite_pages(change_files) -> None:
    from cmem.cache_store import Kept
    from cmem.private import state_root

    kept = Kept(os.path.join(state_root(), "help.marshal"), "help-pages")
    pages = kept.read()
    for entry in pages.values():
        entry["files"] = change_files(entry["files"])
    kept.write(pages)


def test_no_help_page_depends_on_the_folder_it_is_asked_in(monkeypatch, tmp_path, sample_vault):
    """The stored page's key has no working folder: every page must read the same from a vault,
    from a folder inside one and from outside any (a default shown from the folder would be
    replayed stale)."""
    from typer.testing import CliRunner

    from cmem.commands.app import COMMANDS, app

    inside = sample_vault / "converged"
    pages: dict[str, set[str]] = {}
    for folder in (tmp_path, sample_vault, inside):
        monkeypatch.chdir(folder)
        for name in [None, *COMMANDS]:
            args = ["--help"] if name is None else [name, "--help"]
            result = CliRunner().invoke(app, args, prog_name="cmem")
            assert result.exit_code == 0, (args, result.output)
            pages.setdefault(str(name), set()).add(result.output)
    assert {name: len(seen) for name, seen in pages.items() if len(seen) > 1} == {}
