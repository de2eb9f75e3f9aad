"""The entry point: answer read commands from a stored result before importing anything heavy.

`cmem status` and `cmem scan` run at every shell exit and session start, and most of the time the
vault has not changed since the last call. Importing typer, YAML and the scanner costs several
times a bare `python -c pass` (docs/benchmarks.md), so this module — stdlib only, imported first —
looks for a stored result whose key still matches and prints it. Only on a miss does it hand over
to the real CLI (`cmem.cli.main`), whose command stores its result for the next call.

The key is everything the result depends on, compared in full (not hashed, so there are no
collisions to reason about):

- the vault's listing: every folder's mtime (an added, removed or renamed file or folder changes
  it) and every note's (mtime, size, inode, ctime) — except under the archive folder, whose notes
  are checked by folder mtimes alone (an archived note edited in place keeps its old token size
  until `--rescan`: the figure says so, see `STALE`);
- cmem's own files (`.cmem/`), the archive checklist, the user config, the unattended-failure
  record and the git files naming the commit (a pass commit, a checkout of an older state);
- the cmem version, this format, the command's parameters, `CMEM_*` variables and today's date.

Racy-git rule: a result is stored only if every file and folder in its key is older than the
listing by more than the file system's timestamp granularity (`RACY_NS`); otherwise an edit in the
same tick as the listing could leave the key unchanged, so the next call computes afresh. A symbolic
link anywhere in the walk makes a vault uncacheable (its target's changes are outside the key).
Anything time-dependent (ages, whether a pass is due) is stored as its inputs and recomputed at
print time. A running or interrupted step always falls through to the real command.

Read commands are a registry (`READ_COMMANDS`): a name, the options the fast path understands, and
how to print a stored payload. Any other argument, any doubt, any error: the real CLI runs.
"""

from __future__ import annotations

import marshal
import os
import sys

from cmem import __version__

FORMAT = 2  # of the stored entries; bump when the key or the payload changes shape
RACY_NS = 2_000_000_000  # timestamp granularity to allow for: 2 s covers FAT, 1 s ext3/HFS+, ns ext4
SKIPPED = ("node_modules",)  # besides dot-names: folders cmem never reads (config.NEVER_READ_DIRS)
STALE = ["layers.archive.tokens"]  # figures a stored status may show stale (see the module doc)
HELP_FLAGS = ("--help", "-h")

# --- the entry point ----------------------------------------------------------------------------


def main() -> None:
    argv = sys.argv[1:]
    try:
        out = answer(argv)
    except Exception:  # any doubt: the real command decides (and reports errors properly)
        out = None
    if out is None:
        from cmem.cli import main as full_main

        full_main()
        return
    _tolerant_output()
    sys.stdout.write(out)  # outside the try: a closed pipe must not make the real command print again
    sys.stdout.flush()


def answer(argv: list[str]) -> str | None:
    """What to print for `argv` from a stored result; None when there is none to trust."""
    if argv == ["--version"]:
        return f"cmem {__version__}\n"
    if argv and argv[-1] in HELP_FLAGS and len(argv) <= 3 and all(not a.startswith("-") for a in argv[:-1]):
        return _help(argv)
    request = parse_read(argv)
    if request is None or request["rescan"]:
        return None
    root = find_root(request["vault"])
    if root is None:
        return None
    entry = load_entry(entry_path(root, request["command"], _params(request)))
    if entry is None or not still_valid(entry, root):
        return None
    return READ_COMMANDS[request["command"]]["render"](entry["payload"], request)


# --- read commands ------------------------------------------------------------------------------


def parse_read(argv: list[str]) -> dict | None:
    """`[--vault V] [--no-color] COMMAND [--vault V] [--json] [--no-color] [--rescan]`, or None."""
    request = {"command": None, "vault": None, "json": False, "no_color": False, "rescan": False}
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--vault" and args:
            request["vault"] = args.pop(0)
        elif arg.startswith("--vault="):
            request["vault"] = arg[len("--vault="):]
        elif arg == "--no-color":
            request["no_color"] = True
        elif request["command"] is None and arg in READ_COMMANDS:
            request["command"] = arg
        elif request["command"] is not None and arg == "--json":
            request["json"] = True
        elif request["command"] is not None and arg == "--rescan":
            request["rescan"] = True
        else:
            return None
    if request["command"] is None or request["vault"] == "":
        return None
    return request


