"""What SessionStart knows of the memory files, kept in the machine folder so a session's start
never scans the vault: each resident and topic file's text as an agent may be shown it
(credentials redacted) and what its frontmatter says (summary, importance, tags and aliases, as
the name keys `reading/project_topic.py` matches), under the file's stat; beside them the
*layout* they were listed by: the layer folders, the stat of every memory folder (a file added,
removed or renamed moves its folder's) and of the config files.

Three ways in, each giving a `Memory`:

- `light_update` (the hook, stdlib only, within a time budget): every known file stat'ed, and
  one whose stat changed read again — when it is plain (UTF-8 with `\\n` line ends, within the
  size limit, a frontmatter `yaml_reader` reads without YAML). Anything else — such a file, a
  memory folder or a config file that changed, a budget spent — leaves the earlier entry standing
  and the memory `stale`: the hook then answers from it and starts `refresh`.
- `first_look` (nothing kept yet): the layer folders from the vault's config, the memory folders
  walked, files read until the budget is spent; the rest named only. Always `stale`.
- `refresh` (a detached process, the vault model): the memory files listed as every command lists
  them, each read by `vault.notes.read_note` and its frontmatter parsed in full; the one answer
  that is never stale.

The texts live apart from the rest (`TEXTS_FILE`, a `Kept` file of parts): a start reads the few
it shows. A text the light way read again is kept with the rest until the next refresh.
No divergent note, archive or scan is ever read here.
"""

from __future__ import annotations

import os
import time

from cmem.cache_store import Kept, settled, stat_key

KEPT_FILE = "start-memory.marshal"
TEXTS_FILE = "start-memory-texts.marshal"
LOCK_FILE = "start-memory.lock"  # held by the one refresh running
_LIGHT_MAX_BYTES = 2_000_000  # first_look's size limit, before the config's is known
KEPT, PROVISIONAL, UNUSABLE = "k", "p", "u"  # read in full; read plainly or named only; not shown
COLUMNS = (
    "paths",
    "layers",
    "states",
    "stats",
    "summaries",
    "importances",
    "keys",
    "sizes",
    "texts",
)


class Memory:
    """The memory files, as columns (a vault may hold thousands: one object a file cost more to
    load than the stats cost to take). File `i` is `paths[i]`, in `layers[i]` ("r" resident, "s"
    situational), its text `sizes[i]` bytes of UTF-8 (-1: not read yet, named only), `content(i)`;
    `resident` and `topics` list the files that can be shown, by path. `stale`: refresh due."""

    def __init__(self, columns: dict, stale: bool, texts: Kept | None = None, read: bool = False):
        self.paths: list[str] = columns["paths"]
        self.layers: str = columns["layers"]
        self.summaries: list[str] = columns["summaries"]
        self.importances: list[float] = columns["importances"]
        self.keys: list[str] = columns["keys"]
        self.sizes: list[int] = columns["sizes"]
        self._texts: list = columns["texts"]  # bytes, or the index of a part of `texts`
        self._kept_texts, self._read = texts, read
        states = columns["states"]  # files by path, so these lists are too
        self.resident = [i for i, layer in enumerate(self.layers) if layer == "r"]
        self.topics = [i for i, layer in enumerate(self.layers) if layer == "s"]
        if UNUSABLE in states:
            self.resident = [i for i in self.resident if states[i] != UNUSABLE]
            self.topics = [i for i in self.topics if states[i] != UNUSABLE]
        self.stale = stale

    def content(self, i: int) -> str | None:
        data = self._texts[i]
        if isinstance(data, int):
            if self._kept_texts is None:
                return None
            if not self._read:
                self._kept_texts.read()
                self._read = True
            data = self._kept_texts.part(data)  # None: another generation's file
        return None if data is None else data.decode("utf-8", "surrogatepass")


def memory_facts(meta: dict) -> tuple[str, float, list[str], list[str]]:
    """(summary, importance, tags, aliases) of a memory file's frontmatter: the one reading of
    them, for SessionStart and `cmem context` alike."""
    summary = str(meta.get("summary") or "").strip()
    try:
        importance = float(meta.get("importance", 5))
    except (TypeError, ValueError):
        importance = 5.0
    return summary, importance, _names(meta.get("tags")), _names(meta.get("aliases"))


def _names(value) -> list[str]:
    if not value:
        return []
    return [str(item) for item in (value if isinstance(value, list) else [value])]


