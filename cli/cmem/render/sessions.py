"""Text for people from `cmem capture`: which session notes were written or grew, and what was
skipped. The CLI prints what this returns."""

from __future__ import annotations


def render_capture(result) -> str:
    out = []
    for captured in result.sessions:
        verb = "new note" if captured.created else "added to"
        turns = f"{captured.added} turn{'s' if captured.added != 1 else ''}"
        where = f" · {captured.project}" if captured.project else ""
        out.append(f"{verb} {captured.note}: {turns} of {captured.agent}{where}")
        if captured.continues:
            out.append(f"  continues [[{captured.continues}]]")
    for skipped in result.skipped:
        out.append(f"skipped {skipped['what']}: {skipped['reason']}")
    if result.redacted:
        out.append(f"{result.redacted} credential-like string(s) redacted before writing")
    if result.cut:
        out.append(f"{result.cut:,} characters of pasted text cut (sessions.max_turn_chars)")
    if not result.sessions:
        read = f" in {result.transcripts} transcript(s)" if result.transcripts else ""
        out.append(f"nothing new to capture{read}")
    elif result.commit:
        out.append(f"committed {result.commit[:12]}")
    return "\n".join(out)
