"""What an Obsidian vault's own settings say about its folders (read only; `.obsidian/` is never
written): where daily notes go, named how and made from which template (the core Daily notes
plugin, the Periodic Notes plugin), and where templates live (the core Templates plugin,
Templater, or a folder named Templates). `cmem init` offers the daily-notes folder as a divergent
folder, `cmem note` writes into today's daily note; templates are no notes of the user's."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
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
    """The daily-notes folders the vault's settings name (vault-relative, no duplicates; the
    vault root, where the root's notes are read anyway, is none)."""
    found = []
    settings = daily_notes(root)
    if settings is not None and settings.folder:
        found.append(settings.folder)
    for rel, keys in _DAILY:
        data = _read(Path(root) / rel)
        if keys[0] == "daily" and isinstance(data, dict) and isinstance(data.get("daily"), dict):
            if data["daily"].get("enabled") is False:
                continue
        folder = _clean(_dig(data, keys))
        if folder and folder not in found:
            found.append(folder)
    return found


@dataclass(frozen=True)
class DailyNotes:
    """Where Obsidian keeps a day's note: `folder` ('' the vault root), its name as a moment.js
    `format` (slashes make folders: `YYYY/MM/YYYY-MM-DD`), the `template` note it starts from
    ('' none), and the settings file that said so."""

    folder: str
    format: str
    template: str
    settings: str

    def path_of(self, when) -> str:
        """The vault-relative path of the daily note of `when` (a datetime)."""
        from cmem.vault.moment import format_moment

        name = format_moment(self.format, when).strip().strip("/")
        return f"{self.folder}/{name}.md" if self.folder else f"{name}.md"


DAILY_NAME_DEFAULT = "YYYY-MM-DD"  # Obsidian's own default name for a daily note


def daily_notes(root: Path) -> DailyNotes | None:
    """Today's daily notes as the vault's settings keep them: the Periodic Notes plugin's daily
    notes when it has them on (its 1.x calendar sets, or 0.x's `daily`), else the core Daily
    notes plugin's (`daily-notes.json`, or its defaults while the plugin is on); None when
    neither is set up (not an Obsidian vault, or daily notes off)."""
    periodic = _periodic_daily(Path(root))
    if periodic is not None:
        return periodic
    root = Path(root)
    rel = ".obsidian/daily-notes.json"
    data = _read(root / rel)
    if not isinstance(data, dict):
        if not _core_plugin_on(root, "daily-notes"):
            return None
        data = {}
    elif _core_plugin_on(root, "daily-notes") is False:
        return None
    return _settings(data, "template", rel)


def _periodic_daily(root: Path) -> DailyNotes | None:
    rel = ".obsidian/plugins/periodic-notes/data.json"
    data = _read(root / rel)
    if not isinstance(data, dict):
        return None
    sets = data.get("calendarSets")
    if isinstance(sets, list):  # 1.x: the active calendar set's `day`
        active = data.get("activeCalendarSet")
        chosen = next((s for s in sets if isinstance(s, dict) and s.get("id") == active), None)
        day = (chosen or (sets[0] if sets and isinstance(sets[0], dict) else {})).get("day")
        if isinstance(day, dict) and day.get("enabled"):
            return _settings(day, "templatePath", rel)
        return None
    daily = data.get("daily")
    if isinstance(daily, dict) and daily.get("enabled") is not False:
        return _settings(daily, "template", rel)
    return None


def _settings(data: dict, template_key: str, rel: str) -> DailyNotes:
    fmt = data.get("format")
    template = _clean(data.get(template_key)) or ""
    if template and not template.endswith(".md"):
        template += ".md"
    return DailyNotes(
        folder=_clean(data.get("folder")) or "",
        format=fmt.strip() if isinstance(fmt, str) and fmt.strip() else DAILY_NAME_DEFAULT,
        template=template,
        settings=rel,
    )


def _core_plugin_on(root: Path, plugin: str) -> bool | None:
    """Whether `core-plugins.json` turns a core plugin on (a list of ids, or a map of id to
    true/false), None when the file says nothing."""
    data = _read(root / ".obsidian/core-plugins.json")
    if isinstance(data, list):
        return plugin in data
    if isinstance(data, dict) and plugin in data:
        return bool(data[plugin])
    return None


# "Templates", "templates", "_templates", "99 - Templates", "Template": what people name the folder
_TEMPLATE_NAME = re.compile(r"^[\W\d_]*templates?$", re.IGNORECASE)


def is_template_folder(rel_folder: str, named: list[str]) -> bool:
    """Whether a folder holds templates: one the settings name (or a folder below it), or one
    named like a templates folder (`Templates`, `_templates`, `99 - Templates`)."""
    if any(rel_folder == t or rel_folder.startswith(t + "/") for t in named):
        return True
    return bool(_TEMPLATE_NAME.match(rel_folder.rsplit("/", 1)[-1]))


def template_folders(root: Path) -> list[str]:
    """The template folders the vault's settings name (vault-relative, no duplicates)."""
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
    if not folder or folder.startswith(("/", ".")) or ".." in folder.split("/"):
        return None
    return folder
