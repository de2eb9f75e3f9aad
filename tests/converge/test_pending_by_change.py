"""Issue 33: what memory can learn is decided by change, not by a word list (docs/design.md §2, §3
step 3).

A note is pending when it is new or changed since the pass that converged or deferred it,
whatever its words; cue words rank it and mark lines; the model judges it line by line; a note
it converged or deferred is never sent again unchanged; the builtin engine reads cue lines only
and says what waits for a model; an adopted folder's notes are a backlog converged on request.
"""

from __future__ import annotations

import json
import subprocess
import sys

from cmem.converge.pipeline import PassOptions, run_pass
from cmem.reading.status import build_status
from cmem.scan.scanner import scan_vault
from cmem.vault.layers import open_vault
from pass_helpers import FAKE, model_env, prompts_sent
from support import git, write_files

PROFILE = "converged/core/profile.md"
EN = "language: en\nrepair_rounds: 0\nllm:\n  timeout_seconds: 10\n"
# written as people write, no cue word anywhere
MOVED = "Moved to Berlin last week; the flat is in Kreuzberg.\n"
CLIENT = "New client Acme: 90 EUR an hour, contract ends in March.\nTuesdays and Thursdays at their office.\n"


def _model(**extra) -> PassOptions:
    return PassOptions(llm=f"{sys.executable} {FAKE}", **extra)


def _reply(*blocks: str, tail: str) -> str:
    return "<convergence>\n" + "".join(blocks) + tail + "</convergence>\n"


def _profile(*statements: str) -> str:
    return "# Profile\n\n" + "".join(f"- {s}\n" for s in statements)


def _block(text: str, path: str = PROFILE) -> str:
    return f'<file path="{path}">\n{text}</file>\n'


def _vault(make_vault, files: dict[str, str]):
    return make_vault({PROFILE: "# Profile\n", **files}, config_yaml=EN, git=True)


def test_a_note_without_a_cue_word_is_pending_and_reaches_the_model(
    make_vault, monkeypatch, tmp_path
):
    root = _vault(make_vault, {"2026-11-08 notes.md": MOVED, "2026-11-09 notes.md": CLIENT})
    scan = scan_vault(open_vault(root))
    assert scan.signals == []
    assert sorted((p.rel, p.why, p.model_only) for p in scan.pending) == [
        ("2026-11-08 notes.md", "new", True),
        ("2026-11-09 notes.md", "new", True),
    ]
    reply = _reply(
        _block(
            _profile(
                "Lives in Berlin, in Kreuzberg, since early November 2026 (source: [[2026-11-08 notes]])",
                "Works for the client Acme at 90 EUR an hour until March, Tuesdays and Thursdays at their office (source: [[2026-11-09 notes]])",
            )
        ),
        tail='<converged note="2026-11-08 notes.md" into="converged/core/profile.md"/>\n'
        '<converged note="2026-11-09 notes.md" into="converged/core/profile.md"/>\n',
    )
    log = model_env(monkeypatch, tmp_path, [reply])
    result = run_pass(open_vault(root), _model())
    assert result.status == "applied", result.errors
    (prompt,) = prompts_sent(log)
    assert "Moved to Berlin" in prompt and "90 EUR an hour" in prompt
    # converged notes are never sent again unchanged: the queue is empty, a call would fail
    assert run_pass(open_vault(root), _model()).status == "nothing"
    assert build_status(open_vault(root)).waiting.notes == 0


def test_the_builtin_engine_says_what_waits_for_a_model(make_vault):
    root = _vault(make_vault, {"2026-11-08 notes.md": MOVED})
    vault = open_vault(root)
    result = run_pass(vault, PassOptions(engine="builtin"))
    assert result.status == "nothing"
    assert "1 line in 1 note waits for a model" in result.message  # MOVED is one line
    status = build_status(vault).to_json()
    assert status["pending"]["notes"] == 1
    assert status["pending"]["waiting_for_model"]["notes"] == 1
    assert status["pending"]["waiting_for_model"]["lines"] == 1
    from cmem.render.reports import render_status_data

    text = render_status_data(status)
    assert "nothing pending" not in text and "waits for a model" in text
    assert not status["due"]["due"]  # nothing the builtin engine can take: not due


