"""Every path from config or a checklist line stays inside the vault, inside its layer, outside
dot-folders, not through a link that leaves; layers never overlap (docs/design.md §5 "Steps", issue
#10). And an OS error (a full disk, a read-only folder) is one sentence, not a traceback."""

from __future__ import annotations

import errno
import os
from datetime import date
from pathlib import Path

import pytest

from cmem.archive.gate import READY, REFUSED, list_staged, plan_archive
from cmem.errors import CmemError, ConfigError
from cmem.vault.config import default_config_text, load_config, parse_config
from cmem.vault.layers import ARCHIVE, DIVERGENT, RESIDENT, SITUATIONAL, PathRefused, open_vault
from history_helpers import CHECKLIST, fake_pass, head, run_main, tick
from support import git
from support import run_cmem as _cmem

WHERE = Path("/v/.cmem/config.yaml")
NOTE = "2026-11-28 随手记.md"


# --- settings, checked when the config loads ---------------------------------------------------

REFUSED_SETTINGS = [
    # every path setting: absolute, '..', dot-folders, never-read folders, backslashes, control characters
    ({"layers": {"resident": "/etc/memory"}}, "layers.resident", "absolute"),
    ({"layers": {"resident": "../memory"}}, "layers.resident", "'..'"),
    ({"layers": {"situational": "notes/../../topics"}}, "layers.situational", "'..'"),
    ({"layers": {"archive": ".git/archive"}}, "layers.archive", "'.git'"),
    ({"layers": {"archive": "old/.obsidian"}}, "layers.archive", "'.obsidian'"),
    ({"layers": {"archive": ".cmem"}}, "layers.archive", "'.cmem'"),
    ({"layers": {"archive": "node_modules/archive"}}, "layers.archive", "'node_modules'"),
    ({"layers": {"resident": "converged\\core"}}, "layers.resident", "backslash"),
    ({"layers": {"resident": "converged/co\x00re"}}, "layers.resident", "U+0000"),
    ({"layers": {"resident": "converged/\u202ecore"}}, "layers.resident", "U+202E"),
    ({"layers": {"resident": "converged//core"}}, "layers.resident", "empty"),
    ({"divergent": {"extra_folders": ["../daily"]}}, "divergent.extra_folders", "'..'"),
    ({"divergent": {"extra_folders": [".daily"]}}, "divergent.extra_folders", "'.daily'"),
    ({"archive": {"checklist": "../../x.md"}}, "archive.checklist", "'..'"),
    ({"archive": {"checklist": "/tmp/x.md"}}, "archive.checklist", "absolute"),
    ({"archive": {"checklist": ".git/x.md"}}, "archive.checklist", "'.git'"),
    ({"archive": {"pattern": "../{name}"}}, "archive.pattern", "'..'"),
    ({"archive": {"pattern": "{yyyy}/../../{name}"}}, "archive.pattern", "'..'"),
    ({"archive": {"pattern": "/{yyyy}/{name}"}}, "archive.pattern", "absolute"),
    ({"archive": {"pattern": ".{yyyy}/{name}"}}, "archive.pattern", "'.2026'"),
    ({"archive": {"pattern": "{yyyy}/.git/{name}"}}, "archive.pattern", "'.git'"),
    ({"capture": {"folder": "../inbox"}}, "capture.folder", "'..'"),
    ({"capture": {"folder": "inbox"}}, "capture.folder", "never be scanned"),
    ({"capture": {"folder": "converged/core"}}, "capture.folder", "divergent.extra_folders"),
    ({"capture": {"name_pattern": "../{date}"}}, "capture.name_pattern", "folder"),
    ({"capture": {"name_pattern": ".{date}"}}, "capture.name_pattern", "'.2026-11-28.md'"),
    (
        {"capture": {"name_pattern": "{date} inbox"}, "divergent": {"exclude": ["* inbox.md"]}},
        "capture.name_pattern",
        "divergent.exclude",
    ),
    # layers never overlap
    (
        {"layers": {"archive": "converged/core"}},
        "layers.archive",
        "same folder as 'layers.resident'",
    ),
    (
        {"layers": {"archive": "Converged/Core"}},
        "layers.archive",
        "same folder as 'layers.resident'",
    ),
    ({"layers": {"resident": "a", "situational": "a"}}, "layers.resident", "same folder"),
    (
        {"layers": {"resident": "a", "situational": "a/b"}},
        "layers.resident",
        "holds 'layers.situational'",
    ),
    (
        {"layers": {"archive": "converged/core/old"}},
        "layers.archive",
        "lies inside 'layers.resident'",
    ),
    ({"layers": {"archive": "converged"}}, "layers.archive", "holds 'layers.resident'"),
    (
        {"divergent": {"extra_folders": ["archive"]}},
        "divergent.extra_folders",
        "same folder as 'layers.archive'",
    ),
    (
        {"divergent": {"extra_folders": ["converged"]}},
        "divergent.extra_folders",
        "holds 'layers.resident'",
    ),
    (
        {"divergent": {"extra_folders": ["daily", "daily/"]}},
        "divergent.extra_folders",
        "each folder may appear once",
    ),
]


