"""One step through one layer: lock → check the repository → recover any interrupted step →
snapshot the user's edits → (the command's own work) → journal → apply all or nothing → commit.

    with open_step(vault, "archive") as step:
        ...plan from what is on disk now...
        step.commit(changes, message, record)

Every command that writes goes through here: a pass, `archive apply`, `undo`, `doctor --fix`.
A failure names the file and says what was and was not done; a failure after the files were
written keeps the journal, so the next command finishes the step.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime

from cmem import faults
from cmem.errors import CmemError, os_error_sentence
from cmem.steps import commits as history
from cmem.steps import journal, preflight
from cmem.steps.changes import (
    ChangeSet,
    apply_changes,
    check_confined,
    check_tracked,
    check_writable,
    current_bytes,
)
from cmem.steps.lock import vault_lock
from cmem.steps.message import CommitMessage
from cmem.steps.record import new_step_id, step_name
from cmem.vault.layers import Vault


class StepFailed(CmemError):
    """A step stopped; the message says what was and was not done."""


@dataclass
class Step:
    vault: Vault
    kind: str
    id: str
    now: datetime
    notices: list[str] = field(default_factory=list)  # interrupted steps finished first
    snapshot: str | None = None  # the commit of the user's own edits (None: nothing to commit)
    # path → a warning: a file the snapshot could not read (left out, as it is on disk)
    unread: dict[str, str] = field(default_factory=dict)

    @property
    def warnings(self) -> list[str]:
        """What a step's report says before its own outcome."""
        return self.notices + list(self.unread.values())

    def commit(
        self,
        changes: ChangeSet,
        message: CommitMessage | str,
        *,
        merge_parents: tuple[str, ...] | list[str] = (),
        fast_forward: tuple[str, str] | None = None,
    ) -> str | None:
        """Journal, apply and commit `changes`; returns the commit (None: HEAD held it already).

        A sync passes `merge_parents` (a merge commit, made even with no file to change) or
        `fast_forward` = (HEAD, the other side's commit): the branch moves there, no commit is made.
        Its paths are any the repository tracks, so they are checked by `check_tracked`."""
        if not changes and not merge_parents and not fast_forward:
            return None
        text = message.render() if isinstance(message, CommitMessage) else message
        what = step_name(self.kind)
        for rel in changes.paths:
            if merge_parents or fast_forward:
                check_tracked(self.vault, rel)
            else:
                check_confined(self.vault, rel)
        check_writable(self.vault, changes)  # a file made read-only: refused before the journal
        try:
            record = journal.begin(
                self.vault,
                self.kind,
                self.id,
                changes,
                text,
                merge_parents=merge_parents,
                fast_forward=fast_forward,
            )
        except OSError as exc:
            _remove_folder(journal.journal_root(self.vault) / self.id)  # a half-written journal
            raise StepFailed(
                f"{_os_reason(exc)}; the {what} wrote nothing in the vault (its journal could not be written)."
            ) from None
        try:
            apply_changes(self.vault, changes)
        except OSError as exc:
            self._after_failed_apply(record, changes)
            raise StepFailed(f"{_os_reason(exc)}; {self._state_after(changes)}") from None
        except BaseException:
            self._after_failed_apply(record, changes)
            raise
        faults.point("applied")
        sha: str | None  # None: HEAD held the files already
        try:
            record.mark("committing")
            if fast_forward:
                history.move_branch(
                    self.vault.root, fast_forward[1], fast_forward[0], changes.paths
                )
                sha = fast_forward[1]
            else:
                sha = history.commit_files(
                    self.vault.root,
                    changes.written,
                    text,
                    merge_parents=merge_parents,
                    modes=changes.modes,
                )
        except (OSError, CmemError) as exc:
            reason = _os_reason(exc) if isinstance(exc, OSError) else str(exc).rstrip(".")
            raise StepFailed(
                f"{reason}; the {what}'s files are written but not committed — the next cmem command "
                "(or `cmem doctor --fix`) finishes it."
            ) from None
        faults.point("committed")
        record.finish()
        return sha

    def _after_failed_apply(self, record: journal.Journal, changes: ChangeSet) -> None:
        # apply_changes put every file back; keep the journal only if something is still changed
        if all(current_bytes(self.vault.root / c.rel) == c.old for c in changes.ordered()):
            record.finish()

    def _state_after(self, changes: ChangeSet) -> str:
        what = step_name(self.kind)
        left = [c.rel for c in changes.ordered() if current_bytes(self.vault.root / c.rel) != c.old]
        if not left:
            return f"the {what} changed nothing (every file is as it was)."
        return (
            f"the {what} could not put back {', '.join(left)}; the next cmem command (or `cmem doctor --fix`) "
            "finishes or undoes it from its journal."
        )


def _remove_folder(path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def _os_reason(exc: OSError) -> str:
    """The error's sentence (errors.os_error_sentence), to be followed by what the step did."""
    return (os_error_sentence(exc) or str(exc)).rstrip(".")


def recover_interrupted(vault: Vault, purpose: str) -> list[str]:
    """Finish any interrupted step, holding the lock only for that (used before a command plans
    what it will do, so the plan is made from a whole vault). Returns one line per recovery."""
    if not journal.pending_journals(vault):
        return []
    with vault_lock(vault.machine_dir, purpose):
        preflight.check_repository(vault)
        return [str(recovery) for recovery in journal.recover(vault)]


@contextmanager
def open_step(
    vault: Vault,
    kind: str,
    *,
    now: datetime | None = None,
    purpose: str | None = None,
    snapshot: bool = True,
    gate=None,
):
    """Hold the vault lock for one step; recover first, then snapshot the user's edits. `gate`
    is called first under the lock (an unattended trigger asks again whether it is still due,
    and raises to stop before anything is written)."""
    now = now or datetime.now().astimezone()
    with vault_lock(vault.machine_dir, purpose or kind), history.one_repository():
        if gate is not None:
            gate()
        preflight.check_repository(vault)
        preflight.check_own_files(vault, step_name(kind))  # before a recovery writes state.json
        preflight.check_writable(vault, step_name(kind))
        notices = [str(recovery) for recovery in journal.recover(vault)]
        unread: dict[str, str] = {}
        snap = preflight.snapshot(vault, step_name(kind), unread) if snapshot else None
        yield Step(vault, kind, new_step_id(now), now, notices, snap, unread)
