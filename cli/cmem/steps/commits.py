"""Git, as cmem uses it: the vault's own repository, cmem's commits, and the way back.

cmem calls the git CLI directly for everything on a hot path (gitpython is slow to import and
its `index.add` slower than the CLI — docs/benchmarks.md); gitpython is used lazily where a walk
over history reads better. cmem's own git commands run with hooks and fsmonitor off, so a user's
pre-commit hook or a watchman daemon cannot block, rewrite or slow a pass.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from cmem import faults
from cmem.errors import GitError
from cmem.regular_files import NotRegularFile, read_regular, special_kind

# Options for every git command cmem runs on the user's vault.
SAFE_GIT_OPTIONS = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "commit.gpgSign=false",  # an unattended pass must not wait for a passphrase
    "-c",
    "core.quotePath=false",
    "-c",
    "log.showSignature=false",  # would run gpg.program, which a repository's config can name
    "-c",
    # a user's `core.safecrlf=true` (with autocrlf or eol settings) refused files cmem wrote
    # with LF; the conversion itself still applies, so blobs are stored as git would store them
    "core.safecrlf=false",
)
PASS_TRAILER = "Cmem-Pass"
# How long a pass waits for another git command's index.lock before it gives up, naming it.
INDEX_LOCK_WAIT_SECONDS = 5.0


def _env() -> dict:
    env = dict(os.environ)
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        env.pop(name, None)  # a hook environment must not redirect cmem into another repository
    env.setdefault("GIT_TERMINAL_PROMPT", "0")
    return env


def git_argv(root: Path, *args: str) -> list[str]:
    """The command line cmem runs git with in `root`: its safe options first (no hooks, no
    signing, no filters or textconv the repository's config could name)."""
    return [
        "git",
        *SAFE_GIT_OPTIONS,
        *_neutral_filters(root),
        "-C",
        str(root),
        *_without_textconv(args),
    ]


NO_GIT = "git is not installed or not on PATH; cmem keeps the vault's history in git."


def run_git(
    root: Path,
    *args: str,
    check: bool = True,
    input: str | None = None,
    env: dict | None = None,
) -> subprocess.CompletedProcess:
    """git in `root`; `env` replaces the usual environment (`_env`), as sync does to keep ssh
    from prompting."""
    try:
        result = subprocess.run(
            git_argv(root, *args),
            capture_output=True,
            text=True,
            input=input,
            env=env if env is not None else _env(),
            # a file name that is not UTF-8 round-trips as os.fsdecode would give it
            encoding="utf-8",
            errors="surrogateescape",
        )
    except FileNotFoundError:
        raise GitError(NO_GIT) from None
    if check and result.returncode != 0:
        message = (result.stderr or result.stdout).strip().splitlines()
        detail = message[-1] if message else f"exit {result.returncode}"
        raise GitError(f"git {args[0]} failed in {root}: {detail}")
    return result


# A `.git/config` that travels with the vault can make git run commands for cmem (filter and
# diff drivers, as hooks can): cmem's git commands turn its filters into no-ops and ask for
# diffs without textconv or external diff.
_filter_cache: dict[str, tuple[tuple, tuple[str, ...]]] = {}
_DIFF_COMMANDS = {
    "show": ("--no-textconv",),
    "log": ("--no-textconv",),
    "diff": ("--no-textconv", "--no-ext-diff"),
}


def _neutral_filters(root: Path) -> tuple[str, ...]:
    config = _repository_config(Path(root))
    if config is None:
        return ()
    try:
        stat = config.stat()
    except OSError:
        return ()
    key = (str(config), stat.st_mtime_ns, stat.st_size)
    cached = _filter_cache.get(str(root))
    if cached and cached[0] == key:
        return cached[1]
    try:
        text = config.read_bytes().lower()
    except OSError:
        text = b""
    listed = ""
    if b"filter" in text or b"include" in text:  # most repositories: no git call at all
        listed = subprocess.run(
            [
                "git",
                "config",
                "--file",
                str(config),
                "--includes",
                "--name-only",
                "--get-regexp",
                r"^filter\..+\.(clean|smudge|process)$",
            ],
            capture_output=True,
            text=True,
            env=_env(),
        ).stdout
    names = sorted({line.strip().rsplit(".", 1)[0] for line in listed.splitlines() if line.strip()})
    overrides = tuple(
        option
        for name in names
        for key_name in ("clean", "smudge", "process")
        for option in ("-c", f"{name}.{key_name}=")
    ) + tuple(option for name in names for option in ("-c", f"{name}.required=false"))
    _filter_cache[str(root)] = (key, overrides)
    return overrides


def _repository_config(path: Path) -> Path | None:
    """The config file of the repository holding `path`, found without running git."""
    for folder in (path, *path.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return dot_git / "config"
        if dot_git.is_file():  # a worktree or submodule: `gitdir: …`
            try:
                target = Path(dot_git.read_text("utf-8").split(":", 1)[1].strip())
            except (OSError, IndexError):
                return None
            target = target if target.is_absolute() else folder / target
            common = target / "commondir"
            if common.is_file():
                target = target / common.read_text("utf-8").strip()
            return target / "config"
    return None


def _without_textconv(args: tuple[str, ...]) -> tuple[str, ...]:
    index = 0
    while index < len(args) and args[index].startswith("-"):
        index += 2 if args[index] == "-c" else 1
    if index < len(args) and args[index] in _DIFF_COMMANDS:
        return (*args[: index + 1], *_DIFF_COMMANDS[args[index]], *args[index + 1 :])
    return args


# The repository's place and git's identity, asked once while a step holds the lock (a step
# moves neither; outside one every call asks, as `init` needs); per thread, since `watch` and
# `mcp` run steps in threads.
_steps = threading.local()


def _memory() -> dict | None:
    """This thread's step memory, or None outside a step."""
    return getattr(_steps, "remembered", None)


@contextmanager
def one_repository():
    """Within it, `toplevel`, `git_dir` and `has_identity` ask git once per folder."""
    if _memory() is not None:
        yield  # an outer step remembers already
        return
    _steps.remembered = {}
    try:
        yield
    finally:
        _steps.remembered = None


def _once(key: tuple, compute):
    remembered = _memory()
    if remembered is None:
        return compute()
    if key not in remembered:
        remembered[key] = compute()
    return remembered[key]


def _locate(path: Path) -> None:
    """Within a step, the first of `toplevel` and `git_dir` asks git both in one process (a pass
    asked them in two) and remembers both answers; where the one process cannot answer both (a
    bare repository has no top folder), each question is asked alone as outside a step."""
    remembered = _memory()
    if remembered is None or ("located", str(path)) in remembered:
        return
    remembered[("located", str(path))] = True
    result = run_git(path, "rev-parse", "--show-toplevel", "--absolute-git-dir", check=False)
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0:
        # --absolute-git-dir fails only where --show-toplevel does: no top folder to remember
        remembered[("toplevel", str(path))] = None
        return
    if len(lines) != 2:
        return
    top, folder = Path(lines[0].strip()).resolve(), Path(lines[1].strip())
    remembered[("toplevel", str(path))] = top
    # any folder of one work tree has the same git folder: the top folder's is asked next
    remembered.setdefault(("git_dir", str(path)), folder)
    remembered.setdefault(("git_dir", str(top)), folder)


def toplevel(path: Path) -> Path | None:
    """The root of the repository holding `path`, or None outside any repository."""
    _locate(path)
    return _once(("toplevel", str(path)), lambda: _toplevel(path))


def _toplevel(path: Path) -> Path | None:
    result = run_git(path, "rev-parse", "--show-toplevel", check=False)
    if result.returncode != 0:
        return None
    return Path(result.stdout.strip()).resolve()


def has_identity(root: Path) -> bool:
    return _once(("identity", str(root)), lambda: _has_identity(root))


def _has_identity(root: Path) -> bool:
    # the environment first: where it names the author, git's config is not asked (2 processes)
    name = os.environ.get("GIT_AUTHOR_NAME") or _config(root, "user.name")
    return bool(name and (os.environ.get("GIT_AUTHOR_EMAIL") or _config(root, "user.email")))


def _config(root: Path, key: str) -> str:
    return run_git(root, "config", key, check=False).stdout.strip()


def _identity_options(root: Path) -> tuple[str, ...]:
    # A fresh machine may have no git identity; cmem's commits still need one.
    if has_identity(root):
        return ()
    return ("-c", "user.name=cmem", "-c", "user.email=cmem@localhost")


def init_repo(root: Path) -> None:
    run_git(root, "init", "-q")
    # Prefer `main` without depending on init.defaultBranch (git < 2.28 lacks -b).
    run_git(root, "symbolic-ref", "HEAD", "refs/heads/main", check=False)


def operation_in_progress(root: Path) -> str | None:
    """A merge, rebase, cherry-pick or revert the user has not finished, if any."""
    folder = git_dir(root)
    for marker, name in (
        ("MERGE_HEAD", "a merge"),
        ("rebase-merge", "a rebase"),
        ("rebase-apply", "a rebase or am"),
        ("CHERRY_PICK_HEAD", "a cherry-pick"),
        ("REVERT_HEAD", "a revert"),
        ("BISECT_LOG", "a bisect"),
    ):
        if (folder / marker).exists():
            return name
    return None


def git_dir(root: Path) -> Path:
    _locate(root)
    return _once(
        ("git_dir", str(root)),
        lambda: Path(run_git(root, "rev-parse", "--absolute-git-dir").stdout.strip()),
    )


def head(root: Path) -> str | None:
    result = run_git(root, "rev-parse", "--verify", "-q", "HEAD", check=False)
    return result.stdout.strip() or None


def _head_and_tree(root: Path) -> tuple[str | None, str | None]:
    """The commit HEAD is at and its tree, in one git process (a commit asked for them in two):
    (None, None) on an unborn branch, where git names no commit."""
    result = run_git(root, "rev-parse", "HEAD", "HEAD^{tree}", check=False)
    found = result.stdout.split()
    if result.returncode != 0 or len(found) != 2:
        return None, None
    return found[0], found[1]


def head_is_a_branch(root: Path) -> bool:
    """HEAD names a branch (not detached): read from its file in the git folder, or, where that
    file cannot tell (a reftable repository keeps a placeholder there), from git."""
    try:
        text = (git_dir(root) / "HEAD").read_text("utf-8", errors="replace").strip()
    except OSError:
        text = ""
    if text.startswith("ref: refs/") and text != "ref: refs/heads/.invalid":
        return True
    if len(text) in (40, 64) and all(ch in "0123456789abcdef" for ch in text):
        return False  # a detached HEAD holds the commit itself (SHA-1 or SHA-256)
    return run_git(root, "symbolic-ref", "-q", "HEAD", check=False).returncode == 0


def wait_for_index_lock(root: Path, seconds: float | None = None) -> None:
    """git's index.lock keeps out other git writers (obsidian-git, an editor) and is left behind
    when git is killed. Wait a little for it to go, then stop with its name: never fail half-way
    through a commit, never wait forever, never delete a lock a live process may hold."""
    seconds = INDEX_LOCK_WAIT_SECONDS if seconds is None else seconds
    lock = git_dir(root) / "index.lock"
    deadline = time.monotonic() + seconds
    while lock.exists():
        if time.monotonic() >= deadline:
            raise GitError(
                f"{lock} exists: another git command is running, or one crashed (then delete the file, "
                f"or run `cmem doctor --fix`); waited {seconds:g} s."
            )
        time.sleep(0.05)


@dataclass(frozen=True)
class StatusEntry:
    """One line of `git status`: XY codes, the path, and for a rename or copy its source."""

    code: str
    path: str
    source: str | None = None

    @property
    def unmerged(self) -> bool:
        return "U" in self.code or self.code in ("AA", "DD")


def status_entries(root: Path, paths: list[str], write_index: bool = True) -> list[StatusEntry]:
    """Paths (of those given, as git prints them: from the repository's root) with changes git
    would commit — modified, new, deleted, renamed (with both names), or unmerged.
    `write_index=False`: git only reads its index (--no-optional-locks), never refreshes the file
    times cached in it, as editors' background checks run it (cmem sync: see _look_for_edits)."""
    if not paths:
        return []
    locks = () if write_index else ("--no-optional-locks",)
    result = run_git(
        root, *locks, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", *paths
    )
    entries = []
    fields = result.stdout.split("\0")
    index = 0
    while index < len(fields):
        field = fields[index]
        index += 1
        if len(field) < 4:
            continue
        code, path = field[:2], field[3:]
        source = None
        if code[0] in "RC" or code[1] in "RC":
            source = fields[index] if index < len(fields) else None
            index += 1  # the next field is the rename source
        entries.append(StatusEntry(code, path, source))
    return entries


def commit_files(
    root: Path,
    files: dict[str, bytes | None],
    message: str,
    *,
    from_disk: list[str] | tuple[str, ...] = (),
    merge_parents: list[str] | tuple[str, ...] = (),
    modes: dict[str, str] | None = None,
) -> str | None:
    """cmem's one way to commit. Commits exactly these vault-relative paths and nothing else:

    - `files`: the bytes a step validated and wrote (None: the path is removed) — not whatever
      is on disk by the time git would read it, so an editor's autosave after the apply stays
      the user's uncommitted edit;
    - `from_disk`: paths committed as they are in the working tree (the snapshot of the user's
      own edits; a missing path is a removal, a symbolic link stays a link);
    - `modes`: git modes for paths of `files` that are not plain files ("100755": a sync keeps an
      executable script executable); any other path of `files` is committed as 100644.

    Blobs are hashed as git would store the file at that path (`core.autocrlf` and `eol`
    attributes apply; filter drivers are neutralised), the tree is made from the parent's tree
    without an index (`steps/git_trees.py`), so the user's own staged changes are untouched, and
    the branch moves by compare-and-swap, so a commit made meanwhile by someone else is never
    lost. Returns the commit, or None when HEAD already holds exactly this."""
    from cmem.steps.git_trees import tree_with

    top, prefix, argv = _object_git(root)
    parent, parent_tree = _parent_of_next_commit(top)
    remembered = _memory()
    env = _env()

    git = _object_runner(top, argv, env)
    entries = _tree_entries(top, prefix, files, from_disk, modes, git)
    _remove_left_indexes(git_dir(top))  # what an earlier version's killed commit left
    # a tree id's length names the repository's hash (SHA-1 or SHA-256); an unborn branch has
    # none yet, and git names the empty tree in it
    sample = parent_tree or git("hash-object", "-t", "tree", "--stdin", data=b"")
    tree = tree_with(argv, env, parent_tree, entries, "sha256" if len(sample) == 64 else "sha1")
    faults.point("git-add")
    if parent and not merge_parents and tree == parent_tree:
        # HEAD holds it already (a commit whose process died before the index caught up):
        # the index is still brought up to date, or `git status` would show it forever
        _index_holds(top, entries, argv, len(tree))
        return None
    parents = [p for sha in ([parent] if parent else []) + list(merge_parents) for p in ("-p", sha)]
    commit = git(
        *_identity_options(top),
        "commit-tree",
        tree,
        *parents,
        "-F",
        "-",
        data=message.encode("utf-8"),
    )
    faults.point("git-commit")
    # no parent: the branch must not exist yet (the null id, as long as the repository's ids)
    git("update-ref", "-m", message.split("\n", 1)[0], "HEAD", commit, parent or "0" * len(tree))
    if remembered is not None:
        remembered[("made", str(top))] = (commit, tree)
    _index_holds(top, entries, argv, len(tree))
    return commit


def _object_runner(top: Path, argv: list[str], env: dict) -> Callable[..., str]:
    """`git(*args, data=...)` for the object commands of one commit: its output, or a GitError
    naming the cause when git cannot store what it was given."""

    def git(*args: str, data: bytes | None = None) -> str:
        result = subprocess.run([*argv, *args], input=data, capture_output=True, env=env)
        if result.returncode != 0:
            text = (result.stderr or result.stdout).decode("utf-8", "replace").strip()
            detail = text.splitlines()
            raise GitError(
                _store_failure(top, args[0], text)
                or f"git {args[0]} failed in {top}: {detail[-1] if detail else result.returncode}"
            )
        return result.stdout.decode("utf-8").strip()

    return git


def _tree_entries(
    top: Path,
    prefix: str,
    files: dict[str, bytes | None],
    from_disk: list[str] | tuple[str, ...],
    modes: dict[str, str] | None,
    git: Callable[..., str],
) -> list[tuple[str, str | None, str]]:
    """(mode, blob or None: removed, repository path) of each path the commit changes: the
    given bytes hashed as git would store them at that path, then the paths taken from disk."""
    entries: list[tuple[str, str | None, str]] = []
    for rel, data in sorted(files.items()):
        path = prefix + rel
        blob = (
            None
            if data is None
            else git("hash-object", "-w", "--stdin", f"--path={path}", data=data)
        )
        entries.append(((modes or {}).get(rel, "100644"), blob, path))
    disk = _disk_entries(top, [prefix + rel for rel in sorted(set(from_disk) - set(files))], git)
    return entries + [entry for entry in disk if entry[0] != "dir"]


# What git says when it cannot write its objects, refs or index, and the cause in cmem's words:
# its own last line names the file it was storing ("Unable to add <an innocent note> to
# database"), which is not what is wrong.
_STORE_CAUSES = (
    ("read-only file system", "read-only file system"),
    ("no space left on device", "no space left on device"),
    ("disk quota exceeded", "disk quota exceeded"),
    ("insufficient permission", "permission denied"),
    ("permission denied", "permission denied"),
)


def _object_git(root: Path) -> tuple[Path, str, list[str]]:
    """The repository's top folder, the vault's path in it ("" or "sub/"), and the git command
    that hashes and stores objects there as a commit stores them (filter drivers neutralised)."""
    top = toplevel(root) or Path(root).resolve()
    resolved = Path(root).resolve()
    prefix = "" if top == resolved else resolved.relative_to(top).as_posix() + "/"
    return top, prefix, ["git", *SAFE_GIT_OPTIONS, *_neutral_filters(top), "-C", str(top)]


def blob_ids(root: Path, files: dict[str, bytes | None]) -> dict[str, str | None]:
    """The blob each of `files` will be committed as (None: removed), hashed as `commit_files`
    hashes it but not stored: state.json records what a step wrote, so `undo` takes back only
    that after an amend folded other edits into the step's commit. {} when git cannot say."""
    _top, prefix, argv = _object_git(root)
    ids: dict[str, str | None] = {}
    for rel, data in sorted(files.items()):
        if data is None:
            ids[rel] = None
            continue
        result = subprocess.run(
            [*argv, "hash-object", "--stdin", f"--path={prefix}{rel}"],
            input=data,
            capture_output=True,
            env=_env(),
        )
        if result.returncode != 0:
            return {}
        ids[rel] = result.stdout.decode("ascii", "replace").strip()
    return ids


def _store_failure(top: Path, command: str, text: str) -> str | None:
    """The sentence for a git command that failed because git could not write, or None."""
    lowered = text.lower()
    cause = next((words for found, words in _STORE_CAUSES if found in lowered), None)
    if cause is None:
        return None
    if command in ("hash-object", "mktree", "commit-tree"):  # they write objects
        objects = os.environ.get("GIT_OBJECT_DIRECTORY") or str(git_dir(top) / "objects")
        return f"git cannot store its objects in {objects} ({cause})"
    return f"git cannot write in the vault's git folder {git_dir(top)} ({cause})"


# Temporary indexes an older cmem killed mid-commit left (`cmem-index-<pid>-…`) are removed once
# their process is gone and they are this old: the age spares an older cmem in another pid
# namespace (a container sharing .git) the index it keeps between a step's two commits.
INDEX_PREFIX = "cmem-index-"
LEFT_INDEX_SECONDS = 3600


def _remove_left_indexes(folder: Path) -> None:
    """Remove the temporary indexes killed processes of an earlier cmem left in the git folder
    (a megabyte each at 10k notes; git never reads them). A running process's index is never
    touched (`os.kill(pid, 0)` answers whether it runs; not on Windows, where signal 0 is
    Ctrl-C: nothing is removed there)."""
    if os.name != "posix":
        return
    try:
        names = [name for name in os.listdir(folder) if name.startswith(INDEX_PREFIX)]
    except OSError:
        return
    now = time.time()
    for name in names:
        pid = name[len(INDEX_PREFIX) :].split("-", 1)[0]
        path = folder / name
        if not (pid.isascii() and pid.isdigit()) or _running(int(pid)):
            continue
        try:
            if now - path.stat().st_mtime > LEFT_INDEX_SECONDS:
                path.unlink()
        except OSError:
            pass  # gone meanwhile, or not ours to remove: it only takes space


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):
        return True  # another user's process (EPERM) runs; anything else: assume it does
    return True


def _index_holds(
    top: Path, entries: list[tuple[str, str | None, str]], argv: list[str], id_length: int
) -> None:
    """The real index takes the entries just committed (what `sync_index` does, knowing them):
    one `update-index --index-info`, as on the temporary index, costs a few ms, where `reset
    HEAD -- PATHS` refreshes the stat of every tracked file, twice a pass. The entries carry no stat data, so the next `git status` compares these few files by
    content once. A locked index is waited for as `sync_index` waits; a failure leaves it behind,
    as there (the next step's recovery or snapshot brings it up to date)."""
    wait_for_index_lock(top)
    subprocess.run(
        [*argv, "update-index", "-z", "--index-info"],
        input=_index_info(entries, id_length),
        capture_output=True,
        env=_env(),
    )


def _parent_of_next_commit(top: Path) -> tuple[str | None, str | None]:
    """HEAD and its tree. Within a step whose last commit HEAD still is (read from git's files:
    nobody committed since), that commit's tree is known: a pass's snapshot commit made it, and
    its second commit asked git again (a commit's tree never changes). Otherwise git is asked."""
    remembered = _memory()
    made = remembered.get(("made", str(top))) if remembered is not None else None
    if made is not None:
        from cmem.steps.git_head import head_sha

        if head_sha(str(top)) == made[0]:
            return made
    return _head_and_tree(top)


def _disk_entries(top: Path, paths: list[str], git) -> list[tuple[str, str | None, str]]:
    """Each path as it is in the working tree: (mode, blob, path), ("0", None, path) for one that
    is gone, ("dir", None, path) for a folder. The plain files' blobs come from one `hash-object
    --stdin-paths` (a snapshot of an adopted vault holds thousands: one git each was most of
    it); a link, or a name that line would not carry, is hashed alone."""
    import stat as stat_module

    found: list[tuple[str, str | None, str]] = []
    batch: list[int] = []  # indexes in `found` of the plain files hashed together
    for path in paths:
        full = top / path
        try:
            st = os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):
            found.append(("0", None, path))
            continue
        if stat_module.S_ISDIR(st.st_mode):
            found.append(("dir", None, path))  # a nested repository or a folder: not a file
            continue
        kind = special_kind(st.st_mode)
        if kind:  # a FIFO is refused, never waited on (git would open it and block)
            raise NotRegularFile(full, kind)
        mode = "100755" if st.st_mode & 0o111 else "100644"
        if stat_module.S_ISLNK(st.st_mode):
            link = os.fsencode(os.readlink(full))
            found.append(("120000", git("hash-object", "-w", "--stdin", data=link), path))
        elif "\n" in path or path.startswith('"') or path.endswith("\r"):
            data = read_regular(full)  # a line of --stdin-paths would not hold the name
            found.append(
                (mode, git("hash-object", "-w", "--stdin", f"--path={path}", data=data), path)
            )
        else:
            batch.append(len(found))
            found.append((mode, None, path))
    if batch:
        listed = b"".join(os.fsencode(found[i][2]) + b"\n" for i in batch)
        blobs = git("hash-object", "-w", "--stdin-paths", data=listed).split("\n")
        if len(blobs) != len(batch):
            raise GitError(f"git hash-object gave {len(blobs)} ids for {len(batch)} files in {top}")
        for i, blob in zip(batch, blobs):
            found[i] = (found[i][0], blob, found[i][2])
    return found


