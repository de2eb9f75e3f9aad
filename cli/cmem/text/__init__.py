"""Text, knowing nothing else of cmem: the token estimate (`tokens`) and file names as they can be
shown (`names`). The lowest layer: the error messages and the vault model use it."""
