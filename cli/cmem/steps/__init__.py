"""The step layer: every command that writes — a pass, `archive apply`, `undo`, `doctor --fix` —
is one step through here (docs/design.md §5 "Steps").

- `runner`: `open_step` (lock, repository checks, recovery of any interrupted step, snapshot)
  and `Step.commit` (journal → apply → commit);
- `changes`: a step's file changes and their all-or-nothing apply, with second-writer checks;
- `journal`: the crash journal every step writes before its first change, and its recovery;
- `preflight`: the repository checks and the snapshot of the user's own edits;
- `message`: commit messages from structured fields (model text never adds a trailer);
- `record`: the typed step record kept in `.cmem/state.json`.

The step layer sits below the commands that use it and imports none of them.
"""
