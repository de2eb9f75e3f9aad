"""Files and vaults that cannot be written (issue 35).

A memory file (or any file a step would replace or remove) made read-only — mode 0444 — is
refused, naming it, before anything of the step is written: a rename replaced it anyway, since
only its folder's write bit counts for a rename. A read-only vault (its `.git` or its folders on
a read-only file system) is said in one sentence naming the real cause and what was and was not
done, instead of git's "Unable to add <an innocent note> to database"; `cmem doctor` reports it.

How the read-only vault is made: these tests run as root here, and chmod does not stop root, so
the vault is bind-mounted read-only over itself (`mount --bind -o ro`) inside a private mount
namespace (`unshare -m`, or `unshare -rm` for a user without root), and cmem runs in it as a real
process: the kernel answers EROFS to git and to cmem alike, as it does for a vault on a read-only
disk. Where no mount namespace can be made, a user without root gets the same refusal from
`chmod -R a-w` (EACCES); else the test is skipped, saying why."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from cmem.vault.layers import open_vault
from support import git, run_cmem
from trigger_helpers import pass_commits, trigger_vault

PROFILE = "converged/core/profile.md"
MORE = "2026-12-01 more.md"
MORE_TEXT = "- Actually, I prefer tea over coffee in the morning.\n"


def converged_vault(make_vault):
    """A vault after one builtin pass (profile.md written and committed), a new note pending."""
    root = trigger_vault(make_vault)
    done = run_cmem("--vault", str(root), "converge", "--engine", "builtin", "--quiet")
    assert done.returncode == 0, done.stderr
    assert (root / PROFILE).is_file()
    (root / MORE).write_text(MORE_TEXT, "utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a new note")
    return root


def files(root) -> dict[str, tuple[bytes, int]]:
    found = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            path = os.path.join(folder, name)
            found[os.path.relpath(path, root)] = (
                Path(path).read_bytes(),
                stat.S_IMODE(os.lstat(path).st_mode),
            )
    return found


def journals(root) -> list[str]:
    folder = open_vault(root).journal_dir
    return os.listdir(folder) if folder.is_dir() else []


# --- one read-only file -----------------------------------------------------------------------


def test_a_pass_refuses_to_replace_a_memory_file_made_read_only(make_vault):
    root = converged_vault(make_vault)
    os.chmod(root / PROFILE, 0o444)
    head = git(root, "rev-parse", "HEAD")
    before = files(root)
    done = run_cmem("--vault", str(root), "converge", "--engine", "builtin")
    assert done.returncode == 1
    assert PROFILE in done.stderr and "read-only" in done.stderr
    assert "nothing was written" in done.stderr
    assert files(root) == before  # its bytes and its mode, and every other file
    assert git(root, "rev-parse", "HEAD") == head and journals(root) == []
    os.chmod(root / PROFILE, 0o644)  # made writable again: the pass goes through
    again = run_cmem("--vault", str(root), "converge", "--engine", "builtin", "--json")
    assert again.returncode == 0, again.stderr
    assert len(pass_commits(root)) == 2


def test_every_step_refuses_a_read_only_file_it_would_replace_or_remove(make_vault):
    """The rule is the step layer's: an undo restoring profile.md and an archive apply
    removing a note made read-only are refused the same way, all or nothing."""
    root = converged_vault(make_vault)
    note = "2026-11-30 notes.md"
    for rel, argv in ((PROFILE, ["undo", "--yes"]), (note, ["archive", "apply", "--all", "--yes"])):
        os.chmod(root / rel, 0o444)
        head = git(root, "rev-parse", "HEAD")
        before = files(root)
        done = run_cmem("--vault", str(root), *argv)
        assert done.returncode == 1, (argv, done.stdout, done.stderr)
        assert rel in done.stderr and "read-only" in done.stderr, done.stderr
        assert files(root) == before and git(root, "rev-parse", "HEAD") == head
        assert journals(root) == []
        os.chmod(root / rel, 0o644)


def test_a_file_someone_else_cannot_write_is_refused_before_the_journal(make_vault):
    """Through the step layer directly: the refusal comes before the journal, so a killed
    process could not leave one behind for it."""
    from cmem.errors import CmemError
    from cmem.steps.changes import ChangeSet, current_bytes
    from cmem.steps.runner import open_step

    root = converged_vault(make_vault)
    vault = open_vault(root)
    os.chmod(root / PROFILE, 0o400)  # no write bit for anyone
    changes = ChangeSet()
    changes.write(PROFILE, "# Profile\n", current_bytes(root / PROFILE))
    changes.write("converged/topics/new.md", "# New\n", None)
    with pytest.raises(CmemError, match="read-only") as caught:
        with open_step(vault, "converge", snapshot=False) as step:
            step.commit(changes, "cmem: test\n\nCmem-Pass: x")
    assert "nothing was written" in str(caught.value)
    assert not (root / "converged/topics/new.md").exists() and journals(root) == []


# --- a read-only vault ------------------------------------------------------------------------


def _namespace_argv() -> list[str] | None:
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return None
    argv = ["unshare", "-m"] if os.geteuid() == 0 else ["unshare", "-rm"]
    probe = subprocess.run([*argv, "true"], capture_output=True)
    return argv if probe.returncode == 0 else None


def run_read_only(root, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`cmem ARGS` in a real process that sees `root` on a read-only file system."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("CMEM_")}
    full.update(env or {})
    namespace = _namespace_argv()
    cmem = [sys.executable, "-m", "cmem", "--vault", str(root), *args]
    if namespace is not None:
        script = 'mount --bind -o ro "$1" "$1" && shift && exec "$@"'
        return subprocess.run(
            [*namespace, "sh", "-c", script, "sh", str(root), *cmem],
            capture_output=True,
            text=True,
            env=full,
            stdin=subprocess.DEVNULL,
        )
    if os.geteuid() == 0:
        pytest.skip("no mount namespace here, and chmod does not stop root")
    subprocess.run(["chmod", "-R", "a-w", str(root)], check=True)
    try:
        return subprocess.run(
            cmem, capture_output=True, text=True, env=full, stdin=subprocess.DEVNULL
        )
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(root)], check=True)


@pytest.mark.parametrize("argv", [["converge", "--engine", "builtin"], ["undo", "--yes"]])
def test_a_read_only_vault_is_named_as_the_cause_and_nothing_is_done(make_vault, argv):
    root = converged_vault(make_vault)
    (root / "2026-12-02 untracked.md").write_text("- I decided to use Vue.\n", "utf-8")
    head = git(root, "rev-parse", "HEAD")
    before = files(root)
    done = run_read_only(root, *argv)
    assert done.returncode == 1, done.stderr
    message = done.stderr
    assert "Unable to add" not in message and "hash-object" not in message
    assert "read-only" in message or "not writable" in message
    assert ".git" in message or str(root) in message
    assert "nothing was written" in message and "nothing was committed" in message
    assert len(message.strip().splitlines()) <= 2, message
    assert files(root) == before and git(root, "rev-parse", "HEAD") == head


def test_doctor_reports_a_read_only_vault(make_vault):
    root = converged_vault(make_vault)
    done = run_read_only(root, "doctor", "--json")
    import json

    findings = json.loads(done.stdout)["findings"]
    writable = [f for f in findings if f["check"] == "writable"]
    assert writable and writable[0]["level"] == "error"
    assert "read-only" in writable[0]["message"] or "not writable" in writable[0]["message"]
    assert done.returncode == 1
    fine = json.loads(run_cmem("--vault", str(root), "doctor", "--json").stdout)["findings"]
    assert [f["level"] for f in fine if f["check"] == "writable"] == ["ok"]


def test_a_git_failure_to_store_an_object_names_the_cause_not_the_note(make_vault):
    """Past the preflight (a disk that fills, one folder of git's made read-only meanwhile),
    git's failure to store an object is said as the cause, not as the note it was storing: here
    the one fan-out folder of `.git/objects` the new note's blob goes to is mounted read-only,
    so the vault and `.git/objects` themselves are writable and git alone meets the wall."""
    namespace = _namespace_argv()
    if namespace is None:
        pytest.skip("no mount namespace here")
    root = converged_vault(make_vault)
    note = root / "2026-12-02 untracked.md"
    note.write_text("- I decided to use Vue.\n", "utf-8")
    blob = git(root, "hash-object", str(note)).strip()
    fan_out = root / ".git" / "objects" / blob[:2]
    fan_out.mkdir(exist_ok=True)
    head = git(root, "rev-parse", "HEAD")
    full = {k: v for k, v in os.environ.items() if not k.startswith("CMEM_")}
    script = 'mount --bind -o ro "$1" "$1" && shift && exec "$@"'
    done = subprocess.run(
        [*namespace, "sh", "-c", script, "sh", str(fan_out), sys.executable, "-m", "cmem"]
        + ["--vault", str(root), "converge", "--engine", "builtin"],
        capture_output=True,
        text=True,
        env=full,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    first = done.stderr.splitlines()[0]
    assert "Unable to add" not in done.stderr and note.name not in first, done.stderr
    assert "read-only file system" in first and ".git" in first
    assert "nothing was committed" in done.stderr
    assert git(root, "rev-parse", "HEAD") == head
