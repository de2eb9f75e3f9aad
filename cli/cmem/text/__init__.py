"""Text, knowing nothing else of cmem: the token estimate (`tokens`), file names as they can be
shown (`names`), credentials found and redacted (`secrets`), which characters are CJK (`scripts`)
and stop words and CJK bigrams (`terms`). The lowest layer: the error messages, the vault model,
run records and everything an agent reads use it."""
