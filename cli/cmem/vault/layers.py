"""The vault: where it is, its settings, and which layer each file belongs to (docs/design.md §1).

Layers: the divergent root (the root's `*.md`, plus configured extra folders, minus exclusions),
the convergent layer (resident and situational folders), the archive, and everything else —
unmanaged files cmem never reads, moves or rewrites.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from cmem.errors import CmemError, VaultNotFound
from cmem.text.names import is_undecodable, show_name
from cmem.vault.config import (
    CONFIG_DIR,
    CONFIG_FILE,
    NEVER_READ_DIRS,
    Config,
    folder_overlap,
    load_config,
    relative_path_problem,
)
from cmem.vault.globs import any_glob

DIVERGENT = "divergent"
RESIDENT = "resident"
SITUATIONAL = "situational"
ARCHIVE = "archive"
LAYERS = (DIVERGENT, RESIDENT, SITUATIONAL, ARCHIVE)

STATE_FILE = "state.json"
OWN_FILES = (CONFIG_FILE, STATE_FILE, "backlog.json")  # what cmem writes in `.cmem/` (init)

# The setting that names each layer's folder (the divergent layer's extra folders).
SETTINGS = {
    RESIDENT: "layers.resident",
    SITUATIONAL: "layers.situational",
    ARCHIVE: "layers.archive",
    DIVERGENT: "divergent.extra_folders",
}


class PathRefused(CmemError):
    """A path cmem will not write: outside the vault, outside its layer, in a dot-folder, or
    through a symbolic link that leads there (`Vault.confined`)."""


# Syncthing (`x.sync-conflict-20261128-101010-ABCDEF.md`), Dropbox (`x (conflicted copy 2026-11-28).md`),
# Obsidian Sync and others (`x (Conflict 1).md`).
_SYNC_CONFLICT = re.compile(r"\.sync-conflict-|conflicted copy|\(conflict\b", re.IGNORECASE)


def is_sync_conflict(name: str) -> bool:
    return bool(_SYNC_CONFLICT.search(name))


def is_cloud_placeholder(name: str) -> bool:
    """iCloud's evicted-file stand-ins (`.note.md.icloud`)."""
    return name.startswith(".") and name.endswith(".md.icloud")


class NoteFile:
    """A Markdown file the vault manages: where it is and which layer it is in.

    The absolute location is kept as given (a string from a directory walk, or a Path) and turned
    into a Path only when asked: building 15,000 Path objects was a third of a warm `status`.
    `entry` is the listing's `os.DirEntry` when the file came from one: its stat may be cached
    already (a read command's listing key took it), so a reader asks it rather than stat again."""

    __slots__ = ("rel", "location", "layer", "_path", "entry")

    def __init__(
        self, rel: str, path: str | os.PathLike, layer: str, entry: os.DirEntry | None = None
    ):
        self.rel = rel  # POSIX path relative to the vault root
        self.location = path
        self.layer = layer
        self._path = path if isinstance(path, Path) else None
        self.entry = entry

    def lstat(self) -> os.stat_result:
        """`os.stat(location, follow_symlinks=False)`, from the listing's entry when there is one
        (a DirEntry keeps the stat it took: one stat a file however many readers ask)."""
        if self.entry is not None:
            return self.entry.stat(follow_symlinks=False)
        return os.stat(self.location, follow_symlinks=False)

    @property
    def path(self) -> Path:
        if self._path is None:
            self._path = Path(self.location)
        return self._path

    @property
    def name(self) -> str:
        """The note's name as a wikilink resolves it (file name without `.md`)."""
        base = self.rel.rsplit("/", 1)[-1]
        return base[:-3] if base.endswith(".md") else base

    def __eq__(self, other) -> bool:
        return isinstance(other, NoteFile) and (self.rel, str(self.location), self.layer) == (
            other.rel,
            str(other.location),
            other.layer,
        )

    def __hash__(self) -> int:
        return hash((self.rel, self.layer))

    def __repr__(self) -> str:
        return f"NoteFile({self.rel!r}, {self.layer!r})"


