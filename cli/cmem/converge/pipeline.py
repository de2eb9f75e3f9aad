"""The convergence pass (SPEC §3) as typed stages passing values:

    gather → PassInputs → plan_prompt → PromptPlan → choose_engine → Engine →
    check_replies (Engine.ask → EngineReply → parse_reply → ParsedReply → validate_response,
    with repair rounds) → CheckedChange → plan_pass → PlannedPass →
    commit_pass (stage_changes → StagedChanges → Step.commit) → AppliedPass

Each stage is a function of a few typed parameters returning a frozen value the next one takes;
no stage fills a shared result. `run_pass` strings them together and builds the `PassResult` the
CLI renders (or prints as JSON, SPEC §11) once: at the end, or at an early exit (nothing pending,
--emit-prompt, rejected, dry run, proposal).

The pass is one step (cmem.steps): the lock, the recovery of any interrupted step, the git
preflight and snapshot, the journal, the all-or-nothing apply and the commit happen there.
"""

from __future__ import annotations

import difflib
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING, Callable

from cmem.archive.checklist import StageEntry, archive_target, stage_notes
from cmem.converge.accounting import account_note
from cmem.converge.prompt import Prompt, assemble_prompt, line_ranges, repair_prompt
from cmem.converge.selection import SelectedNote, Selection, engine_takes, select_notes
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
from cmem.vault.state_json import State, load_state
from cmem.vault.state_json import state_bytes as state_to_bytes

if TYPE_CHECKING:  # the parser and validator load lazily, when a pass asks an engine
    from cmem.converge.response import Response
    from cmem.converge.validate import PassContext, Validation
    from cmem.scan.in_processes import Beside

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
    backlog: bool = False  # --backlog: an adopted folder's notes are pending too
    now: datetime | None = None
    # Unattended triggers: asked again once the lock is held; a reason means "not due any more"
    # (a trigger that waited behind another pass must not run a second one).
    gate: Callable[[], str | None] | None = None


@dataclass
class PassResult:
    """What the CLI, the MCP server and the triggers read; `to_json` is the `--json` shape.
    `run_pass` builds it from the stage values (`dataclasses.replace` at each exit), never
    filling it in as the stages go."""

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
    merged: list[dict] = field(default_factory=list)  # statements merged into others, no trace
    quarantined: list[dict] = field(default_factory=list)  # {"note", "reason"}: put aside
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
            "merged": self.merged,
            "quarantined": self.quarantined,
            "snapshot_commit": self.snapshot_commit,
            "engine": self.engine,
            "model": self.model,
            "run": self.run_dir,
            "diffstat": [{"path": p, "added": a, "removed": r} for p, a, r in self.diffstat],
            "signal_lines": [fate.to_json() for fate in self.lines],
            "rounds": self.rounds,
        }


# --- the values the stages pass -----------------------------------------------------------
# Each stage returns one of these and the next takes it; none is changed after it is made, so a
# stage's inputs are what its parameters say. `PassResult` is built from them once, at the end
# or at an early exit.


@dataclass(frozen=True)
class PassInputs:
    """gather: what the pass works on, read once under the lock."""

    state: State
    pass_date: str  # YYYY-MM-DD
    originals: dict[str, str]  # every convergent file's text (CRLF read as LF)
    raw_originals: dict[str, bytes]  # the same files' bytes (line ends, second-writer check)
    hand_edited: set[str]  # convergent files edited by someone else since the last pass
    selection: Selection
    # (note, line) of each line the scan deferred on its own: a converged note leaves them pending
    deferred_lines: frozenset[tuple[str, int]]
    warnings: tuple[str, ...]  # the odd files the scan skipped or will not rewrite
    nothing: str | None = None  # why there is nothing to converge; the pass stops here
    reads_meaning: bool = True  # a model judges the notes (else the builtin engine's cue lines)
    rule_reasons: dict = field(default_factory=dict)  # (note, line) → why the scan deferred it
    # (note, line) of cue lines that repeat a statement memory holds (the feedback-loop guard)
    in_memory: frozenset[tuple[str, int]] = frozenset()
    # notes the builtin engine could not converge, put aside by `isolate_builtin`
    quarantined_notes: tuple[SelectedNote, ...] = ()


