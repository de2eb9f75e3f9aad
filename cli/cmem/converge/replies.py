"""A pass's replies checked: each parsed (`converge/validator/response.py`) and validated
(`converge/validator/validate.py`), a rejected one sent back to a model with what to fix (the repair
rounds), and a rejected builtin reply narrowed to the notes the builtin engine can converge (the
others put aside, named)."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import TYPE_CHECKING

from cmem.converge.engines import Engine, EngineReply
from cmem.converge.pass_values import (
    CheckedChange,
    ParsedReply,
    PassInputs,
    PassOptions,
    Progress,
    PromptPlan,
)
from cmem.converge.prompt import Prompt, repair_prompt
from cmem.converge.selection import SelectedNote
from cmem.errors import CmemError, set_stop_rounds
from cmem.steps.run_records import RunRecord
from cmem.vault.layers import Vault

if TYPE_CHECKING:  # the validator loads lazily, when a pass asks an engine
    from cmem.converge.validator.validate import PassContext, Validation


def validator_context(
    vault: Vault, inputs: PassInputs, plan: PromptPlan, allow_shrink: bool
) -> PassContext:
    from cmem.converge.validator.validate import PassContext

    return PassContext(
        pass_date=inputs.pass_date,
        selected=[n.rel for n in inputs.selection.notes],
        originals=dict(plan.writable),
        note_names=vault.note_names(),
        allow_shrink=allow_shrink,
        source_texts={n.name: n.text for n in inputs.selection.notes},
        line_counts={n.rel: len(n.lines) for n in inputs.selection.notes},
        quoted={n.name: n.quoted for n in inputs.selection.notes if n.quoted},
    )


def isolate_builtin(
    vault: Vault, inputs: PassInputs, plan: PromptPlan, options: PassOptions, checked
) -> tuple[PassInputs, CheckedChange, dict[str, str]]:
    """The notes of a rejected builtin reply, tried one at a time in the pass's order: each note
    whose reply (with the notes kept so far) the validator rejects, or the engine fails on, is
    quarantined with the first reason; the others are converged by the last reply that passed.
    A note rejected only for writing into a memory file that cannot be read is held instead:
    left out of the pass, not recorded, so it stays pending until that file can be read.
    Returns the narrowed inputs, that reply's check, and the quarantined notes."""
    from cmem.converge.builtin.engine import builtin_response

    kept: list[SelectedNote] = []
    quarantined: dict[str, str] = {}
    held: dict[str, str] = {}
    accepted = None
    for note in inputs.selection.notes:
        trial = _with_notes(inputs, [*kept, note])
        try:
            text = builtin_response(vault, trial.selection.notes, plan.writable, trial.pass_date)
            from cmem.converge.validator.validate import validate_response

            validation = validate_response(
                vault,
                parse_reply(text).response,
                validator_context(vault, trial, plan, options.allow_shrink),
            )
            problem = str(validation.errors[0]) if validation.errors else None
        except (CmemError, KeyboardInterrupt):
            raise
        except Exception as exc:
            problem, validation = (
                f"the builtin engine failed on it: {type(exc).__name__}: {exc}",
                None,
            )
        unreadable = _unreadable_target(vault, validation)
        if unreadable:
            held[note.rel] = unreadable
            continue
        if problem:
            quarantined[note.rel] = _quarantine_reason(problem)
            continue
        kept.append(note)
        accepted = validation
    aside = tuple(n for n in inputs.selection.notes if n.rel in quarantined)
    narrowed = replace(_with_notes(inputs, kept), quarantined_notes=aside)
    if not quarantined and not held:
        return inputs, checked, {}  # every note passes alone and together: not one note's doing
    if accepted is None:  # every note put aside: the pass records why, and writes nothing else
        from cmem.converge.validator.validate import Validation

        accepted = Validation()
    warnings = (
        tuple(str(w) for w in accepted.warnings)
        + tuple(f"{rel} is put aside: {reason}" for rel, reason in quarantined.items())
        + tuple(
            f"{rel} waits: the builtin engine would write it into {why}; it stays pending"
            for rel, why in held.items()
        )
    )
    return narrowed, CheckedChange(accepted, checked.rounds, warnings, checked.errors), quarantined


def _unreadable_target(vault: Vault, validation) -> str | None:
    """ "<file>, which <why>" when the reply was rejected only for what it says of memory files
    that cannot be read (their folder either), else None."""
    from cmem.converge.validator.response import RESPONSE
    from cmem.regular_files import unreadable_reason

    errors = validation.errors if validation is not None else []
    reasons = {}
    # what the reply as a whole is refused for (it accounts for no note) follows from its blocks
    for rel in sorted({issue.file for issue in errors} - {RESPONSE}):
        try:
            os.lstat(vault.root / rel)
        except PermissionError as exc:  # a folder on the way that cannot be searched
            reasons[rel] = f"cannot be read ({exc.strerror})"
            continue
        except OSError:
            return None
        why = unreadable_reason(vault.root / rel)
        if why is None:
            return None
        reasons[rel] = why
    if not reasons:
        return None
    rel, why = next(iter(reasons.items()))
    return f"{rel}, which {why}"


def _quarantine_reason(problem: str) -> str:
    return f"the builtin engine cannot converge it as it is ({problem.strip()[:300]})"


def _with_notes(inputs: PassInputs, notes: list[SelectedNote]) -> PassInputs:
    """The pass's inputs for these of its notes only."""
    selection = replace(inputs.selection, notes=list(notes))
    return replace(inputs, selection=selection)


def parse_reply(text: str) -> ParsedReply:
    from cmem.converge.model.reply_text import clean_reply
    from cmem.converge.validator.response import parse_response

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
    first_prompt = prompt.text if prompt is not None else ""  # None: the engine reads none
    current_prompt = first_prompt
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
            doubtful = validation.asked_again
            if not issues and doubtful and acceptable is None and attempt <= rounds:
                # A likely invention, or a change no trace declares, goes back once ("cite the
                # note that says this or drop it"); only a second answer, or this one if the
                # second is worse, is applied with the warning.
                acceptable = (validation, warnings)
                progress(
                    f"{len(doubtful)} statements may be invented or changed without a trace; asking the model to cite, trace or drop them",
                    None,
                )
                current_prompt = _ask_again(
                    vault, first_prompt, parsed, doubtful, attempt, context, record
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
                current_prompt = _ask_again(
                    vault, first_prompt, parsed, issues, attempt, context, record
                )
    except (CmemError, KeyboardInterrupt) as stop:
        from cmem.converge.model.command import NOT_STARTED

        # the report says how many times the engine was asked: not this time, when its
        # command could not even be started
        started = getattr(stop, "reason", None) not in NOT_STARTED
        set_stop_rounds(stop, attempt if started else attempt - 1)
        raise
    return CheckedChange(None, attempt, tuple(engine_warnings), rejected)


def _check_reply(
    vault: Vault, reply: EngineReply, attempt: int, context: PassContext, record: RunRecord
) -> tuple[ParsedReply, Validation]:
    """One reply parsed and validated; the run record keeps the reply and the verdict."""
    from cmem.converge.validator.validate import validate_response

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
    first_prompt: str,
    parsed: ParsedReply,
    issues: list,
    attempt: int,
    context: PassContext,
    record: RunRecord,
) -> str:
    """The repair prompt: the whole first prompt, the reply, what to fix; kept in the record."""
    from cmem.converge.validator.validate import format_issues

    repair = repair_prompt(
        vault, first_prompt, parsed.text, format_issues(issues), context.pass_date
    )
    record.write(f"prompt-{attempt + 1}.txt", repair)
    return repair
