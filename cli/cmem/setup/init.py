"""`cmem init`: make a folder a vault, or adopt an existing one (an Obsidian vault) without
moving or rewriting a single existing file (docs/design.md §1)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cmem.archive.checklist import checklist_header
from cmem.atomic import write_atomic
from cmem.errors import CmemError, UsageError
from cmem.steps import commits as history
from cmem.text.scripts import han_count
from cmem.vault.config import CONFIG_DIR, CONFIG_FILE, Config, default_config_text, load_config

GITIGNORE_LINES = (
    "# cmem: Obsidian's per-device UI state and caches stay out of the history",
    ".obsidian/workspace*",
    ".obsidian/cache",
    ".trash/",
    ".DS_Store",
    "*.cmem-tmp",
)

REPO_CHOICES = ("own", "parent")


class ParentRepoChoiceNeeded(UsageError):
    """The folder is inside another repository; the user must choose."""

    def __init__(self, folder: Path, parent: Path):
        self.folder, self.parent = folder, parent
        super().__init__(
            f"{folder} is inside the git repository {parent}; cmem never commits into a parent repository by "
            "accident. Choose: `--repo own` makes the vault its own repository (nested inside the parent), "
            "`--repo parent` lets cmem commit into the parent (recorded as git.allow_parent_repo in the config)."
        )


@dataclass
class InitReport:
    root: Path
    created: list[str] = field(default_factory=list)  # vault-relative paths cmem created
    repository: str = ""  # "created", "existing", "parent"
    commit: str | None = None
    notes: list[str] = field(default_factory=list)  # things the user should know

    @property
    def changed(self) -> bool:
        return bool(self.created or self.commit)


@dataclass(frozen=True)
class LanguageGuess:
    language: str  # zh | en
    reason: str  # for the report: "from your notes: 40 of 45 mostly in English"
    sure: bool  # False: the CLI asks on a terminal


_LATIN = re.compile(r"[A-Za-z]")
_SKIP_DIRS = {".git", ".obsidian", ".cmem", ".trash", "node_modules"}
MAX_LANGUAGE_NOTES = 400  # enough to know; an adopted vault may hold thousands


def guess_language(root: Path, environ: Mapping[str, str] | None = None) -> LanguageGuess:
    """The vault's language: the script most of its existing notes are written in (a Han
    character counts as much as four Latin letters: about one word), else the locale, else en."""
    counts = {"zh": 0, "en": 0}
    for note in _existing_notes(Path(root)):
        try:
            text = note.read_text("utf-8", errors="replace")[:20000]
        except OSError:
            continue
        han, latin = han_count(text), len(_LATIN.findall(text))
        if han + latin < 20:
            continue  # too short to say
        counts["zh" if han * 4 >= latin else "en"] += 1
    total = counts["zh"] + counts["en"]
    if total:
        language = "zh" if counts["zh"] > counts["en"] else "en"
        name = {"zh": "Chinese", "en": "English"}[language]
        sure = total >= 3 and counts[language] >= 0.7 * total
        return LanguageGuess(
            language, f"from your notes: {counts[language]} of {total} mostly in {name}", sure
        )
    environ = os.environ if environ is None else environ
    locale = next(
        (environ[key] for key in ("LC_ALL", "LC_MESSAGES", "LANG") if environ.get(key)), ""
    )
    if locale and locale.split(".")[0] not in ("C", "POSIX"):
        language = "zh" if locale.lower().startswith("zh") else "en"
        return LanguageGuess(
            language, f"from your locale ({locale}); the folder has no notes yet", True
        )
    return LanguageGuess("en", "no notes and no locale to go by", False)


def _existing_notes(root: Path):
    found = 0
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(names):
            if name.endswith(".md"):
                yield Path(folder) / name
                found += 1
                if found >= MAX_LANGUAGE_NOTES:
                    return


def daily_notes_entries(root: Path) -> list[tuple[str, int]]:
    """The daily-notes folders Obsidian's settings name, as divergent.extra_folders entries
    (`folder/**` when notes sit in subfolders, or the name format makes them: `YYYY/MM/…`), with
    how many notes each holds — an empty or missing folder too, a new vault's usual state. A
    templates folder, or one a layer of cmem's takes, is never offered."""
    from cmem.vault.config import DEFAULTS, folder_overlap
    from cmem.vault.obsidian import (
        daily_notes,
        daily_notes_folders,
        is_template_folder,
        template_folders,
    )

    root = Path(root)
    settings = daily_notes(root)
    templates = template_folders(root)
    layers = list(DEFAULTS["layers"].values())
    entries = []
    for folder in daily_notes_folders(root):
        if is_template_folder(folder, templates) or any(
            folder_overlap(folder, layer) for layer in layers
        ):
            continue
        base = root / folder
        if base.is_symlink() or (base.exists() and not base.is_dir()):
            continue
        notes = [
            p
            for p in (base.rglob("*.md") if base.is_dir() else ())
            if not any(part.startswith(".") for part in p.relative_to(base).parts)
        ]
        nested = any(p.parent != base for p in notes) or (
            settings is not None and settings.folder == folder and _makes_folders(settings.format)
        )
        entries.append((f"{folder}/**" if nested else folder, len(notes)))
    return entries


