"""Security (issue 6), end to end through the CLI and the real pass:

- a command the vault names runs only after `cmem trust`, whichever way a pass is started, and
  `llm.command` is the only setting of a vault that names a command;
- git runs with the repository's hooks, hooksPath, fsmonitor, filter and diff drivers switched
  off for cmem's own commands — which still commit;
- credentials in notes and memory never reach a model (nor an agent asking for the prompt);
- a vault inside another repository is never committed to by accident;
- paths are checked after resolving symbolic links.

test_trust.py and test_secrets.py test the pieces; these test that every door uses them.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

import reliability_harness as harness
import reply_variants as rv
from cmem.converge.pipeline import PassOptions, run_pass
from cmem.resources import config_schema
from cmem.steps.changes import SecondWriter
from cmem.vault.layers import open_vault
from support import git
from support import run_cmem as cmem


@pytest.fixture
def corpus_vault(tmp_path) -> Path:
    root, _ = harness.fresh_vault(harness.make_corpus_template(tmp_path), tmp_path, "vault")
    return root


# --- the trust gate, at every door -------------------------------------------------------------


def witness_command(tmp_path: Path) -> tuple[str, Path]:
    """A model command that leaves a file behind if it ever runs (and defers every note it is
    given: a reply that judges no note is refused)."""
    witness = tmp_path / "the-vault-command-ran"
    script = tmp_path / "vault_model.py"
    script.write_text(
        f"import pathlib, re, sys\npathlib.Path({str(witness)!r}).write_text('ran')\n"
        'notes = dict.fromkeys(re.findall(r\'<note path="([^"]+)"\', sys.stdin.read()))\n'
        "deferred = ''.join(f'<deferred note=\"{n}\" reason=\"not now\"/>\\n' for n in notes)\n"
        "print('<convergence>\\n' + deferred + '</convergence>')\n",
        encoding="utf-8",
    )
    return f"{sys.executable} {script}", witness


DOORS = [
    ["converge"],
    ["converge", "--engine", "llm"],
    ["converge", "--dry-run"],
    ["converge", "--propose"],
    ["converge", "--json"],
    ["converge", "--if-due"],
    ["converge", "--if-due", "--scheduled"],
]


@pytest.mark.parametrize("args", DOORS, ids=[" ".join(a) for a in DOORS])
def test_a_vault_command_never_runs_untrusted(corpus_vault, tmp_path, args):
    command, witness = witness_command(tmp_path)
    (corpus_vault / ".cmem/config.yaml").write_text(
        f"llm:\n  command: {json.dumps(command)}\n", encoding="utf-8"
    )
    git(corpus_vault, "commit", "-qam", "a cloned vault names a command")
    done = cmem(*args, "--vault", str(corpus_vault))
    assert not witness.exists(), f"{args} ran the vault's command"
    assert done.returncode == 1 and "cmem trust" in done.stdout + done.stderr


def test_the_background_door_is_gated_too(corpus_vault, tmp_path):
    command, witness = witness_command(tmp_path)
    (corpus_vault / ".cmem/config.yaml").write_text(
        f"llm:\n  command: {json.dumps(command)}\n", encoding="utf-8"
    )
    git(corpus_vault, "commit", "-qam", "a cloned vault names a command")
    done = cmem("converge", "--background", "--json", "--vault", str(corpus_vault))
    assert done.returncode == 0
    log = Path(json.loads(done.stdout)["log"])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (
        log.exists() and "trust" in log.read_text("utf-8", errors="replace")
    ):
        time.sleep(0.1)
    assert "cmem trust" in log.read_text("utf-8", errors="replace")
    assert not witness.exists()


def test_once_trusted_it_runs_and_a_changed_command_is_refused_again(corpus_vault, tmp_path):
    command, witness = witness_command(tmp_path)
    config = corpus_vault / ".cmem/config.yaml"
    config.write_text(f"llm:\n  command: {json.dumps(command)}\n", encoding="utf-8")
    git(corpus_vault, "commit", "-qam", "command")
    assert cmem("trust", "--yes", "--vault", str(corpus_vault)).returncode == 0
    assert cmem("converge", "--vault", str(corpus_vault)).returncode == 0 and witness.exists()
    witness.unlink()
    config.write_text(
        f"llm:\n  command: {json.dumps(command + ' --extra')}\n", encoding="utf-8"
    )  # a sync brought a new one
    (corpus_vault / "2026-12-01 new.md").write_text("A new note to converge.\n", encoding="utf-8")
    done = cmem("converge", "--vault", str(corpus_vault))
    assert (
        done.returncode == 1
        and "changed since you trusted it" in done.stderr
        and not witness.exists()
    )


def _schema_keys(node: dict, prefix: str = "") -> list[str]:
    keys = []
    for name, sub in (node.get("properties") or {}).items():
        keys.append(prefix + name)
        keys += _schema_keys(sub, prefix + name + ".")
    return keys


def test_llm_command_is_the_only_vault_setting_that_names_a_program():
    schema = config_schema()
    suspicious = (
        "command",
        "cmd",
        "program",
        "exec",
        "shell",
        "hook",
        "editor",
        "script",
        "run",
        "pager",
        "helper",
    )
    named = [key for key in _schema_keys(schema) if any(word in key.lower() for word in suspicious)]
    assert named == ["llm.command"], named


# --- git: hooks, hooksPath, fsmonitor, filter and diff drivers ----------------------------------


def booby_trap(root: Path, witness: Path) -> None:
    """A repository config that runs commands, as a synced `.git` could bring."""
    script = root.parent / "trap.sh"
    script.write_text(f'#!/bin/sh\necho "$0 $*" >> {witness}\ncat\nexit 1\n', encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    hook = f'#!/bin/sh\necho "hook $0" >> {witness}\nexit 1\n'
    hook_names = (
        "pre-commit",
        "prepare-commit-msg",
        "commit-msg",
        "post-commit",
        "pre-auto-gc",
        "post-index-change",
        "reference-transaction",
    )
    (root / ".githooks").mkdir()
    for name in (
        hook_names
    ):  # hooks that came with the vault (husky-style), enabled by core.hooksPath below
        (root / ".githooks" / name).write_text(hook, encoding="utf-8")
        (root / ".githooks" / name).chmod(0o755)
    (root / ".gitattributes").write_text(
        "*.md filter=trap diff=trap\n*.json filter=trap\n", encoding="utf-8"
    )
    git(root, "add", ".gitattributes", ".githooks")
    git(root, "commit", "-qm", "attributes")
    for name in hook_names:
        (root / ".git/hooks" / name).write_text(hook, encoding="utf-8")
        (root / ".git/hooks" / name).chmod(0o755)
    for key, value in (
        ("core.hooksPath", ".githooks"),
        ("core.fsmonitor", str(script)),
        ("filter.trap.clean", str(script)),
        ("filter.trap.smudge", str(script)),
        ("filter.trap.process", str(script)),
        ("filter.trap.required", "true"),
        ("diff.trap.textconv", str(script)),
        ("diff.trap.command", str(script)),
        ("diff.external", str(script)),
    ):
        git(root, "config", key, value)


def test_cmem_git_never_runs_the_repositorys_hooks_fsmonitor_or_drivers(corpus_vault, tmp_path):
    witness = tmp_path / "git-ran-a-vault-command"
    booby_trap(corpus_vault, witness)
    head = git(corpus_vault, "rev-parse", "HEAD").strip()
    (corpus_vault / rv.NOTE).write_text(
        rv.NOTE_TEXT + "- 以后都先写测试再写代码\n", encoding="utf-8"
    )  # a hand edit: a snapshot commit
    done = cmem("converge", "--engine", "builtin", "--vault", str(corpus_vault))
    assert done.returncode == 0, done.stderr
    log = git(corpus_vault, "log", "--format=%s", f"{head}..HEAD").splitlines()
    assert log[0].startswith("cmem: converge") and log[1].startswith("cmem: snapshot")
    for args in (["diff"], ["log"], ["status"], ["scan"], ["trace", "profile"], ["doctor"]):
        assert "Traceback" not in cmem(*args, "--vault", str(corpus_vault)).stderr
    assert cmem("archive", "apply", "--all", "--yes", "--vault", str(corpus_vault)).returncode == 0
    assert git(corpus_vault, "log", "-1", "--format=%s").startswith("cmem: archive")
    assert cmem("undo", "--yes", "--vault", str(corpus_vault)).returncode == 0
    assert git(corpus_vault, "log", "-1", "--format=%s").startswith("cmem: undo")
    assert not witness.exists(), witness.read_text()
    # and the trap is real: plain git runs it
    (corpus_vault / rv.NOTE2).write_text("- I prefer coffee now\n", encoding="utf-8")
    subprocess.run(
        ["git", "-C", str(corpus_vault), "commit", "-qam", "plain git"], capture_output=True
    )
    assert witness.exists()


# --- credentials never reach a model ------------------------------------------------------------

RANDOM = "Xk2J9fQ0pLm7Zr4T"
SECRETS = [
    "sk-" + "proj-" + RANDOM * 4 + "_" + RANDOM,
    "sk-" + "ant-" + "api03-" + RANDOM * 5 + "-AA",
    "ghp_" + RANDOM * 2 + "abcd",
    "github_pat_" + "11ABCDEFG0" + RANDOM * 4,
    "AKIA" + "IOSFODNN7EXAMPLE",
    "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY",
    "xoxb-" + "123456789012-1234567890123-" + RANDOM,
    "AIza" + "SyA" + RANDOM * 2,
    "sk_" + "live_" + RANDOM + "abcdEFGH",
    "hunter2-correct-horse",
    "s3cr3t-Pa55w0rd!",
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
]
SECRET_NOTE = f"""# 今天的配置

