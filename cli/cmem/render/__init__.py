"""Text for people: status, scan, doctor and pass reports with colour and the spinner
(`reports`, its terminal line `status_line`), archive/undo/log/diff/trace (`history`), hooks and
trust (`setup`). None of it imports rich (typer does, for `--help` and its errors)."""