def test_only_on_a_note_without_cues_converges_it_with_a_model(make_vault, monkeypatch, tmp_path):
    root = _vault(make_vault, {"2026-11-08 notes.md": MOVED, "other.md": CLIENT})
    reply = _reply(
        _block(_profile("Lives in Berlin, in Kreuzberg (source: [[2026-11-08 notes]])")),
        tail='<converged note="2026-11-08 notes.md" into="converged/core/profile.md"/>\n',
    )
    log = model_env(monkeypatch, tmp_path, [reply])
    result = run_pass(open_vault(root), _model(only=["2026-11-08 notes"]))
    assert result.status == "applied" and result.converged == ["2026-11-08 notes.md"]
    assert "Acme" not in prompts_sent(log)[0]


def test_quotes_and_callouts_are_the_notes_text(make_vault):
    daily = (
        "# 2026-12-01\n\n> [!question] What changed today?\n> Actually the standup moved to 10:00.\n\n"
        "> [!note] Mood\n> tired\n"
    )
    root = _vault(make_vault, {"2026-12-01.md": daily})
    scan = scan_vault(open_vault(root))
    assert [(s.line, s.cls) for s in scan.signals] == [(4, "correction")]
    assert [p.rel for p in scan.pending] == ["2026-12-01.md"]


def test_a_changed_note_is_sent_with_its_new_lines_to_judge(make_vault, monkeypatch, tmp_path):
    root = _vault(make_vault, {"n.md": "Moved to Berlin.\n"})
    first = _reply(
        _block(_profile("Lives in Berlin (source: [[n]])")),
        tail='<converged note="n.md" into="converged/core/profile.md"/>\n',
    )
    second = _reply(
        _block(_profile("Lives in Berlin, Kreuzberg (source: [[n]])")),
        tail='<converged note="n.md" into="converged/core/profile.md"/>\n',
    )
    log = model_env(monkeypatch, tmp_path, [first, second])
    assert run_pass(open_vault(root), _model()).status == "applied"
    (root / "n.md").write_text("Moved to Berlin.\n\nThe flat is in Kreuzberg.\n", encoding="utf-8")
    (pending,) = scan_vault(open_vault(root)).pending
    assert pending.why == "changed"
    assert run_pass(open_vault(root), _model()).status == "applied"
    assert "Lines to judge: 3 (the other lines were converged before" in prompts_sent(log)[1]
    # a deletion alone leaves no line to judge: not pending
    (root / "n.md").write_text("The flat is in Kreuzberg.\n", encoding="utf-8")
    assert scan_vault(open_vault(root)).pending == []


def test_a_deferral_stands_until_the_note_changes_or_is_confirmed(
    make_vault, monkeypatch, tmp_path
):
    root = _vault(make_vault, {"idea.md": "maybe learn the cello one day\n"})
    defer = _reply(tail='<deferred note="idea.md" reason="one vague mention"/>\n')
    keep = _reply(
        _block(_profile("Wants to learn the cello (source: [[idea]])")),
        tail='<converged note="idea.md" into="converged/core/profile.md"/>\n',
    )
    log = model_env(monkeypatch, tmp_path, [defer, defer, keep])
    assert run_pass(open_vault(root), _model()).status == "applied"  # the deferral is recorded
    state = json.loads((root / ".cmem/state.json").read_text("utf-8"))
    assert list(state["notes"]["idea.md"]["deferred"].values()) == ["one vague mention"]
    scan = scan_vault(open_vault(root))
    assert scan.pending == [] and [d.reason for d in scan.deferred] == [
        "1 line deferred: one vague mention"
    ]
    assert run_pass(open_vault(root), _model()).status == "nothing"  # not re-sent unchanged
    # confirmed by name: sent again (and deferred again)
    assert run_pass(open_vault(root), _model(only=["idea"])).status == "applied"
    # changed: sent again
    (root / "idea.md").write_text(
        "maybe learn the cello one day\nbooked a first lesson\n", encoding="utf-8"
    )
    assert run_pass(open_vault(root), _model()).status == "applied"
    assert len(prompts_sent(log)) == 3
    assert "Wants to learn the cello" in (root / PROFILE).read_text("utf-8")


def test_a_model_defers_some_lines_and_converges_the_rest(make_vault, monkeypatch, tmp_path):
    root = _vault(make_vault, {"n.md": "Moved to Berlin.\nMeh, rainy day.\n"})
    reply = _reply(
        _block(_profile("Lives in Berlin (source: [[n]])")),
        tail='<converged note="n.md" into="converged/core/profile.md"/>\n'
        '<deferred note="n.md" lines="2" reason="a passing mood"/>\n',
    )
    model_env(monkeypatch, tmp_path, [reply])
    result = run_pass(open_vault(root), _model())
    assert result.status == "applied", result.errors
    assert result.deferred == [{"note": "n.md", "reason": "a passing mood", "lines": [2]}]
    entry = json.loads((root / ".cmem/state.json").read_text("utf-8"))["notes"]["n.md"]
    assert list(entry["deferred"].values()) == ["a passing mood"] and entry["into"] == [PROFILE]
    assert "Deferred: n.md lines 2 (a passing mood)" in git(root, "log", "-1", "--format=%B")
    assert scan_vault(open_vault(root)).pending == []


