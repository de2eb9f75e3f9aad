"""The environment for a git that talks to a remote on cmem's behalf (`cmem sync`, `git.sync:
auto`): it runs from hooks and watchers with nobody to answer, so it must fail rather than wait
for a password (issue 16). Stdlib `os` only: the light sync path (`cmem.idle_sync`) runs its
fetch with exactly this environment too."""

from __future__ import annotations

import os

BATCH_SSH = "ssh -o BatchMode=yes"


def remote_env(ssh_configured: bool, environ=None) -> dict:
    """No terminal prompt for a password (GIT_TERMINAL_PROMPT=0); ssh in batch mode (no password,
    passphrase or host-key question: it fails and sync says offline) unless the user chose their
    own ssh (GIT_SSH_COMMAND, GIT_SSH, or `ssh_configured`: core.sshCommand is set). GIT_DIR and
    friends are dropped, as for every git cmem runs (cmem.steps.commits._env)."""
    env = dict(os.environ if environ is None else environ)
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        env.pop(name, None)
    env["GIT_TERMINAL_PROMPT"] = "0"
    if not (ssh_configured or env.get("GIT_SSH_COMMAND") or env.get("GIT_SSH")):
        env["GIT_SSH_COMMAND"] = BATCH_SSH
    return env