def _row(rel: str, content: str | None, meta: dict) -> tuple:
    """(text as UTF-8 or None, summary, importance, name keys): a file's entry, its stat apart."""
    from cmem.reading.project_topic import file_keys

    summary, importance, tags, aliases = memory_facts(meta)
    data = None if content is None else content.encode("utf-8", "surrogatepass")
    return data, summary, importance, file_keys(rel, aliases, tags)


def empty_columns() -> dict:
    return {"paths": [], "layers": "", "states": "", "stats": [], "summaries": [],
            "importances": [], "keys": [], "sizes": [], "texts": []}  # fmt: skip


def _append(columns: dict, rel: str, layer: str, state: str, stat, row: tuple) -> None:
    """One file's entry; `stat` None: not kept under its stat (read again next time)."""
    data, summary, importance, keys = row
    columns["paths"].append(rel)
    columns["layers"] += layer
    columns["states"] += state
    columns["stats"] += stat if stat is not None else (0, 0, 0, 0)
    columns["summaries"].append(summary)
    columns["importances"].append(importance)
    columns["keys"].append(keys)
    columns["sizes"].append(-1 if data is None else len(data))
    columns["texts"].append(data)


def _stat_of(path: str):
    try:
        return stat_key(os.stat(path, follow_symlinks=False))
    except OSError:
        return None


