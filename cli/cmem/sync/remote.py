"""`cmem sync`: one vault on several machines, through a git remote (docs/design.md §13).

    fetch the remote's branch → merge it in (one step: locked, journaled) → push, never forced

- The user's uncommitted edits to notes and memory files are committed first (the snapshot
  every step makes), so they travel too.
- The remote is `git.remote` (else the branch's upstream); only the vault's branch is fetched,
  merged and pushed — no other branch, no tag, never `--force`, never a rebase: published history
  is never rewritten.
- The merge is a step (cmem.steps): the user's own edits are committed first (the snapshot), the
  merged files are journaled and applied all or nothing, and one merge commit with both parents
  records it — or, when this machine has nothing the other lacks, the branch fast-forwards. A kill
  at any point is finished or undone by the next command. How files merge: cmem.sync.three_way.
- Push rejected because another machine pushed first: fetch, merge and push again (a few times).
- The remote unreachable (offline, the remote's folder gone, no credentials): said once, nothing
  is changed, the vault carries on locally — `status` "offline", exit code 3 for `cmem sync`.
- Nothing to do costs a `git status`, one `git fetch` and a few look-ups: no lock, no step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from cmem.errors import CmemError
from cmem.steps import commits as history
from cmem.sync.git_env import remote_env
from cmem.sync.record import outcome_of, write_record
from cmem.vault.layers import Vault

OFFLINE_EXIT_CODE = 3
MAX_ATTEMPTS = 3


class Offline(CmemError):
    """The remote could not be reached; nothing was changed."""

    exit_code = OFFLINE_EXIT_CODE


@dataclass
class SyncTarget:
    remote: str
    branch: str  # the branch's name on the remote
    tracking: str  # refs/remotes/<remote>/<branch>
    local_ref: str = ""  # refs/heads/<the branch checked out here>
    ssh_configured: bool = False  # core.sshCommand set: the user's ssh, not cmem's batch mode


@dataclass
class SyncResult:
    remote: str
    branch: str
    status: str = "nothing"  # nothing | synced | offline
    merged: str | None = None  # fast-forward | merge
    commit: str | None = None  # the merge commit (or the commit fast-forwarded to)
    pushed: bool = False
    attempts: int = 0
    reason: str | None = None  # offline: why
    merged_files: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # files the merge wrote in this vault
    conflicts: list[str] = field(default_factory=list)  # conflict statements the merge wrote
    kept: list[str] = field(default_factory=list)  # notes archived there and edited here (or back)
    notices: list[str] = field(default_factory=list)
    snapshot: str | None = None  # the commit of the user's own edits, made so they travel too
    # not shown: what was synced with, and where the branch ended when it is where the remote's is
    target: SyncTarget | None = None
    head: str | None = None

    def to_json(self) -> dict:
        return {
            "snapshot": self.snapshot,
            "status": self.status,
            "remote": self.remote,
            "branch": self.branch,
            "merged": self.merged,
            "commit": self.commit,
            "pushed": self.pushed,
            "attempts": self.attempts,
            "reason": self.reason,
            "changed": self.changed,
            "merged_files": self.merged_files,
            "conflicts": self.conflicts,
            "kept": self.kept,
            "notices": self.notices,
        }


def resolve_target(vault: Vault) -> SyncTarget:
    """The remote and branch to sync with: `git.remote`, else the branch's upstream."""
    if not (vault.root / ".git").exists():
        raise CmemError(
            f"{vault.root} is not the top of its own git repository: a sync fetches, merges and "
            "pushes the whole branch, and this one holds files outside the vault that cmem does "
            "not manage. Sync the larger repository with git itself (git pull, git push), or give "
            "the vault a repository of its own (`cmem init --repo own`)."
        )
    local = history.run_git(
        vault.root, "symbolic-ref", "-q", "--short", "HEAD", check=False
    ).stdout.strip()
    if not local:
        raise CmemError(
            f"the repository {vault.root} has a detached HEAD; check out your branch, then sync."
        )
    settings = _git_settings(
        vault
    )  # one `git config` for all it needs: sync with nothing to do stays cheap
    upstream_remote = settings.get(f"branch.{local}.remote", "")
    remote = vault.config.sync_remote or upstream_remote
    if not remote:
        raise CmemError(
            "no remote to sync with: set git.remote in .cmem/config.yaml (e.g. origin, after "
            f"`git remote add origin <url>`), or give the branch an upstream (`git push -u origin {local}`)."
        )
    if f"remote.{remote}.url" not in settings:
        raise CmemError(
            f"git.remote names {remote!r}, which this repository does not have; add it with `git remote add {remote} <url>`."
        )
    merge = settings.get(f"branch.{local}.merge", "") if remote == upstream_remote else ""
    branch = merge.removeprefix("refs/heads/") if merge.startswith("refs/heads/") else local
    return SyncTarget(
        remote,
        branch,
        f"refs/remotes/{remote}/{branch}",
        local_ref=f"refs/heads/{local}",
        ssh_configured=bool(settings.get("core.sshcommand")),
    )


