"""Notes outside every layer (issue 14): an adopted vault keeps most notes in folders cmem does
not read, and saying nothing about them reads as "all clear". `status` and `doctor` count them by
top folder, each with the setting that would bring it in.

Only Markdown notes count; dot folders (`.obsidian/`, `.trash/`), never-read folders, the
patterns of `ignore` and Obsidian's template folders are not notes of the user's to adopt.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from cmem.text.names import is_undecodable
from cmem.vault.config import NEVER_READ_DIRS
from cmem.vault.layers import Vault


@dataclass(frozen=True)
class UnmanagedFolder:
    folder: str  # a top folder of the vault
    notes: int
    nested: bool  # notes in its subfolders too: `folder/**` would take them all

    @property
    def setting(self) -> str:
        entry = f"{self.folder}/**" if self.nested else self.folder
        return f"divergent.extra_folders: [{entry}]"

    def to_json(self) -> dict:
        return {"folder": self.folder, "notes": self.notes, "setting": self.setting}


def find_unmanaged(vault: Vault) -> list[UnmanagedFolder]:
    """Top folders holding notes that no layer reads, most notes first."""
    counts: dict[str, int] = {}
    nested: set[str] = set()
    for rel in unmanaged_notes(vault):
        rel_folder = rel.rpartition("/")[0]
        top = rel_folder.split("/", 1)[0]
        counts[top] = counts.get(top, 0) + 1
        if "/" in rel_folder:
            nested.add(top)
    return sorted(
        (UnmanagedFolder(top, n, top in nested) for top, n in counts.items()),
        key=lambda f: (-f.notes, f.folder),
    )


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
    from cmem.vault.obsidian import template_folders

    found = []
    root = str(vault.root)
    templates = template_folders(vault.root)
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
        if any(rel_folder == t or rel_folder.startswith(t + "/") for t in templates):
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
    return sorted(found)