def _makes_folders(moment_format: str) -> bool:
    """Whether a daily-notes name format puts notes in folders (`YYYY/MM/YYYY-MM-DD`)."""
    return "/" in re.sub(r"\[[^\]]*\]", "", moment_format).strip("/")


def holds_user_files(path: Path) -> bool:
    """Whether a folder being adopted holds anything of the user's — a note, an attachment, or a
    folder of them (a real Obsidian vault often keeps every note in folders): then `cmem init`
    asks whether to track the whole vault in git. Hidden entries (.obsidian, .git) do not count."""
    try:
        return any(not entry.name.startswith(".") for entry in path.iterdir())
    except OSError:
        return False


def init_vault(
    path: Path,
    language: str = "zh",
    repo: str | None = None,
    divergent_folders: list[str] | None = None,
    track_all: bool = False,
) -> InitReport:
    """Make `path` a vault. `divergent_folders`: extra divergent folders for a new config (the
    daily-notes folder `cmem init` found and the user accepted). `track_all`: the user chose to
    keep the whole vault in git — recorded as git.track_all, and every file is committed now."""
    if language not in ("zh", "en"):
        raise UsageError(f"--lang must be zh or en, not {language!r}.")
    if repo is not None and repo not in REPO_CHOICES:
        raise UsageError(f"--repo must be one of {', '.join(REPO_CHOICES)}, not {repo!r}.")
    root = Path(path).expanduser()
    if root.exists() and not root.is_dir():
        raise CmemError(f"{root} exists and is not a folder.")
    parent = _enclosing_repository(root, repo)
    _refuse_blocked_paths(root, _planned_config(root, language, divergent_folders))
    root.mkdir(parents=True, exist_ok=True)
    root = root.resolve()
    _refuse_linked_own_files(root)
    report = InitReport(root=root)
    _choose_repository(root, parent, repo, report)

    new_config = not (root / CONFIG_DIR / CONFIG_FILE).exists()
    if new_config:
        _write_new_config(root, language, divergent_folders, track_all, report)
    config = load_config(root)  # validates an existing config too
    _create(root, f"{CONFIG_DIR}/state.json", _first_state(root, config), report)
    _create_named_folders(root, config, new_config, report)
    _create(
        root,
        f"{config.archive_dir}/{config.checklist_name}",
        checklist_header(config.language),
        report,
    )

    owned = [
        f"{CONFIG_DIR}/{CONFIG_FILE}",
        f"{CONFIG_DIR}/state.json",
        f"{config.archive_dir}/{config.checklist_name}",
    ]
    if f"{CONFIG_DIR}/state.json" in report.created:
        owned.append(_record_adopted_backlog(root, config, report))
    owned += _prepare_repository(root, report)
    message = "cmem: init vault\n\nFiles cmem owns: " + ", ".join(owned)
    if track_all and report.repository != "parent" and load_config(root).track_all:
        owned, message = _adopt_user_files(root, owned, message, report)
    report.commit = history.commit_files(root, {}, message, from_disk=owned)
    return report


def _enclosing_repository(root: Path, repo: str | None) -> Path | None:
    """The git repository above the folder, refused before anything is created when the user has
    not chosen between it and a repository of the vault's own."""
    probe = root
    while not probe.exists():
        probe = probe.parent
    parent = history.toplevel(probe.resolve())
    target = root.resolve()
    if (
        parent is not None
        and parent != target
        and not (root / CONFIG_DIR).is_dir()
        and repo is None
    ):
        raise ParentRepoChoiceNeeded(target, parent)  # before creating anything
    return parent


def _choose_repository(
    root: Path, parent: Path | None, repo: str | None, report: InitReport
) -> None:
    """Record in the report whether the vault lives in the enclosing repository or its own."""
    if parent is not None and parent != root:
        existing_config = root / CONFIG_DIR / CONFIG_FILE
        allowed = existing_config.exists() and load_config(root).allow_parent_repo
        if repo is None and not allowed:
            raise ParentRepoChoiceNeeded(root, parent)
        if repo == "parent" or (repo is None and allowed):
            report.repository = "parent"
        # otherwise "own": a nested repository of its own, made later
    elif parent == root:
        report.repository = "existing"