- 我决定以后都把 OpenAI key 放进 1Password：{SECRETS[0]}
- 以后都用这个 Anthropic key 跑评测 {SECRETS[1]}
- I decided the CI token is {SECRETS[2]} and the fine-grained one {SECRETS[3]}
- AWS: aws_access_key_id = {SECRETS[4]}
  aws_secret_access_key = {SECRETS[5]}
- slack bot: {SECRETS[6]}, maps: {SECRETS[7]}, stripe: {SECRETS[8]}
password: {SECRETS[9]}
- db: postgres://admin:{SECRETS[10]}@db.internal:5432/app
-----BEGIN PRIVATE KEY-----
{SECRETS[11]}
-----END PRIVATE KEY-----
"""


def test_credentials_in_notes_and_memory_never_reach_the_model(corpus_vault, tmp_path, monkeypatch):
    (corpus_vault / "2026-11-30 keys.md").write_text(SECRET_NOTE, encoding="utf-8")
    with open(
        corpus_vault / rv.PROFILE, "a", encoding="utf-8"
    ) as handle:  # memory holds one too, by hand
        handle.write(f"- 以后都用 token {SECRETS[2]} 调 GitHub API（来源：[[2026-11-20 日记]]）\n")
    (corpus_vault / ".cmem/config.yaml").write_text("repair_rounds: 1\n", encoding="utf-8")
    git(corpus_vault, "add", "-A")
    git(corpus_vault, "commit", "-qm", "notes with keys")
    log = tmp_path / "fake.log"
    queue = tmp_path / "queue"
    queue.mkdir()
    (queue / "000.txt").write_text("not an answer, so the pass asks again", encoding="utf-8")
    (queue / "001.txt").write_text(
        rv.wrap('<deferred note="2026-11-30 keys.md" reason="credentials are not memory"/>\n'),
        encoding="utf-8",
    )
    monkeypatch.setenv("FAKE_LLM_REPLIES", str(queue))
    monkeypatch.setenv("FAKE_LLM_LOG", str(log))
    result = run_pass(
        open_vault(corpus_vault),
        PassOptions(engine="llm", llm=harness.fake_command(), now=harness.PASS_NOW),
    )
    prompts = [json.loads(line)["prompt"] for line in log.read_text("utf-8").splitlines()]
    assert len(prompts) == 2  # the first prompt and the repair round
    for prompt in prompts:
        assert "2026-11-30 keys.md" in prompt  # the note was sent, without its secrets
        leaked = [secret for secret in SECRETS if secret in prompt]
        assert leaked == [], leaked
    assert any("redacted" in warning for warning in result.warnings)


def _secret_vault(corpus_vault: Path, tmp_path: Path, monkeypatch) -> None:
    (corpus_vault / "2026-11-30 keys.md").write_text(SECRET_NOTE, encoding="utf-8")
    (corpus_vault / ".cmem/config.yaml").write_text("repair_rounds: 0\n", encoding="utf-8")
    git(corpus_vault, "add", "-A")
    git(corpus_vault, "commit", "-qm", "notes with keys")
    queue = tmp_path / "queue"
    queue.mkdir()
    (queue / "000.txt").write_text("not an answer", encoding="utf-8")
    monkeypatch.setenv("FAKE_LLM_REPLIES", str(queue))
    monkeypatch.setenv("FAKE_LLM_LOG", str(tmp_path / "fake.log"))


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_run_records_are_private_and_redacted(corpus_vault, tmp_path, monkeypatch, umask):
    _secret_vault(corpus_vault, tmp_path, monkeypatch)
    old = os.umask(umask)
    try:
        result = run_pass(
            open_vault(corpus_vault),
            PassOptions(engine="llm", llm=harness.fake_command(), now=harness.PASS_NOW),
        )
    finally:
        os.umask(old)
    assert result.status == "failed"
    run = Path(result.run_dir)
    for folder in (run, run.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    files = sorted(run.iterdir())
    assert {f.name for f in files} >= {
        "prompt.txt",
        "run.json",
        "response-1.txt",
        "validation-1.json",
    }
    for file in files:
        assert stat.S_IMODE(file.stat().st_mode) == 0o600, file
        text = file.read_text("utf-8")
        assert [secret for secret in SECRETS if secret in text] == [], file.name
    assert "2026-11-30 keys.md" in (run / "prompt.txt").read_text("utf-8")
    record = json.loads((run / "run.json").read_text("utf-8"))
    assert record["redacted"] >= len(SECRETS) - 2 and record["raw_prompt_kept"] is False


def test_keep_raw_prompt_keeps_the_run_record_raw_but_not_the_model_prompt(
    corpus_vault, tmp_path, monkeypatch
):
    _secret_vault(corpus_vault, tmp_path, monkeypatch)
    done = cmem(
        "converge",
        "--engine",
        "llm",
        "--llm",
        harness.fake_command(),
        "--keep-raw-prompt",
        "--json",
        "--vault",
        str(corpus_vault),
        env={
            "FAKE_LLM_REPLIES": str(tmp_path / "queue"),
            "FAKE_LLM_LOG": str(tmp_path / "fake.log"),
        },
    )
    assert done.returncode == 1, done.stderr
    run = Path(json.loads(done.stdout)["run"])
    raw = (run / "prompt.txt").read_text("utf-8")
    assert all(
        secret in raw for secret in SECRETS[9:11]
    )  # the password and the URL password, in plain text
    assert stat.S_IMODE((run / "prompt.txt").stat().st_mode) == 0o600
    sent = json.loads((tmp_path / "fake.log").read_text("utf-8").splitlines()[0])["prompt"]
    assert [secret for secret in SECRETS if secret in sent] == []


def test_the_prompt_handed_to_an_agent_is_redacted_too(corpus_vault):
    (corpus_vault / "2026-11-30 keys.md").write_text(SECRET_NOTE, encoding="utf-8")
    done = cmem("converge", "--emit-prompt", "--vault", str(corpus_vault))
    assert done.returncode == 0 and "2026-11-30 keys.md" in done.stdout
    assert [secret for secret in SECRETS if secret in done.stdout] == []


# --- a repository above the vault ---------------------------------------------------------------


@pytest.fixture
def nested(tmp_path):
    """A vault folder inside a project's repository, with no repository of its own."""
    parent = tmp_path / "project"
    parent.mkdir()
    git(parent, "init", "-q", "-b", "main")
    (parent / "README.md").write_text("project\n")
    git(parent, "add", "-A")
    git(parent, "commit", "-qm", "project")
    root = rv.build_corpus_vault(parent / "notes", tmp_path / "outside", git=False)
    (root / ".cmem/config.yaml").write_text("git:\n  allow_parent_repo: false\n", encoding="utf-8")
    return parent, root