def _git_settings(vault: Vault) -> dict[str, str]:
    """The repository's branch.* and remote.* settings and core.sshCommand (git's names:
    section.subsection.key, the key in lower case), last value wins as git's own lookup does."""
    out = history.run_git(
        vault.root,
        "config",
        "-z",
        "--get-regexp",
        r"^(branch\.|remote\.|core\.sshcommand$)",
        check=False,
    ).stdout
    settings = {}
    for entry in out.split("\0"):
        name, _, value = entry.partition("\n")
        if name:
            settings[name] = value
    return settings


def fetch(vault: Vault, target: SyncTarget, fetched: dict | None = None) -> bool:
    """Fetch the remote's branch into its remote-tracking ref. False: the remote has no such
    branch yet (the first push creates it). Raises Offline when it cannot be reached.

    `fetched`: the outcome of this same fetch, run a moment ago by the idle answer
    (cmem.idle_sync.answer: argv, ssh_configured, code, stderr); taken instead of running it
    again when it is the same command with the same ssh setting."""
    if (
        fetched is not None
        and fetched["argv"] == fetch_argv(vault, target)
        and fetched["ssh_configured"] == target.ssh_configured
    ):
        code, errors = fetched["code"], fetched["stderr"]
    else:
        result = history.run_git(
            vault.root, *_fetch_args(target), check=False, env=remote_env(target.ssh_configured)
        )
        code, errors = result.returncode, result.stderr
    if code == 0:
        return True
    detail = _last_line(errors)
    if "couldn't find remote ref" in errors:
        return False
    raise Offline(
        f"the remote {target.remote} cannot be reached ({detail}); nothing was synced — the vault carries on locally."
    )


def _fetch_args(target: SyncTarget) -> tuple[str, ...]:
    # the refspec names the remote-tracking ref, so the fetch updates it even where the
    # repository's own fetch refspec does not (the idle answer reads that ref: cmem.idle_sync)
    return (
        "fetch",
        "-q",
        "--no-tags",
        "--no-write-fetch-head",
        target.remote,
        f"+refs/heads/{target.branch}:{target.tracking}",
    )