def _color(request: dict) -> bool:
    """Whether text output would be coloured (cmem.render.color_on for stdout)."""
    if request["no_color"] or os.environ.get("NO_COLOR"):
        return False
    return hasattr(sys.stdout, "isatty") and sys.stdout.isatty()


def _params(request: dict) -> tuple:
    return READ_COMMANDS[request["command"]]["params"](request)


def _render_status(payload: dict, request: dict) -> str:
    data = refresh_status(payload)
    if request["json"]:
        import json

        return json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    from cmem import render

    if request["no_color"]:
        render.set_color(False)
    return render.render_status_data(data) + "\n"


def refresh_status(payload: dict, now=None) -> dict:
    """A stored status with its time-dependent figures recomputed for `now`: the ages of the
    newest and oldest memory files, and whether a pass is due."""
    from datetime import datetime, timedelta

    from cmem.due import due_rule

    now = now or datetime.now().astimezone()
    data, clock = payload["data"], payload["clock"]
    for end in ("newest", "oldest"):
        if data["convergent_age"][end] is not None and clock.get(end + "_ns") is not None:
            data["convergent_age"][end]["age_seconds"] = round(now.timestamp() - clock[end + "_ns"] / 1e9)
    pending = sum(data["pending"]["signals"].values())
    due = due_rule(pending, clock["last_time"], timedelta(seconds=clock["interval_seconds"]), clock["interval_label"], now)
    data["due"] = due.to_json()
    return data


def _render_stored_text(payload: dict, request: dict) -> str:
    return payload["stdout"]


# name -> the parameters its stored output depends on, and how to print a stored payload
READ_COMMANDS = {
    "status": {"params": lambda request: (), "render": _render_status},
    "scan": {"params": lambda request: (request["json"], _color(request)), "render": _render_stored_text},
}


# --- the key ------------------------------------------------------------------------------------


def listing_key(root: str, files: list[str], folder_only: list[str], known: list | None = None) -> tuple[list, bool]:
    """The key of a vault's current state, and whether it may be stored (no racy entry, no link).

    One walk: folders by mtime, notes by (mtime, size, inode, ctime), folders under `folder_only`
    (vault-relative, e.g. the archive) by folder mtimes alone; `files` stat'ed one by one. Such a
    folder's key also lists its subfolders, so when `known` (a stored key) has the folder with the
    same mtime and inode, its subfolders are taken from there instead of listing its notes again:
    a file or folder added, removed or renamed in it would have moved its mtime."""
    import time

    start = time.time_ns()
    key: list = []
    newest = 0
    plain = True
    for path in files:
        try:
            st = os.stat(path)
        except OSError:
            key.append((path,))
            continue
        key.append((path, st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns))
        newest = max(newest, st.st_mtime_ns)
    # a names-only folder's entry: (rel, mtime, inode, ctime, its subfolders)
    stored = {entry[0]: entry for entry in known or () if len(entry) == 5 and isinstance(entry[4], tuple)}
    stack = [""]
    while stack:
        rel = stack.pop()
        folder = os.path.join(root, rel) if rel else root
        st = os.stat(folder)
        newest = max(newest, st.st_mtime_ns)
        names_only = any(rel == base or rel.startswith(base + "/") for base in folder_only)
        if names_only:
            before = stored.get(rel)
            if before is not None and before[1:4] == (st.st_mtime_ns, st.st_ino, st.st_ctime_ns):
                key.append(before)  # the ctime too: an mtime set back by hand does not hide a change
                stack.extend(f"{rel}/{name}" if rel else name for name in before[4])
                continue
        subfolders = []
        key.append(None)  # this folder's entry, once its subfolders are known
        at = len(key) - 1
        with os.scandir(folder) as entries:
            for entry in entries:
                name = entry.name
                if name[0] == "." or name in SKIPPED:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    subfolders.append(name)
                elif entry.is_symlink():
                    plain = False
                elif not names_only and name.endswith(".md"):
                    st_note = entry.stat()
                    key.append((name, st_note.st_mtime_ns, st_note.st_size, st_note.st_ino, st_note.st_ctime_ns))
                    newest = max(newest, st_note.st_mtime_ns)
        key[at] = (rel, st.st_mtime_ns, st.st_ino, st.st_ctime_ns, tuple(subfolders) if names_only else None)
        stack.extend(f"{rel}/{name}" if rel else name for name in subfolders)
    return key, plain and newest < start - RACY_NS


