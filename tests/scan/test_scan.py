"""The vault-wide scan: state (converged vs pending), recurrence across notes, the feedback-loop
guard, re-emergence, the warm cache, odd files, ordering and the JSON shape."""

from __future__ import annotations

import json
import marshal
import os

import pytest

from cmem.cache_store import FORMATS
from cmem.errors import CmemError
from cmem.scan import scan_cache as scan_module
from cmem.scan.scanner import CACHE_NAME, GUARD_NAME, scan_vault
from cmem.vault.layers import open_vault
from cmem.vault.state_json import ConvergedNote, State, line_key, save_state

DAY = 86_400 * 10**9
OLD = 1_700_000_000 * 10**9  # long before any test runs: cache entries are trusted at once


def age(root, rel: str, ns: int = OLD) -> None:
    os.utime(root / rel, ns=(ns, ns))


def age_all(root) -> None:
    for path in root.rglob("*.md"):
        if not path.is_symlink():
            os.utime(path, ns=(OLD, OLD))


def by_note(result):
    found = {}
    for s in result.signals:
        found.setdefault(s.note, []).append((s.line, s.cls))
    return found


# --- the sample vault: every rule at once -------------------------------------------------


def test_sample_vault(sample_vault):
    result = scan_vault(open_vault(sample_vault))
    signals = by_note(result)
    assert signals["2026-11-24 随手记.md"] == [
        (4, "correction"),
        (5, "preference"),
        (3, "recurring"),
    ]
    assert signals["2026-11-27 notes.md"] == [
        (4, "correction"),
        (6, "preference"),
        (3, "decision"),
        (7, "recurring"),
    ]
    assert signals["2026-11-25 面试复盘.md"] == [
        (9, "preference"),
        (10, "decision"),
        (11, "recurring"),
    ]
    assert signals["idea - svelte.md"] == [
        (6, "decision")
    ]  # the 其实不是 in the svelte code block is not
    assert signals["blog - 写作计划.md"] == [
        (3, "recurring")
    ]  # a one-off 又, confirmed by #converge
    assert "2026-11-23 日记.md" not in signals
    deferred = {(d.note, d.line): d for d in result.deferred}
    assert deferred[("2026-11-23 日记.md", 0)].kind == "excluded"
    assert deferred[("2026-11-24 随手记.md", 6)].kind == "one-off"  # 又忘了给年糕买猫粮
    assert deferred[("2026-11-24 随手记.md", 7)].kind == "venting"  # 烦死了
    assert deferred[("2026-11-27 notes.md", 8)].kind == "one-off"  # forgot to push … again
    guard = deferred[("2026-11-28 随手记.md", 9)]
    assert guard.kind == "converged" and guard.reason == "already in converged/core/profile.md"
    excerpts = " ".join(s.excerpt for s in result.signals)
    for trap in (
        "又快又好",
        "不对称",
        "once again",
        "never mind",
        "not always",
        "always allow",
        "actually-fast",
    ):
        assert trap not in excerpts
    pending = {p.rel: p for p in result.pending}
    assert pending["2026-11-25 面试复盘.md"].tags == ["job-search", "面试"]
    assert pending["2026-11-25 面试复盘.md"].links == ["job-search"]
    assert pending["blog - 写作计划.md"].confirmed


def test_json_has_the_spec_fields(sample_vault):
    data = scan_vault(open_vault(sample_vault)).to_json()
    json.dumps(data, ensure_ascii=False)
    assert {"signals", "deferred"} <= set(data)
    for signal in data["signals"]:
        assert {"note", "line", "class", "priority", "cue", "excerpt"} <= set(signal)
        assert (
            signal["class"] in ("correction", "preference", "decision", "recurring")
            and 1 <= signal["priority"] <= 4
        )
    for entry in data["deferred"]:
        assert {"note", "line", "reason"} <= set(entry) and isinstance(entry["line"], int)


# --- ordering -------------------------------------------------------------------------------