@pytest.mark.parametrize("data, key, reason", REFUSED_SETTINGS)
def test_a_path_setting_outside_its_place_is_one_error_naming_the_key(data, key, reason):
    with pytest.raises(ConfigError) as excinfo:
        parse_config(data, WHERE)
    message = str(excinfo.value)
    assert message.startswith(f"{WHERE}: setting '{key}'") and reason in message, message
    assert "\n" not in message and "\x00" not in message and "\u202e" not in message


@pytest.mark.parametrize(
    "data",
    [
        {},
        {
            "layers": {
                "resident": "memory/core",
                "situational": "memory/topics",
                "archive": "memory-archive",
            }
        },
        {
            "layers": {"resident": " converged/core/ "}
        },  # surrounding spaces and trailing slashes are trimmed, as before
        {"divergent": {"extra_folders": ["daily", "journal/days"]}, "capture": {"folder": "daily"}},
        {"divergent": {"extra_folders": ["daily"]}, "capture": {"folder": "daily/"}},
        {"archive": {"pattern": "{yyyy}/{mm}/{dd} {name}", "checklist": "lists/TODO.md"}},
        {"capture": {"folder": "", "name_pattern": "{date} inbox"}},
    ],
)
def test_paths_inside_their_place_are_accepted(data):
    config = parse_config(data, WHERE)
    assert config.capture_folder in ("", *config.extra_divergent)


def test_trailing_slashes_are_trimmed():
    assert (
        parse_config({"layers": {"resident": "converged/core/"}}, WHERE).resident_dir
        == "converged/core"
    )


@pytest.mark.parametrize("language", ["zh", "en"])
def test_the_default_config_init_writes_stays_valid(tmp_path, language):
    (tmp_path / ".cmem").mkdir()
    (tmp_path / ".cmem/config.yaml").write_text(default_config_text(language), encoding="utf-8")
    config = load_config(tmp_path)
    assert (
        config.resident_dir,
        config.situational_dir,
        config.archive_dir,
        config.capture_folder,
    ) == ("converged/core", "converged/topics", "archive", "")


def _yaml(data: dict) -> str:
    import json

    return "".join(
        f"{key}: {json.dumps(value, ensure_ascii=False)}\n" for key, value in data.items()
    )  # JSON is YAML


@pytest.mark.parametrize("data, key, reason", REFUSED_SETTINGS)
def test_a_refused_setting_stops_the_cli_with_one_sentence(
    make_vault, monkeypatch, capsys, data, key, reason
):
    root = make_vault(config_yaml=_yaml(data))
    with pytest.raises(ConfigError):
        load_config(root)
    code, out, err = run_main(monkeypatch, capsys, "status", "--vault", str(root))
    assert code == 1 and f"setting '{key}'" in err and "config.yaml" in err and reason in err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err


def test_a_refused_setting_in_a_real_process_has_no_traceback(make_vault):
    root = make_vault(config_yaml="layers:\n  archive: converged/core\n")
    for args in (
        ["status"],
        ["scan", "--json"],
        ["note", "x"],
        ["converge", "--engine", "builtin", "--dry-run"],
    ):
        done = _cmem(*args, "--vault", str(root))
        assert (
            done.returncode == 1
            and "'layers.archive'" in (done.stderr + done.stdout)
            and "Traceback" not in done.stderr
        ), done


# --- the disk: symbolic links that leave ---------------------------------------------------------