@dataclass(frozen=True)
class PromptPlan:
    """plan_prompt: which files the engine may rewrite, and the prompt, assembled when it is
    first asked for (`prompt`): an engine that does not read it (the builtin one, a response
    file) has it made for its run record only, by a forked child (`record_run_beside`)."""

    # The originals the validator is given. Files cmem may not rewrite are left out: the validator
    # then reads them itself, sees the BOM, CRLF or bad bytes, and refuses any write to them.
    writable: dict[str, str]
    warnings: tuple[str, ...]  # the files shown to the engine that the pass never rewrites
    assemble: Callable[[], Prompt] = field(repr=False, compare=False)

    @cached_property
    def prompt(self) -> Prompt:
        return self.assemble()


@dataclass(frozen=True)
class EngineReply:
    """One answer of the engine."""

    text: str
    warnings: tuple[str, ...] = ()  # redactions from the prompt, the model command's own warnings


@dataclass(frozen=True)
class Engine:
    """choose_engine: what answers the prompt."""

    kind: str  # response | builtin | llm: the run record's name, and the failure message's
    name: str  # response-file | builtin | llm: PassResult.engine and the commit's Engine field
    model: str | None
    ask: Callable[[str, int], EngineReply]  # (prompt, attempt) → the reply
    repair_rounds: int  # times a rejected reply goes back (a model's only)
    reads_prompt: bool = True  # False: the prompt is made for the run record only


@dataclass(frozen=True)
class ParsedReply:
    """parse_reply: the reply without terminal codes or a <think> block, parsed (SPEC §5)."""

    text: str
    response: Response
    removed: tuple[str, ...]  # what cleaning took out, for the run record


@dataclass(frozen=True)
class CheckedChange:
    """check_replies: the accepted reply's validation after the repair rounds, or why none was."""

    validation: Validation | None  # None: every reply was rejected
    rounds: int  # times the engine was asked (1 + repair rounds)
    warnings: tuple[str, ...]  # the engine's, then the accepted reply's validator warnings
    # the last rejected reply's problems: why none was accepted, or what a repair round fixed
    # (empty when a reply kept while the model was asked again is the one applied)
    errors: tuple[str, ...]


@dataclass(frozen=True)
class PlannedPass:
    """plan_pass: what the accepted reply does, before anything is written (a dry run and a
    proposal stop here)."""

    converged: list[str]  # the selected notes the reply converged
    deferred: list[dict]  # {"note", "reason"}
    writes: dict[str, str]  # convergent path → new text
    into: dict[str, list[str]]  # converged note → the memory files its statements went to
    lines: list  # coverage.LineFate of each signal line of a converged note
    diff: str
    diffstat: list[tuple[str, int, int]]
    moved: list[dict]  # statements that left one file for another
    warnings: tuple[str, ...]  # signal lines no statement or trace holds (they stay pending)
    merged: list[dict] = field(default_factory=list)  # old statements merged into others
    line_reasons: dict[str, dict[int, str]] = field(default_factory=dict)  # note → line → reason
    # notes the builtin engine cannot converge as they are: note → why (put aside, named)
    quarantined: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class StagedChanges:
    """stage_changes: every file the step writes, all or nothing."""

    changes: ChangeSet  # memory files, state.json, the archive checklist
    staged: list[str]  # notes added to the archive checklist


@dataclass(frozen=True)
class AppliedPass:
    """commit_pass: what the step layer committed."""

    commit: str | None
    staged: list[str]
    warnings: list[str]  # every warning of the pass, the notes edited while it ran last


# --- reading the vault ---------------------------------------------------------------------


def hand_edited_files(vault: Vault, state: State) -> set[str]:
    """Convergent files changed by someone else since the last pass: the user's word."""
    last = state.last_of_kind("converge")
    if not last:
        return set()
    # The files nobody committed are asked for while the last pass's commit is found and
    # diffed: three git processes one after another were ~13 ms of every pass after a pass.
    added = history.GitBeside(
        vault.root, "ls-files", "--others", "--exclude-standard", "--", *vault.convergent_dirs
    )
    try:
        commit = history.find_pass_commit(vault.root, last["id"])
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
    finally:
        found = added.result()  # waited for whatever happens: no process is left behind
    return {line.strip() for line in (changed.stdout + found.stdout).splitlines() if line.strip()}