def test_sorted_by_priority_then_age_then_note_then_line(make_vault):
    root = make_vault(
        {
            "b new.md": "我决定改用 Svelte\n以后都用中文回答\n",
            "a new.md": "我决定改用 uv\n我喜欢先看结论\n",
            "z old.md": "其实不是周三，是周四\n我决定改用 Go\n",
        }
    )
    age(root, "z old.md", OLD)
    age(root, "a new.md", OLD + DAY)
    age(root, "b new.md", OLD + DAY)
    result = scan_vault(open_vault(root))
    assert [(s.cls, s.note, s.line) for s in result.signals] == [
        ("correction", "z old.md", 1),
        ("preference", "a new.md", 2),
        ("preference", "b new.md", 2),
        ("decision", "z old.md", 2),
        ("decision", "a new.md", 1),
        ("decision", "b new.md", 1),
    ]
    assert [p.rel for p in result.pending] == ["z old.md", "a new.md", "b new.md"]


# --- recurrence -----------------------------------------------------------------------------


def test_recurring_phrase_in_two_notes_is_promoted(make_vault):
    root = make_vault(
        {"11-24.md": "- 又熬夜到两点\n- 又忘了买猫粮\n", "11-25.md": "面试前一晚又熬夜刷题\n"}
    )
    result = scan_vault(open_vault(root))
    assert by_note(result) == {"11-24.md": [(1, "recurring")], "11-25.md": [(1, "recurring")]}
    assert [(d.note, d.line, d.kind) for d in result.deferred] == [("11-24.md", 2, "one-off")]


def test_english_recurrence(make_vault):
    root = make_vault(
        {
            "a.md": "Over-engineered the config loader again.\n",
            "b.md": "As usual I over-engineered the take-home.\n",
        }
    )
    assert len(scan_vault(open_vault(root)).signals) == 2


def test_one_note_is_not_a_recurrence_and_min_recurrence_counts(make_vault):
    root = make_vault({"a.md": "又熬夜到两点\n又熬夜了一晚\n"})
    assert scan_vault(open_vault(root)).signals == []
    root = make_vault(
        {"a.md": "又熬夜到两点\n", "b.md": "又熬夜了\n"},
        config_yaml="signals:\n  min_recurrence: 3\n",
    )
    result = scan_vault(open_vault(root))
    assert result.signals == [] and "recurs in 3 notes" in result.deferred[0].reason


def test_excluded_notes_do_not_count_towards_recurrence(make_vault):
    root = make_vault(
        {"a.md": "又熬夜到两点\n", "diary.md": "---\nconverge: false\n---\n又熬夜了\n"}
    )
    result = scan_vault(open_vault(root))
    assert result.signals == []
    assert {(d.note, d.kind) for d in result.deferred} == {
        ("a.md", "one-off"),
        ("diary.md", "excluded"),
    }


# --- feedback-loop guard and re-emergence --------------------------------------------------


PROFILE = """---
summary: who
---
# 画像

- 以后都用中文回答，术语和代码保留英文（来源：[[2026-10-18 随手记]]）
- 缩进用空格（更新于 2026-11-20，原为：以后都用 tab 缩进（更新于 2026-10-01，原为：随便））（来源：[[a]]）
"""


def test_line_pasted_back_from_memory_is_not_a_signal(make_vault):
    root = make_vault(
        {
            "converged/core/profile.md": PROFILE,
            "today.md": "- 10:32 以后都用中文回答，术语和代码保留英文！\n- 以后都用英文写 commit message\n",
        }
    )
    result = scan_vault(open_vault(root))
    assert [(s.line, s.cls) for s in result.signals] == [(2, "preference")]
    assert [(d.line, d.reason) for d in result.deferred] == [
        (1, "already in converged/core/profile.md")
    ]


def test_guard_follows_convergent_edits(make_vault):
    root = make_vault(
        {"converged/core/profile.md": PROFILE, "today.md": "以后都用中文回答，术语和代码保留英文\n"}
    )
    age_all(root)
    vault = open_vault(root)
    assert scan_vault(vault).signals == []
    profile = root / "converged/core/profile.md"
    profile.write_text(
        PROFILE.replace(
            "- 以后都用中文回答，术语和代码保留英文（来源：[[2026-10-18 随手记]]）\n", ""
        ),
        "utf-8",
    )
    age(root, "converged/core/profile.md", OLD + DAY)
    assert [s.cls for s in scan_vault(vault).signals] == ["preference"]


