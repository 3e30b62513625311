"""The numba loop of ``rowwise.py`` (imported on first use: importing numba takes a while;
compiled once and cached on disk)."""

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
