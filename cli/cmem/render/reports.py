"""Turning core results into text for people. The CLI prints what these return.

Plain ANSI styling, not rich: `status`, `scan` and `context` run at every shell exit and session
start, and `rich.console` alone costs ~90 ms to import (perf-baselines.md §3). Colour follows
NO_COLOR, `--no-color` and whether the stream is a terminal.
"""

from __future__ import annotations

import os
import sys

_CODES = {
    "bold": "1",
    "dim": "2",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "blue": "34",
    "magenta": "35",
    "cyan": "36",
}
_enabled: bool | None = None


def set_color(enabled: bool | None) -> None:
    global _enabled
    _enabled = enabled


def color_on(stream=None) -> bool:
    if _enabled is not None:
        return _enabled
    if os.environ.get("NO_COLOR"):
        return False
    stream = stream or sys.stdout
    return hasattr(stream, "isatty") and stream.isatty()


def paint(text: str, *styles: str, stream=None) -> str:
    if not styles or not color_on(stream):
        return text
    codes = ";".join(_CODES[s] for s in styles)
    return f"\033[{codes}m{text}\033[0m"


CLASS_STYLE = {
    "correction": "red",
    "preference": "magenta",
    "decision": "blue",
    "recurring": "yellow",
}
LEVEL_STYLE = {"ok": "green", "warn": "yellow", "error": "red"}


