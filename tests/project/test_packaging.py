"""The package finds prompts/, vault_schema/ and the sample vault from an editable install and
from a built wheel installed in a fresh venv; start-up stays free of heavy imports."""

import json
import os
import re
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from cmem import DISTRIBUTION, resources
from cmem import __version__ as cmem_version
from support import REPO


def test_every_prompt_and_schema_loads_through_the_accessor():
    names = sorted(p.name for p in (REPO / "prompts").iterdir())
    assert names, "prompts/ is empty"
    for name in names:
        assert resources.prompt_text(name).strip()
    for schema in (REPO / "vault_schema").glob("*.json"):
        json.loads(schema.read_text("utf-8"))
    assert resources.config_schema()["additionalProperties"] is False
    assert (resources.sample_vault_dir() / ".cmem" / "config.yaml").is_file()


def test_prompt_template_fails_loudly_on_missing_variable():
    from cmem.errors import CmemError

    template = resources.PromptTemplate("repair.en.md")
    assert template.variables == {"errors", "pass_date"}
    with pytest.raises(CmemError, match="pass_date"):
        template.render(errors="x")


HEAVY = ("git", "ruamel", "watchdog", "pydantic", "rich.console")


@pytest.mark.parametrize("argv", [["--help"], ["status"]])
def test_start_up_imports_stay_light(argv, sample_vault):
    """`cmem --help` and `cmem status` must not import gitpython, ruamel, watchdog, pydantic or
    rich.console (python -X importtime lists every module imported)."""
    env = dict(os.environ, CMEM_VAULT=str(sample_vault))
    code = f"import sys; sys.argv = ['cmem', *{argv!r}]; from cmem.cli import main; main()"
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, env=env
    )
    assert result.returncode == 0, result.stderr[-2000:]
    modules = {
        line.split("|")[-1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:")
    }
    for heavy in HEAVY:
        assert not any(m == heavy or m.startswith(heavy + ".") for m in modules), (
            f"{argv} imported {heavy}"
        )


def _ageless(out: str) -> str:
    """Output with the ages of memory files (seconds in JSON; `12 s`, `3 min`, `1.5 h`, `2 days` in
    text) left out."""
    import re

    return re.sub(r'"age_seconds": -?\d+|\b\d+(?:\.\d)? (?:s|min|h|days)\b', "<age>", out)


# What a stored answer never imports: YAML, the config loader, the vault model, the scanner
STORED_ANSWER_NEVER = (
    "yaml",
    "ruamel",
    "cmem.vault.config",
    "cmem.vault.layers",
    "cmem.scan",  # the scanner, its per-note detection and the parts split out of it
    "cmem.text.cues",
    "git",
)


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["--version"], ["status"], ["status", "--json"], ["scan"], ["scan", "--json"]],
)
def test_a_stored_answer_imports_no_vault_machinery(argv, sample_vault):
    """Once a result is stored, the second call answers without YAML, the config loader, the
    vault model or the scanner (and help and version never need them)."""
    from support import settle

    env = dict(os.environ, CMEM_VAULT=str(sample_vault))
    code = f"import sys; sys.argv = ['cmem', *{argv!r}]; from cmem.cli import main; main()"
    settle(sample_vault)
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert first.returncode == 0, first.stderr[-2000:]
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, env=env
    )
    assert result.returncode == 0, result.stderr[-2000:]
    # the same answer; ages are recomputed at print time, so a second may pass between the calls
    assert _ageless(result.stdout) == _ageless(first.stdout)
    modules = {
        line.split("|")[-1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:")
    }
    for heavy in STORED_ANSWER_NEVER:
        assert not any(m == heavy or m.startswith(heavy + ".") for m in modules), (
            f"{argv} imported {heavy}"
        )


# `cmem sync` with nothing to do, the second time: told after one fetch, without the sync
# machinery, the config, the scanner or the pass
SYNC_PATH_NEVER = (
    "cmem.sync.remote",
    "yaml",
    "rich",
    "cmem.vault.config",
    "cmem.scan",
    "cmem.converge.pipeline",
)


@pytest.mark.parametrize("argv", [["sync"], ["sync", "--json"], ["--no-color", "sync"]])
def test_an_idle_sync_imports_no_sync_machinery(argv, tmp_path, sample_vault):
    """The second `cmem sync` with nothing to do is told by the idle answer (cmem/idle_sync.py)."""
    remote, clone = tmp_path / "remote.git", tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--bare", str(sample_vault), str(remote)], check=True)
    subprocess.run(["git", "clone", "-q", str(remote), str(clone)], check=True)
    env = dict(os.environ, CMEM_VAULT=str(clone))
    code = f"import sys; sys.argv = ['cmem', *{argv!r}]; from cmem.cli import main; main()"
    from support import settle

    settle(clone)  # its files older than the racy-timestamp window: the full sync stores
    for _ in range(2):
        result = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", code],
            capture_output=True,
            text=True,
            env=env,
        )
        assert result.returncode == 0, result.stderr[-2000:]
    assert "up to date with origin/main" in result.stdout or '"status": "nothing"' in result.stdout
    modules = {
        line.split("|")[-1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:")
    }
    for heavy in SYNC_PATH_NEVER:
        assert not any(m == heavy or m.startswith(heavy + ".") for m in modules), (
            f"{argv} imported {heavy}"
        )


def test_the_installed_command_imports_cmem_first(tmp_path):
    """The `cmem` this environment's installer wrote (bin/, beside this Python): it runs, and
    imports nothing of its own before cmem (pip's generated launcher imported `re` on every
    call)."""
    command = Path(sys.executable).parent / "cmem"
    if not command.exists():
        pytest.skip("cmem is not installed as a command beside this Python")
    result = subprocess.run(
        [sys.executable, "-X", "importtime", str(command), "--version"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.returncode == 0 and result.stdout.startswith("cmem "), result.stderr[-2000:]
    modules = [line.split("|")[-1].strip() for line in result.stderr.splitlines()]
    first = modules.index("cmem")
    assert "re" not in modules[:first] and "runpy" not in modules, (
        f"{command} is not cli/scripts/cmem (an install from before it? run `pip install -e .` "
        f"again): {modules[:first]}"
    )


def test_wheel_installs_and_runs_in_a_fresh_venv(tmp_path):
    dist = tmp_path / "dist"
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(dist),
            str(REPO),
        ],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    # the distribution is named as the install hints name it; "cmem" on PyPI is another project
    (wheel,) = dist.glob(f"{DISTRIBUTION.replace('-', '_')}-{cmem_version}-*.whl")
    # the `cmem` command is our own launcher, shipped as a script for the installer's bin folder,
    # with the "#!python" line installers replace by the environment's Python
    with zipfile.ZipFile(wheel) as archive:
        scripts = [name for name in archive.namelist() if ".data/scripts/" in name]
        assert [name.rsplit("/", 1)[1] for name in scripts] == ["cmem"]
        launcher = archive.read(scripts[0]).decode("utf-8")
        mode = archive.getinfo(scripts[0]).external_attr >> 16
    assert launcher.startswith("#!python\n") and mode & 0o111, (launcher[:40], oct(mode))
    assert "entry_points.txt" not in " ".join(archive.namelist())  # no second, generated `cmem`
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False, system_site_packages=False).create(env_dir)
    python = env_dir / "bin" / "python"
    # The dependencies come from this (already provisioned) environment's site-packages, so the
    # test needs no network: a .pth file points the fresh venv at them; cmem itself comes only
    # from the wheel.
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    deps = [p for p in sys.path if p.endswith("site-packages")]
    Path(site, "deps.pth").write_text("\n".join(deps) + "\n")
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "--target",
            site,
            str(wheel),
        ],
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    cmem = [
        str(python),
        "-c",
        "import sys; from cmem.cli import main; sys.argv[0] = 'cmem'; main()",
    ]
    clean_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # cmem must come from the wheel, not from the source tree
    where = subprocess.run(
        [str(python), "-c", "import cmem; print(cmem.__file__)"],
        capture_output=True,
        text=True,
        env=clean_env,
        cwd=tmp_path,
    )
    assert where.stdout.startswith(site), where.stdout + where.stderr
    help_run = subprocess.run(
        cmem + ["--help"], capture_output=True, text=True, env=clean_env, cwd=tmp_path
    )
    assert help_run.returncode == 0 and "converge" in help_run.stdout
    vault = tmp_path / "new vault"
    init_run = subprocess.run(
        cmem + ["init", str(vault), "--lang", "en"],
        capture_output=True,
        text=True,
        env=clean_env,
        cwd=tmp_path,
    )
    assert init_run.returncode == 0, init_run.stderr
    assert (vault / ".cmem" / "config.yaml").is_file() and (vault / ".git").is_dir()
    prompts = subprocess.run(
        [
            str(python),
            "-c",
            "from cmem import resources; print(len(list(resources.package_dir('prompts').iterdir())), resources.sample_vault_dir().is_dir())",
        ],
        capture_output=True,
        text=True,
        env=clean_env,
        cwd=tmp_path,
    )
    assert prompts.stdout.split() == [str(len(list((REPO / "prompts").iterdir()))), "True"], (
        prompts.stderr
    )
    # what pip (and `importlib.metadata`) know it by: the new name, holding the `cmem` package
    metadata = subprocess.run(
        [
            str(python),
            "-c",
            "import json, importlib.metadata as m; d = m.distribution("
            f"{DISTRIBUTION!r}); print(json.dumps([d.metadata['Name'], d.version, "
            "sorted(str(f) for f in d.files if str(f).endswith('cmem/__init__.py'))]))",
        ],
        capture_output=True,
        text=True,
        env=clean_env,
        cwd=tmp_path,
    )
    assert json.loads(metadata.stdout) == [DISTRIBUTION, cmem_version, ["cmem/__init__.py"]], (
        metadata.stderr
    )


