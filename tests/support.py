"""Helpers the tests share: a vault's files byte for byte, cmem in a real process, git.

Fixtures live in conftest.py; plain functions live here, so a test module or a harness run as a
script imports them by name (`from support import run_cmem, snapshot`).
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SAMPLE_VAULT = REPO / "sample-vault"
TESTS = Path(__file__).resolve().parent
CMEM = [sys.executable, "-m", "cmem"]
# One "an hour ago" for a whole test run: settle() dates files to it, and a test that sets a file
# back to the stored mtime names the same instant.
HOUR_AGO = time.time() - 3600


def run_cmem(
    *args: str,
    env: dict | None = None,
    cwd: Path | None = None,
    timeout: float = 120,
    fault: str | None = None,
    fault_log: Path | None = None,
    modes_hold: bool = False,
) -> subprocess.CompletedProcess:
    """`python -m cmem ARGS` in a real process, stdin closed. Its environment is this test's
    (the isolated HOME, XDG folders and git identity) without any `CMEM_*` variable — a vault, a
    model command or a fault point from the caller's shell never leaks in — plus `env`, and
    `CMEM_FAULT`/`CMEM_FAULT_LOG` when a fault point is given. `modes_hold`: file modes bind it
    as they bind any user, root too (`MODES_HOLD`): a mode-000 file cannot be read."""
    full = {key: value for key, value in os.environ.items() if not key.startswith("CMEM_")}
    full.update(env or {})
    if fault:
        full["CMEM_FAULT"] = fault
    if fault_log:
        full["CMEM_FAULT_LOG"] = str(fault_log)
    return subprocess.run(
        [*(MODES_HOLD if modes_hold else []), *CMEM, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=full,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


# What a command is started under so that file modes bind it: for root, without the two
# capabilities that let it read and search any file (util-linux's setpriv drops them from the
# bounding set, so its child never has them); for anyone else, nothing. A test that needs a file
# it cannot read calls `modes_hold_or_skip()` first.
MODES_HOLD = (
    ["setpriv", "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search", "--"]
    if os.name == "posix" and os.geteuid() == 0
    else []
)


def modes_hold_or_skip() -> None:
    import shutil

    import pytest

    if MODES_HOLD and (
        shutil.which("setpriv") is None
        or subprocess.run([*MODES_HOLD, "true"], capture_output=True).returncode != 0
    ):
        pytest.skip("running as root, and setpriv cannot drop root's read capabilities here")


def isolated_env(home: Path, **extra: str) -> dict:
    """The environment for cmem (or git) in a child process that touches nothing of the user's:
    HOME and the XDG folders under `home`, no CMEM_* setting and no GIT_* variable leaking in
    (GIT_DIR would redirect git), no system git config, a git identity, no colour; `extra` on top.
    The tests, the harnesses and the benchmarks all build their child processes' environment here."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CMEM_", "GIT_"))}
    env.update(
        HOME=str(home),
        XDG_STATE_HOME=str(home / "state"),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_CACHE_HOME=str(home / "cache"),
        XDG_DATA_HOME=str(home / "data"),
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@e",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@e",
        GIT_CONFIG_NOSYSTEM="1",
        NO_COLOR="1",
    )
    env.update(extra)
    return env


def isolate(patch, home: Path) -> None:
    """Point this process at `home` (HOME, the XDG folders) with no CMEM_* or GIT_* setting of the
    user's and a git identity of its own, through `patch` (a pytest MonkeyPatch): what every test
    runs under (conftest.py: `isolated_home`), and a module's template vault while it is built."""
    patch.setenv("HOME", str(home))
    for name, sub in (
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_STATE_HOME", ".local/state"),
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_DATA_HOME", ".local/share"),
    ):
        patch.setenv(name, str(home / sub))
    for name in ("CMEM_VAULT", "CMEM_LLM", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        patch.delenv(name, raising=False)
    patch.setenv("GIT_AUTHOR_NAME", "Test User")
    patch.setenv("GIT_AUTHOR_EMAIL", "test@example.com")
    patch.setenv("GIT_COMMITTER_NAME", "Test User")
    patch.setenv("GIT_COMMITTER_EMAIL", "test@example.com")
    patch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    patch.setenv("NO_COLOR", "1")
    patch.setenv("COLUMNS", "200")


def vault_template(tmp_path_factory, build: Callable[[Path], object]) -> Path:
    """The vault `build(root)` makes (`cmem init`, a pass, ...), made once for a module under a
    home of its own (a module-scoped fixture is set up before each test's isolation); each test
    works on a copy (`copy_vault`), never on it. Nothing in a vault names its own path, and cmem
    keys its machine state on that path, so a copy is that vault moved: the same to every command."""
    import pytest

    folder = tmp_path_factory.mktemp("template")
    with pytest.MonkeyPatch.context() as patch:
        isolate(patch, folder / "home")
        wait_out_midnight()
        build(folder / "vault")
    return folder / "vault"


def copy_vault(template: Path, root: Path) -> Path:
    """A test's own copy of a template vault (its .git too, file modes and times kept)."""
    import shutil

    shutil.copytree(template, root, symlinks=True)
    return root


def snapshot(*roots: Path, folders: bool = False) -> dict[str, bytes]:
    """Every file and symbolic link under the roots (a vault, a folder beside it), byte for byte
    (a link as its target, a FIFO or socket by its kind); `.git` reduced to what a hostile write
    could target (config, hooks, info) plus HEAD's commit as `<HEAD>`. Keys are paths relative to
    the root, or, for several roots, the whole path. With `folders`, every folder too, so a test
    that nothing was written also sees an empty folder made."""
    if len(roots) != 1:
        return {
            f"{root}/{rel}": data
            for root in roots
            for rel, data in snapshot(root, folders=folders).items()
        }
    root = roots[0]
    found: dict[str, bytes] = {}
    if not root.exists():
        return found
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root)
        if rel_dir.parts[:1] == (".git",) and rel_dir.parts[1:2] not in ((), ("hooks",), ("info",)):
            dirnames[:] = []
            continue
        links = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        if folders:
            found.update(
                {str(rel_dir / d): b"<folder>" for d in dirnames if d not in links and d != ".git"}
            )
        for name in filenames + links:
            path = Path(dirpath) / name
            rel = str(rel_dir / name)
            if rel in (".git/index", ".git/ORIG_HEAD", ".git/COMMIT_EDITMSG") or rel.startswith(
                ".git/refs"
            ):
                continue
            if path.is_symlink():
                found[rel] = b"link:" + os.readlink(path).encode()
            elif stat.S_ISREG(path.lstat().st_mode):
                found[rel] = path.read_bytes()
            else:
                found[rel] = b"<special>"  # a FIFO or a socket: opening it could block forever
    if (root / ".git").exists():
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout
        found["<HEAD>"] = head.strip().encode()
    return found


