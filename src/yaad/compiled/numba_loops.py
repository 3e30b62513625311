"""The numba loops of the NumPy replay (``rowwise.py``, ``chains.py``): imported on first
use (importing numba takes a while), compiled once and cached on disk.

Each computes what the NumPy calls it replaces compute, in the same dtype and the same
order, one IEEE operation at a time (numba contracts nothing into fused multiply-adds
without ``fastmath``): the same bits."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def shifted(x):  # pragma: no cover - compiled by numba (tests run it through rowwise)
    """``x`` (rows of at least one element) minus the maximum of each row, or unchanged
    where that maximum is not finite, in ``x``'s dtype: ``x - ops.nn._shift(x, -1)`` (a
    NaN in a row is its maximum; ``x - 0`` is ``x``, bit for bit)."""
    n, k = x.shape
    y = np.empty((n, k), x.dtype)
    for i in range(n):
        m = x[i, 0]
        if m == m:
            for j in range(1, k):
                v = x[i, j]
                if v != v:
                    m = v
                    break
                if v > m:
                    m = v
        if m - m == 0:
            for j in range(k):
                y[i, j] = x[i, j] - m
        else:
            for j in range(k):
                y[i, j] = x[i, j]
    return y


@numba.njit(cache=True)
def tanh_grad(g, y, one, out):  # pragma: no cover - compiled by numba
    """``g * (1 - y * y)`` on flat arrays of one dtype (``one``: 1 in that dtype)."""
    for i in range(g.size):
        out[i] = g[i] * (one - y[i] * y[i])


@numba.njit(cache=True)
def expit_grad(g, y, one, out):  # pragma: no cover - compiled by numba
    """``g * (y * (1 - y))`` on flat arrays of one dtype (``one``: 1 in that dtype)."""
    for i in range(g.size):
        out[i] = g[i] * (y[i] * (one - y[i]))


# The column sums below are NumPy's ``np.add.reduce(a, 0)`` of a C-ordered (n, m) array
# with m > 1: starting from 0 (the identity: -0.0 columns sum to 0.0), the rows added one
# at a time (chains.py probes that order once per shape and dtype).

@numba.njit(cache=True)
def colsum(a, out):  # pragma: no cover - compiled by numba
    """``out[j] = sum over i of a[i, j]``, rows added in order."""
    n, m = a.shape
    for j in range(m):
        out[j] = 0
    for i in range(n):
        for j in range(m):
            out[j] += a[i, j]


@numba.njit(cache=True)
def tanh_grad_colsum(g, y, one, out, col):  # pragma: no cover - compiled by numba
    """:func:`tanh_grad` on (n, m) arrays, and the column sums of the result into ``col``."""
    n, m = g.shape
    for j in range(m):
        col[j] = 0
    for i in range(n):
        for j in range(m):
            v = g[i, j] * (one - y[i, j] * y[i, j])
            out[i, j] = v
            col[j] += v


@numba.njit(cache=True)
def expit_grad_colsum(g, y, one, out, col):  # pragma: no cover - compiled by numba
    """:func:`expit_grad` on (n, m) arrays, and the column sums of the result into ``col``."""
    n, m = g.shape
    for j in range(m):
        col[j] = 0
    for i in range(n):
        for j in range(m):
            v = g[i, j] * (y[i, j] * (one - y[i, j]))
            out[i, j] = v
            col[j] += v
