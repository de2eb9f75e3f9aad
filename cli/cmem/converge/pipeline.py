"""The convergence pass (SPEC §3) as typed stages:

select → assemble the prompt → run the engine → parse → validate (with repair rounds) → plan the
files, state and archive checklist → hand them to the step layer → report.

The pass is one step (cmem.steps): the lock, the recovery of any interrupted step, the git
preflight and snapshot, the journal, the all-or-nothing apply and the commit happen there. Each
stage is a function; `run_pass` strings them together and returns a `PassResult` the CLI renders
(or prints as JSON, SPEC §11).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable

from cmem.archive.checklist import StageEntry, archive_target, stage_notes
from cmem.converge.prompt import Prompt, assemble_prompt, repair_prompt
from cmem.converge.selection import SelectedNote, Selection, select_notes
from cmem.errors import CmemError
from cmem.steps import commits as history
from cmem.steps import journal
from cmem.steps.changes import ChangeSet, current_bytes, in_line_ends
from cmem.steps.lock import vault_lock
from cmem.steps.message import CommitMessage
from cmem.steps.record import StepRecord, new_step_id
from cmem.steps.run_records import RunRecord, new_run
from cmem.steps.runner import Step, open_step
from cmem.vault.layers import Vault
from cmem.vault.notes import line_end
from cmem.vault.state_json import ConvergedNote, State, line_key, load_state
from cmem.vault.state_json import state_bytes as state_to_bytes

# (message, elapsed seconds or None[, the time limit in seconds]) — cmem.render.reports.Spinner
Progress = Callable[..., None]


@dataclass
class PassOptions:
    engine: str | None = None  # "builtin", "llm", or None: llm if a command is configured
    llm: str | None = None  # --llm
    dry_run: bool = False
    emit_prompt: bool = False
    response_text: str | None = None  # --response FILE (already read)
    only: list[str] | None = None
    budget: int | None = None
    propose: bool = False
    allow_shrink: bool = False
    apply_proposal: bool = False  # `cmem apply`: apply even in review mode
    keep_raw_prompt: bool = False  # --keep-raw-prompt: the run record keeps credentials unredacted
    now: datetime | None = None
    # Unattended triggers: asked again once the lock is held; a reason means "not due any more"
    # (a trigger that waited behind another pass must not run a second one).
    gate: Callable[[], str | None] | None = None


@dataclass
class PassResult:
    status: str  # applied | dry-run | nothing | busy | failed | proposed | prompt | not-due
    pass_id: str | None = None
    commit: str | None = None
    snapshot_commit: str | None = None
    changed: list[str] = field(default_factory=list)
    converged: list[str] = field(default_factory=list)
    deferred: list[dict] = field(default_factory=list)
    staged: list[str] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    moved: list[dict] = field(default_factory=list)  # statements that left one file for another
    diff: str = ""
    diffstat: list[tuple[str, int, int]] = field(default_factory=list)
    prompt: str | None = None
    engine: str | None = None
    model: str | None = None
    run_dir: str | None = None
    signals: int = 0
    message: str = ""
    selected: list[str] = field(default_factory=list)  # the notes the pass (or its prompt) covers
    lines: list = field(
        default_factory=list
    )  # coverage.LineFate of each signal line of a converged note
    rounds: int = 0  # times the engine was asked (1 + repair rounds)

    def to_json(self) -> dict:
        return {
            "status": self.status,
            "pass": self.pass_id,
            "commit": self.commit,
            "changed": self.changed,
            "converged": self.converged,
            "deferred": self.deferred,
            "staged": self.staged,
            "warnings": self.warnings,
            "errors": self.errors,
            "waiting": self.waiting,
            "moved": self.moved,
            "snapshot_commit": self.snapshot_commit,
            "engine": self.engine,
            "model": self.model,
            "run": self.run_dir,
            "diffstat": [{"path": p, "added": a, "removed": r} for p, a, r in self.diffstat],
            "signal_lines": [fate.to_json() for fate in self.lines],
            "rounds": self.rounds,
        }


# --- stages -------------------------------------------------------------------------------


def hand_edited_files(vault: Vault, state: State) -> set[str]:
    """Convergent files changed by someone else since the last pass: the user's word."""
    last = state.last_of_kind("converge")
    commit = history.find_pass_commit(vault.root, last["id"]) if last else None
    if commit is None:
        return set()
    # against the working tree, so a dry run or --emit-prompt (no snapshot commit) sees them too
    changed = history.run_git(
        vault.root,
        "diff",
        "--name-only",
        "--relative",
        commit.sha,
        "--",
        *vault.convergent_dirs,
        check=False,
    )
    added = history.run_git(
        vault.root,
        "ls-files",
        "--others",
        "--exclude-standard",
        "--",
        *vault.convergent_dirs,
        check=False,
    )
    return {line.strip() for line in (changed.stdout + added.stdout).splitlines() if line.strip()}