@dataclass(frozen=True)
class Vault:
    root: Path
    config: Config

    @cached_property
    def _layers_nest(self) -> bool:
        """Whether one layer folder lies inside another (then a walk must ask layer_of)."""
        bases = [
            self.config.resident_dir,
            self.config.situational_dir,
            self.config.archive_dir,
            *self.config.extra_divergent,
        ]
        return any(a != b and (a + "/").startswith(b + "/") for a in bases for b in bases)

    @cached_property
    def machine_dir(self) -> Path:
        return machine_dir_for(self.root)

    @property
    def journal_dir(self) -> Path:
        """Where a step's crash journal lives while it runs (cmem.steps.journal); a folder in it
        after the step's process is gone is an interrupted step."""
        return self.machine_dir / "journal"

    @property
    def cmem_dir(self) -> Path:
        return self.root / CONFIG_DIR

    @property
    def state_file(self) -> Path:
        return self.cmem_dir / STATE_FILE

    def own_files_problem(self, names: tuple[str, ...] = (STATE_FILE,)) -> str | None:
        """Why cmem must not write its own files `names` here (`own_files_problem`), or None."""
        return own_files_problem(self.root, names)

    @property
    def checklist_rel(self) -> str:
        return f"{self.config.archive_dir}/{self.config.checklist_name}"

    @property
    def checklist_path(self) -> Path:
        return self.root / self.checklist_rel

    @property
    def convergent_dirs(self) -> tuple[str, str]:
        return (self.config.resident_dir, self.config.situational_dir)

    @cached_property
    def _root_prefix(self) -> str:
        return os.path.join(os.fspath(self.root), "")

    def rel(self, path: str | os.PathLike[str]) -> str:
        text = os.fspath(path)
        # Fast path for the paths a listing makes (root + "/" + plain parts): listings call this
        # for every entry, and relpath + Path cost more than the listing itself.
        if os.sep == "/" and text.startswith(self._root_prefix):
            rest = text[len(self._root_prefix) :]
            if not any(part in ("", ".", "..") for part in rest.split("/")):
                return rest
        return Path(os.path.relpath(path, self.root)).as_posix()

    # --- confinement: settings are checked at load, but the disk can still lead elsewhere (a
    # layer folder linked to `../elsewhere`, an archive month linked into `.git/`)

    def layer_folder(self, layer: str) -> str:
        """The configured folder of a layer ('' for the divergent layer: the vault root)."""
        return {
            RESIDENT: self.config.resident_dir,
            SITUATIONAL: self.config.situational_dir,
            ARCHIVE: self.config.archive_dir,
            DIVERGENT: "",
        }[layer]

    def confined(self, rel: str, layer: str | None = None) -> Path:
        """The absolute path (`root / rel`, not resolved) of a vault-relative path cmem may
        write, or `PathRefused` (a CmemError: one sentence naming the path, the link and the
        setting at fault).

        Call it on every path computed from settings, a checklist line or the disk before
        creating, replacing, moving into or deleting it. It refuses, by name: an empty or
        absolute path, `..`, `.` or empty components, backslashes, control or undecodable
        characters, any component starting with `.` (`.git`, `.obsidian`, `.cmem` — so cmem's own
        `.cmem/` files are not passed here: their paths are fixed, not settings) or in
        NEVER_READ_DIRS; with `layer` (DIVERGENT, RESIDENT, SITUATIONAL or ARCHIVE), a path not
        in that layer's folder (DIVERGENT: a root file or a file of an extra divergent folder; a
        layer's folder itself counts as inside). Then, on disk: a path whose symbolic links
        (any folder on the way, the layer folder itself, or the file) resolve outside the real
        vault, into a dot-folder, out of the layer's real folder, or make the layer folder an
        alias of another layer's folder. Links that stay where they belong are allowed; paths
        that do not exist yet are checked as far as they exist. A check, not a lock: a path can
        still be swapped afterwards, so writers keep their own last-moment checks.
        """
        problem = self.path_problem(rel, layer)
        if problem:
            raise PathRefused(f"{show_name(rel)} {problem}; cmem never writes there.")
        return self.root / rel

    def path_problem(self, rel: str, layer: str | None = None) -> str | None:
        """Why `confined` would refuse `rel` (a clause to follow the path), or None."""
        problem = relative_path_problem(rel)
        if problem:
            return f"is not a plain path inside the vault ({problem})"
        base = None
        if layer is not None:
            base = self._layer_base(rel, layer)
            if base is None:
                where = (
                    f"{self.layer_folder(layer)}/"
                    if layer != DIVERGENT
                    else "the vault root or a divergent folder"
                )
                return f"is outside the {layer} layer ({where})"
        return self._disk_problem(rel, layer, base)

    def layer_folder_problem(self, layer: str, folder: str | None = None) -> str | None:
        """Why a layer's folder (or one extra divergent `folder`) cannot be used as it is on
        disk — it goes through a symbolic link out of the vault, into a dot-folder or into another
        layer's folder — or None. Nothing is wrong with a folder that does not exist yet."""
        folder = self.layer_folder(layer) if folder is None else folder
        return self._disk_problem(folder, layer, folder) if folder else None

    @property
    def _real_root(self) -> str:
        return os.path.realpath(self.root)

    def _layer_base(self, rel: str, layer: str) -> str | None:
        if layer == DIVERGENT:
            folder = rel.rpartition("/")[0]
            if rel in self.config.extra_divergent:
                return rel
            for base in self.config.recursive_divergent:
                if rel.startswith(base + "/"):
                    return base
            return folder if folder == "" or folder in self.config.extra_divergent else None
        base = self.layer_folder(layer)
        return base if rel == base or rel.startswith(base + "/") else None

    def _disk_problem(self, rel: str, layer: str | None, base: str | None) -> str | None:
        real_root = self._real_root
        real = os.path.realpath(os.path.join(self.root, rel))
        if real == os.path.join(real_root, *rel.split("/")):
            return None  # no link on the way: the names were checked already
        link, target = self._first_link(rel)
        via = f"the symbolic link {link} → {show_name(target)}" if link else "a symbolic link"
        if base and layer and link is not None and (base + "/").startswith(link + "/"):
            via += f" (setting '{SETTINGS[layer]}')"  # the layer's own folder is (under) the link
        real_rel = _inside(real, real_root)
        if real_rel is None:
            return f"goes through {via} out of the vault"
        hidden = next(
            (
                part
                for part in real_rel.split("/")
                if part.startswith(".") or part in NEVER_READ_DIRS
            ),
            None,
        )
        if hidden:
            return f"goes through {via} into {hidden}/, which cmem never reads or writes"
        if layer is None:
            return None
        real_base = os.path.realpath(os.path.join(self.root, base)) if base else real_root
        if _inside(real, real_base) is None:
            return f"goes through {via} out of {base or 'the vault root'}/"
        base_rel = _inside(real_base, real_root)
        if base and base_rel != base:
            for other_layer, other in self._layer_folders():
                if other != base and base_rel and folder_overlap(base_rel, other):
                    return f"goes through {via} into {other}/, the folder of another layer ({SETTINGS[other_layer]})"
        return None

    def _layer_folders(self) -> list[tuple[str, str]]:
        folders = [(layer, self.layer_folder(layer)) for layer in (RESIDENT, SITUATIONAL, ARCHIVE)]
        return folders + [(DIVERGENT, folder) for folder in self.config.extra_divergent]

    def _first_link(self, rel: str) -> tuple[str | None, str]:
        current = ""
        for part in rel.split("/"):
            current = f"{current}/{part}" if current else part
            path = os.path.join(self.root, current)
            if os.path.islink(path):
                try:
                    return current, os.readlink(path)
                except OSError:
                    return current, "?"
            if not os.path.lexists(path):
                break
        return None, ""

    # --- classification -------------------------------------------------------------

    def is_ignored(self, rel: str) -> bool:
        return self._ignored(rel)

    @cached_property
    def _ignored(self) -> Callable[[str], bool]:
        return any_glob(self.config.ignore)

    @cached_property
    def _excluded(self) -> Callable[[str], bool]:
        return any_glob(self.config.exclude)

    def layer_of(self, rel: str) -> str | None:
        """The layer of a vault-relative path, or None for unmanaged and never-read files."""
        parts = rel.split("/")
        if any(part in NEVER_READ_DIRS for part in parts[:-1]) or self.is_ignored(rel):
            return None
        if not rel.endswith(".md") or is_undecodable(rel):
            return None
        if len(parts) == 1:
            return None if self._excluded(parts[0]) else DIVERGENT
        folder = "/".join(parts[:-1])
        if folder in self.config.extra_divergent or self._in_recursive_divergent(folder):
            return None if self._excluded(parts[-1]) else DIVERGENT
        for layer, base in (
            (RESIDENT, self.config.resident_dir),
            (SITUATIONAL, self.config.situational_dir),
        ):
            if rel.startswith(base + "/"):
                return layer
        if rel.startswith(self.config.archive_dir + "/") and rel != self.checklist_rel:
            return ARCHIVE
        return None

    def _in_recursive_divergent(self, folder: str) -> bool:
        """A folder below a `folder/**` divergent folder (not inside a layer folder or a never-read one)."""
        if not self.config.recursive_divergent:
            return False
        for base in self.config.recursive_divergent:
            if folder.startswith(base + "/"):
                inner = folder[len(base) + 1 :].split("/")
                return not any(part.startswith(".") or part in NEVER_READ_DIRS for part in inner)
        return False

    # --- listing --------------------------------------------------------------------

    def divergent_folders(self) -> list[Path]:
        folders = [self.root]
        for folder in self.config.extra_divergent:
            folders += [self.root / folder] + (
                self._subfolders(folder) if folder in self.config.recursive_divergent else []
            )
        return folders

    def _subfolders(self, base: str) -> list[Path]:
        """The folders below a `base/**` divergent folder that hold its notes (not dot folders, not
        symbolic links, not a layer folder nested in it)."""
        found, stack = [], [self.root / base]
        while stack:
            try:
                entries = self.list_folder(stack.pop())
            except OSError:
                continue
            for entry in entries:
                if (
                    entry.is_dir(follow_symlinks=False)
                    and not entry.name.startswith(".")
                    and entry.name not in NEVER_READ_DIRS
                ):
                    if self._in_recursive_divergent(self.rel(entry.path)):
                        found.append(Path(entry.path))
                        stack.append(Path(entry.path))
        return sorted(found)

    def remember_listings(self) -> Vault:
        """For a command that only reads: list each layer once, however many of its parts ask
        (a status asked 7 times). Never for a writer, whose later listings must see its writes."""
        self.__dict__["_listings"] = {}
        return self

    @contextmanager
    def listed_once(self):
        """Within it, each folder is read from disk once, however many parts ask: a scan lists
        the divergent and convergent folders, then looks for odd names in the same folders.
        Only for the length of one reading: listings after a write must see the write."""
        if "_folders" in self.__dict__:
            yield self  # an outer reading holds the listings already
            return
        self.__dict__["_folders"] = {}
        self.__dict__["_layers"] = {}  # and each layer is made of those listings once
        try:
            yield self
        finally:
            self.__dict__.pop("_folders", None)
            self.__dict__.pop("_layers", None)

    def list_folder(self, folder: str | os.PathLike[str]) -> list[os.DirEntry]:
        """`list(os.scandir(folder))`, raising what it raises, or a listing already made: the
        entries a read-only command's listing key listed (`reading/stored_results.py: begin`
        hands them on), or, inside `listed_once`, this reading's first listing of the folder (a
        DirEntry keeps its stat once asked, so that is shared too). One walk of the vault per
        command, however many parts of it list the same folder (status: four)."""
        key = os.fspath(folder)
        listed = self.__dict__.get("_scandirs")
        if listed is not None:
            found = listed.get(key)
            if found is not None:
                return list(found)
        memo = self.__dict__.get("_folders")
        if memo is None:
            return list(os.scandir(folder))
        if key not in memo:
            try:
                memo[key] = list(os.scandir(folder))
            except OSError as exc:
                memo[key] = exc
        found = memo[key]
        if isinstance(found, OSError):
            raise found
        return list(found)  # the caller's own list

    def list_layer(self, layer: str) -> list[NoteFile]:
        """The layer's notes, sorted by path. Odd names (conflict copies, placeholders) are
        left out here; `odd_files` reports them."""
        memo = self.__dict__.get("_listings")
        if memo is None:
            memo = self.__dict__.get("_layers")  # inside `listed_once`
        if memo is None:
            return self._list_layer(layer)
        if layer not in memo:
            memo[layer] = self._list_layer(layer)
        return list(memo[layer])

    def _list_layer(self, layer: str) -> list[NoteFile]:
        if layer == DIVERGENT:
            notes = self._list_flat(self.root)
            for folder in self.config.extra_divergent:
                if (
                    self.layer_folder_problem(DIVERGENT, folder) is None
                ):  # a folder linked out of the vault is not read
                    notes.extend(self._list_flat(self.root / folder))
                    if folder in self.config.recursive_divergent:
                        for sub in self._subfolders(folder):
                            notes.extend(self._list_flat(sub))
            return sorted(notes, key=lambda n: n.rel)
        base = self.layer_folder(layer)
        if self.layer_folder_problem(layer, base):
            return []  # `notes.find_odd_names` reports it
        return sorted(self._walk(self.root / base, layer), key=lambda n: n.rel)

    def _list_flat(self, folder: Path) -> list[NoteFile]:
        found = []
        try:
            entries = self.list_folder(folder)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return []  # a folder that cannot be listed: `notes.find_odd_names` names it
        for entry in entries:
            if not entry.name.endswith(".md") or entry.name.startswith("."):
                continue
            if is_sync_conflict(entry.name) or is_undecodable(entry.name):
                continue  # `notes.find_odd_names` reports both
            rel = self.rel(entry.path)
            if self.layer_of(rel) != DIVERGENT:
                continue
            if entry.is_symlink() or not entry.is_file(follow_symlinks=False):
                continue
            found.append(NoteFile(rel, entry.path, DIVERGENT, entry))
        return found

    def _walk(self, base: Path, layer: str) -> list[NoteFile]:
        found = []
        stack = [base]
        while stack:
            listed = self.walk_folder(stack.pop(), layer)
            if listed is not None:
                stack.extend(listed[0])
                found.extend(listed[1])
        return found

    def walk_folder(self, folder: Path, layer: str) -> tuple[list[Path], list[NoteFile]] | None:
        """One folder of a layer's walk: the subfolders to walk on and the layer's notes in it,
        or None when it cannot be listed. `vault/archive_names.py` keeps its answers for the
        archive's folders, so both walks leave out the same names."""
        try:
            entries = self.list_folder(folder)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return None
        subfolders, found = [], []
        # an entry's path is the folder's and its name: the folder's relative path is made once
        # (`rel` of each of a 10k vault's 2,049 memory files was a third of listing them)
        inside = self.rel(folder)
        inside = "" if inside in ("", ".") else inside + "/"
        for entry in entries:
            if entry.name.startswith(".") or is_undecodable(entry.name):
                continue  # `notes.find_odd_names` reports undecodable names
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in NEVER_READ_DIRS:
                    subfolders.append(Path(entry.path))
                continue
            if not entry.name.endswith(".md") or is_sync_conflict(entry.name) or entry.is_symlink():
                continue
            if not entry.is_file(follow_symlinks=False):
                continue  # a FIFO, socket or device: never opened (`notes.find_odd_names` names it)
            rel = inside + entry.name
            if self._layers_nest or self.config.ignore:
                if self.layer_of(rel) != layer:  # the full check only where it can differ
                    continue
            elif layer == ARCHIVE and rel == self.checklist_rel:
                continue
            found.append(NoteFile(rel, entry.path, layer, entry))
        return subfolders, found

    def convergent_files(self) -> list[NoteFile]:
        return self.list_layer(RESIDENT) + self.list_layer(SITUATIONAL)

    def note_names(self) -> dict[str, list[str]]:
        """Wikilink name → vault-relative paths, over every managed layer (for source checks).

        A source may cite an archived note, so the archive's ~7k notes (at 10k) count too; unless
        this reading listed the archive already, their paths come from `vault/archive_names.py`,
        which lists only the archive folders whose stat changed since it last looked."""
        names: dict[str, list[str]] = {}
        for layer in LAYERS:
            if layer == ARCHIVE and not self.listed(ARCHIVE):
                rels = self._archived_rels()
            else:
                rels = [note.rel for note in self.list_layer(layer)]
            for rel in rels:
                base = rel.rsplit("/", 1)[-1]  # as `NoteFile.name`
                names.setdefault(base[:-3] if base.endswith(".md") else base, []).append(rel)
        return names

    def listed(self, layer: str) -> bool:
        """Whether this reading listed the layer already (`list_layer` answers it from memory):
        then what its folders' stats keep (`vault/archive_names.py`) is not worth reading."""
        memo = self.__dict__.get("_listings")
        if memo is None:
            memo = self.__dict__.get("_layers") or {}  # as `list_layer` looks
        return layer in memo

    def _archived_rels(self) -> list[str]:
        """`list_layer(ARCHIVE)`'s paths, its folders listed only where their stat changed."""
        from cmem.vault.archive_names import archived_rels

        base = self.config.archive_dir
        if self.layer_folder_problem(ARCHIVE, base):
            return []  # as `_list_layer`: `notes.find_odd_names` reports it

        def walk_folder(folder: str) -> tuple[list[str], list[str]] | None:
            listed = self.walk_folder(self.root / folder, ARCHIVE)
            if listed is None:
                return None
            return [self.rel(sub) for sub in listed[0]], [note.rel for note in listed[1]]

        config = self.config
        import sys

        from cmem.cache_store import code_stamp

        # an upgraded cmem may list differently: this module's stat is part of the key
        version = code_stamp(sys.modules[__name__])
        settings = (
            self.checklist_rel,
            config.resident_dir,
            config.situational_dir,
            config.extra_divergent,
            sorted(config.recursive_divergent),
            config.exclude,
            config.ignore,
        )
        return archived_rels(
            self.root, base, self.machine_dir, f"{version} {settings!r}", walk_folder
        )


