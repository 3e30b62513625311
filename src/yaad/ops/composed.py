"""NumPy functions composed of yaad's ops: ``cross``, ``gradient``, ``rollaxis``,
``select``, ``nan_to_num``, ``real_if_close``, ``interp``, ``polyval`` and the
one-argument ``where``.

They declare no rules: each is written with differentiable ops, following NumPy's own
arithmetic step by step (so the values are NumPy's, bit for bit), and its gradients, to
any order and in forward mode, come from those ops. Decisions NumPy takes from values
(which interval of ``interp`` holds ``x``, whether ``real_if_close`` drops the imaginary
part) are taken on the data, as NumPy takes them.
"""

from __future__ import annotations

import warnings
from typing import Any, Sequence

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from ..tensor import Tensor
from .elementwise import imag, isfinite, isnan, isneginf, isposinf, mod, real
from .elementwise import where as _where
from .reductions import argsort, nonzero
from .shape import (
    astype,
    broadcast_arrays,
    broadcast_to,
    concatenate,
    diff,
    moveaxis,
    reshape,
    stack,
    transpose,
)

_NOVALUE = object()


def _data(x: Any) -> Any:
    return x.data if isinstance(x, Tensor) else x


def _operand(x: Any) -> Any:
    """A tensor or array as is; anything else (a list, a number) as a NumPy array."""
    return x if isinstance(x, Tensor) or hasattr(x, "shape") else np.asarray(x)


def where(condition: Any, x: Any = _NOVALUE, y: Any = _NOVALUE) -> Any:
    """``x`` where ``condition`` holds, else ``y`` (numpy.where); with the condition
    alone, the indices where it holds (numpy.nonzero).

    The gradient of the branch not taken is exactly zero, even where that branch is NaN or
    infinite, and it stays zero through the elementwise functions above it.

    Parameters
    ----------
    condition : array_like of bool or Tensor
    x, y : array_like or Tensor, optional
        Both or neither.

    Returns
    -------
    Tensor or ndarray, or a tuple of index arrays for the one-argument form
    """
    if x is _NOVALUE and y is _NOVALUE:
        return nonzero(condition)
    if x is _NOVALUE or y is _NOVALUE:
        raise ValueError("where: either both or neither of x and y should be given")
    return _where(condition, x, y)


where.op = _where.op  # the registry's op of this public name


def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: int | None = None) -> Any:
    """Cross product of vectors of 3 (or, deprecated, 2) components (numpy.cross).

    Parameters
    ----------
    a, b : array_like or Tensor
        Vectors along ``axisa`` and ``axisb``, broadcast over the other axes.
    axisa, axisb, axisc : int
        The axes of the components of ``a``, ``b`` and the result.
    axis : int, optional
        Overrides the three.

    Returns
    -------
    Tensor or ndarray
    """
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = _operand(a), _operand(b)
    if a.ndim < 1 or b.ndim < 1:
        raise ValueError("cross: at least one array has zero dimension")
    a = moveaxis(a, normalize_axis_index(axisa, a.ndim, msg_prefix="axisa"), -1)
    b = moveaxis(b, normalize_axis_index(axisb, b.ndim, msg_prefix="axisb"), -1)
    na, nb = a.shape[-1], b.shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("cross: incompatible dimensions for cross product (dimension must "
                         f"be 2 or 3), got {na} and {nb}")
    if na == 2 or nb == 2:
        warnings.warn("Arrays of 2-dimensional vectors are deprecated. Use arrays of "
                      "3-dimensional vectors instead. (deprecated in NumPy 2.0)",
                      DeprecationWarning, stacklevel=2)
    a0, a1, b0, b1 = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    z = a0 * b1 - a1 * b0
    if na == 2 and nb == 2:
        return z
    if na == 2:  # a2 = 0
        b2 = b[..., 2]
        c0, c1 = a1 * b2, -(a0 * b2)
    elif nb == 2:  # b2 = 0
        a2 = a[..., 2]
        c0, c1 = -(a2 * b1), a2 * b0
    else:
        a2, b2 = a[..., 2], b[..., 2]
        c0, c1 = a1 * b2 - a2 * b1, a2 * b0 - a0 * b2
    c0, c1, z = broadcast_arrays(c0, c1, z)
    out = stack([c0, c1, z], axis=-1)
    return moveaxis(out, -1, normalize_axis_index(axisc, out.ndim, msg_prefix="axisc"))


