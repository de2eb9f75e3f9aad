"""Text, knowing nothing else of cmem: the token estimate (`tokens`), file names as they can be
shown (`names`), credentials found and redacted (`secrets`) and which characters are CJK
(`scripts`). The lowest layer: the error messages, the vault model, run records and everything
an agent reads use it."""
