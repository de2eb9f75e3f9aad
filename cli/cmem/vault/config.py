"""Vault settings (`.cmem/config.yaml`) and the user's settings (`$XDG_CONFIG_HOME/cmem/config.yaml`).

Loading validates against the JSON Schema in `vault_schema/`: an unknown key or a wrong type is one
`ConfigError` naming the key. The YAML is read by `vault/yaml_reader.py: read_config_yaml`; the
user's settings are written back through its `CommentKeepingEdit` so their comments survive.
"""

from __future__ import annotations

import copy
import os
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from cmem.errors import ConfigError
from cmem.text.folding import fold_path
from cmem.vault.globs import any_glob
from cmem.vault.languages import LANGUAGE_DEFAULTS

# typing only names the annotations (never evaluated): every command that opens a vault
# would pay for importing it
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CONFIG_DIR = ".cmem"
CONFIG_FILE = "config.yaml"

# Folders that belong to other tools: never read, never written (dot-folders are refused anyway;
# `node_modules` is named because it is not one).
NEVER_READ_DIRS = {
    ".git",
    ".cmem",
    ".obsidian",
    ".trash",
    ".stfolder",
    ".stversions",
    "node_modules",
}

DEFAULTS: dict[str, Any] = {
    "version": 1,
    "language": "zh",
    "layers": {
        "resident": "converged/core",
        "situational": "converged/topics",
        "archive": "archive",
    },
    "divergent": {"extra_folders": [], "exclude": ["README.md", "AGENTS.md", "CLAUDE.md"]},
    "ignore": [],
    "signals": {
        "cues": {"correction": [], "preference": [], "decision": [], "recurring": []},
        "min_recurrence": 2,
    },
    "budget_tokens": 12000,
    "resident_max_tokens": 4000,
    "situational_max_tokens": 3000,
    "max_note_bytes": 2_000_000,
    "min_interval_minutes": 60,
    "schedule_hours": 24,
    "repair_rounds": 2,
    "review": False,
    "llm": {"command": None, "timeout_seconds": 600, "max_output_bytes": 4_000_000},
    "formats": {},  # filled from LANGUAGE_DEFAULTS unless set
    "archive": {"pattern": "{yyyy}-{mm}/{name}", "checklist": "ARCHIVE-CHECKLIST.md"},
    "capture": {"folder": "", "daily_note": True, "heading": ""},
    "git": {
        "allow_parent_repo": False,
        "remote": None,
        "sync": "off",
        "sync_note": False,
        "track_all": False,
    },
    "recall": {"include_unmanaged": True},
    "sessions": {"folder": "sessions", "include": [], "exclude": [], "max_turn_chars": 4000},
}


@dataclass(frozen=True)
class Formats:
    source: str
    source_separator: str
    trace: str


@dataclass(frozen=True)
class Config:
    """The vault's settings, defaults filled in. `raw` is the merged mapping, for `--json` dumps."""

    language: str
    resident_dir: str
    situational_dir: str
    archive_dir: str
    extra_divergent: tuple[str, ...]
    exclude: tuple[str, ...]
    ignore: tuple[str, ...]
    extra_cues: dict[str, tuple[str, ...]]
    min_recurrence: int
    budget_tokens: int
    resident_max_tokens: int
    situational_max_tokens: int
    max_note_bytes: int
    min_interval_minutes: int
    schedule_hours: float
    repair_rounds: int
    review: bool
    llm_command: str | None
    llm_timeout_seconds: float
    llm_max_output_bytes: int
    formats: Formats
    archive_pattern: str
    checklist_name: str
    capture_pattern: str
    capture_folder: str
    allow_parent_repo: bool
    sync_remote: str | None = (
        None  # git.remote: the remote `cmem sync` uses (None: the branch's upstream)
    )
    sync_mode: str = "off"  # git.sync: off | auto (every writing step syncs before and after)
    sync_note: bool = False  # git.sync_note: with auto, `cmem note` syncs too
    raw: dict = field(repr=False, compare=False, default_factory=dict)
    # divergent.extra_folders given as `folder/**`: the folder and every folder below it
    recursive_divergent: frozenset[str] = frozenset()
    track_all: bool = (
        False  # git.track_all: snapshots commit every file of the vault, not only cmem's layers
    )
    recall_unmanaged: bool = True  # recall.include_unmanaged: recall searches notes no layer reads
    # sessions.*: where session notes go, and which sessions' working folders are kept
    sessions_folder: str = "sessions"
    sessions_include: tuple[str, ...] = ()
    sessions_exclude: tuple[str, ...] = ()
    sessions_max_turn_chars: int = 4000
    # capture.*: `cmem note` into today's daily note (Obsidian's settings), under this heading
    capture_daily: bool = True
    capture_heading: str = ""


