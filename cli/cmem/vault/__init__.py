"""The vault model: where a vault is and which layer each file belongs to (`layers`), its
settings (`config`, with `config_cache` keeping the compiled schema and parsed YAML), reading notes
robustly (`notes`), statements and their provenance (`statements`), `.cmem/state.json`
(`state_json`), what Obsidian's own settings say (`obsidian`) and the notes no layer reads
(`unmanaged`)."""