def read_originals(vault: Vault) -> tuple[dict[str, str], dict[str, bytes]]:
    """Every convergent file's text (for the prompt and validator) and bytes (for the
    second-writer check). A file cmem may not rewrite is still shown, and the validator refuses
    writes to it."""
    from cmem.converge.memory_bytes import memory_bytes
    from cmem.converge.statement_words import known_digest

    texts = {}
    # kept between passes under each file's stat, with their texts' digests; the others read by
    # the listing's own string
    digests: dict[str, bytes] = {}
    raws = memory_bytes(vault, _file_bytes, digests)
    for rel, raw in raws.items():
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:  # shown as a note is read, never with U+FFFD (not rewritten)
            text = _decoded_memory(raw)
        else:
            if rel in digests:
                known_digest(text, digests[rel])  # its text is its bytes: not hashed again
        texts[rel] = text.replace("\r\n", "\n") if b"\r" in raw else text
    return texts, raws


def _decoded_memory(raw: bytes) -> str:
    """A memory file that is not UTF-8, as `text/encodings.py` reads a note."""
    from cmem.text.encodings import decode_note

    decoded = decode_note(raw)
    if decoded.text is None:
        return raw.decode("utf-8", errors="replace")  # binary: protected from writes anyway
    return decoded.text.removeprefix("\ufeff")


_CHUNK = 1 << 16


def _file_bytes(location: str) -> bytes | None:
    """`steps/changes.py: current_bytes`, the same answers, in plain system calls: an `open()`
    builds a buffered file object and asks the file's size and type first, which for the 2,049
    memory files of a 10k vault was twice the time of the reads themselves (~30 ms of ~45)."""
    import os

    try:
        fd = os.open(location, os.O_RDONLY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except IsADirectoryError:  # open(…, "rb") refuses a folder, os.open does not: read says so
        return current_bytes(location)
    try:
        chunks = []
        while True:
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                return b"".join(chunks) if len(chunks) != 1 else chunks[0]
            chunks.append(chunk)
    except IsADirectoryError:
        return current_bytes(location)  # a folder where a file was: its own answer
    finally:
        os.close(fd)


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


# --- the pass -----------------------------------------------------------------------------


class _NotDue(Exception):
    def __init__(self, reason: str):
        self.reason = reason


def run_pass(vault: Vault, options: PassOptions, progress: Progress | None = None) -> PassResult:
    try:
        return _run_pass(vault, options, progress)
    finally:
        # the memory texts digested once for this pass are not kept after it (`cmem watch` and
        # the MCP server run many passes in one process)
        from cmem.converge.statement_words import forget_digests

        forget_digests()


def _run_pass(vault: Vault, options: PassOptions, progress: Progress | None) -> PassResult:
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
        # the snapshot is taken in a thread while the pass scans and reads the memory files
        with open_step(
            vault, "converge", now=now, gate=_gate(options), snapshot_meanwhile=True
        ) as step:
            result = _run_locked(vault, options, progress, now, step)
            return replace(
                result, snapshot_commit=step.snapshot, warnings=step.notices + result.warnings
            )
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
    """The stages in order; each early exit builds its PassResult from the values made so far."""
    # While the pass only reads, each folder and each layer is listed once: the scan, the
    # originals, the validator's note names and memory files asked for ten listings of four
    # layers. The listings end before the first write, so a listing after it sees it.
    with ExitStack() as reading:
        reading.enter_context(vault.listed_once())
        inputs = gather(vault, options, now, progress)
        if step is not None:
            # The snapshot, taken while gather read, is done before the engine is asked: a
            # snapshot that fails stops the pass before a model spends anything, and what the
            # engine runs beside (an editor's git plugin committing) meets the step as before.
            step.snapshot
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
        recording: Beside | None = None  # the run record's prompt, written by a forked child
        try:
            context = _context(vault, inputs, plan, options.allow_shrink)
            engine = choose_engine(vault, options, inputs, plan, progress, record)
            recording = record_run_beside(vault, record, engine, inputs, plan)
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
                asked = (
                    "once"
                    if engine.repair_rounds == 0
                    else f"{engine.repair_rounds + 1} times ({engine.repair_rounds} repair rounds)"
                )
                failed = replace(
                    so_far,
                    message=f"the {engine.kind} response was rejected after asking {asked}; nothing was written (run record: {record.folder})",
                )
                _record_outcome(record, failed, step, now, "failed", failed.message, failed.errors)
                return failed

            planned = replace(plan_pass(vault, inputs, checked.validation), quarantined=quarantined)
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
            _record_outcome(
                record,
                so_far,
                step,
                now,
                "interrupted",
                "stopped with Ctrl-C" + (" while writing" if applying else ""),
            )
            # the CLI prints this under "interrupted": what was and was not done
            interrupt.cmem_summary = interrupted_summary(
                so_far, step.snapshot if step else None, applying
            )
            raise
        except CmemError as exc:
            from cmem.setup.trust import UntrustedCommand

            so_far = _stopped_so_far(pass_id, inputs, engine, checked, record, exc)
            refused = isinstance(exc, UntrustedCommand)
            _record_outcome(record, so_far, step, now, "refused" if refused else "failed", str(exc))
            if step is not None and not applying:  # an apply's own error already says what was kept
                exc.args = (f"{exc}\n{failure_summary(so_far, step.snapshot)}",)
            raise
        finally:
            if recording is not None and not recording.wait():
                _record_run_here(vault, record, engine, inputs, plan)


# --- the stages ---------------------------------------------------------------------------


def gather(vault: Vault, options: PassOptions, now: datetime, progress: Progress) -> PassInputs:
    """Scan, read every convergent file, select the pending notes that fit the budget."""
    from cmem.scan.scanner import scan_vault
    from cmem.scan.signals import ALREADY_CONVERGED, EXCLUDED

    state = load_state(vault.state_file)
    progress("scanning", None)
    scan = scan_vault(
        vault, state=state, only=options.only, backlog=options.backlog, confirm_only=True
    )
    odd = tuple(odd_warnings(scan.odd)) + tuple(  # SPEC §1: what cmem skips, said once
        f"{q.note} is quarantined: {q.reason}; {q.way_out}" for q in scan.quarantined
    )
    pass_date = now.date().isoformat()
    meaning = reads_meaning(vault, options)
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
    )


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
    """What "nothing to converge" means here: the notes that wait, and why (SPEC §2)."""
    waiting = [p for p in scan.pending]
    if not waiting:
        if scan.backlog:
            return (
                f"nothing to converge; {len(scan.backlog)} notes of the adopted folder wait in the "
                "backlog (`cmem converge --backlog` converges them)"
            )
        return "nothing to converge"
    tokens = sum(p.tokens for p in waiting)
    return (
        f"nothing the builtin engine can converge: {len(waiting)} "
        f"note{'s' if len(waiting) != 1 else ''} (~{tokens} tokens) wait for a model — the builtin "
        "engine reads cue lines only; pass --llm CMD or set llm.command"
    )


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
    )
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


