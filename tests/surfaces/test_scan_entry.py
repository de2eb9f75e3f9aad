"""`cmem scan` through the installed entry: a cold scan (nothing stored answers it) prints and
stores what the next, stored, call prints, imports no writer machinery, and says a missing
dependency in one sentence."""

from __future__ import annotations

import os

import pytest

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
def test_a_cold_scan_prints_what_the_stored_one_prints(sample_vault, tail):
    settle(sample_vault)
    _drop_stored(sample_vault)
    code, out, err, modules = run_entry("cmem.cli", ["scan", "--vault", str(sample_vault), *tail])
    assert code == 0 and ("cue line" in out or "signals" in out), err
    assert "cmem.scan.scanner" in modules  # it scanned
    # what it stored answers the next call: the scanner is not even imported then
    again = run_entry("cmem.cli", ["scan", "--vault", str(sample_vault), *tail])
    if "--rescan" not in tail:
        assert again[:3] == (0, out, "") and "cmem.scan.scanner" not in again[3]


def test_a_cold_scan_through_cmem_vault_and_the_global_vault_option(sample_vault):
    settle(sample_vault)
    _drop_stored(sample_vault)
    by_variable = run_entry("cmem.cli", ["scan", "--json"], {"CMEM_VAULT": str(sample_vault)})
    _drop_stored(sample_vault)
    by_option = run_entry("cmem.cli", ["--vault", str(sample_vault), "scan", "--json"])
    assert by_variable[:3] == by_option[:3] and by_option[0] == 0


@pytest.mark.parametrize("as_json", [False, True])
def test_a_scan_outside_a_vault_says_so(tmp_path, as_json):
    argv = ["scan", "--vault", str(tmp_path / "nowhere"), *(["--json"] if as_json else [])]
    code, out, err, _ = run_entry("cmem.cli", argv)
    assert code == 1 and "nowhere" in (out if as_json else err)


def test_a_cold_scan_imports_no_writer_machinery(sample_vault):
    """A scan writes only its caches (cmem.cache_store): tempfile, the step layer and the
    unattended trigger stay unimported on its path."""
    settle(sample_vault)
    _drop_stored(sample_vault)
    code, out, err, modules = run_entry("cmem.cli", ["scan", "--vault", str(sample_vault)])
    assert code == 0 and "cmem.scan.scanner" in modules, err
    assert not {"tempfile", "cmem.steps.runner"} & modules
    # nor the unattended trigger: the key takes its record's name from triggers/due.py
    assert "cmem.triggers.if_due" not in modules


def test_an_install_without_a_dependency_says_which_in_one_sentence(sample_vault):
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
        "from cmem.cli import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )
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
