"""What an Obsidian vault's own settings say about its folders (read only; `.obsidian/` is never
written): where daily notes go (the core Daily notes plugin, the Periodic Notes plugin) and
where templates live (the core Templates plugin, Templater). `cmem init` offers the daily-notes
folder as a divergent folder; templates are no notes to count as left out."""

from __future__ import annotations

import json
from pathlib import Path

_DAILY = (
    (".obsidian/daily-notes.json", ("folder",)),
    (".obsidian/plugins/periodic-notes/data.json", ("daily", "folder")),
    (".obsidian/plugins/journals/data.json", ("folder",)),
)
_TEMPLATES = (
    (".obsidian/templates.json", ("folder",)),
    (".obsidian/plugins/templater-obsidian/data.json", ("templates_folder",)),
)


def daily_notes_folders(root: Path) -> list[str]:
    """The daily-notes folders the vault's settings name (vault-relative, no duplicates)."""
    found = []
    for rel, keys in _DAILY:
        data = _read(Path(root) / rel)
        if keys[0] == "daily" and isinstance(data, dict) and isinstance(data.get("daily"), dict):
            if data["daily"].get("enabled") is False:
                continue
        folder = _clean(_dig(data, keys))
        if folder and folder not in found:
            found.append(folder)
    return found


def template_folders(root: Path) -> list[str]:
    found = []
    for rel, keys in _TEMPLATES:
        folder = _clean(_dig(_read(Path(root) / rel), keys))
        if folder and folder not in found:
            found.append(folder)
    return found


def _read(path: Path):
    try:
        return json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None


def _dig(data, keys: tuple[str, ...]):
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _clean(value) -> str | None:
    """A folder inside the vault, or None (root, absolute, `..`, not a string)."""
    if not isinstance(value, str):
        return None
    folder = value.strip().strip("/")
    if not folder or folder.startswith("/") or ".." in folder.split("/") or folder.startswith("."):
        return None
    return folder