def read_originals(vault: Vault) -> tuple[dict[str, str], dict[str, bytes]]:
    """Every convergent file's text (for the prompt and validator) and bytes (for the
    second-writer check). A file cmem may not rewrite is still shown, and the validator refuses
    writes to it."""
    texts, raws = {}, {}
    for note_file in vault.convergent_files():
        raw = current_bytes(note_file.path)
        if raw is None:
            continue
        raws[note_file.rel] = raw
        texts[note_file.rel] = raw.decode("utf-8", errors="replace").replace("\r\n", "\n")
    return texts, raws


def rewritable(raw: bytes) -> bool:
    """cmem rewrites only files it can write back as they were encoded: UTF-8 without a BOM,
    one kind of line end, no NUL (SPEC §1). Others are shown to the engine but protected from
    writes."""
    return unwritable_reason(raw) is None


def unwritable_reason(raw: bytes) -> str | None:
    if raw.startswith(b"\xef\xbb\xbf"):
        return "starts with a byte-order mark"
    if b"\r" in raw and line_end(raw) != b"\r\n":
        return "mixes line ends (CRLF and LF, or a lone CR)"
    if b"\x00" in raw:
        return "contains NUL bytes"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return "is not valid UTF-8"
    return None


def odd_warnings(odd_files, limit: int = 20) -> list[str]:
    warnings = [f"{odd.rel} {odd.message}" for odd in odd_files[:limit]]
    if len(odd_files) > limit:
        warnings.append(f"… and {len(odd_files) - limit} more odd files (`cmem status` lists them)")
    return warnings


def changed_inputs(vault: Vault, selection: Selection) -> list[str]:
    """Notes edited (Obsidian's autosave) while the model ran. The pass never writes a note; it
    converged the version it read, state.json keeps that version's digest, so the lines added
    since stay pending for the next pass, and the checklist will not archive the edited note."""
    import hashlib

    warnings = []
    for note in selection.notes:
        raw = current_bytes(vault.root / note.rel)
        if raw is None:
            warnings.append(
                f"{note.rel} was moved or deleted while the pass ran; the pass used the version it read"
            )
        elif hashlib.sha256(raw).hexdigest() != note.sha256:
            warnings.append(
                f"{note.rel} changed while the pass ran; the pass used the version it read, your new lines wait for the next pass"
            )
    return warnings


class _NotDue(Exception):
    def __init__(self, reason: str):
        self.reason = reason


# --- the pass -----------------------------------------------------------------------------


def run_pass(vault: Vault, options: PassOptions, progress: Progress | None = None) -> PassResult:
    progress = progress or (lambda message, elapsed, limit=None: None)
    now = options.now or datetime.now().astimezone()
    if options.dry_run or options.emit_prompt:
        with vault_lock(vault.machine_dir, "converge"):
            notices = []
            if journal.pending_journals(vault):
                notices.append(
                    "an interrupted step is waiting to be finished; the next command that writes "
                    "(or `cmem doctor --fix`) will do it"
                )
            result = _run_locked(vault, options, progress, now, None)
            result.warnings = notices + result.warnings
            return result
    try:
        # the step: lock, the gate (asked again under the lock), recovery of any interrupted step
        # (before the snapshot: a half-applied step must not be committed as "hand edits"), snapshot
        with open_step(vault, "converge", now=now, gate=_gate(options)) as step:
            result = _run_locked(vault, options, progress, now, step)
            result.snapshot_commit = step.snapshot
            result.warnings = step.notices + result.warnings
            return result
    except _NotDue as not_due:
        return PassResult("not-due", message=not_due.reason)


def _gate(options: PassOptions):
    if options.gate is None:
        return None

    def gate() -> None:
        reason = options.gate()
        if reason:
            raise _NotDue(reason)

    return gate