def _yaml_load(text: str, where: Path) -> Any:
    from cmem.vault.yaml_reader import read_config_yaml  # lazy: most loads find it stored

    return read_config_yaml(text, where)


def _deep_merge(base: dict, override: dict) -> dict:
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _check_unknown_keys(data: Any, schema: dict, where: Path, prefix: str = "") -> None:
    """Name an unknown key (with a close known one) before the schema's generic message."""
    if not isinstance(data, dict) or schema.get("type") != "object":
        return
    known = schema.get("properties", {})
    for key in data:
        dotted = f"{prefix}{key}"
        if key not in known:
            if schema.get("additionalProperties", True) is False:
                import difflib  # only for this error, not on every config load

                close = difflib.get_close_matches(str(key), list(known), n=1)
                hint = (
                    f" (did you mean '{prefix}{close[0]}'?)"
                    if close
                    else f" (known keys: {', '.join(sorted(known))})"
                )
                raise ConfigError(f"{where}: unknown key '{dotted}'{hint}.")
            continue
        _check_unknown_keys(data[key], known[key], where, dotted + ".")


_validators: dict[str, Any] = {}


def _validate(data: Any, schema_name: str, where: Path) -> None:
    import json

    from cmem import resources
    from cmem.vault.config_cache import SchemaValueError

    schema = resources.config_schema() if schema_name == "config" else _user_schema()
    if not isinstance(data, dict):
        raise ConfigError(f"{where} must be a mapping of settings, not {type(data).__name__}.")
    _check_unknown_keys(data, schema, where)
    validator = _validators.get(schema_name)
    if validator is None:
        from cmem.vault.config_cache import validator as stored_validator

        # compiled once per schema text and kept as bytecode, not compiled every run
        validator = _validators[schema_name] = stored_validator(json.dumps(schema, sort_keys=True))
    try:
        validator(data)
    except SchemaValueError as exc:
        key = (exc.name or "data").removeprefix("data").lstrip(".") or "(top level)"
        message = exc.message.replace(exc.name or "data", f"'{key}'", 1)
        raise ConfigError(f"{where}: setting {message}.") from None


def _user_schema() -> dict:
    import json

    from cmem.resources import package_dir

    return json.loads((package_dir("vault_schema") / "user-config.schema.json").read_text("utf-8"))