def key_files(vault) -> list[str]:
    """The files besides the notes a read command's result depends on (see the module doc)."""
    from cmem.config import user_config_path
    from cmem.triggers import FAILURES_FILE

    files = []
    try:
        with os.scandir(vault.cmem_dir) as entries:
            files += sorted(entry.path for entry in entries if entry.is_file())
    except OSError:
        pass
    files += [str(vault.cmem_dir), str(vault.checklist_path), str(user_config_path()), str(vault.state_dir / FAILURES_FILE)]
    return files + git_files(str(vault.root))


def git_files(root: str) -> list[str]:
    """The files naming the commit HEAD is at: HEAD, the branch's ref, packed-refs (a commit or a
    checkout rewrites one of them)."""
    folder = root
    while True:
        dot = os.path.join(folder, ".git")
        if os.path.isdir(dot):
            git_dir = common = dot
            break
        if os.path.isfile(dot):
            with open(dot, encoding="utf-8", errors="replace") as handle:
                line = handle.read().strip()
            if not line.startswith("gitdir:"):
                return [dot]
            git_dir = os.path.join(folder, line[len("gitdir:"):].strip())
            common = git_dir
            try:
                with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as handle:
                    common = os.path.join(git_dir, handle.read().strip())
            except OSError:
                pass
            break
        parent = os.path.dirname(folder)
        if parent == folder:
            return []
        folder = parent
    files = [os.path.join(git_dir, "HEAD"), os.path.join(common, "packed-refs")]
    try:
        with open(files[0], encoding="utf-8", errors="replace") as handle:
            head = handle.read().strip()
    except OSError:
        return files
    if head.startswith("ref:"):
        ref = head[4:].strip()
        files += [os.path.join(common, ref), os.path.join(git_dir, ref)]
    return files


def head_sha(root: str) -> str | None:
    """The commit HEAD is at, read from the git files (no git process), or None when it cannot
    be told that way (then ask git)."""
    files = git_files(root)
    if len(files) < 2:
        return None
    try:
        with open(files[0], encoding="utf-8", errors="replace") as handle:
            head = handle.read().strip()
    except OSError:
        return None
    if not head.startswith("ref:"):
        return head if len(head) >= 40 else None
    ref = head[4:].strip()
    for path in files[2:]:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                return handle.read().strip() or None
        except OSError:
            continue
    try:
        with open(files[1], encoding="utf-8", errors="replace") as handle:
            for line in handle:
                sha, _, name = line.strip().partition(" ")
                if name == ref:
                    return sha
    except OSError:
        pass
    return None


def _context_key(command: str, params: tuple) -> tuple:
    import time

    # CMEM_* settings, and the variables that move the user config or the repository
    env = tuple(sorted((k, v) for k, v in os.environ.items()
                       if k.startswith("CMEM_") or k in ("HOME", "XDG_CONFIG_HOME", "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR")))
    return (FORMAT, __version__, command, params, env, time.strftime("%Y-%m-%d"))


def still_valid(entry: dict, root: str) -> bool:
    """Whether a stored entry answers for the vault as it is now."""
    if entry.get("context") != _context_key(entry.get("command"), entry.get("params")):
        return False
    if entry.get("root") != root or _busy(entry["state_dir"]):
        return False
    key, _ = listing_key(root, entry["files"], entry["folder_only"], entry["key"])
    return key == entry["key"]


def _busy(state_dir: str) -> bool:
    """A pass running (its lock held) or a step a killed process left (a journal): the real
    command reports those, and the vault is about to change anyway."""
    try:
        if os.listdir(os.path.join(state_dir, "journal")):
            return True
    except OSError:
        pass
    lock = os.path.join(state_dir, "pass.lock")
    if not os.path.exists(lock):
        return False
    import fcntl

    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


# --- where entries live -------------------------------------------------------------------------


