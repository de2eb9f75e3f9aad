"""Text is folded in one module, `cli/cmem/text/folding.py` (issue 45): no other module of the
package calls `.casefold()` or `unicodedata.normalize`, each one that must named here with why."""

from __future__ import annotations

from support import REPO

PACKAGE = REPO / "cli" / "cmem"

# `module:line` → why it folds by itself. Empty: every fold goes through `text/folding.py`.
ALLOWED: dict[str, str] = {}


def test_no_module_but_the_folding_module_folds_text(layout):
    assert layout.FOLDING_MODULE == "cmem.text.folding"
    assert (PACKAGE / "text" / "folding.py").is_file()
    assert layout.fold_sites(PACKAGE) == sorted(ALLOWED)


def test_the_folding_module_is_the_one_helper_module(layout):
    helpers, inline = layout.text_folding(PACKAGE)
    assert set(helpers.values()) == {layout.FOLDING_MODULE}
    assert inline == []


def test_a_fold_written_beside_it_is_found(layout, tmp_path):
    """The rule can fail: a copy of the package with one `casefold` added is caught."""
    import shutil

    copy = tmp_path / "cmem"
    shutil.copytree(
        PACKAGE,
        copy,
        ignore=shutil.ignore_patterns("__pycache__", "prompts", "vault_schema", "sample_vault"),
    )
    names = copy / "text" / "names.py"
    lines = len(names.read_text("utf-8").splitlines())
    names.write_text(
        names.read_text("utf-8") + "\n\ndef same(a, b):\n    return a.casefold() == b\n", "utf-8"
    )
    assert layout.fold_sites(copy) == [f"cmem.text.names:{lines + 4}"]