def _run_locked(
    vault: Vault, options: PassOptions, progress: Progress, now: datetime, step: Step | None
) -> PassResult:
    from cmem.scan.scanner import scan_vault

    state = load_state(vault.state_file)
    progress("scanning", None)
    scan = scan_vault(vault, state=state, only=options.only)
    odd = odd_warnings(scan.odd)  # SPEC §1: a note cmem skips or will not rewrite is named once
    if not scan.pending:
        return PassResult("nothing", message="nothing to converge", warnings=odd)
    pass_date = now.date().isoformat()
    originals, raw_originals = read_originals(vault)
    hand_edited = hand_edited_files(vault, state)
    budget = options.budget or vault.config.budget_tokens
    fixed = assemble_prompt(vault, [], originals, pass_date, hand_edited).tokens
    selection = select_notes(vault, scan.pending, max(budget - fixed, 0), options.only)
    from cmem.scan.signals import ALREADY_CONVERGED, EXCLUDED

    selection.deferred_lines = {
        (d.note, d.line)
        for d in scan.deferred
        if d.line and d.kind not in (ALREADY_CONVERGED, EXCLUDED)
    }
    if not selection.notes:
        return PassResult(
            "nothing",
            message="nothing to converge (the pending notes cannot be read now)",
            warnings=odd,
        )
    prompt = assemble_prompt(vault, selection.notes, originals, pass_date, hand_edited)
    if options.emit_prompt:
        # the agent that asked is a model too (--emit-prompt, the MCP tool): redact as for any model
        from cmem.text.secrets import redact_secrets

        safe_prompt, redacted = redact_secrets(prompt.text)
        notice = (
            [f"{redacted} credential-like strings were redacted from the prompt"]
            if redacted
            else []
        )
        return PassResult(
            "prompt",
            prompt=safe_prompt,
            waiting=[p.rel for p in selection.waiting],
            selected=[n.rel for n in selection.notes],
            warnings=odd + notice,
        )

    pass_id = (
        step.id if step is not None else new_step_id(now)
    )  # a dry run's id names its run record
    result = PassResult(
        "failed",
        pass_id=pass_id,
        waiting=[p.rel for p in selection.waiting],
        signals=sum(len(n.signals) for n in selection.notes),
        warnings=odd,
    )
    record = new_run(vault, pass_id, redact=not options.keep_raw_prompt)
    result.run_dir = str(record.folder)
    # Files cmem may not rewrite are left out of the validator's originals: it then reads them
    # itself, sees the BOM, CRLF or bad bytes, and refuses any write to them.
    writable = {rel: text for rel, text in originals.items() if rewritable(raw_originals[rel])}
    result.warnings += [
        f"{rel} {unwritable_reason(raw_originals[rel])}; the engine sees it, the pass never rewrites it"
        for rel in sorted(originals)
        if rel not in writable
    ]
    result.selected = [n.rel for n in selection.notes]
    # A pass that fails, is refused or is interrupted leaves its outcome in the run record, so
    # `cmem log` lists it beside the committed ones (it has no commit of its own to be read back).
    applying = False
    try:
        validation = _converge(
            vault, options, selection, writable, prompt, pass_date, record, result, progress
        )
        if validation is None:
            _record_outcome(record, result, step, now, "failed", result.message, result.errors)
            return result
        applying = True
        return _finish(
            vault,
            options,
            state,
            selection,
            validation,
            raw_originals,
            originals,
            step,
            pass_date,
            now,
            result,
            record,
        )
    except KeyboardInterrupt as interrupt:
        _record_outcome(
            record,
            result,
            step,
            now,
            "interrupted",
            "stopped with Ctrl-C" + (" while writing" if applying else ""),
        )
        # the CLI prints this under "interrupted": what was and was not done
        interrupt.cmem_summary = interrupted_summary(
            result, step.snapshot if step else None, applying
        )
        raise
    except CmemError as exc:
        from cmem.setup.trust import UntrustedCommand

        refused = isinstance(exc, UntrustedCommand)
        _record_outcome(record, result, step, now, "refused" if refused else "failed", str(exc))
        if step is not None and not applying:  # an apply's own error already says what was kept
            exc.args = (f"{exc}\n{failure_summary(result, step.snapshot)}",)
        raise


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


