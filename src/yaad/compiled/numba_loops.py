"""The numba loops of the NumPy replay (``rowwise.py``, ``chains.py``): imported on first
use (importing numba takes a while), compiled once and cached on disk.

Each computes what the NumPy calls it replaces compute, in the same dtype and the same
order, one IEEE operation at a time (numba contracts nothing into fused multiply-adds
without ``fastmath``): the same bits."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, error_model="numpy")
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


@numba.njit(cache=True, error_model="numpy")
def tanh_grad(g, y, one, out):  # pragma: no cover - compiled by numba
    """``g * (1 - y * y)`` on flat arrays of one dtype (``one``: 1 in that dtype)."""
    for i in range(g.size):
        out[i] = g[i] * (one - y[i] * y[i])


@numba.njit(cache=True, error_model="numpy")
def expit_grad(g, y, one, out):  # pragma: no cover - compiled by numba
    """``g * (y * (1 - y))`` on flat arrays of one dtype (``one``: 1 in that dtype)."""
    for i in range(g.size):
        out[i] = g[i] * (y[i] * (one - y[i]))


# The column sums below are NumPy's ``np.add.reduce(a, 0)`` of a C-ordered (n, m) array
# with m > 1: starting from 0 (the identity: -0.0 columns sum to 0.0), the rows added one
# at a time (chains.py probes that order once per shape and dtype).

@numba.njit(cache=True, error_model="numpy")
def colsum(a, out):  # pragma: no cover - compiled by numba
    """``out[j] = sum over i of a[i, j]``, rows added in order."""
    n, m = a.shape
    for j in range(m):
        out[j] = 0
    for i in range(n):
        for j in range(m):
            out[j] += a[i, j]


@numba.njit(cache=True, error_model="numpy")
def tanh_grad_colsum(g, y, one, out, col):  # pragma: no cover - compiled by numba
    """:func:`tanh_grad` on (n, m) arrays, and the column sums of the result into ``col``."""
    n, m = g.shape
    for j in range(m):
        col[j] = 0
    for i in range(n):
        gi, yi, oi = g[i], y[i], out[i]
        for j in range(m):
            oi[j] = gi[j] * (one - yi[j] * yi[j])
        for j in range(m):
            col[j] += oi[j]


@numba.njit(cache=True, error_model="numpy")
def expit_grad_colsum(g, y, one, out, col):  # pragma: no cover - compiled by numba
    """:func:`expit_grad` on (n, m) arrays, and the column sums of the result into ``col``."""
    n, m = g.shape
    for j in range(m):
        col[j] = 0
    for i in range(n):
        gi, yi, oi = g[i], y[i], out[i]
        for j in range(m):
            oi[j] = gi[j] * (yi[j] * (one - yi[j]))
        for j in range(m):
            col[j] += oi[j]


# Row sums as NumPy's ``np.add.reduce(a, -1)`` of a C-ordered (n, k) array makes them for
# k <= 128: from 0 (the identity), plus the pairwise sum of the row, which for fewer than
# 8 terms adds them in order and otherwise keeps 8 partial sums over blocks of 8 and adds
# them as ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), then the rest in order
# (rowwise.py probes that once per length and dtype).

@numba.njit(cache=True, inline="always", error_model="numpy")
def _row_sum(a, i, k):  # pragma: no cover - compiled by numba
    """The pairwise sum of row ``i`` (``k`` terms, 1 <= k <= 128) as NumPy's inner loop
    makes it (for k < 8, in order: starting from -0.0 or from the first term is the same)."""
    if k < 8:
        res = a[i, 0]
        for j in range(1, k):
            res += a[i, j]
        return res
    r0, r1, r2, r3 = a[i, 0], a[i, 1], a[i, 2], a[i, 3]
    r4, r5, r6, r7 = a[i, 4], a[i, 5], a[i, 6], a[i, 7]
    j = 8
    while j < k - k % 8:
        r0 += a[i, j]
        r1 += a[i, j + 1]
        r2 += a[i, j + 2]
        r3 += a[i, j + 3]
        r4 += a[i, j + 4]
        r5 += a[i, j + 5]
        r6 += a[i, j + 6]
        r7 += a[i, j + 7]
        j += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while j < k:
        res += a[i, j]
        j += 1
    return res


@numba.njit(cache=True, error_model="numpy")
def rowsum(a, out):  # pragma: no cover - compiled by numba
    """``out[i] = np.add.reduce(a, -1)[i]``: 0 plus the row's pairwise sum."""
    n, k = a.shape
    for i in range(n):
        out[i] = 0
        out[i] += _row_sum(a, i, k)


@numba.njit(cache=True, error_model="numpy")
def sub_rows(y, s, out):  # pragma: no cover - compiled by numba
    """``out = y - s[:, None]``."""
    n, k = y.shape
    for i in range(n):
        si = s[i]
        for j in range(k):
            out[i, j] = y[i, j] - si


@numba.njit(cache=True, error_model="numpy")
def div_rows(e, s, out):  # pragma: no cover - compiled by numba
    """``out = e / s[:, None]``."""
    n, k = e.shape
    for i in range(n):
        si = s[i]
        for j in range(k):
            out[i, j] = e[i, j] / si


@numba.njit(cache=True, error_model="numpy")
def log_softmax_vjp(g, e, s, out):  # pragma: no cover - compiled by numba
    """``out = g - e * np.add.reduce(g, -1, keepdims=True)`` (the VJP of log_softmax over
    the last axis, ``e`` the exponential of its output); ``s``: room for the row sums."""
    n, k = g.shape
    for i in range(n):
        s[i] = 0
        s[i] += _row_sum(g, i, k)
        si = s[i]
        for j in range(k):
            out[i, j] = g[i, j] - e[i, j] * si


@numba.njit(cache=True, error_model="numpy")
def sub_scaled_rows(g, e, s, out):  # pragma: no cover - compiled by numba
    """``out = g - e * s`` for (n, k) ``g`` and ``e`` and (n, 1) ``s`` (log_softmax's VJP
    where the row sums ``s`` of ``g`` are known: a constant gradient's, folded)."""
    n, k = g.shape
    for i in range(n):
        si = s[i, 0]
        for j in range(k):
            out[i, j] = g[i, j] - e[i, j] * si
