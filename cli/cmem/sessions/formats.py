"""The transcript formats, one module each, in one table: adding an agent is one module and one
line here (pre-commit's `all_languages.py` is the model). `read_transcript` asks each in order
whether a file is its own; the generic one comes last, as the catch-all shapes."""

from __future__ import annotations

from pathlib import Path

from cmem.sessions import claude_code, codex, gemini, generic
from cmem.sessions.transcript import Session, Source, TranscriptError, TranscriptFormat, read_source

FORMATS: dict[str, TranscriptFormat] = {
    "claude-code": claude_code,
    "codex": codex,
    "gemini": gemini,
    "generic": generic,
}
AGENT_NAMES = tuple(FORMATS)


def detect_format(source: Source) -> TranscriptFormat | None:
    for fmt in FORMATS.values():
        if fmt.detect(source):
            return fmt
    return None


def read_transcript(
    path: Path, agent: str | None = None, data: bytes | None = None
) -> tuple[list[Session], Source]:
    """The sessions in one transcript file, and the file as read (how far it was whole). `agent`
    names the format instead of detecting it. A file no format reads, or that its named format
    cannot read, is one `TranscriptError` naming it."""
    try:
        source = read_source(path, data)
    except OSError as exc:
        raise TranscriptError(
            f"cannot read the transcript {path}: {exc.strerror or exc}."
        ) from None
    if agent is not None and agent not in FORMATS:
        raise TranscriptError(f"--agent must be one of {', '.join(FORMATS)}, not {agent!r}.")
    fmt = FORMATS[agent] if agent else detect_format(source)
    if fmt is None or (agent and not fmt.detect(source)):
        what = f"a {agent} transcript" if agent else "a transcript cmem can read"
        why = (
            "it is empty"
            if not source.text.strip()
            else "no line of it is a JSON object"
            if not source.records and source.whole_json is None
            else "its records are of no agent's shape cmem knows"
        )
        raise TranscriptError(
            f"{source.display} is not {what} ({why}); formats: {', '.join(FORMATS)}."
        )
    return fmt.parse(source), source