def _last_line(text: str) -> str:
    """git's reason: its first `fatal:` or `error:` line (what follows is advice), else its last line."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    reasons = [line for line in lines if line.startswith(("fatal: ", "error: "))]
    line = reasons[0] if reasons else (lines[-1] if lines else "no reason given")
    return line.removeprefix("fatal: ").removeprefix("error: ").rstrip(".")


def push(vault: Vault, target: SyncTarget, commit: str) -> bool:
    """Push `commit` to the remote's branch, never forced. False: rejected because the remote
    moved on (another machine pushed first). Raises Offline when it cannot be reached."""
    result = history.run_git(
        vault.root,
        "push",
        "--porcelain",
        "--no-verify",
        target.remote,
        f"{commit}:refs/heads/{target.branch}",
        check=False,
        env=remote_env(target.ssh_configured),
    )
    if result.returncode == 0:
        history.run_git(vault.root, "update-ref", target.tracking, commit, check=False)
        return True
    output = result.stdout + result.stderr
    if "non-fast-forward" in output or "fetch first" in output:
        return False
    refused = [line for line in result.stdout.splitlines() if line.startswith("!")]
    if refused:  # the remote itself said no (a protected branch, a hook): retrying cannot help
        raise CmemError(
            f"the remote {target.remote} refused the push: {refused[0].lstrip('!').strip()}; "
            "the merge is committed here and goes with a later sync."
        )
    raise Offline(
        f"the remote {target.remote} refused or could not be reached ({_last_line(result.stderr)}); "
        "your commits stay here and go with the next sync."
    )


def sync_vault(
    vault: Vault,
    now: datetime | None = None,
    attempts: int = MAX_ATTEMPTS,
    fetched: dict | None = None,
) -> SyncResult:
    """Fetch, merge, push — until the push lands (or `attempts` pushes were rejected). The
    outcome is recorded in the machine folder (cmem.sync.record) for `status`. `fetched`: the
    idle answer's fetch, taken as the first one (`fetch`)."""
    try:
        target = resolve_target(vault)
    except CmemError as exc:
        write_record(vault.machine_dir, "refused", "", str(exc))
        raise
    where = f"{target.remote}/{target.branch}"
    try:
        result = _sync(vault, target, now, attempts, fetched)
    except CmemError as exc:
        write_record(vault.machine_dir, "refused", where, str(exc))
        raise
    write_record(vault.machine_dir, outcome_of(result), where, result.reason or "")
    return result


def fetch_argv(vault: Vault, target: SyncTarget) -> list[str]:
    """The whole command line of sync's fetch, for the idle answer to run as is."""
    return history.git_argv(vault.root, *_fetch_args(target))


def _sync(
    vault: Vault,
    target: SyncTarget,
    now: datetime | None,
    attempts: int,
    fetched: dict | None = None,
) -> SyncResult:
    result = SyncResult(target.remote, target.branch, target=target)
    result.snapshot = commit_own_edits(vault, now)
    if result.snapshot:
        result.status = "synced"
    for attempt in range(1, attempts + 1):
        result.attempts = attempt
        try:
            # the idle answer's fetch stands for the first attempt's only: a retry after a
            # rejected push must see what the other machine pushed since
            has_branch = fetch(vault, target, fetched if attempt == 1 else None)
            ours, theirs = _revs(vault, "HEAD", target.tracking if has_branch else None)
            if theirs is not None and theirs != ours:
                _merge_into(vault, result, theirs, now)
                ours = history.head(vault.root)
            if ours is None or ours == theirs:
                result.head = ours
                return result
            if push(vault, target, ours):
                result.pushed, result.status = True, "synced"
                return result
        except Offline as exc:
            result.status, result.reason = "offline", str(exc)
            return result
    raise CmemError(
        f"the remote {target.remote} changed again each time this machine pushed ({attempts} tries); "
        "run `cmem sync` again."
    )


def commit_own_edits(vault: Vault, now: datetime | None = None) -> str | None:
    """Notes and memory files the user edited and did not commit go with the sync: they are
    committed first, as every step's snapshot is (cmem.steps.preflight). None: nothing to commit."""
    if not _look_for_edits(vault):
        return None  # the usual case: no lock taken
    from cmem.steps.runner import open_step

    with open_step(vault, "sync", now=now, purpose="sync") as step:
        return step.snapshot


