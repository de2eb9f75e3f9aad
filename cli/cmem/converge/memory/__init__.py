"""The convergent layer as a pass reads it: the memory files' texts and bytes (`files`), the
diff of what a pass rewrites (`diff`), and each file's statement words and token estimates, kept
by content digest (`statement_words`)."""
