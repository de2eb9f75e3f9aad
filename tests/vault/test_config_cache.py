"""cmem.vault.config_cache: the stored validator and YAML parse give exactly what a fresh one gives."""

from __future__ import annotations

import os

import pytest

from cmem.errors import ConfigError
from cmem.vault import config_cache
from cmem.vault.config import load_config


def _stored(kind: str) -> list[str]:
    folder = config_cache.cache_dir(kind)
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def test_second_load_comes_from_the_store_and_equals_the_first(make_vault):
    from cmem.vault import config

    config._validators.clear()  # other tests in this process compiled it already
    vault = make_vault(config_yaml="budget_tokens: 9000\nlanguage: en\n")
    first = load_config(vault)
    assert _stored("validators") and _stored("yaml")
    config._validators.clear()  # as a new process: only the stored bytecode is left
    second = load_config(vault)
    assert second == first and second.budget_tokens == 9000


def test_an_edit_is_a_new_key(make_vault):
    vault = make_vault(config_yaml="budget_tokens: 9000\n")
    load_config(vault)
    (vault / ".cmem" / "config.yaml").write_text("budget_tokens: 9100\n", encoding="utf-8")
    assert load_config(vault).budget_tokens == 9100


@pytest.mark.parametrize(
    "text, message",
    [
        ("budget_tokens: lots\n", "budget_tokens"),
        ("budget_tokenz: 1\n", "did you mean"),
        ("budget_tokens: [\n", "not valid YAML"),
    ],
)
def test_errors_are_the_same_from_a_stored_validator(make_vault, text, message):
    vault = make_vault(config_yaml=text)
    from cmem.vault import config

    for _ in range(2):
        config._validators.clear()
        with pytest.raises(ConfigError, match=message):
            load_config(vault)


def test_a_damaged_store_is_compiled_again(make_vault):
    vault = make_vault(config_yaml="")
    load_config(vault)
    for name in _stored("validators"):
        with open(os.path.join(config_cache.cache_dir("validators"), name), "wb") as handle:
            handle.write(b"\x00garbage")
    for name in _stored("yaml"):
        with open(os.path.join(config_cache.cache_dir("yaml"), name), "wb") as handle:
            handle.write(b"")
    from cmem.vault import config

    config._validators.clear()
    assert load_config(vault).budget_tokens > 0


def test_a_stored_validator_runs_without_importing_fastjsonschema(make_vault):
    """The generated code imports fastjsonschema for its exception classes (~30 ms with its
    drafts); a stored validator binds cmem's own instead, and refuses with the same message."""
    import subprocess
    import sys

    from cmem.vault import config

    good = make_vault(config_yaml="budget_tokens: 9000\n")
    config._validators.clear()  # compiled by another test in this process, it would not be stored
    load_config(good)  # compiles the validator and stores it
    bad = make_vault(config_yaml="budget_tokens: lots\n")
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from cmem.errors import ConfigError\n"
        "from cmem.vault.config import load_config\n"
        f"print(load_config(Path({str(good)!r})).budget_tokens)\n"
        "try:\n"
        f"    load_config(Path({str(bad)!r}))\n"
        "except ConfigError as exc:\n"
        "    print(exc)\n"
        "print('fastjsonschema' in sys.modules, 'decimal' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out[0] == "9000"
    assert "'budget_tokens'" in out[1] and "must be" in out[1]
    assert out[2] == "False False"  # nor decimal, which the generated code names for isinstance


def test_the_stored_validators_decimal_is_decimal_for_isinstance():
    """The generated code tests `isinstance(x, (int, float, Decimal))`; its Decimal is cmem's
    stand-in, which imports nothing, and each value is refused or passed as by fastjsonschema's own
    validator, a decimal.Decimal included."""
    import decimal
    import json

    import fastjsonschema

    from cmem.resources import config_schema

    assert isinstance(decimal.Decimal("1.5"), config_cache._Decimal)
    assert not isinstance(1.5, config_cache._Decimal) and not isinstance("1", config_cache._Decimal)
    schema = config_schema()
    ours = config_cache.validator(json.dumps(schema, sort_keys=True))
    theirs = fastjsonschema.compile(schema)
    values = [decimal.Decimal("5"), decimal.Decimal("1e9"), decimal.Decimal("-1"), 5, 5.5, True]
    values += [None, "5", 10**9, -3, 12000]
    for key in ("budget_tokens", "schedule_hours", "min_interval_minutes"):
        for value in values:
            outcomes = []
            for check in (ours, theirs):
                try:
                    check({key: value})
                    outcomes.append("passed")
                except ValueError as exc:
                    outcomes.append(str(exc))
            assert outcomes[0] == outcomes[1], (key, value)


def test_a_schema_that_computes_with_decimal_keeps_the_real_one():
    """`multipleOf` makes the generated code divide Decimals: there the import stays, stored or
    not, and the validator refuses and passes as fastjsonschema's own."""
    import json

    import fastjsonschema

    schema = {"type": "object", "properties": {"step": {"type": "number", "multipleOf": 0.5}}}
    theirs = fastjsonschema.compile(schema)
    for _ in range(2):  # compiled, then from the store
        ours = config_cache.validator(json.dumps(schema, sort_keys=True))
        refused = {}
        for value in (1.5, 2, 0.3, 7.25):
            outcomes = []
            for check in (ours, theirs):
                try:
                    check({"step": value})
                    outcomes.append("passed")
                except ValueError as exc:
                    outcomes.append(str(exc))
            assert outcomes[0] == outcomes[1], value
            refused[value] = "multiple of" in outcomes[0]
        assert refused == {1.5: False, 2: False, 0.3: True, 7.25: True}