def _look_for_edits(vault: Vault) -> list:
    """The managed paths with uncommitted changes, found by a `git status` that does not write
    git's index (--no-optional-locks, as editors' background checks run it).

    Why: git status refreshes the index's cached file times and rewrites it when it may, and the
    index is part of the key the idle sync is stored under (cmem.idle_sync), taken just before
    this look. A rewrite here made the key stale at once, and the next sync ran in full too
    (rewritten, the index was also too new to store). Left as it is, the index still tells every
    staged change; only its cache of file times goes unrefreshed (a later git command refreshes
    it). An edit made after the key was taken still misses it: the notes' own times are in it."""
    from cmem.steps import preflight

    return preflight.managed_changes(vault, write_index=False)


def sync_if_auto(
    vault: Vault, memo: dict, *, note: bool = False, now: datetime | None = None
) -> str | None:
    """`auto_sync` when `git.sync: auto` (and, for `cmem note`, `git.sync_note`); else nothing."""
    if vault.config.sync_mode != "auto" or (note and not vault.config.sync_note):
        return None
    return auto_sync(vault, memo, now)


def auto_sync(vault: Vault, memo: dict, now: datetime | None = None) -> str | None:
    """`git.sync: auto`, around a step: sync, and say what a person should know — once: after an
    offline or failed sync, the sync after the step is not tried (the step runs locally either
    way). Returns the line to show, or None."""
    if memo.get("skip"):
        return None
    try:
        result = sync_vault(vault, now)
    except CmemError as exc:
        memo["skip"] = True
        return f"sync skipped: {str(exc).rstrip('.')}; the step runs on this machine's vault."
    if result.status == "offline":
        memo["skip"] = True
        return f"offline: {result.reason}"
    if result.conflicts:
        return f"sync: {len(result.conflicts)} conflict statement(s) from the other machine — the next pass resolves them (`cmem status`)."
    return None


def _revs(vault: Vault, ours: str, theirs: str | None) -> tuple[str | None, str | None]:
    """Both commits in one `git rev-parse` (None: no such ref — an empty repository or remote)."""
    refs = [ours] + ([theirs] if theirs else [])
    out = history.run_git(
        vault.root, "rev-parse", *(f"{ref}^{{commit}}" for ref in refs), check=False
    ).stdout.split()
    found = [sha for sha in out if len(sha) >= 40]
    if len(found) == len(refs):
        return found[0], (found[1] if theirs else None)
    return history.head(vault.root), _one(vault, theirs) if theirs else None


def _one(vault: Vault, ref: str) -> str | None:
    return (
        history.run_git(
            vault.root, "rev-parse", "-q", "--verify", ref + "^{commit}", check=False
        ).stdout.strip()
        or None
    )


def _merge_into(vault: Vault, result: SyncResult, theirs: str, now: datetime | None) -> None:
    ours = history.head(vault.root)
    if ours == theirs or (ours and history.is_ancestor(vault.root, theirs, ours)):
        return  # the other side has nothing new: no lock, no step
    outcome = merge_remote(vault, theirs, now)
    if outcome is None:
        return
    result.status = "synced"
    result.merged, result.commit = outcome.how, outcome.commit
    result.changed += [p for p in outcome.changed if p not in result.changed]
    result.merged_files += outcome.merged_files
    result.conflicts += outcome.conflicts
    result.kept += outcome.kept
    result.notices += outcome.notices


@dataclass
class MergeOutcome:
    how: str  # fast-forward | merge
    commit: str
    changed: list[str]
    merged_files: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)