def test_a_deferred_note_returns_when_a_pending_note_shares_its_key_phrases(
    make_vault, monkeypatch, tmp_path
):
    root = _vault(make_vault, {"a.md": "skipped the gym\n"})
    defer = _reply(tail='<deferred note="a.md" reason="once is no pattern"/>\n')
    both = _reply(
        _block(_profile("Skips the gym often (source: [[a]], [[b]])")),
        tail='<converged note="a.md" into="converged/core/profile.md"/>\n'
        '<converged note="b.md" into="converged/core/profile.md"/>\n',
    )
    log = model_env(monkeypatch, tmp_path, [defer, both])
    assert run_pass(open_vault(root), _model()).status == "applied"
    write_files(root, {"b.md": "skipped the gym again, third time\n"})
    scan = scan_vault(open_vault(root))
    assert sorted((p.rel, p.why) for p in scan.pending) == [("a.md", "recurs"), ("b.md", "new")]
    assert run_pass(open_vault(root), _model()).status == "applied"
    assert "a.md" in prompts_sent(log)[1] and "b.md" in prompts_sent(log)[1]
    assert scan_vault(open_vault(root)).pending == []


def test_a_recurrence_counts_the_occurrences_a_pass_archived(make_vault):
    """ "skipped the gym again" whose earlier occurrences were converged and archived is not a
    one-off forever: state.json keeps their key phrases."""
    root = _vault(make_vault, {"2026-11-01.md": "skipped the gym again\n"})
    vault = open_vault(root)
    assert scan_vault(vault).signals == []  # a one-off: deferred
    result = run_pass(vault, PassOptions(engine="builtin", only=["2026-11-01"]))
    assert result.status == "applied", result.errors
    # archived by hand here (the archive gate's own tests cover `archive apply`)
    state = json.loads((root / ".cmem/state.json").read_text("utf-8"))
    state["notes"]["archive/2026-11/2026-11-01.md"] = state["notes"].pop("2026-11-01.md")
    (root / ".cmem/state.json").write_text(json.dumps(state), encoding="utf-8")
    (root / "archive/2026-11").mkdir(parents=True, exist_ok=True)
    (root / "2026-11-01.md").rename(root / "archive/2026-11/2026-11-01.md")
    write_files(root, {"2026-11-08.md": "skipped the gym again\n"})
    scan = scan_vault(open_vault(root))
    assert [(s.note, s.cls) for s in scan.signals] == [("2026-11-08.md", "recurring")]


