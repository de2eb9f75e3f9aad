"""The vault model: where a vault is and which layer each file belongs to (`layers`), its
settings (`config`), reading notes robustly (`notes`), statements and their provenance
(`statements`), and `.cmem/state.json` (`state_json`)."""
