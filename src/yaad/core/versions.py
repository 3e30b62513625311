"""Version counters: the in-place changes of arrays, and the arrays of tensors detached in
place, that :func:`yaad.core.graph.check_saved` compares with a node's clock at backward.

A node notes the clock when it is recorded (:func:`yaad.core.graph.record_node`); an
operator whose forward writes into an array calls :func:`mark_modified` on it.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

ndarray = np.ndarray

# Clock of in-place modifications. A node records the clock when it is made; at backward,
# a saved array whose memory was modified later is an error (see ``mark_modified``).
clock = [0]
_modified: dict[int, list[Any]] = {}  # id(root array) -> [version, clock, weakref]


def mark_modified(arr: Any) -> None:
    """Record that the memory of ``arr`` was changed in place (bumps its version).

    An operator whose forward writes into an input array calls this on it, so that a
    backward that saved the old value raises instead of using the new one.

    Parameters
    ----------
    arr : numpy.ndarray
        The array written to (a view counts as its base).
    """
    root = arr.base if isinstance(getattr(arr, "base", None), ndarray) else arr
    clock[0] += 1
    key = id(root)
    entry = _modified.get(key)
    if entry is not None and entry[2]() is root:
        entry[0] += 1
        entry[1] = clock[0]
        return
    def forget(_ref: Any, key: int = key) -> None:
        _modified.pop(key, None)

    _modified[key] = [1, clock[0], weakref.ref(root, forget)]


_detached: dict[int, list[Any]] = {}  # id(root array) -> [clock, weakref]


def mark_detached(arr: Any) -> None:
    """Record that the non-leaf tensor holding ``arr`` was detached in place (``detach_``):
    a node that saved ``arr`` before then refuses backward, as PyTorch does."""
    root = arr.base if isinstance(getattr(arr, "base", None), ndarray) else arr
    if not isinstance(root, ndarray):
        return
    clock[0] += 1
    key = id(root)

    def forget(_ref: Any, key: int = key) -> None:
        _detached.pop(key, None)

    _detached[key] = [clock[0], weakref.ref(root, forget)]


def version_of(arr: Any) -> int:
    """How many in-place changes the memory of ``arr`` has seen."""
    root = arr.base if isinstance(getattr(arr, "base", None), ndarray) else arr
    entry = _modified.get(id(root))
    if entry is not None and entry[2]() is root:
        return int(entry[0])
    return 0