def _along(axis: int, ndim: int, index: Any) -> tuple:
    return (slice(None),) * axis + (index,)


def _spacing(distances: Any, n: int) -> Any:
    """A scalar spacing as is; coordinates as their differences (a scalar if uniform)."""
    d = _operand(distances)
    if d.ndim == 0:
        return distances
    if d.ndim != 1:
        raise ValueError("gradient: distances must be either scalars or 1d")
    if d.shape[0] != n:
        raise ValueError("gradient: when 1d, distances must match the length of the "
                         "corresponding dimension")
    if _data(d).dtype.kind in "iub":
        d = astype(d, np.float64)
    dx = diff(d)
    dd = _data(dx)
    return dx[0] if (dd == dd[0]).all() else dx


def gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: int = 1) -> Any:
    """The gradient of sampled values by central differences in the interior and one-sided
    differences of order ``edge_order`` at the ends (numpy.gradient).

    Differentiable in ``f`` and in the spacings or coordinates when they are tensors.

    Parameters
    ----------
    f : array_like or Tensor
    *varargs : scalars or 1-D coordinates, optional
        One spacing for all axes, or one spacing or coordinate array per axis.
    axis : None, int or tuple of int
    edge_order : {1, 2}

    Returns
    -------
    Tensor or ndarray, or a tuple of them (one per axis)
    """
    f = _operand(f)
    n = f.ndim
    axes = tuple(range(n)) if axis is None else normalize_axis_tuple(axis, n)
    if not varargs:
        dx = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(_data(varargs[0])) == 0:
        dx = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        dx = [_spacing(d, f.shape[ax]) for d, ax in zip(varargs, axes)]
    else:
        raise TypeError("gradient: invalid number of arguments")
    if edge_order > 2:
        raise ValueError("gradient: 'edge_order' greater than 2 not supported")
    otype = _data(f).dtype
    if otype.kind not in "fc":
        f, otype = astype(f, np.float64), np.dtype(np.float64)
    out = []
    for ax, h in zip(axes, dx):
        if f.shape[ax] < edge_order + 1:
            raise ValueError("gradient: shape of array too small to calculate a numerical "
                             "gradient, at least (edge_order + 1) elements are required.")
        out.append(astype(_gradient_along(f, ax, h, edge_order), otype))
    return out[0] if len(out) == 1 else tuple(out)


def _gradient_along(f: Any, ax: int, h: Any, edge_order: int) -> Any:
    """numpy.gradient along one axis: interior, then the two ends, then joined."""
    nd = f.ndim

    def at(index):
        return f[_along(ax, nd, index)]

    uniform = np.ndim(_data(h)) == 0
    if uniform:
        inner = (at(slice(2, None)) - at(slice(None, -2))) / (2.0 * h)
    else:
        d1, d2 = h[0:-1], h[1:]
        shape = [1] * nd
        shape[ax] = -1
        ca = reshape(-d2 / (d1 * (d1 + d2)), shape)
        cb = reshape((d2 - d1) / (d1 * d2), shape)
        cc = reshape(d1 / (d2 * (d1 + d2)), shape)
        inner = ca * at(slice(None, -2)) + cb * at(slice(1, -1)) + cc * at(slice(2, None))
    if edge_order == 1:
        first = (at(1) - at(0)) / (h if uniform else h[0])
        last = (at(-1) - at(-2)) / (h if uniform else h[-1])
    else:
        if uniform:
            a, b, c = -1.5 / h, 2.0 / h, -0.5 / h
        else:
            d1, d2 = h[0], h[1]
            a = -(2.0 * d1 + d2) / (d1 * (d1 + d2))
            b = (d1 + d2) / (d1 * d2)
            c = -d1 / (d2 * (d1 + d2))
        first = a * at(0) + b * at(1) + c * at(2)
        if uniform:
            a, b, c = 0.5 / h, -2.0 / h, 1.5 / h
        else:
            d1, d2 = h[-2], h[-1]
            a = d2 / (d1 * (d1 + d2))
            b = -(d2 + d1) / (d1 * d2)
            c = (2.0 * d2 + d1) / (d2 * (d1 + d2))
        last = a * at(-3) + b * at(-2) + c * at(-1)
    ends = [stack([e], axis=ax) for e in (first, last)]
    return concatenate([ends[0], inner, ends[1]], axis=ax)


