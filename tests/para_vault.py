"""An Obsidian vault laid out as people keep one (issue 44): PARA folders nested a few deep,
dated daily notes under `03 - AREAS/Journal/Daily/YYYY/MM/`, a templates folder holding a core
template and a Templater one, callouts, a web clip, Templater frontmatter left unrendered, an
empty note, and the `.obsidian/` settings that say where daily notes and templates live."""

from __future__ import annotations

import json

DAILY_FOLDER = "03 - AREAS/Journal/Daily"
DAILY_FORMAT = "YYYY/MM/YYYY-MM-DD"
TEMPLATES = "99 - META/Templates"
OLD_DAILY = f"{DAILY_FOLDER}/2024/04/2024-04-30.md"
CLIPPED = "02 - RESOURCES/Articles/Designing APIs.md"

DAILY_TEMPLATE = """\
---
date: {{date:YYYY-MM-DD}}
tags: [daily]
---
# {{date:dddd, MMMM Do YYYY}}

> [!note] Morning
> What matters today?

## Log
"""

FILES: dict[str, str] = {
    "Home.md": "# Home\n\nStart here: [[Dashboard]].\n",
    "00 - INBOX/quick idea.md": "Maybe a tiny static site for the recipes.\n",
    "01 - PROJECTS/Homelab/docker cleanup.md": (
        "# Docker cleanup\n\nOrphaned volumes pile up on the NAS: `docker volume prune` every month.\n"
    ),
    "01 - PROJECTS/Homelab/backups.md": "# Backups\n\nRestic to the B2 bucket, nightly at 02:00.\n",
    "02 - RESOURCES/Books/Deep Work.md": "# Deep Work\n\n> [!quote] Cal Newport\n> Clarity about what matters.\n",
    CLIPPED: (
        "---\ntitle: Designing APIs\nsource: https://example.com/designing-apis\n"
        "author: Someone Else\ntags: [clippings]\n---\n"
        "How would you then actually implement that? I prefer small endpoints.\n"
        "Never return a bare list from an endpoint.\n"
    ),
    "03 - AREAS/Health/sleep.md": "# Sleep\n\nIn bed by 23:00 works best for me.\n",
    f"{DAILY_FOLDER}/2024/04/2024-04-29.md": (
        "# Monday\n\n> [!note] Morning\n> Ship the backup script.\n\nWent climbing with Ana.\n"
    ),
    OLD_DAILY: (
        "---\ncreated: <% tp.file.creation_date() %>\n"
        '<%* const mood = await tp.system.prompt("Mood?") %>\n---\n# Tuesday\n\n'
        "> [!tip] Lesson\n> Write the restore test before the backup job.\n\n"
        "Decided to keep the homelab on Debian stable.\n"
    ),
    f"{DAILY_FOLDER}/2024/05/2024-05-01.md": "",
    f"{TEMPLATES}/Daily.md": DAILY_TEMPLATE,
    f"{TEMPLATES}/Weekly.md": "---\nweek: <% tp.date.now('gggg-[W]ww') %>\n---\n# Week\n",
    ".obsidian/app.json": "{}\n",
    ".obsidian/daily-notes.json": json.dumps(
        {"folder": DAILY_FOLDER, "format": DAILY_FORMAT, "template": f"{TEMPLATES}/Daily"}
    ),
    ".obsidian/templates.json": json.dumps({"folder": TEMPLATES}),
    ".obsidian/plugins/templater-obsidian/data.json": json.dumps(
        {"templates_folder": TEMPLATES, "trigger_on_file_creation": True}
    ),
}
