"""`cmem status`: the vault at a glance (docs/design.md §9, §11)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from cmem.archive.checklist import count_staged
from cmem.reading.sizes import LayerSize, measure_layers
from cmem.reading.waiting import Waiting, account_waiting
from cmem.regular_files import read_regular
from cmem.steps import commits as history
from cmem.steps.lock import is_locked
from cmem.steps.run_records import failed_pass
from cmem.sync.record import read_record
from cmem.triggers.due import interval_of
from cmem.triggers.hook_record import hooks_status
from cmem.triggers.if_due import Due, check_due, load_failures
from cmem.vault.layers import RESIDENT, SITUATIONAL, Vault
from cmem.vault.notes import OddFile
from cmem.vault.state_json import load_state

# Figures a status may show stale until `--rescan`: the archive is checked by its folders' mtimes,
# by a stored status (reading/stored_results.py) and by the layer sizes (reading/sizes.py) alike, so an archived
# note edited in place keeps its size.
STALE = ["layers.archive.tokens"]


@dataclass
class Status:
    vault: str
    layers: dict[str, LayerSize]
    resident_max_tokens: int
    budget_tokens: int
    newest_convergent: tuple[str, float] | None  # (path, age in seconds)
    oldest_convergent: tuple[str, float] | None
    waiting: Waiting  # what is pending, and why (`reading/waiting.py`)
    last_pass: dict | None
    due: Due
    staged_archive: int
    ticked_archive: int
    odd: list[OddFile] = field(default_factory=list)
    running: bool = False
    unattended: dict | None = None  # unattended failures in a row, and whether they stopped
    failed_pass: dict | None = None  # this machine's last failed pass, until one succeeds
    interrupted: list[dict] = field(
        default_factory=list
    )  # steps a killed process left: {"kind", "id"}
    conflicts: list = field(
        default_factory=list
    )  # conflict statements a sync left (cmem.sync.memory_merge)
    last_sync: dict | None = None  # this machine's last sync (cmem.sync.record), None: never
    agent_hooks: list = field(default_factory=list)  # per agent: last fired, captured, failed
    model: dict = field(default_factory=dict)  # the model a pass asks: setup/trust.py model_status
    unmanaged: list = field(
        default_factory=list
    )  # cmem.vault.unmanaged.UnmanagedFolder: notes no layer reads
    # The inputs of the figures that change with the clock alone (ages, due), so a status served
    # from a stored result (reading/stored_status.py) recomputes them at print time.
    clock: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            "vault": self.vault,
            "layers": {name: size.to_json() for name, size in self.layers.items()},
            "budgets": {
                "resident_max_tokens": self.resident_max_tokens,
                "budget_tokens": self.budget_tokens,
            },
            "convergent_age": {
                "newest": _age_json(self.newest_convergent),
                "oldest": _age_json(self.oldest_convergent),
            },
            "pending": self.waiting.to_json(),
            "last_pass": self.last_pass,
            "due": self.due.to_json(),
            "staged_archive": self.staged_archive,
            "ticked_archive": self.ticked_archive,
            "odd_files": [{"file": o.rel, "kind": o.kind, "message": o.message} for o in self.odd],
            "running": self.running,
            "unattended": self.unattended,
            "failed_pass": self.failed_pass,
            "interrupted": self.interrupted,
            "conflicts": [c.to_json() for c in self.conflicts],
            "last_sync": self.last_sync,
            "agent_hooks": self.agent_hooks,
            "model": self.model,
            "unmanaged": [folder.to_json() for folder in self.unmanaged],
            "may_be_stale": list(STALE),
        }


def _age_json(entry):
    return None if entry is None else {"path": entry[0], "age_seconds": round(entry[1])}


def build_status(vault: Vault, now: datetime | None = None, rescan: bool = False) -> Status:
    """`rescan`: measure every archived note too (`reading/sizes.py`), not the archive's folders."""
    from cmem.scan.scanner import scan_vault
    from cmem.setup.trust import model_status
    from cmem.vault.config import model_configured
    from cmem.vault.unmanaged import find_unmanaged

    now = now or datetime.now().astimezone()
    state = load_state(vault.state_file)
    scan = scan_vault(vault, state=state)
    layers = measure_layers(vault, rescan)
    memory = layers[RESIDENT].tokens + layers[SITUATIONAL].tokens
    waiting = account_waiting(vault, scan, model_configured(vault), memory)
    # the size walk has stat'ed every memory file already: its newest and oldest, as ages
    convergent = [layers[RESIDENT], layers[SITUATIONAL]]
    newest_ends = [size.newest for size in convergent if size.newest]
    oldest_ends = [size.oldest for size in convergent if size.oldest]
    newest = max(newest_ends, key=lambda end: end[1], default=None)
    oldest = min(oldest_ends, key=lambda end: end[1], default=None)
    last = state.last_of_kind("converge")
    interval, label = interval_of(vault.config.min_interval_minutes, vault.config.schedule_hours)
    clock = {
        "newest_ns": newest[1] if newest else None,
        "oldest_ns": oldest[1] if oldest else None,
        "last_time": last.get("time") if last else None,
        "interval_seconds": interval.total_seconds(),
        "interval_label": label,
        # the last sync and the agent hooks' records are read again at print time: a sync or a
        # hook rewrites them, and they key nothing stored
        "machine_dir": str(vault.machine_dir),
    }
    # (path, age in seconds) of the newest and the oldest convergent note
    newest_age = None if newest is None else (newest[0], now.timestamp() - newest[1] / 1e9)
    oldest_age = None if oldest is None else (oldest[0], now.timestamp() - oldest[1] / 1e9)
    staged = ticked = 0
    try:
        checklist = read_regular(vault.checklist_path).decode("utf-8", errors="replace")
        staged, ticked = count_staged(checklist)
    except OSError:
        pass  # none, or not a file: the scan's odd files name it
    return Status(
        vault=str(vault.root),
        layers=layers,
        resident_max_tokens=vault.config.resident_max_tokens,
        budget_tokens=vault.config.budget_tokens,
        newest_convergent=newest_age,
        oldest_convergent=oldest_age,
        waiting=waiting,
        last_pass=_last_pass(vault, state),
        due=check_due(vault, state, waiting.workable, now),
        staged_archive=staged,
        ticked_archive=ticked,
        odd=scan.odd,
        running=is_locked(vault.machine_dir),
        unattended=load_failures(vault).to_json(),
        failed_pass=failed_pass(vault, state),
        interrupted=_interrupted_steps(vault),
        conflicts=_conflicts(vault),
        last_sync=read_record(vault.machine_dir, now.timestamp()),
        agent_hooks=hooks_status(str(vault.machine_dir), now.timestamp()),
        model=model_status(vault),
        unmanaged=find_unmanaged(vault),
        clock=clock,
    )


