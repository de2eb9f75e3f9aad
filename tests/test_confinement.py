"""Every path from config stays inside the vault, inside its layer, outside dot-folders; layers
never overlap (SPEC §5 "Steps", issue #10)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cmem.config import default_config_text, load_config, parse_config
from cmem.errors import ConfigError
from history_helpers import run_main

WHERE = Path("/v/.cmem/config.yaml")


def _cmem(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cmem", *args], capture_output=True, text=True, timeout=120, env=dict(os.environ))


# --- settings, checked when the config loads ---------------------------------------------------

REFUSED_SETTINGS = [
    # every path setting: absolute, '..', dot-folders, never-read folders, backslashes, control characters
    ({"layers": {"resident": "/etc/memory"}}, "layers.resident", "absolute"),
    ({"layers": {"resident": "../memory"}}, "layers.resident", "'..'"),
    ({"layers": {"situational": "notes/../../topics"}}, "layers.situational", "'..'"),
    ({"layers": {"archive": ".git/archive"}}, "layers.archive", "'.git'"),
    ({"layers": {"archive": "old/.obsidian"}}, "layers.archive", "'.obsidian'"),
    ({"layers": {"archive": ".cmem"}}, "layers.archive", "'.cmem'"),
    ({"layers": {"archive": "node_modules/archive"}}, "layers.archive", "'node_modules'"),
    ({"layers": {"resident": "converged\\core"}}, "layers.resident", "backslash"),
    ({"layers": {"resident": "converged/co\x00re"}}, "layers.resident", "U+0000"),
    ({"layers": {"resident": "converged/\u202ecore"}}, "layers.resident", "U+202E"),
    ({"layers": {"resident": "converged//core"}}, "layers.resident", "empty"),
    ({"divergent": {"extra_folders": ["../daily"]}}, "divergent.extra_folders", "'..'"),
    ({"divergent": {"extra_folders": [".daily"]}}, "divergent.extra_folders", "'.daily'"),
    ({"archive": {"checklist": "../../x.md"}}, "archive.checklist", "'..'"),
    ({"archive": {"checklist": "/tmp/x.md"}}, "archive.checklist", "absolute"),
    ({"archive": {"checklist": ".git/x.md"}}, "archive.checklist", "'.git'"),
    ({"archive": {"pattern": "../{name}"}}, "archive.pattern", "'..'"),
    ({"archive": {"pattern": "{yyyy}/../../{name}"}}, "archive.pattern", "'..'"),
    ({"archive": {"pattern": "/{yyyy}/{name}"}}, "archive.pattern", "absolute"),
    ({"archive": {"pattern": ".{yyyy}/{name}"}}, "archive.pattern", "'.2026'"),
    ({"archive": {"pattern": "{yyyy}/.git/{name}"}}, "archive.pattern", "'.git'"),
    ({"capture": {"folder": "../inbox"}}, "capture.folder", "'..'"),
    ({"capture": {"folder": "inbox"}}, "capture.folder", "never be scanned"),
    ({"capture": {"folder": "converged/core"}}, "capture.folder", "divergent.extra_folders"),
    ({"capture": {"name_pattern": "../{date}"}}, "capture.name_pattern", "folder"),
    ({"capture": {"name_pattern": ".{date}"}}, "capture.name_pattern", "'.2026-11-28.md'"),
    ({"capture": {"name_pattern": "{date} inbox"}, "divergent": {"exclude": ["* inbox.md"]}}, "capture.name_pattern", "divergent.exclude"),
    # layers never overlap
    ({"layers": {"archive": "converged/core"}}, "layers.archive", "same folder as 'layers.resident'"),
    ({"layers": {"archive": "Converged/Core"}}, "layers.archive", "same folder as 'layers.resident'"),
    ({"layers": {"resident": "a", "situational": "a"}}, "layers.resident", "same folder"),
    ({"layers": {"resident": "a", "situational": "a/b"}}, "layers.resident", "holds 'layers.situational'"),
    ({"layers": {"archive": "converged/core/old"}}, "layers.archive", "lies inside 'layers.resident'"),
    ({"layers": {"archive": "converged"}}, "layers.archive", "holds 'layers.resident'"),
    ({"divergent": {"extra_folders": ["archive"]}}, "divergent.extra_folders", "same folder as 'layers.archive'"),
    ({"divergent": {"extra_folders": ["converged"]}}, "divergent.extra_folders", "holds 'layers.resident'"),
    ({"divergent": {"extra_folders": ["daily", "daily/"]}}, "divergent.extra_folders", "each folder may appear once"),
]


@pytest.mark.parametrize("data, key, reason", REFUSED_SETTINGS)
def test_a_path_setting_outside_its_place_is_one_error_naming_the_key(data, key, reason):
    with pytest.raises(ConfigError) as excinfo:
        parse_config(data, WHERE)
    message = str(excinfo.value)
    assert message.startswith(f"{WHERE}: setting '{key}'") and reason in message, message
    assert "\n" not in message and "\x00" not in message and "\u202e" not in message


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"layers": {"resident": "memory/core", "situational": "memory/topics", "archive": "memory-archive"}},
        {"layers": {"resident": " converged/core/ "}},  # surrounding spaces and trailing slashes are trimmed, as before
        {"divergent": {"extra_folders": ["daily", "journal/days"]}, "capture": {"folder": "daily"}},
        {"divergent": {"extra_folders": ["daily"]}, "capture": {"folder": "daily/"}},
        {"archive": {"pattern": "{yyyy}/{mm}/{dd} {name}", "checklist": "lists/TODO.md"}},
        {"capture": {"folder": "", "name_pattern": "{date} inbox"}},
    ],
)
def test_paths_inside_their_place_are_accepted(data):
    config = parse_config(data, WHERE)
    assert config.capture_folder in ("", *config.extra_divergent)


def test_trailing_slashes_are_trimmed():
    assert parse_config({"layers": {"resident": "converged/core/"}}, WHERE).resident_dir == "converged/core"


@pytest.mark.parametrize("language", ["zh", "en"])
def test_the_default_config_init_writes_stays_valid(tmp_path, language):
    (tmp_path / ".cmem").mkdir()
    (tmp_path / ".cmem/config.yaml").write_text(default_config_text(language), encoding="utf-8")
    config = load_config(tmp_path)
    assert (config.resident_dir, config.situational_dir, config.archive_dir, config.capture_folder) == (
        "converged/core", "converged/topics", "archive", "")


def _yaml(data: dict) -> str:
    import json

    return "".join(f"{key}: {json.dumps(value, ensure_ascii=False)}\n" for key, value in data.items())  # JSON is YAML


@pytest.mark.parametrize("data, key, reason", REFUSED_SETTINGS)
def test_a_refused_setting_stops_the_cli_with_one_sentence(make_vault, monkeypatch, capsys, data, key, reason):
    root = make_vault(config_yaml=_yaml(data))
    with pytest.raises(ConfigError):
        load_config(root)
    code, out, err = run_main(monkeypatch, capsys, "status", "--vault", str(root))
    assert code == 1 and f"setting '{key}'" in err and "config.yaml" in err and reason in err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err


def test_a_refused_setting_in_a_real_process_has_no_traceback(make_vault):
    root = make_vault(config_yaml="layers:\n  archive: converged/core\n")
    for args in (["status"], ["scan", "--json"], ["note", "x"], ["converge", "--engine", "builtin", "--dry-run"]):
        done = _cmem(*args, "--vault", str(root))
        assert done.returncode == 1 and "'layers.archive'" in (done.stderr + done.stdout) and "Traceback" not in done.stderr, done