def test_reemerged_retired_statement(make_vault):
    root = make_vault({"converged/core/profile.md": PROFILE, "today.md": "- 以后都用 tab 缩进\n"})
    result = scan_vault(open_vault(root))
    assert [s.cls for s in result.signals] == [
        "preference"
    ]  # still a signal, flagged as re-emerged
    again = result.reemerged[0]
    assert (again.note, again.line, again.how, again.where) == (
        "today.md",
        1,
        "retired",
        "converged/core/profile.md",
    )
    assert (again.first_seen, again.retired) == ("2026-10-01", "2026-11-20")
    assert result.to_json()["reemerged"][0]["first_seen"] == "2026-10-01"


def test_reemerged_line_of_a_converged_note(make_vault):
    root = make_vault({"old.md": "- 我决定改用 Svelte\n", "new.md": "# 新\n- 我决定改用 Svelte\n"})
    vault = open_vault(root)
    old = scan_vault(vault)
    sha = next(p.sha256 for p in old.pending if p.rel == "old.md")
    state = State(
        notes={
            "old.md": ConvergedNote(
                sha, {line_key("- 我决定改用 Svelte")}, "p1", "2026-10-05T10:00:00+08:00"
            )
        }
    )
    result = scan_vault(vault, state=state)
    assert [(s.note, s.line) for s in result.signals] == [("new.md", 2)]
    assert [(r.how, r.where, r.first_seen) for r in result.reemerged] == [
        ("converged", "old.md", "2026-10-05")
    ]


# --- converged vs pending --------------------------------------------------------------------


def test_converged_unchanged_note_is_not_pending_and_edited_note_only_for_new_lines(make_vault):
    original = "- 我决定改用 Svelte\n- 以后都用中文回答\n"
    root = make_vault({"note.md": original, "other.md": "我喜欢先看结论\n"})
    vault = open_vault(root)
    first = scan_vault(vault)
    sha = next(p.sha256 for p in first.pending if p.rel == "note.md")
    state = State(
        notes={
            "note.md": ConvergedNote(
                sha,
                {line_key(line) for line in original.splitlines()},
                "p1",
                "2026-11-29T10:00:00+00:00",
            )
        }
    )
    save_state(vault.state_file, state)
    second = scan_vault(vault)  # state.json read from disk
    assert [p.rel for p in second.pending] == ["other.md"]
    (root / "note.md").write_text(original + "- 其实不是周三，是周四\n", "utf-8")
    third = scan_vault(vault)
    assert by_note(third)["note.md"] == [(3, "correction")]


# --- the cache --------------------------------------------------------------------------------


def test_warm_scan_reads_nothing_and_equals_the_cold_one(sample_vault, monkeypatch):
    age_all(sample_vault)
    vault = open_vault(sample_vault)
    cold = scan_vault(vault)
    assert cold.notes_read == cold.notes_scanned > 0
    assert (vault.machine_dir / CACHE_NAME).exists()

    def no_reading(*args, **kwargs):
        raise AssertionError("a note was read on a warm scan")

    monkeypatch.setattr(scan_module, "read_note", no_reading)
    warm = scan_vault(vault)
    assert warm.notes_read == 0
    assert warm.to_json() == cold.to_json()
    assert warm.pending == cold.pending


def test_edited_note_is_picked_up(make_vault):
    root = make_vault({"a.md": "我决定改用 Svelte\n", "b.md": "我喜欢先看结论\n"})
    age_all(root)
    vault = open_vault(root)
    scan_vault(vault)
    (root / "a.md").write_text("我决定改用 Vue!\n", "utf-8")  # same size: only the mtime tells
    result = scan_vault(vault)
    assert result.notes_read == 1
    assert [s.excerpt for s in result.signals if s.note == "a.md"] == ["我决定改用 Vue!"]


