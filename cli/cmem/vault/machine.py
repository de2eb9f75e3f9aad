"""Where a vault's per-machine data lives, `$XDG_STATE_HOME/cmem/<name>-<hash of the path>`, told
with `os` alone: an agent's hook starts at every session boundary and must answer before it has
imported the vault model (`vault/layers.py: machine_dir_for` is this function).

A vault synced between machines must not carry one machine's lock or logs to another, and two
vaults with the same folder name must not share one folder."""

from __future__ import annotations

import os

from cmem.text.names import show_name


def machine_dir_of(root: str | os.PathLike) -> str:
    import re
    from hashlib import sha256

    from cmem.private import state_root  # 0700, tightened once when an older cmem left it open

    resolved = os.path.realpath(os.fspath(root))
    slug = re.sub(r"[^\w.-]+", "-", show_name(os.path.basename(resolved))).strip("-") or "vault"
    digest = sha256(os.fsencode(resolved)).hexdigest()[:10]
    return os.path.join(state_root(), f"{slug[:40]}-{digest}")
