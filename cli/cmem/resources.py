"""The one accessor for package data: prompt templates, the config schema, the sample vault.

`prompts/`, `vault_schema/` and `sample-vault/` live at the repository's top level and reach the
package through relative symlinks (cli/cmem/prompts → ../../prompts); hatch copies them into a
wheel, and an editable install resolves them in place.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from cmem.errors import CmemError


def package_dir(name: str) -> Path:
    """The on-disk folder of a data directory shipped with the package."""
    # what importlib.resources.files("cmem") gives for a package on disk (the only kind that has
    # folders to hand out), without importing importlib.resources, which every command that
    # validates the config would pay (issue 16)
    path = Path(__file__).parent / name
    if not path.is_dir():
        from cmem import DISTRIBUTION

        raise CmemError(
            f"cmem is installed without its {name}/ folder ({path}); reinstall it "
            f"(pip install --force-reinstall {DISTRIBUTION})."
        )
    return path


@cache
def config_schema() -> dict:
    return json.loads((package_dir("vault_schema") / "config.schema.json").read_text("utf-8"))


def prompt_text(name: str) -> str:
    path = package_dir("prompts") / name
    if not path.is_file():
        raise CmemError(f"prompt template {name} is missing from {path.parent}.")
    return path.read_text("utf-8")


class PromptTemplate:
    """A `string.Template` that names the variables it needs and fails loudly on a missing one."""

    def __init__(self, name: str):
        import string  # here: a prompt is rendered by a pass, every command opens a vault

        self.name = name
        self.template = string.Template(prompt_text(name))
        self.variables = {
            m.group("named") or m.group("braced")
            for m in self.template.pattern.finditer(self.template.template)
            if m.group("named") or m.group("braced")
        }

    def render(self, **values: str) -> str:
        missing = self.variables - values.keys()
        if missing:
            raise CmemError(f"prompt template {self.name} needs {', '.join(sorted(missing))}.")
        return self.template.substitute(values)


def sample_vault_dir() -> Path:
    return package_dir("sample_vault")
