"""Which topic file is a project's (`reading/project_topic.py`): the one matcher SessionStart and
`cmem context --topic` use, and the rule the convergence prompt states to the model."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from cmem.reading.project_topic import (
    file_keys,
    project_names,
    project_topic,
    remote_repository,
    repository_name,
)
from cmem.resources import prompt_text


def _topics(*files: tuple[str, list[str], list[str]]) -> list[tuple[str, str]]:
    return [(path, file_keys(path, aliases, tags)) for path, aliases, tags in files]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True)


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("git@github.com:me/chaoxi.git", "chaoxi"),
        ("https://github.com/me/Tide-Pool.git/", "Tide-Pool"),
        ("ssh://git@host:2222/me/潮汐", "潮汐"),
        ("/srv/git/bluefin.git", "bluefin"),
        ("file:///srv/git/bluefin", "bluefin"),
        ("git@host:solo.git", "solo"),
    ],
)
def test_a_remote_url_names_its_repository(url, name):
    assert repository_name(url) == name


def test_names_in_any_script_and_case_find_the_project_file():
    topics = _topics(
        ("converged/topics/潮汐.md", ["chaoxi"], []),
        ("converged/topics/tidepool.md", [], []),
        ("converged/topics/ops.md", [], ["#bluefin"]),
        ("converged/topics/go-course.md", [], []),
    )
    assert project_topic(topics, ["chaoxi"]) == "converged/topics/潮汐.md"
    assert project_topic(topics, ["CHAOXI"]) == "converged/topics/潮汐.md"
    assert project_topic(topics, ["潮汐"]) == "converged/topics/潮汐.md"
    assert project_topic(topics, ["Tide-Pool"]) == "converged/topics/tidepool.md"
    assert project_topic(topics, ["tide_pool"]) == "converged/topics/tidepool.md"
    assert project_topic(topics, ["Ｔｉｄｅ Ｐｏｏｌ"]) == "converged/topics/tidepool.md"  # NFKC
    assert project_topic(topics, ["bluefin"]) == "converged/topics/ops.md"  # a tag
    assert project_topic(topics, ["chaoxi-main"]) is None
    assert project_topic(topics, ["go"]) is None  # a word of a name is not the name
    assert project_topic(topics, []) is None


def test_a_file_named_so_beats_an_alias_and_an_alias_beats_a_tag():
    topics = _topics(
        ("converged/topics/a.md", [], ["chaoxi"]),
        ("converged/topics/b.md", ["chaoxi"], []),
        ("converged/topics/nested/chaoxi.md", [], []),
    )
    assert project_topic(topics, ["chaoxi"]) == "converged/topics/nested/chaoxi.md"
    assert project_topic(topics[:2], ["chaoxi"]) == "converged/topics/b.md"
    # named so by the repository beats an alias of the folder's name; between two files
    # answering alike, the folder's own name before the repository's
    both = _topics(("converged/topics/chaoxi.md", [], []), ("converged/topics/x.md", ["cx"], []))
    assert project_topic(both, ["cx", "chaoxi"]) == "converged/topics/chaoxi.md"
    named = _topics(("converged/topics/chaoxi.md", [], []), ("converged/topics/cx.md", [], []))
    assert project_topic(named, ["cx", "chaoxi"]) == "converged/topics/cx.md"


def test_the_project_is_named_by_its_folder_and_its_origin_remote(tmp_path):
    clone = tmp_path / "code" / "chaoxi-main"
    (clone / "src").mkdir(parents=True)
    _git(clone, "init", "-q")
    _git(clone, "remote", "add", "upstream", "git@github.com:someone/other.git")
    _git(clone, "remote", "add", "origin", "git@github.com:me/chaoxi.git")
    assert project_names(str(clone)) == ["chaoxi-main", "chaoxi"]
    assert project_names(str(clone / "src")) == ["src", "chaoxi-main", "chaoxi"]
    topics = _topics(("converged/topics/潮汐.md", ["chaoxi"], []))
    assert project_topic(topics, project_names(str(clone / "src"))) == "converged/topics/潮汐.md"
    assert project_names(str(tmp_path / "plain")) == ["plain"]
    assert project_names(None) == []


def test_a_worktree_and_a_lone_remote_are_read_from_the_common_config(tmp_path):
    main = tmp_path / "chaoxi"
    main.mkdir()
    _git(main, "init", "-q", "-b", "main")
    _git(main, "remote", "add", "mine", "https://example.com/me/chaoxi.git")
    _git(
        main,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@e",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "x",
    )
    tree = tmp_path / "feature-x"
    _git(main, "worktree", "add", "-q", str(tree))
    assert (tree / ".git").is_file()  # `gitdir: …/worktrees/feature-x`
    assert project_names(str(tree)) == ["feature-x", "chaoxi"]


def test_a_broken_or_odd_git_config_names_nothing(tmp_path):
    config = tmp_path / "config"
    assert remote_repository(str(config)) is None  # missing
    config.write_text('[remote "a"]\n\turl = x:/a.git\n[remote "b"]\n\turl = y:/b.git\n', "utf-8")
    assert remote_repository(str(config)) is None  # two remotes, none is origin
    config.write_text(
        '[core]\n\turl = z:/no.git\n[remote "origin"]\n\tURL = "q:/yes.git"\n', "utf-8"
    )
    assert remote_repository(str(config)) == "yes"
    odd = tmp_path / "sub"
    odd.mkdir()
    (odd / ".git").write_text("not a gitdir line\n", "utf-8")
    assert project_names(str(odd)) == ["sub"]


def test_the_prompt_states_the_rule_the_matcher_follows():
    """Both prompts name the three ways a topic file answers to a project and give the examples;
    the matcher agrees with each example."""
    for language in ("en", "zh"):
        text = prompt_text(f"converge.{language}.md")
        for word in (
            "`aliases`",
            "`tags`",
            "`Tide-Pool`",
            "`tidepool.md`",
            "`潮汐.md`",
            "rule 12" if language == "en" else "规则 12",
        ):
            assert word in text, (language, word)
        assert re.search(r"aliases: \[chaoxi\]", text)
    topics = _topics(
        ("converged/topics/潮汐.md", ["chaoxi"], []), ("converged/topics/tidepool.md", [], [])
    )
    assert project_topic(topics, ["chaoxi"]) == "converged/topics/潮汐.md"
    assert project_topic(topics, ["Tide-Pool"]) == "converged/topics/tidepool.md"
    # a file named as the prompt says when a note has the project's name still answers to it
    aside = _topics(("converged/topics/chaoxi project.md", ["chaoxi"], []))
    assert project_topic(aside, ["chaoxi"]) == "converged/topics/chaoxi project.md"
