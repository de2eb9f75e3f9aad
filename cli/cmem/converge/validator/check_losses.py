"""Rules 4, 8 and 10: nothing of memory is lost. An old statement leaves its file only inside a
trace of its rewrite, as a declared or found merge, a reported move or a `<dropped>`; little is
dropped from a file, less from the memory layer, nothing moves out of the resident layer."""

from __future__ import annotations

from cmem.converge.validator.added_lines import is_blank
from cmem.converge.validator.allowed_paths import show_path
from cmem.converge.validator.kept_words import kept_words, negations, numbers, same_facts
from cmem.converge.validator.reply_reading import (
    Change,
    ChangeRule,
    ReplyReading,
    ReplyRule,
    RuleKey,
    all_traces,
    reply_fact,
    short_text,
)
from cmem.converge.validator.response import RESPONSE
from cmem.converge.validator.rules import DROP_LITTLE, DROPPED, MEMORY_WHOLE, NOTHING_LOST
from cmem.vault.layers import RESIDENT
from cmem.vault.statements import Statement, Trace, normalize, split_statement

# Statements a gone one is compared with, at most (those holding its rarest word): a reply that
# removes thousands of statements is judged in time linear in its size.
_MAX_CANDIDATES = 50


@reply_fact
def dropped_by_file(reply: ReplyReading) -> dict[str, set[str]]:
    """File → the statements the reply's `<dropped>` entries name there (by key)."""
    found: dict[str, set[str]] = {}
    for entry in reply.response.dropped:
        key = normalize(split_statement(entry.statement, reply.formats)[0])
        found.setdefault(entry.file, set()).add(key)
    return found


@reply_fact
def written_traces(reply: ReplyReading) -> set[tuple[str, str]]:
    """Every trace in the reply's files, at every depth: computed once, not once per file."""
    return {
        reply.trace_id(t)
        for other in reply.changes
        for s in other.new.statements
        for t in all_traces(s.traces)
    }


@reply_fact
def new_key_files(reply: ReplyReading) -> dict[str, set[str]]:
    """Statement key → the reply's files that hold it."""
    found: dict[str, set[str]] = {}
    for other in reply.changes:
        for statement in other.new.statements:
            found.setdefault(statement.key, set()).add(other.path)
    return found


@reply_fact
def refused_keys(reply: ReplyReading) -> set[str]:
    """Statement keys of the file blocks refused before they could be read (a path rule 1 or 12
    refused): a statement moved into one is not lost, its block's own error says what to fix."""
    read = {change.path for change in reply.changes}
    keys: set[str] = set()
    for block in reply.response.files:
        if block.path not in read:
            keys.update(statement.key for statement in reply.parse(block.content).statements)
    return keys


@reply_fact
def rewrites(reply: ReplyReading) -> dict[str, list[bool]]:
    """Old wording (normalised) → one flag per statement of this pass that rewrites it:
    whether that new statement is blank (`Unknown (was: X)`). A rewrite is a trace this pass
    wrote at the top level of a statement (a change, or a merge into one already there); a
    trace nested inside another is that other statement's history, not this one's rewrite."""
    known = reply.known_traces
    current = {old.key for c in reply.changes if c.base for old in c.base.statements}
    found: dict[str, list[bool]] = {}
    for other in reply.changes:
        for statement in other.new.statements:
            level = list(statement.traces)
            while level:
                deeper: list[Trace] = []
                for trace in level:
                    trace_id = reply.trace_id(trace)
                    if trace_id in known:
                        continue
                    found.setdefault(trace_id[1], []).append(is_blank(statement.core))
                    # a statement changed twice in one pass (X → Y → Z): Y was never in a file,
                    # so X, nested under it, is still this chain's own rewrite; under a
                    # statement the file holds, it is that statement's history instead
                    if trace_id[1] not in current:
                        deeper += trace.older
                level = deeper
    return found


@reply_fact
def losses(reply: ReplyReading) -> dict[str, int]:
    """Path → the statements the reply drops or blanks there, as rule 4's check counts them."""
    return {}


