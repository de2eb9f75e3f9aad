"""`cmem.cli:app` and `cmem.cli:main`, the names the entry point (`cli/scripts/cmem`), the tests
and older scripts import. The command line itself lives in `cmem/commands/`: one module per command
group, assembled with the error funnel in `commands/app.py`."""

from __future__ import annotations

from cmem.commands.app import _hoist_global_flags, app, main

__all__ = ["_hoist_global_flags", "app", "main"]

if __name__ == "__main__":
    main()
