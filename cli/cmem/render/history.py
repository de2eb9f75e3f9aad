"""Text for people from the archive and history commands: `archive list|apply`, `undo`, `log`,
`diff`, `trace`. The CLI prints what these return.

Plain ANSI `paint` of `cmem.render.reports`, so colour follows NO_COLOR, `--no-color` and the terminal
alike; tables are padded by display width (a CJK character takes two columns), never truncated.
"""

from __future__ import annotations

import unicodedata

from cmem.render.reports import colour_diff, paint

STATE_STYLE = {
    "ready": "green",
    "changed": "yellow",
    "waiting": "yellow",
    "uncited": "red",
    "unreadable": "red",
    "missing": "red",
    "unparsed": "red",
    "refused": "red",
}
KIND_STYLE = {"converge": "blue", "archive": "magenta", "undo": "yellow"}


def _width(text: str) -> int:
    """Columns a string takes on a terminal: CJK characters take two."""
    return sum(
        2 if unicodedata.east_asian_width(ch) in "WF" else 0 if unicodedata.combining(ch) else 1
        for ch in text
    )


def _table(headers: list[str], rows: list[list[tuple[str, str | None]]]) -> str:
    """A borderless table; each cell is (text, style or None). Columns are padded by display
    width (CJK counts two), never truncated: a long path wraps in the terminal like git's output
    rather than losing its end."""
    widths = [max([_width(h)] + [_width(row[i][0]) for row in rows]) for i, h in enumerate(headers)]
    last = len(headers) - 1

    def line(cells: list[tuple[str, str | None]]) -> str:
        parts = []
        for index, (text, style) in enumerate(cells):
            pad = "" if index == last else " " * (widths[index] - _width(text))
            parts.append((paint(text, style) if style and text else text) + pad)
        return "  ".join(parts).rstrip()

    out = [line([(h, "bold") for h in headers])]
    out += [line(row) for row in rows]
    return "\n".join(out)


# --- archive ----------------------------------------------------------------------------------


def render_staged(lines, checklist_rel: str) -> str:
    if not lines:
        return f"nothing staged in {checklist_rel}"
    ticked = sum(line.ticked for line in lines)
    counts: dict[str, int] = {}
    for line in lines:
        counts[line.state] = counts.get(line.state, 0) + 1
    summary = ", ".join(paint(f"{n} {state}", STATE_STYLE[state]) for state, n in counts.items())
    out = [
        paint(f"{checklist_rel}: {len(lines)} staged, {ticked} ticked", "bold") + f" ({summary})",
        "",
    ]
    with_detail = any(line.detail for line in lines)
    rows = []
    for line in lines:
        note = line.note or line.raw.strip()[:48]  # an unparsed line shows what it says
        row = [
            (str(line.line_no), None),
            ("[x]" if line.ticked else "[ ]", None),
            (note, None),
            (line.state, STATE_STYLE[line.state]),
            (line.target or "", None),
        ]
        rows.append(row + [(line.detail, "dim")] if with_detail else row)
    out.append(
        _table(
            ["line", "tick", "note", "state", "target"] + (["detail"] if with_detail else []), rows
        )
    )
    out += [
        "",
        "Tick the lines to archive (in Obsidian or any editor), then run `cmem archive apply`"
        " (`--all` takes every ready line).",
    ]
    return "\n".join(out)


def render_archive_plan(plan) -> str:
    out = []
    chosen = "every staged line" if plan.all_lines else "ticked lines"
    if plan.moves:
        out.append(
            paint(
                f"archive {len(plan.moves)} note{'s' if len(plan.moves) != 1 else ''} ({chosen}):",
                "bold",
            )
        )
        rows = [
            [
                (m.line.note or "", None),
                (m.source, None),
                ("→", "dim"),
                (m.target, "yellow" if m.renamed else None),
            ]
            for m in plan.moves
        ]
        out.append(_table(["note", "from", "", "to"], rows))
    else:
        out.append(f"nothing to archive ({chosen}: none is ready)")
    if plan.skipped:
        out += ["", paint(f"skipped, staying in the checklist ({len(plan.skipped)}):", "bold")]
        for line in plan.skipped:
            out.append(
                f"  {paint(line.state, STATE_STYLE[line.state])}  {line.note or f'line {line.line_no}'}: {line.detail}"
            )
    if plan.not_chosen and not plan.all_lines:
        out += [
            "",
            f"{len(plan.not_chosen)} unticked line{'s' if len(plan.not_chosen) != 1 else ''} wait"
            " (tick them, or pass --all).",
        ]
    for warning in plan.warnings:
        out.append(paint(f"warning: {warning}", "yellow"))
    return "\n".join(out)