def _parent_state(parent: Path) -> tuple[str, str]:
    return git(parent, "rev-parse", "HEAD"), git(parent, "ls-files", "--stage")


@pytest.mark.parametrize(
    "args",
    [
        ["converge", "--engine", "builtin"],
        ["archive", "apply", "--all", "--yes"],
        ["undo", "--yes"],
    ],
)
def test_a_vault_inside_another_repository_is_never_committed_to(nested, args):
    parent, root = nested
    before = _parent_state(parent)
    done = cmem(*args, "--vault", str(root))
    assert _parent_state(parent) == before, f"{args} committed to or staged in {parent}"
    if args[0] == "converge":
        assert done.returncode == 1 and "above the vault" in done.stderr


def test_a_git_dir_from_the_environment_cannot_redirect_cmem(nested, corpus_vault):
    parent, _ = nested
    before = _parent_state(parent)
    done = cmem(
        "converge",
        "--engine",
        "builtin",
        "--vault",
        str(corpus_vault),
        env={
            "GIT_DIR": str(parent / ".git"),
            "GIT_WORK_TREE": str(parent),
            "GIT_INDEX_FILE": str(parent / ".git/index"),
        },
    )
    assert done.returncode == 0, done.stderr
    assert _parent_state(parent) == before
    assert git(corpus_vault, "log", "-1", "--format=%s").startswith("cmem: converge")


