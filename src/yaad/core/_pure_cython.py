"""What ``graph.py`` reads from Cython's pure-Python mode, when Cython is not installed: its
class decorators, which then change nothing (the compiled build reads the real ones)."""

from types import SimpleNamespace
from typing import Any


def _unchanged(cls: Any) -> Any:
    return cls


def _trashcan(on: bool) -> Any:
    return _unchanged


cython = SimpleNamespace(cclass=_unchanged, trashcan=_trashcan)
