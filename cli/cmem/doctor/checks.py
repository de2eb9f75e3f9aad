"""`cmem doctor`: what is wrong with this vault, and how to fix it (docs/design.md §9).

Checks the config, the user config, frontmatter of every managed note, broken source links in
the convergent layer, the git state, locks, odd files, and whether the vault sits in a folder a
sync client manages (a synced `.git` is a corruption risk: sync vaults through a git remote).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from cmem.errors import CmemError
from cmem.steps import commits as history
from cmem.steps.lock import is_locked, lock_path, read_holder
from cmem.text.folding import nfc
from cmem.text.tokens import estimate_tokens
from cmem.vault.layers import ARCHIVE, DIVERGENT, LAYERS, RESIDENT, SITUATIONAL, Vault
from cmem.vault.notes import (
    LINKED_FOLDER,
    check_frontmatter,
    find_odd_names,
    find_undecodable_names,
    odd_from_note,
    read_note,
)
from cmem.vault.statements import parse_statements

# NOTE: not a problem, said so it is never hidden (notes waiting)
OK, NOTE, WARN, ERROR = "ok", "note", "warn", "error"

_SYNC_MARKERS = (
    ("Dropbox", "Dropbox"),
    ("Mobile Documents", "iCloud Drive"),
    ("iCloud", "iCloud Drive"),
    ("OneDrive", "OneDrive"),
    ("Google Drive", "Google Drive"),
    ("GoogleDrive", "Google Drive"),
    ("pCloud", "pCloud"),
    ("Nextcloud", "Nextcloud"),
    ("ownCloud", "ownCloud"),
)


@dataclass(frozen=True)
class Finding:
    level: str  # ok | note | warn | error
    check: str
    message: str
    file: str | None = None

    def to_json(self) -> dict:
        return {
            "level": self.level,
            "check": self.check,
            "message": self.message,
            "file": self.file,
        }


def run_doctor(vault: Vault) -> list[Finding]:
    findings: list[Finding] = []
    findings += _check_user_config()
    findings += _check_layout(vault)
    findings += _check_notes(vault)
    findings += _check_sources(vault)
    findings += _check_lookalikes(vault)
    findings += _check_git(vault)
    findings += _check_writable(vault)
    findings += _check_lock(vault)
    findings += _check_leftovers(vault)
    findings += _check_sync(vault)
    findings += _check_remote(vault)
    findings += _check_state(vault)
    findings += _check_unattended(vault)
    findings += _check_failed_pass(vault)
    findings += _check_unmanaged(vault)
    findings += _check_pending(vault)
    return findings


def _check_pending(vault: Vault) -> list[Finding]:
    """What waits, and why (docs/design.md §2): not a problem, but never hidden behind "all
    clear"."""
    from cmem.reading.waiting import account_waiting
    from cmem.render.reports import waiting_lines
    from cmem.scan.scanner import scan_vault
    from cmem.vault.config import model_configured

    try:
        scan = scan_vault(vault)
    except CmemError:
        return []  # the state or a setting is broken: its own check names it
    waiting = account_waiting(vault, scan, model_configured(vault)).to_json()
    held = [
        Finding(WARN, "quarantined", f"{q.note}: {q.reason}; {q.way_out}", q.note)
        for q in scan.quarantined
    ]
    if not waiting["notes"] and not waiting["backlog"]["notes"]:
        return held or [Finding(OK, "pending", "nothing pending")]
    lines = [line for line in waiting_lines(waiting) if not line.startswith("quarantined: ")]
    return [Finding(NOTE, "pending", line) for line in lines] + held


