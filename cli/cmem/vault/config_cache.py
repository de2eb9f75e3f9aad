"""Config loading without its fixed costs: the schema validator as stored bytecode, the YAML as
stored data.

`fastjsonschema.compile` generates and compiles ~60 KB of Python on every run (~38 ms), and
`import yaml` plus the parse costs more than the rest of a warm `cmem status`. Both results depend
only on their input text, so they are stored content-addressed (a sha256 of the text, the library
version and the Python version in the name): no staleness to reason about, an edit is a new key.
Stored under `$XDG_CACHE_HOME/cmem/`; a store that cannot be read or written only costs the
original work, never an error.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import re
import sys
from typing import Any, Callable

_PY = "%d%d" % sys.version_info[:2]  # marshal's format follows the Python version


def cache_dir(kind: str) -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cmem", kind)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _read(path: str):
    try:
        with open(path, "rb") as handle:
            return marshal.loads(handle.read())
    except (OSError, EOFError, ValueError, TypeError):
        return None


def _write(path: str, value) -> None:
    try:
        data = marshal.dumps(value)
    except ValueError:  # a value marshal cannot hold (a YAML date): not stored
        return
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def validator(schema_text: str) -> Callable[[Any], Any]:
    """`fastjsonschema.compile(json.loads(schema_text))`, from stored bytecode when there is some.
    It raises fastjsonschema's own JsonSchemaValueException, as the compiled one does."""
    import fastjsonschema

    path = os.path.join(
        cache_dir("validators"), f"{_digest(schema_text, fastjsonschema.VERSION, _PY)}.marshal"
    )
    stored = _read(path)
    if isinstance(stored, tuple) and len(stored) == 2:
        name, code = stored
        namespace: dict = {}
        try:
            exec(code, namespace)
            return namespace[name]
        except Exception:
            pass  # a damaged store: compile afresh below
    import json

    source = fastjsonschema.compile_to_code(json.loads(schema_text))
    # the generator writes the schema's own function first, then those its $refs need
    name = re.search(r"^def (\w+)\(", source, re.M).group(1)
    code = compile(source, f"<validator {path}>", "exec")
    namespace = {}
    exec(code, namespace)
    _write(path, (name, code))
    return namespace[name]


def parsed_yaml(text: str, parse: Callable[[str], Any]) -> Any:
    """`parse(text)`, from the stored result for this exact text when there is one (errors are
    never stored: a bad file raises on every run, with the parser's own message)."""
    path = os.path.join(cache_dir("yaml"), f"{_digest(text, _PY)}.marshal")
    stored = _read(path)
    if isinstance(stored, tuple) and len(stored) == 1:
        return stored[0]
    value = parse(text)
    _write(path, (value,))
    return value