def rollaxis(a: Any, axis: int, start: int = 0) -> Any:
    """Roll ``axis`` backwards until it lies before position ``start`` (numpy.rollaxis;
    ``moveaxis`` is clearer).

    Parameters
    ----------
    a : array_like or Tensor
    axis : int
    start : int

    Returns
    -------
    Tensor or ndarray
    """
    a = _operand(a)
    n = a.ndim
    axis = normalize_axis_index(axis, n)
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise np.exceptions.AxisError(
            f"rollaxis: 'start' arg requires {-n} <= start < {n + 1}, but {start} was passed in")
    if axis < start:
        start -= 1
    axes = [i for i in range(n) if i != axis]
    axes.insert(start, axis)
    return transpose(a, tuple(axes))


def select(condlist: Sequence[Any], choicelist: Sequence[Any], default: Any = 0) -> Any:
    """Elements of ``choicelist`` chosen by the first true condition of ``condlist``, else
    ``default`` (numpy.select); differentiable in the choices and the default.

    Parameters
    ----------
    condlist : sequence of bool arrays
    choicelist : sequence of array_like or Tensor
    default : scalar, array_like or Tensor

    Returns
    -------
    Tensor or ndarray
    """
    if len(condlist) != len(choicelist):
        raise ValueError("select: list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select: select with an empty condition list is not possible")
    for i, cond in enumerate(condlist):
        if np.asarray(_data(cond)).dtype != np.bool_:
            raise TypeError(f"select: invalid entry {i} in condlist: should be boolean ndarray")
    values = [c if type(c) in (int, float, complex) else _data(c)
              for c in (*choicelist, default)]
    dtype = np.result_type(*values)
    out = astype(_operand(default), dtype)  # NumPy fills the result with it, in dtype
    for cond, choice in zip(condlist[::-1], choicelist[::-1]):
        out = _where(cond, choice, out)
    shape = np.broadcast_shapes(*(np.shape(_data(v)) for v in (*condlist, *choicelist,
                                                               default)))
    return astype(broadcast_to(out, shape), dtype)


