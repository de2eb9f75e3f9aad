"""Text for people: status, scan, doctor and pass reports with colour and the spinner
(`reports`), archive/undo/log/diff/trace (`history`), hooks and trust (`setup`). Only this
package imports rich."""
