"""One vault on several machines (docs/design.md §13): `remote` (fetch, merge in one step, push —
`cmem sync`), `three_way` (the merge of two machines' commits, path by path) and `memory_merge`
(statements merged as units, conflict statements, frontmatter key by key)."""