def merge_remote(vault: Vault, theirs: str, now: datetime | None = None) -> MergeOutcome | None:
    """Bring `theirs` into the vault's branch as one step. None: nothing to bring."""
    from cmem.steps.runner import open_step
    from cmem.sync.three_way import plan_merge, read_tree

    with open_step(vault, "sync", now=now, purpose="sync") as step:
        ours = history.head(vault.root)
        if ours == theirs or (ours and history.is_ancestor(vault.root, theirs, ours)):
            return None
        if ours is None or history.is_ancestor(vault.root, ours, theirs):
            their_tree = read_tree(vault, theirs)
            files = _tree_changes(vault, read_tree(vault, ours), their_tree)
            modes = {p: their_tree[p][0] for p in files if p in their_tree}
            changes = _change_set(vault, ours, files, modes)
            message = _message(step.id, "fast-forward", theirs, sorted(files), [], [], [])
            step.commit(changes, message, fast_forward=(ours or "0" * 40, theirs))
            return MergeOutcome("fast-forward", theirs, sorted(files))
        plan = plan_merge(vault, ours, theirs, step.now.date().isoformat())
        changes = _change_set(vault, ours, plan.files, plan.modes)
        message = _message(
            step.id, "merge", theirs, sorted(plan.files), plan.merged, plan.conflicts, plan.notices
        )
        commit = step.commit(changes, message, merge_parents=(theirs,))
        return MergeOutcome(
            "merge",
            commit,
            sorted(plan.files),
            plan.merged,
            plan.conflicts,
            plan.kept,
            plan.notices,
        )


def _tree_changes(vault: Vault, ours: dict, theirs: dict) -> dict[str, bytes | None]:
    from cmem.sync.three_way import read_blobs

    changed = [p for p in set(ours) | set(theirs) if ours.get(p) != theirs.get(p)]  # blob or mode
    for path in changed:
        if path in theirs and theirs[path][0] not in ("100644", "100755"):
            raise CmemError(
                f"{path} is a symbolic link or submodule on the other machine; cmem sync moves files only — merge it with git."
            )
    contents = read_blobs(vault, [theirs[p][1] for p in changed if p in theirs])
    return {p: (contents[theirs[p][1]] if p in theirs else None) for p in changed}


def _change_set(
    vault: Vault,
    ours: str | None,
    files: dict[str, bytes | None],
    modes: dict[str, str] | None = None,
):
    """The step's changes: each path from what this machine committed to the merged bytes (and
    its git mode, `modes`: an executable file stays executable, on disk and in the commit). A
    path whose working copy differs from this machine's commit (an edit cmem does not manage, an
    untracked file in the way) stops the sync before anything is written."""
    from cmem.steps.changes import ChangeSet, current_bytes, in_line_ends, same_text
    from cmem.sync.three_way import read_blobs, read_tree

    tree = read_tree(vault, ours)
    committed = read_blobs(vault, [tree[p][1] for p in files if p in tree])
    changes = ChangeSet()
    for path, data in sorted(files.items()):
        disk = current_bytes(vault.root / path)
        mine = committed.get(tree[path][1]) if path in tree else None
        if not same_text(disk, mine):
            what = (
                "is not committed here (an untracked file)"
                if mine is None
                else "has changes not committed here"
            )
            raise CmemError(
                f"{path} {what}, and the other machine changed it; commit or move it, then sync again. Nothing was merged."
            )
        if data is None:
            changes.remove(path, disk)
        elif data == disk:
            changes.include(path, disk)  # already on disk; the commit must still hold it
        else:
            changes.write(path, in_line_ends(data, disk), disk)
            if path not in changes:
                changes.include(path, disk)
        if data is not None and modes and path in modes:
            changes.modes[path] = modes[path]
    return changes


def _message(
    step_id: str,
    how: str,
    theirs: str,
    changed: list[str],
    merged: list[str],
    conflicts: list[str],
    notices: list[str],
):
    from cmem.steps.message import CommitMessage

    count = len(changed)
    subject = (
        f"cmem: sync — fast-forward to {theirs[:8]}"
        if how == "fast-forward"
        else f"cmem: sync — merge {theirs[:8]} ({count} file{'s' if count != 1 else ''} from the other machine)"
    )
    message = CommitMessage(subject, step_id)
    for path in merged:
        message.add("Merged", path)
    for line in conflicts:
        message.add("Conflict", line)
    for notice in notices:
        message.add("Notice", notice)
    return message
