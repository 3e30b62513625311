"""NumPy functions composed of yaad's ops: ``cross``, ``gradient``, ``rollaxis``,
``select``, ``nan_to_num``, ``real_if_close``, ``interp``, ``polyval``, the one-argument
``where``, ``cumulative_sum``/``prod``, ``meshgrid``, ``trapezoid``, ``vander``,
``diagflat``, ``ediff1d``, ``unstack``, ``median``, the polynomial arithmetic and
``cov``/``corrcoef``.

They declare no rules: each is written with differentiable ops, following NumPy's own
arithmetic step by step (so the values are NumPy's, bit for bit), and its gradients, to
any order and in forward mode, come from those ops. Decisions NumPy takes from values
(whether ``real_if_close`` drops the imaginary part) are taken on the data, as NumPy takes
them; which interval of ``interp`` holds ``x`` is an op's result (``searchsorted``).
"""

from __future__ import annotations

import warnings
from typing import Any, Sequence

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from ..core.presentation import dtype_of, ndim_of, shape_of
from ..core.tensor import Tensor
from ..modes.batched_values import per_example
from .convolution import convolve
from .elementwise import clip, conj, imag, isfinite, isnan, isneginf, isposinf, mod, real, sqrt
from .elementwise import where as _where
from .products import dot
from .public_names import with_keyword_hints
from .reductions import argsort, average, cumprod, cumsum, mean, nonzero, partition, searchsorted
from .reductions import sum as sum_
from .shape import (
    _no_out,
    _values,
    astype,
    atleast_1d,
    broadcast_arrays,
    broadcast_to,
    concatenate,
    diag,
    diagonal,
    diff,
    flip,
    getitem,
    matrix_transpose,
    moveaxis,
    ravel,
    reshape,
    squeeze,
    stack,
    transpose,
)
from .shape import copy as copy_

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
    x : array_like or Tensor, optional
        Both or neither.
    y : array_like or Tensor, optional
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
    a : array_like or Tensor
        Vectors along ``axisa`` and ``axisb``, broadcast over the other axes.
    b : array_like or Tensor
        Vectors along ``axisa`` and ``axisb``, broadcast over the other axes.
    axisa : int, optional
        The axes of the components of ``a``, ``b`` and the result.
    axisb : int, optional
        The axes of the components of ``a``, ``b`` and the result.
    axisc : int, optional
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


def _spacing(distances: Any, n: int) -> tuple:
    """A scalar spacing as is; coordinates as their differences (a scalar if uniform).

    Returns ``(dx, equal)``: ``equal`` is, for a tensor's equal differences, the scalar
    spacing of NumPy's shortcut (else None). The shortcut is a decision on the
    coordinates' values, and its formula depends on ``dx[0]`` only: a tensor keeps all its
    differences, so that its gradient reaches every coordinate, and :func:`gradient` takes
    only the values from the shortcut.
    """
    d = _operand(distances)
    if d.ndim == 0:
        return distances, None
    if d.ndim != 1:
        raise ValueError("gradient: distances must be either scalars or 1d")
    if d.shape[0] != n:
        raise ValueError("gradient: when 1d, distances must match the length of the "
                         "corresponding dimension")
    if dtype_of(d).kind in "iub":
        d = astype(d, np.float64)
    dx = diff(d)
    # (not read: another library's values, a Dask array would be computed; a batched
    # tensor's, which differ from example to example under vmap)
    values = dx.data if type(dx) is Tensor else dx
    uniform = isinstance(values, np.ndarray) and bool(np.all(values == values[0]))
    equal = values[0] if uniform else None
    if isinstance(dx, Tensor):
        return dx, equal
    return (dx, None) if equal is None else (equal, None)


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
        dx = [(1.0, None)] * len(axes)
    elif len(varargs) == 1 and ndim_of(varargs[0]) == 0:
        dx = [(varargs[0], None)] * len(axes)
    elif len(varargs) == len(axes):
        dx = [_spacing(d, f.shape[ax]) for d, ax in zip(varargs, axes)]
    else:
        raise TypeError("gradient: invalid number of arguments")
    if edge_order > 2:
        raise ValueError("gradient: 'edge_order' greater than 2 not supported")
    otype = dtype_of(f)
    if otype.kind not in "fc":
        f, otype = astype(f, np.float64), np.dtype(np.float64)
    out = []
    for ax, (h, equal) in zip(axes, dx):
        if f.shape[ax] < edge_order + 1:
            raise ValueError("gradient: shape of array too small to calculate a numerical "
                             "gradient, at least (edge_order + 1) elements are required.")
        value = _gradient_along(f, ax, h, edge_order)
        if equal is not None:  # NumPy's numbers, the derivatives (any order) of all of h:
            plain = f.detach() if isinstance(f, Tensor) else f  # (value - value is 0)
            value = _gradient_along(plain, ax, equal, edge_order) + (value - value.detach())
        out.append(astype(value, otype))
    return out[0] if len(out) == 1 else tuple(out)