NO_MODEL_COMMAND = (
    "--engine llm needs a model command: pass --llm CMD, set $CMEM_LLM, or set llm.command "
    "(then `cmem trust`)"
)


def check_engine(vault: Vault, options: PassOptions) -> None:
    """What can be told of the engine before the pass begins: an empty `--llm` (an unset
    variable: `--llm "$LLM"`) is a usage error, never the builtin engine in its place; `--engine
    llm` with no command, or a command that is not installed, is an error — said before the
    snapshot commit and the run record, which belong to a pass that reached its engine. (An
    untrusted vault command is refused inside the pass, which records it: SPEC §7.)"""
    from cmem.errors import UsageError

    if options.llm is not None and not options.llm.strip():
        raise UsageError(
            "--llm is empty (an unset variable?); give the model command, or leave --llm out."
        )
    if options.emit_prompt or options.response_text is not None or options.engine == "builtin":
        return
    from cmem.converge.model_command import check_installed
    from cmem.setup.trust import UntrustedCommand, resolve_model_command

    try:
        resolved = resolve_model_command(vault, options.llm)
    except UntrustedCommand:
        return
    if resolved.command is not None:
        check_installed(resolved.command)
    elif options.engine == "llm":
        raise CmemError(f"{NO_MODEL_COMMAND}; nothing was written and nothing was committed.")


