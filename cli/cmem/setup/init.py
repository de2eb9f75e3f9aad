"""`cmem init`: make a folder a vault, or adopt an existing one (an Obsidian vault) without
moving or rewriting a single existing file (SPEC §1)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from cmem.steps import commits as history
from cmem.atomic import write_atomic
from cmem.archive.checklist import checklist_header
from cmem.vault.config import CONFIG_DIR, CONFIG_FILE, default_config_text, load_config
from cmem.errors import CmemError, UsageError

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


def init_vault(path: Path, language: str = "zh", repo: str | None = None) -> InitReport:
    if language not in ("zh", "en"):
        raise UsageError(f"--lang must be zh or en, not {language!r}.")
    if repo is not None and repo not in REPO_CHOICES:
        raise UsageError(f"--repo must be one of {', '.join(REPO_CHOICES)}, not {repo!r}.")
    root = Path(path).expanduser()
    if root.exists() and not root.is_dir():
        raise CmemError(f"{root} exists and is not a folder.")
    probe = root
    while not probe.exists():
        probe = probe.parent
    parent = history.toplevel(probe.resolve())
    target = root.resolve()
    if parent is not None and parent != target and not (root / CONFIG_DIR).is_dir() and repo is None:
        raise ParentRepoChoiceNeeded(target, parent)  # before creating anything
    root.mkdir(parents=True, exist_ok=True)
    root = root.resolve()
    report = InitReport(root=root)

    if parent is not None and parent != root:
        existing_config = root / CONFIG_DIR / CONFIG_FILE
        allowed = existing_config.exists() and load_config(root).allow_parent_repo
        if repo is None and not allowed:
            raise ParentRepoChoiceNeeded(root, parent)
        if repo == "parent" or (repo is None and allowed):
            report.repository = "parent"
        else:
            parent = None  # "own": a nested repository of its own
    elif parent == root:
        report.repository = "existing"

    config_path = root / CONFIG_DIR / CONFIG_FILE
    if not config_path.exists():
        text = default_config_text(language)
        if report.repository == "parent":
            text = text.replace("allow_parent_repo: false", "allow_parent_repo: true")
        _create(root, f"{CONFIG_DIR}/{CONFIG_FILE}", text, report)
    config = load_config(root)  # validates an existing config too
    _create(root, f"{CONFIG_DIR}/state.json", '{\n "version": 1,\n "notes": {},\n "passes": []\n}\n', report)
    for folder in (config.resident_dir, config.situational_dir, config.archive_dir):
        if not (root / folder).is_dir():
            (root / folder).mkdir(parents=True)
            report.created.append(folder + "/")
    _create(root, f"{config.archive_dir}/{config.checklist_name}", checklist_header(config.language), report)

    owned = [f"{CONFIG_DIR}/{CONFIG_FILE}", f"{CONFIG_DIR}/state.json", f"{config.archive_dir}/{config.checklist_name}"]
    if not report.repository:
        history.init_repo(root)
        report.repository = "created"
    if (root / ".gitignore").exists():
        _extend_info_exclude(root, report)
    else:
        _create(root, ".gitignore", "\n".join(GITIGNORE_LINES) + "\n", report)
    if (root / ".gitignore").exists() and ".gitignore" in report.created:
        owned.append(".gitignore")

    report.commit = history.commit_files(root, {}, "cmem: init vault\n\nFiles cmem owns: " + ", ".join(owned), from_disk=owned)
    return report


def _create(root: Path, rel: str, text: str, report: InitReport) -> None:
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
        body = current + ("" if current.endswith("\n") or not current else "\n") + "\n".join([GITIGNORE_LINES[0], *wanted]) + "\n"
        write_atomic(exclude, body)
        report.notes.append(f"your .gitignore is unchanged; cmem's patterns ({', '.join(wanted)}) went to .git/info/exclude")