def test_a_rewritten_cache_keeps_unchanged_entries_and_encodes_changed_ones_afresh(make_vault):
    """Entries decoded from the cache are saved as they were read (their bytes, not encoded
    again); an edited note's entry is its new one, the one a cold scan of the same vault saves."""
    root = make_vault({"a.md": "我决定改用 Svelte\n", "b.md": "我喜欢先看结论\n"})
    age_all(root)
    vault = open_vault(root)
    scan_vault(vault)
    cache = vault.machine_dir / CACHE_NAME
    before = marshal.loads(cache.read_bytes())["entries"]
    (root / "a.md").write_text("I decided to use Vue from now on\n", "utf-8")
    age(root, "a.md", OLD + DAY)
    scan_vault(vault)
    after = marshal.loads(cache.read_bytes())["entries"]
    assert isinstance(after["b.md"], bytes) and after["b.md"] == before["b.md"]
    after = {rel: marshal.loads(data) for rel, data in after.items()}
    assert after["a.md"]["hits"] != marshal.loads(before["a.md"])["hits"]
    cache.unlink()
    scan_vault(vault)
    cold = {
        rel: marshal.loads(data)
        for rel, data in marshal.loads(cache.read_bytes())["entries"].items()
    }
    for entry in (after["a.md"], cold["a.md"]):
        entry.pop("r")  # when it was read
    assert after["a.md"] == cold["a.md"]
    assert after["b.md"]["h"] == cold["b.md"]["h"]


def test_same_size_edit_within_the_mtime_tick_is_not_missed(make_vault):
    root = make_vault({"a.md": "我决定改用 Svelte\n"})
    vault = open_vault(root)
    scan_vault(vault)
    stat = (root / "a.md").stat()
    (root / "a.md").write_text("我决定改用 Vue!\n", "utf-8")
    os.utime(
        root / "a.md", ns=(stat.st_mtime_ns, stat.st_mtime_ns)
    )  # a coarse clock: same mtime, same size
    assert [s.excerpt for s in scan_vault(vault).signals] == ["我决定改用 Vue!"]


def test_an_edit_that_keeps_size_and_sets_the_mtime_back_is_seen(make_vault):
    """A settled note (its cache entry trusted) edited in place to the same size, its old mtime
    put back (`touch -r`, `rsync -t`): only the ctime moved. The note is read again, and so is a
    memory file edited that way (the guard's index: the pasted-back line is found again)."""
    root = make_vault(
        {
            "a.md": "我决定改用 Svelte\n",
            "b.md": "- 以后都用 tab 缩进\n",
            "converged/core/profile.md": "# 档案\n\n- 以后都用 tab 缩进（来源：[[b]]）\n",
        }
    )
    age_all(root)
    vault = open_vault(root)
    first = scan_vault(vault)
    assert [d.kind for d in first.deferred if d.note == "b.md"] == ["converged"]
    for rel, old, new in (
        ("a.md", "Svelte", "Vue.js"),
        ("converged/core/profile.md", "tab", "tbb"),
    ):
        path = root / rel
        text = path.read_text("utf-8")
        path.write_text(text.replace(old, new), "utf-8")
        assert path.stat().st_size == len(text.encode("utf-8"))
        age(root, rel)  # the mtime the cache holds
    again = scan_vault(vault)
    assert again.notes_read == 1
    assert [s.excerpt for s in again.signals if s.note == "a.md"] == ["我决定改用 Vue.js"]
    assert [s.note for s in again.signals if s.note == "b.md"] == ["b.md"]  # no longer in memory


@pytest.mark.parametrize(
    "garbage",
    [
        b"",
        b"{not json",
        b"[]",
        marshal.dumps({"version": 1, "fingerprint": "x"}),
        "\ufffd\x00".encode("utf-8"),
        marshal.dumps({"version": 99}),
        marshal.dumps([1, 2]),
    ],
)
def test_corrupt_cache_is_ignored_and_rebuilt(make_vault, garbage):
    root = make_vault({"a.md": "我决定改用 Svelte\n"})
    age_all(root)
    vault = open_vault(root)
    expected = scan_vault(vault).to_json()
    cache = vault.machine_dir / CACHE_NAME
    cache.write_bytes(garbage)
    assert scan_vault(vault).to_json() == expected
    assert marshal.loads(cache.read_bytes())["stamp"][:2] == ("scan", FORMATS["scan"])


def _hits_oops(data: bytes):
    entry = marshal.loads(data)
    entry["hits"] = [["oops"]]
    return marshal.dumps(entry)


