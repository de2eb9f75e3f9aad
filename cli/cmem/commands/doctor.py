"""`cmem doctor` (checks) and `--fix` (finish or roll back what an interrupted run left)."""

from typing import Annotated

import typer

from cmem.commands.common import confirm, print_json, reading_target, show
from cmem.commands.options import JsonOption, VaultOption, yes_option

FixYes = Annotated[
    bool, yes_option("With --fix: repair without asking (needed without a terminal).")
]


def doctor(
    fix: Annotated[
        bool,
        typer.Option(
            "--fix",
            help="Repair what an interrupted run left behind (the journal of a pass, archive apply or undo; git lock files a killed git left), after confirmation.",
        ),
    ] = False,
    yes: FixYes = False,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Check the config, frontmatter, source links, git state, locks, interrupted runs and sync-folder risks.

    With --fix, repairs what an interrupted run left: finishes or rolls back a killed pass,
    finishes an interrupted archive apply, removes git lock files a killed git left (only when
    no git is running and they are minutes old). It lists the repairs and asks first.
    """
    from cmem.doctor.checks import run_doctor

    target = reading_target(vault)
    findings, repaired = run_doctor(target), []
    if fix:
        from cmem.doctor.doctor_fix import find_leftovers, repair_leftovers

        leftovers = [item for item in find_leftovers(target) if item.fixable]
        if leftovers:
            if not as_json:
                show("\n".join(f"will fix: {item.message} — {item.action}" for item in leftovers))
            confirm(yes, f"repair {len(leftovers)} thing{'s' if len(leftovers) != 1 else ''}?")
            repaired = repair_leftovers(target, leftovers)
            findings = run_doctor(target)
    if as_json:
        print_json(
            {
                "findings": [f.to_json() for f in findings],
                "ok": not any(f.level == "error" for f in findings),
                "fixed": repaired,
            }
        )
    else:
        from cmem.render.reports import render_doctor

        show("".join(f"fixed: {line}\n" for line in repaired) + render_doctor(findings))
    if any(f.level == "error" for f in findings):
        raise typer.Exit(1)
