"""Softmax and log-softmax over the last axis in a NumPy replay, with the shift by each
row's maximum as one numba loop.

``ops.nn`` shifts by the maximum of each row (``x.max(axis, keepdims=True)``, made 0
where it is not finite) before exponentiating. On short rows (W2's 64 rows of 10 logits)
NumPy's reduction along the last axis calls its inner loop once a row: the maximum alone
takes about 3 us in float64 and 4.5 us in float32, the replacement of non-finite maxima
1.2 us, of a 12 us ``log_softmax``. Here the shift is one loop (:func:`shifted`); the
exponential, the sum and the logarithm are NumPy's calls as the op makes them, so the
values are the op's bit for bit (the maximum of a row is exact in any order; only which
of two zeros of opposite signs is the maximum may differ, and ``x - 0`` and ``x + 0``
are equal numbers).

Used where numba is installed and the compiled function may use it (``fused``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

_KERNEL: list = []


def shifted(x: np.ndarray) -> np.ndarray:
    """``x - ops.nn._shift(x, -1)`` as a new array of ``x``'s shape (a real float
    ``x`` with a non-empty last axis)."""
    if not _KERNEL:
        from .numba_loops import shifted as kernel

        _KERNEL.append(kernel)
    return _KERNEL[0](x.reshape(-1, x.shape[-1])).reshape(x.shape)


def log_softmax(x: np.ndarray) -> np.ndarray:
    """``ops.nn._log_softmax(x, -1)``."""
    y = shifted(x)
    s = np.exp(y).sum(axis=-1, keepdims=True)
    np.log(s, out=s)
    return np.subtract(y, s, out=y)


def softmax(x: np.ndarray) -> np.ndarray:
    """``ops.nn._softmax(x, -1)``."""
    e = shifted(x)
    np.exp(e, out=e)
    return np.divide(e, e.sum(axis=-1, keepdims=True), out=e)


def applies(x: Any, axis: Any, shapes: Any) -> bool:
    """Whether the recorded argument ``x`` (a slot of a real float array with a non-empty
    last axis) and the constant ``axis`` (the last axis; None for a vector) fit."""
    from .tape import Slot

    if type(x) is not Slot or not getattr(shapes, "numba", False) or not shapes(x.i, True):
        return False
    shape, dtype = shapes(x.i), shapes.dtype[x.i]
    if not shape or 0 in shape or dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        return False
    nd = len(shape)
    if axis is None:
        return nd == 1
    return type(axis) is int and axis in (-1, nd - 1)