def _index_info(entries: list[tuple[str, str | None, str]], id_length: int = 40) -> bytes:
    """`git update-index -z --index-info` input: mode 0 with the null id removes a path (as long
    as the repository's ids: 64 hex digits in a SHA-256 one, where 40 fail the whole update).
    Paths are bytes as the file system has them (a name that is not UTF-8 round-trips)."""
    out = bytearray()
    for mode, blob, path in entries:
        if blob is None:
            out += b"0 " + b"0" * id_length + b"\t"
        else:
            out += f"{mode} {blob}\t".encode()
        out += os.fsencode(path) + b"\0"
    return bytes(out)


def is_ancestor(root: Path, ancestor: str, descendant: str) -> bool:
    return (
        run_git(root, "merge-base", "--is-ancestor", ancestor, descendant, check=False).returncode
        == 0
    )


def move_branch(root: Path, target: str, expected: str, paths: list[str]) -> None:
    """Fast-forward: the branch moves from `expected` to `target` by compare-and-swap (a commit
    made meanwhile is never lost), then the index catches up on the paths the step wrote."""
    run_git(root, "update-ref", "-m", "cmem sync: fast-forward", "HEAD", target, expected)
    sync_index(root, paths)


def sync_index(root: Path, paths: list[str]) -> None:
    """Make the real index hold HEAD's version of these paths (after a commit built elsewhere)."""
    if not paths:
        return
    wait_for_index_lock(root)
    run_git(root, "--literal-pathspecs", "reset", "-q", "HEAD", "--", *paths, check=False)


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    time: str
    subject: str