def _folder_stat(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


def config_files(root: str) -> list[str]:
    """The config files whose change may move the layer folders or the size limit."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return [os.path.join(root, ".cmem", "config.yaml"), os.path.join(base, "cmem", "config.yaml")]


def _save(machine_dir: str, layout: dict, columns: dict, generation: str | None = None) -> Kept:
    """Keep the memory. Without a `generation` (the texts file the columns' part indexes name),
    every text is written anew to a texts file of a new generation; with one, texts read again
    since stay in the entries. Returns the texts file."""
    if generation is None:
        generation = f"{time.time_ns()}-{os.getpid()}"
        parts: list[bytes] = []
        for i, data in enumerate(columns["texts"]):
            if isinstance(data, bytes):
                columns["texts"][i] = len(parts)
                parts.append(data)
        texts = Kept(os.path.join(machine_dir, TEXTS_FILE), "start-memory-texts", generation)
        texts.write({}, parts=parts)
    kept = Kept(os.path.join(machine_dir, KEPT_FILE), "start-memory")
    kept.write({"layout": layout, "columns": columns, "generation": generation})
    return Kept(os.path.join(machine_dir, TEXTS_FILE), "start-memory-texts", generation)


# --- the light way: what changed since, brought in ----------------------------------------------


def light_update(root: str, machine_dir: str, seconds: float) -> Memory | None:
    """The kept memory with what changed since brought in (see the module's doc), or None when
    nothing is kept for this vault. Changed files are read for `seconds` (one at least: on a
    busy machine a start still takes in the file just edited)."""
    for _attempt in range(2):  # a refresh may replace both files between the two reads
        entries = Kept(os.path.join(machine_dir, KEPT_FILE), "start-memory").read()
        generation = entries.get("generation")
        texts = Kept(os.path.join(machine_dir, TEXTS_FILE), "start-memory-texts", generation)
        texts.read()  # held open: its parts are this generation's, whatever comes after
        if texts.found:
            break
    layout, columns = entries.get("layout"), entries.get("columns")
    if not (isinstance(layout, dict) and isinstance(columns, dict) and layout.get("root") == root):
        return None
    stale = not layout.get("complete")
    stale = stale or any(_stat_of(path) != held for path, held in layout["config"])
    stale = stale or any(_folder_stat(path) != held for path, held in layout["folders"])
    paths, stats, states = columns["paths"], columns["stats"], list(columns["states"])
    now_stats = _current_stats(root, paths)
    changed, gone = False, []
    deadline = None  # set at the first read
    for i in _differing(now_stats, stats, states):
        now = tuple(now_stats[4 * i : 4 * i + 4])
        if not any(now):
            gone.append(i)  # its folder changed too: the refresh lists the folder again
            continue
        if deadline is None:
            deadline = time.monotonic() + seconds
        elif time.monotonic() > deadline:
            stale = True  # the earlier text stands until the refresh reads it
            continue
        read = _light_read(root, paths[i], layout)
        if read is None:
            stale = True
            continue
        row, keep = read
        changed = _put(columns, i, row, now if keep else (0, 0, 0, 0)) or changed
        states[i] = KEPT
    columns["states"] = "".join(states)
    if gone:
        stale, changed = True, True
        _drop(columns, set(gone))
    if changed:
        saved = _save(machine_dir, layout, columns, generation)
        if generation is None:  # every text was written anew: to a texts file of its own
            texts.close()
            return Memory(columns, stale, saved)
    return Memory(columns, stale, texts, read=True)


def _differing(now_stats: list[int], stats: list[int], states: list[str]) -> list[int]:
    """The files whose stat is not the one kept, or whose entry is provisional."""
    provisional = [i for i, state in enumerate(states) if state == PROVISIONAL]
    if now_stats == stats:  # the usual start: one comparison of two flat lists
        return provisional
    differing = {
        i for i in range(len(states)) if now_stats[4 * i : 4 * i + 4] != stats[4 * i : 4 * i + 4]
    }
    return sorted(differing.union(provisional))


def _put(columns: dict, i: int, row: tuple, stat: tuple) -> bool:
    """File `i`'s entry replaced; whether it changed."""
    data, summary, importance, keys = row
    at = 4 * i
    before = (columns["texts"][i], columns["summaries"][i], columns["importances"][i],
              columns["keys"][i], columns["stats"][at : at + 4])  # fmt: skip
    columns["texts"][i], columns["sizes"][i] = data, -1 if data is None else len(data)
    columns["summaries"][i], columns["importances"][i], columns["keys"][i] = (
        summary,
        importance,
        keys,
    )
    columns["stats"][at : at + 4] = stat
    return before != (data, summary, importance, keys, list(stat))


def _current_stats(root: str, paths: list[str]) -> list[int]:
    """Each file's `stat_key`, flat (four zeros: gone), stat'ed by name in its folder's
    descriptor where the system allows: a path resolved again for each of thousands of files
    cost more."""
    if not _STAT_DIR_FD:
        return [n for rel in paths for n in _stat_of(os.path.join(root, rel)) or (0, 0, 0, 0)]
    found: list[int] = []
    folder, fd = None, None
    stat = os.stat
    try:
        for rel in paths:
            head, _, name = rel.rpartition("/")
            if head != folder:
                if fd is not None:
                    os.close(fd)
                folder, fd = head, _open_folder(os.path.join(root, head))
            try:
                st = stat(name, dir_fd=fd, follow_symlinks=False) if fd is not None else None
            except OSError:
                st = None
            if st is None:
                found += (0, 0, 0, 0)
            else:
                found += (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)  # stat_key
    finally:
        if fd is not None:
            os.close(fd)
    return found


_STAT_DIR_FD = os.stat in os.supports_dir_fd
_FOLDER_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


def _open_folder(path: str) -> int | None:
    try:
        return os.open(path, _FOLDER_FLAGS)
    except OSError:
        return None


def _drop(columns: dict, gone: set[int]) -> None:
    staying = [i for i in range(len(columns["paths"])) if i not in gone]
    for name in COLUMNS:
        values = columns[name]
        if name == "stats":
            columns[name] = [v for i in staying for v in values[4 * i : 4 * i + 4]]
        elif isinstance(values, str):
            columns[name] = "".join(values[i] for i in staying)
        else:
            columns[name] = [values[i] for i in staying]


def _light_read(root: str, rel: str, layout: dict) -> tuple[tuple, bool] | None:
    """(the file's row, whether it may be kept under its stat), read without YAML, or None when
    only the full reader can read it."""
    from cmem.vault.yaml_reader import plain_frontmatter, split_frontmatter

    path = os.path.join(root, rel)
    try:
        st = os.stat(path, follow_symlinks=False)
        if st.st_size > layout["max_bytes"] or (st.st_size and not getattr(st, "st_blocks", 1)):
            return None  # too large, or a cloud placeholder: the full reader says why
        started = time.time_ns()
        with open(path, "rb") as handle:
            text = handle.read(layout["max_bytes"] + 1).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if "\r" in text or "\x00" in text or text.startswith("\ufeff"):
        return None
    block, _start, problem = split_frontmatter(text)
    meta = plain_frontmatter(block) if block is not None else {}
    if problem or meta is None:
        return None
    from cmem.text.secrets import redact_many

    return _row(rel, redact_many([text])[0][0], meta), settled(st.st_mtime_ns, started)


# --- nothing kept yet: a first look ------------------------------------------------------------


def first_look(
    root: str, machine_dir: str, seconds: float, enough: int, wanted: set[str]
) -> Memory | None:
    """The memory files found by the layer folders the config names, read (plainly): the
    resident files until `enough` bytes of them are and the topic files whose name key is
    `wanted` (what a start shows), then other topic files for `seconds`; those left named
    only. None when the config does not say plainly where the files are. Kept, incomplete:
    a refresh is due."""
    from cmem.text.names import name_key

    folders = _config_folders(root)
    if folders is None:
        return None
    layout = {
        "root": root,
        "resident": folders[0],
        "situational": folders[1],
        "max_bytes": _LIGHT_MAX_BYTES,
        "config": [],  # incomplete: the refresh fills it
        "folders": [],
        "complete": False,
    }
    found: dict[str, tuple[str, str]] = {}  # rel -> (layer, its name's key)
    for layer, base in (("r", folders[0]), ("s", folders[1])):
        for rel in _walk_notes(root, base):
            # in two layers' folders: the first here, the refresh decides
            found.setdefault(rel, (layer, name_key(rel.rsplit("/", 1)[-1].removesuffix(".md"))))
    resident = [rel for rel, (layer, _) in found.items() if layer == "r"]
    named = [rel for rel, (layer, key) in found.items() if layer == "s" and key in wanted]
    rows: dict[str, tuple] = {}
    read_bytes = 0
    for rel in resident + named:  # what the answer shows
        if rel in rows or (rel in resident and read_bytes >= enough):
            continue
        read = _light_read(root, rel, layout)
        if read is not None:
            rows[rel] = read[0]
            read_bytes += len(read[0][0]) if found[rel][0] == "r" else 0
    deadline = time.monotonic() + seconds
    for rel in found:  # the other topic files' summaries and names, for the index
        if time.monotonic() > deadline:
            break
        if rel not in rows and found[rel][0] == "s":
            read = _light_read(root, rel, layout)
            if read is not None:
                rows[rel] = read[0]
    columns = empty_columns()
    for rel in sorted(found):
        layer, key = found[rel]
        _append(
            columns,
            rel,
            layer,
            PROVISIONAL,
            None,
            rows.get(rel) or (None, "", 5.0, key + _UNREAD_KEYS),
        )
    texts = _save(machine_dir, layout, columns)
    return Memory(columns, True, texts)


_UNREAD_KEYS = "\x1f\x1f"  # `project_topic.file_keys` of a file not read: its name only


def _config_folders(root: str) -> tuple[str, str] | None:
    """The resident and situational folders the vault's config names, when it names both as
    plain relative paths."""
    try:
        with open(os.path.join(root, ".cmem", "config.yaml"), encoding="utf-8-sig") as handle:
            text = handle.read()
        from cmem.vault.config_cache import parsed_yaml
        from cmem.vault.yaml_reader import read_config_yaml

        layers = parsed_yaml(text, lambda text: read_config_yaml(text, "config.yaml")).get("layers")
        folders = (layers.get("resident"), layers.get("situational"))
    except Exception:  # no config, not YAML, not a mapping: the refresh says what is wrong
        return None
    plain = all(
        isinstance(f, str) and f and not os.path.isabs(f) and ".." not in f.split("/")
        for f in folders
    )
    return (folders[0].strip("/"), folders[1].strip("/")) if plain else None


def _walk_notes(root: str, base: str) -> list[str]:
    """The `.md` files under the folder `base`, dot-names and links left out, sorted."""
    found, stack = [], [base]
    while stack:
        rel = stack.pop()
        try:
            with os.scandir(os.path.join(root, rel)) as entries:
                for entry in entries:
                    if entry.name.startswith("."):
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(f"{rel}/{entry.name}")
                    elif entry.name.endswith(".md") and entry.is_file(follow_symlinks=False):
                        found.append(f"{rel}/{entry.name}")
        except OSError:
            continue
    return sorted(found)


# --- the full way, in a process of its own -----------------------------------------------------


def refresh(vault, deadline: float | None = None) -> Memory:
    """Every memory file as the vault lists it, read in full where its stat changed (or its
    entry was provisional), and the layout as the config gives it: kept, complete. Past
    `deadline` (a `time.monotonic()`), files still to read keep what was kept of them, or
    their name, and the memory stays incomplete: the next refresh goes on."""
    from cmem.text.secrets import redact_many
    from cmem.vault.layers import RESIDENT, SITUATIONAL
    from cmem.vault.notes import read_note

    root, config, machine_dir = str(vault.root), vault.config, str(vault.machine_dir)
    before = _kept_by_path(machine_dir)
    started = time.time_ns()
    folders = _memory_folders(root, (config.resident_dir, config.situational_dir))
    layout = {
        "root": root,
        "resident": config.resident_dir,
        "situational": config.situational_dir,
        "max_bytes": config.max_note_bytes,
        "config": [(path, _stat_of(path)) for path in config_files(root)],
        "folders": folders,
        "complete": all(held is None or settled(held[0], started) for _, held in folders),
    }
    entries: dict = {}  # rel -> (layer, state, stat, row)
    unread: list = []  # (rel, layer, stat, note)
    for layer, layer_name in (("r", RESIDENT), ("s", SITUATIONAL)):
        for note_file in vault.list_layer(layer_name):
            st = stat_key(note_file.lstat())
            held = before.get(note_file.rel)
            if held is not None and held[:3] in ((layer, KEPT, st), (layer, UNUSABLE, st)):
                entries[note_file.rel] = held
                continue
            if deadline is not None and time.monotonic() > deadline:
                row = held[3] if held is not None else _row(note_file.rel, None, {})
                entries[note_file.rel] = (layer, PROVISIONAL, None, row)
                layout["complete"] = False
                continue
            read_at = time.time_ns()
            note = read_note(note_file, config.max_note_bytes)
            unread.append((note_file.rel, layer, st if settled(st[0], read_at) else None, note))
    usable = [entry for entry in unread if entry[3].usable]
    contents, _count = redact_many([note.text for *_, note in usable])
    for (rel, layer, st, note), content in zip(usable, contents):
        entries[rel] = (layer, KEPT, st, _row(rel, content, note.meta))
    for rel, layer, st, note in unread:
        if not note.usable:  # never shown (`cmem context` names why); its stat still watched
            entries[rel] = (layer, UNUSABLE, st, _row(rel, None, {}))
    columns = empty_columns()
    for rel in sorted(entries):
        _append(columns, rel, *entries[rel])
    texts = _save(machine_dir, layout, columns)
    return Memory(columns, not layout["complete"], texts)


def _kept_by_path(machine_dir: str) -> dict:
    """What is kept, by path: (layer, state, stat, row), stat None where it was not kept."""
    entries = Kept(os.path.join(machine_dir, KEPT_FILE), "start-memory").read()
    columns = entries.get("columns")
    if not isinstance(columns, dict):
        return {}
    texts = Kept(
        os.path.join(machine_dir, TEXTS_FILE), "start-memory-texts", entries.get("generation")
    )
    texts.read()
    found = {}
    for i, rel in enumerate(columns["paths"]):
        st = tuple(columns["stats"][4 * i : 4 * i + 4])
        data = columns["texts"][i]
        if isinstance(data, int):
            data = texts.part(data)
            if data is None:
                continue  # its text is lost: read again
        row = (data, columns["summaries"][i], columns["importances"][i], columns["keys"][i])
        found[rel] = (columns["layers"][i], columns["states"][i], st if any(st) else None, row)
    return found


def _memory_folders(root: str, bases: tuple[str, ...]) -> list:
    """(path, stat) of every folder under the memory layers' folders (dot-names left out, links
    not followed), the layer folders themselves included even when missing."""
    found: dict[str, object] = {}
    stack = [os.path.join(root, base) for base in bases]
    while stack:
        folder = stack.pop()
        if folder in found:
            continue
        found[folder] = _folder_stat(folder)
        try:
            with os.scandir(folder) as entries:
                stack += [
                    entry.path
                    for entry in entries
                    if not entry.name.startswith(".") and entry.is_dir(follow_symlinks=False)
                ]
        except OSError:
            continue
    return sorted(found.items())


# --- one refresh at a time ----------------------------------------------------------------------


def refresh_running(machine_dir: str) -> bool:
    """Whether a refresh holds the lock now (then no second one is started)."""
    fd = _lock_fd(machine_dir)
    if fd is None:
        return False
    try:
        return not _try_lock(fd)
    finally:
        os.close(fd)  # closing drops a lock this check took


def refresh_alone(vault, seconds: float | None = None) -> Memory | None:
    """`refresh` (for at most `seconds`), unless another process is running one (then None:
    that one's answer will do)."""
    fd = _lock_fd(str(vault.machine_dir))
    if fd is None or not _try_lock(fd):
        if fd is not None:
            os.close(fd)
        return None
    try:
        return refresh(vault, None if seconds is None else time.monotonic() + seconds)
    finally:
        os.close(fd)


def _lock_fd(machine_dir: str) -> int | None:
    from cmem.private import FILE_MODE, make_dirs

    try:
        make_dirs(machine_dir)
        return os.open(os.path.join(machine_dir, LOCK_FILE), os.O_RDWR | os.O_CREAT, FILE_MODE)
    except OSError:
        return None


def _try_lock(fd: int) -> bool:
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
