"""Fixtures the project tests share."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from support import REPO


@pytest.fixture(scope="module")
def layout():
    """`bench/layout.py` loaded as a module (the layout figures the tests hold), registered in
    `sys.modules` while in use: its dataclasses look their module up."""
    spec = importlib.util.spec_from_file_location("bench_layout", REPO / "bench" / "layout.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)