def _write_new_config(
    root: Path,
    language: str,
    divergent_folders: list[str] | None,
    track_all: bool,
    report: InitReport,
) -> None:
    """The first config.yaml, saying what it reads and where captured sessions go."""
    sessions = _sessions_folder(root)
    text = default_config_text(language, sessions, tuple(divergent_folders or ()))
    if divergent_folders:
        report.notes.append(
            f"reads {', '.join(divergent_folders)} as divergent notes (Obsidian's daily-notes setting); "
            "change divergent.extra_folders in .cmem/config.yaml to stop"
        )
    report.notes.append(
        f"agent sessions you capture (`cmem capture`, `cmem hook install --agent …`) become notes in "
        f"{sessions}/; a vault synced to a remote carries them to it (sessions.exclude keeps a project out)"
    )
    if report.repository == "parent":
        text = text.replace("allow_parent_repo: false", "allow_parent_repo: true")
    elif track_all:
        text = text.replace("  track_all: false ", "  track_all: true  ", 1)
    _create(root, f"{CONFIG_DIR}/{CONFIG_FILE}", text, report)


def _create_named_folders(root: Path, config: Config, new_config: bool, report: InitReport) -> None:
    """Every folder the config names exists (a watcher would look for it); the divergent ones
    only for a config written now: adopting a vault again creates nothing of the user's."""
    folders = [config.resident_dir, config.situational_dir, config.archive_dir]
    folders += list(config.extra_divergent) if new_config else []
    for folder in folders:
        if not (root / folder).is_dir() and not (root / folder).is_symlink():
            (root / folder).mkdir(parents=True)
            report.created.append(folder + "/")


def _record_adopted_backlog(root: Path, config: Config, report: InitReport) -> str:
    """The notes a first init finds become the backlog; returns the file cmem now owns."""
    adopted = _record_backlog(root, config)
    report.created.append(f"{CONFIG_DIR}/backlog.json")
    if adopted:
        report.notes.append(
            f"{adopted} existing notes are the backlog (.cmem/backlog.json): a pass reads only "
            "their cue lines; `cmem status` shows the rest's size, `cmem converge --backlog` "
            "converges it when you ask"
        )
    return f"{CONFIG_DIR}/backlog.json"


def _prepare_repository(root: Path, report: InitReport) -> list[str]:
    """A repository when the vault has none, and cmem's ignore lines; returns the files it owns."""
    if not report.repository:
        history.init_repo(root)
        report.repository = "created"
    if (root / ".gitignore").exists():
        _extend_info_exclude(root, report)
    else:
        _create(root, ".gitignore", "\n".join(GITIGNORE_LINES) + "\n", report)
    if (root / ".gitignore").exists() and ".gitignore" in report.created:
        return [".gitignore"]
    return []


def _adopt_user_files(
    root: Path, owned: list[str], message: str, report: InitReport
) -> tuple[list[str], str]:
    """git.track_all: the user's files join the first commit, as git sees them (.gitignore applies)."""
    listed = history.run_git(
        root, "ls-files", "--others", "--modified", "--exclude-standard", "-z", check=False
    ).stdout
    theirs = sorted({p for p in listed.split("\0") if p and p not in owned})
    if not theirs:
        return owned, message
    report.notes.append(
        f"the whole vault is tracked in git (git.track_all: true): {len(theirs)} of your files committed as they are"
    )
    message = (
        f"cmem: init vault, first commit of {len(theirs)} adopted files\n\nFiles cmem owns: "
        + ", ".join(owned)
    )
    return owned + theirs, message


def _refuse_linked_own_files(root: Path) -> None:
    """`.cmem/` (or a file in it) linked out of the vault: init would write another vault's."""
    from cmem.steps.preflight import own_files_sentence
    from cmem.vault.layers import OWN_FILES, PathRefused, own_files_problem

    problem = own_files_problem(root, OWN_FILES)
    if problem:
        raise PathRefused(own_files_sentence(problem, "init did nothing"))


def _record_backlog(root: Path, config) -> int:
    """An adopted folder's divergent notes, recorded as the backlog (`vault/backlog.py`) with the
    folders they were read from (a new vault's too: folders widened later are told by them):
    they are not pending all at once. Returns how many."""
    from datetime import datetime

    from cmem.vault.backlog import input_folders, write_backlog
    from cmem.vault.layers import DIVERGENT, Vault

    notes = {}
    for file in Vault(root=root, config=config).list_layer(DIVERGENT):
        try:
            notes[file.rel] = Path(file.location).read_bytes()
        except OSError:
            continue  # unreadable now: it is simply pending once it can be read
    adopted = datetime.now().astimezone().isoformat("T", "seconds")
    return write_backlog(root / CONFIG_DIR, notes, adopted, input_folders(config))


