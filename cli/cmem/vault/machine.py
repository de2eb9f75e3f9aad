"""Where a vault is, and where its per-machine data lives (`$XDG_STATE_HOME/cmem/<name>-<hash of
the path>`), told with `os` alone: an agent's hook and a stored answer must answer before they
have imported the vault model (`vault/layers.py: find_vault_root` and `machine_dir_for` are these
functions).

A vault synced between machines must not carry one machine's lock or logs to another, and two
vaults with the same folder name must not share one folder."""

from __future__ import annotations

import os

from cmem.text.names import show_name


def vault_root_above(start: str) -> str | None:
    """The nearest folder at or above `start` holding `.cmem/`, resolved; None when none does."""
    folder = os.path.realpath(start)
    while True:
        if os.path.isdir(os.path.join(folder, ".cmem")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def machine_dir_of(root: str | os.PathLike) -> str:
    import re
    from hashlib import sha256

    from cmem.private import state_root  # 0700, tightened once when an older cmem left it open

    resolved = os.path.realpath(os.fspath(root))
    slug = re.sub(r"[^\w.-]+", "-", show_name(os.path.basename(resolved))).strip("-") or "vault"
    digest = sha256(os.fsencode(resolved)).hexdigest()[:10]
    return os.path.join(state_root(), f"{slug[:40]}-{digest}")