def check_removals(reply: ReplyReading, change: Change) -> None:
    """Rule 4 (and the resident half of rule 10): every old statement gone from the file
    is rewritten with a trace that keeps its words, declared merged, reworded with every
    word and fact kept, moved, or dropped; its traces stay."""
    if change.base is None:
        return
    kept_traces = written_traces(reply)
    rewritten = rewrites(reply)
    holders = new_key_files(reply)
    dropped = dropped_by_file(reply).get(change.path, set())
    resident = reply.vault.layer_of(change.path) == RESIDENT
    removed_by_drop = blanked = 0
    for old in change.base.statements:
        gone = old.key and old.key not in change.new.keys
        elsewhere = sorted(holders.get(old.key, set()) - {change.path}) if gone else []
        if gone and old.key in rewritten:
            if all(rewritten[old.key]):
                blanked += 1  # rewritten as "Unknown": the fact is lost all the same
        elif gone and elsewhere:
            _moved(reply, change, old, elsewhere, resident)
        elif gone and old.key in refused_keys(reply):
            continue  # moved into a block refused for its path: that error is the one to fix
        elif gone and old.key in dropped:
            removed_by_drop += 1
            continue  # its traces go with it, on purpose
        elif gone and _declared_merge(reply, change, old):
            pass
        elif gone:
            held = words_kept(reply, old, change)
            if held is None:
                reply.error(change.path, old.line_no, NOTHING_LOST, _gone(reply, change, old))
                continue
            path, statement, blank = held
            if blank:
                blanked += 1
            if path != change.path:
                _moved(reply, change, old, [path], resident)
        for trace in all_traces(old.traces):
            if reply.trace_id(trace) not in kept_traces:
                reply.error(
                    change.path,
                    old.line_no,
                    NOTHING_LOST,
                    f"the trace of {short_text(old.core, 40)!r} dated {trace.date} (was: {short_text(split_statement(trace.old, reply.formats)[0], 40)!r}) is gone; keep every trace, nested inside the new one when a statement changes again",
                )
    losses(reply)[change.path] = removed_by_drop + blanked
    check_shrink(reply, change, removed_by_drop, blanked)


def _moved(
    reply: ReplyReading, change: Change, old: Statement, to: list[str], resident: bool
) -> None:
    reply.result.moves.append({"statement": old.core, "from": change.path, "to": to})
    if (
        resident
        and not any(reply.vault.layer_of(path) == RESIDENT for path in to)
        and not reply.ctx.allow_shrink
    ):
        reply.error(
            change.path,
            old.line_no,
            MEMORY_WHOLE,
            f"the statement {short_text(old.core)!r} moves out of the resident layer (to {', '.join(to)}); resident memory is read every session — keep it here, or the user passes --allow-shrink",
        )


def _declared_merge(reply: ReplyReading, change: Change, old: Statement) -> bool:
    """A `<merged>` naming this old statement: the statement it names must be in the
    reply's file, and keep the old one's numbers and negations (a merge changes no fact:
    one losing a number or a "not" is a change, and needs a trace)."""
    for entry in merged_entries(reply).get((change.path, old.key), []):
        target = _merge_target(reply, change, entry.into)
        if target is None:
            reply.error(
                RESPONSE,
                entry.line,
                NOTHING_LOST,
                f"<merged into={short_text(entry.into, 50)!r}> names no statement of {change.path} as the reply writes it; copy the statement that holds the old one now",
            )
            return True  # named once: the statement is not "gone" a second time
        # the statement holding it now may say more (two merged into one), never less
        lost_number = not numbers(old.core) <= numbers(target.core)
        if lost_number or negations(old.core) > negations(target.core):
            reply.error(
                change.path,
                target.line_no,
                NOTHING_LOST,
                f"<merged> of {short_text(old.core, 50)!r} into {short_text(target.core, 50)!r} changes a number or a negation; a change of fact is a rewrite with a trace",
            )
        reply.result.merged.append(
            {"statement": old.core, "into": target.core, "file": change.path, "declared": True}
        )
        return True
    return False


def _merge_target(reply: ReplyReading, change: Change, into: str) -> Statement | None:
    key = normalize(split_statement(into, reply.formats)[0])
    if not key:
        return None
    for statement in change.new.statements:
        if statement.key == key:
            return statement
    found = [s for s in change.new.statements if len(key) >= 8 and key in s.key]
    return found[0] if len(found) == 1 else None