def test_an_adopted_folder_is_a_backlog_not_a_token_bomb(tmp_path, monkeypatch):
    folder = tmp_path / "notes"
    folder.mkdir()
    for day in range(1, 21):
        (folder / f"2025-01-{day:02d} diary.md").write_text(
            f"Day {day}: long walk by the river, read two chapters.\n" * 20, encoding="utf-8"
        )
    (folder / "2025-02-01 diary.md").write_text(
        "Actually I live in Lisbon now.\n", encoding="utf-8"
    )
    out = subprocess.run(
        [sys.executable, "-m", "cmem", "init", str(folder), "--lang", "en"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "21 existing notes are the backlog" in out.stdout
    vault = open_vault(folder)
    scan = scan_vault(vault)
    # pending only through its cue lines; the rest is the backlog
    assert [p.rel for p in scan.pending] == ["2025-02-01 diary.md"]
    assert len(scan.backlog) == 20
    status = build_status(vault).to_json()["pending"]["backlog"]
    assert status["notes"] == 20 and status["tokens"] > 2000 and status["passes"] >= 1
    from cmem.render.reports import render_status_data

    assert "cmem converge --backlog" in render_status_data(build_status(vault).to_json())
    # asked for: the backlog is pending too; a note edited since adoption is simply changed
    assert len(scan_vault(vault, backlog=True).pending) == 21
    (folder / "2025-01-05 diary.md").write_text("Met Ana, she starts at Acme.\n", encoding="utf-8")
    assert sorted(p.rel for p in scan_vault(open_vault(folder)).pending) == [
        "2025-01-05 diary.md",
        "2025-02-01 diary.md",
    ]
    # never by an unattended trigger
    out = subprocess.run(
        [sys.executable, "-m", "cmem", "converge", "--if-due", "--backlog", "--vault", str(folder)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and "only when you ask" in out.stderr


def test_widening_the_input_folders_makes_their_notes_backlog_not_new(tmp_path, monkeypatch):
    """Issue 44: once `03 - AREAS/**` was added, 967 notes became "new", and the hooks would
    start on them. Notes older than the config edit in a folder the backlog's record does not
    cover are backlog (a note with a cue line pending through it, as at adoption); the next
    pass records them; a note written after the edit is new."""
    import os

    root = tmp_path / "vault"
    areas = root / "areas"
    areas.mkdir(parents=True)
    for day in range(1, 11):
        (areas / f"topic {day}.md").write_text(f"Topic {day}: long notes.\n" * 30, "utf-8")
    (areas / "fix.md").write_text("Actually the NAS runs Debian, not Ubuntu.\n", "utf-8")
    (root / "Home.md").write_text("# Home\n", "utf-8")
    out = subprocess.run(
        [sys.executable, "-m", "cmem", "init", str(root), "--lang", "en"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    record = json.loads((root / ".cmem/backlog.json").read_text("utf-8"))
    assert record["folders"] == ["", "sessions"]
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the user's notes")
    config = root / ".cmem/config.yaml"
    config.write_text(
        config.read_text("utf-8").replace(
            'extra_folders: ["sessions"]', 'extra_folders: ["sessions", "areas/**"]'
        ),
        "utf-8",
    )
    assert "areas/**" in config.read_text("utf-8")
    past = config.stat().st_mtime - 3600
    for note in areas.iterdir():
        os.utime(note, (past, past))
    scan = scan_vault(open_vault(root))
    assert len(scan.backlog) == 10 and [p.rel for p in scan.pending] == ["areas/fix.md"]
    assert scan.pending[0].why == "signals"
    # a note written after the edit is new
    fresh = areas / "today.md"
    fresh.write_text("Booked the dentist for Friday.\n", "utf-8")
    later = config.stat().st_mtime + 60
    os.utime(fresh, (later, later))
    assert {p.rel for p in scan_vault(open_vault(root)).pending} == {
        "areas/fix.md",
        "areas/today.md",
    }
    # an unattended pass with a model sends no backlog note, and records the new folders
    reply = _reply(
        tail='<deferred note="areas/fix.md" reason="later"/>\n'
        '<deferred note="areas/today.md" reason="later"/>\n'
    )
    log = model_env(monkeypatch, tmp_path, [reply])
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cmem",
            "converge",
            "--if-due",
            "--llm",
            f"{sys.executable} {FAKE}",
            "--vault",
            str(root),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    (prompt,) = prompts_sent(log)
    assert "Topic 3" not in prompt and "NAS runs Debian" in prompt and "dentist" in prompt
    record = json.loads((root / ".cmem/backlog.json").read_text("utf-8"))
    assert record["folders"] == ["", "sessions", "areas/**"]
    assert "areas/topic 3.md" in record["notes"] and "areas/today.md" not in record["notes"]
    assert ".cmem/backlog.json" in git(root, "show", "--name-only", "--format=", "HEAD")
    # recorded: the backlog stays the backlog whatever the files' times say now
    assert len(scan_vault(open_vault(root)).backlog) == 10


def test_a_trace_dated_by_its_note_passes(make_vault, monkeypatch, tmp_path):
    root = _vault(make_vault, {"2026-11-01 notes.md": "Uses bun.\n"})
    first = _reply(
        _block(_profile("Uses bun for Bluefin (source: [[2026-11-01 notes]])")),
        tail='<converged note="2026-11-01 notes.md" into="converged/core/profile.md"/>\n',
    )
    second = _reply(
        _block(
            _profile(
                "Uses pnpm for Bluefin (updated 2026-11-08, was: bun) (source: [[2026-11-01 notes]], [[2026-11-08 notes]])"
            )
        ),
        tail='<converged note="2026-11-08 notes.md" into="converged/core/profile.md"/>\n',
    )
    model_env(monkeypatch, tmp_path, [first, second])
    assert run_pass(open_vault(root), _model()).status == "applied"
    write_files(root, {"2026-11-08 notes.md": "Switched Bluefin back to pnpm.\n"})
    result = run_pass(open_vault(root), _model())
    assert result.status == "applied", result.errors
    assert "(updated 2026-11-08, was: bun)" in (root / PROFILE).read_text("utf-8")
