"""The convergence pass (docs/design.md §3) as typed stages passing values:

    gather → PassInputs → plan_prompt → PromptPlan → choose_engine → Engine →
    check_replies (Engine.ask → EngineReply → parse_reply → ParsedReply → validate_response,
    with repair rounds) → CheckedChange → plan_pass → PlannedPass →
    commit_pass (stage_changes → StagedChanges → Step.commit) → AppliedPass

Each stage is a function of a few typed parameters returning a frozen value the next one takes;
no stage fills a shared result. `run_pass` strings them together and builds the `PassResult` the
CLI renders (or prints as JSON, docs/design.md §11) once: at the end, or at an early exit (nothing pending,
--emit-prompt, rejected, dry run, proposal).

The pass is one step (cmem.steps): the lock, the recovery of any interrupted step, the git
preflight and snapshot, the journal, the all-or-nothing apply and the commit happen there.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Callable

from cmem.archive.checklist import StageEntry, archive_target, filing_date, stage_notes
from cmem.converge.accounting import account_note
from cmem.converge.engines import Engine, EngineReply, check_engine, choose_engine
from cmem.converge.memory.diff import make_diff
from cmem.converge.memory.files import (
    changed_inputs,
    hand_edited_files,
    read_originals,
    rewritable,
    unwritable_reason,
)
from cmem.converge.outcome import failure_summary, interrupted_summary, record_outcome, record_run
from cmem.converge.pass_values import (
    AppliedPass,
    CheckedChange,
    ParsedReply,
    PassInputs,
    PassOptions,
    PassResult,
    PlannedPass,
    Progress,
    PromptPlan,
    StagedChanges,
)
from cmem.converge.prompt import Prompt, assemble_prompt
from cmem.converge.replies import check_replies, isolate_builtin, validator_context
from cmem.converge.selection import SelectedNote, Selection, engine_takes, select_notes
from cmem.errors import CmemError, set_stop_summary, stop_rounds
from cmem.steps import commits as history
from cmem.steps import journal
from cmem.steps.changes import ChangeSet, SecondWriter, current_bytes, in_line_ends
from cmem.steps.lock import vault_lock
from cmem.steps.message import pass_message
from cmem.steps.record import StepRecord, new_step_id
from cmem.steps.run_records import RunRecord, new_run
from cmem.steps.runner import Step, open_step
from cmem.steps.state_file import merged_with_disk
from cmem.vault.layers import Vault
from cmem.vault.state_json import State, load_state

if TYPE_CHECKING:
    from cmem.converge.validator.validate import Validation

# The stages' values and the engines are named here too: what a caller of the pass reads.
__all__ = [
    "AppliedPass",
    "CheckedChange",
    "Engine",
    "EngineReply",
    "ParsedReply",
    "PassInputs",
    "PassOptions",
    "PassResult",
    "PlannedPass",
    "PromptPlan",
    "StagedChanges",
    "run_pass",
]


def odd_warnings(odd_files, limit: int = 20) -> list[str]:
    warnings = [f"{odd.rel} {odd.message}" for odd in odd_files[:limit]]
    if len(odd_files) > limit:
        warnings.append(f"… and {len(odd_files) - limit} more odd files (`cmem doctor` lists them)")
    return warnings


# --- the pass -----------------------------------------------------------------------------


class _NotDue(Exception):
    def __init__(self, reason: str):
        self.reason = reason


def run_pass(vault: Vault, options: PassOptions, progress: Progress | None = None) -> PassResult:
    progress = progress or (lambda message, elapsed, limit=None: None)
    now = options.now or datetime.now().astimezone()
    check_engine(vault, options)  # before the lock: nothing is committed or recorded for it
    if options.dry_run or options.emit_prompt:
        with vault_lock(vault.machine_dir, "converge"):
            notices = []
            if journal.pending_journals(vault):
                notices.append(
                    "an interrupted step is waiting to be finished; the next command that writes "
                    "(or `cmem doctor --fix`) will do it"
                )
            result = _run_locked(vault, options, progress, now, None)
            return replace(result, warnings=notices + result.warnings)
    try:
        # the step: lock, the gate (asked again under the lock), recovery of any interrupted step
        # (before the snapshot: a half-applied step must not be committed as "hand edits"), snapshot
        with open_step(vault, "converge", now=now, gate=_gate(options)) as step:
            result = _run_locked(vault, options, progress, now, step)
            return replace(
                result,
                snapshot_commit=step.snapshot,
                warnings=step.notices + _unread(step, result.warnings) + result.warnings,
            )
    except _NotDue as not_due:
        return PassResult("not-due", message=not_due.reason)


def _unread(step: Step, warnings: list[str]) -> list[str]:
    """The files the snapshot left out, unless the scan named them already."""
    return [
        line
        for rel, line in step.unread.items()
        if not any(warning.startswith(f"{rel} ") for warning in warnings)
    ]


def _gate(options: PassOptions) -> Callable[[], None] | None:
    ask = options.gate
    if ask is None:
        return None

    def gate() -> None:
        reason = ask()
        if reason:
            raise _NotDue(reason)

    return gate


def _run_locked(
    vault: Vault, options: PassOptions, progress: Progress, now: datetime, step: Step | None
) -> PassResult:
    """The stages in order; each early exit builds its PassResult from the values made so far."""
    # While the pass only reads, each folder and each layer is listed once: the scan, the
    # originals, the validator's note names and memory files asked for ten listings of four
    # layers. The listings end before the first write, so a listing after it sees it.
    with ExitStack() as reading:
        reading.enter_context(vault.listed_once())
        inputs = gather(vault, options, now, progress)
        if inputs.nothing:
            return PassResult("nothing", message=inputs.nothing, warnings=list(inputs.warnings))
        plan = plan_prompt(vault, inputs)
        if options.emit_prompt:
            return emitted_prompt(inputs, plan)

        # a dry run's id names its record
        pass_id = step.id if step is not None else new_step_id(now)
        record = new_run(vault, pass_id, redact=not options.keep_raw_prompt)
        # A pass that fails, is refused or is interrupted leaves its outcome in the run record, so
        # `cmem log` lists it beside the committed ones (it has no commit of its own to be read back).
        engine: Engine | None = None
        checked: CheckedChange | None = None
        applying = False
        try:
            context = validator_context(vault, inputs, plan, options.allow_shrink)
            engine = choose_engine(vault, options, inputs, plan, progress, record)
            record_run(vault, record, engine, inputs, plan)
            prompt = plan.prompt if engine.reads_prompt else None
            checked = check_replies(vault, engine, prompt, context, record, progress)
            quarantined: dict[str, str] = {}
            if checked.validation is None and engine.kind == "builtin":
                # the builtin engine is deterministic: find the notes it cannot converge, put
                # them aside with the reason, and converge the others (issue 35)
                inputs, checked, quarantined = isolate_builtin(
                    vault, inputs, plan, options, checked
                )
            so_far = _result_so_far(pass_id, inputs, plan, engine, checked, record)
            if checked.validation is None:
                return _rejected(so_far, engine, record, step, now)

            planned = plan_pass(vault, inputs, checked.validation, quarantined)
            result = _with_plan(so_far, planned)
            if options.dry_run or step is None:
                return replace(result, status="dry-run")
            if (options.propose or vault.config.review) and not options.apply_proposal:
                return propose(vault, inputs, result, record, now)
            if (
                not planned.writes
                and not planned.converged
                and not _recorded(inputs, planned)
                and not quarantined
            ):
                return replace(
                    result,
                    status="nothing",
                    message="the engine changed nothing and converged no note; nothing was committed",
                )
            reading.close()
            applying = True
            applied = commit_pass(vault, step, inputs, planned, result, now)
            result = replace(
                result,
                status="applied",
                commit=applied.commit,
                staged=applied.staged,
                warnings=applied.warnings,
            )
            record.write("result.json", result.to_json())
            return result
        except KeyboardInterrupt as interrupt:
            so_far = _stopped_so_far(pass_id, inputs, engine, checked, record, interrupt)
            _record_interrupt(interrupt, so_far, record, step, now, applying)
            raise
        except CmemError as exc:
            so_far = _stopped_so_far(pass_id, inputs, engine, checked, record, exc)
            _record_error(exc, so_far, record, step, now, applying)
            raise


def _rejected(
    so_far: PassResult, engine: Engine, record: RunRecord, step: Step | None, now: datetime
) -> PassResult:
    """A reply the validator refused: nothing is written, and the result says how often we asked."""
    asked = (
        "once"
        if engine.repair_rounds == 0
        else f"{engine.repair_rounds + 1} times ({engine.repair_rounds} repair rounds)"
    )
    what = (
        "the reply in the response file was rejected"
        if engine.kind == "response"
        else f"the {engine.kind} response was rejected after asking {asked}"
    )
    failed = replace(
        so_far,
        message=f"{what}; nothing was written (run record: {record.folder})",
    )
    record_outcome(record, failed, step, now, "failed", failed.message, failed.errors)
    return failed


def _record_interrupt(
    interrupt: KeyboardInterrupt,
    so_far: PassResult,
    record: RunRecord,
    step: Step | None,
    now: datetime,
    applying: bool,
) -> None:
    """Ctrl-C: the run record keeps the outcome, the interrupt carries what was and was not done."""
    record_outcome(
        record,
        so_far,
        step,
        now,
        "interrupted",
        "stopped with Ctrl-C" + (" while writing" if applying else ""),
    )
    set_stop_summary(
        interrupt, interrupted_summary(so_far, step.snapshot if step else None, applying)
    )


def _record_error(
    exc: CmemError,
    so_far: PassResult,
    record: RunRecord,
    step: Step | None,
    now: datetime,
    applying: bool,
) -> None:
    """A refused or failed pass: the run record keeps the outcome, the error says what was kept."""
    from cmem.setup.trust import UntrustedCommand

    refused = isinstance(exc, UntrustedCommand)
    record_outcome(record, so_far, step, now, "refused" if refused else "failed", str(exc))
    if step is not None and not applying:  # an apply's own error already says what was kept
        exc.args = (f"{exc}\n{failure_summary(so_far, step.snapshot)}",)


# --- the stages ---------------------------------------------------------------------------


def gather(vault: Vault, options: PassOptions, now: datetime, progress: Progress) -> PassInputs:
    """Scan, read every convergent file, select the pending notes that fit the budget."""
    from cmem.scan.scanner import scan_vault
    from cmem.scan.signals import ALREADY_CONVERGED, EXCLUDED
    from cmem.vault.config import model_configured

    state = load_state(vault.state_file)
    progress("scanning", None)
    scan = scan_vault(
        vault, state=state, only=options.only, backlog=options.backlog, confirm_only=True
    )
    odd = tuple(odd_warnings(_said_once(vault, scan.odd, options))) + tuple(
        f"{q.note} is quarantined: {q.reason}; {q.way_out}" for q in scan.quarantined
    )
    pass_date = now.date().isoformat()
    meaning = reads_meaning(vault, options)
    model_set = meaning or model_configured(vault, options.llm)
    takes, for_model = engine_takes(scan.pending, meaning)
    if not takes:
        empty = Selection([], [], [], for_model=for_model)
        return PassInputs(
            state, pass_date, {}, {}, set(), empty, frozenset(), odd, nothing_pending(scan)
        )
    originals, raw_originals = read_originals(vault)
    hand_edited = hand_edited_files(vault, state)
    budget = options.budget or vault.config.budget_tokens
    # The prompt's fixed part (a whole prompt without notes) is the budget's share the notes may
    # not take; it decides only between notes, and the first note is always taken: one pending
    # note (the everyday pass, or `--only` one) needs no budget and no such prompt built.
    fixed = (
        assemble_prompt(vault, [], originals, pass_date, hand_edited).tokens
        if len(takes) > 1
        else 0
    )
    selection = select_notes(
        vault,
        scan.pending,
        max(budget - fixed, 0),
        options.only,
        reads_meaning=meaning,
    )
    deferred_lines = frozenset(
        (d.note, d.line)
        for d in scan.deferred
        if d.line and d.kind not in (ALREADY_CONVERGED, EXCLUDED)
    )
    rule_reasons = {(d.note, d.line): d.reason for d in scan.deferred if d.line}
    in_memory = frozenset(
        (d.note, d.line) for d in scan.deferred if d.line and d.kind == ALREADY_CONVERGED
    )
    nothing = (
        None if selection.notes else "nothing to converge (the pending notes cannot be read now)"
    )
    return PassInputs(
        state,
        pass_date,
        originals,
        raw_originals,
        hand_edited,
        selection,
        deferred_lines,
        odd,
        nothing,
        reads_meaning=meaning,
        rule_reasons=rule_reasons,
        in_memory=in_memory,
        backlog_record=None if options.only else _backlog_record(vault, scan),
        model_lines={p.rel: p.model_lines for p in scan.pending},
        model_set=model_set,
    )


def _backlog_record(vault: Vault, scan) -> str | None:
    """backlog.json recording folders widened since it was written, and their notes."""
    from cmem.vault.backlog import read_record, widened_record

    return widened_record(vault, read_record(vault), scan.widened)


def _said_once(vault: Vault, odd_files: list, options: PassOptions) -> list:
    """docs/design.md §1: what cmem skips or will not rewrite, said once — by the first pass (or `status`)
    after it appears, so its commit and `cmem log` hold it once; `cmem doctor` lists them all."""
    from cmem.vault.warned import fresh_warnings, mark_shown

    fresh = fresh_warnings(vault.machine_dir, odd_files)
    if not options.emit_prompt:
        mark_shown(vault.machine_dir, odd_files)
    return fresh


def reads_meaning(vault: Vault, options: PassOptions) -> bool:
    """Whether a model reads this pass's notes: a --response (an agent is the model), a prompt
    asked for, or a model command named; the builtin engine reads cue lines only."""
    if options.response_text is not None or options.emit_prompt:
        return True
    if options.engine == "builtin":
        return False
    from cmem.vault.config import model_configured

    return model_configured(vault, options.llm) or options.engine == "llm"


def nothing_pending(scan) -> str:
    """What "nothing to converge" means here: what waits, and why (docs/design.md §2), counted as
    `status` counts it (`reading/waiting.py`)."""
    from cmem.converge.waiting_words import waiting_clause

    waiting = list(scan.pending)
    if not waiting:
        if scan.backlog:
            return (
                f"nothing to converge; {len(scan.backlog)} notes of the adopted folder wait in the "
                "backlog (`cmem converge --backlog` converges them)"
            )
        return "nothing to converge"
    lines = sum(p.model_lines for p in waiting)
    notes = sum(1 for p in waiting if p.model_lines)
    if not lines:  # pending only through deferred lines: `cmem scan` says why each waits
        return "nothing the builtin engine can converge now; `cmem scan` shows what waits and why"
    return f"nothing the builtin engine can converge (it reads cue lines only): {waiting_clause(lines, notes)}"


def plan_prompt(vault: Vault, inputs: PassInputs) -> PromptPlan:
    def assemble() -> Prompt:
        return assemble_prompt(
            vault, inputs.selection.notes, inputs.originals, inputs.pass_date, inputs.hand_edited
        )

    raws = inputs.raw_originals
    writable = {rel: text for rel, text in inputs.originals.items() if rewritable(raws[rel])}
    warnings = tuple(
        f"{rel} {unwritable_reason(raws[rel])}; the engine sees it, the pass never rewrites it"
        for rel in sorted(inputs.originals)
        if rel not in writable
    )  # a memory file that cannot be read is named by the scan's odd files
    return PromptPlan(writable, warnings, assemble)


def emitted_prompt(inputs: PassInputs, plan: PromptPlan) -> PassResult:
    """--emit-prompt (and the MCP tool): the agent that asked is a model too, so the prompt is
    redacted as for any model."""
    from cmem.text.secrets import redact_secrets

    safe_prompt, redacted = redact_secrets(plan.prompt.text)
    notice = (
        [f"{redacted} credential-like strings were redacted from the prompt"] if redacted else []
    )
    return PassResult(
        "prompt",
        prompt=safe_prompt,
        waiting=[p.rel for p in inputs.selection.waiting],
        selected=[n.rel for n in inputs.selection.notes],
        warnings=[*inputs.warnings, *notice],
    )


def plan_pass(
    vault: Vault,
    inputs: PassInputs,
    validation: Validation,
    quarantined: dict[str, str] | None = None,
) -> PlannedPass:
    """Which notes converged or were deferred (whole or some lines), the new texts, and for the
    builtin engine the fate of every signal line (a model's pass is judged by its accounting:
    rule 7 holds every converged note cited, so a paraphrase is not left pending)."""
    by_rel = {n.rel: n for n in inputs.selection.notes}
    converged = _entries_notes(validation.converged, by_rel)
    deferred = []
    for entry in validation.deferred:
        rel = _match_note(entry.note, by_rel) or entry.note
        item: dict[str, object] = {"note": rel, "reason": entry.reason}
        if entry.lines:
            item["lines"] = list(entry.lines)
        deferred.append(item)
    writes = dict(validation.writes)
    lines = (
        []
        if inputs.reads_meaning
        else _line_fates(
            vault, inputs.selection, converged, {**inputs.originals, **writes}, validation
        )
    )
    pending = tuple(
        f"{fate.note} line {fate.line}: the builtin engine placed the {fate.cls} signal in no "
        "statement or trace; it waits for a model (`cmem scan` shows it)"
        for fate in lines
        if fate.where == "pending"
    )
    diff, diffstat = make_diff(inputs.originals, writes)
    into = _into(validation.converged, by_rel)
    planned = PlannedPass(
        converged,
        deferred,
        writes,
        into,
        lines,
        diff,
        diffstat,
        validation.moves,
        pending,
        merged=list(validation.merged),
        line_reasons={k: dict(v) for k, v in validation.line_reasons.items()},
        quarantined=dict(quarantined or {}),
    )
    if inputs.reads_meaning:
        return planned
    return replace(planned, left_for_model=_left_for_model(inputs, planned))


def _left_for_model(inputs: PassInputs, planned: PlannedPass) -> tuple[int, int]:
    """(lines, notes) that wait for a model once a builtin pass is applied: each note it
    accounts for by its new account, every other pending note as the scan counted it — what
    `status` says after the pass, in the same words."""
    from cmem.converge.accounting import account_note, left_for_model

    waiting = dict(inputs.model_lines)
    for note, verdict in _verdicts(inputs, planned):
        entry = account_note(inputs.state.notes.get(note.rel), note, verdict, False, "", "")
        waiting[note.rel] = left_for_model(entry, note)
    return sum(waiting.values()), sum(1 for lines in waiting.values() if lines)


def propose(
    vault: Vault, inputs: PassInputs, result: PassResult, record: RunRecord, now: datetime
) -> PassResult:
    """Review mode: the run record is the proposal; `cmem apply` runs the pass again from it."""
    from cmem.converge.proposal import Proposal, save_proposal

    selected = [n.rel for n in inputs.selection.notes]
    timestamp = now.isoformat(timespec="seconds")
    save_proposal(vault, Proposal(record.pass_id, str(record.folder), selected, timestamp))
    return replace(
        result,
        status="proposed",
        message="proposal saved: review and apply it with `cmem apply`, or discard it with `cmem apply --drop`",
    )


def stage_changes(
    vault: Vault,
    pass_id: str,
    inputs: PassInputs,
    planned: PlannedPass,
    so_far: PassResult,
    now: datetime,
) -> StagedChanges:
    """The memory files in their own line ends, state.json with the converged notes and this
    pass, and the archive checklist with the converged notes staged."""
    pass_date, state = inputs.pass_date, inputs.state
    changes = ChangeSet()
    for rel, text in planned.writes.items():
        raw = inputs.raw_originals.get(rel)
        changes.write(rel, in_line_ends(text, raw), raw)
    checklist_bytes = current_bytes(vault.checklist_path)
    notes = dict(state.notes)  # a new State: the one read stays as it was read
    time = now.isoformat(timespec="seconds")
    for note, verdict in _verdicts(inputs, planned):
        notes[note.rel] = account_note(
            state.notes.get(note.rel),
            note,
            verdict,
            inputs.reads_meaning,
            pass_id,
            time,
        )
    stage_entries = []
    by_rel = {n.rel: n for n in inputs.selection.notes}
    for rel in planned.converged:
        note = by_rel[rel]
        # filed by the note's own date, not the pass's: a 2024 diary goes to archive/2024-04/
        frontmatter = "\n".join(note.lines[: note.body_start - 1])
        day = filing_date(note.name, frontmatter, note.mtime_ns, pass_date)
        target = archive_target(vault.config.archive_dir, vault.config.archive_pattern, rel, day)
        stage_entries.append(
            StageEntry(note.name, target, sorted(planned.into.get(rel, [])), note.sha256)
        )
    record_entry = StepRecord(
        pass_id,
        "converge",
        now.isoformat(timespec="seconds"),
        notes=planned.converged,
        changed=so_far.changed,
        engine=so_far.engine,
        model=so_far.model,
        warnings=len(so_far.warnings),
        wrote=history.blob_ids(vault.root, changes.written),
    )
    new_state = State(notes=notes, passes=[*state.passes, record_entry.to_json()])
    # merged into the state.json on disk now: a pull or another pass may have rewritten it
    # while the model thought, and what they recorded stays
    on_disk, merged = merged_with_disk(vault, state, new_state)
    changes.write(vault.rel(vault.state_file), merged, on_disk)
    if inputs.backlog_record is not None:
        from cmem.vault.backlog import backlog_path

        path = backlog_path(vault)
        changes.write(vault.rel(path), inputs.backlog_record.encode("utf-8"), current_bytes(path))
    if stage_entries:
        current = (
            checklist_bytes.decode("utf-8", errors="replace")
            if checklist_bytes is not None
            else None
        )
        staged_text = stage_notes(current, stage_entries, pass_id, pass_date, vault.config.language)
        changes.write(
            vault.checklist_rel, in_line_ends(staged_text, checklist_bytes), checklist_bytes
        )
    return StagedChanges(changes, [e.note_name for e in stage_entries])


def commit_pass(
    vault: Vault,
    step: Step,
    inputs: PassInputs,
    planned: PlannedPass,
    so_far: PassResult,
    now: datetime,
) -> AppliedPass:
    """Through the step layer: journal, all-or-nothing apply, commit. cmem's own records
    (state.json, the checklist) are rebuilt on what is on disk, so one another writer changed
    in the instant before the apply is merged again, never a reason to stop."""
    own = {vault.rel(vault.state_file), vault.checklist_rel}
    for attempt in range(_RESTAGE_TRIES):
        staged = stage_changes(vault, step.id, inputs, planned, so_far, now)
        # checked last, just before the commit: the edits made while the model ran
        warnings = so_far.warnings + changed_inputs(vault, inputs.selection)
        message = pass_message(replace(so_far, staged=staged.staged, warnings=warnings), step.id)
        try:
            return AppliedPass(step.commit(staged.changes, message), staged.staged, warnings)
        except SecondWriter as exc:
            ours_on_disk = any(
                change.new != change.old and current_bytes(vault.root / change.rel) == change.new
                for change in staged.changes.ordered()
            )
            if exc.rel not in own or ours_on_disk or attempt == _RESTAGE_TRIES - 1:
                raise
    raise AssertionError("unreachable")


_RESTAGE_TRIES = 3


# --- building the PassResult --------------------------------------------------------------


def _result_so_far(
    pass_id: str,
    inputs: PassInputs,
    plan: PromptPlan,
    engine: Engine,
    checked: CheckedChange,
    record: RunRecord,
) -> PassResult:
    """A failed pass's result, as far as the engine and the validator took it; the other exits
    build on it."""
    return PassResult(
        "failed",
        pass_id=pass_id,
        waiting=[p.rel for p in inputs.selection.waiting],
        signals=sum(len(n.signals) for n in inputs.selection.notes),
        warnings=[*inputs.warnings, *plan.warnings, *checked.warnings],
        errors=list(checked.errors),
        run_dir=str(record.folder),
        selected=[n.rel for n in inputs.selection.notes],
        engine=engine.name,
        model=engine.model,
        rounds=checked.rounds,
        model_set=inputs.model_set,
    )


def _with_plan(result: PassResult, planned: PlannedPass) -> PassResult:
    return replace(
        result,
        left_for_model=planned.left_for_model,
        converged=list(planned.converged),
        deferred=list(planned.deferred),
        changed=sorted(planned.writes),
        lines=list(planned.lines),
        diff=planned.diff,
        diffstat=list(planned.diffstat),
        moved=list(planned.moved),
        merged=list(planned.merged),
        quarantined=[{"note": n, "reason": r} for n, r in planned.quarantined.items()],
        warnings=[*result.warnings, *planned.warnings],
    )


def _stopped_so_far(
    pass_id: str,
    inputs: PassInputs,
    engine: Engine | None,
    checked: CheckedChange | None,
    record: RunRecord,
    stop: BaseException,
) -> PassResult:
    """What a pass stopped by an error or Ctrl-C had done: the outcome record and the summary
    read the engine, the rounds and the run record from it."""
    rounds = checked.rounds if checked is not None else stop_rounds(stop)
    return PassResult(
        "failed",
        pass_id=pass_id,
        run_dir=str(record.folder),
        selected=[n.rel for n in inputs.selection.notes],
        engine=engine.name if engine else None,
        model=engine.model if engine else None,
        rounds=rounds,
    )


def _match_note(name: str, by_rel: dict[str, SelectedNote]) -> str | None:
    if name in by_rel:
        return name
    for rel, note in by_rel.items():
        if name in (note.name, rel.removesuffix(".md")):
            return rel
    return None


def _entries_notes(entries, by_rel) -> list[str]:
    seen = []
    for entry in entries:
        rel = _match_note(getattr(entry, "note", entry), by_rel)
        if rel and rel not in seen:
            seen.append(rel)
    return seen


def _into(entries, by_rel) -> dict[str, list[str]]:
    result: dict[str, list[str]] = {}
    for entry in entries:
        rel = _match_note(entry.note, by_rel)
        if rel:
            result.setdefault(rel, []).extend(t for t in entry.into if t not in result.get(rel, []))
    return result


def _recorded(inputs: PassInputs, planned: PlannedPass) -> bool:
    """Whether the pass has a deferral to record (state.json), so the note is not sent again
    unchanged: a model's judgement, or the builtin engine's (which leaves the note to a model)."""
    return bool(planned.deferred) and bool(inputs.selection.notes)


def _verdicts(inputs: PassInputs, planned: PlannedPass):
    """(note, Verdict) for each note of the pass the reply converged or deferred, whole or by
    lines."""
    from cmem.converge.accounting import Verdict

    converged = set(planned.converged)
    whole = {d["note"]: d["reason"] for d in planned.deferred if not d.get("lines")}
    for note in inputs.quarantined_notes:
        reason = planned.quarantined[note.rel]
        yield note, Verdict(converged=False, reason=reason, quarantined=reason)
    for note in inputs.selection.notes:
        if note.rel not in converged | set(whole) | set(planned.line_reasons):
            continue  # no element named it: not judged, so it stays pending
        unplaced = frozenset(
            fate.line for fate in planned.lines if fate.note == note.rel and fate.where == "pending"
        )
        rule_deferred = (
            {}
            if inputs.reads_meaning
            else {
                line: inputs.rule_reasons.get((note.rel, line), "deferred by the scan")
                for rel, line in inputs.deferred_lines
                if rel == note.rel
            }
        )
        yield (
            note,
            Verdict(
                converged=note.rel in converged,
                into=list(planned.into.get(note.rel, [])),
                reason=whole.get(note.rel, ""),
                deferred_lines=planned.line_reasons.get(note.rel, {}),
                unplaced=unplaced,
                rule_deferred=rule_deferred,
                known=frozenset(line for rel, line in inputs.in_memory if rel == note.rel),
            ),
        )


def _line_fates(
    vault: Vault,
    selection: Selection,
    converged: list[str],
    layer: dict[str, str],
    validation: Validation,
) -> list:
    """Where each signal line of a converged note went; a line the engine deferred is marked
    so, its reason being its one account."""
    from cmem.converge.coverage import deferred_by_engine, line_fates

    fates = line_fates(selection.notes, converged, layer, vault.config.formats)
    engine_deferred = {note: set(lines) for note, lines in validation.line_reasons.items()}
    return deferred_by_engine(fates, engine_deferred)