# --- symbolic links -----------------------------------------------------------------------------


def test_a_topic_folder_linked_out_of_the_vault_is_never_written(corpus_vault, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "job-search.md").write_text(rv.JOBS_TEXT, encoding="utf-8")
    topics = corpus_vault / "converged/topics"
    for child in topics.iterdir():
        child.unlink() if child.is_symlink() or child.is_file() else None
    topics.rmdir()
    os.symlink(outside, topics)
    git(corpus_vault, "add", "-A")
    git(corpus_vault, "commit", "-qm", "topics live elsewhere now")
    before = harness.snapshot(outside)
    reply = rv.wrap(
        rv.block(rv.JOBS, rv.JOBS_TEXT + rv.NEW_BY_NOTE[1] + "\n"),
        rv.block("converged/topics/tools.md", "# Tools\n\n" + rv.NEW_BY_NOTE[0] + "\n"),
        f'<converged note="{rv.NOTE}" into="{rv.JOBS}"/>\n',
    )
    result = run_pass(
        open_vault(corpus_vault), PassOptions(response_text=reply, now=harness.PASS_NOW)
    )
    assert result.status == "failed", result.errors
    refused = [
        error for error in result.errors if "through the symbolic link converged/topics" in error
    ]
    for path in (rv.JOBS, "converged/topics/tools.md"):
        assert any(f'"{path}"' in error for error in refused), (path, result.errors)
    assert harness.snapshot(outside) == before and not (outside / "tools.md").exists()