def parse_config(data: dict | None, where: Path) -> Config:
    """Validate a loaded mapping and fill in defaults."""
    data = {} if data is None else data
    _check_formats(data, where)
    _validate(data, "config", where)
    merged = _deep_merge(DEFAULTS, data)
    language = merged["language"]
    lang = LANGUAGE_DEFAULTS[language]
    formats = merged["formats"]
    cues = merged["signals"]["cues"]
    folders = _layer_folders(merged, data, where)
    archive = merged["archive"]
    checklist = _clean_path(archive["checklist"], "archive.checklist", where, kind="file")
    pattern = _check_pattern(archive["pattern"], where)
    capture_folder = _capture_folder(
        merged["capture"].get("folder", ""), folders["divergent.listed"], where
    )
    capture_pattern = _check_capture_name(
        merged["capture"].get("name_pattern", lang["capture"]),
        merged["divergent"]["exclude"],
        where,
    )
    return Config(
        language=language,
        resident_dir=folders["layers.resident"],
        situational_dir=folders["layers.situational"],
        archive_dir=folders["layers.archive"],
        extra_divergent=folders["divergent.extra_folders"],
        recursive_divergent=folders["divergent.recursive"],
        exclude=tuple(merged["divergent"]["exclude"]),
        ignore=tuple(merged["ignore"]),
        extra_cues={
            name: tuple(cues.get(name, ()))
            for name in ("correction", "preference", "decision", "recurring")
        },
        min_recurrence=merged["signals"]["min_recurrence"],
        budget_tokens=merged["budget_tokens"],
        resident_max_tokens=merged["resident_max_tokens"],
        situational_max_tokens=merged["situational_max_tokens"],
        max_note_bytes=merged["max_note_bytes"],
        min_interval_minutes=merged["min_interval_minutes"],
        schedule_hours=float(merged["schedule_hours"]),
        repair_rounds=merged["repair_rounds"],
        review=merged["review"],
        llm_command=merged["llm"]["command"],
        llm_timeout_seconds=float(merged["llm"]["timeout_seconds"]),
        llm_max_output_bytes=merged["llm"]["max_output_bytes"],
        formats=Formats(
            source=formats.get("source", lang["source"]),
            source_separator=formats.get("source_separator", lang["source_separator"]),
            trace=formats.get("trace", lang["trace"]),
        ),
        archive_pattern=pattern,
        checklist_name=checklist,
        capture_pattern=capture_pattern,
        capture_folder=capture_folder,
        allow_parent_repo=merged["git"]["allow_parent_repo"],
        sync_remote=merged["git"]["remote"],
        sync_mode=merged["git"]["sync"] or "off",  # YAML 1.1 reads a bare `off` as false
        sync_note=merged["git"]["sync_note"],
        track_all=bool(merged["git"].get("track_all", False)),
        recall_unmanaged=bool(merged["recall"].get("include_unmanaged", True)),
        sessions_folder=_sessions_folder(
            merged["sessions"]["folder"], (data.get("sessions") or {}).get("folder"), folders, where
        ),
        sessions_include=tuple(merged["sessions"]["include"]),
        sessions_exclude=tuple(merged["sessions"]["exclude"]),
        sessions_max_turn_chars=merged["sessions"]["max_turn_chars"],
        capture_daily=bool(merged["capture"].get("daily_note", True)),
        capture_heading=merged["capture"].get("heading", "").strip(),
        raw=merged,
    )


# --- paths from settings: inside the vault, outside dot-folders, layers apart; checked once at
# load, so a bad setting is one error then, not a surprise at write time (symbolic links are
# the disk's, checked by `Vault.confined` when a path is used).


def _home_or_drive(rel: str) -> bool:
    """`~`, `~/…`, `~user/…` (a shell's home) and `C:`, `C:/…`, `C:\\…` (a Windows drive); a name
    that only starts with `~` or `X:` (`~ inbox.md`, `Q: when to use uv.md`) is a name."""
    head, slash, _ = rel.replace("\\", "/").partition("/")
    if head.startswith("~"):
        return head == "~" or (bool(slash) and not any(ch.isspace() for ch in head))
    return len(head) == 2 and head[1] == ":" and head[0].isalpha()


def relative_path_problem(rel: str) -> str | None:
    """Why `rel` is not a plain vault-relative POSIX path cmem may use, or None.

    Refused: empty, absolute, `..`, `.` or empty components, a component starting with `.`
    (`.git`, `.obsidian`, `.cmem`…) or naming a folder cmem never reads, backslashes, and control,
    invisible or undecodable characters (a name that was not UTF-8 on disk arrives as surrogates).
    """
    if not rel:
        return "it is empty"
    for ch in rel:
        if unicodedata.category(ch).startswith("C"):
            if 0xDC80 <= ord(ch) <= 0xDCFF:
                return "it is not valid UTF-8"
            return f"it contains the control or invisible character U+{ord(ch):04X}"
    if "\\" in rel:
        return "it contains a backslash (separate folders with '/')"
    if rel.startswith("/") or os.path.isabs(rel) or _home_or_drive(rel):
        return "it is an absolute path"
    for part in rel.split("/"):
        if part == "..":
            return "it goes up a folder with '..'"
        if part in ("", "."):
            return "it has an empty or '.' folder name"
        if part.startswith("."):
            return f"{part!r} is a dot-folder or hidden file, which cmem never reads or writes"
        if part in NEVER_READ_DIRS:
            return f"{part!r} is a folder cmem never reads"
        if part != part.strip():
            return f"{part!r} starts or ends with a space"
    return None


