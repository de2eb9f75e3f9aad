"""What `cmem scan` prints (`commands/reading.py: scan`): from the stored result while nothing
it depends on changed (`stored_scan`), else scanned afresh and stored for the next call
(`scan_output`; the key and its rule: `reading/stored_results.py`)."""

from __future__ import annotations

import sys


def scan_output(target, as_json: bool) -> str:
    """The scan of `target` (a Vault made with `remember_listings`: it only reads) as text or
    JSON, without the final line end; stored under the key taken before the scan."""
    import json

    from cmem.reading import stored_results
    from cmem.render.reports import color_on
    from cmem.scan.scanner import scan_vault
    from cmem.text.secrets import shown, shown_data

    pending = stored_results.begin(target, "scan", (as_json, color_on(sys.stdout)))
    result = scan_vault(target)
    waiting = scan_waiting(target, result)
    # shown as every surface shows note text (the MCP `scan` tool too), and stored so
    if as_json:
        data = result.to_json()
        data["waiting"] = waiting
        out = json.dumps(shown_data(data), ensure_ascii=False, indent=2)
    else:
        from cmem.render.reports import render_scan

        out = shown(render_scan(result, waiting))
    stored_results.store(pending, stored_results.printed(out + "\n"))
    return out


def stored_scan(vault, as_json: bool) -> str | bytes | None:
    """What the last scan printed for the vault `vault` names (None: the current folder's), in
    this output form, while it still answers for the vault; else None."""
    from cmem.reading.stored_results import find_root, valid_entry
    from cmem.render.reports import color_on

    root = find_root(None if vault is None else str(vault))
    entry = None if root is None else valid_entry(root, "scan", (as_json, color_on(sys.stdout)))
    return None if entry is None else entry["payload"]["stdout"]


def scan_waiting(target, result) -> dict:
    """What waits, and why (`reading/waiting.py`), for the engine this vault's pass would run."""
    from cmem.reading.waiting import account_waiting
    from cmem.vault.config import model_configured

    return account_waiting(target, result, model_configured(target)).to_json()
