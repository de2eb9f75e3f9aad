"""Rules 6 and 13: the resident files stay under `resident_max_tokens`, each topic file under
`situational_max_tokens`."""

from __future__ import annotations

from cmem.converge.validator.reply_reading import ChangeRule, ReplyReading, ReplyRule, RuleKey
from cmem.converge.validator.rules import RESIDENT_SIZE, SIZES
from cmem.text.tokens import estimate_tokens
from cmem.vault.layers import RESIDENT, SITUATIONAL


def check_resident_size(reply: ReplyReading) -> None:
    before = reply.resident_texts
    written = {
        c.path: c.new.text for c in reply.changes if reply.vault.layer_of(c.path) == RESIDENT
    }
    after = {**before, **written}
    cap = reply.vault.config.resident_max_tokens
    # each file measured once: the files the reply leaves alone count the same on both sides
    # (at 10k, 506 resident files measured twice were a fifth of validating a one-note pass),
    # and kept by the text's digest for the next pass, whose originals are these texts
    from cmem.converge.memory.statement_words import TokenMemo

    memo = TokenMemo(reply.vault.machine_dir)
    tokens = {path: memo.tokens(text) for path, text in before.items()}
    size_before = sum(tokens.values())
    tokens.update((path, memo.tokens(text)) for path, text in written.items())
    memo.save()
    size_after = sum(tokens[path] for path in after)
    if size_after <= cap:
        return
    if written and size_after > size_before:
        largest = max(written, key=lambda path: estimate_tokens(written[path]))
        reply.error(
            largest,
            0,
            RESIDENT_SIZE,
            f"the resident files would hold about {size_after} tokens, over the cap of {cap} (resident_max_tokens); compress them — merge overlapping statements with <dropped>, or move situational detail to {reply.vault.config.situational_dir}/",
        )
    else:
        reply.warn(
            reply.vault.config.resident_dir,
            0,
            RESIDENT_SIZE,
            f"the resident files hold about {size_after} tokens, over the cap of {cap}; the next pass should compress them",
        )


def check_situational_size(reply: ReplyReading) -> None:
    cap = reply.vault.config.situational_max_tokens
    for change in reply.changes:
        if reply.vault.layer_of(change.path) != SITUATIONAL:
            continue
        size = estimate_tokens(change.new.text)
        if size > cap and (change.base is None or size > estimate_tokens(change.base.text)):
            reply.error(
                change.path,
                0,
                SIZES,
                f"the file would hold about {size} tokens, over the cap of {cap} for a topic file (situational_max_tokens); split it by topic or compress it",
            )


# The rules this module checks, each under its id, in the order they run: on each file block,
# then on the reply as a whole (`validate.py` runs the modules in `RULE_MODULES` order).
CHANGE_RULES: dict[RuleKey, ChangeRule] = {}
REPLY_RULES: dict[RuleKey, ReplyRule] = {
    RESIDENT_SIZE: check_resident_size,
    SIZES: check_situational_size,
}
