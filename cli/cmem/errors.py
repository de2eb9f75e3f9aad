"""The one exception family. Its messages are shown to users as they are: one sentence that
names the file or setting at fault. The CLI turns them into `error: …` and exit 1."""

from __future__ import annotations


class CmemError(Exception):
    """A failure the user can act on; `str(error)` is the whole message."""

    exit_code = 1


class VaultNotFound(CmemError):
    pass


class ConfigError(CmemError):
    pass


class GitError(CmemError):
    pass


class Busy(CmemError):
    """Another pass holds the vault lock. Not a failure: the CLI exits 0."""

    exit_code = 0


class UsageError(CmemError):
    exit_code = 2