def _conflicts(vault: Vault) -> list:
    from cmem.sync.conflicts_found import find_conflicts  # on use: start-up stays as it was

    return find_conflicts(vault)


def _interrupted_steps(vault: Vault) -> list[dict]:
    """Journals a killed step left (cmem.steps.journal): the next writing command finishes them.
    A live step has one too while it runs; it is reported as running, not interrupted."""
    root = vault.journal_dir  # checked before the step layer is imported: status stays fast
    if not root.is_dir() or is_locked(vault.machine_dir):
        return []
    from cmem.steps.journal import describe

    found = []
    for folder in sorted(root.iterdir()):
        if (folder / "intent.json").is_file():
            kind, step_id = describe(folder)
            found.append({"kind": kind, "id": step_id})
    return found


def _last_pass(vault: Vault, state) -> dict | None:
    last = state.last_of_kind("converge")
    if not last:
        return None
    return {
        "id": last.get("id"),
        "time": last.get("time"),
        "commit": _pass_commit(vault, last.get("id", "")),
        "notes": len(last.get("notes", [])),
        "changed": last.get("changed", []),
    }


PASS_COMMIT_MEMO = "last-pass-commit.json"


def _pass_commit(vault: Vault, pass_id: str) -> str | None:
    """The commit of a pass, remembered with the HEAD it was found at: while HEAD stands still,
    `status` starts no git process (`git log --grep` walks the history)."""
    import json

    from cmem.atomic import write_atomic
    from cmem.steps.git_head import head_sha

    head = head_sha(str(vault.root))
    memo = vault.machine_dir / PASS_COMMIT_MEMO
    try:
        known = json.loads(memo.read_text("utf-8"))
        if head and known.get("id") == pass_id and known.get("head") == head:
            return known.get("commit")
    except (OSError, ValueError, AttributeError):
        pass
    commit = history.find_pass_commit(vault.root, pass_id)  # None outside a repository
    sha = commit.sha if commit else None
    if head:
        try:
            write_atomic(memo, json.dumps({"id": pass_id, "head": head, "commit": sha}))
        except OSError:
            pass  # a read-only machine folder only costs a git process
    return sha
