"""`cmem demo`: the sample vault, copied, made a repository, converged with the builtin engine."""

from __future__ import annotations

import os
import shlex
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cmem.errors import CmemError
from cmem.resources import sample_vault_dir
from cmem.steps import commits as history

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from cmem.converge.pipeline import PassResult
    from cmem.scan.scanner import ScanResult


@dataclass
class DemoRun:
    root: Path
    scan: ScanResult
    result: PassResult


def run_demo(folder: Path | None = None) -> DemoRun:
    from cmem.converge.pipeline import PassOptions, run_pass
    from cmem.scan.scanner import scan_vault
    from cmem.vault.layers import open_vault

    if folder is None:
        root = Path(tempfile.mkdtemp(prefix="cmem-demo-")) / "vault"
    else:
        root = Path(folder).expanduser().resolve()
        if root.exists() and any(root.iterdir()):
            raise CmemError(f"{root} is not empty; give `cmem demo` a new folder.")
    shutil.copytree(sample_vault_dir(), root, symlinks=True, dirs_exist_ok=True)
    history.init_repo(root)
    history.commit_files(root, {}, "sample vault", from_disk=_all_files(root))
    vault = open_vault(root)
    scan = scan_vault(vault)
    result = run_pass(vault, PassOptions(engine="builtin"))
    return DemoRun(root, scan, result)


def try_line(root: Path) -> str:
    """The commands to try next, runnable as printed in a new shell."""
    cmem = cmem_command()
    return f"cd {shlex.quote(str(root))} && {cmem} status && {cmem} scan && git log --stat"


def cmem_command() -> str:
    """How a new shell runs this cmem: `cmem` when a plain PATH finds this very program (pipx, a
    system install), else its full path — a venv's `bin/` is on PATH only while it is active."""
    import sys

    here = Path(sys.executable).parent / "cmem"
    if not here.exists():
        return f"{shlex.quote(sys.executable)} -m cmem"
    found = shutil.which("cmem")
    venv = os.environ.get("VIRTUAL_ENV")
    on_plain_path = (
        found is not None
        and os.path.realpath(found) == os.path.realpath(here)
        and not (venv and Path(found).resolve().is_relative_to(Path(venv).resolve()))
    )
    return "cmem" if on_plain_path else shlex.quote(str(here))


def _all_files(root: Path) -> list[str]:
    files = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        files += [os.path.relpath(os.path.join(folder, name), root) for name in names]
    return files