def _planned_config(root: Path, language: str, divergent_folders: list[str] | None):
    """The config init will work with, read or made without writing anything: the folder's own
    (validated), else the one it would write."""
    if (root / CONFIG_DIR / CONFIG_FILE).is_file():
        return load_config(root)
    from cmem.vault.config import parse_config_text

    text = default_config_text(language, "sessions", tuple(divergent_folders or ()))
    return parse_config_text(text, root / CONFIG_DIR / CONFIG_FILE)


def _refuse_blocked_paths(root: Path, config) -> None:
    """Before init writes anything: every folder it makes or writes into is a folder (or not
    there yet), and every file it writes is not a folder. A file named `archive` made init stop
    half-done, leaving `.cmem/` and no repository, and again on every run after."""
    files = [
        f"{CONFIG_DIR}/{CONFIG_FILE}",
        f"{CONFIG_DIR}/state.json",
        f"{CONFIG_DIR}/backlog.json",
        f"{config.archive_dir}/{config.checklist_name}",
        ".gitignore",
    ]
    folders = [config.resident_dir, config.situational_dir, config.archive_dir]
    folders += [rel.rpartition("/")[0] for rel in files if "/" in rel]
    for folder in folders:
        parts = folder.split("/")
        for end in range(1, len(parts) + 1):
            path = root / "/".join(parts[:end])
            if not os.path.lexists(path):
                break
            if not path.is_dir():
                raise CmemError(
                    f"{os.path.abspath(path)} is a file where cmem init makes the folder {folder}/; move or rename "
                    "it, then run `cmem init` again (nothing was written)."
                )
    for rel in files:
        if (root / rel).is_dir() and not (root / rel).is_symlink():
            raise CmemError(
                f"{os.path.abspath(root / rel)} is a folder where cmem init writes a file; move or rename it, then "
                "run `cmem init` again (nothing was written)."
            )


def _sessions_folder(root: Path) -> str:
    """`sessions`, unless the folder being adopted already has a `sessions/` of its own notes:
    cmem never reads a user's folder as its own, so it takes a name nothing holds yet."""
    for name in ("sessions", "agent-sessions", "cmem-sessions"):
        folder = root / name
        if not folder.exists() or (folder.is_dir() and not any(folder.iterdir())):
            return name
    return "cmem-sessions-" + os.urandom(2).hex()


def _first_state(root: Path, config) -> str | bytes:
    """An empty state for a new vault; for a vault whose state.json was deleted, git's copy:
    an init that adopts the folder again must not make every converged note pending."""
    empty = '{\n "version": 1,\n "notes": {},\n "passes": []\n}\n'
    if (root / CONFIG_DIR / "state.json").exists():
        return empty  # kept as it is (`_create`)
    from cmem.steps.pass_log import read_blob
    from cmem.steps.state_file import problem
    from cmem.vault.layers import Vault

    kept = read_blob(Vault(root=root, config=config), "HEAD", f"{CONFIG_DIR}/state.json")
    return kept if kept is not None and problem(kept) is None else empty


def _create(root: Path, rel: str, text: str | bytes, report: InitReport) -> None:
    """Write a file only if it does not exist: adopting a folder never rewrites a user's file."""
    path = root / rel
    if path.exists() or path.is_symlink():
        return
    write_atomic(path, text)
    report.created.append(rel)


def _extend_info_exclude(root: Path, report: InitReport) -> None:
    """The user has a .gitignore of their own: leave it as it is and put cmem's patterns in the
    repository-local exclude file instead."""
    have = set((root / ".gitignore").read_text("utf-8", errors="replace").splitlines())
    missing = [line for line in GITIGNORE_LINES[1:] if line not in have]
    if not missing:
        return
    exclude = history.git_dir(root) / "info" / "exclude"
    current = exclude.read_text("utf-8", errors="replace") if exclude.exists() else ""
    wanted = [line for line in missing if line not in current.splitlines()]
    if wanted:
        body = (
            current
            + ("" if current.endswith("\n") or not current else "\n")
            + "\n".join([GITIGNORE_LINES[0], *wanted])
            + "\n"
        )
        write_atomic(exclude, body)
        report.notes.append(
            f"your .gitignore is unchanged; cmem's patterns ({', '.join(wanted)}) went to .git/info/exclude"
        )