@reply_fact
def merged_entries(reply: ReplyReading) -> dict[tuple[str, str], list]:
    """(file, key of the old statement) → the reply's `<merged>` entries naming it."""
    found: dict[tuple[str, str], list] = {}
    for entry in reply.response.merged:
        key = normalize(split_statement(entry.statement, reply.formats)[0])
        found.setdefault((entry.file, key), []).append(entry)
    return found


def words_kept(
    reply: ReplyReading, old: Statement, change: Change
) -> tuple[str, Statement, bool] | None:
    """Where the words of a gone statement live on (path, statement, whether that statement is
    blank), or None: a new statement with a trace this pass wrote, the two together holding
    every content word of the old one (a trace may keep only the words that changed); or a
    statement keeping every word, number and negation of it (a rewording, no change). The
    reply's own file is looked in first."""
    words = kept_words(old.core)
    if not words:
        return None
    index, traced = word_index(reply)
    rarest = min(words, key=lambda word: len(index.get(word, ())))
    candidates = sorted(
        index.get(rarest, ()), key=lambda c: (c[0] != change.path, c[0], c[1].line_no)
    )
    if not candidates:
        # no statement holds the word: only a trace can (`was: bun`)
        candidates = traced
    for path, statement, statement_words, traces in candidates[:_MAX_CANDIDATES]:
        if words <= statement_words and same_facts(old.core, statement.core):
            reply.result.merged.append(
                {"statement": old.core, "into": statement.core, "file": path, "declared": False}
            )
            return path, statement, False
        for trace_words in traces:
            if words <= statement_words | trace_words:
                return path, statement, is_blank(statement.core)
    return None


@reply_fact
def word_index(reply: ReplyReading) -> tuple[dict[str, list], list]:
    """Content word → the reply's statements that are new or changed, with their words and
    the words of each trace this pass wrote at their top level; and those that have such a
    trace."""
    index: dict[str, list] = {}
    traced = []
    known = reply.known_traces
    for other in reply.changes:
        base_keys = other.base.keys if other.base else set()
        for statement in other.new.statements:
            if statement.key in base_keys:
                continue
            # a trace's own old wording, not the history nested in it: a statement hidden
            # inside another one's older trace is lost, not kept
            traces = [
                kept_words(split_statement(trace.old, reply.formats)[0])
                for trace in statement.traces
                if reply.trace_id(trace) not in known
            ]
            item = (other.path, statement, kept_words(statement.core), traces)
            if traces:
                traced.append(item)
            for word in item[2] | frozenset().union(*traces):
                index.setdefault(word, []).append(item)
    return index, traced


def _example_trace(reply: ReplyReading, old: str, date: str | None = None) -> str:
    return reply.formats.trace.replace("{date}", date or reply.ctx.pass_date).replace(
        "{old}", short_text(old, 30)
    )


def _gone(reply: ReplyReading, change: Change, old: Statement) -> str:
    """Rule 4's message for a statement gone: what seems to have taken its place, and the
    trace that would keep it, dated by the note its new wording cites."""
    where = f"the statement {short_text(old.core)!r} (line {old.line_no} of the current file)"
    new = _replacement(change, old)
    if new is None:
        return (
            f"{where} is gone; keep it, rewrite it with a trace that keeps its words "
            f"{_example_trace(reply, old.core)}, declare it <merged> into the statement that "
            "holds it, or list it in <dropped>"
        )
    from cmem.converge.validator.check_trace_dates import note_dates

    days = [d for name in new.sources for d in note_dates(reply, name) if d <= reply.ctx.pass_date]
    trace = _example_trace(reply, old.core, max(days, default=None))
    return (
        f"{where} is gone, and {short_text(new.core)!r} (line {new.line_no}) looks like its new "
        f"wording: a changed fact keeps the old wording in a trace on the new statement, "
        f"'{short_text(new.core, 40)} {trace}' (dated by the note the change came from); a "
        "rewording keeps every word, number and negation of the old one (or declare it "
        "<merged>); a statement that should go is listed in <dropped>"
    )