def _gradient_along(f: Any, ax: int, h: Any, edge_order: int) -> Any:
    """numpy.gradient along one axis: interior, then the two ends, then joined."""
    nd = f.ndim

    def at(index):
        return f[_along(ax, nd, index)]

    uniform = ndim_of(h) == 0
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
        if dtype_of(cond) != np.bool_:
            raise TypeError(f"select: invalid entry {i} in condlist: should be boolean ndarray")
    values = [c if type(c) in (int, float, complex) else dtype_of(c)
              for c in (*choicelist, default)]
    dtype = np.result_type(*values)
    out = astype(_operand(default), dtype)  # NumPy fills the result with it, in dtype
    for cond, choice in zip(condlist[::-1], choicelist[::-1]):
        out = _where(cond, choice, out)
    shape = np.broadcast_shapes(*(shape_of(v) for v in (*condlist, *choicelist, default)))
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
    nan : float, optional
        The replacement of NaN (default 0.0).
    posinf : float, optional
        The replacement of +inf; None (the default): the largest finite number of the dtype.
    neginf : float, optional
        The replacement of -inf; None (the default): the most negative finite number of the
        dtype.

    Returns
    -------
    Tensor or ndarray
    """
    x = _operand(x)
    dtype = dtype_of(x)
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
    dtype = dtype_of(a)
    if dtype.kind != "c":
        return a
    if tol > 1:
        tol = np.finfo(dtype).eps * tol
    # (inside vmap: real when every example's imaginary parts are small)
    return real(a) if bool(np.all(np.abs(np.imag(_values(a))) < tol)) else a


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
    left : scalar or Tensor, optional
        Values below ``xp[0]`` and above ``xp[-1]`` (default: ``fp[0]`` and ``fp[-1]``).
    right : scalar or Tensor, optional
        Values below ``xp[0]`` and above ``xp[-1]`` (default: ``fp[0]`` and ``fp[-1]``).
    period : float, optional
        For periodic ``xp`` (``left`` and ``right`` are then ignored).

    Returns
    -------
    Tensor or ndarray
        float64 (complex128 for a complex ``fp``), as NumPy.
    """
    x, xp, fp = _operand(x), _operand(xp), _operand(fp)
    out_dtype = np.dtype(np.complex128 if dtype_of(fp).kind == "c" else np.float64)
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
        order = argsort(xp)
        xp, fp = getitem(xp, order), getitem(fp, order)
        xp = concatenate([xp[-1:] - period, xp, xp[0:1] + period])
        fp = concatenate([fp[-1:], fp, fp[0:1]])
    n = xp.shape[0]
    lval = fp[0] if left is None else left
    rval = fp[-1] if right is None else right
    if n == 1:
        return astype(_where(x < xp[0], lval, _where(x > xp[0], rval, fp[0])), out_dtype)
    j = searchsorted(xp, x, side="right") - 1  # (an op: its values are not read here)
    jc = clip(j, 0, n - 2)
    x0, x1, f0, f1 = (getitem(v, k) for v in (xp, fp) for k in (jc, jc + 1))  # (xp: an array)
    slope = (f1 - f0) / (x1 - x0)
    val = slope * (x - x0) + f0
    # NumPy's special cases: from the other end of the interval if that is NaN (an
    # infinite fp); the knot's own value at a knot and at the last one (the slope, where
    # finite, only carries the derivative there)
    val = _where(isnan(val), slope * (x - x1) + f1, val)
    val = _where(isnan(val) & (f0 == f1), f0, val)
    finite = _where(isfinite(slope), slope, 0)
    val = _where(x == x0, f0 + finite * (x - x0), val)
    val = _where(j == n - 1, fp[-1] + finite * (x - x1), val)
    val = _where(j < 0, lval, _where(x > xp[-1], rval, val))
    return astype(_where(isnan(x), x, val), out_dtype)


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
    y = np.zeros(shape_of(x), dtype_of(x))
    for k in range(p.shape[0]):
        y = y * x + p[k]
    return y