def render_archive_result(result) -> str:
    if result.status == "dry-run":
        return render_archive_plan(result.plan) + "\n\ndry run: nothing moved."
    if result.status == "nothing":
        return render_archive_plan(result.plan)
    out = []
    if result.snapshot_commit:
        out.append(
            f"your edits to the checklist and notes were committed first as {result.snapshot_commit[:8]}"
        )
    count = len(result.plan.moves)
    out.append(
        paint(
            f"archived {count} note{'s' if count != 1 else ''}",
            "bold",
            *(("green",) if count else ()),
        )
        + (f" · commit {result.commit[:8]}" if result.commit else "")
        + " — undo with `cmem undo`"
    )
    for move in result.plan.moves:
        out.append(f"  {move.source} → {move.target}")
    again = result.plan.pending_again
    if again:
        out.append(
            paint(f"pending again ({len(again)}):", "bold", "yellow")
            + " memory no longer holds what "
            + ("it was" if len(again) == 1 else "they were")
            + " converged into; the next pass converges "
            + ("it" if len(again) == 1 else "them")
            + " again"
        )
        out += [f"  {line.source}" for line in again]
    if result.plan.skipped:
        out.append(f"  {len(result.plan.skipped)} skipped, still staged (`cmem archive list`)")
    out += [paint(f"warning: {warning}", "yellow") for warning in result.step_warnings]
    return "\n".join(out)  # the plan, with its warnings, was shown before the move


# --- undo -------------------------------------------------------------------------------------


def render_undo_plan(plan) -> str:
    target = plan.target
    if target is None:
        return "nothing to undo: no cmem pass or archive apply in this vault's history (or all are undone)."
    out = [
        paint(f"undo: {target.subject.removeprefix('cmem: ')}", "bold"),
        f"  commit {target.short} · pass {target.pass_id} · {_when(target.time)}",
    ]
    if target.trailer_lost:
        out.append(
            "  found by state.json's record of the pass: the commit's message lost its "
            "Cmem-Pass trailer (an amend?)"
        )
    verbs = {
        "restore": "restore",
        "merge": "restore (keeping later edits)",
        "remove": "remove",
        "keep": "keep",
        "move-back": "move back",
    }
    for item in plan.files:
        where = f"{item.from_path} → {item.path}" if item.action == "move-back" else item.path
        detail = f"  ({item.detail})" if item.detail else ""
        out.append(f"  {verbs[item.action]:<10} {where}{paint(detail, 'dim')}")
    if target.kind == "converge":
        out.append("  its notes become pending again and leave the archive checklist")
    elif target.kind == "archive":
        out.append(
            "  the notes go back to the divergent layer and their lines back into the checklist"
        )
    if plan.refused:
        out += ["", paint("refused:", "red", "bold")]
        out += [f"  {reason}" for reason in plan.reasons]
        if not plan.blocked:
            out.append(
                "  `cmem undo --force` keeps those later changes and takes back only this step's, where they do not overlap."
            )
    return "\n".join(out)


def render_undo_result(result) -> str:
    if result.status == "nothing":
        return render_undo_plan(result.plan)
    target = result.plan.target
    return (
        paint("undone", "bold", "green")
        + f": {target.subject.removeprefix('cmem: ')}"
        + (f" · commit {result.commit[:8]}" if result.commit else "")
        + f"\n  to redo it: git revert {result.commit[:8] if result.commit else 'HEAD'}"
        + "".join("\n" + paint(f"warning: {warning}", "yellow") for warning in result.warnings)
    )