def choose_engine(
    vault: Vault,
    options: PassOptions,
    inputs: PassInputs,
    plan: PromptPlan,
    progress: Progress,
    record: RunRecord,
) -> Engine:
    """A --response file, the builtin engine, or the model command `setup/trust.py` allows."""
    if options.response_text is not None:
        reply = EngineReply(options.response_text)
        return Engine(
            "response", "response-file", None, lambda prompt, attempt: reply, 0, reads_prompt=False
        )
    use_builtin = options.engine == "builtin"
    resolved = None
    if not use_builtin:
        from cmem.setup.trust import resolve_model_command

        resolved = resolve_model_command(vault, options.llm)
        if resolved.command is None:
            if options.engine == "llm":
                raise CmemError(f"{NO_MODEL_COMMAND}.")
            use_builtin = True
    if use_builtin:
        from cmem.converge.builtin import builtin_response

        def builtin(prompt: str, attempt: int) -> EngineReply:
            notes = inputs.selection.notes
            return EngineReply(builtin_response(vault, notes, plan.writable, inputs.pass_date))

        return Engine("builtin", "builtin", None, builtin, 0, reads_prompt=False)

    def ask(prompt: str, attempt: int) -> EngineReply:
        from cmem.converge.model_command import run_model_command
        from cmem.converge.prompt import redacted_prompt
        from cmem.text.secrets import redact_secrets

        # the first prompt is the one the run record redacted piece by piece just before
        first = prompt == plan.prompt.text
        safe_prompt, redacted = (
            redacted_prompt(vault, plan.prompt) if first else redact_secrets(prompt)
        )
        notice = (
            [f"{redacted} credential-like strings were redacted from the prompt"]
            if redacted
            else []
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
        model_notes = [f"model: {warning}" for warning in reply.warnings]
        return EngineReply(reply.stdout, tuple(notice + model_notes))

    return Engine("llm", "llm", resolved.command, ask, vault.config.repair_rounds)


def isolate_builtin(
    vault: Vault, inputs: PassInputs, plan: PromptPlan, options: PassOptions, checked
) -> tuple[PassInputs, CheckedChange, dict[str, str]]:
    """The notes of a rejected builtin reply, tried one at a time in the pass's order: each note
    whose reply (with the notes kept so far) the validator rejects, or the engine fails on, is
    quarantined with the first reason; the others are converged by the last reply that passed.
    Returns the narrowed inputs, that reply's check, and the quarantined notes."""
    from cmem.converge.builtin import builtin_response

    kept: list[SelectedNote] = []
    quarantined: dict[str, str] = {}
    accepted = None
    for note in inputs.selection.notes:
        trial = _with_notes(inputs, [*kept, note])
        try:
            text = builtin_response(vault, trial.selection.notes, plan.writable, trial.pass_date)
            from cmem.converge.validate import validate_response

            validation = validate_response(
                vault,
                parse_reply(text).response,
                _context(vault, trial, plan, options.allow_shrink),
            )
            problem = str(validation.errors[0]) if validation.errors else None
        except (CmemError, KeyboardInterrupt):
            raise
        except Exception as exc:
            problem, validation = (
                f"the builtin engine failed on it: {type(exc).__name__}: {exc}",
                None,
            )
        if problem:
            quarantined[note.rel] = _quarantine_reason(problem)
            continue
        kept.append(note)
        accepted = validation
    aside = tuple(n for n in inputs.selection.notes if n.rel in quarantined)
    narrowed = replace(_with_notes(inputs, kept), quarantined_notes=aside)
    if not quarantined:
        return inputs, checked, {}  # every note passes alone and together: not one note's doing
    if accepted is None:  # every note put aside: the pass records why, and writes nothing else
        from cmem.converge.validate import Validation

        accepted = Validation()
    warnings = tuple(str(w) for w in accepted.warnings) + tuple(
        f"{rel} is put aside: {reason}" for rel, reason in quarantined.items()
    )
    return narrowed, CheckedChange(accepted, checked.rounds, warnings, checked.errors), quarantined


def _quarantine_reason(problem: str) -> str:
    return f"the builtin engine cannot converge it as it is ({problem.strip()[:300]})"


def _with_notes(inputs: PassInputs, notes: list[SelectedNote]) -> PassInputs:
    """The pass's inputs for these of its notes only."""
    selection = replace(inputs.selection, notes=list(notes))
    return replace(inputs, selection=selection)


def parse_reply(text: str) -> ParsedReply:
    from cmem.converge.reply_text import clean_reply
    from cmem.converge.response import parse_response

    # ANSI codes and a reasoning model's leading <think> block are no part of the answer
    cleaned = clean_reply(text)
    return ParsedReply(cleaned.text, parse_response(cleaned.text), tuple(cleaned.removed))


def check_replies(
    vault: Vault,
    engine: Engine,
    prompt: Prompt | None,
    context: PassContext,
    record: RunRecord,
    progress: Progress,
) -> CheckedChange:
    """Engine → parse → validate, with repair rounds for a model. A CmemError or Ctrl-C raised
    on the way carries `cmem_rounds` (how many times the engine was asked) for the report. A bug
    of the builtin engine (an exception) is a rejected reply, so the notes behind it can be put
    aside (`isolate_builtin`) instead of stopping every pass."""
    if engine.kind == "builtin":
        try:
            return _check_all(vault, engine, prompt, context, record, progress)
        except (CmemError, KeyboardInterrupt):
            raise
        except Exception as exc:
            problem = f"the builtin engine failed: {type(exc).__name__}: {exc}"
            return CheckedChange(None, 1, (), (problem,))
    return _check_all(vault, engine, prompt, context, record, progress)


def _check_all(
    vault: Vault,
    engine: Engine,
    prompt: Prompt | None,
    context: PassContext,
    record: RunRecord,
    progress: Progress,
) -> CheckedChange:
    engine_warnings: list[str] = []
    current_prompt = prompt.text if prompt is not None else ""  # None: the engine reads none
    # a valid reply with likely inventions, kept while the model is asked once more
    acceptable: tuple[Validation, list[str]] | None = None
    rounds = engine.repair_rounds
    # The last rejected reply's problems: why the pass failed, or, once a repair round is
    # accepted, what the repair fixed (they stay in the result, as `--json` has always shown).
    rejected: tuple[str, ...] = ()
    attempt = 0
    try:
        for attempt in range(1, rounds + 2):
            reply = engine.ask(current_prompt, attempt)
            engine_warnings += reply.warnings
            parsed, validation = _check_reply(vault, reply, attempt, context, record)
            issues = validation.errors  # the parser's own errors and warnings are included
            warnings = [str(w) for w in validation.warnings]
            if issues:
                rejected = tuple(str(i) for i in issues)
            if not issues and validation.inventions and acceptable is None and attempt <= rounds:
                # A likely invention goes back once ("cite the note that says this or drop it");
                # only a second answer, or this one if the second is worse, is applied with the
                # warning.
                acceptable = (validation, warnings)
                progress(
                    f"{len(validation.inventions)} statements may be invented; asking the model to cite or drop them",
                    None,
                )
                current_prompt = _ask_again(
                    vault, prompt, parsed, validation.inventions, attempt, context, record
                )
                continue
            if not issues:
                return CheckedChange(validation, attempt, (*engine_warnings, *warnings), rejected)
            if acceptable is not None:
                return CheckedChange(acceptable[0], attempt, (*engine_warnings, *acceptable[1]), ())
            if attempt <= rounds:
                progress(
                    f"response rejected ({len(issues)} problems); asking the model to repair it",
                    None,
                )
                current_prompt = _ask_again(vault, prompt, parsed, issues, attempt, context, record)
    except (CmemError, KeyboardInterrupt) as stop:
        from cmem.converge.model_command import NOT_STARTED

        # the report says how many times the engine was asked: not this time, when its
        # command could not even be started
        started = getattr(stop, "reason", None) not in NOT_STARTED
        stop.cmem_rounds = attempt if started else attempt - 1
        raise
    return CheckedChange(None, attempt, tuple(engine_warnings), rejected)


def _check_reply(
    vault: Vault, reply: EngineReply, attempt: int, context: PassContext, record: RunRecord
) -> tuple[ParsedReply, Validation]:
    """One reply parsed and validated; the run record keeps the reply and the verdict."""
    from cmem.converge.validate import validate_response

    record.write(f"response-{attempt}.txt", reply.text)
    parsed = parse_reply(reply.text)
    validation = validate_response(vault, parsed.response, context)
    record.write(
        f"validation-{attempt}.json",
        {
            "errors": [str(i) for i in validation.errors],
            "warnings": [str(w) for w in validation.warnings],
            "removed": list(parsed.removed),
        },
    )
    return parsed, validation


def _ask_again(
    vault: Vault,
    prompt: Prompt,
    parsed: ParsedReply,
    issues: list,
    attempt: int,
    context: PassContext,
    record: RunRecord,
) -> str:
    """The repair prompt: the whole first prompt, the reply, what to fix; kept in the record."""
    from cmem.converge.validate import format_issues

    repair = repair_prompt(
        vault, prompt.text, parsed.text, format_issues(issues), context.pass_date
    )
    record.write(f"prompt-{attempt + 1}.txt", repair)
    return repair


def plan_pass(vault: Vault, inputs: PassInputs, validation: Validation) -> PlannedPass:
    """Which notes converged or were deferred (whole or some lines), the new texts, and for the
    builtin engine the fate of every signal line (a model's pass is judged by its accounting:
    rule 7 holds every converged note cited, so a paraphrase is not left pending)."""
    by_rel = {n.rel: n for n in inputs.selection.notes}
    converged = _entries_notes(validation.converged, by_rel)
    deferred = []
    for entry in validation.deferred:
        rel = _match_note(entry.note, by_rel) or entry.note
        item = {"note": rel, "reason": entry.reason}
        if entry.lines:
            item["lines"] = list(entry.lines)
        deferred.append(item)
    writes = dict(validation.writes)
    lines = (
        []
        if inputs.reads_meaning
        else _line_fates(vault, inputs.selection, converged, inputs.originals, writes)
    )
    pending = tuple(
        f"{fate.note} line {fate.line}: the builtin engine placed the {fate.cls} signal in no "
        "statement or trace; it waits for a model (`cmem scan` shows it)"
        for fate in lines
        if fate.where == "pending"
    )
    diff, diffstat = make_diff(inputs.originals, writes)
    into = _into(validation.converged, by_rel)
    return PlannedPass(
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
    )


def propose(
    vault: Vault, inputs: PassInputs, result: PassResult, record: RunRecord, now: datetime
) -> PassResult:
    """Review mode: the run record is the proposal; `cmem apply` runs the pass again from it."""
    from cmem.converge.proposal import Proposal, save_proposal

    selected = [n.rel for n in inputs.selection.notes]
    timestamp = now.isoformat(timespec="seconds")
    save_proposal(vault, Proposal(result.pass_id, str(record.folder), selected, timestamp))
    return replace(
        result,
        status="proposed",
        message="proposal saved: review and apply it with `cmem apply`, or discard it with `cmem apply --drop`",
    )


def stage_changes(
    vault: Vault, inputs: PassInputs, planned: PlannedPass, so_far: PassResult, now: datetime
) -> StagedChanges:
    """The memory files in their own line ends, state.json with the converged notes and this
    pass, and the archive checklist with the converged notes staged."""
    pass_id, pass_date, state = so_far.pass_id, inputs.pass_date, inputs.state
    changes = ChangeSet()
    for rel, text in planned.writes.items():
        raw = inputs.raw_originals.get(rel)
        changes.write(rel, in_line_ends(text, raw), raw)
    state_bytes = current_bytes(vault.state_file)
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
        target = archive_target(
            vault.config.archive_dir, vault.config.archive_pattern, rel, pass_date
        )
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
    changes.write(vault.rel(vault.state_file), state_to_bytes(new_state), state_bytes)
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
    """Through the step layer: journal, all-or-nothing apply, commit."""
    staged = stage_changes(vault, inputs, planned, so_far, now)
    # checked last, just before the commit: the edits made while the model ran
    warnings = so_far.warnings + changed_inputs(vault, inputs.selection)
    message = commit_message(
        replace(so_far, staged=staged.staged, warnings=warnings), inputs.selection
    )
    return AppliedPass(step.commit(staged.changes, message), staged.staged, warnings)


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
    )


