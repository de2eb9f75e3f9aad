"""The values a pass's stages pass (`converge/pipeline.py`): the options it is given, each
stage's frozen value, and the `PassResult` built from them once, at the end or at an early exit.
None is changed after it is made, so a stage's inputs are what its parameters say."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING, Callable, Literal

from cmem.converge.selection import SelectedNote, Selection
from cmem.steps.changes import ChangeSet
from cmem.vault.state_json import State

if TYPE_CHECKING:
    from cmem.converge.prompt import Prompt
    from cmem.converge.validator.response import Response
    from cmem.converge.validator.validate import Validation

# (message, elapsed seconds or None[, the time limit in seconds]) — cmem.render.reports.Spinner
Progress = Callable[..., None]

# What `--engine` names: `converge/engines.py: ENGINES`' keys.
EngineName = Literal["builtin", "llm"]

# What a pass did. prompt: --emit-prompt; not-due: an unattended trigger's gate said no under
# the lock. (Another pass holding the vault raises `errors.Busy`: no result.)
PassStatus = Literal["applied", "dry-run", "nothing", "failed", "proposed", "prompt", "not-due"]


@dataclass
class PassOptions:
    engine: EngineName | None = None  # None: llm if a command is configured, else builtin
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

    status: PassStatus
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
    # a builtin pass: (lines, notes) that wait for a model once it is applied; None for a model's
    left_for_model: tuple[int, int] | None = None
    model_set: bool = False  # a model is configured: the builtin engine was asked for by name

    @property
    def converged_lines(self) -> int:
        """Signal lines a builtin pass placed in a statement or a trace."""
        return sum(1 for fate in self.lines if fate.where in ("statement", "trace"))

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
            "converged_lines": self.converged_lines,
            "waiting_for_model": None
            if self.left_for_model is None
            else {"lines": self.left_for_model[0], "notes": self.left_for_model[1]},
        }


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
    # backlog.json's new text: folders read since its record, and the notes they brought in
    backlog_record: str | None = None
    # every pending note's lines no engine judges without a model, as the scan counted them
    model_lines: dict[str, int] = field(default_factory=dict)
    model_set: bool = False  # a model is configured (a builtin pass was asked for by name)


@dataclass(frozen=True)
class PromptPlan:
    """plan_prompt: which files the engine may rewrite, and the prompt, assembled when it is
    first asked for (`prompt`): an engine that does not read it (the builtin one, a response
    file) has it made for its run record only."""

    # The originals the validator is given. Files cmem may not rewrite are left out: the validator
    # then reads them itself, sees the BOM, CRLF or bad bytes, and refuses any write to them.
    writable: dict[str, str]
    warnings: tuple[str, ...]  # the files shown to the engine that the pass never rewrites
    assemble: Callable[[], Prompt] = field(repr=False, compare=False)

    @cached_property
    def prompt(self) -> Prompt:
        return self.assemble()


@dataclass(frozen=True)
class ParsedReply:
    """parse_reply: the reply without terminal codes or a <think> block, parsed (docs/design.md §5)."""

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
    # a builtin pass: the lines that wait for a model once it is applied, and the notes
    # holding them (`accounting.left_for_model`; what `status` then says); None for a model's
    left_for_model: tuple[int, int] | None = None


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