def own_files_problem(
    root: str | os.PathLike[str], names: tuple[str, ...] = (STATE_FILE,)
) -> str | None:
    """Why cmem must not write its own files `names` (in `.cmem/`) in the vault at `root`: the
    folder or one of those files is a symbolic link that leads out of the vault (another vault's
    `.cmem/`, say) or into `.git/` — as a clause naming it, or None. Reading through it is
    allowed; every writer checks what it writes first (a step: `state.json`, in
    `steps/preflight.py` and `steps/changes.py`; `init`: its three files)."""
    real_root = os.path.realpath(root)
    git = os.path.join(real_root, ".git")
    for rel in (CONFIG_DIR, *(f"{CONFIG_DIR}/{name}" for name in names)):
        path = os.path.join(root, rel)
        if not os.path.islink(path):
            continue
        real = os.path.realpath(path)
        if _inside(real, real_root) is None or _inside(real, git) is not None:
            try:
                target = os.readlink(path)
            except OSError:
                target = "?"
            where = "into .git/" if _inside(real, real_root) is not None else "out of the vault"
            return f"{path} is a symbolic link to {show_name(target)}, {where}"
    return None


def _inside(path: str, folder: str) -> str | None:
    """`path` relative to `folder` as POSIX text when it is `folder` or inside it, else None."""
    if path == folder:
        return ""
    prefix = os.path.join(folder, "")
    return path[len(prefix) :].replace(os.sep, "/") if path.startswith(prefix) else None


