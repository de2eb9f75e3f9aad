"""A pass's account of itself: its run record (what the engine was asked, how the pass ended,
for `cmem log`) and, for a pass that stopped, what it did and did not do — the sentences its
error, the Ctrl-C report and `render/reports.py: render_pass` print."""

from __future__ import annotations

from datetime import datetime

from cmem.converge.engines import Engine
from cmem.converge.pass_values import PassInputs, PassResult, PromptPlan
from cmem.steps.run_records import RunRecord
from cmem.steps.runner import Step
from cmem.vault.layers import Vault


def record_run(
    vault: Vault, record: RunRecord, engine: Engine, inputs: PassInputs, plan: PromptPlan
) -> None:
    """The run record's prompt (redacted unless --keep-raw-prompt) and run.json, written before
    the engine is asked: a prompt the engine does not read is made for the record only."""
    from cmem.converge.prompt import redacted_prompt

    known = redacted_prompt(vault, plan.prompt) if record.redact else None
    redacted = record.write("prompt.txt", plan.prompt.text, redacted_as=known)
    record.write(
        "run.json",
        {
            "engine": engine.kind,
            "model": engine.model,
            "notes": [n.rel for n in inputs.selection.notes],
            "pass_date": inputs.pass_date,
            "redacted": redacted,
            "raw_prompt_kept": not record.redact,
        },
    )


def failure_summary(result: PassResult, snapshot: str | None) -> str:
    """What a failed pass did and did not do, and what to do next (for messages)."""
    lines = []
    if result.engine in ("llm", None):
        asked = {0: "the model was not asked", 1: "the model was asked once"}.get(
            result.rounds,
            f"the model was asked {result.rounds} times (1 + {result.rounds - 1} repair rounds)",
        )
        lines.append(f"  {asked}; no memory file was written and no note was marked converged")
    else:
        lines.append("  no memory file was written and no note was marked converged")
    if snapshot:
        lines.append(
            f"  your notes and edits were committed first as {snapshot[:8]} (that commit stays)"
        )
    if result.run_dir:
        lines.append(f"  run record: {result.run_dir}")
    if result.engine == "response-file":  # the reply's author mends it (the CLI says how)
        lines.append("  next: mend the reply by the messages above and apply it again")
    else:
        lines.append(
            "  next: read the run record, then run `cmem converge` again (or `--engine builtin`); `cmem log` lists this pass"
        )
    return "\n".join(lines)


def interrupted_summary(result: PassResult, snapshot: str | None, applying: bool) -> str:
    if applying:
        lines = [
            "  the pass was stopped while writing: the next cmem command (or `cmem doctor --fix`) finishes it "
            "or rolls it back from its journal, so no file is left half-written"
        ]
    else:
        lines = failure_summary(result, snapshot).splitlines()[:-1]
        if result.engine == "llm":
            lines.insert(1, "  the model command was stopped")
    if applying and snapshot:
        lines.append(
            f"  your notes and edits were committed first as {snapshot[:8]} (that commit stays)"
        )
    if applying and result.run_dir:
        lines.append(f"  run record: {result.run_dir}")
    lines.append(
        "  the pending notes stay pending; run `cmem converge` again when ready (`cmem log` lists this pass)"
    )
    return "\n".join(lines)


def record_outcome(
    record: RunRecord,
    result: PassResult,
    step: Step | None,
    now: datetime,
    status: str,
    reason: str,
    errors: list[str] | None = None,
) -> None:
    if step is None:
        return  # a dry run wrote nothing and says so at once; only real passes are history
    try:
        record.write_outcome(
            {
                "status": status,
                "reason": reason,
                "rounds": result.rounds,
                "engine": result.engine,
                "model": result.model,
                "snapshot_commit": step.snapshot,
                "time": now.isoformat(timespec="seconds"),
                "notes": list(result.selected),
                "errors": list(errors or [])[:10],
            },
        )
    except OSError:
        pass  # the failure being reported matters more than its record