# --- log and diff -----------------------------------------------------------------------------


def _when(iso: str) -> str:
    return iso[:16].replace("T", " ") if iso else "?"


def _names(paths: list[str]) -> str:
    return ", ".join(p.rsplit("/", 1)[-1].removesuffix(".md") for p in paths)


def render_log(commits) -> str:
    if not commits:
        return "no passes yet: run `cmem converge`."
    out = []
    for commit in commits:
        if getattr(commit, "status", None) in ("failed", "refused", "interrupted"):
            out += _failed_entry(commit)
            continue
        mark = paint("●", KIND_STYLE.get(commit.kind, "bold"))
        undone = paint("  (undone)", "dim") if commit.undone_by else ""
        title = commit.subject.removeprefix("cmem: ")
        out.append(
            f"{mark} {paint(_when(commit.time), 'cyan')}  {paint(title, 'bold')}  {paint(commit.short, 'dim')}{undone}"
        )
        details = [("pass", commit.pass_id)]
        if commit.engine:
            details.append(
                ("engine", commit.engine + (f" ({commit.model})" if commit.model else ""))
            )
        if commit.kind == "archive":
            details += [("moved", value) for value in commit.fields.get("Archived", [])]
        elif commit.kind == "undo":
            details.append(("undoes", (commit.undoes or "?")[:8]))
        else:
            if commit.notes:
                details.append(("notes", _names(commit.notes)))
            files = [
                c.path
                for c in commit.files
                if c.path.endswith(".md") and "/" in c.path and not c.path.endswith("CHECKLIST.md")
            ]
            if files:
                details.append(("files", ", ".join(files)))
            details += [("deferred", value) for value in commit.fields.get("Deferred", [])]
        details += [("warning", value) for value in commit.warnings]
        for label, value in details:
            style = "yellow" if label == "warning" else "dim"
            out.append(f"  {paint(f'{label:<8}', style)} {value}")
        out.append("")
    return "\n".join(out).rstrip("\n")


def _failed_entry(entry) -> list[str]:
    """A pass that ended without a commit: why, what it did before, where to look."""
    snapshot = entry.snapshot_commit[:8] if entry.snapshot_commit else None
    out = [
        f"{paint('✗', 'red')} {paint(_when(entry.time), 'cyan')}  {paint(f'converge {entry.status}', 'red', 'bold')}  "
        + paint("(no commit: nothing written)", "dim")
    ]
    details = [("pass", entry.pass_id)]
    if entry.engine:
        details.append(("engine", entry.engine + (f" ({entry.model})" if entry.model else "")))
    details.append(("reason", entry.reason.splitlines()[0] if entry.reason else entry.status))
    if entry.engine == "llm" or entry.rounds:
        details.append(
            (
                "asked",
                {0: "the model was not asked", 1: "once"}.get(
                    entry.rounds, f"{entry.rounds} times ({entry.rounds - 1} repair rounds)"
                ),
            )
        )
    if entry.notes:
        details.append(("notes", _names(entry.notes)))
    if snapshot:
        details.append(("snapshot", f"{snapshot} (your hand edits, committed first; it stays)"))
    details.append(("run", entry.run))
    for label, value in details:
        out.append(f"  {paint(f'{label:<8}', 'yellow' if label == 'reason' else 'dim')} {value}")
    out.append("")
    return out


def render_diff(result) -> str:
    commit = result.commit
    head = paint(f"{commit.subject}", "bold") + paint(
        f"  ({commit.short} · pass {commit.pass_id} · {_when(commit.time)})", "dim"
    )
    if not result.diff.strip():
        return head + "\n(no change to the memory files or the checklist)"
    return head + "\n\n" + colour_diff(result.diff.rstrip("\n"))


# --- trace ------------------------------------------------------------------------------------


def _date_label(version) -> str:
    if version.since:
        return version.since
    if version.until:
        return f"before {version.until}"
    if version.commit_date:
        return f"by {version.commit_date}"
    return "undated"