def nan_to_num(x: Any, copy: bool = True, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Any:
    """NaN and infinities replaced by finite numbers (numpy.nan_to_num); the gradient is 1
    where ``x`` is kept and 0 where it was replaced.

    Parameters
    ----------
    x : array_like or Tensor
    copy : bool
        Results are new arrays either way (in-place replacement is not supported on
        tensors).
    nan, posinf, neginf : float, optional
        The replacements (default: 0, the largest and the most negative finite number of
        the dtype).

    Returns
    -------
    Tensor or ndarray
    """
    x = _operand(x)
    dtype = _data(x).dtype
    if dtype.kind not in "fc":
        return x
    big = np.finfo(dtype).max

    def fix(v):
        v = _where(isnan(v), nan, v)
        v = _where(isposinf(v), big if posinf is None else posinf, v)
        return astype(_where(isneginf(v), -big if neginf is None else neginf, v), v.dtype)

    if dtype.kind == "c":
        return fix(real(x)) + 1j * fix(imag(x))
    return fix(x)


def real_if_close(a: Any, tol: float = 100) -> Any:
    """The real part if every imaginary part is below ``tol`` (in machine epsilons when
    ``tol > 1``), else ``a`` itself (numpy.real_if_close).

    Parameters
    ----------
    a : array_like or Tensor
    tol : float

    Returns
    -------
    Tensor or ndarray
    """
    a = _operand(a)
    dtype = _data(a).dtype
    if dtype.kind != "c":
        return a
    if tol > 1:
        tol = np.finfo(dtype).eps * tol
    return real(a) if bool(np.all(np.abs(_data(a).imag) < tol)) else a


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None,
           period: Any = None) -> Any:
    """Piecewise-linear interpolation of the points ``(xp, fp)`` at ``x`` (numpy.interp);
    differentiable in ``x``, ``xp``, ``fp``, ``left`` and ``right``.

    At a knot the derivative in ``x`` is that of the interval to its right (of the last
    interval at the last knot).

    Parameters
    ----------
    x : array_like or Tensor
    xp : 1-D array_like or Tensor
        Increasing, unless ``period`` is given.
    fp : 1-D array_like or Tensor, real or complex
    left, right : scalar or Tensor, optional
        Values below ``xp[0]`` and above ``xp[-1]`` (default: ``fp[0]`` and ``fp[-1]``).
    period : float, optional
        For periodic ``xp`` (``left`` and ``right`` are then ignored).

    Returns
    -------
    Tensor or ndarray
        float64 (complex128 for a complex ``fp``), as NumPy.
    """
    x, xp, fp = _operand(x), _operand(xp), _operand(fp)
    out_dtype = np.dtype(np.complex128 if _data(fp).dtype.kind == "c" else np.float64)
    if xp.ndim != 1 or fp.ndim != 1:
        raise ValueError("interp: data points must be 1-D sequences")
    if xp.shape[0] != fp.shape[0]:
        raise ValueError("interp: fp and xp are not of the same length")
    if xp.shape[0] == 0:
        raise ValueError("interp: array of sample points is empty")
    # NumPy computes in double precision
    x, xp, fp = astype(x, np.float64), astype(xp, np.float64), astype(fp, out_dtype)
    if period is not None:
        if period == 0:
            raise ValueError("interp: period must be a non-zero value")
        period = abs(period)
        left = right = None
        x, xp = mod(x, period), mod(xp, period)
        order = np.asarray(_data(argsort(xp)))
        xp, fp = xp[order], fp[order]
        xp = concatenate([xp[-1:] - period, xp, xp[0:1] + period])
        fp = concatenate([fp[-1:], fp, fp[0:1]])
    n = xp.shape[0]
    lval = fp[0] if left is None else left
    rval = fp[-1] if right is None else right
    xd, xpd = _data(x), _data(xp)
    if n == 1:
        return astype(_where(xd < xpd[0], lval, _where(xd > xpd[0], rval, fp[0])), out_dtype)
    j = np.searchsorted(xpd, xd, side="right") - 1
    jc = np.clip(j, 0, n - 2)
    x0, x1, f0, f1 = xp[jc], xp[jc + 1], fp[jc], fp[jc + 1]
    slope = (f1 - f0) / (x1 - x0)
    val = slope * (x - x0) + f0
    # NumPy's special cases: from the other end of the interval if that is NaN (an
    # infinite fp); the knot's own value at a knot and at the last one (the slope, where
    # finite, only carries the derivative there)
    val = _where(isnan(val), slope * (x - x1) + f1, val)
    val = _where(isnan(val) & (_data(f0) == _data(f1)), f0, val)
    finite = _where(isfinite(slope), slope, 0)
    val = _where(xd == _data(x0), f0 + finite * (x - x0), val)
    val = _where(j == n - 1, fp[-1] + finite * (x - x1), val)
    val = _where(j < 0, lval, _where(xd > xpd[-1], rval, val))
    return astype(_where(np.isnan(xd), x, val), out_dtype)


def polyval(p: Any, x: Any) -> Any:
    """The polynomial with coefficients ``p`` (highest power first) at ``x``, by Horner's
    scheme (numpy.polyval); differentiable in ``p`` and ``x``.

    Parameters
    ----------
    p : 1-D array_like or Tensor
    x : array_like or Tensor

    Returns
    -------
    Tensor or ndarray
    """
    p, x = _operand(p), _operand(x)
    if p.ndim == 0:
        raise TypeError("polyval: p must be a sequence of coefficients (got a 0-d array)")
    y = np.zeros_like(_data(x))
    for k in range(p.shape[0]):
        y = y * x + p[k]
    return y


__all__ = ["where", "cross", "gradient", "rollaxis", "select", "nan_to_num", "real_if_close",
           "interp", "polyval"]
