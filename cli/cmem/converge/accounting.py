"""What a pass made of each note it was given, as `state.json` keeps it (docs/design.md §2, §3 step 3).

Every line a pass judged is accounted for: converged (its key joins `lines`), or deferred with
the reason (`deferred`). A model judges every line of a note its reply converges or defers whole;
of a note whose lines alone it defers, only those lines. The builtin engine reads cue lines only,
so the note's other lines stay *unjudged* — waiting for a model — and a cue line it could not
place is deferred for a model with that reason. A note the reply names in no element is not
judged at all: it gets no entry and stays pending. A note accounted for and unchanged is
never sent again, unless a return rule of docs/design.md §2 brings its deferred lines back.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cmem.converge.selection import SelectedNote
from cmem.scan.content import unaccounted_lines
from cmem.scan.recurrence import phrase_keys
from cmem.vault.state_json import BUILTIN, MODEL, ConvergedNote, line_key

COULD_NOT_PLACE = "the builtin engine found no statement for this line; it waits for a model"


def left_for_model(entry: ConvergedNote, note: SelectedNote) -> int:
    """The lines of a note the builtin engine leaves for a model once `entry` is its account:
    its content lines no engine judged, and the cue lines it deferred for a model (the scan's
    own deferrals — a one-off, venting — are not among a note's signals)."""
    lines = {s.line for s in note.signals if 0 < s.line <= len(note.lines)}
    return entry.unjudged + sum(1 for n in lines if line_key(note.lines[n - 1]) in entry.deferred)


@dataclass(frozen=True)
class Verdict:
    """An engine's answer for one note."""

    converged: bool  # some of it went into memory
    into: list[str] = field(default_factory=list)
    reason: str = ""  # why the note (or the rest of it) was deferred
    deferred_lines: dict[int, str] = field(default_factory=dict)  # line number → reason
    # the builtin engine's: signal lines no statement or trace holds, and lines its rules
    # deferred (a one-off, venting) with their reasons
    unplaced: frozenset[int] = frozenset()
    rule_deferred: dict[int, str] = field(default_factory=dict)
    known: frozenset[int] = frozenset()  # cue lines memory holds already: nothing to add
    quarantined: str = ""  # the builtin engine cannot converge the note as it is: why


def account_note(
    previous: ConvergedNote | None,
    note: SelectedNote,
    verdict: Verdict,
    by_model: bool,
    pass_id: str,
    time: str,
) -> ConvergedNote:
    """The note's new entry: what this pass judged, on top of what earlier passes did."""
    keys_of = {number: line_key(note.lines[number - 1]) for number in range(1, len(note.lines) + 1)}
    present = set(keys_of.values())
    judged = {keys_of[n] for n in note.judge if n in keys_of}
    earlier_lines = set(previous.lines) if previous else set()
    # a deferral of an earlier pass that this one did not judge again still stands
    deferred = {
        key: reason
        for key, reason in (previous.deferred.items() if previous else ())
        if key in present and key not in judged and key not in earlier_lines
    }
    reasons = {keys_of[n]: r for n, r in verdict.deferred_lines.items() if n in keys_of}
    if by_model:
        if verdict.converged:
            lines = earlier_lines | {
                keys_of[n] for n, line in enumerate(note.lines, 1) if line.strip()
            }
        else:
            if verdict.reason:  # deferred whole; else only the lines it names were judged
                reasons.update(dict.fromkeys(judged, verdict.reason))
            lines = earlier_lines
        deferred.update(reasons)
        lines -= set(deferred)
        engine = MODEL
    else:
        placed = {
            keys_of[signal.line]
            for signal in note.signals
            if signal.line in keys_of
            and signal.line not in verdict.unplaced
            and signal.line not in verdict.rule_deferred
        }
        placed |= {keys_of[n] for n in verdict.known if n in keys_of}
        reasons.update({keys_of[n]: COULD_NOT_PLACE for n in verdict.unplaced if n in keys_of})
        reasons.update({keys_of[n]: r for n, r in verdict.rule_deferred.items() if n in keys_of})
        if not verdict.converged:
            if verdict.reason:
                reasons.update(
                    {keys_of[s.line]: verdict.reason for s in note.signals if s.line in keys_of}
                )
            placed = set()
        deferred.update(reasons)
        lines = (earlier_lines | placed) - set(deferred)
        engine = BUILTIN
    # lines no engine judged yet (the builtin engine's non-cue lines; those a model's reply
    # named in no element) keep the note pending
    unjudged = len(unaccounted_lines(note.lines, note.body_start, lines | set(deferred)))
    into = sorted(set(previous.into if previous else ()) | set(verdict.into))
    texts = {key: note.lines[n - 1] for n, key in keys_of.items()}
    deferred_keys = sorted(
        {phrase for key in deferred if key in texts for phrase in phrase_keys(texts[key].lower())}
    )
    return ConvergedNote(
        sha256=note.sha256,
        lines=lines,
        pass_id=pass_id,
        time=time,
        into=into,
        deferred=deferred,
        engine=engine,
        unjudged=unjudged,
        keys=sorted(set(previous.keys if previous else ()) | set(note.keys)),
        deferred_keys=deferred_keys,
        quarantined=verdict.quarantined,
    )
