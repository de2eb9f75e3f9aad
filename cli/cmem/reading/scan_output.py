"""What `cmem scan` prints, made in one place for both ways in: the typer command
(`commands/reading.py: scan`) and, when no stored result answers, the light entry path
(`cmem.fast: run_scan`), which runs a cold scan without importing typer and the command table
(a part of every cold scan). Both store what they print for the next call (`stored_results`)."""

from __future__ import annotations

import sys


def scan_output(target, as_json: bool) -> str:
    """The scan of `target` (a Vault made with `remember_listings`: it only reads) as text or
    JSON, without the final line end; stored for `cmem.fast` under the key taken first."""
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


def scan_waiting(target, result) -> dict:
    """What waits, and why (`reading/waiting.py`), for the engine this vault's pass would run."""
    from cmem.reading.waiting import account_waiting
    from cmem.vault.config import model_configured

    return account_waiting(target, result, model_configured(target)).to_json()
