"""Rule 7: a note of the pass is converged (and cited by a statement) or deferred, whole or by
lines, and `<converged>`/`<deferred>` name only notes of the pass. A note no element names was
not judged: it stays pending (a warning); a reply that accounts for none of its notes and
changes no file is refused."""

from __future__ import annotations

from cmem.converge.validator.allowed_paths import convergent_path_problem, show_path
from cmem.converge.validator.reply_reading import (
    ChangeRule,
    Doc,
    ReplyReading,
    ReplyRule,
    RuleKey,
    reply_fact,
)
from cmem.converge.validator.response import RESPONSE, ConvergedEntry, DeferredEntry
from cmem.converge.validator.rules import ACCOUNTING, CONVERGED, UNACCOUNTED, UNKNOWN
from cmem.regular_files import read_regular, reason_of
from cmem.text.folding import fold_case
from cmem.vault.statements import WIKILINK


def selected_path(reply: ReplyReading, note: str) -> str | None:
    """The note of the pass a `note=` attribute names: by path or by name, `.md` optional."""
    wanted = note.strip().removeprefix("[[").removesuffix("]]").removesuffix(".md")
    for path in reply.ctx.selected:
        stem = path.removesuffix(".md")
        if wanted in (stem, stem.rsplit("/", 1)[-1]):
            return path
    return None


def check_notes(reply: ReplyReading) -> None:
    """Rule 7: each note of the pass the reply names is converged (and then cited by a
    statement of memory as the pass leaves it), deferred, or has some of its lines deferred
    (`lines="3,5"`, with or without a `<converged>`); only notes of the pass are named."""
    written = {change.path: change.new.text for change in reply.changes}
    seen: dict[str, str] = {}
    merged: dict[str, ConvergedEntry] = {}
    for entry in reply.response.converged:
        again = selected_path(reply, entry.note)
        if again is not None and seen.get(again) == "converged":
            # one note converged into several files, written as several elements: one entry
            if _into_ok(reply, entry, again, written) and again in merged:
                merged[again].into.extend(t for t in entry.into if t not in merged[again].into)
            continue
        path = _note_of_pass(reply, entry.note, entry.line, "converged", seen)
        if path and _into_ok(reply, entry, path, written):
            merged[path] = ConvergedEntry(path, list(dict.fromkeys(entry.into)), entry.line)
            reply.result.converged.append(merged[path])
    partly: dict[str, DeferredEntry] = {}
    for deferral in reply.response.deferred:
        if deferral.lines:
            _deferred_lines(reply, deferral, seen, partly)
            continue
        path = _note_of_pass(reply, deferral.note, deferral.line, "deferred", seen)
        if path:
            reply.result.deferred.append(DeferredEntry(path, deferral.reason, deferral.line))
    reply.result.deferred.extend(partly.values())
    for path in reply.ctx.selected:
        if path in seen and seen[path] != "lines":
            continue
        # a note no element names was not judged: it leaves the queue only when a pass judges it
        reply.warn(
            path,
            0,
            UNACCOUNTED,
            "the reply neither converged nor deferred this note; it stays pending"
            if path not in seen
            else "the reply deferred some lines of this note and did not converge it; those "
            "lines are deferred with the reasons given, its other lines stay pending",
        )
    _check_accounts_for_some(reply)
    check_cited(reply)


def _check_accounts_for_some(reply: ReplyReading) -> None:
    """A reply that accounts for none of its notes and changes no file said nothing: it is a
    failed reply, sent back in a repair round, never a pass that defers every note."""
    if not reply.ctx.selected or reply.result.converged or reply.result.deferred:
        return
    if any(change.base is None or change.new.text != change.base.text for change in reply.changes):
        return
    count = len(reply.ctx.selected)
    reply.error(
        RESPONSE,
        0,
        ACCOUNTING,
        f"the reply accounts for none of the {count} note{'s' if count != 1 else ''} of this pass "
        'and changes no file; for each note write <converged note="…" into="…"/> with the '
        'statements that cite it, or <deferred note="…" reason="…"/>',
    )


def _deferred_lines(
    reply: ReplyReading,
    entry: DeferredEntry,
    seen: dict[str, str],
    partly: dict[str, DeferredEntry],
) -> None:
    """`<deferred note=… lines=…>`: those lines of a note of the pass wait; the note may be
    converged besides (its other lines)."""
    path = selected_path(reply, entry.note)
    if path is None:
        _note_of_pass(reply, entry.note, entry.line, "deferred", seen)  # names the error
        return
    if seen.get(path) == "deferred":
        reply.error(
            RESPONSE,
            entry.line,
            ACCOUNTING,
            f"{path} is deferred whole and in part; write one <deferred> for the whole note, or <converged> with <deferred lines=…> for the lines that wait",
        )
        return
    count = reply.ctx.line_counts.get(path)
    outside = [n for n in entry.lines if count is not None and not 0 < n <= count]
    if outside:
        reply.error(
            RESPONSE,
            entry.line,
            ACCOUNTING,
            f"<deferred note={entry.note!r} lines=…> names line {outside[0]}, but {path} has {count} lines; use the line numbers shown in the note",
        )
        return
    seen.setdefault(path, "lines")
    reasons = dict(reply.result.line_reasons.get(path, {}))
    for number in entry.lines:
        reasons.setdefault(number, entry.reason)
    reply.result.line_reasons[path] = reasons
    before = partly.get(path)
    lines = tuple(sorted(set(before.lines if before else ()) | set(entry.lines)))
    partly[path] = DeferredEntry(path, before.reason if before else entry.reason, entry.line, lines)