@pytest.fixture
def outside(tmp_path) -> Path:
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "secret.md").write_text("- not a note of the vault\n", encoding="utf-8")
    return folder


def _link_folder(root: Path, rel: str, target: Path) -> None:
    """Replace the folder `rel` with a symbolic link to `target` (its files moved there)."""
    folder = root / rel
    if folder.exists():
        for child in folder.iterdir():
            child.rename(target / child.name)
        folder.rmdir()
    folder.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(target, folder.parent), folder)


def test_confined_accepts_paths_in_their_layer(make_vault):
    vault = open_vault(make_vault(config_yaml="divergent:\n  extra_folders: [daily]\n"))
    assert (
        vault.confined("converged/core/profile.md", RESIDENT)
        == vault.root / "converged/core/profile.md"
    )
    assert (
        vault.confined("converged/topics/deep/x.md", SITUATIONAL)
        == vault.root / "converged/topics/deep/x.md"
    )
    assert vault.confined("archive/2026-11/x.md", ARCHIVE) == vault.root / "archive/2026-11/x.md"
    assert vault.confined("x.md", DIVERGENT) == vault.root / "x.md"
    assert vault.confined("daily/x.md", DIVERGENT) == vault.root / "daily/x.md"
    assert vault.confined("misc/x.md") == vault.root / "misc/x.md"


@pytest.mark.parametrize(
    "rel, layer, reason",
    [
        ("../x.md", None, "'..'"),
        ("/etc/passwd", None, "absolute"),
        ("", None, "empty"),
        (".git/config", None, "'.git'"),
        (".cmem/state.json", None, "'.cmem'"),
        ("archive/.git/x.md", ARCHIVE, "'.git'"),
        ("archive/.obsidian/x.md", ARCHIVE, "'.obsidian'"),
        ("archive/../x.md", ARCHIVE, "'..'"),
        ("converged/topics/x.md", RESIDENT, "outside the resident layer"),
        ("converged/core/x.md", ARCHIVE, "outside the archive layer"),
        ("misc/x.md", DIVERGENT, "outside the divergent layer"),
        ("archive\\x.md", ARCHIVE, "backslash"),
        ("archive/bad\udcff.md", ARCHIVE, "not valid UTF-8"),
    ],
)
def test_confined_refuses_by_name(make_vault, rel, layer, reason):
    vault = open_vault(make_vault())
    with pytest.raises(PathRefused) as excinfo:
        vault.confined(rel, layer)
    assert isinstance(excinfo.value, CmemError) and reason in str(excinfo.value)
    str(excinfo.value).encode("utf-8")  # printable as it is: an undecodable name is shown escaped


def test_confined_refuses_a_layer_folder_linked_out_of_the_vault(make_vault, outside):
    root = make_vault()
    _link_folder(root, "archive", outside)
    vault = open_vault(root)
    with pytest.raises(PathRefused) as excinfo:
        vault.confined("archive/2026-11/x.md", ARCHIVE)
    message = str(excinfo.value)
    assert (
        "symbolic link archive" in message
        and "'layers.archive'" in message
        and "out of the vault" in message
    )
    assert vault.layer_folder_problem(ARCHIVE) and vault.layer_folder_problem(RESIDENT) is None


def test_confined_refuses_links_into_dot_folders_and_other_layers(make_vault):
    root = make_vault()
    (root / ".git").mkdir()
    os.symlink("../.git", root / "archive/2026-11")
    with pytest.raises(PathRefused, match=r"into \.git/"):
        open_vault(root).confined("archive/2026-11/x.md", ARCHIVE)
    os.symlink("../core", root / "converged/topics/alias")
    with pytest.raises(PathRefused, match="out of converged/topics/"):
        open_vault(root).confined("converged/topics/alias/x.md", SITUATIONAL)
    (root / "converged/topics/alias").unlink()
    (root / "converged/topics").rmdir()
    os.symlink("core", root / "converged/topics")  # the situational folder is the resident one
    with pytest.raises(PathRefused, match="another layer"):
        open_vault(root).confined("converged/topics/x.md", SITUATIONAL)


def test_a_link_that_stays_in_its_layer_is_allowed(make_vault):
    root = make_vault({"archive/2026-11/old.md": "x\n"})
    os.symlink("2026-11", root / "archive/latest")
    assert (
        open_vault(root).confined("archive/latest/new.md", ARCHIVE)
        == root / "archive/latest/new.md"
    )


