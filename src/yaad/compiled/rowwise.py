"""Softmax and log-softmax over the last axis in a NumPy replay, with the shift by each
row's maximum as one numba loop.

``ops.nn`` shifts by the maximum of each row (``x.max(axis, keepdims=True)``, made 0
where it is not finite) before exponentiating. On short rows (W2's 64 rows of 10 logits)
NumPy's reduction along the last axis calls its inner loop once a row: the maximum alone
takes about 3 us in float64 and 4.5 us in float32, the replacement of non-finite maxima
1.2 us, of a 12 us ``log_softmax``; the sum along that axis 1.7 us. Here the shift is one
loop (:func:`shifted`), the row sums another, which adds as NumPy's pairwise summation
does (probed once per row length and dtype, :func:`rows_exact`), and the final subtraction
or division a third; the exponential and the logarithm are NumPy's calls, so the values
are the op's bit for bit (the maximum of a row is exact in any order; only which of two
zeros of opposite signs is the maximum may differ, and ``x - 0`` and ``x + 0`` are equal
numbers).

Used where numba is installed and the compiled function may use it (``fused``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

_LOOPS: dict = {}  # the numba loops, once imported


def loops() -> dict:
    """numba_loops' functions by name (imported on first use)."""
    if not _LOOPS:
        from . import numba_loops

        _LOOPS.update((k, getattr(numba_loops, k)) for k in (
            "shifted", "rowsum", "sub_rows", "div_rows", "log_softmax_vjp"))
    return _LOOPS


def shifted(x: np.ndarray) -> np.ndarray:
    """``x - ops.nn._shift(x, -1)`` as a new array of ``x``'s shape (a real float
    ``x`` with a non-empty last axis)."""
    return loops()["shifted"](x.reshape(-1, x.shape[-1])).reshape(x.shape)


MAX_ROW = 128  # longer rows: NumPy's pairwise sum splits them (not reproduced here)


def _rows(x: np.ndarray) -> tuple:
    """``(loops, rows, exact)``: the loops, ``x`` shifted as rows (a new array; ``x``
    itself when it is a matrix: no reshaping on the common path), and whether the row
    sums may be the loop's."""
    lp = _LOOPS or loops()
    shape = x.shape
    k = shape[-1]
    rows = lp["shifted"](x if len(shape) == 2 else x.reshape(-1, k))
    return lp, rows, k <= MAX_ROW and rows_exact(rows.dtype, k)


def log_softmax(x: np.ndarray) -> np.ndarray:
    """``ops.nn._log_softmax(x, -1)``."""
    lp, rows, exact = _rows(x)
    if exact:
        s = np.empty(len(rows), rows.dtype)
        lp["rowsum"](np.exp(rows), s)
        np.log(s, out=s)
        lp["sub_rows"](rows, s, rows)
        return rows if rows.ndim == x.ndim else rows.reshape(x.shape)
    y = rows.reshape(x.shape)
    s = np.exp(y).sum(axis=-1, keepdims=True)
    np.log(s, out=s)
    return np.subtract(y, s, out=y)


def softmax(x: np.ndarray) -> np.ndarray:
    """``ops.nn._softmax(x, -1)``."""
    lp, rows, exact = _rows(x)
    np.exp(rows, out=rows)
    if exact:
        s = np.empty(len(rows), rows.dtype)
        lp["rowsum"](rows, s)
        lp["div_rows"](rows, s, rows)
        return rows if rows.ndim == x.ndim else rows.reshape(x.shape)
    e = rows.reshape(x.shape)
    return np.divide(e, e.sum(axis=-1, keepdims=True), out=e)


_ROWS: dict = {}


def rows_exact(dtype: np.dtype, k: int) -> bool:
    """Whether ``numba_loops.rowsum`` equals ``np.add.reduce(a, -1)`` bit for bit on rows
    of ``k`` elements of ``dtype`` (NumPy's pairwise order), tested once on random values
    of many magnitudes, a row of zeros of both signs among them."""
    got = _ROWS.get((dtype, k))
    if got is None:
        rng = np.random.default_rng(0)
        a = (rng.standard_normal((64, k)) * 10.0 ** rng.integers(-6, 6, (64, k))).astype(dtype)
        a[0] = -0.0
        a[1, ::2] = 0.0
        s = np.empty(64, dtype)
        loops()["rowsum"](a, s)
        want = np.add.reduce(a, -1)
        got = _ROWS[(dtype, k)] = bool(
            want.dtype == s.dtype and np.array_equal(s.view(np.uint8), want.view(np.uint8)))
    return got


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