@pytest.mark.parametrize(
    "damage",
    [
        _hits_oops,  # decodes, but not to an entry
        lambda data: data[: len(data) // 2],  # cut short
        lambda data: b"\xff" + data,  # not marshal
        lambda data: marshal.loads(data),  # the dict itself, as cache version 5 kept it
        lambda data: marshal.dumps([1, 2]),
        lambda data: None,
    ],
)
def test_damaged_cache_entry_costs_one_read(make_vault, damage):
    root = make_vault({"a.md": "我决定改用 Svelte\n", "b.md": "我喜欢先看结论\n"})
    age_all(root)
    vault = open_vault(root)
    expected = scan_vault(vault).to_json()
    cache = vault.machine_dir / CACHE_NAME
    data = marshal.loads(cache.read_bytes())
    data["entries"]["a.md"] = damage(data["entries"]["a.md"])
    cache.write_bytes(marshal.dumps(data))
    result = scan_vault(vault)
    assert result.notes_read == 1 and result.to_json() == expected
    saved = marshal.loads(cache.read_bytes())["entries"]
    assert isinstance(saved["a.md"], bytes) and marshal.loads(saved["a.md"])["hits"]


def test_config_change_invalidates_the_cache(make_vault):
    root = make_vault({"a.md": "gotta use tabs in Makefiles\n"})
    age_all(root)
    assert scan_vault(open_vault(root)).signals == []
    (root / ".cmem/config.yaml").write_text(
        "signals:\n  cues:\n    preference: [gotta use]\n", "utf-8"
    )
    assert [s.cue for s in scan_vault(open_vault(root)).signals] == ["gotta use"]


def test_deleted_note_leaves_the_cache(make_vault):
    root = make_vault({"a.md": "我决定改用 Svelte\n", "b.md": "我喜欢先看结论\n"})
    age_all(root)
    vault = open_vault(root)
    scan_vault(vault)
    (root / "b.md").unlink()
    assert [p.rel for p in scan_vault(vault).pending] == ["a.md"]
    assert set(marshal.loads((vault.machine_dir / CACHE_NAME).read_bytes())["entries"]) == {"a.md"}


def test_cold_scan_reuses_the_merged_guard_index(make_vault, monkeypatch):
    """The guard index lives apart from the note entries: a scan without note entries (cold)
    reads no convergent file, and while none changed it does not merge again either."""
    root = make_vault(
        {
            "a.md": "我决定改用 Svelte\n",
            "converged/core/profile.md": "- 我决定改用 Svelte\n",
            "converged/topics/web.md": "- 前端用 Svelte\n",
        }
    )
    age_all(root)
    vault = open_vault(root)
    expected = scan_vault(vault).to_json()
    assert (vault.machine_dir / GUARD_NAME).exists()
    (vault.machine_dir / CACHE_NAME).unlink()  # cold: every note is read again

    def no_convergent_reads(*args, **kwargs):
        raise AssertionError("a convergent file was read again")

    def no_merge(*args, **kwargs):
        raise AssertionError("the guard index was merged again")

    with monkeypatch.context() as patch:  # its own patches only: the home stays isolated
        patch.setattr(scan_module, "_convergent_entry", no_convergent_reads)
        patch.setattr(scan_module, "_merge_convergent", no_merge)
        cold = scan_vault(vault)
    assert cold.notes_read == 1 and cold.to_json() == expected
    with open(root / "converged/topics/web.md", "a", encoding="utf-8") as handle:
        handle.write("- 我喜欢先看结论\n")  # a changed convergent file: re-read, re-merged
    assert scan_vault(vault).to_json() == expected


def test_damaged_guard_index_is_rebuilt(make_vault):
    root = make_vault(
        {"a.md": "我决定改用 Svelte\n", "converged/core/profile.md": "- 我决定改用 Svelte\n"}
    )
    age_all(root)
    vault = open_vault(root)
    expected = scan_vault(vault).to_json()
    for garbage in (
        b"\x00",
        marshal.dumps({"stamp": ("scan", FORMATS["scan"], "0", "?", "guard"), "entries": {}}),
    ):
        (vault.machine_dir / GUARD_NAME).write_bytes(garbage)
        assert scan_vault(vault).to_json() == expected


# --- odd files ---------------------------------------------------------------------------------


ODD = {
    "bom.md": "\ufeff我决定改用 Svelte\n".encode("utf-8"),
    "crlf.md": "# t\r\n我决定改用 Vue\n".encode(),  # mixed line ends
    "frontmatter.md": "---\ntitle: [broken\n---\n我决定改用 Solid\n".encode(),
    "latin1.md": "我决定改用 Qwik ".encode() + b"caf\xe9\n",
    "nul.md": b"\x00\x01\x02 binary",
    "huge.md": ("我决定改用 Angular\n" + "x" * 2000).encode("utf-8"),
    "empty.md": b"",
    "x.sync-conflict-20261128-101010-ABC.md": "我决定改用 Ember\n".encode(),
    "x (conflicted copy).md": "我决定改用 Lit\n".encode(),
    ".x.md.icloud": b"bplist00",
}
KINDS = {
    "bom.md": "encoding",
    "crlf.md": "encoding",
    "frontmatter.md": "frontmatter",
    "latin1.md": "encoding",
    "nul.md": "binary",
    "huge.md": "too-large",
    "empty.md": "empty",
    "link.md": "symlink",
    "x.sync-conflict-20261128-101010-ABC.md": "sync-conflict",
    "x (conflicted copy).md": "sync-conflict",
    ".x.md.icloud": "cloud-placeholder",
}


def test_odd_files_are_reported_and_never_touched(make_vault, tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("我决定改用 Backbone\n", "utf-8")
    root = make_vault(ODD, config_yaml="max_note_bytes: 1024\n")
    os.symlink(outside, root / "link.md")
    before = {name: (root / name).read_bytes() for name in ODD} | {"outside": outside.read_bytes()}
    vault = open_vault(root)
    for _ in range(2):  # cold, then from the cache
        result = scan_vault(vault)
        odd = {(o.rel, o.kind) for o in result.odd}
        for name, kind in KINDS.items():
            assert (name, kind) in odd, f"{name} not reported as {kind}: {sorted(odd)}"
        assert all(o.message for o in result.odd)
        # readable-with-warnings notes are still scanned; the rest are not inputs
        assert {s.note for s in result.signals} == {
            "bom.md",
            "crlf.md",
            "frontmatter.md",
            "latin1.md",
        }
    after = {name: (root / name).read_bytes() for name in ODD} | {"outside": outside.read_bytes()}
    assert after == before
    assert os.readlink(root / "link.md") == str(outside)


# --- only ------------------------------------------------------------------------------------


def test_only_limits_the_result_but_recurrence_counts_everything(make_vault):
    root = make_vault({"a.md": "又熬夜到两点\n我决定改用 uv\n", "b note.md": "又熬夜了\n"})
    vault = open_vault(root)
    result = scan_vault(vault, only=["a"])
    assert by_note(result) == {"a.md": [(2, "decision"), (1, "recurring")]}
    assert [p.rel for p in scan_vault(vault, only=["b note.md"]).pending] == ["b note.md"]
    with pytest.raises(CmemError, match="nope"):
        scan_vault(vault, only=["nope"])


def test_only_gives_for_each_note_exactly_what_the_whole_scan_gives_it(sample_vault):
    """`only` judges the named notes alone: for every divergent note of the sample vault (with
    deferred, excluded, already converged and odd notes), its signals, deferred and re-emerged
    lines and its pending entry are the whole scan's, in the same order; the odd files are all."""
    (sample_vault / "converged/topics/zz-retired.md").write_text(PROFILE, "utf-8")
    (sample_vault / "again.md").write_text("- 以后都用 tab 缩进\n", "utf-8")  # re-emerged
    (sample_vault / "latin1.md").write_bytes("Je préfère le thé.\n".encode("latin-1"))  # odd
    vault = open_vault(sample_vault)
    whole = scan_vault(vault).to_json()
    assert whole["reemerged"] and whole["odd"] and whole["deferred"]
    names = sorted(
        {
            item["note"]
            for kind in ("signals", "deferred", "reemerged", "pending")
            for item in whole[kind]
        }
    )
    assert len(names) >= 5, names
    for rel in names:
        part = scan_vault(vault, only=[rel]).to_json()
        expected = {
            kind: [item for item in items if kind == "odd" or item["note"] == rel]
            for kind, items in whole.items()
        }
        assert part == expected, rel
