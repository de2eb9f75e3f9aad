"""`cmem converge --emit-prompt` from a stored prompt, while nothing it depends on changed.

An agent that is itself the model asks for the prompt at every session (`converge_prompt` in the
MCP server does the same work); building it scans the divergent layer, reads every memory file
and ranks the topic files against the selected notes — seconds on a large vault. The prompt is
a function of the vault's files, the config, the state and the commit of the last pass (hand
edits are found against it), and the date: all in `cmem.reading.stored_results`'s key, with the
same racy-timestamp rule. The one input outside that key is `.gitignore` (an untracked memory file
counts as hand-edited unless ignored), so its stat is this entry's parameter. Only the plain
request is stored and answered (`--emit-prompt`, `--vault`): `--only`, `--budget` and the rest
build the prompt afresh.
"""

from __future__ import annotations

import os

from cmem.cache_store import stat_key

COMMAND = "emit-prompt"


def params(root: str) -> tuple:
    """The stat of the vault's `.gitignore` (or its absence), part of the entry's name and key."""
    try:
        st = os.stat(os.path.join(root, ".gitignore"))
    except OSError:
        return ((),)
    return (stat_key(st),)


def stored_prompt(vault) -> str | bytes | None:
    """The stored prompt for the vault `vault` names (None: the current folder's), as UTF-8
    bytes or text (`stored_results.printed`), or None when there is none to trust."""
    from cmem.reading.stored_results import find_root, valid_entry

    root = find_root(None if vault is None else str(vault))
    entry = None if root is None else valid_entry(root, COMMAND, params(root))
    return None if entry is None else entry["payload"]["stdout"]


def begin(vault) -> dict | None:
    """Called by `cmem converge --emit-prompt` before it reads the vault (stored_results.begin)."""
    from cmem.reading import stored_results

    return stored_results.begin(vault, COMMAND, params(str(vault.root)))


def store(pending: dict | None, prompt: str) -> None:
    """What the command printed, for the next call whose key matches."""
    from cmem.reading import stored_results

    stored_results.store(pending, stored_results.printed(prompt))