def machine_dir_for(root: Path) -> Path:
    """Per-machine data outside the vault: `$XDG_STATE_HOME/cmem/<name>-<hash of the path>`
    (`vault/machine.py`, which the agent hooks and stored answers use without this module)."""
    from cmem.vault.machine import machine_dir_of

    return Path(machine_dir_of(root))


def find_vault_root(start: Path | None = None, explicit: str | os.PathLike | None = None) -> Path:
    """`--vault`, else `$CMEM_VAULT`, else the nearest ancestor holding `.cmem/`."""
    chosen = explicit or os.environ.get("CMEM_VAULT")
    if chosen:
        root = Path(chosen).expanduser()
        if not root.is_dir():
            source = "--vault" if explicit else "$CMEM_VAULT"
            raise VaultNotFound(f"{source} points to {root}, which is not a folder.")
        if not (root / CONFIG_DIR).is_dir():
            raise VaultNotFound(
                f"{root} is not a cmem vault (no {CONFIG_DIR}/ folder); run `cmem init {root}` first."
            )
        return root.resolve()
    here = (start or Path.cwd()).resolve()
    from cmem.vault.machine import vault_root_above

    found = vault_root_above(str(here))
    if found is not None:
        return Path(found)
    raise VaultNotFound(
        f"no cmem vault here: neither {here} nor a folder above it holds {CONFIG_DIR}/; "
        "run `cmem init` in your notes folder, or pass --vault PATH."
    )


def open_vault(explicit: str | os.PathLike | None = None, start: Path | None = None) -> Vault:
    root = find_vault_root(start, explicit)
    return Vault(root=root, config=load_config(root))
