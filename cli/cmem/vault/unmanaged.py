"""Notes outside every layer (issue 14): an adopted vault keeps most notes in folders cmem does
not read, and saying nothing about them reads as "all clear". `status` and `doctor` count them by
top folder, each with the setting that would bring it in.

Only Markdown notes count; dot folders (`.obsidian/`, `.trash/`), never-read folders, the
patterns of `ignore` and Obsidian's template folders are not notes of the user's to adopt.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from cmem.text.names import is_undecodable
from cmem.vault.config import NEVER_READ_DIRS, folder_overlap
from cmem.vault.layers import Vault


@dataclass(frozen=True)
class UnmanagedFolder:
    folder: str  # the highest folder whose notes one divergent entry can take in
    notes: int
    nested: bool  # notes in its subfolders too: `folder/**` would take them all
    setting: str = ""  # the whole `divergent.extra_folders` line that reads it ("": none can)

    @property
    def entry(self) -> str:
        return f"{self.folder}/**" if self.nested else self.folder

    def to_json(self) -> dict:
        return {
            "folder": self.folder,
            "notes": self.notes,
            "entry": self.entry,
            "setting": self.setting,
        }


def find_unmanaged(vault: Vault) -> list[UnmanagedFolder]:
    """Folders holding notes that no layer reads, most notes first, each with the config line
    that reads it: the list as configured plus its entry, valid as it is printed."""
    layers = [vault.config.resident_dir, vault.config.situational_dir, vault.config.archive_dir]
    notes, templates = _unmanaged_walk(vault)
    counts: dict[str, int] = {}
    nested: set[str] = set()
    for rel in notes:
        rel_folder = rel.rpartition("/")[0]
        folder = _reading_folder(rel_folder, layers, templates)
        counts[folder] = counts.get(folder, 0) + 1
        if rel_folder != folder:
            nested.add(folder)
    listed = [str(f) for f in vault.config.raw["divergent"]["extra_folders"]]
    found = []
    for folder, count in counts.items():
        entry = f"{folder}/**" if folder in nested else folder
        if any(folder_overlap(folder, layer) for layer in layers):
            setting = ""  # a layer's own folder holds notes: no divergent entry may take them
        else:
            setting = _setting(listed, entry)
        found.append(UnmanagedFolder(folder, count, folder in nested, setting))
    return sorted(found, key=lambda f: (-f.notes, f.folder))


def _reading_folder(rel_folder: str, layers: list[str], templates: list[str]) -> str:
    """The highest folder above a note whose `folder/**` holds no layer folder and no template
    folder (a PARA vault's `99 - META/Templates`), else the note's own folder."""
    parts = rel_folder.split("/")
    for depth in range(1, len(parts)):
        candidate = "/".join(parts[:depth])
        if not any(_holds(candidate, other) for other in (*layers, *templates)):
            return candidate
    return rel_folder


def _holds(folder: str, other: str) -> bool:
    return folder_overlap(folder, other) is not None


def _setting(listed: list[str], entry: str) -> str:
    """`divergent.extra_folders: [...]` with `entry` added (replacing the same folder listed
    flat): a line of YAML the config loads as it is."""
    base = entry.removesuffix("/**")
    kept = [f for f in listed if folder_overlap(_base(f), base) != "is the same folder as"]
    entries = ", ".join(json.dumps(f, ensure_ascii=False) for f in [*kept, entry])
    return f"divergent.extra_folders: [{entries}]"


def _base(entry: str) -> str:
    return entry.strip().rstrip("/").removesuffix("/**").strip("/")


def _walk(vault: Vault, top: str):
    """os.walk(top) (top-down, links to folders listed but not followed, unreadable folders
    skipped), each folder listed through `Vault.list_folder`: a read-only command's listing key
    has listed them already."""
    try:
        entries = vault.list_folder(top)
    except OSError:
        return
    dirs = [entry.name for entry in entries if entry.is_dir()]
    names = [entry.name for entry in entries if not entry.is_dir()]
    links = {entry.name for entry in entries if entry.is_symlink()}
    yield top, dirs, names
    for name in dirs:  # as filtered in place by the caller
        if name not in links:
            yield from _walk(vault, os.path.join(top, name))


def unmanaged_notes(vault: Vault) -> list[str]:
    """The vault-relative paths of the notes no layer reads, sorted."""
    return _unmanaged_walk(vault)[0]


def _unmanaged_walk(vault: Vault) -> tuple[list[str], list[str]]:
    """(the notes no layer reads, sorted; the template folders passed by on the way)."""
    from cmem.vault.obsidian import is_template_folder, template_folders

    found = []
    root = str(vault.root)
    templates = template_folders(vault.root)
    passed: list[str] = []
    # A note in a memory or archive layer's tree is that layer's, never unmanaged, so those
    # trees are not walked (no divergent folder lies inside one: the config refuses it).
    layer_bases = [
        base
        for base in (
            vault.config.resident_dir,
            vault.config.situational_dir,
            vault.config.archive_dir,
        )
        if base
    ]
    for folder, dirs, names in _walk(vault, root):
        # a name that is not UTF-8 is reported as an odd file elsewhere, never printed here
        dirs[:] = [
            d
            for d in dirs
            if not d.startswith(".") and d not in NEVER_READ_DIRS and not is_undecodable(d)
        ]
        rel_folder = os.path.relpath(folder, root).replace(os.sep, "/")
        if rel_folder == ".":
            continue  # root notes are divergent (or excluded on purpose: README.md, AGENTS.md)
        if is_template_folder(rel_folder, templates):
            passed.append(rel_folder)
            dirs[:] = []
            continue
        if any(rel_folder == b or rel_folder.startswith(b + "/") for b in layer_bases):
            dirs[:] = []
            continue
        for name in names:
            if not name.endswith(".md") or name.startswith(".") or is_undecodable(name):
                continue
            rel = f"{rel_folder}/{name}"
            if (
                vault.layer_of(rel) is not None
                or vault.is_ignored(rel)
                or rel == vault.checklist_rel
            ):
                continue
            if os.path.islink(os.path.join(folder, name)):
                continue  # a link may lead out of the vault: never read through it
            found.append(rel)
    return sorted(found), passed