def _replacement(change: Change, old: Statement) -> Statement | None:
    """The new statement of the file that shares most of a gone statement's words (at least
    half), or None."""
    words = kept_words(old.core)
    if not words or change.base is None:
        return None
    before = set(change.base.keys)
    best, shared = None, (len(words) + 1) // 2
    for statement in change.new.statements:
        if statement.key in before:
            continue
        common = len(words & kept_words(statement.core))
        if common >= shared and (best is None or common > len(words & kept_words(best.core))):
            best = statement
    return best


def check_shrink(reply: ReplyReading, change: Change, removed: int, blanked: int = 0) -> None:
    """Rule 8: a file loses at most a quarter of its statements (to <dropped> or blanking)
    in one pass — one in a file of two or three, never all of them; a rewrite with a trace
    or a merge keeps a statement."""
    total = len(change.base.statements) if change.base else 0
    lost = removed + blanked
    # a quarter, and one in a file of two or three (a duplicate may go), never them all;
    # a statement blanked ("Unknown") gets no such allowance
    limit = total // 4 if blanked or total >= 4 else min(1, total - 1)
    if total >= 2 and lost > limit and not reply.ctx.allow_shrink:
        how = f" ({removed} in <dropped>, {blanked} blanked)" if blanked else ""
        reply.error(
            change.path,
            0,
            DROP_LITTLE,
            f"the reply removes {lost} of its {total} statements{how}, more than rule 8 allows in one pass (a quarter; one of a file of two or three; never all); drop fewer (a statement rewritten with a trace or declared <merged> is kept, not dropped; 'Unknown' is a loss), or the user passes --allow-shrink",
        )


def check_layer_loss(reply: ReplyReading) -> None:
    """More than a quarter of all memory lost in one pass, across files (docs/design.md §5 rule 10)."""
    lost = sum(losses(reply).values())
    if (
        not lost
        or reply.ctx.allow_shrink
        or any(issue.rule == DROP_LITTLE for issue in reply.result.errors)
    ):
        return  # a file's own quarter already named the loss
    texts = {path: text for path, text in reply.ctx.originals.items() if text}
    texts.update({c.path: c.base.text for c in reply.changes if c.base})
    for path, text in reply.resident_texts.items():
        texts.setdefault(path, text)
    total = sum(len(reply.parse(text).statements) for text in texts.values())
    if total >= 4 and lost * 4 > total:
        reply.error(
            RESPONSE,
            0,
            MEMORY_WHOLE,
            f"the reply removes {lost} of the {total} statements of the memory layer, more than a quarter in one pass; drop fewer, or the user passes --allow-shrink",
        )


def check_dropped_entries(reply: ReplyReading) -> None:
    by_path = {change.path: change for change in reply.changes}
    for entry in reply.response.dropped:
        change = by_path.get(entry.file)
        key = normalize(split_statement(entry.statement, reply.formats)[0])
        if change is None:
            reply.warn(
                RESPONSE,
                entry.line,
                DROPPED,
                f'<dropped file="{show_path(entry.file)}"> names a file the reply does not rewrite; ignored',
            )
        elif change.base is None or key not in change.base.keys:
            reply.warn(
                RESPONSE,
                entry.line,
                DROPPED,
                f"<dropped> names {short_text(entry.statement, 50)!r}, which is not a statement of {entry.file}; ignored",
            )
        elif key in change.new.keys:
            reply.warn(
                RESPONSE,
                entry.line,
                DROPPED,
                f"<dropped> names {short_text(entry.statement, 50)!r}, which is still in {entry.file}",
            )


# The rules this module checks, each under its id, in the order they run: on each file block,
# then on the reply as a whole (`validate.py` runs the modules in `RULE_MODULES` order).
CHANGE_RULES: dict[RuleKey, ChangeRule] = {
    NOTHING_LOST: check_removals,  # counts each file's losses for rule 10
}
REPLY_RULES: dict[RuleKey, ReplyRule] = {
    MEMORY_WHOLE: check_layer_loss,
    DROPPED: check_dropped_entries,
}
