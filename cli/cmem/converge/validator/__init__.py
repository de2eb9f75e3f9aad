"""The validator and its rules (docs/design.md §5): a reply parsed (`response`), read once
(`reply_reading`), checked by the rules of the rulebook (`rules`), one `check_…` module per rule's
idea, registered in `validate`; what they share: the paths a reply may write (`allowed_paths`),
the lines it may add (`added_lines`), the words a rewrite must keep (`kept_words`) and the session
turns a statement may cite (`turn_citations`)."""
