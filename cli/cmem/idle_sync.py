"""`cmem sync` with nothing to do, told after one `git fetch` (close to a bare `git fetch` of the
same remote).

A sync runs in a loop or a hook on every machine, and most of the time there is nothing to
fetch, merge, commit or push. Running the one fetch is the floor; the full sync
(`cmem.sync.remote.sync_vault`) adds a `git config`, a `git status` and a `git rev-parse`. So
when the full sync finds nothing to do, `commands/sync.py` stores what it learned as a stored
result (`cmem.reading.stored_results`, command "sync"), keyed by everything that could make the
next sync do something other than fetch:

- the vault's listing (every note's stat, the archive's included, every folder's mtime), cmem's
  own files, the user config — so an edit since then (a snapshot to commit) misses;
- HEAD, the branch's ref and packed-refs (a commit, a checkout), git's index (a `git rm
  --cached`), the repository's and the user's git config (another remote, an `sshCommand`), the
  ignore files (a note no longer ignored), and every `GIT_*` variable;
- the lock and the journal folder (a step running or interrupted), today's date, cmem's version.

`answer` checks the key's cheap half (cmem, settings, day, no step running, HEAD on the stored
branch), starts the same `git fetch` the full sync runs, and walks the vault's listing while git
works: the fetch is most of a sync's time, and the walk needs no answer from it (git writes only
its own files under `.git`, and one it wrote that the key holds makes the key miss, which is
safe). Then it reads the branch's ref and the remote-tracking ref from `.git`
(`steps/git_head.py`): both at the stored commit means the other machines pushed nothing and this
one has nothing to push — what the full sync prints for "up to date" is printed and the sync
recorded. Any doubt (no stored result, a key that moved, a failed fetch, a ref it cannot read,
refs that differ) leaves it to the full sync; nothing has been changed by then, so running it
after is safe. Once the fetch has run, its outcome (the command line, exit code and git's
stderr) goes to the full sync, which takes it as its first fetch rather than fetching again:
offline is told after one fetch, in the full sync's words.
"""

from __future__ import annotations

import os

from cmem.reading.stored_results import (
    context_matches,
    find_root,
    listing_matches,
    load_entry,
)
from cmem.sync.git_env import remote_env
from cmem.sync.record import write_record

COMMAND = "sync"  # its name among the stored results


def _git_variables() -> tuple:
    return tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("GIT_")))


def _extra_files(root: str) -> tuple[str, ...]:
    """Besides stored_results.key_files: what git reads to tell whether there is anything to
    commit, and where to fetch from."""
    git_dir = os.path.join(root, ".git")
    config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(
        os.path.expanduser("~"), ".config"
    )
    return (
        os.path.join(git_dir, "index"),
        os.path.join(git_dir, "config"),
        os.path.join(git_dir, "info", "exclude"),
        os.path.join(root, ".gitignore"),
        os.path.join(os.path.expanduser("~"), ".gitconfig"),
        os.path.join(config_home, "git", "config"),
        os.path.join(config_home, "git", "ignore"),
    )


# --- the full path: remember a sync that found nothing to do ------------------------------------


def begin(vault) -> dict | None:
    """Before the full path looks for edits to commit: the key as it is now, or None when this
    vault cannot be answered so (its `.git` is not a folder; `git.track_all`, where any
    file, not only the notes the key lists, may be an edit to commit)."""
    from cmem.reading.stored_results import KeyWalk
    from cmem.reading.stored_results import begin as begin_key

    if vault.config.track_all or not os.path.isdir(os.path.join(vault.root, ".git")):
        return None
    pending = begin_key(vault, COMMAND, (), _extra_files(str(vault.root)))
    if pending is None:
        return None
    # every note, the archive's too: status checks the archive by folder times alone (an archived
    # note edited in place is shown as maybe stale), but such an edit is one a sync must commit
    pending["folder_only"] = []
    pending["key"], storable = KeyWalk(pending["root"], pending["files"], []).result()
    return pending if storable else None


def store(pending: dict | None, result, fetch_argv: list[str], shown: dict) -> None:
    """After the full path found nothing to do (`result`, a cmem.sync.remote.SyncResult: HEAD and
    the fetched ref both at `result.head`, nothing committed): what `answer` needs to do
    the same. `shown`: what the full path printed, as text and as --json."""
    from cmem.reading.stored_results import store as store_entry

    if pending is None or result.status != "nothing" or result.head is None:
        return
    target = result.target
    store_entry(
        pending,
        {
            "branch_ref": target.local_ref,
            "tracking": target.tracking,
            "where": f"{target.remote}/{target.branch}",
            "fetch": fetch_argv,
            "ssh_configured": target.ssh_configured,
            "git_variables": _git_variables(),
            "head": result.head,
            "shown": shown,
        },
    )


# --- the answer -----------------------------------------------------------------------------------


def answer(vault, as_json: bool) -> tuple[str | None, dict | None]:
    """Sync with nothing to do, if that can be told for sure, for the vault `vault` names (None:
    the current folder's): (what to print, the sync recorded; None: run the full sync), and the
    fetch's outcome when it ran, for the full sync to take instead of fetching again."""
    import subprocess

    from cmem.steps.git_head import branch_of_head, read_ref

    root = find_root(None if vault is None else str(vault))
    entry = None if root is None else load_entry(root, COMMAND, ())
    if root is None or entry is None or not context_matches(entry, root):
        return None, None
    stored = entry["payload"]
    git_dir = os.path.join(root, ".git")
    if stored["git_variables"] != _git_variables():
        return None, None
    if branch_of_head(git_dir) != stored["branch_ref"]:
        return None, None  # another branch checked out, or HEAD detached: the full sync says so
    fetch = subprocess.Popen(
        stored["fetch"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=remote_env(stored["ssh_configured"]),
    )
    try:
        unchanged = listing_matches(entry, root)  # while git fetches
    finally:
        _, errors = fetch.communicate()  # never leave git unwaited for, whatever the walk met
    fetched = {
        "argv": stored["fetch"],
        "ssh_configured": stored["ssh_configured"],
        "code": fetch.returncode,
        "stderr": errors.decode("utf-8", "surrogateescape"),  # as steps/commits.py: run_git
    }
    if fetch.returncode != 0 or not unchanged:
        return None, fetched  # offline, an edit to commit, a setting changed: the full sync
    ours = read_ref(git_dir, stored["branch_ref"])
    theirs = read_ref(git_dir, stored["tracking"])
    if ours is None or ours != theirs or ours != stored["head"]:
        return None, fetched  # the remote moved (merge), or this branch did (push)
    write_record(entry["machine_dir"], "up to date", stored["where"])
    return stored["shown"]["json" if as_json else "text"], fetched
