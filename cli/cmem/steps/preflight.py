"""Before a step writes: the repository is one cmem may commit to, and the user's own edits to
the paths cmem manages are committed first, whole, as a snapshot (docs/design.md §3 step 2, §5
"Steps").

Refused, with a message naming what to do: no repository; a parent repository the config does
not allow; a merge, rebase, cherry-pick, revert or bisect in progress; a detached HEAD (a commit
there is lost at the next checkout); unresolved conflicts — unmerged index entries or conflict
markers left in a managed file by `git stash pop` or a hand merge.

The snapshot commits a rename the user staged with both of its paths, so HEAD never holds a note
twice, and commits each file as git would (its line endings, its mode, a link as a link). A file
it cannot read (no read permission, a FIFO) is left out with a warning, as it is on disk: one
such file never stops the step.
"""

from __future__ import annotations

import re

from cmem.errors import GitError
from cmem.regular_files import read_regular, unreadable_reason
from cmem.steps import commits as history
from cmem.steps.message import one_line
from cmem.vault.layers import PathRefused, Vault

_MARKERS = (
    re.compile(rb"^<{7}(?: |$)", re.M),
    re.compile(rb"^={7}\r?$", re.M),
    re.compile(rb"^>{7}(?: |$)", re.M),
)


def check_repository(vault: Vault) -> None:
    top = history.toplevel(vault.root)
    if top is None:
        raise GitError(f"{vault.root} is not a git repository; run `cmem init` there first.")
    if top != vault.root.resolve() and not vault.config.allow_parent_repo:
        raise GitError(
            f"the vault's git repository is {top}, above the vault; cmem will not commit there unless "
            "git.allow_parent_repo is true in .cmem/config.yaml (or run `cmem init --repo own`)."
        )
    operation = history.operation_in_progress(vault.root)
    if operation:
        raise GitError(
            f"{operation} is in progress in {top}; finish or abort it, then run the command again."
        )
    if not history.head_is_a_branch(vault.root):
        raise GitError(
            f"the repository {top} has a detached HEAD: a commit made there would belong to no branch; "
            "check out your branch (`git switch main`), then run the command again."
        )


class ReadOnlyVault(GitError):
    """The vault or its git folder cannot be written: a step does nothing."""


def unwritable_place(vault: Vault) -> str | None:
    """Where a step must write and cannot, as words naming the place and the cause, or None.
    The folders every step writes in: the vault's own (notes, `.cmem/`) and git's (its objects,
    refs and index). `os.access` answers for a read-only file system even to root."""
    import os

    try:
        folder = history.git_dir(vault.root)
    except GitError:
        folder = None
    places: list[tuple[str, str | os.PathLike[str]]] = [
        ("the vault folder", vault.root),
        ("the vault's .cmem folder", vault.cmem_dir),
    ]
    if folder is not None:
        objects = os.environ.get("GIT_OBJECT_DIRECTORY") or str(folder / "objects")
        places += [("the vault's git folder", folder), ("git's object folder", objects)]
    for label, path in places:
        if os.path.isdir(path) and not os.access(path, os.W_OK):
            try:
                read_only_fs = bool(os.statvfs(path).f_flag & os.ST_RDONLY)
            except (OSError, AttributeError):
                read_only_fs = False
            cause = (
                "is on a read-only file system" if read_only_fs else "is not writable by this user"
            )
            return f"{label} {path} {cause}"
    return None


def check_own_files(vault: Vault, what: str) -> None:
    """Before a step writes anything: `.cmem/` (or a file in it) linked out of the vault would
    take this vault's state.json into another vault (`Vault.own_files_problem`)."""
    problem = vault.own_files_problem()
    if problem:
        raise PathRefused(own_files_sentence(problem, f"the {what} did nothing"))


def own_files_sentence(problem: str, outcome: str) -> str:
    return (
        f"{problem}: cmem never writes through a link that leaves the vault, so {outcome}; "
        "replace the link with a folder (or file) of this vault's own."
    )


def check_writable(vault: Vault, what: str) -> None:
    """Before a step writes anything: a read-only vault is said as the cause, once, instead
    of as the first file git or cmem fails on."""
    place = unwritable_place(vault)
    if place:
        raise ReadOnlyVault(
            f"{place}: cmem cannot change this vault, so the {what} did nothing — nothing was "
            "written and nothing was committed."
        )


