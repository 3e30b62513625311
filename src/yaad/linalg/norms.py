"""Vector and matrix norms (``vector_norm``, ``matrix_norm``, ``norm``) and the condition
number (``cond``).

The gradient of a norm at zero is the subgradient 0 (no NaN): for the 2-norm of a zero
vector, for ``|x_i|^(p-1)`` at ``x_i = 0`` with ``p < 1``, and for ``abs`` inside the matrix
norms. Ties of the max-norm share the gradient equally. The norms of singular values
(``'nuc'``, ``2``, ``-2``) take the minimum-norm subgradient at a rank-deficient matrix:
singular values at 0 (which have no derivative, :func:`yaad.linalg.svdvals` raises there)
get no gradient.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from ..core.backend import implements, namespace
from ..core.op import op
from ..core.presentation import ndim_of, shape_of
from ..core.tensor import Tensor
from ..ops.elementwise import abs as _abs
from ..ops.elementwise import conj, real, sign, where
from ..ops.reductions import expand_reduced
from ..ops.reductions import sum as _sum
from ..ops.shape import expand_dims, moveaxis
from .helpers import data_of, is_complex
from .spectral import degeneracy_tol, svd_op, svdvals
from .systems import inv

__all__ = ["vector_norm", "matrix_norm", "norm", "cond"]

def _vector_norm(x: Any, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    return np.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)


def _direction(x: Any, n: Any, axis: Any, ord: Any) -> Any:
    """The gradient of the norm ``n`` (broadcast against ``x``) for a unit cotangent."""
    nd = data_of(n)
    xd = data_of(x)
    if ord == 2:
        zero = nd == 0
        return where(zero, 0, x / where(zero, 1, n))
    if ord == 1:
        return sign(x)
    if ord == 0:  # (a constant: x * 0 is NaN at an infinite entry)
        return namespace(xd).zeros_like(xd)
    if math.isinf(ord):
        xp = namespace(xd)
        hit = xp.astype(xp.abs(xd) == nd, nd.dtype)
        count = xp.sum(hit, axis=normalize_axis_tuple(axis, x.ndim) if axis is not None
                       else None, keepdims=True)
        return sign(x) * (hit / count)
    zero = (xd == 0) | (nd == 0)
    return where(zero, 0, sign(x) * (where(zero, 1, _abs(x)) / where(nd == 0, 1, n)) ** (ord - 1))


def _expanded(v: Any, x: Any, axis: Any, keepdims: Any) -> Any:
    return expand_reduced(v, x.shape, axis, keepdims)


def _vector_norm_vjp(g: Any, ans: Any, x: Any, axis: Any = None, keepdims: bool = False,
                     ord: Any = 2) -> Any:
    d = _direction(x, _expanded(ans, x, axis, keepdims), axis, ord)
    return _expanded(g, x, axis, keepdims) * d


def _vector_norm_jvp(t: Any, ans: Any, x: Any, axis: Any = None, keepdims: bool = False,
                     ord: Any = 2) -> Any:
    d = _direction(x, _expanded(ans, x, axis, keepdims), axis, ord)
    dt = real(conj(d) * t) if is_complex(d) or is_complex(t) else d * t
    return _sum(dt, axis=axis, keepdims=keepdims)


_vector_norm_op = op(_vector_norm, name="linalg.vector_norm", vjp=_vector_norm_vjp,
                     jvp=_vector_norm_jvp, batch="reduce")


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False,
                ord: float = 2) -> Any:
    """Vector norm over ``axis`` (numpy.linalg.vector_norm).

    Parameters
    ----------
    x : Tensor or array_like
    axis : None, int or tuple of int
        The axes of the vectors; None: all of ``x`` as one vector.
    keepdims : bool
    ord : {2, 1, inf, -inf, 0, float}
        ``sum(|x|^ord)^(1/ord)``; inf / -inf: the largest / smallest ``|x_i|``; 0: the
        number of non-zero entries.

    Returns
    -------
    Tensor
        Real. Its gradient is 0 at ``x = 0`` (a subgradient) and shared equally among
        tied entries for ``ord=inf``.
    """
    if ord is None:
        ord = 2
    return _vector_norm_op(x, axis=axis, keepdims=keepdims, ord=ord)


def _keep(r: Any, keepdims: bool, axes: tuple[Any, ...]) -> Any:
    """Put back the reduced (non-negative, sorted) ``axes`` as length-one axes."""
    if keepdims:
        for a in axes:
            r = expand_dims(r, a)
    return r


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    """Matrix norm over the last two axes (numpy.linalg.matrix_norm).

    Parameters
    ----------
    x : (..., m, n) Tensor or array_like
    keepdims : bool
    ord : {'fro', 'nuc', inf, -inf, 1, -1, 2, -2}
        Frobenius, nuclear (sum of singular values), max/min row sum, max/min column sum,
        largest/smallest singular value.

    Returns
    -------
    Tensor
    """
    ndim = ndim_of(x)
    if ndim < 2:
        raise ValueError(f"matrix_norm: the input must be at least 2-D, got shape "
                         f"{shape_of(x)}")
    last = (ndim - 2, ndim - 1)
    if ord in ("fro", None):
        return vector_norm(x, axis=(-2, -1), keepdims=keepdims)
    if ord == "nuc":
        return _keep(_sum(_singular_values(x), axis=-1), keepdims, last)
    if ord in (2, -2):
        s = _singular_values(x)
        return _keep(vector_norm(s, axis=-1, ord=math.inf * np.sign(ord)), keepdims, last)
    if ord in (1, -1, math.inf, -math.inf):
        sums = _sum(_abs(x), axis=-2 if abs(ord) == 1 else -1)
        return _keep(vector_norm(sums, axis=-1, ord=math.inf * np.sign(ord)), keepdims, last)
    raise ValueError(f"matrix_norm: invalid norm order {ord!r} for matrices; use 'fro', "
                     f"'nuc', inf, -inf, 1, -1, 2 or -2")


def _singular_values(x: Any) -> Any:
    """The singular values of ``x`` for a norm: those at 0 (to working precision, relative to
    the norm) pass no gradient, so that the norm's gradient there is the minimum-norm
    subgradient (``U_r Vh_r`` for the nuclear norm), as for a vector norm at 0."""
    s = svd_op(x, False)[1]
    if not isinstance(s, Tensor):
        return s
    zero = data_of(s) <= degeneracy_tol(s, max(shape_of(x)[-2:]))
    if not namespace(zero).any(zero):
        return s
    return where(zero, s.detach(), s)


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """Matrix or vector norm (numpy.linalg.norm).

    Parameters
    ----------
    x : Tensor or array_like
    ord : None, str or float
        As in NumPy: a vector order when ``axis`` is an int (or ``x`` is 1-D), a matrix
        order when ``axis`` is a pair (or ``x`` is 2-D and ``ord`` is given).
    axis : None, int or pair of int
        None: with ``ord=None`` the 2-norm of all entries; otherwise ``x`` must be 1-D or 2-D.
    keepdims : bool

    Returns
    -------
    Tensor
        Gradients are finite everywhere (0 at a zero vector).
    """
    ndim = ndim_of(x)
    if axis is None:
        if ord is None or (ord in ("fro", "f") and ndim == 2):
            return vector_norm(x, axis=None, keepdims=keepdims)
        if ndim == 1:
            axis = (0,)
        elif ndim == 2:
            axis = (0, 1)
        else:
            raise ValueError(f"norm: improper number of dimensions to norm: ord={ord!r} "
                             f"needs a 1-D or 2-D input (or axis=), got shape "
                             f"{shape_of(x)}")
    axes = normalize_axis_tuple(axis, ndim)
    if len(axes) == 1:
        if isinstance(ord, str):
            raise ValueError(f"norm: invalid norm order {ord!r} for vectors")
        return vector_norm(x, axis=axes[0], keepdims=keepdims, ord=2 if ord is None else ord)
    if len(axes) == 2:
        if axes[0] == axes[1]:
            raise ValueError(f"norm: duplicate axes given: {axis}")
        r = matrix_norm(moveaxis(x, axes, (-2, -1)), ord="fro" if ord is None else ord)
        return _keep(r, keepdims, tuple(sorted(axes)))
    raise ValueError(f"norm: axis must be None, an int or a pair of ints, got {axis!r}")


def cond(x: Any, p: Any = None) -> Any:
    """Condition number (numpy.linalg.cond).

    Parameters
    ----------
    x : (..., M, N) Tensor or array_like
    p : {None, 1, -1, 2, -2, inf, -inf, 'fro', 'nuc'}
        None or 2: the ratio of the largest to the smallest singular value.

    Returns
    -------
    Tensor
    """
    if p is None or p in (2, -2):
        s = svdvals(x)
        r = s[..., -1] / s[..., 0] if p == -2 else s[..., 0] / s[..., -1]
    else:
        r = matrix_norm(x, ord=p) * matrix_norm(inv(x), ord=p)
    # NumPy's rule: a NaN from a singular matrix (0 / 0) is infinite, unless x holds a NaN
    rd = data_of(r)
    nan = np.isnan(rd)
    if nan.any():
        nan &= ~np.isnan(data_of(x)).any(axis=(-2, -1))
        r = where(nan, np.inf, r)
    return r


# ---- other libraries' arrays, in their array API namespace xp (yaad.backend) --------------

implements("linalg.vector_norm")(
    lambda xp, x, axis=None, keepdims=False, ord=2: xp.linalg.vector_norm(
        x, axis=axis, keepdims=keepdims, ord=ord))
