"""Agent sessions as divergent input (docs/design.md §14): transcripts read (one module per agent
format, `formats.py` the registry), session notes written and read back (`note.py`), captures as
steps (`capture.py`), and the agents' own folders (`discover.py`)."""
