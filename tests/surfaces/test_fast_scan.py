"""A cold `cmem scan` (nothing stored answers it) runs in cmem.fast without typer: it must print,
exit and store exactly what the full CLI does, and hand everything else to the full CLI."""

from __future__ import annotations

import os

import pytest

from cmem import fast
from support import run_entry, settle


def _drop_stored(vault_root) -> None:
    """Forget the stored results and scan entries: the next scan is cold."""
    from cmem.reading.stored_results import results_dir
    from cmem.vault.layers import open_vault

    machine = open_vault(vault_root).machine_dir
    for folder in (results_dir(), str(machine)):
        if os.path.isdir(folder):
            for name in os.listdir(folder):
                if name.endswith(".marshal"):
                    os.unlink(os.path.join(folder, name))


@pytest.mark.parametrize(
    "tail",
    [
        [],
        ["--json"],
        ["--no-color"],
        ["--rescan"],
    ],
)
def test_a_cold_scan_prints_what_the_full_cli_prints_without_typer(sample_vault, tail):
    settle(sample_vault)
    answers = []
    for module in ("cmem.cli", "cmem.fast"):
        _drop_stored(sample_vault)
        answers.append(run_entry(module, ["scan", "--vault", str(sample_vault), *tail]))
    (full_code, full_out, full_err, _), (code, out, err, modules) = answers
    assert (code, out, err) == (full_code, full_out, full_err)
    assert code == 0 and ("cue line" in out or "signals" in out)
    assert "cmem.scan.scanner" in modules  # it scanned ...
    assert not {"typer", "cmem.cli", "rich"} & modules  # ... without the typer CLI
    assert "typing" not in modules  # which cmem's modules import for annotations alone
    # what it stored answers the next call: the scanner is not even imported then
    again = run_entry("cmem.fast", ["scan", "--vault", str(sample_vault), *tail])
    if "--rescan" not in tail:
        assert again[:3] == (0, out, "") and "cmem.scan.scanner" not in again[3]


def test_a_cold_scan_through_cmem_vault_and_the_global_vault_option(sample_vault):
    settle(sample_vault)
    _drop_stored(sample_vault)
    full = run_entry("cmem.cli", ["scan", "--json"], {"CMEM_VAULT": str(sample_vault)})
    _drop_stored(sample_vault)
    light = run_entry("cmem.fast", ["scan", "--json"], {"CMEM_VAULT": str(sample_vault)})
    assert light[:3] == full[:3] and "typer" not in light[3]
    _drop_stored(sample_vault)
    moved = run_entry("cmem.fast", ["--vault", str(sample_vault), "scan", "--json"])
    assert moved[:3] == full[:3]


@pytest.mark.parametrize("as_json", [False, True])
def test_a_scan_outside_a_vault_is_reported_by_the_full_cli(tmp_path, as_json):
    argv = ["scan", "--vault", str(tmp_path / "nowhere"), *(["--json"] if as_json else [])]
    full = run_entry("cmem.cli", argv)
    light = run_entry("cmem.fast", argv)
    assert light[:3] == full[:3]
    assert light[0] != 0 and "typer" in light[3]  # handed over: the full CLI said it


def test_only_a_plain_scan_takes_the_light_path(sample_vault):
    for argv in (
        ["scan", "--help"],
        ["scan", "--verbose"],
        ["scan", "extra"],
        ["status"],
        ["scan", "--vault", ""],
    ):
        assert fast.run_scan(argv) is None, argv
    help_light = run_entry("cmem.fast", ["scan", "--help"])
    help_full = run_entry("cmem.cli", ["scan", "--help"])
    assert help_light[:3] == help_full[:3] and "--json" in help_full[1]


def test_a_cold_scan_imports_no_writer_machinery(sample_vault):
    """A scan writes only its caches (cmem.cache_store): tempfile (shutil, random), the step
    layer and the unattended trigger (subprocess) stay unimported on its path."""
    settle(sample_vault)
    _drop_stored(sample_vault)
    code, out, err, modules = run_entry("cmem.fast", ["scan", "--vault", str(sample_vault)])
    assert code == 0 and "cmem.scan.scanner" in modules, err
    assert not {"tempfile", "shutil", "random", "cmem.steps.runner"} & modules
    # nor the unattended trigger: the key takes its record's name from triggers/due.py
    assert not {"cmem.triggers.if_due", "subprocess"} & modules


def test_a_cold_scan_ends_without_the_interpreters_teardown(sample_vault):
    """Printed and stored, a scan run here leaves at once (`fast._leave`): the teardown would
    only free, one by one, what the scan made. What it printed and stored is all there."""
    import subprocess
    import sys

    settle(sample_vault)
    _drop_stored(sample_vault)
    full = run_entry("cmem.cli", ["scan", "--vault", str(sample_vault)])
    _drop_stored(sample_vault)
    probe = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('torn down', file=sys.stderr))\n"
        f"sys.argv = ['cmem', 'scan', '--vault', {str(sample_vault)!r}]\n"
        "sys.stderr.write('said without a line end')\n"
        "from cmem.fast import main\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, full[1])
    assert done.stderr == "said without a line end"  # flushed, and no exit handler ran
    again = run_entry("cmem.fast", ["scan", "--vault", str(sample_vault)])
    assert again[:3] == (0, full[1], "") and "cmem.scan.scanner" not in again[3]  # stored
    # a scan handed to the full CLI still ends as the CLI ends
    moved = subprocess.run(
        [sys.executable, "-c", probe.replace("'scan',", "'scan', '--verbose',")],
        capture_output=True,
        text=True,
    )
    assert "torn down" in moved.stderr


@pytest.mark.parametrize("module", ["cmem.fast", "cmem.cli"])
def test_an_install_without_a_dependency_says_which_in_one_sentence(sample_vault, module):
    """An install made before a dependency was added (`git pull` over an editable install): the
    first command that needs it says which one and how to get it, not a traceback. Here the cue
    index's pyahocorasick, which every cold scan needs; any other failed import is a bug and
    keeps its traceback."""
    import subprocess
    import sys

    _drop_stored(sample_vault)
    probe = (
        "import sys\n"
        "sys.modules['ahocorasick'] = None  # as if never installed\n"
        f"sys.argv = ['cmem', 'scan', '--vault', {str(sample_vault)!r}]\n"
        f"from {module} import main\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (
        f"error: cmem needs pyahocorasick, which is not installed in this Python "
        f"({sys.executable}): reinstall convergent-memory, or pip install pyahocorasick.\n"
    )
    # a module cmem does not declare is not dressed up as a missing dependency
    from cmem.errors import missing_dependency_sentence

    assert missing_dependency_sentence(ModuleNotFoundError("x", name="nope")) is None
    assert missing_dependency_sentence(ImportError("x", name="yaml")) is None  # broken, not absent
    # a part of an installed package missing: a broken install, which the traceback shows
    assert missing_dependency_sentence(ModuleNotFoundError("x", name="yaml._yaml")) is None
    assert "PyYAML" in missing_dependency_sentence(ModuleNotFoundError("x", name="yaml"))