def _repo_prefix(vault: Vault) -> str:
    top = history.toplevel(vault.root)
    if top is None or top == vault.root.resolve():
        return ""
    return vault.root.resolve().relative_to(top).as_posix() + "/"


def is_managed(vault: Vault, rel: str) -> bool:
    return rel.startswith(".cmem/") or rel == vault.checklist_rel or vault.layer_of(rel) is not None


def managed_changes(vault: Vault, write_index: bool = True) -> list[history.StatusEntry]:
    """Uncommitted changes (vault-relative) that touch a path cmem manages; a rename counts when
    either of its paths is managed, and keeps both. `write_index`: as status_entries takes it."""
    prefix = _repo_prefix(vault)

    def inside(path: str | None) -> str | None:
        if path is None:
            return None
        if prefix:
            return path[len(prefix) :] if path.startswith(prefix) else None
        return path

    found = []
    for entry in history.status_entries(vault.root, ["."], write_index):
        path, source = inside(entry.path), inside(entry.source)
        if path is None and source is None:
            continue
        # git.track_all: the user chose to keep the whole vault in git, so every change is theirs to snapshot
        if (
            vault.config.track_all
            or (path is not None and is_managed(vault, path))
            or (source is not None and is_managed(vault, source))
        ):
            found.append(history.StatusEntry(entry.code, path or entry.path, source))
    return found


def refuse_conflicts(vault: Vault, entries: list[history.StatusEntry]) -> None:
    for entry in entries:
        if entry.unmerged:
            raise GitError(
                f"{entry.path} has an unresolved conflict (git status shows it as unmerged); resolve it and "
                f"`git add` it, then run the command again."
            )
    for entry in entries:
        try:
            data = read_regular(vault.root / entry.path)
        except OSError:
            continue  # removed, a folder, or unreadable (the snapshot leaves it out): nothing to scan
        if all(marker.search(data) for marker in _MARKERS):
            raise GitError(
                f"{entry.path} still holds conflict markers (<<<<<<< … >>>>>>>), from a merge or `git stash pop`; "
                "resolve them, then run the command again. Nothing was committed."
            )


def snapshot_summary(entries: list[history.StatusEntry]) -> str:
    """What the snapshot holds, in words: files git has never seen (an adopted vault's notes, or
    notes written since) are not "edited by hand", and a user reading `git log` should not think so."""
    first = sum(entry.code == "??" for entry in entries)
    edited = len(entries) - first
    parts = []
    if first:
        parts.append(f"first commit of {first} adopted note{'s' if first != 1 else ''}")
    if edited:
        parts.append(f"{edited} file{'s' if edited != 1 else ''} edited by hand")
    return ", ".join(parts)


def snapshot(vault: Vault, before: str, unread: dict[str, str] | None = None) -> str | None:
    """Commit the user's pending edits to managed paths on their own, so the step's commit holds
    only the step. Returns the snapshot commit, or None when there was nothing to commit. A file
    that cannot be read is left out, and `unread` gets its path and a warning naming it."""
    history.wait_for_index_lock(vault.root)  # bounded: then an error naming the lock
    entries = managed_changes(vault)
    if not entries:
        return None
    refuse_conflicts(vault, entries)
    state_rel = vault.rel(vault.state_file)
    if any(state_rel in (entry.path, entry.source) for entry in entries):
        from cmem.steps.state_file import refuse_broken

        refuse_broken(vault, before)  # a missing, empty or broken state.json is never committed
    paths = sorted({p for e in entries for p in (e.path, e.source) if p})
    unreadable = {p: why for p in paths if (why := unreadable_reason(vault.root / p))}
    if unreadable:
        for path, why in unreadable.items():
            if unread is not None:
                unread[path] = (
                    f"{path} {why}; the {before} leaves it out of the snapshot of your edits, as it is on disk"
                )
        paths = [p for p in paths if p not in unreadable]
        entries = [e for e in entries if e.path in paths or e.source in paths]
        if not paths:
            return None
    lines = [f"cmem: snapshot before {before} ({snapshot_summary(entries)})", ""]
    lines += [f"Snapshot: {one_line(p)}" for p in paths]
    try:
        return history.commit_files(vault.root, {}, "\n".join(lines), from_disk=paths)
    except GitError as exc:
        raise GitError(
            f"{str(exc).rstrip('.')}; your edits could not be committed first, so the {before} "
            "did nothing — nothing was written and nothing was committed."
        ) from None