def _clean_path(value: str, key: str, where: Path, kind: str = "folder") -> str:
    """A path setting made canonical (no surrounding spaces or slashes), or a ConfigError."""
    cleaned = value.strip()
    problem = "it is an absolute path" if cleaned.startswith("/") else None
    cleaned = cleaned.strip("/")
    problem = problem or relative_path_problem(cleaned)
    if problem:
        raise ConfigError(
            f"{where}: setting '{key}' must be a {kind} inside the vault, not {value!r} ({problem})."
        )
    return cleaned


def _layer_folders(merged: dict, data: dict, where: Path) -> dict:
    """The layer folders, each inside the vault, and no two the same or one inside another: a
    note must belong to exactly one layer (an archive inside the resident folder would be read
    at every session start; a pass would rewrite archived notes)."""
    layers = merged["layers"]
    folders: dict = {
        key: _clean_path(layers[key.split(".")[1]], key, where)
        for key in ("layers.resident", "layers.situational", "layers.archive")
    }
    # `journal/**` is the folder journal and everything below it; a plain entry is one folder
    recursive = frozenset(
        _clean_path(f.strip().rstrip("/")[:-3], "divergent.extra_folders", where)
        for f in merged["divergent"]["extra_folders"]
        if f.strip().rstrip("/").endswith("/**")
    )
    extra = tuple(
        _clean_path(
            f.strip().rstrip("/")[:-3] if f.strip().rstrip("/").endswith("/**") else f,
            "divergent.extra_folders",
            where,
        )
        for f in merged["divergent"]["extra_folders"]
    )
    for folder in extra:
        if any(ch in folder for ch in "*?["):
            raise ConfigError(
                f"{where}: setting 'divergent.extra_folders' lists {folder!r}; a folder is named as it is, "
                "or as `folder/**` for it and every folder below it (other patterns are not supported)."
            )
    listed = extra
    extra = _uncovered(extra, recursive)
    recursive = frozenset(_uncovered(tuple(recursive), recursive))
    named = list(folders.items()) + [("divergent.extra_folders", folder) for folder in extra]
    user_set = {f"layers.{key}" for key in (data.get("layers") or {})} | (
        {"divergent.extra_folders"} if extra else set()
    )
    for index, (key_a, a) in enumerate(named):
        for key_b, b in named[index + 1 :]:
            relation = folder_overlap(a, b)
            if relation is None or (key_a == key_b and relation != "is the same folder as"):
                continue  # divergent folders nest: one layer, and a covered one is read once
            # name the setting the user wrote: the defaults are not what they need to change
            subject, other = (
                ((key_b, b), (key_a, a))
                if key_b in user_set and key_a not in user_set
                else ((key_a, a), (key_b, b))
            )
            if subject[0] == other[0]:
                raise ConfigError(
                    f"{where}: setting '{subject[0]}' lists {a!r} and {b!r}, which overlap; each folder may appear once."
                )
            raise ConfigError(
                f"{where}: setting '{subject[0]}' ({subject[1]!r}) {folder_overlap(subject[1], other[1])} '{other[0]}' ({other[1]!r}); "
                "layers must not overlap: each needs a folder of its own, and none may hold another."
            )
    folders["divergent.extra_folders"] = extra
    folders["divergent.recursive"] = recursive
    folders["divergent.listed"] = listed
    return folders


def _uncovered(extra: tuple[str, ...], recursive: frozenset[str]) -> tuple[str, ...]:
    """The divergent folders without those a `folder/**` entry already reads: adding `areas/**`
    beside `areas/journal/**` (as `status` suggests) reads each note once."""
    return tuple(
        folder
        for folder in extra
        if not any(folder_overlap(folder, base) == "lies inside" for base in recursive)
    )


def folder_overlap(a: str, b: str) -> str | None:
    """How folder `a` relates to folder `b`, compared as a case-insensitive disk would."""
    fa, fb = (fold_path(path) + "/" for path in (a, b))
    if fa == fb:
        return "is the same folder as"
    if fa.startswith(fb):
        return "lies inside"
    if fb.startswith(fa):
        return "holds"
    return None