def test_a_file_swapped_for_a_link_during_the_model_call_is_not_written_through(
    corpus_vault, tmp_path
):
    target = corpus_vault.parent / "outside" / "target.md"
    before = target.read_bytes()
    profile = corpus_vault / rv.PROFILE
    script = tmp_path / "swapping_model.py"
    script.write_text(
        "import os, sys\nsys.stdin.read()\n"
        f"os.unlink({str(profile)!r})\nos.symlink({str(target)!r}, {str(profile)!r})\n"
        f"sys.stdout.write({harness.WRITER_REPLY!r})\n",
        encoding="utf-8",
    )
    try:
        result = run_pass(
            open_vault(corpus_vault),
            PassOptions(engine="llm", llm=f"{sys.executable} {script}", now=harness.PASS_NOW),
        )
        # the validator looks at the disk after the model: the path now goes through a link
        assert result.status == "failed" and "symbolic link converged/core/profile.md" in "\n".join(
            result.errors
        )
    except SecondWriter as exc:  # or the last check before the replace sees it
        assert "symbolic link" in str(exc)
    assert target.read_bytes() == before and profile.is_symlink()


def test_archive_apply_never_moves_a_note_through_a_linked_folder(corpus_vault, tmp_path):
    run_pass(open_vault(corpus_vault), PassOptions(engine="builtin", now=harness.PASS_NOW))
    outside = tmp_path / "archive-elsewhere"
    month = corpus_vault / "archive/2026-11"  # the folder the notes would go to
    month.rename(outside)
    os.symlink(outside, month)
    git(corpus_vault, "add", "-A")
    git(corpus_vault, "commit", "-qm", "a linked archive folder")
    head = git(corpus_vault, "rev-parse", "HEAD")
    done = cmem("archive", "apply", "--all", "--yes", "--vault", str(corpus_vault))
    # refused line by line when planning, like any line that cannot move: shown, skipped, kept
    assert (
        done.returncode == 0
        and "refused" in done.stdout
        and "symbolic link archive/2026-11" in done.stdout
    )
    assert [p.name for p in outside.iterdir()] == ["2026-11-20 日记.md"] and (
        corpus_vault / rv.NOTE
    ).exists()
    assert (
        git(corpus_vault, "rev-parse", "HEAD") == head
        and git(corpus_vault, "status", "--porcelain") == ""
    )