def check_cited(reply: ReplyReading) -> None:
    """A note marked converged must be cited by at least one statement of memory as the
    pass leaves it (one it wrote, or one it kept): checked mechanically, not by words."""
    if not reply.result.converged:
        return
    texts = {path: text for path, text in reply.ctx.originals.items() if text}
    texts.update({change.path: change.new.text for change in reply.changes})
    # a block refused for its path still tells what the reply meant: its own error says what
    # to fix, and "no statement cites" on top would send the model after a second problem
    texts.update({b.path: b.content for b in reply.response.files if b.path not in texts})
    for entry in reply.result.converged:
        names = names_of(reply, entry.note)
        into = [texts[path] for path in entry.into if path in texts]
        if any(_cites(text, names) for text in into) or any(
            _cites(text, names) for text in texts.values()
        ):
            continue
        shown = sorted(names)[0]
        reply.error(
            RESPONSE,
            entry.line,
            ACCOUNTING,
            f"{entry.note} is marked converged, but no statement cites [[{shown}]]; cite it in the statements that hold what it says, or <deferred> it with the reason",
        )


def _note_of_pass(
    reply: ReplyReading, note: str, line: int, kind: str, seen: dict[str, str]
) -> str | None:
    path = selected_path(reply, note)
    if path is None:
        reply.error(
            RESPONSE,
            line,
            ACCOUNTING,
            f'<{kind} note="{show_path(note)}"> names a note that is not in this pass; name only the notes given to you',
        )
        return None
    if path in seen:
        if seen[path] == "lines" and kind == "converged":
            seen[path] = kind  # some lines deferred, the rest converged
            return path
        if seen[path] != kind:
            reply.error(
                RESPONSE,
                line,
                ACCOUNTING,
                f"{path} is both converged and deferred whole; defer only some of its lines (<deferred lines=…>), or choose one",
            )
        else:
            reply.warn(RESPONSE, line, UNKNOWN, f"{path} is {kind} twice; the first entry counts")
        return None
    seen[path] = kind
    return path


def names_of(reply: ReplyReading, path: str) -> set[str]:
    """The wikilink names a note of the pass is cited by: its name, and its path without
    `.md`."""
    stem = path.removesuffix(".md")
    return {stem.rsplit("/", 1)[-1], stem}


def _into_ok(
    reply: ReplyReading, entry: ConvergedEntry, note_path: str, written: dict[str, str]
) -> bool:
    name = note_path.rsplit("/", 1)[-1].removesuffix(".md")
    ok = True
    for into in entry.into:
        problem = convergent_path_problem(reply.vault, into)
        text = None if problem else written.get(into) or _existing(reply, into)
        if text is None and not problem and _refused_block(reply, into):
            continue  # its block was refused, and that error says what to fix
        if isinstance(text, OSError):  # a memory file the pass left alone: never a target
            reply.error(
                into,
                0,
                ACCOUNTING,
                f'<converged into="{show_path(into)}">: the file {reason_of(text)}; nothing is converged into it until it can be read',
            )
            ok = False
        elif problem or text is None:
            why = (
                f"the path {problem}"
                if problem
                else "that file is neither in the reply nor in the vault"
            )
            reply.error(
                RESPONSE, entry.line, ACCOUNTING, f'<converged into="{show_path(into)}">: {why}'
            )
            ok = False
        elif not any(
            source == name for s in parsed(reply, into, text).statements for source in s.sources
        ):
            reply.warn(
                into,
                0,
                CONVERGED,
                f"{note_path} is said to be converged into this file, but no statement here cites [[{name}]]",
            )
    return ok


def _refused_block(reply: ReplyReading, path: str) -> bool:
    """Whether the reply holds a block for `path` that was refused before it could be read."""
    return any(block.path == path for block in reply.response.files)


@reply_fact
def parsed_targets(reply: ReplyReading) -> dict[str, Doc]:
    """Path → the `<converged into=…>` target parsed (filled by `parsed`)."""
    return {}


def parsed(reply: ReplyReading, path: str, text: str) -> Doc:
    """A target file parsed once, however many <converged> elements name it."""
    done = parsed_targets(reply)
    if path not in done:
        done[path] = reply.parse(text)
    return done[path]


def _existing(reply: ReplyReading, path: str) -> str | OSError | None:
    """The file's text, None when there is none, or the error reading it raised."""
    text = reply.ctx.originals.get(path)
    if text is not None:
        return text
    full = reply.vault.root / path
    if not full.is_file():
        return None
    try:
        return read_regular(full).decode("utf-8", errors="replace")
    except OSError as exc:
        return exc


def _cites(text: str, names: set[str]) -> bool:
    """Whether a statement of `text` cites one of these note names (a wikilink to it, with or
    without a `#` fragment or an `|` alias)."""
    if "[[" not in text:
        return False
    return any(
        match.group(1).strip() in names or fold_case(match.group(1).strip()) in _folded(names)
        for match in WIKILINK.finditer(text)
    )


def _folded(names: set[str]) -> set[str]:
    return {fold_case(name) for name in names}


# The rules this module checks, each under its id, in the order they run: on each file block,
# then on the reply as a whole (`validate.py` runs the modules in `RULE_MODULES` order).
CHANGE_RULES: dict[RuleKey, ChangeRule] = {}
REPLY_RULES: dict[RuleKey, ReplyRule] = {
    ACCOUNTING: check_notes,
}