def test_a_layer_folder_linked_out_is_not_read_and_is_reported(
    make_vault, outside, monkeypatch, capsys
):
    root = make_vault({"a.md": "- 以后都用 uv\n", "converged/topics/jobs.md": "- x\n"}, git=True)
    _link_folder(root, "converged/topics", outside)
    vault = open_vault(root)
    assert vault.list_layer(SITUATIONAL) == []  # secret.md outside the vault is never read
    code, out, err = run_main(monkeypatch, capsys, "status", "--vault", str(root))
    assert code == 0 and "converged/topics" in out and "out of the vault" in out
    code, out, err = run_main(monkeypatch, capsys, "doctor", "--vault", str(root))
    text = " ".join(out.split())
    assert "error layers: converged/topics/ goes through the symbolic link converged/topics" in text
    assert text.count("(setting 'layers.situational')") == 1 and "out of the vault" in text
    code, out, err = run_main(
        monkeypatch, capsys, "recall", "not a note", "--vault", str(root), "--json"
    )
    assert "secret" not in out


def test_capture_into_a_divergent_folder_linked_out_is_refused(
    make_vault, outside, monkeypatch, capsys
):
    root = make_vault(
        config_yaml="divergent:\n  extra_folders: [daily]\ncapture:\n  folder: daily\n"
    )
    (root / "daily").symlink_to(outside)
    before = sorted(p.name for p in outside.iterdir())
    code, out, err = run_main(monkeypatch, capsys, "note", "以后都先写测试", "--vault", str(root))
    assert (
        code == 1
        and "symbolic link daily" in err
        and "'divergent.extra_folders'" in err
        and "Traceback" not in err
    )
    assert sorted(p.name for p in outside.iterdir()) == before


# --- checklist lines ------------------------------------------------------------------------------


@pytest.fixture
def staged(make_vault):
    root = make_vault(
        {NOTE: "# 随手记\n\n- 我决定改找深圳的实习\n", "converged/core/profile.md": "# Profile\n"},
        git=True,
    )
    fake_pass(
        root,
        [NOTE],
        {"converged/core/profile.md": "# Profile\n\n- 改找深圳（来源：[[2026-11-28 随手记]]）\n"},
    )
    return root


def _retarget(root: Path, target: str) -> None:
    text = (root / CHECKLIST).read_text("utf-8").replace(f"→ archive/2026-11/{NOTE}", f"→ {target}")
    (root / CHECKLIST).write_text(text, encoding="utf-8")
    tick(root, NOTE.removesuffix(".md"))


@pytest.mark.parametrize(
    "target, reason",
    [
        ("archive/.git/x.md", "'.git'"),
        ("archive/.obsidian/x.md", "'.obsidian'"),
        ("archive/../x.md", "'..'"),
        ("archive/2026-11/../../x.md", "'..'"),
        ("/tmp/x.md", "absolute"),
        ("converged/core/x.md", "outside the archive layer"),
        ("elsewhere/x.md", "outside the archive layer"),
        ("archive/ARCHIVE-CHECKLIST.md", "the checklist itself"),
        ("archive/2026-11/x.txt", "not a Markdown file"),
    ],
)
def test_a_checklist_line_aiming_elsewhere_is_skipped_with_the_reason(
    staged, monkeypatch, capsys, target, reason
):
    _retarget(staged, target)
    vault = open_vault(staged)
    line = next(line for line in list_staged(vault) if line.note == NOTE.removesuffix(".md"))
    assert line.state == REFUSED and reason in line.detail and "nothing is moved" in line.detail
    plan = plan_archive(vault)
    assert not plan.moves and [s.state for s in plan.skipped] == [REFUSED]
    before = head(staged)
    code, out, err = run_main(
        monkeypatch, capsys, "archive", "apply", "--yes", "--vault", str(staged)
    )
    assert code == 0 and "refused" in out and reason in out
    assert (staged / NOTE).exists() and head(staged) == before


def test_archive_list_json_names_the_refusal(staged, monkeypatch, capsys):
    import json

    _retarget(staged, "archive/.git/x.md")
    code, out, _ = run_main(
        monkeypatch, capsys, "archive", "list", "--json", "--vault", str(staged)
    )
    (line,) = json.loads(out)["staged"]
    assert code == 0 and line["state"] == "refused" and "'.git'" in line["detail"]