def write_files(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def git_init(root: Path) -> None:
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(root), "commit", "-q", "-m", "test: initial", "--allow-empty"], check=True
    )


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, text=True
    ).stdout


def settle(root: Path) -> float:
    """Date every file and folder of the vault (its .git too) an hour back: as a vault looks when
    nobody touched it for a while, so its listing may be stored (the racy-git rule). Returns the
    time given (HOUR_AGO), for a test that dates one file after the others."""
    hour_ago = HOUR_AGO
    for folder, _dirs, files in os.walk(root):
        for name in files:
            os.utime(os.path.join(folder, name), (hour_ago, hour_ago), follow_symlinks=False)
        os.utime(folder, (hour_ago, hour_ago))
    return hour_ago


def run_entry(
    module: str,
    argv: list[str],
    env: dict | None = None,
    stdout=subprocess.PIPE,
    timeout: float | None = None,
) -> tuple[int, str, str, set[str]]:
    """`cmem ARGV` through `module`'s main (`cmem.cli`, what the installed entry runs), `env` added to this environment: (exit code, stdout, stderr without the import
    log, the modules imported, from `python -X importtime`). `stdout`: where its output goes
    (then "" is returned for it); `timeout`: a command that could run for ever fails instead."""
    code = f"import sys; sys.argv = ['cmem', *{argv!r}]; from {module} import main; main()"
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, **(env or {})),
        timeout=timeout,
    )
    modules = {
        line.split("|")[-1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:")
    }
    err = "".join(line + "\n" for line in result.stderr.splitlines() if "import time:" not in line)
    return result.returncode, result.stdout or "", err, modules


# What a command imports only when it reads the vault afresh: answered from a stored result,
# it imports neither (`reading/stored_results.py`).
AFRESH_MODULES = {"cmem.vault.config", "cmem.scan.scanner"}


def forget_stored(vault: Path, command: str, params: tuple = ()) -> None:
    """Remove what `command` stored for `vault` (`reading/stored_results.py`): its next call
    computes afresh, as a miss does."""
    from cmem.reading.stored_results import entry_path

    Path(entry_path(str(vault.resolve()), command, params)).unlink(missing_ok=True)


def run_stored(vault: Path | None, *argv: str) -> tuple[str, bool]:
    """Run cmem as the installed entry point does; (stdout, answered from a stored result?)."""
    args = [*argv, "--vault", str(vault)] if vault is not None else list(argv)
    code, out, err, modules = run_entry("cmem.cli", args)
    assert code == 0, err[-3000:]
    return out, not (AFRESH_MODULES & modules)


def forks_from_now(monkeypatch) -> list[int]:
    """The pids of the children this process forks from now on (`os.fork` still forks)."""
    pids = []
    real = os.fork

    def fork():
        pid = real()
        if pid:
            pids.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", fork)
    return pids


# Tests that name today's date apart from the command they check (a capture note's name, a
# trace's date, the archive's month folder) would fail when midnight passes between the two.
# No test starts in the last MIDNIGHT_MARGIN seconds of a local day: it waits for the new one.
MIDNIGHT_MARGIN = 120.0


def seconds_to_midnight(now: float) -> float:
    """Seconds from `now` (epoch) to the next local midnight (DST-proof: through mktime)."""
    moment = time.localtime(now)
    next_day = time.mktime((moment.tm_year, moment.tm_mon, moment.tm_mday + 1, 0, 0, 0, 0, 0, -1))
    return next_day - now


def wait_out_midnight(clock=time.time, sleep=time.sleep, margin: float = MIDNIGHT_MARGIN) -> float:
    """Sleep past the coming midnight if it is under `margin` seconds away; the seconds slept."""
    left = seconds_to_midnight(clock())
    if left >= margin:
        return 0.0
    sleep(left + 1.0)
    return left + 1.0


def user_lines(note_text: str) -> list[str]:
    """The user's words as a session note holds them: the lines between a turn's header and its
    anchor (read here apart from the parser the tests check)."""
    out, inside = [], False
    for line in note_text.split("\n"):
        if line.startswith("**user · t"):
            inside = True
        elif line.startswith("^t"):
            inside = False
        elif inside and line:
            out.append(line)
    return out