def _provenance(version) -> str:
    parts = []
    if version.origin in ("pass", "state") and version.pass_id:
        parts.append(
            f"pass {version.pass_id}" + (f" · {version.commit[:8]}" if version.commit else "")
        )
    elif version.origin == "hand" and version.commit:
        parts.append(
            f"edited by hand · {version.commit[:8]} {version.commit_subject or ''}".rstrip()
        )
    if version.sources:
        parts.append("from " + ", ".join(f"[[{s}]]" for s in version.sources))
    return " · ".join(parts)


def _timeline(history, indent: str = "  ") -> list[str]:
    out = []
    width = max(len(_date_label(v)) for v in history.versions)
    last = len(history.versions) - 1
    for index, version in enumerate(history.versions):
        date = paint(f"{_date_label(version):<{width}}", "cyan")
        if index == last:
            bullet, text = paint("●", "green"), paint(version.text, "bold")
            now = paint("  now", "green") if history.changed else ""
        else:
            bullet, text, now = paint("○", "dim"), version.text, ""
        out.append(f"{indent}{bullet} {date}  {text}{now}")
        provenance = _provenance(version)
        rail = paint("│", "dim") if index < last else " "
        if provenance:
            out.append(f"{indent}{rail} {' ' * width}  {paint(provenance, 'dim')}")
        elif index < last:
            out.append(f"{indent}{rail}")
    return out


def render_trace(result) -> str:
    changed = [h for h in result.statements if h.changed]
    still = [h for h in result.statements if not h.changed]
    if result.mode == "file":
        out = [paint(result.target, "bold") + (f" — {result.title}" if result.title else "")]
        if not result.statements:
            return out[0] + "\n(no statements)"
        out.append(f"{len(changed)} of {len(result.statements)} statements changed over time")
        for history in changed:
            out.append("")
            where = (
                f"{history.heading} · line {history.line}"
                if history.heading
                else f"line {history.line}"
            )
            out.append(paint(where, "bold"))
            out += _timeline(history)
        if still:
            out += ["", paint(f"unchanged since written ({len(still)})", "bold")]
            for history in still:
                version = history.versions[-1]
                date = version.since or (f"by {version.commit_date}" if version.commit_date else "")
                sources = (
                    f"  from {', '.join(f'[[{s}]]' for s in version.sources)}"
                    if version.sources
                    else ""
                )
                out.append(
                    f"  {paint(f'{date:<13}', 'cyan')}  {version.text}{paint(sources, 'dim')}"
                )
        return "\n".join(out)
    if not result.statements:
        return f"nothing in the memory files mentions {result.target!r}."
    files = len(result.files)
    out = [
        paint(
            f"{result.target}: {len(result.statements)} statement{'s' if len(result.statements) != 1 else ''}"
            f" in {files} file{'s' if files != 1 else ''}, oldest first",
            "bold",
        )
    ]
    for history in result.statements:
        out += [
            "",
            paint(f"{history.path}:{history.line}", "bold")
            + (paint(f"  {history.heading}", "dim") if history.heading else ""),
        ]
        out += _timeline(history)
    return "\n".join(out)


def render_sync(result) -> str:
    """`cmem sync`: what came in, what went out, and what the next pass has to settle."""
    where = f"{result.remote}/{result.branch}"
    if result.status == "offline":
        return paint("offline: ", "yellow") + (result.reason or f"{where} cannot be reached")
    lines = []
    if result.merged == "fast-forward":
        lines.append(
            f"fast-forwarded to {where} ({len(result.changed)} file{'s' if len(result.changed) != 1 else ''} changed)"
        )
    elif result.merged == "merge":
        lines.append(
            f"merged {where} in commit {(result.commit or '')[:8]} ({len(result.changed)} file{'s' if len(result.changed) != 1 else ''} changed, "
            f"{len(result.merged_files)} merged from both sides)"
        )
    for line in result.conflicts:
        lines.append(paint("conflict: ", "yellow") + line + " — the next pass resolves it")
    for notice in result.notices:
        lines.append(paint("note: ", "cyan") + notice)
    if result.pushed:
        lines.append(f"pushed to {where}")
    if not lines:
        lines.append(f"up to date with {where}")
    return "\n".join(lines)