_PIP_INSTALL = re.compile(r"pip3? install\b([^\n`&;|)]*)")


def test_every_install_hint_installs_this_project():
    """Installing "cmem" from PyPI gets a stranger's package (cmem 0.0.1, 2023): every hint in
    the code, the docs, the prompts and the tests that installs this project names its
    distribution, pyproject.toml's `name`."""
    import tomllib

    name = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]["name"]
    assert name == DISTRIBUTION != "cmem"
    files = [REPO / "README.md", REPO / "pyproject.toml"]
    for folder in ("cli", "docs", "prompts", "tests", "bench", ".ci"):
        files += [
            p
            for p in (REPO / folder).rglob("*")
            if p.is_file()
            and p.suffix in (".py", ".md", ".toml", ".txt", "")
            and ".pyc" not in p.name
        ]
    hints = 0
    for path in files:
        try:
            text = path.read_text("utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for match in _PIP_INSTALL.finditer(text):
            for word in match.group(1).split():
                package = word.strip("'\"").split("[", 1)[0]
                where = f"{path.relative_to(REPO)}: {match.group(0).strip()}"
                assert package not in ("cmem", "cmem-cli"), where
                if package in (DISTRIBUTION, "{DISTRIBUTION}"):
                    hints += 1
    assert hints >= 3  # the MCP extra (README, `cmem mcp --help`, its error) and the reinstalls
