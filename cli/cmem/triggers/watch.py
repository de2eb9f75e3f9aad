"""`cmem watch` (docs/design.md §7): watch the divergent layer and run `converge --if-due` once a
burst of changes has settled.

File events lie and loop (research/reliability.md §5): one save arrives as two or three events,
an editor's atomic save as a move, a queue overflow as nothing, and a tool's own writes as more
events. So events are only hints. A hint about a divergent note starts the settle timer; when no
hint has come for `settle` seconds, a content-hash fingerprint of the divergent notes is compared
with the last one, and only a real difference runs the due check (and maybe a pass). cmem's own
writes go to the convergent layer, `.cmem/` and `.git/`, which are not watched, and leave the
fingerprint unchanged anyway. A slow full rescan catches what a dropped event missed, and when
inotify runs out of watches the watcher falls back to polling and says so.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Callable

from cmem.cache_store import settled, stat_key
from cmem.errors import CmemError
from cmem.vault.layers import DIVERGENT, Vault, is_sync_conflict

# A settle just past a burst of editor saves, not the first draft's longer one: a short session
# sees the watcher act before it ends (docs/design.md §16, docs/agents.md).
DEFAULT_SETTLE = 30.0
RESCAN_SECONDS = 300.0
# Editors' temp and swap files: vim (`.x.swp`, `x~`, the `4913` probe), emacs (`.#x`, `#x#`),
# gedit (`.goutputstream-*`), cmem's own atomic writes (`.x.cmem-tmp`), downloads and sync clients.
TEMP_SUFFIXES = (
    "~",
    ".swp",
    ".swx",
    ".swo",
    ".tmp",
    ".cmem-tmp",
    ".part",
    ".crdownload",
    ".icloud",
)
TEMP_NAMES = {"4913"}
# Events that say something was written; "opened" and "closed_no_write" come from readers,
# including this watcher's own hashing, and must never count.
WRITE_EVENTS = {"created", "modified", "moved", "deleted", "closed"}
Report = Callable[[str], None]


def is_temp_name(name: str) -> bool:
    return name.startswith((".", "#")) or name.endswith(TEMP_SUFFIXES) or name in TEMP_NAMES


@dataclass
class WatchSummary:
    hints: int = 0  # events about divergent notes
    bursts: int = 0  # settled bursts whose fingerprint was compared
    unchanged: int = 0  # bursts that changed no divergent note's content
    checks: int = 0  # due checks run (each logs one outcome)
    passes: int = 0  # checks that ran a pass (applied or proposed)
    polling: bool = False
    outcomes: list[str] = field(default_factory=list)


class Fingerprint:
    """sha256 of every divergent note, re-hashing only files whose stat (mtime, size, inode,
    ctime) changed."""

    def __init__(self, vault: Vault):
        self.vault = vault
        self._cache: dict[str, tuple[tuple[int, ...], str]] = {}  # rel -> (stat, digest)

    def take(self) -> dict[str, str]:
        current: dict[str, str] = {}
        cache: dict[str, tuple[tuple[int, ...], str]] = {}
        for note in self.vault.list_layer(DIVERGENT):
            try:
                info = os.stat(note.path)
                stat = stat_key(info)
                known = self._cache.get(note.rel)
                if known and known[0] == stat and settled(info.st_mtime_ns, time.time_ns()):
                    digest = known[1]
                else:  # a file changed within the mtime's granularity keeps its stat: re-hash recent ones
                    digest = hashlib.sha256(note.path.read_bytes()).hexdigest()
            except OSError:
                continue
            cache[note.rel] = (stat, digest)
            current[note.rel] = digest
        self._cache = cache
        return current


def changed_notes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(rel for rel in before.keys() | after.keys() if before.get(rel) != after.get(rel))


class Watcher:
    """The settle loop. `hint(path)` and `folder_hint()` may be called from any thread;
    `run(stop)` blocks."""

    def __init__(
        self,
        vault: Vault,
        settle: float,
        report: Report,
        verbose: Report | None = None,
        trigger: Callable[[], object] | None = None,
        rescan_seconds: float = RESCAN_SECONDS,
    ):
        self.vault = vault
        self.settle = max(0.0, settle)
        self.report = report
        self.verbose = verbose or (lambda message: None)
        self.trigger = trigger or self._converge
        self.rescan_seconds = rescan_seconds
        self.summary = WatchSummary()
        self.fingerprint = Fingerprint(vault)
        self.wake = threading.Event()
        self._lock = threading.Lock()
        self._dirty = False
        self._last_hint = 0.0
        self.in_pass = False
        self.folders_changed = threading.Event()
        # called from `run` when a folder appeared: watch what exists now (`watch_vault`)
        self.rescheduler: Callable[[], bool] = lambda: False

    def relevant(self, path: str) -> str | None:
        """The vault-relative path when `path` is a divergent note, else None."""
        try:
            rel = self.vault.rel(Path(path))
        except ValueError:
            return None
        name = rel.rsplit("/", 1)[-1]
        if rel.startswith("..") or is_temp_name(name) or is_sync_conflict(name):
            return None
        return rel if self.vault.layer_of(rel) == DIVERGENT else None

    def hint(self, path: str) -> None:
        rel = self.relevant(path)
        if rel is None:
            return
        with self._lock:
            self._dirty = True
            self._last_hint = time.monotonic()
            self.summary.hints += 1
        self.verbose(f"change: {rel}")
        self.wake.set()

    def folder_hint(self) -> None:
        """A folder was made or moved in a watched folder: a divergent folder (or a month's
        subfolder of one) may exist now that did not when watching began."""
        self.folders_changed.set()
        self.wake.set()

    def _mark_dirty(self, settled: bool) -> None:
        with self._lock:
            self._dirty = True
            self._last_hint = time.monotonic() - (self.settle if settled else 0.0)
        self.wake.set()

    def run(self, stop: threading.Event) -> WatchSummary:
        baseline = self.fingerprint.take()
        recheck_at: float | None = None
        next_rescan = time.monotonic() + self.rescan_seconds
        while not stop.is_set():
            if self.folders_changed.is_set():
                self.folders_changed.clear()
                if self.rescheduler():  # watched now: a note saved before the watch began
                    self._mark_dirty(settled=False)
            now = time.monotonic()
            with self._lock:
                dirty, last_hint = self._dirty, self._last_hint
            deadlines = (
                [next_rescan]
                + ([last_hint + self.settle] if dirty else [])
                + ([recheck_at] if recheck_at else [])
            )
            timeout = max(0.0, min(deadlines) - now)
            if timeout > 0:
                self.wake.wait(min(timeout, 0.5))  # short naps, so `stop` alone is noticed soon
                self.wake.clear()
                continue  # recompute: a new hint may have moved the settle deadline
            if stop.is_set():
                break
            if dirty and now - last_hint >= self.settle:
                with self._lock:
                    if self._last_hint != last_hint:
                        continue
                    self._dirty = False
                self.summary.bursts += 1
                current = self.fingerprint.take()
                changed = changed_notes(baseline, current)
                if not changed:
                    self.summary.unchanged += 1
                    self.verbose("settled: no divergent note's content changed; nothing to check")
                    continue
                self.verbose(
                    f"settled: {len(changed)} note(s) changed: {', '.join(changed[:5])}{' …' if len(changed) > 5 else ''}"
                )
                baseline = current
                recheck_at = self._check()
            elif recheck_at is not None and now >= recheck_at:
                self.verbose("the interval since the last pass is over: checking again")
                recheck_at = self._check()
            elif now >= next_rescan:
                next_rescan = now + self.rescan_seconds
                if changed_notes(baseline, self.fingerprint.take()):
                    self.verbose("rescan: a change no event reported")
                    self._mark_dirty(settled=True)
        return self.summary

    def _check(self) -> float | None:
        """Run the due check; return when to check again (a pending change waiting for the
        interval to run out), as a monotonic time, or None."""
        self.in_pass = True
        try:
            outcome = self.trigger()
        finally:
            self.in_pass = False
        self.summary.checks += 1
        status = getattr(outcome, "status", "?")
        self.summary.outcomes.append(status)
        if status in ("applied", "proposed"):
            self.summary.passes += 1
        # a check that met a running pass is no outcome of the watcher's own: quiet, as every
        # unattended trigger is on a held lock (the log has its line)
        (self.verbose if status == "busy" else self.report)(describe(outcome))
        if status == "not-due":
            return self._retry_time()
        return None

    def _retry_time(self) -> float | None:
        from cmem.scan.scanner import scan_vault
        from cmem.triggers.if_due import next_due_at
        from cmem.vault.state_json import load_state

        try:
            state = load_state(self.vault.state_file)
            if not scan_vault(self.vault, state=state).signals:
                return None
            at = next_due_at(self.vault, state)
        except CmemError:
            return None
        if at is None:
            return None
        wait = (at - datetime.now().astimezone()).total_seconds()
        if wait <= 0:  # the interval is over, so something else made it not due: no retry
            return None
        return time.monotonic() + wait + 1.0

    def _converge(self):
        from cmem.converge.pipeline import PassOptions
        from cmem.sync.remote import sync_if_auto
        from cmem.triggers.if_due import converge_if_due

        memo: dict = {}  # git.sync: auto — before and after the pass, "offline" said once
        for message in [sync_if_auto(self.vault, memo)]:
            if message:
                self.report(message)
        outcome = converge_if_due(self.vault, PassOptions(), trigger="watch")
        if getattr(outcome, "status", None) == "applied":
            message = sync_if_auto(self.vault, memo)
            if message:
                self.report(message)
        return outcome


def describe(outcome) -> str:
    stamp = datetime.now().strftime("%H:%M:%S")
    status = getattr(outcome, "status", "?")
    result = getattr(outcome, "result", None)
    if status == "applied" and result is not None:
        commit = f", commit {result.commit[:8]}" if result.commit else ""
        return f"{stamp} pass {result.pass_id} applied: {len(result.converged)} note(s) converged{commit}"
    if status == "proposed" and result is not None:
        return f"{stamp} pass {result.pass_id} proposed (review mode): `cmem apply` to apply it"
    reason = getattr(outcome, "reason", "") or ""
    return f"{stamp} {status}" + (f": {reason}" if reason else "")


# --- the observer ----------------------------------------------------------------------------


def _handler(watcher: Watcher):
    from watchdog.events import FileSystemEventHandler

    class DivergentEvents(FileSystemEventHandler):
        def on_any_event(self, event) -> None:
            if event.is_directory:
                if event.event_type in ("created", "moved"):
                    watcher.folder_hint()
                return
            if event.event_type not in WRITE_EVENTS:
                return
            watcher.hint(os.fsdecode(event.src_path))
            dest = getattr(event, "dest_path", "")
            if dest:  # an editor's save-by-rename lands on the note as a move's destination
                watcher.hint(os.fsdecode(dest))

    return DivergentEvents()


def start_observer(
    folders: list[Path],
    handler,
    polling: bool,
    report: Report,
    factory=None,
    poll_interval: float = 1.0,
):
    """A native observer (inotify, FSEvents, kqueue), or a polling one when asked or when the
    native one runs out of watches or instances. Returns (observer, polling?)."""
    from watchdog.observers import Observer
    from watchdog.observers.polling import PollingObserver

    if not polling:
        observer = (factory or Observer)()
        try:
            for folder in folders:
                observer.schedule(handler, str(folder), recursive=False)
            observer.start()
            return observer, False
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EMFILE, errno.ENFILE):
                raise
            report(
                f"warning: file events are unavailable ({exc.strerror or exc}); polling every {poll_interval:g} s instead. "
                "On Linux, raise fs.inotify.max_user_watches / max_user_instances to get events back."
            )
            try:
                observer.stop()
            except (
                Exception
            ):  # a half-started observer may not stop cleanly; it is dropped either way
                pass
    observer = PollingObserver(timeout=poll_interval)
    for folder in folders:
        observer.schedule(handler, str(folder), recursive=False)
    observer.start()
    return observer, True


def watch_folders(vault: Vault) -> tuple[list[Path], list[Path]]:
    """(the divergent folders that exist, the ones the config names that do not yet). A folder
    made later (a clone's empty `sessions/`, a daily note's new month) is watched for from the
    nearest folder above it that exists (`waiting_places`), never warned about."""
    existing: list[Path] = []
    missing: list[Path] = []
    for folder in vault.divergent_folders():
        (existing if folder.is_dir() else missing).append(folder)
    return existing, missing


def waiting_places(vault: Vault, missing: list[Path]) -> list[Path]:
    """The nearest existing folder above each missing one, inside the vault."""
    places = []
    for folder in missing:
        place = folder.parent
        while place != vault.root and not place.is_dir():
            place = place.parent
        if place not in places:
            places.append(place)
    return places


class WatchLock:
    """One watcher per vault (two would race each other's passes and double the work)."""

    def __init__(self, vault: Vault):
        self.path = vault.machine_dir / "watch.lock"
        self.fd: int | None = None

    def __enter__(self):
        from cmem.private import make_dirs, open_private

        make_dirs(self.path.parent)
        self.fd = open_private(self.path, os.O_RDWR)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(self.fd, 64).decode("ascii", "replace").strip() or "?"
            os.close(self.fd)
            raise CmemError(
                f"another `cmem watch` is already watching this vault (pid {holder})."
            ) from None
        os.ftruncate(self.fd, 0)
        os.write(self.fd, str(os.getpid()).encode())
        return self

    def __exit__(self, *exc_info):
        if self.fd is not None:
            os.close(self.fd)


def watch_vault(
    vault: Vault,
    settle: float = DEFAULT_SETTLE,
    report: Report | None = None,
    verbose: Report | None = None,
    polling: bool = False,
    stop: threading.Event | None = None,
    observer_factory=None,
    trigger: Callable[[], object] | None = None,
    rescan_seconds: float = RESCAN_SECONDS,
    handle_signals: bool = False,
) -> WatchSummary:
    """Watch until `stop` is set (or, with `handle_signals`, until SIGINT/SIGTERM: the first one
    lets a running pass finish, a second Ctrl-C interrupts it)."""
    report = report or (lambda message: None)
    stop = stop or threading.Event()
    watcher = Watcher(vault, settle, report, verbose, trigger, rescan_seconds)
    restore = _install_signals(stop, watcher, report) if handle_signals else None
    try:
        with WatchLock(vault):
            folders, missing = watch_folders(vault)
            places = [p for p in waiting_places(vault, missing) if p not in folders]
            poll_interval = min(1.0, max(0.1, settle / 4))
            handler = _handler(watcher)
            observer, watcher.summary.polling = start_observer(
                folders + places, handler, polling, report, observer_factory, poll_interval
            )
            watched = set(folders + places)
            watcher.rescheduler = lambda: _watch_new_folders(vault, observer, handler, watched)
            try:
                names = ", ".join(
                    vault.rel(folder) if folder != vault.root else "the vault root"
                    for folder in folders
                )
                later = ", ".join(vault.rel(folder) + "/" for folder in missing)
                how = "polling" if watcher.summary.polling else "file events"
                report(
                    f"watching {names} ({how}){f', and {later} once made' if later else ''}; "
                    f"a pass is checked {settle:g} s after the last change. Ctrl-C stops."
                )
                return watcher.run(stop)
            finally:
                observer.stop()
                observer.join(timeout=5)
    finally:
        if restore:
            restore()


def _watch_new_folders(vault: Vault, observer, handler, watched: set[Path]) -> bool:
    """Schedule the divergent folders (and the places above the missing ones) that exist now
    and are not watched yet; whether any was."""
    folders, missing = watch_folders(vault)
    new = [p for p in folders + waiting_places(vault, missing) if p not in watched and p.is_dir()]
    for folder in new:
        try:
            observer.schedule(handler, str(folder), recursive=False)
        except OSError:
            continue  # gone again, or out of watches: the slow rescan still sees its notes
        watched.add(folder)
    return any(folder in folders for folder in new)


def _install_signals(stop: threading.Event, watcher: Watcher, report: Report):
    if threading.current_thread() is not threading.main_thread():
        return None
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def on_signal(number, frame):
        if stop.is_set() and number == signal.SIGINT:
            raise KeyboardInterrupt  # the second Ctrl-C: interrupt the running pass
        stop.set()
        watcher.wake.set()
        if watcher.in_pass:
            report("stopping once the running pass ends (Ctrl-C again to interrupt it)")

    for sig in previous:
        signal.signal(sig, on_signal)

    def restore():
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    return restore