class GitBeside:
    """git started now, its answer read when asked (`result`): a command whose answer is needed
    later runs while this process asks git something else."""

    def __init__(self, root: Path, *args: str):
        try:
            self.process = subprocess.Popen(
                git_argv(root, *args),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=_env(),
                encoding="utf-8",
                errors="surrogateescape",
            )
        except FileNotFoundError:
            raise GitError(NO_GIT) from None
        self._result: subprocess.CompletedProcess | None = None

    def result(self) -> subprocess.CompletedProcess:
        """Its exit code and output, as `run_git(..., check=False)` gives them."""
        if self._result is None:
            out, err = self.process.communicate()
            self._result = subprocess.CompletedProcess(
                self.process.args, self.process.returncode, out, err
            )
        return self._result


def find_pass_commit(root: Path, pass_id: str) -> CommitInfo | None:
    # the whole trailer line, so an id quoted inside another commit's field never matches
    # (a basic regular expression: its special characters are escaped)
    literal = "".join("\\" + ch if ch in ".[]\\*^$" else ch for ch in pass_id)
    result = run_git(
        root,
        "log",
        "-1",
        f"--grep=^{PASS_TRAILER}: {literal}$",
        "--format=%H%x00%cI%x00%s",
        check=False,
    )
    out = result.stdout.strip()
    if result.returncode != 0 or not out:
        return None
    sha, time, subject = out.split("\0", 2)
    return CommitInfo(sha, time, subject)