def _check_formats(data: dict, where: Path) -> None:
    """`formats.*` can be read back: a statement written with them is found again (before the
    schema, whose patterns say less; a value of the wrong type is left to it)."""
    formats = data.get("formats") if isinstance(data, dict) else None
    if not isinstance(formats, dict):
        return
    from cmem.vault.format_rules import EXAMPLES, PROBLEMS

    for key, check in PROBLEMS.items():
        value = formats.get(key)
        problem = check(value) if isinstance(value, str) else None
        if problem:
            raise ConfigError(
                f"{where}: setting 'formats.{key}' cannot be {value!r}: {problem} (e.g. {EXAMPLES[key]!r})."
            )


def _check_pattern(pattern: str, where: Path) -> str:
    """`archive.pattern` is a path inside the archive folder for any date and note name."""
    sample = (
        pattern.replace("{yyyy}", "2026")
        .replace("{mm}", "11")
        .replace("{dd}", "28")
        .replace("{folder}", "journal")
        .replace("{name}", "note")
    )
    problem = (
        "it is an absolute path"
        if sample.strip().startswith("/")
        else relative_path_problem(sample)
    )
    if problem:
        raise ConfigError(
            f"{where}: setting 'archive.pattern' must give a path inside the archive folder, not {pattern!r} ({problem})."
        )
    return pattern


def _capture_folder(value: str, extra_folders: tuple[str, ...], where: Path) -> str:
    """'' (the vault root) or one of the divergent folders: a capture note anywhere else would
    never be scanned."""
    if not value.strip().strip("/"):
        return ""
    cleaned = _clean_path(value, "capture.folder", where)
    if cleaned not in extra_folders:
        listed = f" ({', '.join(extra_folders)})" if extra_folders else ""
        raise ConfigError(
            f"{where}: setting 'capture.folder' must be '' (the vault root) or one of divergent.extra_folders{listed}, "
            f"not {value!r}: a capture note anywhere else would never be scanned."
        )
    return cleaned


def _sessions_folder(value: str, given: str | None, folders: dict, where: Path) -> str:
    """`sessions.folder`: a divergent folder, so session notes are read as notes. Set by the
    user, it must be one of divergent.extra_folders; the default is checked by `cmem capture`,
    which says how to add it (a vault made before sessions existed has no such folder)."""
    cleaned = _clean_path(value, "sessions.folder", where)
    extra = folders["divergent.listed"]
    if given is not None and cleaned not in extra:
        listed = f" ({', '.join(extra)})" if extra else ""
        raise ConfigError(
            f"{where}: setting 'sessions.folder' ({value!r}) must be one of divergent.extra_folders{listed}: "
            "a session note anywhere else would never be read."
        )
    return cleaned


def _check_capture_name(pattern: str, exclude: list[str], where: Path) -> str:
    """`capture.name_pattern` gives a plain file name of the divergent layer."""
    name = pattern.replace("{date}", "2026-11-28")
    name = name if name.endswith(".md") else name + ".md"
    problem = "it names a folder" if "/" in name else relative_path_problem(name)
    if problem is None and any_glob(exclude)(name):  # as the listing leaves notes out
        problem = "divergent.exclude leaves it out, so it would never be scanned"
    if problem:
        raise ConfigError(
            f"{where}: setting 'capture.name_pattern' must give a plain note name, not {pattern!r} ({problem})."
        )
    return pattern


def parse_config_text(text: str, where: Path) -> Config:
    """A config file's text validated as `load_config` validates it on disk (`where` names it)."""
    return parse_config(_yaml_load(text, where), where)


def load_config(vault_root: Path) -> Config:
    path = vault_root / CONFIG_DIR / CONFIG_FILE
    try:
        text = path.read_text("utf-8-sig")
    except FileNotFoundError:
        return parse_config({}, path)
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text.") from None
    from cmem.vault.config_cache import parsed_yaml

    # the parse of this exact text is stored: `import yaml` and the parse cost more than a warm status
    return parse_config(parsed_yaml(text, lambda text: _yaml_load(text, path)), path)


# --- user-level settings ---------------------------------------------------------------


def user_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "cmem" / "config.yaml"


def load_user_config() -> dict:
    """The user's settings as a mapping (`{}` when there is no file)."""
    path = user_config_path()
    try:
        text = path.read_text("utf-8-sig")
    except FileNotFoundError:
        return {}
    data = _yaml_load(text, path) or {}
    _validate(data, "user", path)
    return data


