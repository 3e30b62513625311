"""Products and the diagonal: ``matmul``, ``vecdot``, ``outer``, ``tensordot``,
``multi_dot``, ``cross``, ``trace``, ``diagonal`` and ``matrix_transpose``, with the
signatures of ``numpy.linalg`` (the ops themselves are those of ``yaad``, in ``ops/``)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..core.op import op
from ..core.presentation import ndim_of, shape_of
from ..ops.elementwise import conj
from ..ops.products import dot as _dot
from ..ops.products import matmul as _matmul
from ..ops.products import outer as _outer
from ..ops.products import tensordot as _tensordot
from ..ops.products import trace as _trace
from ..ops.products import vecdot
from ..ops.shape import aligned, expand_dims, reshape, squeeze
from ..ops.shape import diagonal as _diagonal
from ..ops.shape import matrix_transpose as _matrix_transpose
from .helpers import as_array, is_complex, public

__all__ = ["matmul", "vecdot", "outer", "tensordot", "multi_dot", "cross", "trace",
           "diagonal", "matrix_transpose"]

def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    """Sum of the diagonal of each matrix, over the last two axes (numpy.linalg.trace).

    Parameters
    ----------
    x : (..., m, n) Tensor or array_like
    offset : int
        Diagonal above (> 0) or below (< 0) the main one.
    dtype : data-type, optional

    Returns
    -------
    Tensor
        Shape ``(...)``.
    """
    if ndim_of(x) < 2:
        raise ValueError(f"trace: the input must be at least 2-D, got shape {shape_of(x)}")
    return _trace(x, offset, -2, -1, dtype)


def diagonal(x: Any, /, *, offset: int = 0) -> Any:
    """The diagonals of the matrices in the last two axes (numpy.linalg.diagonal).

    Parameters
    ----------
    x : (..., m, n) Tensor or array_like
    offset : int

    Returns
    -------
    Tensor
    """
    return _diagonal(x, offset, -2, -1)


def outer(x1: Any, x2: Any, /) -> Any:
    """Outer product of two vectors (numpy.linalg.outer: 1-D inputs only).

    Parameters
    ----------
    x1 : (M,) Tensor or array_like
    x2 : (N,) Tensor or array_like

    Returns
    -------
    Tensor
        (M, N), ``x1[i] * x2[j]`` (no conjugation).
    """
    if ndim_of(x1) != 1 or ndim_of(x2) != 1:
        raise ValueError(f"outer: both inputs must be 1-D, got shapes {shape_of(x1)} "
                         f"and {shape_of(x2)}")
    return _outer(x1, x2)


def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2) -> Any:
    """Tensor contraction over ``axes`` (numpy.linalg.tensordot).

    Parameters
    ----------
    x1 : Tensor or array_like
    x2 : Tensor or array_like
    axes : int or (sequence, sequence)
        The last ``axes`` axes of ``x1`` with the first of ``x2``, or explicit lists.

    Returns
    -------
    Tensor
    """
    return _tensordot(x1, x2, axes)


def matmul(x1: Any, x2: Any, /) -> Any:
    """Matrix product, broadcast over leading axes (numpy.linalg.matmul).

    Parameters
    ----------
    x1 : Tensor or array_like
    x2 : Tensor or array_like

    Returns
    -------
    Tensor
    """
    return _matmul(x1, x2)


def matrix_transpose(x: Any, /) -> Any:
    """Swap the last two axes (numpy.linalg.matrix_transpose).

    Parameters
    ----------
    x : (..., m, n) Tensor or array_like

    Returns
    -------
    Tensor
    """
    return _matrix_transpose(x)


def _chain_order(dims: list[Any]) -> list[Any]:
    """Optimal parenthesization of a matrix chain (the classic dynamic programme): the
    split point ``s[i][j]`` of each sub-chain ``i..j``."""
    n = len(dims) - 1
    cost: list[list[float]] = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = float("inf")
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j] = c
                    split[i][j] = k
    return split


def multi_dot(arrays: Any, *, out: Any = None) -> Any:
    """Product of a chain of matrices in the cheapest order (numpy.linalg.multi_dot).

    Parameters
    ----------
    arrays : sequence of Tensor or array_like
        2-D, except that the first may be 1-D (a row vector) and the last 1-D (a column).
    out : None
        Not supported (TypeError).

    Returns
    -------
    Tensor
    """
    if out is not None:
        raise TypeError("multi_dot: out= is not supported (results are new tensors)")
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError("multi_dot: expecting at least two arrays")
    if len(arrays) == 2:  # NumPy's rule: two arrays are numpy.dot's, of any shapes
        return _dot(*arrays)
    first_vec = ndim_of(arrays[0]) == 1
    last_vec = ndim_of(arrays[-1]) == 1
    if first_vec:
        arrays[0] = expand_dims(arrays[0], 0)
    if last_vec:
        arrays[-1] = expand_dims(arrays[-1], -1)
    for k, x in enumerate(arrays):
        if ndim_of(x) != 2:
            raise ValueError(f"multi_dot: array {k} must be 2-D (1-D only first or last), "
                             f"got shape {shape_of(x)}")
    dims = [shape_of(x)[0] for x in arrays] + [shape_of(arrays[-1])[1]]
    split = _chain_order(dims)

    def product(i: int, j: int) -> Any:
        if i == j:
            return arrays[i]
        k = split[i][j]
        return _matmul(product(i, k), product(k + 1, j))

    result = product(0, len(arrays) - 1)
    if first_vec and last_vec:
        return reshape(result, ())
    if first_vec:
        return squeeze(result, 0)
    if last_vec:
        return squeeze(result, -1)
    return result


# ---- cross product ---------------------------------------------------------------------


def _cross(x1: Any, x2: Any, axis: Any = -1) -> Any:
    x1, x2 = as_array(x1), as_array(x2)
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(f"cross: both inputs must have 3 entries along axis {axis}, got "
                         f"shapes {x1.shape} and {x2.shape}")
    return np.cross(x1, x2, axis=axis)


def _cconj(x: Any) -> Any:
    return conj(x) if is_complex(x) else x


def _cross_batch(dims: Any, x1: Any, x2: Any, axis: Any = -1) -> Any:
    # the axis counted from the end is the same in both once they are aligned
    ends = {normalize_axis_index(axis, np.ndim(x) - (d is not None)) - np.ndim(x) + (
        d is not None) for x, d in zip((x1, x2), dims)}
    if len(ends) != 1:
        return NotImplemented
    return cross(*aligned((x1, x2), dims), axis=ends.pop()), 0


cross: Callable[..., Any] = public(op(_cross, name="linalg.cross", save_ans=False, linear=True,
                  vjp=(lambda g, ans, x1, x2, axis=-1: cross(_cconj(x2), g, axis=axis),
                       lambda g, ans, x1, x2, axis=-1: cross(g, _cconj(x1), axis=axis)),
                  batch=_cross_batch))
cross.__doc__ = """Cross product of 3-vectors along ``axis`` (numpy.linalg.cross), broadcasting."""
