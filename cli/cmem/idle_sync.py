"""`cmem sync` with nothing to do, decided in `os` and `sys` alone (issue 16: close to a bare
`git fetch` of the same remote).

A sync runs in a loop or a hook on every machine, and most of the time there is nothing to
fetch, merge, commit or push. Starting Python and running the one fetch is the floor; the full
path adds the CLI's imports, a `git config`, a `git status` and a `git rev-parse`. So when the
full sync (`cmem.fast.run_sync` around `cmem.sync.remote.sync_vault`) finds nothing to do, it
stores what it learned as a stored result (`cmem.reading.stored_results`, command "sync"), keyed by everything that could
make the next sync do something other than fetch:

- the vault's listing (every note's stat, the archive's included, every folder's mtime), cmem's
  own files, the user config — so an edit since then (a snapshot to commit) misses;
- HEAD, the branch's ref and packed-refs (a commit, a checkout), git's index (a `git rm
  --cached`), the repository's and the user's git config (another remote, an `sshCommand`), the
  ignore files (a note no longer ignored), and every `GIT_*` variable;
- the lock and the journal folder (a step running or interrupted), today's date, cmem's version.

The light path (`answer`) checks the key's cheap half (cmem, settings, day, no step running,
HEAD on the stored branch), starts the same `git fetch` the full path runs (with
`os.posix_spawnp`, no subprocess module), and walks the vault's listing while git works: the
fetch is most of a sync's time, and the walk needs no answer from it (git writes only its own
files under `.git`, and one it wrote that the key holds makes the key miss, which is safe).
Then it reads the branch's ref and the remote-tracking ref straight from `.git` (loose file or
packed-refs): both at the stored commit means the other machines pushed nothing and this one
has nothing to push — it prints what the full path prints for "up to date" and records the
sync. Any doubt (no stored result, a key that moved, a failed
fetch, a ref it cannot read, refs that differ) hands over to the full path, which does the work;
nothing has been changed by then, so running it after is safe. Once the fetch has run, the
hand-over carries its outcome (`request["fetched"]`: the command line, exit code and git's
stderr), and the full path takes that as its first fetch rather than fetching again: offline is
told after one fetch, in the full path's words.

It sits at the top, beside `cmem.fast`, because it reads the stored results (`cmem.reading`);
what it needs of sync is stdlib only (`cmem.sync.git_env`, `cmem.sync.record`).
"""

from __future__ import annotations

import os

from cmem.reading.stored_results import (
    context_matches,
    entry_path,
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
    vault cannot take the light path (its `.git` is not a folder; `git.track_all`, where any
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
    the fetched ref both at `result.head`, nothing committed): what the light path needs to do
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


# --- the light path -----------------------------------------------------------------------------


def answer(request: dict) -> tuple[str, bool] | None:
    """Sync with nothing to do, if that can be told for sure: (what to print, as --json or not),
    the sync recorded; None hands over to the full path."""
    root = find_root(request["vault"])
    if root is None:
        return None
    entry = load_entry(entry_path(root, COMMAND, ()))
    if entry is None or not context_matches(entry, root):
        return None
    stored = entry["payload"]
    git_dir = os.path.join(root, ".git")
    if stored["git_variables"] != _git_variables():
        return None
    if _read(os.path.join(git_dir, "HEAD")) != "ref: " + stored["branch_ref"]:
        return None  # another branch checked out, or HEAD detached: the full path says what to do
    running = _start(stored["fetch"], remote_env(stored["ssh_configured"]))
    try:
        unchanged = listing_matches(entry, root)  # while git fetches
    finally:
        code, errors = _finish(*running)  # never leave git unwaited for, whatever the walk met
    # from here on, a hand-over carries the fetch's outcome: the full path takes it instead of
    # fetching again (an unreachable ssh remote would otherwise make the user wait twice)
    request["fetched"] = {
        "argv": stored["fetch"],
        "ssh_configured": stored["ssh_configured"],
        "code": code,
        "stderr": errors,
    }
    if code != 0:
        return None  # offline, or anything else: the full path explains, from git's words
    if not unchanged:
        return None  # an edit to commit, a setting changed: the full path, with this fetch
    ours = _ref(git_dir, stored["branch_ref"])
    theirs = _ref(git_dir, stored["tracking"])
    if ours is None or ours != theirs or ours != stored["head"]:
        return None  # the remote moved (merge), or this branch did (push)
    write_record(entry["machine_dir"], "up to date", stored["where"])
    return stored["shown"]["json" if request["json"] else "text"], request["json"]


def _start(argv: list[str], env: dict) -> tuple[int, int]:
    """Start `argv` with nothing on its stdin and its stdout thrown away, its stderr into a pipe:
    (its pid, the pipe's read end), for `_finish`."""
    null = os.devnull
    # both ends close-on-exec (os.pipe's default): git gets the write end only as its stderr
    reader, writer = os.pipe()
    try:
        pid = os.posix_spawnp(
            argv[0],
            argv,
            env,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, null, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_OPEN, 1, null, os.O_WRONLY, 0),
                (os.POSIX_SPAWN_DUP2, writer, 2),
            ],
        )
    except BaseException:
        os.close(reader)
        raise
    finally:
        os.close(writer)  # ours: the read in _finish ends when git's copy closes
    return pid, reader


def _finish(pid: int, reader: int) -> tuple[int, str]:
    """Wait for what `_start` started: (its exit code, what it wrote on stderr, decoded as
    cmem.steps.commits.run_git decodes it). The full path reads those words when the fetch
    fails. Until this reads it, a full pipe holds git; its stderr is a few lines."""
    try:
        chunks = []
        while chunk := os.read(reader, 65536):  # read all before waiting: a full pipe blocks git
            chunks.append(chunk)
    finally:
        os.close(reader)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), b"".join(chunks).decode("utf-8", "surrogateescape")


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return None


def _ref(git_dir: str, ref: str) -> str | None:
    """A ref's commit as git reads it: the loose file, else its line in packed-refs; None when
    it is neither a commit id nor found (a symbolic ref, a ref git writes elsewhere)."""
    value = _read(os.path.join(git_dir, ref))
    if value is None:
        packed = _read(os.path.join(git_dir, "packed-refs")) or ""
        for line in packed.splitlines():
            sha, _, name = line.partition(" ")
            if name == ref:
                value = sha
                break
    if value is None or len(value) not in (40, 64) or value.strip("0123456789abcdef"):
        return None
    return value
