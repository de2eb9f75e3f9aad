"""docs/configuration.md is generated from vault_schema/ and the config's defaults by
docs/configuration.py: the page on disk is what the generator writes now."""

import importlib.util

from support import REPO


def _generator():
    spec = importlib.util.spec_from_file_location(
        "configuration_doc", REPO / "docs" / "configuration.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_configuration_page_is_generated_from_the_schema_and_not_stale():
    generator = _generator()
    page = (REPO / "docs" / "configuration.md").read_text("utf-8")
    assert page == generator.render(), (
        "docs/configuration.md is stale: run python docs/configuration.py"
    )


def test_every_schema_key_is_on_the_page_with_a_meaning():
    import json

    generator = _generator()
    schema = json.loads((REPO / "vault_schema" / "config.schema.json").read_text("utf-8"))
    page = (REPO / "docs" / "configuration.md").read_text("utf-8")
    for path, spec in generator._leaves(schema["properties"]):
        key = ".".join(path)
        assert f"| `{key}` |" in page, key
        assert spec.get("description"), f"{key} has no description in the schema"
