"""The convergence pass (docs/design.md §3–5) as a pipeline of typed stages: select → assemble prompt →
run engine → parse the response (`validator/response.py`) → validate it
(`validator/validate.py`) → plan → apply → commit. Every engine, builtin or model, meets the same
parser and validator. Sub-packages by owner: `builtin/` (the builtin engine), `validator/` (the
validator and its rules), `model/` (the model command and the agent as model), `memory/` (the
memory files as a pass reads them)."""