def default_config_text(
    language: str, sessions_folder: str = "sessions", extra_folders: tuple[str, ...] = ()
) -> str:
    """The commented `.cmem/config.yaml` that `cmem init` writes: `extra_folders`, more divergent
    folders (a daily-notes folder), listed before the session notes' folder."""
    import json

    lang = LANGUAGE_DEFAULTS[language]
    folders = ", ".join(
        json.dumps(f, ensure_ascii=False) for f in (*extra_folders, sessions_folder)
    )
    return f"""\
# cmem vault settings. Every key is optional; see README.md, "Configuration".
# Validated against cmem's vault_schema/config.schema.json: an unknown key is an error.
version: 1
language: {language}            # prompts, source/trace formats, new files: zh or en

layers:                   # folder names are yours; their meaning is fixed
  resident: converged/core        # read at the start of every session
  situational: converged/topics   # recalled by topic
  archive: archive                # converged sources; never read by default

divergent:                # the root's *.md files are the divergent layer (the input queue)
  extra_folders: [{folders}]   # e.g. daily for a daily-notes folder; journal/** for a folder and its subfolders
  exclude: [README.md, AGENTS.md, CLAUDE.md]

ignore: []                # globs cmem never reads, e.g. ["private/**"]

signals:
  cues:                   # extra cues, added to the built-in zh and en ones
    correction: []
    preference: []
    decision: []
    recurring: []
  min_recurrence: 2       # notes a key phrase must appear in to count as a recurring pattern

budget_tokens: 12000      # prompt budget of a pass; default budget of `cmem context`
resident_max_tokens: 4000 # size cap of the resident sublayer
situational_max_tokens: 3000 # size cap of each situational (topic) file
min_interval_minutes: 60  # `--if-due`: minimum time between passes
schedule_hours: 24        # `--if-due --scheduled`: minimum time between timer passes
repair_rounds: 2          # times an invalid model response is sent back with its errors
review: false             # true: passes only propose, `cmem apply` applies

llm:
  command: null           # e.g. "llm -n -m gpt-4o-mini"; a command set here runs only after `cmem trust`
  timeout_seconds: 600

formats:
  source: "{lang["source"]}"
  trace: "{lang["trace"]}"

archive:
  pattern: "{{yyyy}}-{{mm}}/{{name}}"   # inside the archive folder; the note's own date, its folder kept above {{name}} (or at {{folder}})
  checklist: ARCHIVE-CHECKLIST.md

capture:
  name_pattern: "{lang["capture"]}"   # `cmem note` appends to this note, when no daily note is kept
  daily_note: true          # `cmem note` writes into today's daily note where Obsidian's settings keep one
  heading: ""               # e.g. "## Log": the heading `cmem note` writes under (added when missing)

git:
  allow_parent_repo: false  # never commit into a repository above the vault unless true
  remote: null              # the remote `cmem sync` uses; null: the branch's upstream
  sync: off                 # auto: every pass, archive apply and undo syncs before and after
  sync_note: false          # with sync: auto, `cmem note` syncs too (a network round trip per note)
  track_all: false          # true: every file of the vault is committed (your choice at `cmem init`), not only cmem's layers

recall:
  include_unmanaged: true  # false: `cmem recall` leaves out the notes no layer reads (memory and divergent notes only)

sessions:                 # agent sessions (`cmem capture`, `cmem hook install --agent …`)
  folder: {json.dumps(sessions_folder, ensure_ascii=False)}   # a divergent folder: listed in divergent.extra_folders above
  include: []             # globs on a session's working folder, e.g. ["~/work/**"]; empty: all
  exclude: []             # globs whose sessions are never captured, e.g. ["~/private/**"]
  max_turn_chars: 4000    # a longer user turn (a pasted log) is cut in the middle, with a marker
"""


def model_configured(vault, flag: str | None = None) -> bool:
    """Whether a model command is named anywhere (flag, $CMEM_LLM, the user's config, the
    vault's), trusted or not: what a pass selects depends on whether a model will read the notes
    (the builtin engine reads cue lines only), and an untrusted command is refused later, by name."""
    if flag and flag.strip():
        return True
    if os.environ.get("CMEM_LLM", "").strip():
        return True
    from_user = (load_user_config().get("llm") or {}).get("command")
    return bool((from_user and from_user.strip()) or (vault.config.llm_command or "").strip())