def _check_unmanaged(vault: Vault) -> list[Finding]:
    """Notes no layer reads: an adopted vault's folders are not read until a setting says so."""
    from cmem.vault.unmanaged import find_unmanaged

    folders = find_unmanaged(vault)
    if not folders:
        return [Finding(OK, "unmanaged", "every note is in a layer")]
    from cmem.render.reports import plural

    total = sum(f.notes for f in folders)
    listed = "; ".join(
        f"{f.folder}/ ({f.notes}: {f.setting or 'in a layer folder, move them out'})"
        for f in folders[:8]
    )
    more = f"; and {len(folders) - 8} more folders" if len(folders) > 8 else ""
    return [
        Finding(
            WARN,
            "unmanaged",
            f"{plural(total, 'note')} in {plural(len(folders), 'folder')} {'is' if total == 1 else 'are'} outside every layer: cmem never "
            f"reads, converges or recalls them. To include a folder, add it to the config: {listed}{more}",
        )
    ]


def _check_user_config() -> list[Finding]:
    from cmem.vault.config import load_user_config

    try:
        load_user_config()
    except CmemError as exc:
        return [Finding(ERROR, "user config", str(exc))]
    return [Finding(OK, "config", "vault and user settings are valid")]


def _check_layout(vault: Vault) -> list[Finding]:
    """Layer folders and the checklist as they are on disk: the settings were checked when the
    config loaded, but a folder committed as a symbolic link can still lead out of the vault."""
    findings = []
    folders = [(layer, vault.layer_folder(layer)) for layer in (RESIDENT, SITUATIONAL, ARCHIVE)]
    for layer, folder in folders + [(DIVERGENT, f) for f in vault.config.extra_divergent]:
        problem = vault.layer_folder_problem(layer, folder)
        if problem:
            # the problem names the link and the setting (the folder itself is, or is under, the link)
            findings.append(
                Finding(
                    ERROR,
                    "layers",
                    f"{folder}/ {problem}; cmem does not read or write through it "
                    "— make it a real folder inside the vault",
                    folder,
                )
            )
    if not any(f.file == vault.config.archive_dir for f in findings):
        problem = vault.path_problem(vault.checklist_rel, ARCHIVE)
        if problem:
            findings.append(
                Finding(
                    ERROR,
                    "layers",
                    f"{vault.checklist_rel} (setting 'archive.checklist') {problem}; "
                    "cmem will not write the checklist there",
                    vault.checklist_rel,
                )
            )
    if not findings:
        findings.append(Finding(OK, "layers", "every layer folder is a folder inside the vault"))
    return findings


def _check_notes(vault: Vault) -> list[Finding]:
    odd_names = [
        odd for odd in find_odd_names(vault) if odd.kind != LINKED_FOLDER
    ]  # `_check_layout` reports those
    known = {odd.rel for odd in odd_names}
    odd_names += [
        odd for odd in find_undecodable_names(vault) if odd.rel not in known
    ]  # unmanaged folders too
    findings = [
        Finding(WARN, "odd file", f"{odd.rel} {odd.message}", odd.rel)
        for odd in sorted(odd_names, key=lambda o: o.rel)
    ]
    checked = 0
    resident_tokens = 0
    for layer in LAYERS:
        for note_file in vault.list_layer(layer):
            note = read_note(note_file, vault.config.max_note_bytes)
            checked += 1
            for odd in odd_from_note(note):
                findings.append(Finding(WARN, "odd file", f"{odd.rel} {odd.message}", odd.rel))
            if note.usable and note.frontmatter is not None:
                error = check_frontmatter(note)
                if error:
                    findings.append(
                        Finding(
                            WARN,
                            "frontmatter",
                            f"{note.rel}: {error}; cmem reads it but never rewrites it",
                            note.rel,
                        )
                    )
            if layer == RESIDENT:
                resident_tokens += estimate_tokens(note.text)
    cap = vault.config.resident_max_tokens
    if resident_tokens > cap:
        findings.append(
            Finding(
                WARN,
                "resident size",
                f"the resident sublayer is {resident_tokens} tokens, over resident_max_tokens ({cap}); the next pass will be asked to compress",
            )
        )
    if not any(f.level != OK for f in findings):
        findings.append(
            Finding(OK, "notes", f"{checked} notes read; no odd files, every frontmatter parses")
        )
    return findings


