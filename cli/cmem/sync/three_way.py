"""The merge a sync makes: this machine's commit and the other machine's, three ways from their
merge base, path by path (SPEC §13).

A path changed on one side only takes that side's bytes. A path both sides changed is merged by
what it is:

- a memory file: per statement (cmem.sync.memory_merge), frontmatter per key;
- `.cmem/state.json`: a union — every note either side converged, every step either side
  recorded (a note both converged keeps the later entry, with the lines of both);
- the archive checklist: per note, sections kept from both sides;
- a note removed on one side (archived) and edited on the other: it stays where the edit is, its
  archive copy is not kept (every note exists once), its state entry comes back, and its
  checklist line is staged again (`changed`: the next pass scans it again);
- anything else: `git merge-file`; lines appended to a note on both sides are both kept; any
  other overlap is a `MergeConflict` naming the file — no marker is ever committed.

Nothing here writes: `plan_merge` returns the bytes; cmem.sync.remote applies them in one step.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field

from cmem.errors import CmemError
from cmem.steps import commits as history
from cmem.sync.memory_merge import (
    MergeConflict,
    diff3_parts,
    has_markers,
    merge_file,
    merge_memory,
    merge_units,
)
from cmem.vault.layers import ARCHIVE, DIVERGENT, RESIDENT, SITUATIONAL, Vault


@dataclass
class MergePlan:
    ours: str
    theirs: str
    base: str | None
    files: dict[str, bytes | None] = field(
        default_factory=dict
    )  # path → merged bytes, where they differ from ours
    merged: list[str] = field(default_factory=list)  # paths both sides changed, merged here
    conflicts: list[str] = field(default_factory=list)  # "path: conflict statement"
    notices: list[str] = field(default_factory=list)
    kept: list[str] = field(
        default_factory=list
    )  # notes archived on one side, edited on the other: kept in place
    modes: dict[str, str] = field(default_factory=dict)  # path → its merged git mode


Tree = dict[str, tuple[str, str]]  # path → (mode, blob)


def read_tree(vault: Vault, commit: str | None) -> Tree:
    if commit is None:
        return {}
    out = history.run_git(vault.root, "ls-tree", "-r", "-z", "--full-tree", commit).stdout
    tree: Tree = {}
    for entry in out.split("\0"):
        if not entry:
            continue
        meta, path = entry.split("\t", 1)
        mode, _, blob = meta.split(" ")
        tree[path] = (mode, blob)
    return tree


def read_blobs(vault: Vault, blobs: list[str]) -> dict[str, bytes]:
    """Blob → bytes, in one `git cat-file --batch`."""
    wanted = list(dict.fromkeys(b for b in blobs if b))
    if not wanted:
        return {}
    result = subprocess.run(
        ["git", *history.SAFE_GIT_OPTIONS, "-C", str(vault.root), "cat-file", "--batch"],
        input="".join(f"{b}\n" for b in wanted).encode(),
        capture_output=True,
        env=history._env(),
    )
    if result.returncode != 0:
        raise CmemError(
            f"git cat-file failed in {vault.root}: {result.stderr.decode('utf-8', 'replace').strip()}"
        )
    data, position, found = result.stdout, 0, {}
    for blob in wanted:
        header_end = data.index(b"\n", position)
        header = data[position:header_end].split(b" ")
        size = int(header[2])
        found[blob] = data[header_end + 1 : header_end + 1 + size]
        position = header_end + 1 + size + 1  # the content, then a newline
    return found


def merge_base(vault: Vault, ours: str, theirs: str) -> str | None:
    result = history.run_git(vault.root, "merge-base", ours, theirs, check=False)
    return result.stdout.strip() or None


def plan_merge(vault: Vault, ours: str, theirs: str, date: str) -> MergePlan:
    """What merging `theirs` into `ours` gives, path by path (`files` holds only what differs
    from `ours`). Raises MergeConflict, naming the file, when text cannot be merged."""
    base = merge_base(vault, ours, theirs)
    plan = MergePlan(ours, theirs, base)
    trees = [read_tree(vault, commit) for commit in (base, ours, theirs)]
    base_tree, our_tree, their_tree = trees
    blob = lambda tree, path: tree[path][1] if path in tree else None
    restored, dropped_copies = _archived_and_edited(vault, base_tree, our_tree, their_tree)
    plan.kept = [source for source, _, _ in restored]
    both_changed = []
    taken: dict[str, str | None] = {}  # path → their blob (read below), or None: removed
    for path in sorted(set(base_tree) | set(our_tree) | set(their_tree)):
        b, o, t = blob(base_tree, path), blob(our_tree, path), blob(their_tree, path)
        if path in dropped_copies:
            if o is not None:
                taken[path] = None  # our archive copy of a note the other side kept editing
            continue
        if o == t or t == b:
            continue
        for tree in (our_tree, their_tree):
            if path in tree and tree[path][0] not in ("100644", "100755"):
                raise MergeConflict(
                    f"{path} is a symbolic link or submodule the other machine changed; cmem sync merges files only — merge it with git."
                )
        if o == b:
            taken[path] = t
            continue
        both_changed.append((path, b, o, t))
    contents = read_blobs(
        vault,
        [v for v in taken.values() if v is not None]
        + [x for _, *blobs in both_changed for x in blobs if x],
    )
    for path, their_blob in taken.items():
        plan.files[path] = contents[their_blob] if their_blob is not None else None
    for path, b, o, t in both_changed:
        if o is None or t is None:
            # removed on one side, changed on the other: the change is kept (no note is lost)
            if t is not None:  # removed on ours: theirs is taken
                plan.files[path] = contents[t]
            if path not in plan.kept:
                plan.notices.append(
                    f"{path} was removed on one machine and changed on the other; the changed file was kept"
                )
            continue
        plan.merged.append(path)
        plan.files[path] = _merge_path(
            vault, plan, path, contents.get(b) if b else None, contents[o], contents[t], date
        )
    # A note the archiving side had edited too before archiving it: both edits are kept
    for source, copy, side_name in restored:
        archiving, editing = (
            (our_tree, their_tree) if side_name == "ours" else (their_tree, our_tree)
        )
        if archiving[copy][1] == base_tree[source][1]:
            continue
        texts = read_blobs(vault, [base_tree[source][1], archiving[copy][1], editing[source][1]])
        base_text, archived_text, edited_text = (
            _text(texts[b]) for b in (base_tree[source][1], archiving[copy][1], editing[source][1])
        )
        mine, other = (
            (archived_text, edited_text) if side_name == "ours" else (edited_text, archived_text)
        )
        plan.files[source] = merge_plain(source, base_text, mine, other).encode(
            "utf-8", "surrogateescape"
        )

    # state.json and the checklist take back the notes kept in place, whoever changed them
    def merged_bytes(path: str) -> bytes | None:
        if path in plan.files:
            return plan.files[path]
        ours_blob = blob(our_tree, path)
        return read_blobs(vault, [ours_blob])[ours_blob] if ours_blob else None

    if restored:
        notes = [source for source, _, _ in restored]
        checklist = merged_bytes(vault.checklist_rel)
        base_blob = blob(base_tree, vault.checklist_rel)
        base_checklist = _text(read_blobs(vault, [base_blob])[base_blob]) if base_blob else ""
        if checklist is not None or base_checklist:
            plan.files[vault.checklist_rel] = restage_lines(
                _text(checklist or b""), base_checklist, notes
            ).encode("utf-8")
        state = merged_bytes(vault.rel(vault.state_file))
        if state is not None:
            plan.files[vault.rel(vault.state_file)] = restore_state_entries(state, restored)
    # a mode only the other side changed (a script made executable there) is taken
    for path in set(our_tree) & set(their_tree) & set(base_tree):
        modes = (base_tree[path][0], our_tree[path][0], their_tree[path][0])
        # between a plain file and an executable one only: a link or submodule is git's to merge
        if path not in plan.files and modes[1] == modes[0] != modes[2] and "100644" in modes:
            plan.files[path] = read_blobs(vault, [our_tree[path][1]])[our_tree[path][1]]
    # each merged file's mode: the side that changed it, else ours (a file both sides added: ours)
    for path, data in plan.files.items():
        sides = [tree[path][0] if path in tree else None for tree in trees]
        mode = sides[2] if sides[1] in (None, sides[0]) else sides[1]
        if data is not None and mode:
            plan.modes[path] = mode
    # what equals ours after all (bytes and mode) is no change
    ours_now = read_blobs(vault, [our_tree[p][1] for p in plan.files if p in our_tree])
    for path in list(plan.files):
        if (
            path in our_tree
            and plan.files[path] == ours_now[our_tree[path][1]]
            and plan.modes.get(path, "100644") == our_tree[path][0]
        ):
            del plan.files[path]
            plan.modes.pop(path, None)
    for source, _, _ in restored:
        plan.notices.append(
            f"{source} was archived on one machine and edited on the other: it stays in place, staged again"
        )
    return plan


def _archived_and_edited(
    vault: Vault, base: Tree, ours: Tree, theirs: Tree
) -> tuple[list[tuple[str, str, str]], set[str]]:
    """Notes one side moved into the archive (removed at their path, added in the archive layer
    under the same name — or `name (2)` when that was taken) while the other side edited them:
    [(note path, archive copy, "ours" | "theirs": the side that archived)], and the archive
    copies, which the merge does not keep."""
    restored, copies = [], set()
    for side_name, side, other in (("ours", ours, theirs), ("theirs", theirs, ours)):
        for path, (_, blob) in base.items():
            if (
                path in side
                or path not in other
                or other[path][1] == blob
                or vault.layer_of(path) != DIVERGENT
            ):
                continue
            stem = path.rsplit("/", 1)[-1].removesuffix(".md")
            same_name = re.compile(re.escape(stem) + r"(?: \(\d+\))?\.md")
            added = [
                p
                for p, (_, b) in side.items()
                if p not in base
                and vault.layer_of(p) == ARCHIVE
                and same_name.fullmatch(p.rsplit("/", 1)[-1])
            ]
            added.sort(key=lambda p: side[p][1] != blob)  # the copy with the note's own bytes first
            if added:
                restored.append((path, added[0], side_name))
                copies.add(added[0])
    return restored, copies


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _merge_path(
    vault: Vault,
    plan: MergePlan,
    path: str,
    base: bytes | None,
    ours: bytes,
    theirs: bytes,
    date: str,
) -> bytes:
    try:
        b = base.decode("utf-8") if base is not None else None
        o, t = ours.decode("utf-8"), theirs.decode("utf-8")
    except UnicodeDecodeError:
        raise MergeConflict(
            f"{path} is not text and both machines changed it; keep one version with git, then sync again."
        ) from None
    if path == vault.rel(vault.state_file):
        return merge_state(base, ours, theirs, path)
    if path == vault.checklist_rel:
        return merge_checklist(path, b or "", o, t).encode("utf-8")
    if path.endswith(".md") and vault.layer_of(path) in (RESIDENT, SITUATIONAL):
        merged = merge_memory(path, b, o, t, date, vault.config.formats)
        plan.conflicts += [f"{path}: {line}" for line in merged.conflicts]
        plan.notices += merged.notices
        return merged.text.encode("utf-8")
    return merge_plain(path, b or "", o, t).encode("utf-8")


def merge_plain(path: str, base: str, ours: str, theirs: str) -> str:
    """git's own merge. Where both sides only added lines at the same place (two machines
    capturing into the same note), both are kept, ours first; any overlap with changed or
    removed lines is a conflict — nothing is merged."""
    merged = merge_file([base, ours, theirs], diff3=True)
    if not has_markers(merged):
        return merged
    out: list[str] = []
    for part in diff3_parts(merged.split("\n")):
        if isinstance(part, str):
            out.append(part)
            continue
        mine, was, other = part
        if any(line.strip() for line in was):
            raise MergeConflict(
                f"{path}: both machines changed the same lines differently — nothing was merged; "
                "keep one version on one machine (edit, commit), then sync again."
            )
        out += mine + [line for line in other if line not in mine or not line.strip()]
    return "\n".join(out)


# --- state.json: a union --------------------------------------------------------------------------


def merge_state(
    base: bytes | None, ours: bytes, theirs: bytes, where: str = ".cmem/state.json"
) -> bytes:
    """A union (`vault/state_json.py: merge_states`, the one rule a pass uses too)."""
    from cmem.vault.state_json import State, merge_states, parse_state, state_bytes

    base_state, our_state, their_state = (
        parse_state(data.decode("utf-8"), where) if data else State()
        for data in (base, ours, theirs)
    )
    return state_bytes(merge_states(base_state, our_state, their_state))


def restore_state_entries(data: bytes, restored: list[tuple[str, str, str]]) -> bytes:
    """Notes kept in place: their state entry leaves the archive path and comes back (with the
    digest of the bytes it converged, so the edit makes the note pending again)."""
    from cmem.vault.state_json import parse_state, state_bytes

    state = parse_state(data.decode("utf-8"), ".cmem/state.json")
    for source, copy, _ in restored:
        entry = state.notes.pop(copy, None)
        if entry is not None and source not in state.notes:
            state.notes[source] = entry
    return state_bytes(state)


# --- the archive checklist: per note --------------------------------------------------------------


def _note_of(line: str) -> str | None:
    from cmem.archive.checklist import _LINE_NOTE

    match = _LINE_NOTE.match(line)
    return "n:" + match.group(1).strip() if match else None


def _checklist_unit(line: str) -> str | None:
    """A staged line is its note's unit; a pass's section heading (cmem's own line) is a unit too,
    so two machines emptying different sections is no conflict."""
    from cmem.archive.checklist import _SECTION

    if _SECTION.match(line.strip()):
        return "h:" + line.strip()
    return _note_of(line)


def merge_checklist(path: str, base: str, ours: str, theirs: str) -> str:
    """One line per note: a line changed (ticked, restaged) on one side takes that side's; a line
    removed on one side (its note archived) goes; both changed: a ticked line wins, else ours."""
    from cmem.archive.checklist import remove_checklist_lines

    def resolve(name: str, b: str | None, o: str | None, t: str | None) -> str | None:
        if name.startswith("h:"):
            return (
                o if o is not None else t
            )  # a heading either side keeps stays; empty sections go below
        if o == t or t == b:
            return o
        if o == b:
            return t
        if o is None or t is None:
            return None  # removed on one side: the note was archived (or unstaged) there
        ticked = [line for line in (o, t) if "[x]" in line.lower()[:12]]
        return ticked[0] if ticked else o

    merged = merge_units(path, base, ours, theirs, _checklist_unit, resolve)
    return remove_checklist_lines(merged, set())


def restage_lines(current: str, base: str, notes: list[str]) -> str:
    """Put back the base's line of each note kept in place (it reads `changed` until the next
    pass stages it again)."""
    names = {note.rsplit("/", 1)[-1].removesuffix(".md") for note in notes}
    present = {_note_of(line) for line in current.split("\n")}
    lines = [
        line
        for line in base.split("\n")
        if (key := _note_of(line)) and key[2:] in names and key not in present
    ]
    if not lines:
        return current
    text = current.rstrip("\n")
    return (text + "\n\n" if text else "") + "\n".join(lines) + "\n"