def test_an_archive_folder_committed_as_a_link_out_of_the_vault_moves_nothing(staged, outside):
    _link_folder(staged, "archive", outside)  # the checklist moves with it, and is read through it
    git(staged, "add", "-A")
    git(staged, "commit", "-qm", "the archive lives elsewhere now")
    before_head, before_outside = head(staged), sorted(p.name for p in outside.rglob("*"))
    done = _cmem("archive", "apply", "--all", "--yes", "--vault", str(staged))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done
    assert (
        "refused" in done.stdout
        and "symbolic link archive" in done.stdout
        and "'layers.archive'" in done.stdout
    )
    assert (staged / NOTE).exists() and head(staged) == before_head
    assert sorted(p.name for p in outside.rglob("*")) == before_outside
    assert git(staged, "status", "--porcelain") == ""


def test_a_plain_line_is_still_ready(staged):
    assert [line.state for line in list_staged(open_vault(staged))] == [READY]


# --- OS errors are one sentence ------------------------------------------------------------------


def _raise_on_replace(monkeypatch, code: int) -> None:
    """The temp file's move into place fails: a rename, or the hard link that creates a new
    file without replacing one."""
    for name in ("replace", "link"):
        real = getattr(os, name)

        def failing(src, dst, *args, real=real, **kwargs):
            if str(src).endswith(".cmem-tmp"):
                raise OSError(code, os.strerror(code), str(src), None, str(dst))
            return real(src, dst, *args, **kwargs)

        monkeypatch.setattr(os, name, failing)


def test_a_full_disk_is_one_sentence_naming_the_file(make_vault, monkeypatch, capsys):
    root = make_vault()
    _raise_on_replace(monkeypatch, errno.ENOSPC)
    code, out, err = run_main(monkeypatch, capsys, "note", "以后都用 uv", "--vault", str(root))
    name = open_vault(root).config.capture_pattern.replace("{date}", date.today().isoformat())
    assert (
        code == 1
        and err.startswith("error: cannot write ")
        and err.count("\n") == 1
        and "Traceback" not in err
    )
    assert f"{root / name}: no space left on device." in err and ".cmem-tmp" not in err
    assert not (root / name).exists() and not [
        p for p in root.iterdir() if p.name.endswith(".cmem-tmp")
    ]


def test_a_full_disk_without_a_file_name_is_still_one_sentence(make_vault, monkeypatch, capsys):
    root = make_vault()

    def full(*args, **kwargs):
        raise OSError(
            errno.ENOSPC, os.strerror(errno.ENOSPC)
        )  # what a failed write() raises: no file name

    monkeypatch.setattr("cmem.triggers.capture.write_atomic", full)
    code, _, err = run_main(monkeypatch, capsys, "note", "x", "--vault", str(root))
    assert code == 1 and err == "error: no space left on device.\n"


@pytest.mark.parametrize(
    "code, words", [(errno.EDQUOT, "quota"), (errno.EROFS, "read-only file system")]
)
def test_quota_and_read_only_disks_are_one_sentence(make_vault, monkeypatch, capsys, code, words):
    root = make_vault()
    _raise_on_replace(monkeypatch, code)
    exit_code, _, err = run_main(monkeypatch, capsys, "note", "x", "--vault", str(root))
    assert (
        exit_code == 1
        and err.startswith("error: cannot write ")
        and words in err.lower()
        and "Traceback" not in err
    )


@pytest.mark.parametrize("code", [errno.EACCES, errno.EPERM])
def test_permission_errors_name_the_file(make_vault, monkeypatch, capsys, code):
    root = make_vault({"2026-01-01 x.md": "- a\n"})
    target = root / "2026-01-01 x.md"

    def unreadable(*args, **kwargs):
        raise PermissionError(code, os.strerror(code), str(target))

    monkeypatch.setattr("cmem.scan.scan_cache.read_note", unreadable)
    exit_code, out, err = run_main(monkeypatch, capsys, "scan", "--vault", str(root))
    reason = os.strerror(code)
    assert exit_code == 1 and err == f"error: {target}: {reason[0].lower() + reason[1:]}.\n"