def _check_sources(vault: Vault) -> list[Finding]:
    names = vault.note_names()
    findings = []
    statements = 0
    for note_file in vault.convergent_files():
        note = read_note(note_file, vault.config.max_note_bytes)
        if not note.usable:
            continue
        for statement in parse_statements(note.body, note.body_start, vault.config.formats):
            statements += 1
            for source in statement.sources:
                if source not in names:
                    findings.append(
                        Finding(
                            WARN,
                            "source",
                            f"{note.rel}:{statement.line_no}: source [[{source}]] resolves to no note",
                            note.rel,
                        )
                    )
            if not statement.sources:
                findings.append(
                    Finding(
                        WARN,
                        "source",
                        f"{note.rel}:{statement.line_no}: statement has no source",
                        note.rel,
                    )
                )
    if not findings:
        findings.append(Finding(OK, "sources", f"{statements} statements, every source resolves"))
    return findings


def _check_lookalikes(vault: Vault) -> list[Finding]:
    """Memory files a reader (or a case-insensitive file system) takes for one another, names
    not in NFC form, and memory files named like a note, which make `[[name]]` ambiguous. A pass
    refuses to create these (docs/design.md §5 rule 12); files made by hand are named here."""
    from cmem.converge.validator.allowed_paths import skeleton

    findings = []
    memory = sorted(f.rel for f in vault.convergent_files())
    by_shape: dict[str, list[str]] = {}
    for rel in memory:
        by_shape.setdefault(skeleton(rel), []).append(rel)
        if nfc(rel) != rel:
            findings.append(
                Finding(
                    WARN,
                    "look-alike",
                    f"{rel} is not in Unicode NFC form; a file with the same name in NFC would look identical — rename it",
                    rel,
                )
            )
    for group in by_shape.values():
        if len(group) > 1:
            findings.append(
                Finding(
                    WARN,
                    "look-alike",
                    f"{' and '.join(group)} differ only by case, Unicode form or look-alike characters; merge them into one file",
                    group[0],
                )
            )
    notes: dict[str, str] = {}
    for layer in (DIVERGENT, ARCHIVE):
        for note_file in vault.list_layer(layer):
            notes.setdefault(skeleton(note_file.name), note_file.rel)
    for rel in memory:
        note = notes.get(skeleton(rel.rsplit("/", 1)[-1].removesuffix(".md")))
        if note:
            findings.append(
                Finding(
                    WARN,
                    "look-alike",
                    f"{rel} is named like the note {note}; a source [[{rel.rsplit('/', 1)[-1].removesuffix('.md')}]] is ambiguous — rename the memory file",
                    rel,
                )
            )
    if not findings:
        findings.append(
            Finding(OK, "look-alike", "no memory file looks like another or like a note")
        )
    return findings


def _check_git(vault: Vault) -> list[Finding]:
    try:
        top = history.toplevel(vault.root)
    except CmemError as exc:
        return [Finding(ERROR, "git", str(exc))]
    if top is None:
        return [
            Finding(
                ERROR,
                "git",
                f"{vault.root} is not a git repository; run `cmem init` to make it one",
            )
        ]
    findings = []
    if top != vault.root.resolve():
        level = OK if vault.config.allow_parent_repo else ERROR
        findings.append(
            Finding(
                level,
                "git",
                f"the vault is inside the repository {top}"
                + (
                    ""
                    if level == OK
                    else "; cmem will not commit there unless git.allow_parent_repo is true"
                ),
            )
        )
    operation = history.operation_in_progress(top)
    if operation:
        findings.append(
            Finding(
                ERROR,
                "git",
                f"{operation} is in progress in {top}; finish or abort it before a pass",
            )
        )
    findings += _inspect_repository(top)
    if not findings:
        findings.append(
            Finding(OK, "git", "the vault is its own git repository, nothing in progress")
        )
    return findings