def render_init(report) -> str:
    lines = []
    if not report.changed:
        lines.append(f"{report.root} is already a cmem vault; nothing changed.")
    else:
        lines.append(paint(f"cmem vault ready at {report.root}", "bold"))
        for rel in report.created:
            lines.append(f"  created {rel}")
        if report.repository == "created":
            lines.append("  made it a git repository")
        elif report.repository == "parent":
            lines.append("  commits go to the parent repository (git.allow_parent_repo: true)")
        if report.commit:
            lines.append(f"  committed cmem's files as {report.commit[:8]}")
    for note in report.notes:
        lines.append(f"  note: {note}")
    if report.changed:
        lines += [
            "",
            "Next: write notes at the vault root, then `cmem scan` to see signals and `cmem converge` to merge them.",
        ]
    return "\n".join(lines)


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _tokens(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 10000 else str(n)


def render_status(status) -> str:
    return render_status_data(status.to_json())


def render_status_data(data: dict) -> str:
    """`cmem status` from its JSON form, so a status served from the result cache (cmem.fast)
    prints exactly what a fresh one does."""
    from datetime import timedelta

    from cmem.triggers.due import format_age

    def age(entry: dict) -> str:
        return format_age(timedelta(seconds=entry["age_seconds"]))

    out = [paint(f"vault {data['vault']}", "bold"), ""]
    out.append(paint("layers", "bold"))
    budgets = data["budgets"]
    caps = {"resident": budgets["resident_max_tokens"]}
    layers = data["layers"]
    for name in ("divergent", "resident", "situational", "archive"):
        size = layers.get(name)
        if size is None:
            continue
        cap = caps.get(name)
        over = cap is not None and size["tokens"] > cap
        budget = f" / {_tokens(cap)} cap" if cap else ""
        text = f"  {name:<12} {size['notes']:>6} {'note ' if size['notes'] == 1 else 'notes'}  {_tokens(size['tokens']):>7} tokens{budget}"
        if f"layers.{name}.tokens" in data.get("may_be_stale", ()):
            text += "  (by folder times; --rescan recounts edits in place)"  # a stored status checks this layer by folder times
        out.append(paint(text + ("  over the cap" if over else ""), "red") if over else text)
    convergent = layers["resident"]["tokens"] + layers["situational"]["tokens"]
    fits = "fits" if convergent <= budgets["budget_tokens"] else "over"
    out.append(
        f"  convergent layer {_tokens(convergent)} tokens: {fits} the context budget ({_tokens(budgets['budget_tokens'])})"
    )
    newest, oldest = data["convergent_age"]["newest"], data["convergent_age"]["oldest"]
    if newest:
        out.append(
            f"  newest convergent file {newest['path']} ({age(newest)} old); oldest {oldest['path']} ({age(oldest)} old)"
        )
    out += ["", paint("pending", "bold")]
    pending = data["pending"]
    total = sum(pending["signals"].values())
    if total:
        by_class = ", ".join(
            paint(f"{count} {name}", CLASS_STYLE[name])
            for name, count in pending["signals"].items()
            if count
        )
        out.append(f"  {plural(total, 'signal')} in {plural(pending['notes'], 'note')}: {by_class}")
    else:
        out.append("  no pending signals")
    if pending["deferred"]:
        out.append(f"  {plural(pending['deferred'], 'line')} deferred (see `cmem scan`)")
    unmanaged = data.get("unmanaged") or []
    if unmanaged:
        total = sum(f["notes"] for f in unmanaged)
        out += [
            "",
            paint(f"not read: {plural(total, 'note')} outside every layer", "bold", "yellow"),
        ]
        for folder in unmanaged[:10]:
            out.append(
                f"  {folder['folder'] + '/':<20} {plural(folder['notes'], 'note'):>10}  to read them: {folder['setting']}"
            )
        if len(unmanaged) > 10:
            out.append(
                f"  … and {len(unmanaged) - 10} more folders (`cmem status --json` lists them all)"
            )
    out += ["", paint("passes", "bold")]
    last = data["last_pass"]
    if last:
        commit = f" · commit {last['commit'][:8]}" if last.get("commit") else ""
        out.append(f"  last pass {last['id']} at {last['time']}{commit}")
    else:
        out.append("  no pass yet")
    due = data["due"]
    out.append("  " + (paint("due: ", "green") if due["due"] else "not due: ") + due["reason"])
    if data["running"]:
        out.append(paint("  a pass is running now", "yellow"))
    for step in data["interrupted"]:
        from cmem.steps.record import step_name

        what = step_name(step["kind"])
        out.append(
            paint(
                f"  an interrupted {what} ({step['id']}) is waiting: the next command that writes "
                "(or `cmem doctor --fix`) finishes it, or sets it aside unapplied if it belongs to "
                "another copy of this vault or to history reset since",
                "yellow",
            )
        )
    failed = data.get("failed_pass")
    if failed:  # until a later pass succeeds
        reason = " ".join(str(failed.get("reason") or "").split())
        out.append(
            paint(
                f"  the last pass {failed['id']} {failed['status']} at {failed['time']}: {reason}"
                f" — run record {failed['run']}; `cmem log` shows it",
                "red",
            )
        )
    unattended = data["unattended"] or {}
    if unattended.get("stopped"):
        out.append(
            paint(
                f"  unattended passes are stopped after {unattended['failures']} failures in a row "
                f"(last: {unattended.get('last_error')}); `cmem converge` or `cmem doctor` resumes them",
                "red",
            )
        )
    elif unattended.get("failures"):
        out.append(
            paint(
                f"  {unattended['failures']} unattended pass(es) failed in a row (last: {unattended.get('last_error')})",
                "yellow",
            )
        )
    if data["staged_archive"]:
        out.append(
            f"  {plural(data['staged_archive'], 'note')} staged for archive ({data['ticked_archive']} ticked) — `cmem archive list`"
        )
    sync = data.get("last_sync")
    if sync:
        line = f"  last sync {format_age(timedelta(seconds=sync['age_seconds']))} ago: {sync['outcome']}"
        line += f" ({sync['remote']})" if sync["remote"] else ""
        if sync["outcome"] in ("offline", "refused"):  # what to fix before the next sync
            line = paint(line + (f" — {sync['detail']}" if sync["detail"] else ""), "yellow")
        out.append(line)
    conflicts = data.get("conflicts") or []
    if conflicts:
        out += [
            "",
            paint(
                f"conflict statements ({len(conflicts)}) — two machines rewrote one statement; "
                "the next pass resolves them (or edit the line)",
                "bold",
                "yellow",
            ),
        ]
        for conflict in conflicts[:20]:
            out.append(f"  {conflict['path']}:{conflict['line']}: {conflict['text'].strip()}")
    odd = data["odd_files"]
    if odd:
        out += ["", paint(f"odd files ({len(odd)})", "bold", "yellow")]
        for item in odd[:20]:
            out.append(f"  {item['file']}: {item['message']}")
        if len(odd) > 20:
            out.append(f"  … and {len(odd) - 20} more (`cmem doctor`)")
    return "\n".join(out)


def render_scan(scan) -> str:
    out = []
    if not scan.signals:
        out.append("no pending signals")
    else:
        out.append(paint(plural(len(scan.signals), "signal"), "bold"))
        # painted once a class, not once a line: each paint asks the terminal (2,300 lines at 10k)
        tags = {cls: paint(f"{cls:<10}", style) for cls, style in CLASS_STYLE.items()}
        for s in scan.signals:
            out.append(f"  {tags[s.cls]} {s.note}:{s.line}  [{s.cue}]  {s.excerpt}")
    if scan.deferred:
        out += ["", paint(f"{len(scan.deferred)} deferred", "bold")]
        for d in scan.deferred:
            where = f"{d.note}:{d.line}" if d.line else d.note
            out.append(f"  {where}  — {d.reason}")
    if scan.odd:
        out += ["", paint(f"{len(scan.odd)} odd files (not read)", "bold", "yellow")]
        for odd in scan.odd:
            out.append(f"  {odd.rel}: {odd.message}")
    return "\n".join(out)


def render_doctor(findings) -> str:
    out = []
    for f in findings:
        mark = {"ok": "ok   ", "warn": "warn ", "error": "error"}[f.level]
        out.append(f"{paint(mark, LEVEL_STYLE[f.level])} {f.check}: {f.message}")
    errors = sum(f.level == "error" for f in findings)
    warnings = sum(f.level == "warn" for f in findings)
    out.append("")
    out.append(
        "all clear" if not errors and not warnings else f"{errors} errors, {warnings} warnings"
    )
    return "\n".join(out)


STOP_HINT = "Ctrl-C stops; nothing is written"


class Spinner:
    """Progress on stderr while a pass runs: on a terminal, a status line redrawn in place
    (`render/status_line.py`: a spinner, elapsed seconds, the cursor hidden and shown again in
    the `finally` that calls `done`, Ctrl-C included); off a terminal (hooks, cron, CI logs, or
    TERM=dumb, which draws no escape codes) one plain line per model stage; nothing when quiet."""

    def __init__(self, quiet: bool = False, stream=None):
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = (
            hasattr(self.stream, "isatty")
            and self.stream.isatty()
            and os.environ.get("TERM") != "dumb"
        )
        self.last_message = None
        self._status = None

    def __call__(self, message: str, elapsed: float | None, limit: float | None = None) -> None:
        if self.quiet:
            return
        if self.tty:
            text = f"{message}… {elapsed:.0f}s" if elapsed is not None else f"{message}…"
            if elapsed is not None and limit:
                # the person waiting sees how long it may take and how to stop it safely
                text = f"{message}… {elapsed:.0f}s of {limit:.0f}s · {STOP_HINT}"
            if self._status is None:
                from cmem.render.status_line import StatusLine

                self._status = StatusLine(self.stream)
                self._status.start(text)
            else:
                self._status.update(text)
        elif elapsed is not None and message != self.last_message:
            # Off a terminal only the model's stages are worth a line.
            limit_note = f" (up to {limit:.0f}s; {STOP_HINT})" if limit else ""
            self.stream.write(f"{message}{limit_note}…\n")
            self.stream.flush()
        self.last_message = message

    def done(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None


def colour_diff(diff: str) -> str:
    out = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            out.append(paint(line, "bold"))
        elif line.startswith("+"):
            out.append(paint(line, "green"))
        elif line.startswith("-"):
            out.append(paint(line, "red"))
        elif line.startswith("@@"):
            out.append(paint(line, "cyan"))
        else:
            out.append(line)
    return "\n".join(out)


def render_pass(result, show_diff: bool = False) -> str:
    out = []
    if result.status == "nothing":
        # a pass that only deferred still says why each note waits (a credential, a vague line…)
        deferred = [f"  deferred {entry['note']}: {entry['reason']}" for entry in result.deferred]
        return "\n".join(
            [
                result.message or "nothing to converge",
                *deferred,
                *(paint(f"  warning: {w}", "yellow") for w in result.warnings),
            ]
        )
    if result.status == "failed":
        from cmem.converge.pipeline import failure_summary

        out.append(paint("the pass failed; nothing was written", "red", "bold"))
        out += [f"  {e}" for e in result.errors[:30]]
        if len(result.errors) > 30:
            out.append(f"  … and {len(result.errors) - 30} more")
        out.append(failure_summary(result, result.snapshot_commit))
        return "\n".join(out)
    head = {
        "applied": "pass applied",
        "dry-run": "dry run: nothing written",
        "proposed": "proposal saved (review mode)",
    }[result.status]
    engine = f" · engine {result.engine}" + (f" ({result.model})" if result.model else "")
    out.append(paint(f"{head} · pass {result.pass_id}{engine}", "bold"))
    if result.snapshot_commit:
        out.append(f"  your notes and edits were committed first as {result.snapshot_commit[:8]}")
    if result.diffstat:
        out.append("  files:")
        for path, added, removed in result.diffstat:
            out.append(
                f"    {path}  {paint('+' + str(added), 'green')} {paint('-' + str(removed), 'red')}"
            )
    else:
        out.append("  no memory file changed")
    if result.converged:
        out.append(
            f"  converged {plural(len(result.converged), 'note')} ({plural(result.signals, 'signal')}): "
            + ", ".join(result.converged)
        )
    if getattr(result, "lines", None):
        from cmem.converge.coverage import summary

        out.append(f"  {summary(result.lines)}")
    for move in getattr(result, "moved", []):
        out.append(f"  moved {move['statement']!r}: {move['from']} → {', '.join(move['to'])}")
    for entry in result.deferred:
        out.append(f"  deferred {entry['note']}: {entry['reason']}")
    if result.waiting:
        out.append(f"  over the budget, waiting for the next pass: {', '.join(result.waiting)}")
    for warning in result.warnings:
        out.append(paint(f"  warning: {warning}", "yellow"))
    if result.staged:
        out.append(
            f"  staged for archive: {', '.join(result.staged)} — tick them in the checklist, then `cmem archive apply`"
        )
    if show_diff and result.diff:
        out += ["", colour_diff(result.diff)]
    if result.status == "applied" and result.commit:
        out.append(
            f"  committed {result.commit[:8]} — review with `cmem diff` or `git show`, undo with `cmem undo`"
        )
    if result.message:
        out.append(f"  {result.message}")
    return "\n".join(out)