def _with_plan(result: PassResult, planned: PlannedPass) -> PassResult:
    return replace(
        result,
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
    rounds = checked.rounds if checked is not None else getattr(stop, "cmem_rounds", 0)
    return PassResult(
        "failed",
        pass_id=pass_id,
        run_dir=str(record.folder),
        selected=[n.rel for n in inputs.selection.notes],
        engine=engine.name if engine else None,
        model=engine.model if engine else None,
        rounds=rounds,
    )


def record_run_beside(
    vault: Vault, record: RunRecord, engine: Engine, inputs: PassInputs, plan: PromptPlan
) -> Beside | None:
    """The run record's prompt and run.json: for an engine that does not read the prompt,
    assembled and written by a forked child while this process asks the engine, validates and
    commits (`scan/in_processes.py: Beside`; the pass waits for it before it returns, and writes
    them itself if the child could not); else here, before the engine is asked."""
    if not engine.reads_prompt:
        from cmem.scan.in_processes import run_beside

        beside = run_beside(lambda: _record_run(vault, record, engine, inputs, plan))
        if beside is not None:
            return beside
    _record_run(vault, record, engine, inputs, plan)
    return None


def _record_run_here(
    vault: Vault, record: RunRecord, engine: Engine, inputs: PassInputs, plan: PromptPlan
) -> None:
    """What the child could not write, written once the pass is done: the pass's own outcome
    (applied, or its error) stands either way, so a record that cannot be written here (a full
    disk) is left out rather than put in its place."""
    try:
        _record_run(vault, record, engine, inputs, plan)
    except OSError:
        pass


def _record_run(
    vault: Vault, record: RunRecord, engine: Engine, inputs: PassInputs, plan: PromptPlan
) -> None:
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


# --- reports and helpers -------------------------------------------------------------------


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


def _context(vault: Vault, inputs: PassInputs, plan: PromptPlan, allow_shrink: bool) -> PassContext:
    from cmem.converge.validate import PassContext

    return PassContext(
        pass_date=inputs.pass_date,
        selected=[n.rel for n in inputs.selection.notes],
        originals=dict(plan.writable),
        note_names=vault.note_names(),
        allow_shrink=allow_shrink,
        source_texts={n.name: n.text for n in inputs.selection.notes},
        line_counts={n.rel: len(n.lines) for n in inputs.selection.notes},
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


def _recorded(inputs: PassInputs, planned: PlannedPass) -> bool:
    """Whether the pass has a deferral to record (state.json), so the note is not sent again
    unchanged: a model's judgement, or the builtin engine's (which leaves the note to a model)."""
    return bool(planned.deferred) and bool(inputs.selection.notes)


def _verdicts(inputs: PassInputs, planned: PlannedPass):
    """(note, Verdict) for each note of the pass the reply converged or deferred."""
    from cmem.converge.accounting import Verdict

    converged = set(planned.converged)
    whole = {d["note"]: d["reason"] for d in planned.deferred if not d.get("lines")}
    for note in inputs.quarantined_notes:
        reason = planned.quarantined[note.rel]
        yield note, Verdict(converged=False, reason=reason, quarantined=reason)
    for note in inputs.selection.notes:
        if note.rel not in converged and note.rel not in whole:
            continue
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
    originals: dict[str, str],
    writes: dict[str, str],
) -> list:
    from cmem.converge.coverage import line_fates

    return line_fates(selection.notes, converged, {**originals, **writes}, vault.config.formats)


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
    subject = f"cmem: converge {count} note{'s' if count != 1 else ''} → {names}"
    if not count and (result.deferred or result.quarantined):
        deferred = len({d["note"] for d in [*result.deferred, *result.quarantined]})
        subject = f"cmem: defer {deferred} note{'s' if deferred != 1 else ''}"
    message = CommitMessage(subject, result.pass_id)
    for rel in result.converged:
        message.add("Converged", rel)
    for deferred in result.deferred:
        lines = deferred.get("lines")
        where = f" lines {line_ranges(lines)}" if lines else ""
        message.add("Deferred", f"{deferred['note']}{where} ({deferred['reason']})")
    for merge in result.merged:
        message.add("Merged", f"{merge['statement']} → {merge['into']} ({merge['file']})")
    for aside in result.quarantined:
        message.add("Quarantined", f"{aside['note']} ({aside['reason']})")
    for rel in result.changed:
        message.add("Changed", rel)
    for move in result.moved:
        message.add("Moved", f"{move['statement']} ({move['from']} → {', '.join(move['to'])})")
    message.add("Engine", f"{result.engine}" + (f" ({result.model})" if result.model else ""))
    for warning in result.warnings:
        message.add("Warning", warning)
    return message