# ---- more of NumPy, composed -----------------------------------------------------------


def _cumulative(accumulate, identity: int, name: str):
    def f(x: Any, /, *, axis: int | None = None, dtype: Any = None, out: None = None,
          include_initial: bool = False) -> Any:
        _no_out(name, out)
        x = atleast_1d(_operand(x))
        if axis is None:
            if x.ndim >= 2:
                raise ValueError(f"{name}: for arrays which have more than one dimension "
                                 f"``axis`` argument is required.")
            axis = 0
        res = accumulate(x, axis=axis, dtype=dtype)
        if include_initial:
            shape = list(res.shape)
            shape[normalize_axis_index(axis, res.ndim)] = 1
            res = concatenate([np.full(shape, identity, dtype=dtype_of(res)), res], axis=axis)
        return res

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"""The cumulative {'sum' if identity == 0 else 'product'} along ``axis``,
    optionally starting with {identity} (numpy.{name}, the array API's name).

    Parameters
    ----------
    x : array_like or Tensor
    axis : int, optional
        Required for more than one dimension.
    dtype : dtype, optional
    out : None
        Not supported.
    include_initial : bool

    Returns
    -------
    Tensor or ndarray
    """
    return f


cumulative_sum = _cumulative(cumsum, 0, "cumulative_sum")
cumulative_prod = _cumulative(cumprod, 1, "cumulative_prod")