def _inspect_repository(top) -> list[Finding]:
    """The repository's own state, read through gitpython's object model (doctor is not on a hot
    path, and Repo answers these questions without parsing porcelain): no commits yet, a
    detached HEAD (a pass would commit onto no branch), a shallow clone (`cmem undo` and
    `cmem trace` need the history)."""
    import git

    try:
        repo = git.Repo(top)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
        return [
            Finding(
                ERROR, "git", f"{top} cannot be opened as a git repository ({type(exc).__name__})"
            )
        ]
    findings = []
    try:
        if not repo.head.is_valid():
            findings.append(Finding(WARN, "git", "the repository has no commits yet"))
        elif repo.head.is_detached:
            findings.append(
                Finding(
                    WARN,
                    "git",
                    f"HEAD is detached at {repo.head.commit.hexsha[:8]}; check out a branch (`git switch main`) before a pass",
                )
            )
        if (Path(repo.git_dir) / "shallow").exists():
            findings.append(
                Finding(
                    WARN,
                    "git",
                    "the repository is a shallow clone; `cmem undo` and `cmem trace` see only part of the history (`git fetch --unshallow`)",
                )
            )
    finally:
        repo.close()
    return findings


def _check_writable(vault: Vault) -> list[Finding]:
    """A read-only vault (a read-only disk or mount, folders made read-only): cmem reads it,
    and every step (a pass, archive apply, undo, sync) refuses before it writes anything."""
    from cmem.steps.preflight import unwritable_place
    from cmem.vault.layers import OWN_FILES

    linked = vault.own_files_problem(OWN_FILES)
    if linked:  # another vault's `.cmem/`, say: its state.json would be this vault's
        return [
            Finding(
                ERROR,
                "writable",
                f"{linked}; cmem reads through it, but no pass, archive apply, undo, capture or "
                "sync writes through it: replace the link with a folder (or file) of this vault's own",
            )
        ]
    place = unwritable_place(vault)
    if place:
        return [
            Finding(
                ERROR,
                "writable",
                f"the vault is read-only: {place}; cmem reads it, but no pass, archive apply, "
                "undo or sync can run until it is writable",
            )
        ]
    return [Finding(OK, "writable", "the vault and its git folder are writable")]


def _check_lock(vault: Vault) -> list[Finding]:
    if is_locked(vault.machine_dir):
        holder = read_holder(lock_path(vault.machine_dir)) or {}
        return [
            Finding(
                WARN,
                "lock",
                f"a pass is running (pid {holder.get('pid', '?')} since {holder.get('since', '?')})",
            )
        ]
    return [Finding(OK, "lock", "no pass is running")]


def _check_leftovers(vault: Vault) -> list[Finding]:
    """What an interrupted run left: a step journal (pass, archive apply, undo), git lock files (repair.py)."""
    from cmem.doctor.doctor_fix import find_leftovers

    return [
        Finding(
            WARN,
            "interrupted",
            leftover.message
            + (f"; `cmem doctor --fix` {leftover.action}" if leftover.fixable else ""),
            leftover.path,
        )
        for leftover in find_leftovers(vault)
        if leftover.kind != "state"  # `_check_state` names it
    ]


def _check_sync(vault: Vault) -> list[Finding]:
    root = vault.root.resolve()
    for folder in (root, *root.parents):
        if (folder / ".stfolder").exists():
            return [
                Finding(
                    WARN,
                    "sync",
                    f"the vault is inside a Syncthing folder ({folder}); a synced .git can be corrupted — sync the vault through a git remote, or exclude .git from sync",
                )
            ]
    text = str(root)
    for marker, service in _SYNC_MARKERS:
        if f"/{marker}" in text:
            return [
                Finding(
                    WARN,
                    "sync",
                    f"the vault seems to be inside {service} ({root}); a synced .git can be corrupted — sync the vault through a git remote",
                )
            ]
    return [Finding(OK, "sync", "the vault is not inside a known sync folder")]