def _record_outcome(
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
        record.write(
            "outcome.json",
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


def _context(
    vault: Vault,
    selection: Selection,
    originals: dict[str, str],
    pass_date: str,
    allow_shrink: bool,
):
    from cmem.converge.validate import PassContext

    return PassContext(
        pass_date=pass_date,
        selected=[n.rel for n in selection.notes],
        originals=dict(originals),
        note_names=vault.note_names(),
        allow_shrink=allow_shrink,
        source_texts={n.name: n.text for n in selection.notes},
    )


def _converge(
    vault,
    options,
    selection,
    originals,
    prompt: Prompt,
    pass_date,
    record: RunRecord,
    result: PassResult,
    progress,
):
    """Engine → parse → validate, with repair rounds for a model. Returns the Validation, or
    None with `result` filled in when the pass failed."""
    from cmem.converge.reply_text import clean_reply
    from cmem.converge.response import parse_response
    from cmem.converge.validate import format_issues, validate_response

    ctx = _context(vault, selection, originals, pass_date, options.allow_shrink)
    engine, ask = _engine(vault, options, selection, originals, pass_date, result, progress, record)
    redacted = record.write("prompt.txt", prompt.text)
    record.write(
        "run.json",
        {
            "engine": engine,
            "model": result.model,
            "notes": [n.rel for n in selection.notes],
            "pass_date": pass_date,
            "redacted": redacted,
            "raw_prompt_kept": not record.redact,
        },
    )
    rounds = vault.config.repair_rounds if engine == "llm" and options.response_text is None else 0
    current_prompt = prompt.text
    acceptable = (
        None  # a valid reply with likely inventions, kept while the model is asked once more
    )
    for attempt in range(1, rounds + 2):
        result.rounds = attempt
        response_text = ask(current_prompt, attempt)
        record.write(f"response-{attempt}.txt", response_text)
        # ANSI codes and a reasoning model's leading <think> block are no part of the answer
        cleaned = clean_reply(response_text)
        response_text = cleaned.text
        response = parse_response(response_text)
        validation = validate_response(vault, response, ctx)
        issues = list(validation.errors)  # the parser's own errors and warnings are included
        warnings = [str(w) for w in validation.warnings]
        record.write(
            f"validation-{attempt}.json",
            {"errors": [str(i) for i in issues], "warnings": warnings, "removed": cleaned.removed},
        )
        if not issues and validation.inventions and acceptable is None and attempt <= rounds:
            # A likely invention goes back once ("cite the note that says this or drop it");
            # only a second answer, or this one if the second is worse, is applied with the warning.
            acceptable = (validation, warnings)
            progress(
                f"{len(validation.inventions)} statements may be invented; asking the model to cite or drop them",
                None,
            )
            current_prompt = repair_prompt(
                vault, prompt.text, response_text, format_issues(validation.inventions), pass_date
            )
            record.write(f"prompt-{attempt + 1}.txt", current_prompt)
            continue
        if not issues:
            result.warnings += warnings
            result.moved = validation.moves
            return validation
        result.errors = [str(i) for i in issues]
        if acceptable is not None:
            result.errors = []
            result.warnings += acceptable[1]
            result.moved = acceptable[0].moves
            return acceptable[0]
        if attempt <= rounds:
            progress(
                f"response rejected ({len(issues)} problems); asking the model to repair it", None
            )
            current_prompt = repair_prompt(
                vault, prompt.text, response_text, format_issues(issues), pass_date
            )
            record.write(f"prompt-{attempt + 1}.txt", current_prompt)
    result.status = "failed"
    asked = "once" if rounds == 0 else f"{rounds + 1} times ({rounds} repair rounds)"
    result.message = f"the {engine} response was rejected after asking {asked}; nothing was written (run record: {record.folder})"
    return None


def _engine(
    vault, options, selection, originals, pass_date, result: PassResult, progress, record: RunRecord
):
    """(engine name, ask(prompt, attempt) -> response text)."""
    if options.response_text is not None:
        result.engine = "response-file"
        return "response", lambda prompt, attempt: options.response_text
    use_builtin = options.engine == "builtin"
    resolved = None
    if not use_builtin:
        from cmem.setup.trust import resolve_model_command

        resolved = resolve_model_command(vault, options.llm)
        if resolved.command is None:
            if options.engine == "llm":
                raise CmemError(
                    "--engine llm needs a model command: pass --llm CMD, set $CMEM_LLM, or set llm.command (then `cmem trust`)."
                )
            use_builtin = True
    if use_builtin:
        from cmem.converge.builtin import builtin_response

        result.engine = "builtin"
        return "builtin", lambda prompt, attempt: builtin_response(
            vault, selection.notes, originals, pass_date
        )
    result.engine, result.model = "llm", resolved.command

    def ask(prompt: str, attempt: int) -> str:
        from cmem.converge.model_command import run_model_command
        from cmem.text.secrets import redact_secrets

        safe_prompt, redacted = redact_secrets(prompt)
        if redacted:
            result.warnings.append(
                f"{redacted} credential-like strings were redacted from the prompt"
            )
        label = (
            "asking the model"
            if attempt == 1
            else f"asking the model to repair (round {attempt - 1})"
        )
        try:
            reply = run_model_command(
                resolved.command,
                safe_prompt,
                timeout=resolved.timeout,
                max_output_bytes=resolved.max_output_bytes,
                on_tick=lambda elapsed: progress(label, elapsed, resolved.timeout),
            )
        except CmemError as exc:
            # keep what the model did say: the run record is where a user looks next
            record.write(
                f"failure-{attempt}.json",
                {
                    "error": str(exc),
                    "reason": getattr(exc, "reason", None),
                    "stdout": getattr(exc, "stdout", "")[-20000:],
                    "stderr": getattr(exc, "stderr", ""),
                    "elapsed": getattr(exc, "elapsed", None),
                },
            )
            raise
        result.warnings += [f"model: {warning}" for warning in reply.warnings]
        return reply.stdout

    return "llm", ask


def _finish(
    vault,
    options,
    state,
    selection,
    validation,
    raw_originals,
    originals,
    step: Step | None,
    pass_date,
    now,
    result,
    record,
) -> PassResult:
    pass_id = result.pass_id
    by_rel = {n.rel: n for n in selection.notes}
    converged = [rel for rel in _entries_notes(validation.converged, by_rel)]
    result.converged = converged
    result.deferred = [
        {"note": d[0], "reason": d[1]} for d in _deferred(validation.deferred, by_rel)
    ]
    writes = {rel: text for rel, text in validation.writes.items()}
    result.changed = sorted(writes)
    result.lines = _line_fates(vault, selection, converged, originals, writes)
    result.warnings += [
        f"{fate.note} line {fate.line}: the {fate.cls} signal is in no statement or trace after the pass; "
        "it stays pending (`cmem scan` shows it)"
        for fate in result.lines
        if fate.where == "pending"
    ]
    result.diff, result.diffstat = make_diff(originals, writes)
    if options.dry_run or step is None:
        result.status = "dry-run"
        return result
    if (options.propose or vault.config.review) and not options.apply_proposal:
        from cmem.converge.proposal import Proposal, save_proposal

        save_proposal(
            vault,
            Proposal(
                pass_id,
                str(record.folder),
                [n.rel for n in selection.notes],
                now.isoformat(timespec="seconds"),
            ),
        )
        result.status = "proposed"
        result.message = "proposal saved: review and apply it with `cmem apply`, or discard it with `cmem apply --drop`"
        return result
    plan = ChangeSet()
    for rel, text in writes.items():
        plan.write(rel, in_line_ends(text, raw_originals.get(rel)), raw_originals.get(rel))
    into = _into(validation.converged, by_rel)
    state_bytes = current_bytes(vault.state_file)
    checklist_bytes = current_bytes(vault.checklist_path)
    stage_entries = []
    for rel in converged:
        note = by_rel[rel]
        state.notes[rel] = ConvergedNote(
            sha256=note.sha256,
            lines=_converged_lines(
                state, note, _pending_lines(note, result.lines, selection.deferred_lines)
            ),
            pass_id=pass_id,
            time=now.isoformat(timespec="seconds"),
            into=sorted(into.get(rel, [])),
        )
        stage_entries.append(
            StageEntry(
                note.name,
                archive_target(
                    vault.config.archive_dir, vault.config.archive_pattern, rel, pass_date
                ),
                sorted(into.get(rel, [])),
                note.sha256,
            )
        )
    if not writes and not converged:
        result.status = "nothing"
        result.message = "the engine changed nothing and converged no note; nothing was committed"
        return result
    record_entry = StepRecord(
        pass_id,
        "converge",
        now.isoformat(timespec="seconds"),
        notes=converged,
        changed=result.changed,
        engine=result.engine,
        model=result.model,
        warnings=len(result.warnings),
    )
    state.passes.append(record_entry.to_json())
    plan.write(vault.rel(vault.state_file), state_to_bytes(state), state_bytes)
    if stage_entries:
        current = (
            checklist_bytes.decode("utf-8", errors="replace")
            if checklist_bytes is not None
            else None
        )
        staged_text = stage_notes(current, stage_entries, pass_id, pass_date, vault.config.language)
        plan.write(vault.checklist_rel, in_line_ends(staged_text, checklist_bytes), checklist_bytes)
    result.staged = [e.note_name for e in stage_entries]
    result.warnings += changed_inputs(vault, selection)
    result.commit = step.commit(plan, commit_message(result, selection))
    result.status = "applied"
    record.write("result.json", result.to_json())
    return result


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


def _deferred(entries, by_rel) -> list[tuple[str, str]]:
    out = []
    for entry in entries:
        rel = _match_note(getattr(entry, "note", entry), by_rel) or getattr(
            entry, "note", str(entry)
        )
        out.append((rel, getattr(entry, "reason", "")))
    return out


def _into(entries, by_rel) -> dict[str, list[str]]:
    result: dict[str, list[str]] = {}
    for entry in entries:
        rel = _match_note(entry.note, by_rel)
        if rel:
            result.setdefault(rel, []).extend(t for t in entry.into if t not in result.get(rel, []))
    return result


def _converged_lines(
    state: State, note: SelectedNote, left_pending: set[int] = frozenset()
) -> set[str]:
    """Every line of the note as read, but the signal lines no statement or trace holds: the
    note is converged as a whole; an edit later makes only the new lines pending, and a signal
    line the engine did not carry stays pending (never silently lost)."""
    previous = state.notes.get(note.rel)
    keep = {line_key(note.lines[n - 1]) for n in left_pending if 0 < n <= len(note.lines)}
    keys = {
        line_key(line)
        for number, line in enumerate(note.lines, 1)
        if line.strip() and number not in left_pending
    }
    return (keys | (previous.lines if previous else set())) - keep


def _line_fates(
    vault: Vault,
    selection: Selection,
    converged: list[str],
    originals: dict[str, str],
    writes: dict[str, str],
) -> list:
    from cmem.converge.coverage import line_fates

    return line_fates(selection.notes, converged, {**originals, **writes}, vault.config.formats)


def _pending_lines(
    note: SelectedNote, fates: list, deferred: set[tuple[str, int]] = frozenset()
) -> set[int]:
    """Lines of a converged note that stay pending: signal lines no statement or trace holds, and
    lines the scan deferred on their own."""
    return {fate.line for fate in fates if fate.note == note.rel and fate.where == "pending"} | {
        line for rel, line in deferred if rel == note.rel
    }


def make_diff(
    originals: dict[str, str], writes: dict[str, str]
) -> tuple[str, list[tuple[str, int, int]]]:
    chunks, stats = [], []
    for rel in sorted(writes):
        old = originals.get(rel)
        old_lines = [] if old is None else old.splitlines(keepends=True)
        new_lines = writes[rel].splitlines(keepends=True)
        diff = list(
            difflib.unified_diff(
                old_lines,
                new_lines,
                f"a/{rel}" if old is not None else "/dev/null",
                f"b/{rel}",
                n=2,
            )
        )
        added = sum(1 for line in diff if line.startswith("+") and not line.startswith("+++"))
        removed = sum(1 for line in diff if line.startswith("-") and not line.startswith("---"))
        stats.append((rel, added, removed))
        chunks.append("".join(line if line.endswith("\n") else line + "\n" for line in diff))
    return "".join(chunks), stats


def commit_message(result: PassResult, selection: Selection) -> CommitMessage:
    """Built from fields: a note's name, a deferral's reason and a warning are folded onto one
    line each (steps.message), so a model cannot add a trailer or a field."""
    names = (
        ", ".join(
            path.rsplit("/", 1)[-1].removesuffix(".md")
            for path in result.changed
            if not path.startswith((".cmem/",))
        )
        or "no files"
    )
    count = len(result.converged)
    message = CommitMessage(
        f"cmem: converge {count} note{'s' if count != 1 else ''} → {names}", result.pass_id
    )
    for rel in result.converged:
        message.add("Converged", rel)
    for deferred in result.deferred:
        message.add("Deferred", f"{deferred['note']} ({deferred['reason']})")
    for rel in result.changed:
        message.add("Changed", rel)
    for move in result.moved:
        message.add("Moved", f"{move['statement']} ({move['from']} → {', '.join(move['to'])})")
    message.add("Engine", f"{result.engine}" + (f" ({result.model})" if result.model else ""))
    for warning in result.warnings:
        message.add("Warning", warning)
    return message
