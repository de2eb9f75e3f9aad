"""The vault's file-name globs (`divergent.exclude`, `ignore`) as one compiled test: every rule that
asks whether a name matches one of them asks here, so they all match alike."""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable


def any_glob(patterns: tuple[str, ...] | list[str]) -> Callable[[str], bool]:
    """`lambda name: any(fnmatch.fnmatch(name, p) for p in patterns)`, as one compiled regex: a
    listing asks it of every note, and fnmatch normalises and looks up each pattern on every
    call."""
    if not patterns:
        return lambda name: False
    joined = "|".join(f"(?:{fnmatch.translate(os.path.normcase(p))})" for p in patterns)
    match = re.compile(joined).match
    return lambda name: match(os.path.normcase(name)) is not None
