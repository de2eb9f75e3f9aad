"""Config loading without its fixed costs: the schema validator as stored bytecode, the YAML as
stored data.

`fastjsonschema.compile` generates and compiles ~60 KB of Python on every run, and
`import yaml` plus the parse costs more than the rest of a warm `cmem status`. Both results depend
only on their input text, so they are stored content-addressed (a sha256 of the text, the library
version and the Python version in the name): no staleness to reason about, an edit is a new key.
Stored under `$XDG_CACHE_HOME/cmem/`; a store that cannot be read or written only costs the
original work, never an error.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys

from cmem.cache_store import Kept

# typing only names the annotations (never evaluated): every command that opens a vault
# would pay for importing it
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

_PY = "{}{}".format(*sys.version_info[:2])  # marshal's format follows the Python version


def cache_dir(kind: str) -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cmem", kind)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:32]


class SchemaValueError(ValueError):
    """What a stored validator raises for a value the schema refuses: the attributes of
    fastjsonschema's JsonSchemaValueException (message, value, name, definition, rule), without
    importing that package (with its drafts and decimal) on every config load."""

    def __init__(self, message, value=None, name=None, definition=None, rule=None, **_):
        super().__init__(message)
        self.message = message
        self.value = value
        self.name = name
        self.definition = definition
        self.rule = rule


class SchemaValuesError(ValueError):
    """fastjsonschema's JsonSchemaValuesException (several errors, when fast_fail is off)."""

    def __init__(self, errors=(), **_):
        super().__init__(errors)
        self.errors = errors


class _DecimalType(type):
    def __instancecheck__(cls, value) -> bool:
        decimal = sys.modules.get("decimal")
        return decimal is not None and isinstance(value, decimal.Decimal)


class _Decimal(metaclass=_DecimalType):
    """What the generated code's `Decimal` names when the code only asks `isinstance(x, (int,
    float, Decimal))` (cmem's schemas): a value can be a `decimal.Decimal` only once the decimal
    module is loaded, so this asks that module when it is, without importing it on every
    config load. Code that computes with Decimal (`multipleOf`) keeps its import."""


# the lines of generated code that import at run time: fastjsonschema, for its exception classes,
# and decimal, for isinstance tests alone
_EXCEPTIONS_IMPORT = re.compile(r"^from fastjsonschema import ([\w, ]+)$", re.M)
_DECIMAL_IMPORT = re.compile(r"^from decimal import Decimal$", re.M)
_OWN_NAMES = {
    "JsonSchemaValueException": SchemaValueError,
    "JsonSchemaValuesException": SchemaValuesError,
    "Decimal": _Decimal,
}


def validator(schema_text: str) -> Callable[[Any], Any]:
    """`fastjsonschema.compile(json.loads(schema_text))`, from stored bytecode when there is some.
    It raises SchemaValueError (fastjsonschema's JsonSchemaValueException, as cmem's own class):
    the generated code's import of fastjsonschema is replaced by these, and its import of decimal
    by `_Decimal`, so a stored validator runs without either being imported at all."""
    path = os.path.join(
        cache_dir("validators"),
        f"{_digest(schema_text, _library_version(), _PY)}.marshal",
    )
    kept = Kept(path, "config-validators")
    stored = kept.read().get("value")
    if isinstance(stored, tuple) and len(stored) == 2:
        name, code = stored
        namespace: dict = dict(_OWN_NAMES)
        try:
            exec(code, namespace)
            return namespace[name]
        except Exception:
            pass  # a damaged store: compile afresh below
    import json

    import fastjsonschema

    source = fastjsonschema.compile_to_code(json.loads(schema_text))
    found = _EXCEPTIONS_IMPORT.search(source)
    if found and all(n.strip() in _OWN_NAMES for n in found.group(1).split(",")):
        source = source[: found.start()] + "# (exceptions: cmem's own)" + source[found.end() :]
    if source.count("Decimal") == len(_DECIMAL_IMPORT.findall(source)) + source.count(
        ", Decimal))"
    ):  # only type tests: a schema with multipleOf computes with Decimal, which stays imported
        source = _DECIMAL_IMPORT.sub("# (Decimal: cmem's own)", source)
    # the generator writes the schema's own function first, then those its $refs need
    first = re.search(r"^def (\w+)\(", source, re.M)
    if first is None:
        raise RuntimeError(f"fastjsonschema {fastjsonschema.VERSION} generated no function")
    name = first.group(1)
    code = compile(source, f"<validator {path}>", "exec")
    namespace = dict(_OWN_NAMES)
    exec(code, namespace)
    kept.write({"value": (name, code)})
    return namespace[name]


def _library_version() -> str:
    """fastjsonschema's version, for the key (another version generates other code), read from its
    version file rather than by importing the package; its path when that file cannot be read."""
    from importlib.util import find_spec

    spec = find_spec("fastjsonschema")
    folder = os.path.dirname(spec.origin) if spec and spec.origin else ""
    try:
        with open(os.path.join(folder, "version.py"), encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return folder


def parsed_yaml(text: str, parse: Callable[[str], Any]) -> Any:
    """`parse(text)`, from the stored result for this exact text when there is one (errors are
    never stored: a bad file raises on every run, with the parser's own message)."""
    path = os.path.join(cache_dir("yaml"), f"{_digest(text, _PY)}.marshal")
    kept = Kept(path, "config-yaml")
    stored = kept.read().get("value")
    if isinstance(stored, tuple) and len(stored) == 1:
        return stored[0]
    value = parse(text)
    kept.write({"value": (value,)})  # a value marshal cannot hold (a YAML date): not stored
    return value
