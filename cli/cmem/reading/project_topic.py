"""Which topic file is a project's: the one matcher SessionStart and `cmem context --topic` use.

A project goes by several names: the folder a session works in (`~/code/chaoxi-main`), the
top folder of the git repository holding it, and the repository's name in its `origin` remote
(`git@github.com:me/chaoxi.git` → `chaoxi`), read from git's config file by `steps/git_head.py`,
never by starting git.
A topic file answers to its file name, its `aliases` and its `tags`. Names are compared by
`text.names.name_key` (any script, any case, without spaces, hyphens or underscores: `Tide-Pool`
is `tidepool.md`, `chaoxi` is `潮汐.md` with `aliases: [chaoxi]`). A file named like the project
comes first, then one that has it as an alias, then one tagged with it; the session's own folder
name before the repository's names. The convergence prompt states the same rule to the model
(prompts/converge.{en,zh}.md, "Sessions"). Stdlib only: the SessionStart hook imports it.
"""

from __future__ import annotations

import os

from cmem.text.names import name_key

# How a file answers to a name, best first
BY_NAME, BY_ALIAS, BY_TAG = 0, 1, 2


def project_names(cwd: str | None) -> list[str]:
    """The project's names, most particular first: the folder, the repository's top folder, the
    repository's name in its `origin` remote (else its only remote)."""
    if not cwd:
        return []
    folder = os.path.abspath(os.path.expanduser(cwd))
    names = [os.path.basename(folder.rstrip(os.sep))]
    from cmem.steps.git_head import git_location

    found = git_location(folder)
    if found is not None:
        top, _git_dir, common = found
        names.append(os.path.basename(top.rstrip(os.sep)))
        remote = remote_repository(os.path.join(common, "config")) if common else None
        if remote:
            names.append(remote)
    unique: list[str] = []
    for name in names:
        if name and name_key(name) and name_key(name) not in map(name_key, unique):
            unique.append(name)
    return unique


def remote_repository(config_path: str) -> str | None:
    """The repository name in the URL of the `origin` remote of a git config file (of its only
    remote when it has no `origin`), or None."""
    from cmem.steps.git_head import remote_url

    url = remote_url(config_path)
    return repository_name(url) if url else None


def repository_name(url: str) -> str | None:
    """`chaoxi` of `git@github.com:me/chaoxi.git`, `https://host/me/chaoxi/`, `/srv/chaoxi.git`."""
    path = url.rstrip("/").removesuffix(".git").rstrip("/")
    name = path.replace(":", "/").rsplit("/", 1)[-1]
    return name or None


def file_keys(path: str, aliases, tags) -> str:
    """The name keys a memory file at `path` answers to, packed in one string (kept with the
    file where it is read often): its file name's, then its aliases', then its tags' (a `#`
    before a tag is not part of it). A key never holds the separators, which are spaces."""
    stem = path.rsplit("/", 1)[-1].removesuffix(".md")
    return _SEP.join(
        (
            name_key(stem),
            _ITEM.join(name_key(str(alias)) for alias in aliases),
            _ITEM.join(name_key(str(tag).lstrip("#")) for tag in tags),
        )
    )


_SEP, _ITEM = "\x1f", "\x1e"  # space to `str.isspace`, so `name_key` removes them from names


def name_keys(names: list[str]) -> dict[str, int]:
    """Each name's key and its place among the names (the first place where two share a key)."""
    keys: dict[str, int] = {}
    for order, name in enumerate(names):
        keys.setdefault(name_key(name), order)
    keys.pop("", None)
    return keys


def answers_to(packed: str, keys: dict[str, int]) -> tuple[int, int] | None:
    """How a file whose `file_keys` are `packed` answers to one of the names `keys` holds:
    (BY_NAME, BY_ALIAS or BY_TAG, the name's place), the best such pair, or None."""
    stem, aliases, tags = packed.split(_SEP)
    if stem in keys:
        return BY_NAME, keys[stem]
    for how, held in ((BY_ALIAS, aliases), (BY_TAG, tags)):
        found = [keys[key] for key in held.split(_ITEM) if key in keys] if held else []
        if found:
            return how, min(found)
    return None


def how_named(path: str, aliases, tags, name: str) -> int | None:
    """How a memory file answers to one name (BY_NAME, BY_ALIAS, BY_TAG), or None."""
    found = answers_to(file_keys(path, aliases, tags), name_keys([name]))
    return found[0] if found else None


def project_topic(topics, names: list[str]) -> str | None:
    """The path of the topic file of a project called `names`, among `topics` ((path, its
    `file_keys`) pairs), or None: the best way of answering first, then the project's first
    name, then the path."""
    keys = name_keys(names)
    best = None
    if keys:
        for path, packed in topics:
            for key in keys:  # a substring first: thousands of files, nearly none named so
                if key in packed:
                    break
            else:
                continue
            found = answers_to(packed, keys)
            if found is not None and (best is None or (*found, path) < best):
                best = (*found, path)
    return best[2] if best is not None else None
