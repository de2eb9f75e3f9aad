"""The archive gate (docs/design.md §6): the checklist format (`checklist`), the gate that moves
ticked notes into the archive (`gate`), and `cmem undo` (`undo`)."""