def test_an_os_error_under_json_is_a_json_error(make_vault, monkeypatch, capsys):
    import json

    root = make_vault()
    monkeypatch.setattr(
        "cmem.reading.status.measure_layers",
        lambda vault, rescan=False: (_ for _ in ()).throw(
            OSError(errno.EACCES, "Permission denied", str(root / "archive"))
        ),
    )
    code, out, err = run_main(monkeypatch, capsys, "status", "--json", "--vault", str(root))
    assert code == 1 and json.loads(out) == {"error": f"{root / 'archive'}: permission denied."}


def test_a_bug_keeps_its_traceback(make_vault, monkeypatch, capsys):
    root = make_vault()
    monkeypatch.setattr(
        "cmem.reading.status.measure_layers",
        lambda vault, rescan=False: (_ for _ in ()).throw(
            OSError(errno.EBADF, "Bad file descriptor")
        ),
    )
    with pytest.raises(OSError):
        run_main(monkeypatch, capsys, "status", "--vault", str(root))
    monkeypatch.setattr(
        "cmem.reading.status.measure_layers",
        lambda vault, rescan=False: (_ for _ in ()).throw(KeyError("layer")),
    )
    with pytest.raises(KeyError):
        run_main(monkeypatch, capsys, "status", "--vault", str(root))


@pytest.mark.skipif(
    os.name != "posix" or os.geteuid() == 0, reason="root writes into read-only folders"
)
def test_a_read_only_vault_folder_is_one_sentence(make_vault):
    root = make_vault()
    root.chmod(0o555)
    try:
        done = _cmem("note", "x", "--vault", str(root))
    finally:
        root.chmod(0o755)
    assert (
        done.returncode == 1
        and done.stderr.startswith("error: ")
        and "permission denied" in done.stderr
        and "Traceback" not in done.stderr
    )


# --- issue 43: a `.cmem/` linked out of the vault: every write refused, every read said --------