def _check_remote(vault: Vault) -> list[Finding]:
    """`cmem sync`'s settings, checked without the network: the remote it would use exists."""
    if vault.config.sync_mode != "auto" and not vault.config.sync_remote:
        return []  # sync is not configured: nothing to check
    from cmem.errors import CmemError
    from cmem.sync.remote import resolve_target

    try:
        target = resolve_target(vault)
    except CmemError as exc:
        level = WARN if vault.config.sync_mode == "auto" else OK
        return [
            Finding(
                level,
                "sync",
                f"`cmem sync` cannot run: {str(exc).rstrip('.')}"
                + ("; git.sync: auto syncs nothing meanwhile" if level == WARN else ""),
            )
        ]
    auto = " (git.sync: auto — around every step)" if vault.config.sync_mode == "auto" else ""
    return [Finding(OK, "sync", f"`cmem sync` uses {target.remote}/{target.branch}{auto}")]


def _check_unattended(vault: Vault) -> list[Finding]:
    """Report unattended failures, and reset the count: running doctor is a person looking, so
    stopped hooks and timers may try again (docs/design.md §7)."""
    from cmem.triggers.if_due import FAILURE_LIMIT, reset_failures

    record = reset_failures(vault)
    if not record.failures:
        return [Finding(OK, "unattended", "no unattended pass has failed lately")]
    stopped = (
        f"were stopped after {record.failures} failures in a row"
        if record.stopped
        else f"failed {record.failures} time(s) in a row (they stop at {FAILURE_LIMIT})"
    )
    return [
        Finding(
            WARN,
            "unattended",
            f"unattended passes {stopped}; last, {record.last_failure}: {record.last_error} — the count is now reset, so the next trigger tries again",
        )
    ]


def _check_failed_pass(vault: Vault) -> list[Finding]:
    """This machine's last pass that failed or was refused, until a later pass succeeds."""
    from cmem.steps.run_records import failed_pass
    from cmem.vault.state_json import load_state

    try:
        found = failed_pass(vault, load_state(vault.state_file))
    except CmemError:
        return []  # `_check_state` names the state file
    if found is None:
        return [Finding(OK, "failed pass", "no pass has failed since the last one that succeeded")]
    reason = " ".join(str(found.get("reason") or "").split())
    return [
        Finding(
            WARN,
            "failed pass",
            f"the last pass {found.get('id')} {found.get('status')} at {found.get('time')}: "
            f"{reason} — its run record is {found.get('run')} (`cmem log` lists it); the next pass "
            "that succeeds clears this",
        )
    ]


def _check_state(vault: Vault) -> list[Finding]:
    from cmem.steps.state_file import way_out, working_problem
    from cmem.vault.state_json import load_state

    rel = vault.rel(vault.state_file)
    try:
        problem = working_problem(vault)
    except CmemError:
        problem = None  # no repository: `_check_git` says so
    if problem:  # missing where git has it, empty, broken: every step refuses it
        return [
            Finding(
                ERROR,
                "state",
                f"{rel} {problem}: every step refuses to run on it (the notes it records would be "
                f"converged again); {way_out(vault)}",
                rel,
            )
        ]
    try:
        state = load_state(vault.state_file)
    except CmemError as exc:
        return [Finding(ERROR, "state", str(exc), rel)]
    found = [
        Finding(
            OK,
            "state",
            f"state.json is valid: {len(state.notes)} converged notes, {len(state.passes)} passes",
        )
    ]
    # cmem moves a note's entry with the note (archive apply, undo); one at a missing path was
    # moved or deleted by hand — harmless for cmem, but the note's history is there no longer
    missing = [rel for rel in state.notes if not os.path.lexists(vault.root / rel)]
    if missing:
        shown = ", ".join(missing[:5]) + (
            f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        )
        found.append(
            Finding(
                WARN,
                "state",
                f"state.json names {len(missing)} converged note{'s' if len(missing) != 1 else ''} "
                f"that no longer exist at their path ({shown}): moved or deleted by hand?",
                vault.rel(vault.state_file),
            )
        )
    return found