def test_capture_never_writes_through_a_linked_note(corpus_vault, tmp_path):
    from datetime import datetime

    target = corpus_vault.parent / "outside" / "target.md"
    before = target.read_bytes()
    name = open_vault(corpus_vault).config.capture_pattern.replace(
        "{date}", datetime.now().strftime("%Y-%m-%d")
    )
    os.symlink(target, corpus_vault / (name if name.endswith(".md") else name + ".md"))
    done = cmem("note", "以后都先写测试", "--vault", str(corpus_vault))
    assert done.returncode == 1 and "symbolic link" in done.stderr and target.read_bytes() == before


def test_context_and_recall_show_memory_credentials_redacted(corpus_vault):
    """A credential pasted into a memory file by hand: `cmem context` and `cmem recall` (what a
    session-start hook hands an agent) print it redacted, in Markdown and in JSON."""
    with open(corpus_vault / rv.PROFILE, "a", encoding="utf-8") as handle:
        handle.write(f"- 以后都用 token {SECRETS[2]} 调 GitHub API（来源：[[2026-11-20 日记]]）\n")
        handle.write(
            f"- 数据库 postgres://admin:{SECRETS[10]}@db.internal:5432/app（来源：[[2026-11-20 日记]]）\n"
        )
    for args in (
        ["context"],
        ["context", "--json"],
        ["recall", "GitHub"],
        ["recall", "GitHub", "--json"],
        ["recall", "数据库"],
    ):
        done = cmem(*args, "--vault", str(corpus_vault))
        assert done.returncode == 0, (args, done.stderr)
        assert SECRETS[2] not in done.stdout and SECRETS[10] not in done.stdout, args
        assert "[REDACTED:" in done.stdout, args
    # the file itself is the user's: untouched
    assert SECRETS[2] in (corpus_vault / rv.PROFILE).read_text("utf-8")


