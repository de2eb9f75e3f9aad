"""The convergence pass (docs/design.md §3–5) as a pipeline of typed stages: select → assemble prompt →
run engine → parse the response (`response.py`) → validate it (`validate.py`) → plan → apply →
commit. Every engine, builtin or model, meets the same parser and validator."""
