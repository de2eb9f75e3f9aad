"""`cmem converge --backlog`: an adopted vault's backlog converged by a model, in batches the user
sees (docs/design.md §2: explicitly, never all at once, never unattended).

Before it starts, `plan_backlog` says what it will cost: the notes, their tokens, the passes
(batches) the prompt budget makes of them, the tokens sent and expected back, and the price when
one is given (`llm.price`, `--price`). Then `run_backlog` runs one pass per batch, each its own
commit, and reports each batch as it ends. A batch converged (or deferred by the model) is in
`state.json`, so a run that is stopped, killed or fails continues where it stopped when asked
again: no batch is sent twice. Only a person's `converge --backlog` reaches here; the unattended
triggers pass `backlog=False` (`triggers/if_due.py` holds them to it)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Callable

from cmem.converge.pass_values import PassOptions, PassResult, Progress
from cmem.errors import CmemError
from cmem.vault.layers import Vault

# A pass's reply rewrites the memory files it was shown and adds what the notes hold: the
# reply estimate is the resident files plus this share of the batch's notes.
REPLY_SHARE = 0.2


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens sent (input) and received (output)."""

    input: float
    output: float

    def cost(self, sent: int, received: int) -> float:
        return (sent * self.input + received * self.output) / 1_000_000


@dataclass(frozen=True)
class BacklogPlan:
    notes: int  # backlog notes
    tokens: int  # their size
    pending: int  # other pending notes the first batches take too
    batches: int  # passes, each within the prompt budget
    prompt_tokens: int  # sent, every batch's prompt together (estimate)
    reply_tokens: int  # received (estimate)
    price: Price | None = None

    @property
    def cost(self) -> float | None:
        return (
            None if self.price is None else self.price.cost(self.prompt_tokens, self.reply_tokens)
        )

    def to_json(self) -> dict:
        return {
            "notes": self.notes,
            "tokens": self.tokens,
            "pending": self.pending,
            "batches": self.batches,
            "prompt_tokens": self.prompt_tokens,
            "reply_tokens": self.reply_tokens,
            "price": None
            if self.price is None
            else {"input": self.price.input, "output": self.price.output},
            "cost": None if self.cost is None else round(self.cost, 4),
        }


@dataclass
class BacklogRun:
    plan: BacklogPlan
    batches: list[PassResult] = field(default_factory=list)
    left: int = 0  # backlog notes not converged yet
    stopped: str = ""  # why the run stopped before the backlog was done

    def to_json(self) -> dict:
        return {
            "plan": self.plan.to_json(),
            "batches": [result.to_json() for result in self.batches],
            "left": self.left,
            "stopped": self.stopped or None,
        }


def parse_price(text: str | None, where: str = "--price") -> Price | None:
    """`3` or `3/15`: dollars per million input (and output) tokens."""
    if text is None or not str(text).strip():
        return None
    parts = str(text).strip().lstrip("$").split("/")
    try:
        values = [float(part.strip().lstrip("$")) for part in parts]
    except ValueError:
        values = []
    if len(values) not in (1, 2) or any(v < 0 for v in values):
        raise CmemError(
            f"{where} takes dollars per million tokens, as INPUT or INPUT/OUTPUT (e.g. 3/15), not {text!r}."
        )
    return Price(values[0], values[-1])


def configured_price(vault: Vault) -> Price | None:
    """`llm.price` of the user's config, else of the vault's."""
    from cmem.vault.config import load_user_config

    for llm in ((load_user_config().get("llm") or {}), (vault.config.raw.get("llm") or {})):
        price = llm.get("price")
        if isinstance(price, dict):
            sent = float(price["input"])
            return Price(sent, float(price["output"]) if "output" in price else sent)
    return None


def plan_backlog(vault: Vault, options: PassOptions, price: Price | None = None) -> BacklogPlan:
    """What converging the backlog will take: batches by the prompt budget, as a pass selects."""
    from cmem.converge.memory.files import hand_edited_files, read_originals
    from cmem.converge.prompt import assemble_prompt
    from cmem.scan.scanner import scan_vault
    from cmem.text.tokens import estimate_tokens
    from cmem.vault.state_json import load_state

    state = load_state(vault.state_file)
    with vault.listed_once():
        scan = scan_vault(vault, state=state)
        originals, _ = read_originals(vault)
        date = (options.now or datetime.now().astimezone()).date().isoformat()
        fixed = assemble_prompt(vault, [], originals, date, hand_edited_files(vault, state)).tokens
    resident = sum(
        estimate_tokens(text)
        for rel, text in originals.items()
        if rel.startswith(vault.config.resident_dir + "/")
    )
    room = max((options.budget or vault.config.budget_tokens) - fixed, 1)
    sizes = [p.tokens + 40 * len(p.signals) for p in scan.pending] + [
        b.tokens for b in scan.backlog
    ]
    batches, used = 0, 0
    for size in sizes:
        if batches == 0 or (used and used + size > room):
            batches, used = batches + 1, 0
        used += size
    notes_tokens = sum(sizes)
    return BacklogPlan(
        notes=len(scan.backlog),
        tokens=sum(b.tokens for b in scan.backlog),
        pending=len(scan.pending),
        batches=batches,
        prompt_tokens=batches * fixed + notes_tokens,
        reply_tokens=batches * resident + int(notes_tokens * REPLY_SHARE),
        price=price,
    )


def backlog_left(vault: Vault) -> int:
    from cmem.scan.scanner import scan_vault

    return len(scan_vault(vault).backlog)


def run_backlog(
    vault: Vault,
    options: PassOptions,
    plan: BacklogPlan,
    on_batch: Callable[[int, int, PassResult, int], None],
    progress: Progress | None = None,
) -> BacklogRun:
    """One pass per batch until the backlog is done, a pass fails, or one makes no progress.
    `on_batch(k, n, result, left)` after each; n, the batches, is estimated again as they go."""
    from cmem.converge.pipeline import run_pass

    run = BacklogRun(plan, left=plan.notes)
    total = max(plan.batches, 1)
    per_batch = max(plan.notes // total, 1)
    while run.left:
        before = run.left
        number = len(run.batches) + 1
        try:
            result = run_pass(vault, replace(options, backlog=True), progress)
        except CmemError as exc:
            done = len(run.batches)
            exc.args = (
                f"{str(exc).rstrip()}\nbatch {number} of {total} stopped; {done} "
                f"batch{'es' if done != 1 else ''} before it are committed: "
                "`cmem converge --backlog` continues where it stopped.",
            )
            raise
        run.batches.append(result)
        run.left = backlog_left(vault)
        total = max(total, number + -(-run.left // per_batch))
        on_batch(number, total if run.left else number, result, run.left)
        if result.status != "applied":
            run.stopped = result.message or f"the pass ended {result.status}"
            break
        if run.left >= before and not (result.converged or result.deferred):
            # the batch took no note at all (a batch of pending notes first is progress too)
            run.stopped = "the last batch converged no note; stopped so as not to loop"
            break
    return run