def meshgrid(*xi: Any, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> tuple:
    """Coordinate matrices from coordinate vectors (numpy.meshgrid), differentiable in
    each vector.

    Parameters
    ----------
    *xi : 1-D array_like or Tensor
    copy : bool
        Results are new arrays either way.
    sparse : bool
        Keep the broadcastable shapes instead of the full grids.
    indexing : {"xy", "ij"}

    Returns
    -------
    tuple of Tensor or ndarray
    """
    if indexing not in ("xy", "ij"):
        raise ValueError("meshgrid: valid values for `indexing` are 'xy' and 'ij'.")
    nd = len(xi)
    out = [reshape(_operand(x), (1,) * k + (-1,) + (1,) * (nd - k - 1)) for k, x in enumerate(xi)]
    if indexing == "xy" and nd > 1:
        out[0] = reshape(out[0], (1, -1) + (1,) * (nd - 2))
        out[1] = reshape(out[1], (-1, 1) + (1,) * (nd - 2))
    if not sparse:
        out = [copy_(o) for o in broadcast_arrays(*out)]
    return tuple(out)


def trapezoid(y: Any, x: Any = None, dx: float = 1.0, axis: int = -1) -> Any:
    """Integral of sampled values by the trapezoidal rule (numpy.trapezoid),
    differentiable in ``y``, ``x`` and ``dx``.

    Parameters
    ----------
    y : array_like or Tensor
    x : array_like or Tensor, optional
        The sample points (1-D, or shaped like ``y``); default: spaced by ``dx``.
    dx : float or Tensor
    axis : int

    Returns
    -------
    Tensor or ndarray
    """
    y = _operand(y)
    if x is None:
        d = dx
    else:
        x = _operand(x)
        if x.ndim == 1:
            shape = [1] * y.ndim
            shape[axis] = x.shape[0] - 1
            d = reshape(diff(x), shape)
        else:
            d = diff(x, axis=axis)
    nd = y.ndim
    upper = [slice(None)] * nd
    lower = [slice(None)] * nd
    upper[axis] = slice(1, None)
    lower[axis] = slice(None, -1)
    return sum_(d * (y[tuple(upper)] + y[tuple(lower)]) / 2.0, axis)


def vander(x: Any, N: int | None = None, increasing: bool = False) -> Any:
    """The Vandermonde matrix: columns the powers of ``x`` (numpy.vander),
    differentiable in ``x``.

    Parameters
    ----------
    x : 1-D array_like or Tensor
    N : int, optional
        The number of columns (default: len(x)).
    increasing : bool
        Powers increasing from left to right.

    Returns
    -------
    Tensor or ndarray
    """
    x = _operand(x)
    if x.ndim != 1:
        raise ValueError("vander: x must be a one-dimensional array or sequence.")
    n = x.shape[0]
    N = n if N is None else N
    column = astype(reshape(x, (n, 1)), np.promote_types(dtype_of(x), int))
    v = column ** 0  # ones, linked to x (a zero gradient)
    if N > 1:  # NumPy multiplies in the result's dtype
        v = concatenate([v, cumprod(broadcast_to(column, (n, N - 1)), axis=1)], axis=1)
    v = v[:, :N]
    return v if increasing else flip(v, 1)


def diagflat(v: Any, k: int = 0) -> Any:
    """A 2-D array with the flattened input on the ``k``-th diagonal (numpy.diagflat).

    Parameters
    ----------
    v : array_like or Tensor
    k : int

    Returns
    -------
    Tensor or ndarray
    """
    return diag(ravel(_operand(v)), k)


def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    """Differences between consecutive elements of the flattened input, with values
    prepended and appended (numpy.ediff1d).

    Parameters
    ----------
    ary : array_like or Tensor
    to_end : array_like or Tensor, optional
    to_begin : array_like or Tensor, optional

    Returns
    -------
    Tensor or ndarray
    """
    a = ravel(_operand(ary))
    parts = [a[1:] - a[:-1]]
    dtype = dtype_of(a)
    for extra, at in ((to_begin, 0), (to_end, len(parts) + 1)):
        if extra is None:
            continue
        e = ravel(_operand(extra))
        if not np.can_cast(dtype_of(e), dtype, casting="same_kind"):
            raise TypeError(f"ediff1d: dtype of `{'to_begin' if at == 0 else 'to_end'}` must "
                            f"be compatible with input `ary` under the `same_kind` rule.")
        parts.insert(0 if at == 0 else len(parts), astype(e, dtype))
    return concatenate(parts)


def unstack(x: Any, /, *, axis: int = 0) -> tuple:
    """The sub-arrays along ``axis``, as a tuple (numpy.unstack).

    Parameters
    ----------
    x : array_like or Tensor
    axis : int

    Returns
    -------
    tuple of Tensor or ndarray
    """
    x = moveaxis(_operand(x), axis, 0)
    return tuple(x[k] for k in range(x.shape[0]))


def median(a: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
           keepdims: bool = False) -> Any:
    """The median along ``axis`` (numpy.median); the gradient goes to the middle
    element(s), split evenly between two.

    Parameters
    ----------
    a : array_like or Tensor
    axis : None or int
    out : None
        Not supported.
    overwrite_input : bool
        Ignored (the input is never modified).
    keepdims : bool

    Returns
    -------
    Tensor or ndarray
    """
    _no_out("median", out)
    a = _operand(a)
    if axis is not None and not isinstance(axis, (int, np.integer)):
        raise TypeError("median: axis must be None or an int here")
    sz = a.size if axis is None else a.shape[axis]
    kth = [sz // 2 - 1, sz // 2] if sz % 2 == 0 else [(sz - 1) // 2]
    nans = dtype_of(a).kind in "fc"
    if nans:
        kth.append(-1)  # NaN sorts last: the last element says whether there is one
    if not sz:
        return mean(a, axis=axis, keepdims=keepdims)  # NaN, with NumPy's warning
    part = partition(a, kth, axis=axis)
    ax = 0 if axis is None else normalize_axis_index(axis, a.ndim)
    if axis is None:
        part = ravel(part)
    n = part.shape[ax]
    index = [slice(None)] * part.ndim
    index[ax] = slice(n // 2, n // 2 + 1) if n % 2 else slice(n // 2 - 1, n // 2 + 1)
    out = mean(part[tuple(index)], axis=ax)
    if nans:
        last = part[(slice(None),) * ax + (-1,)]
        last = last.detach() if isinstance(last, Tensor) else last  # (NaN: no gradient)
        out = _where(isnan(last), last, out)
    if keepdims:
        out = reshape(out, tuple(1 if (axis is None or i == ax) else s
                                 for i, s in enumerate(a.shape)))
    return out


def _poly_pair(op, name: str, word: str):
    def f(a1: Any, a2: Any) -> Any:
        a1, a2 = atleast_1d(_operand(a1)), atleast_1d(_operand(a2))
        d = a2.shape[0] - a1.shape[0]
        if d > 0:
            a1 = concatenate([np.zeros(d, dtype_of(a1)), a1])
        elif d < 0:
            a2 = concatenate([np.zeros(-d, dtype_of(a2)), a2])
        return op(a1, a2)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"""The {word} of two polynomials, coefficients highest power first
    (numpy.{name}).

    Parameters
    ----------
    a1 : array_like or Tensor
    a2 : array_like or Tensor

    Returns
    -------
    Tensor or ndarray
    """
    return f


polyadd = _poly_pair(lambda a, b: a + b, "polyadd", "sum")
polysub = _poly_pair(lambda a, b: a - b, "polysub", "difference")


@per_example()  # (the leading zeros trimmed, so the length, follow the values)
def polymul(a1: Any, a2: Any) -> Any:
    """The product of two polynomials, coefficients highest power first (numpy.polymul):
    the convolution of their coefficients without leading zeros.

    Parameters
    ----------
    a1 : array_like or Tensor
    a2 : array_like or Tensor

    Returns
    -------
    Tensor or ndarray
    """
    return convolve(_trimmed(a1), _trimmed(a2))


def _trimmed(p: Any) -> Any:
    """The coefficients without leading zeros (one zero if all are), as numpy.poly1d
    keeps them."""
    p = atleast_1d(_operand(p))
    nonzero_ = np.flatnonzero(_data(p))
    return p[nonzero_[0]:] if nonzero_.size else p[-1:]


def polyder(p: Any, m: int = 1) -> Any:
    """The ``m``-th derivative of a polynomial (numpy.polyder), differentiable in its
    coefficients.

    Parameters
    ----------
    p : array_like or Tensor
        Coefficients, highest power first.
    m : int

    Returns
    -------
    Tensor or ndarray
    """
    m = int(m)
    if m < 0:
        raise ValueError("polyder: order of derivative must be positive (see polyint)")
    p = _operand(p)
    for _ in range(m):
        n = p.shape[0] - 1
        p = p[:-1] * np.arange(n, 0, -1)
    return p


def polyint(p: Any, m: int = 1, k: Any = None) -> Any:
    """The ``m``-th antiderivative of a polynomial, with integration constants ``k``
    (numpy.polyint), differentiable in the coefficients and the constants.

    Parameters
    ----------
    p : array_like or Tensor
        Coefficients, highest power first.
    m : int
    k : scalar or sequence, optional

    Returns
    -------
    Tensor or ndarray
    """
    m = int(m)
    if m < 0:
        raise ValueError("polyint: order of integral must be positive (see polyder)")
    k = atleast_1d(_operand(np.zeros(m, float) if k is None else k))
    if k.shape[0] == 1 and m > 1:
        k = k[0] * np.ones(m, float)
    if k.shape[0] < m:
        raise ValueError("polyint: k must be a scalar or a rank-1 array of length 1 or >m.")
    p = _operand(p)
    for j in range(m):
        p = concatenate([p / np.arange(p.shape[0], 0, -1), k[j:j + 1]])
    return p


@per_example("fweights", "aweights")  # (their values are checked in Python)
def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False,
        ddof: int | None = None, fweights: Any = None, aweights: Any = None, *,
        dtype: Any = None) -> Any:
    """The covariance matrix of variables observed together (numpy.cov), differentiable
    in the observations and in ``aweights`` (as ``torch.cov``).

    Parameters
    ----------
    m : 1-D or 2-D array_like or Tensor
        A variable per row (``rowvar``) or per column.
    y : array_like or Tensor, optional
        More variables.
    rowvar : bool, optional
    bias : bool, optional
    ddof : int, optional
    fweights : 1-D array_like, optional
        Integer frequencies of the observations (read as data: no gradient).
    aweights : 1-D array_like or Tensor, optional
        Importance weights of the observations (differentiable).
    dtype : dtype, optional

    Returns
    -------
    Tensor or ndarray
    """
    if ddof is not None and ddof != int(ddof):
        raise ValueError("cov: ddof must be integer")
    m = _operand(m)
    if m.ndim > 2:
        raise ValueError("cov: m has more than 2 dimensions")
    if y is not None:
        y = _operand(y)
        if y.ndim > 2:
            raise ValueError("cov: y has more than 2 dimensions")
    if dtype is None:
        dtype = np.result_type(*(dtype_of(v) for v in (m, y) if v is not None), np.float64)
    x = astype(reshape(m, (1, -1)) if m.ndim < 2 else m, dtype)
    if not rowvar and m.ndim != 1:
        x = matrix_transpose(x)
    if x.shape[0] == 0:
        return np.array([]).reshape(0, 0)
    if y is not None:
        y = astype(reshape(y, (1, -1)) if y.ndim < 2 else y, dtype)
        if not rowvar and y.shape[0] != 1:
            y = matrix_transpose(y)
        x = concatenate([x, y], axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    f = None if fweights is None else _checked_weights(fweights, "fweights", x.shape[1])
    a = None if aweights is None else _checked_weights(aweights, "aweights", x.shape[1])
    if a is not None:
        a = astype(_operand(aweights), np.float64)  # NumPy's dtype; recorded for tensors
    w = a if f is None else (f if a is None else f * a)
    avg = average(x, axis=1, weights=w)
    w_sum = None if w is None else sum_(w)
    if w is None:
        fact = x.shape[1] - ddof
    elif ddof == 0:
        fact = w_sum
    elif a is None:
        fact = w_sum - ddof
    else:
        fact = w_sum - ddof * sum_(w * a) / w_sum
    if _data(fact) <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
        fact = 0.0
    x = x - reshape(avg, (-1, 1))
    xt = matrix_transpose(x if w is None else x * w)
    c = dot(x, conj(xt)) * (1 / fact if isinstance(fact, Tensor) else np.true_divide(1, fact))
    return squeeze(c)


def _checked_weights(weights: Any, name: str, n: int) -> np.ndarray:
    """numpy.cov's checks of a weight vector, on its values; returns them as float."""
    values = np.asarray(_data(weights), dtype=float)
    if values.ndim != 1 or values.shape[0] != n:
        raise RuntimeError(f"cov: {name} must be 1-D with one weight per observation "
                           f"({n}); got shape {values.shape}")
    if np.any(values < 0):
        raise ValueError(f"cov: {name} cannot be negative")
    if name == "fweights" and not np.all(values == np.around(values)):
        raise TypeError("cov: fweights must be integer")
    return values


def corrcoef(x: Any, y: Any = None, rowvar: bool = True, *, dtype: Any = None) -> Any:
    """Pearson correlation coefficients (numpy.corrcoef), clipped to [-1, 1] as NumPy does
    (the gradient of a clipped entry is zero).

    Parameters
    ----------
    x : 1-D or 2-D array_like or Tensor
    y : array_like or Tensor, optional
    rowvar : bool
    dtype : dtype, optional

    Returns
    -------
    Tensor or ndarray
    """
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim != 2:
        return c / c
    d = sqrt(real(diagonal(c)))
    c = c / reshape(d, (-1, 1)) / reshape(d, (1, -1))
    if dtype_of(c).kind == "c":
        return clip(real(c), -1, 1) + 1j * clip(imag(c), -1, 1)
    return clip(c, -1, 1)


__all__ = ["where", "cross", "gradient", "rollaxis", "select", "nan_to_num", "real_if_close",
           "interp", "polyval", "cumulative_sum", "cumulative_prod", "meshgrid", "trapezoid",
           "vander", "diagflat", "ediff1d", "unstack", "median", "polyadd", "polysub",
           "polymul", "polyder", "polyint", "cov", "corrcoef"]
with_keyword_hints(globals(), __all__)