def test_the_builtin_engine_never_writes_a_credential_into_memory(corpus_vault):
    """Issue 14: the builtin engine copied `ghp_…` and `password=…` lines into profile.md."""
    (corpus_vault / "2026-11-30 keys.md").write_text(
        f"- 以后都用 token {SECRETS[2]} 调 GitHub API\n- From now on always use password={SECRETS[9]} for the staging db\n",
        encoding="utf-8",
    )
    git(corpus_vault, "add", "-A")
    git(corpus_vault, "commit", "-qm", "a note with keys")
    done = cmem(
        "converge",
        "--engine",
        "builtin",
        "--only",
        "2026-11-30 keys.md",
        "--vault",
        str(corpus_vault),
    )
    assert done.returncode == 0, done.stderr
    assert "deferred 2026-11-30 keys.md: line 1 holds a credential (github-token)" in done.stdout
    for path in (corpus_vault / "converged").rglob("*.md"):
        text = path.read_text("utf-8")
        assert SECRETS[2] not in text and SECRETS[9] not in text, path


# --- issue 43: every surface that shows note text shows it redacted -----------------------------

# credentials of the shapes issue 43 found, each in a note, a memory file or both
SHOWN = {
    "mysql": "Zq8Lp2Vb7Nm4",
    "wifi": "Mq3Tz7Wd9Ks2",
    "aws": "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY",
    "github": "ghp_" + "Xk2J9fQ0pLm7Zr4T" * 2 + "abcd",
    "redis": "Cf6Ry1Ux8Ha5",
    "cut": "Xw9Yq2" + "Lz7Kp4",  # in a long line, where the excerpt's cut falls inside it
}


def _pieces(secret: str) -> list[str]:
    """The secret and its halves: no part of six characters or more may be shown."""
    half = len(secret) // 2
    return [secret, secret[:half], secret[half:]]


def _leaks(text: str) -> list[str]:
    return [name for name, secret in SHOWN.items() if any(p in text for p in _pieces(secret))]


