"""What the SessionStart hook reads and shows (docs/design.md §14), in real processes: it answers
from what `reading/start_memory.py` keeps of the memory files, reads again only a memory file that
changed, never opens a divergent note or scans, and starts a refresh in the background when what it
keeps is not enough. What it reads and starts is told by Python's own audit events (`open`,
`os.scandir`, `os.posix_spawn`), logged by the process itself. No timed assertions:
bench/agent_loop.py measures how fast it answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cmem.reading.start_memory import KEPT_FILE
from cmem.setup.init import init_vault
from cmem.vault.layers import open_vault
from support import git, settle
from trigger_helpers import wait_for

REFRESHING = "bringing this memory up to date in the background"
# Python itself: every file opened, folder listed and process started, logged before it happens
AUDIT = """
import sys
log = open(sys.argv[1], "a", encoding="utf-8")
def seen(event, args):
    if event in ("open", "os.scandir", "os.listdir", "os.posix_spawn"):
        where = args[0] if event != "os.posix_spawn" else " ".join(map(str, args[1]))
        log.write(f"{event}\\t{where}\\n")
        log.flush()
sys.addaudithook(seen)
sys.argv = ["cmem", *sys.argv[2:]]
from cmem.cli import main
main()
"""


def _vault(tmp_path: Path) -> Path:
    root = tmp_path / "v"
    init_vault(root, "en")
    (root / "converged/core/profile.md").write_text(
        "---\nsummary: who I am\n---\n# Profile\n\n- Prefers short answers (source: [[n]])\n",
        "utf-8",
    )
    (root / "converged/topics/潮汐.md").write_text(
        "---\nsummary: the Chaoxi project\naliases: [chaoxi]\n---\n# 潮汐\n\n"
        "- Chaoxi uses pnpm and Node 20 (source: [[n]])\n",
        "utf-8",
    )
    (root / "converged/topics/go-course.md").write_text(
        "---\nsummary: a Go course\n---\n# Go\n\n- Saturday mornings (source: [[n]])\n", "utf-8"
    )
    for index in range(5):
        (root / f"2026-11-2{index} notes.md").write_text(f"I prefer tabs {index}\n", "utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "notes")
    settle(root)
    return root


def _start(root: Path, cwd: Path, log: Path) -> str:
    """The hook run as an agent runs it, in `cwd`; its additionalContext."""
    done = subprocess.run(
        [sys.executable, "-c", AUDIT, str(log), "--vault", str(root), "hook", "run",
         "session-start", "--agent", "claude-code"],
        input=json.dumps({"hook_event_name": "SessionStart", "source": "startup", "cwd": str(cwd)}),
        capture_output=True, text=True, cwd=cwd, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert len(context) <= 10_000
    return context


def _events(log: Path) -> list[tuple[str, str]]:
    lines = log.read_text("utf-8").splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return [tuple(line.split("\t", 1)) for line in lines]  # type: ignore[misc]


def _divergent_or_archive(root: Path, events) -> list[str]:
    """Every note outside the memory layers the hook opened, and every listing of the vault's
    root (where the divergent notes are) or of the archive."""
    found = []
    for event, where in events:
        path = Path(where) if not where.isdigit() else None
        if path is None or (root not in path.parents and path != root):
            continue
        rel = path.relative_to(root).as_posix() if path != root else ""
        if event == "open" and rel.endswith(".md") and not rel.startswith("converged/"):
            found.append(rel)
        if event in ("os.scandir", "os.listdir") and (rel == "" or rel.startswith("archive")):
            found.append(f"listed {rel or '.'}")
    return found


def _spawned_refresh(events) -> bool:
    return any(
        e == "os.posix_spawn" and "session-start" in w and "--detached" in w for e, w in events
    )


def _complete(root: Path) -> bool:
    import marshal

    kept = Path(open_vault(root).machine_dir) / KEPT_FILE
    try:
        data = marshal.loads(kept.read_bytes())
    except (OSError, ValueError, EOFError):
        return False
    return bool(data["entries"]["layout"].get("complete"))


def test_the_first_start_reads_the_memory_files_alone_and_starts_a_refresh(tmp_path):
    root = _vault(tmp_path)
    project = tmp_path / "code" / "chaoxi"
    project.mkdir(parents=True)
    log = tmp_path / "audit.log"
    context = _start(root, project, log)
    events = _events(log)
    assert "Prefers short answers" in context  # the resident memory, read directly
    assert "## This project: chaoxi" in context and "Chaoxi uses pnpm" in context
    assert REFRESHING in context
    assert _divergent_or_archive(root, events) == []
    assert _spawned_refresh(events)
    wait_for(lambda: _complete(root), what="the refresh")
    context = _start(root, project, log)
    assert REFRESHING not in context and "Chaoxi uses pnpm" in context
    assert not _spawned_refresh(_events(log))


def _warmed(tmp_path: Path) -> tuple[Path, Path, Path]:
    root = _vault(tmp_path)
    project = tmp_path / "code" / "chaoxi"
    project.mkdir(parents=True)
    log = tmp_path / "audit.log"
    _start(root, project, log)
    wait_for(lambda: _complete(root), what="the refresh")
    _events(log)
    return root, project, log


def test_after_a_note_changed_the_start_reads_nothing_of_it_and_scans_nothing(tmp_path):
    root, project, log = _warmed(tmp_path)
    before = _start(root, project, log)
    _events(log)
    machine = Path(open_vault(root).machine_dir)
    scan_cache = machine / "scan-cache.marshal"
    scanned = scan_cache.stat().st_mtime_ns if scan_cache.exists() else None
    with open(root / "2026-11-20 notes.md", "a", encoding="utf-8") as note:
        note.write("actually I prefer spaces now\n")  # a divergent note: pending again
    (root / "2026-12-01 new.md").write_text("I decided to use Svelte\n", "utf-8")
    after = _start(root, project, log)
    events = _events(log)
    assert after == before
    assert _divergent_or_archive(root, events) == []
    assert not _spawned_refresh(events)
    assert (scan_cache.stat().st_mtime_ns if scan_cache.exists() else None) == scanned


def test_a_memory_file_edited_in_place_is_read_again_alone(tmp_path):
    root, project, log = _warmed(tmp_path)
    topic = root / "converged/topics/潮汐.md"
    with open(topic, "a", encoding="utf-8") as handle:  # in place: its folder's stat stays
        handle.write("- Commit messages are in English (source: [[n]])\n")
    context = _start(root, project, log)
    events = _events(log)
    assert "Commit messages are in English" in context and REFRESHING not in context
    opened = {
        Path(w).relative_to(root).as_posix()
        for e, w in events
        if e == "open" and w.endswith(".md") and root in Path(w).parents
    }
    assert opened == {"converged/topics/潮汐.md"}
    assert not _spawned_refresh(events)


def test_a_memory_file_added_is_shown_after_the_refresh_it_starts(tmp_path):
    root, project, log = _warmed(tmp_path)
    tide = tmp_path / "code" / "Tide-Pool"
    tide.mkdir()
    (root / "converged/topics/tidepool.md").write_text(
        "# Tidepool\n\n- Tests run with vitest (source: [[n]])\n", "utf-8"
    )
    context = _start(root, tide, log)
    events = _events(log)
    assert REFRESHING in context and "Tests run with vitest" not in context
    assert _spawned_refresh(events)

    def shown() -> str | None:
        text = _start(root, tide, log)
        return text if "Tests run with vitest" in text else None

    assert "## This project: Tide-Pool" in wait_for(shown, what="the refresh")


def test_a_frontmatter_only_yaml_reads_is_left_to_the_refresh(tmp_path):
    root, project, log = _warmed(tmp_path)
    topic = root / "converged/topics/潮汐.md"
    # a block scalar: the plain reader cannot be sure of it, YAML can
    topic.write_text(
        "---\nsummary: >\n  the Chaoxi\n  project\naliases: [chaoxi]\n---\n# 潮汐\n\n"
        "- Chaoxi runs on Node 22 (source: [[n]])\n",
        "utf-8",
    )
    context = _start(root, project, log)
    events = _events(log)
    assert REFRESHING in context and "Chaoxi uses pnpm" in context  # the earlier text stands
    assert _spawned_refresh(events)
    wait_for(lambda: "Node 22" in _start(root, project, log), what="the refresh")
    assert "converged/topics/潮汐.md" in _start(root, tmp_path, log)  # named in the index
    assert "the Chaoxi project" in _start(root, tmp_path, log)  # its summary, read by YAML


def test_the_start_imports_only_the_stdlib_in_every_state(tmp_path):
    root, project, log = _warmed(tmp_path)
    code = (
        "import sys; sys.argv = ['cmem', '--vault', sys.argv[1], 'hook', 'run', "
        "'session-start', '--agent', 'codex']; from cmem.cli import main; main()"
    )
    payload = json.dumps({"cwd": str(project)})

    def imported() -> set[str]:
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", code, str(root)],
            input=payload, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0 and "additionalContext" in done.stdout, done.stderr[-2000:]
        return {
            line.split("|")[-1].strip()
            for line in done.stderr.splitlines()
            if line.startswith("import time:")
        }

    def heavy(modules: set[str]) -> list[str]:
        never = ("yaml", "cmem.vault.layers", "cmem.vault.config", "cmem.scan")
        return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in never))

    assert heavy(imported()) == []  # warm
    with open(root / "converged/core/profile.md", "a", encoding="utf-8") as handle:
        handle.write("- Likes tea (source: [[n]])\n")
    assert heavy(imported()) == []  # just after an edit
    os.unlink(Path(open_vault(root).machine_dir) / KEPT_FILE)
    assert heavy(imported()) == []  # nothing kept: the config's stored parse, the files


def test_a_refresh_cut_short_names_what_it_did_not_read_and_the_next_goes_on(tmp_path):
    import time

    from cmem.reading import start_memory

    vault = open_vault(_vault(tmp_path))
    memory = start_memory.refresh(vault, time.monotonic() - 1)  # no time to read anything
    assert memory.stale and memory.paths and all(size == -1 for size in memory.sizes)
    assert not _complete(vault.root)
    memory = start_memory.refresh(vault)
    assert not memory.stale and all(size > 0 for size in memory.sizes)
    assert "Chaoxi uses pnpm" in memory.content(memory.paths.index("converged/topics/潮汐.md"))
    assert _complete(vault.root)


def test_a_file_removed_or_the_config_changed_makes_what_is_kept_stale(tmp_path):
    from cmem.reading import start_memory

    root = _vault(tmp_path)
    vault = open_vault(root)
    machine = str(vault.machine_dir)
    assert not start_memory.refresh(vault).stale
    assert not start_memory.light_update(str(root), machine, 1.0).stale
    (root / "converged/topics/go-course.md").unlink()
    memory = start_memory.light_update(str(root), machine, 1.0)
    assert memory.stale and "converged/topics/go-course.md" not in memory.paths
    settle(root)
    assert not start_memory.refresh(vault).stale
    with open(root / ".cmem/config.yaml", "a", encoding="utf-8") as config:
        config.write("# the layer folders may have moved\n")
    assert start_memory.light_update(str(root), machine, 1.0).stale
    settle(root)
    assert not start_memory.refresh(vault).stale
    assert start_memory.light_update(str(tmp_path / "elsewhere"), machine, 1.0) is None
