"""The builtin engine (docs/design.md §4): deterministic, offline, extractive. `engine` writes the reply;
`working_copy` holds the convergent layer as it edits it, `placing` finds where a line goes,
`edits` writes it there; a signal line's words (`line_words`), its one sentence (`sentences`), the
statement it becomes (`phrasing`), what a correction replaces (`corrections`), the slot a switch
fills (`slots`), recurring patterns (`patterns`) and a new topic file's name (`topic_names`)."""