@pytest.fixture
def shown_vault(sample_vault) -> Path:
    """A pass that wrote a credential into memory (the agent as the model), a conflict statement
    holding one, and a pending note holding several."""
    (sample_vault / "2026-11-29 wifi.md").write_text(
        f"以后访客都用 WiFi 密码 {SHOWN['wifi']}\n", encoding="utf-8"
    )
    with open(sample_vault / "converged/core/profile.md", "a", encoding="utf-8") as handle:
        handle.write(
            f"- ⚠ conflict (2026-11-21): 用 redis-cli -a {SHOWN['redis']} 连缓存（来源：[[2026-09-30 日记]]）"
            " ⟷ 用本地缓存（来源：[[2026-09-30 日记]]）\n"
        )
    git(sample_vault, "add", "-A")
    git(sample_vault, "commit", "-qm", "a note and a conflict")
    reply = sample_vault.parent / "reply.txt"
    profile = (sample_vault / "converged/core/profile.md").read_text("utf-8")
    reply.write_text(
        rv.wrap(
            '<file path="converged/core/profile.md">\n'
            + profile
            + f"- 访客 WiFi 密码 {SHOWN['wifi']}（来源：[[2026-11-29 wifi]]）\n"
            "</file>\n",
            '<converged note="2026-11-29 wifi.md" into="converged/core/profile.md"/>\n',
        ),
        encoding="utf-8",
    )
    done = cmem(
        "converge",
        "--response",
        str(reply),
        "--only",
        "2026-11-29 wifi.md",
        "--vault",
        str(sample_vault),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert _leaks(done.stdout + done.stderr) == []
    cut_line = (
        "filler words " * 10
        + f"db password: {SHOWN['cut']}"
        + " and then some more words to pad it out here"
        + " ... actually it is the other server"
        + " and more filler" * 12
    )
    (sample_vault / "2026-11-30 keys.md").write_text(
        f"actually the db is mysql -uroot -p{SHOWN['mysql']} app, not postgres\n"
        f"以后都用 token {SHOWN['github']} 调 GitHub API\n"
        f"I decided: AKIAIOSFODNN7EXAMPLE {SHOWN['aws']} for the backup user\n"
        f"{cut_line}\n",
        encoding="utf-8",
    )
    return sample_vault


SURFACES = [
    ["scan"],
    ["scan", "--json"],
    ["status"],
    ["status", "--json"],
    ["context"],
    ["context", "--json"],
    ["context", "--topic", "WiFi"],
    ["recall", "WiFi"],
    ["recall", "redis", "--json"],
    ["doctor"],
    ["doctor", "--json"],
    ["log"],
    ["log", "--json"],
    ["trace", "profile"],
    ["trace", "profile", "--json"],
    ["diff"],
    ["diff", "--json"],
    ["converge", "--emit-prompt"],
    ["converge", "--dry-run", "--engine", "builtin"],
    ["converge", "--dry-run", "--engine", "builtin", "--json"],
]


def test_every_surface_shows_a_credential_redacted(shown_vault):
    """`cmem scan` printed credentials the MCP `scan` tool redacted (issue 43): every command that
    shows note or memory text — run twice, the second answered from what the first stored where
    the light path keeps results — shows each credential redacted, no piece of it left."""
    for args in SURFACES:
        for attempt in ("first", "stored"):
            done = cmem(*args, "--vault", str(shown_vault))
            assert done.returncode in (0, 1), (args, done.stderr)
            shown = done.stdout + done.stderr
            assert _leaks(shown) == [], (args, attempt, shown[-2000:])
    scan = cmem("scan", "--vault", str(shown_vault)).stdout
    assert "[REDACTED:password]" in scan and "[REDACTED:aws-secret-key]" in scan
    status = cmem("status", "--vault", str(shown_vault)).stdout
    assert "[REDACTED:password]" in status  # the conflict statement's
    # the memory file and the note are the user's: untouched
    assert SHOWN["wifi"] in (shown_vault / "converged/core/profile.md").read_text("utf-8")
    assert SHOWN["mysql"] in (shown_vault / "2026-11-30 keys.md").read_text("utf-8")


def test_the_session_start_hook_and_the_mcp_tools_show_it_redacted_too(shown_vault):
    import subprocess as sp

    from cmem.mcp_server import MemoryTools

    hook = sp.run(
        [sys.executable, "-m", "cmem", "--vault", str(shown_vault), "hook", "run", "session-start"]
        + ["--agent", "claude-code"],
        input=json.dumps({"hook_event_name": "SessionStart", "cwd": str(shown_vault)}),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert hook.returncode == 0, hook.stderr
    assert "additionalContext" in hook.stdout and _leaks(hook.stdout + hook.stderr) == []
    tools = MemoryTools(shown_vault)
    for method, args in [
        (tools.scan, ()),
        (tools.status, ()),
        (tools.context, ()),
        (tools.recall, ("WiFi",)),
        (tools.recall, ("redis",)),
        (tools.converge_prompt, ()),
    ]:
        assert _leaks(tools.call(method, *args)[0]) == [], method.__name__


def test_the_cli_and_the_mcp_tool_show_a_scan_alike(shown_vault):
    """The same way: what `scan --json` and `status --json` print is what the MCP tools return."""
    from cmem.mcp_server import MemoryTools

    tools = MemoryTools(shown_vault)
    for name, method in (("scan", tools.scan), ("status", tools.status)):
        cli = json.loads(cmem(name, "--json", "--vault", str(shown_vault)).stdout)
        mcp = json.loads(tools.call(method)[0])
        key = "signals" if name == "scan" else "conflicts"
        assert cli[key] == mcp[key] and "[REDACTED:" in json.dumps(cli[key], ensure_ascii=False)
