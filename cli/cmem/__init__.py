"""cmem — convergent memory kept as a plain Markdown vault.

The library is the product: every command is a thin shell over a core function that takes a
`Vault` and returns data. See README.md for the concepts.
"""

__version__ = "0.1.0"
# What pip installs this project by (pyproject.toml's `name`): the command and the package are
# `cmem`, but "cmem" on PyPI is another project, so every install hint names this.
DISTRIBUTION = "convergent-memory"
