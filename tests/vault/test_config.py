import os
from pathlib import Path

import pytest

from cmem.errors import ConfigError, VaultNotFound
from cmem.vault.config import default_config_text, load_config, load_user_config
from cmem.vault.layers import (
    ARCHIVE,
    DIVERGENT,
    RESIDENT,
    SITUATIONAL,
    find_vault_root,
    machine_dir_for,
    open_vault,
)


@pytest.mark.parametrize("language", ["zh", "en"])
def test_default_config_text_is_valid(tmp_path, language):
    (tmp_path / ".cmem").mkdir()
    (tmp_path / ".cmem/config.yaml").write_text(default_config_text(language), encoding="utf-8")
    config = load_config(tmp_path)
    assert config.language == language
    assert config.resident_dir == "converged/core"


@pytest.mark.parametrize(
    "text, named",
    [
        ("budget_tokens: lots\n", "'budget_tokens'"),
        ("layer:\n  resident: x\n", "'layer' (did you mean 'layers'?)"),
        ("llm:\n  comand: x\n", "'llm.comand'"),
        ("language: fr\n", "'language'"),
        ("llm:\n  timeout_seconds: -1\n", "'llm.timeout_seconds'"),
        ("layers:\n  archive: ../outside\n", "'layers.archive'"),
        ("signals:\n  cues:\n    correction: [1]\n", "'signals.cues.correction"),
        ("- a list\n", "mapping"),
        ("key: [unclosed\n", "not valid YAML at line"),
        ("capture:\n  heading: 2026-13-45\n", "a date that does not exist (month must be"),
    ],
)
def test_bad_config_is_one_error_naming_the_key(tmp_path, text, named):
    (tmp_path / ".cmem").mkdir()
    (tmp_path / ".cmem/config.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as excinfo:
        load_config(tmp_path)
    message = str(excinfo.value)
    assert named in message and "config.yaml" in message and "\n" not in message


def test_discovery_order(tmp_path, monkeypatch):
    root = tmp_path / "v"
    (root / ".cmem").mkdir(parents=True)
    deep = root / "a" / "b"
    deep.mkdir(parents=True)
    assert find_vault_root(start=deep) == root.resolve()
    other = tmp_path / "w"
    (other / ".cmem").mkdir(parents=True)
    monkeypatch.setenv("CMEM_VAULT", str(other))
    assert find_vault_root(start=deep) == other.resolve()
    assert find_vault_root(start=deep, explicit=root) == root.resolve()
    monkeypatch.delenv("CMEM_VAULT")
    with pytest.raises(VaultNotFound, match="cmem init"):
        find_vault_root(start=tmp_path)


def test_layers(make_vault):
    root = make_vault(
        {
            "a.md": "x",
            "README.md": "x",
            "daily/d.md": "x",
            "misc/m.md": "x",
            "private/p.md": "x",
            "converged/core/profile.md": "x",
            "converged/topics/t/deep.md": "x",
            "archive/2026-10/old.md": "x",
        },
        config_yaml="divergent:\n  extra_folders: [daily]\nignore: ['private/*']\n",
    )
    vault = open_vault(root)
    assert [n.rel for n in vault.list_layer(DIVERGENT)] == ["a.md", "daily/d.md"]
    assert [n.rel for n in vault.list_layer(RESIDENT)] == ["converged/core/profile.md"]
    assert [n.rel for n in vault.list_layer(SITUATIONAL)] == ["converged/topics/t/deep.md"]
    assert [n.rel for n in vault.list_layer(ARCHIVE)] == ["archive/2026-10/old.md"]
    assert vault.layer_of("misc/m.md") is None  # unmanaged
    assert vault.layer_of("private/p.md") is None  # ignored
    assert vault.layer_of(".obsidian/x.md") is None
    assert vault.layer_of("archive/ARCHIVE-CHECKLIST.md") is None


def test_state_folder_is_outside_the_vault_and_per_path(tmp_path):
    a, b = tmp_path / "x" / "vault", tmp_path / "y" / "vault"
    assert machine_dir_for(a) != machine_dir_for(b)
    assert str(machine_dir_for(a)).startswith(os.environ["XDG_STATE_HOME"])
    assert not str(machine_dir_for(a)).startswith(str(a))


def test_user_config_validated(tmp_path):
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "cmem" / "config.yaml"
    path.parent.mkdir(parents=True)
    path.write_text("llm:\n  command: llm -n\n", encoding="utf-8")
    assert load_user_config()["llm"]["command"] == "llm -n"
    path.write_text("lmm: {}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="'lmm'"):
        load_user_config()


def test_formats_that_cannot_be_read_back_are_refused_naming_the_key(tmp_path):
    """A format the config accepts works end to end (issue 35); one that cannot is refused here,
    naming the setting and why, instead of failing every pass."""
    import pytest as _pytest

    from cmem.errors import ConfigError
    from cmem.vault.config import parse_config

    refused = {
        "source": [
            "{links}",
            " {links} ",
            "(source: {links}, {links})",
            "[[{links}]]",
            "a\n{links}",
            "<via {links}>",
        ],
        "source_separator": ["]] [[", "\n"],
        "trace": [
            "updated {date}, was: {old}",  # no bracket: a nested trace could not be told apart
            "(updated {date}, was: {old}",  # no closing pair
            "~{date}: {old}~",
            "{date}: {old}",
            "(was {old} until {date})",
            "({date}) {old}",
            "<was {date}: {old}>",  # reads as an HTML tag, which rule 9 refuses
        ],
    }
    for key, values in refused.items():
        for value in values:
            with _pytest.raises(ConfigError) as caught:
                parse_config({"formats": {key: value}}, tmp_path / "config.yaml")
            assert f"'formats.{key}'" in str(caught.value), (key, value)
    accepted = {
        "source": [
            "— {links}",
            "src: {links}.",
            "[from {links}]",
            "<{links}>",
            "【来源：{links}】",
        ],
        "source_separator": ["; ", "", " & "],
        "trace": ["[changed {date}, was: {old}]", "【{date} 前为：{old}】", "«{date}: {old}»"],
    }
    for key, values in accepted.items():
        for value in values:
            parse_config({"formats": {key: value}}, tmp_path / "config.yaml")
