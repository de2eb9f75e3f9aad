"""A help page printed again from what typer printed for it last (`commands/stored_help.py`):
the same bytes, without typer, while nothing it was made from has changed; afresh otherwise."""

import os
import subprocess
import sys

import pytest

from cmem.commands.stored_help import is_help_line
from support import run_entry

HELP_LINES = [["--help"], ["-h"], ["status", "--help"], ["archive", "apply", "-h"]]


def _kept(argv: list[str]):
    """Where the page of `cmem ARGV` is kept (`run_entry` names the program `cmem`)."""
    from cmem.commands.stored_help import _kept as kept

    return kept(("cmem", *argv))


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
    entry = _kept(["--help"]).read()
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
    with open(_kept(["--help"]).path, "wb") as handle:
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
            [sys.executable, "-c", code],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
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
        {"line": ("cmem", "--help"), "text": 3, "setting": None, "files": []},
        "not a dict",
    ],
)
def test_a_stored_entry_of_another_shape_is_a_typer_run(entry):
    page, _ = _help(["--help"])
    _kept(["--help"]).write(entry)
    assert _help(["--help"]) == (page, True)


def test_another_lines_page_under_its_name_is_a_typer_run():
    """Pages are named by checksums of their lines: one found under another line's name (two
    sharing it) is never printed for it."""
    page, _ = _help(["--help"])
    _help(["status", "--help"])
    _kept(["--help"]).write(_kept(["status", "--help"]).read())
    assert _help(["--help"]) == (page, True)


def test_a_files_list_of_another_shape_is_a_typer_run():
    page, _ = _help(["--help"])
    _rewrite_pages(lambda files: [("only-two", 1)])
    assert _help(["--help"]) == (page, True)


def test_a_line_that_fails_keeps_no_page():
    code, _, err, _ = run_entry("cmem.cli", ["no-such-command", "--help"])
    assert code == 2 and "No such command" in err
    assert _kept(["no-such-command", "--help"]).read() == {}


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
    kept = _kept(["--help"])
    page = kept.read()
    page["files"] = change_files(page["files"])
    kept.write(page)


def test_a_state_folder_that_cannot_be_made_still_prints_the_page(tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    fresh, by_typer = _help(["--help"])
    for _ in range(2):
        assert _help(["--help"], XDG_STATE_HOME=str(blocked / "state")) == (fresh, True)
