"""`.cmem/state.json` as the steps guard it: which notes were converged is the vault's memory of
its own passes, so a working copy that is missing, empty or broken is never written back built
from nothing (issue 35: an `undo` over an empty one committed `"notes": {}`, and the notes of
the passes it did not undo were converged twice).

- A step never commits such a file: the snapshot of the user's edits refuses it
  (`refuse_broken`), before anything of the step is written, naming the file and the way out.
- `cmem doctor` names it (`working_problem`), and `doctor --fix` restores it from git
  (`restorable`: HEAD's copy when it is valid, else the newest valid one in the history — the
  deletion was committed by hand), as a step (`doctor/doctor_fix.py: restore_state`).
- Undo, where HEAD has no valid copy either, takes the state from git (`archive/undo.py`).
- A pass merges its own changes into the state.json on disk when it commits (`merged_with_disk`):
  a `git pull` while its model thought (Obsidian Git's auto-pull), or a pass through another
  machine folder, may have rewritten it, and their records stay.

A missing state.json that git never had is a vault with no pass yet, not a fault.
"""

from __future__ import annotations

from cmem.errors import CmemError
from cmem.steps import commits as history
from cmem.vault.layers import Vault
from cmem.vault.state_json import State, merge_states, parse_state, state_bytes

STATE_REL = ".cmem/state.json"


class BrokenStateFile(CmemError):
    """state.json is missing, empty or broken where git has it; the step did nothing."""


def problem(data: bytes | None) -> str | None:
    """What is wrong with these bytes as a state file ("is missing", "is empty", …), or None."""
    if data is None:
        return "is missing"
    if not data.strip():
        return "is empty"
    try:
        parse_state(data.decode("utf-8"), STATE_REL)
    except UnicodeDecodeError:
        return "is not UTF-8"
    except CmemError as exc:
        reason = str(exc).split(STATE_REL, 1)[-1].split(";", 1)[0].strip(" :.")
        if "format" in reason:
            return "is not a cmem state file of this version"
        return reason if reason.startswith("is ") else f"is broken ({reason})"
    return None


def _working_bytes(vault: Vault) -> bytes | None:
    try:
        return vault.state_file.read_bytes()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def _blob(vault: Vault, commit: str) -> bytes | None:
    from cmem.steps.pass_log import read_blob

    return read_blob(vault, commit, STATE_REL)


def working_problem(vault: Vault) -> str | None:
    """The working copy's fault as one phrase ("is empty"), or None: a missing file is a fault
    only where git's HEAD or history has one."""
    data = _working_bytes(vault)
    found = problem(data)
    if found == "is missing" and restorable(vault) is None:
        return None  # no pass yet, or git never had it: nothing is lost
    return found


def restorable(vault: Vault) -> tuple[str, bytes] | None:
    """(commit, bytes) of the copy to restore: HEAD's when valid, else the newest valid one in
    the history (a deletion, or a broken copy, committed by hand); None when git has none."""
    head = _blob(vault, "HEAD")
    if head is not None and problem(head) is None:
        return "HEAD", head
    listed = history.run_git(
        vault.root, "log", "--format=%H", "-n", "50", "--", STATE_REL, check=False
    )
    for sha in listed.stdout.split():
        data = _blob(vault, sha)
        if data is not None and problem(data) is None:
            return sha, data
        parent = _blob(vault, f"{sha}^")  # the commit removed or broke it: its parent's
        if parent is not None and problem(parent) is None:
            return f"{sha}^", parent
    return None


def way_out(vault: Vault) -> str:
    found = restorable(vault)
    if found is None:
        return "restore it from a backup"
    source = "HEAD" if found[0] == "HEAD" else f"commit {found[0][:12]}"
    return f"`cmem doctor --fix` restores it from git ({source})"


def refuse_broken(vault: Vault, what: str) -> None:
    """A step about to commit the user's edits with state.json among them: refused when that
    file is missing, empty or broken, so no snapshot ever commits it."""
    found = working_problem(vault)
    if found:
        raise BrokenStateFile(
            f"{STATE_REL} {found}, and cmem will not commit it or build a new one from it: "
            f"{way_out(vault)}; the {what} did nothing — nothing was written and nothing was "
            "committed."
        )


def merged_with_disk(vault: Vault, read: State, ours: State) -> tuple[bytes | None, bytes]:
    """(the state.json on disk now, `ours` merged into it): what a step read (`read`) and made
    of it (`ours`), on top of whatever another writer made of it since (one merge rule,
    `merge_states`, the one `cmem sync` uses)."""
    data = _working_bytes(vault)
    if data is None and not read.notes and not read.passes:
        return None, state_bytes(ours)  # no pass yet: nothing to merge into
    found = problem(data)
    if found:
        raise BrokenStateFile(
            f"{STATE_REL} {found} now, changed while the step ran, and cmem will not build a new "
            f"one from it: {way_out(vault)}; nothing was written."
        )
    assert data is not None
    disk = parse_state(data.decode("utf-8"), STATE_REL)
    return data, state_bytes(merge_states(read, ours, disk))
