"""Text as cmem counts and compares it, knowing nothing else of cmem: the token estimate
(`tokens`) and the words, terms and stop words of the builtin engine (`words`)."""
