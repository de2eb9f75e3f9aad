"""`cmem.cli:main`, the entry point (`cli/scripts/cmem`, `python -m cmem`), and `cmem.cli:app`, the
typer app the tests and older scripts import. The command line itself lives in `cmem/commands/`:
one module per command group, assembled with the error funnel in `commands/app.py`. A help line
is printed again from what typer printed for it last, while that still holds, before typer is
imported (`commands/stored_help.py`)."""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from cmem.commands.app import app

__all__ = ["app", "main"]


def main() -> None:
    from cmem.commands import stored_help

    if stored_help.replay():
        return
    from cmem.commands.app import main as run

    stored_help.keep_while(run)


def __getattr__(name: str):
    # the app is built on first use: a replayed help line never imports typer
    if name == "app":
        from cmem.commands.app import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    main()