def _bytes_under(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (followed through links) and its bytes."""
    found = {}
    for current, _dirs, names in os.walk(folder, followlinks=True):
        for name in names:
            path = Path(current) / name
            found[str(path.relative_to(folder))] = path.read_bytes()
    return found


@pytest.fixture
def linked(tmp_path) -> tuple[Path, Path]:
    """`mine`, a vault after a pass (its note staged and ticked, another note pending), whose
    `.cmem/` was swapped for a link to `theirs/.cmem/`: another vault's, as a sync client or a
    careless `ln -s` makes it."""
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    for root in (mine, theirs):
        assert _cmem("init", str(root), "--lang", "en").returncode == 0
    (mine / "2026-11-28 tea.md").write_text("Actually I prefer tea.\n", encoding="utf-8")
    done = _cmem("converge", "--engine", "builtin", "--vault", str(mine))
    assert done.returncode == 0, done.stderr
    checklist = mine / "archive" / "ARCHIVE-CHECKLIST.md"
    checklist.write_text(checklist.read_text("utf-8").replace("- [ ]", "- [x]"), "utf-8")
    (mine / "2026-11-29 coffee.md").write_text("From now on no coffee after 2pm.\n", "utf-8")
    git(mine, "add", "-A")
    git(mine, "commit", "-qm", "ticked, and a new note")
    import shutil

    shutil.rmtree(mine / ".cmem")
    os.symlink(os.path.join("..", "theirs", ".cmem"), mine / ".cmem")
    return mine, theirs


def _transcript(tmp_path: Path) -> Path:
    path = tmp_path / "session.jsonl"
    path.write_text(
        '{"role": "user", "content": "actually the staging db is on port 5433"}\n'
        '{"role": "assistant", "content": "noted"}\n',
        encoding="utf-8",
    )
    return path


WRITES = {
    "converge": lambda mine, tmp: ["converge", "--engine", "builtin"],
    "archive apply": lambda mine, tmp: ["archive", "apply", "--all", "--yes"],
    "undo": lambda mine, tmp: ["undo", "--yes"],
    "capture": lambda mine, tmp: ["capture", str(_transcript(tmp)), "--agent", "generic"],
    "doctor --fix": lambda mine, tmp: ["doctor", "--fix", "--yes"],
    "init": lambda mine, tmp: ["init", str(mine)],
}


@pytest.mark.parametrize("command", sorted(WRITES))
def test_a_cmem_folder_linked_to_another_vault_is_never_written_through(linked, tmp_path, command):
    """Issue 43: a symlinked `.cmem` made every pass write state.json into the other vault."""
    mine, theirs = linked
    if command == "doctor --fix":  # a state.json doctor --fix would restore from git
        (theirs / ".cmem" / "state.json").write_text("", encoding="utf-8")
    before, head = _bytes_under(theirs), git(mine, "rev-parse", "HEAD")
    args = WRITES[command](mine, tmp_path)
    done = _cmem(*args, *([] if command == "init" else ["--vault", str(mine)]))
    assert done.returncode == 1, (command, done.stdout, done.stderr)
    error = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(error) == 1 and f"{mine}/.cmem is a symbolic link" in error[0], done.stderr
    assert "Traceback" not in done.stderr
    assert _bytes_under(theirs) == before  # the other vault: untouched
    assert git(mine, "rev-parse", "HEAD") == head  # and nothing committed here


def test_reading_commands_read_through_it_and_say_so(linked):
    mine, theirs = linked
    before = _bytes_under(theirs)
    for args in (["status"], ["scan"], ["scan", "--json"], ["context"], ["archive", "list"]):
        for _attempt in range(2):  # the second call is never answered silently from a stored one
            done = _cmem(*args, "--vault", str(mine))
            assert done.returncode == 0, (args, done.stderr)
            assert f"{mine}/.cmem is a symbolic link" in done.stderr, args
    doctor = _cmem("doctor", "--vault", str(mine))
    assert doctor.returncode == 1 and "no pass, archive apply, undo, capture" in doctor.stdout
    note = _cmem("note", "a line for today", "--vault", str(mine))
    assert note.returncode == 0 and "never writes through it" in note.stderr
    assert any("a line for today" in p.read_text("utf-8") for p in mine.glob("*.md"))
    assert _bytes_under(theirs) == before


@pytest.mark.parametrize("name", ["state.json", "config.yaml"])
def test_a_file_of_the_cmem_folder_linked_out_of_the_vault(tmp_path, name):
    """`.cmem/state.json` linked out: every step refuses, naming it. `.cmem/config.yaml` linked
    out (a config shared between vaults): read, and said; a pass, which never writes it, runs."""
    mine, elsewhere = tmp_path / "mine", tmp_path / "elsewhere"
    assert _cmem("init", str(mine), "--lang", "en").returncode == 0
    elsewhere.mkdir()
    (mine / ".cmem" / name).rename(elsewhere / name)
    os.symlink(elsewhere / name, mine / ".cmem" / name)
    git(mine, "add", "-A")
    git(mine, "commit", "-qm", "a linked file")
    (mine / "2026-11-28 tea.md").write_text("Actually I prefer tea.\n", encoding="utf-8")
    before = (elsewhere / name).read_bytes()
    done = _cmem("converge", "--engine", "builtin", "--vault", str(mine))
    status = _cmem("status", "--vault", str(mine))
    assert f"{mine}/.cmem/{name} is a symbolic link" in status.stderr
    if name == "state.json":
        assert done.returncode == 1 and f"{mine}/.cmem/state.json is a symbolic link" in done.stderr
        assert (elsewhere / name).read_bytes() == before
    else:
        assert done.returncode == 0, done.stderr
        assert (elsewhere / name).read_bytes() == before  # read, never written
        refused = _cmem("init", str(mine))
        assert refused.returncode == 1 and f".cmem/{name} is a symbolic link" in refused.stderr


def test_a_cmem_folder_linked_while_a_step_runs_is_caught_before_the_write(make_vault, tmp_path):
    """The last check, just before state.json is replaced: a `.cmem/` swapped for a link after
    the step's preflight still writes nothing through it."""
    from cmem.steps.changes import check_confined

    root = make_vault({}, git=True)
    vault = open_vault(root)
    check_confined(vault, ".cmem/state.json")  # a plain folder: fine
    (tmp_path / "elsewhere").mkdir()
    (root / ".cmem").rename(tmp_path / "elsewhere" / ".cmem")
    os.symlink(tmp_path / "elsewhere" / ".cmem", root / ".cmem")
    with pytest.raises(CmemError, match=r"\.cmem is a symbolic link .* out of the vault"):
        check_confined(vault, ".cmem/state.json")