def find_root(explicit: str | None) -> str | None:
    """The vault root as cmem.vault.find_vault_root resolves it, or None (then the real CLI
    explains what is wrong)."""
    chosen = explicit or os.environ.get("CMEM_VAULT")
    if chosen:
        root = os.path.expanduser(chosen)
        return os.path.realpath(root) if os.path.isdir(os.path.join(root, ".cmem")) else None
    folder = os.path.realpath(os.getcwd())
    while True:
        if os.path.isdir(os.path.join(folder, ".cmem")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def results_dir() -> str:
    """Per machine, next to every vault's state folder: `$XDG_STATE_HOME/cmem/results`."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "cmem", "results")


def entry_path(root: str, command: str, params: tuple) -> str:
    try:
        from _sha256 import sha256  # the builtin module: hashlib would load OpenSSL (~4 ms)
    except ImportError:  # pragma: no cover - builds without it
        from hashlib import sha256
    name = repr((root, command, params)).encode("utf-8", "surrogateescape")
    return os.path.join(results_dir(), sha256(name).hexdigest()[:32] + ".marshal")


def load_entry(path: str) -> dict | None:
    try:
        with open(path, "rb") as handle:
            entry = marshal.loads(handle.read())  # load(handle) reads object by object: 20× slower
    except (OSError, EOFError, ValueError, TypeError):
        return None
    return entry if isinstance(entry, dict) else None


def _write(path: str, value) -> None:
    """Atomically (a reader sees the old entry or the new one, never half): cmem.atomic's rule,
    without its imports; a cache that cannot be written is only a slower next call."""
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as handle:
            handle.write(marshal.dumps(value))
        os.replace(tmp, path)
    except (OSError, ValueError):
        try:
            os.unlink(tmp)
        except OSError:
            pass


# --- storing, from the real command -------------------------------------------------------------


def begin(vault, command: str, params: tuple) -> dict | None:
    """Called by a read command before it reads the vault: the key as it is now (None: do not
    store). Taken first, so a note changed while the command runs leaves a key that no longer
    matches. `params` as READ_COMMANDS[command]["params"] makes them from the same arguments."""
    try:
        root = str(vault.root)
        files = key_files(vault)
        folder_only = [vault.config.archive_dir]
        key, storable = listing_key(root, files, folder_only)
    except Exception:
        return None
    if not storable:
        return None
    return {"context": _context_key(command, params), "command": command, "params": params, "root": root,
            "state_dir": str(vault.state_dir), "files": files, "folder_only": folder_only, "key": key}


def store(pending: dict | None, payload: dict) -> None:
    """Called by the read command with what it printed (or what to print from): kept for the next
    call whose key matches. Never fails the command."""
    if pending is None or _busy(pending["state_dir"]):
        return
    try:
        _write(entry_path(pending["root"], pending["command"], pending["params"]), dict(pending, payload=payload))
    except Exception:
        pass


# --- help ---------------------------------------------------------------------------------------


def _help(argv: list[str]) -> str | None:
    """`cmem --help` (and `cmem COMMAND --help`): the text typer printed last time, stored under
    the version, the CLI module's stat and the terminal width; on a miss typer prints it once
    more and it is stored."""
    cli_file = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cli.py")
    st = os.stat(cli_file)
    key = (FORMAT, __version__, tuple(argv), st.st_mtime_ns, st.st_size, _help_width())
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = os.path.join(base, "cmem", "help", entry_path("", "help", key).rsplit(os.sep, 1)[1])
    entry = load_entry(path)
    if entry is not None and entry.get("key") == key:
        return entry["text"]
    import io
    from contextlib import redirect_stdout

    from cmem.cli import main as full_main

    buffer = io.StringIO()
    code = 0
    with redirect_stdout(buffer):
        try:
            full_main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    text = buffer.getvalue()
    sys.stdout.write(text)
    if code == 0 and text:
        _write(path, {"key": key, "text": text})
    sys.exit(code)


def _help_width() -> int:
    """The columns click wraps help to (shutil.get_terminal_size's rule, without shutil)."""
    try:
        return int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return 80


def _tolerant_output() -> None:
    """As cmem.cli._tolerant_output: an undecodable name is printed escaped, never a crash."""
    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (ValueError, OSError):
                pass


if __name__ == "__main__":
    main()
