"""Reductions, scans and sorting (NumPy names: ``axis`` an int, a tuple or None; ``keepdims``).

Gradient conventions worth knowing:

- ``max``/``min`` (``amax``/``amin``) split the gradient evenly among tied extremes, as
  ``torch.amax`` does; a NaN extreme takes the gradient of the NaN entries.
- ``prod`` and ``cumprod`` are exact with zeros in the input (no division by it).
- ``std`` of a slice with zero variance has gradient 0 there (a subgradient, as for
  ``abs`` at 0), not NaN.
- ``argmax argmin argsort nonzero all any`` carry no gradient: on tensors they return
  tensors that do not require grad.
"""

from __future__ import annotations

import builtins
import math
import warnings
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..core.backend import dtype_kind, implements, namespace, native_dtype
from ..core.lazy import is_lazy
from ..core.op import op
from ..core.tensor import Tensor
from .elementwise import (
    conj,
    equal,
    isclose,
    isnan,
    logical_and,
    logical_not,
    logical_or,
    real,
    where,
)
from .public_names import exported
from .shape import (
    _as_operand,
    _no_out,
    _normalize_axes,
    _values,
    astype,
    broadcast_to,
    concatenate,
    flip,
    getitem,
    moveaxis,
    reshape,
    take_along_axis,
    transpose,
)

ndarray = np.ndarray


def _count(shape: tuple, axis) -> int:
    """How many elements each reduced slice has."""
    return math.prod([shape[i] for i in _normalize_axes(axis, len(shape))])


def expand_reduced(g: Any, shape: tuple, axis: Any, keepdims: bool) -> Any:
    """Reshape a reduced result so it broadcasts against the input's ``shape``.

    Parameters
    ----------
    g : Tensor or array_like
        A result of reducing an array of ``shape`` over ``axis``.
    shape : tuple of int
    axis : None, int or tuple of int
    keepdims : bool
        Whether ``g`` kept the reduced axes (then it is returned as is).

    Returns
    -------
    Tensor or array
    """
    if keepdims:
        return g
    axes = _normalize_axes(axis, len(shape))
    return reshape(g, tuple(1 if i in axes else n for i, n in enumerate(shape)))


def _spread(g, a, axis, keepdims):
    """A reduced gradient broadcast back to the input's shape."""
    return broadcast_to(expand_reduced(g, a.shape, axis, keepdims), a.shape)


def _is_complex(x) -> bool:
    return dtype_kind(x.dtype) == "c"


def _conj_of(x):
    return conj(x) if _is_complex(x) else x


# ---- sums and means ------------------------------------------------------------------

def _sum(a, axis=None, dtype=None, out=None, keepdims=False):
    _no_out("sum", out)
    return np.sum(a, axis=axis, dtype=dtype, keepdims=keepdims)


sum = op(_sum, name="sum", save_args=False, save_ans=False, linear=(0,), batch="reduce",  # noqa: A001
         vjp=lambda g, ans, a, axis=None, dtype=None, out=None, keepdims=False:
         _spread(g, a, axis, keepdims))
sum.__doc__ = """Sum of elements over the given axes (numpy.sum).

Parameters
----------
a : Tensor or array_like
axis : None, int or tuple of int
    The axes to reduce (negative ones count from the end); all by default.
dtype : data-type, optional
    The accumulator and result dtype.
out : None
    Not supported (raises TypeError).
keepdims : bool
    Keep the reduced axes with length one.

Returns
-------
Tensor
"""


def _mean(a, axis=None, dtype=None, out=None, keepdims=False):
    _no_out("mean", out)
    if dtype is None and isinstance(a, np.ndarray) and a.dtype in _EXACT_MEAN:
        n = _count(a.shape, axis)
        if n:
            return np.sum(a, axis=axis, keepdims=keepdims) / n
    return np.mean(a, axis=axis, dtype=dtype, keepdims=keepdims)


# dtypes for which sum / n is what numpy.mean computes, bit for bit, only faster
_EXACT_MEAN = (np.dtype(np.float64), np.dtype(np.complex128))


mean = op(_mean, name="mean", save_args=False, save_ans=False, linear=(0,), batch="reduce",
          vjp=lambda g, ans, a, axis=None, dtype=None, out=None, keepdims=False:
          _spread(g, a, axis, keepdims) / builtins.max(_count(a.shape, axis), 1))
mean.__doc__ = """Arithmetic mean over the given axes (numpy.mean).

Parameters
----------
a : Tensor or array_like
axis : None, int or tuple of int
dtype : data-type, optional
out : None
    Not supported (raises TypeError).
keepdims : bool

Returns
-------
Tensor
    NaN (with NumPy's warning) for an empty slice.
"""


def nansum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
           keepdims: bool = False) -> Any:
    """Sum treating NaN as zero (numpy.nansum); NaN entries get gradient 0.

    Parameters
    ----------
    a : Tensor or array_like
    axis : None, int or tuple of int
    dtype : data-type, optional
    out : None
        Not supported (raises TypeError).
    keepdims : bool

    Returns
    -------
    Tensor
    """
    _no_out("nansum", out)
    a = _as_operand(a)
    if dtype_kind(a.dtype) in "fc":
        a = where(isnan(a), 0, a)
    return sum(a, axis=axis, dtype=dtype, keepdims=keepdims)


def nanmean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
            keepdims: bool = False) -> Any:
    """Mean ignoring NaN (numpy.nanmean); NaN entries get gradient 0.

    Parameters
    ----------
    a : Tensor or array_like
    axis : None, int or tuple of int
    dtype : data-type, optional
    out : None
        Not supported (raises TypeError).
    keepdims : bool

    Returns
    -------
    Tensor
        NaN (with a warning) for a slice of NaNs only.
    """
    _no_out("nanmean", out)
    a = _as_operand(a)
    if dtype_kind(a.dtype) not in "fc":
        return mean(a, axis=axis, dtype=dtype, keepdims=keepdims)
    counts = sum(logical_not(isnan(a)), axis=axis, keepdims=keepdims)
    total = nansum(a, axis=axis, dtype=dtype, keepdims=keepdims)
    # (a plain tensor is compared as a tensor: a compile recording guards that read)
    if np.any((counts if type(counts) is Tensor else _values(counts)) == 0):
        warnings.warn("nanmean: mean of empty slice", RuntimeWarning, stacklevel=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return total / astype(counts, np.finfo(total.dtype).dtype)


def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False, *,
            keepdims: bool = False) -> Any:
    """Weighted average (numpy.average), differentiable in ``a`` and ``weights``.

    Parameters
    ----------
    a : Tensor or array_like
    axis : None, int or tuple of int
    weights : Tensor or array_like, optional
        Same shape as ``a``, or 1-D along a single ``axis``.
    returned : bool
        Also return the sum of the weights.
    keepdims : bool

    Returns
    -------
    Tensor, or (Tensor, Tensor) with ``returned``
    """
    a = _as_operand(a)
    if weights is None:
        avg = mean(a, axis=axis, keepdims=keepdims)
        if not returned:
            return avg
        scale = np.asarray(_count(a.shape, axis), dtype=avg.dtype)
        return avg, broadcast_to(scale, avg.shape)
    w = _as_operand(weights)
    if w.shape != a.shape:
        if axis is None or not isinstance(axis, (int, np.integer)):
            raise TypeError("average: axis must be an int when the shapes of a and weights "
                            "differ")
        if w.ndim != 1 or w.shape[0] != a.shape[axis]:
            raise ValueError(f"average: weights of shape {w.shape} do not match a of shape "
                             f"{a.shape} along axis {axis}")
        axis = normalize_axis_index(axis, a.ndim)
        w = reshape(w, tuple(-1 if i == axis else 1 for i in range(a.ndim)))
    scale = sum(broadcast_to(w, np.broadcast_shapes(w.shape, a.shape)), axis=axis,
                keepdims=keepdims)
    if np.any(_values(scale) == 0):
        raise ZeroDivisionError("average: weights sum to zero, can't be normalized")
    avg = sum(a * w, axis=axis, keepdims=keepdims) / scale
    if not returned:
        return avg
    return avg, broadcast_to(scale, avg.shape)


def _var_parts(a, axis, ddof):
    """Deviations from the mean and the divisor ``n - ddof`` (NaN when it is not positive,
    like NumPy's result)."""
    d = a - mean(a, axis=axis, keepdims=True)
    dof = _count(a.shape, axis) - ddof
    return d, (dof if dof > 0 else np.nan)


def _stat(name: str, fn):
    def forward(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *,
                correction=None):
        _no_out(name, out)
        if correction is not None:
            ddof = correction
        return fn(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)

    return forward


def _var_vjp(g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *,
             correction=None):
    d, dof = _var_parts(a, axis, ddof if correction is None else correction)
    return expand_reduced(g, a.shape, axis, keepdims) * d * (2 / dof)


def _var_jvp(t, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *,
             correction=None):
    d, dof = _var_parts(a, axis, ddof if correction is None else correction)
    dt = real(_conj_of(d) * t) if _is_complex(d) or _is_complex(t) else d * t
    return sum(dt, axis=axis, keepdims=keepdims) * (2 / dof)


var = op(_stat("var", np.var), name="var", save_ans=False, vjp=_var_vjp, jvp=_var_jvp,
         batch="reduce")
var.__doc__ = """Variance over the given axes (numpy.var); real for complex input.

Parameters
----------
a : Tensor or array_like
axis : None, int or tuple of int
dtype : data-type, optional
out : None
    Not supported (raises TypeError).
ddof : int
    The divisor is ``n - ddof``.
keepdims : bool
correction : int, optional
    The array-API name of ``ddof``.

Returns
-------
Tensor
"""


def _std_scale(ans, a, axis, keepdims):
    """1 / std broadcast against the input, and 0 where std is 0 (the chosen subgradient)."""
    s = expand_reduced(ans, a.shape, axis, keepdims)
    zero = s == 0
    return where(zero, 0, 1 / where(zero, 1, s))


def _std_vjp(g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *,
             correction=None):
    d, dof = _var_parts(a, axis, ddof if correction is None else correction)
    g = expand_reduced(g, a.shape, axis, keepdims)
    return g * d * _std_scale(ans, a, axis, keepdims) / dof


def _std_jvp(t, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *,
             correction=None):
    d, dof = _var_parts(a, axis, ddof if correction is None else correction)
    dt = real(_conj_of(d) * t) if _is_complex(d) or _is_complex(t) else d * t
    dt = dt * _std_scale(ans, a, axis, keepdims)
    return sum(dt, axis=axis, keepdims=keepdims) / dof


std = op(_stat("std", np.std), name="std", vjp=_std_vjp, jvp=_std_jvp, batch="reduce")
std.__doc__ = """Standard deviation over the given axes (numpy.std); real for complex input.

Where a slice has zero variance (a constant input) the gradient is 0, a subgradient of
the cone ``std`` makes there; the mathematical derivative does not exist.

Parameters
----------
a : Tensor or array_like
axis : None, int or tuple of int
dtype : data-type, optional
out : None
    Not supported (raises TypeError).
ddof : int
    The divisor is ``n - ddof``.
keepdims : bool
correction : int, optional
    The array-API name of ``ddof``.

Returns
-------
Tensor
"""


# ---- products --------------------------------------------------------------------------

def _has_zero(x) -> bool:
    v = _values(x)
    return is_lazy(v) or not np.all(v)  # (lazy: not looked at; the branch right for both)


def _exclusive_cumprod(x):
    """Products of the entries before each position along the last axis (1 at the start)."""
    ones = namespace(_values(x)).ones(x.shape[:-1] + (1,), dtype=x.dtype)
    return concatenate([ones, cumprod(getitem(x, (Ellipsis, slice(None, -1))), axis=-1)],
                       axis=-1)


def _prod_others(a, axis, ans, keepdims):
    """For each entry, the product of the other entries of its slice (no division by it
    when the input has zeros)."""
    if not _has_zero(a):
        return expand_reduced(ans, a.shape, axis, keepdims) / a
    axes = _normalize_axes(axis, a.ndim)
    rest = tuple(i for i in range(a.ndim) if i not in axes)
    x = transpose(a, rest + axes)
    moved = x.shape
    x = reshape(x, moved[:len(rest)] + (-1,))
    others = _exclusive_cumprod(x) * flip(_exclusive_cumprod(flip(x, -1)), -1)
    return transpose(reshape(others, moved), tuple(np.argsort(rest + axes)))


def _prod(a, axis=None, dtype=None, out=None, keepdims=False):
    _no_out("prod", out)
    return np.prod(a, axis=axis, dtype=dtype, keepdims=keepdims)


def _prod_vjp(g, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    if a.size == 0:
        return np.zeros(a.shape, dtype=g.dtype)
    return (expand_reduced(g, a.shape, axis, keepdims)
            * _conj_of(_prod_others(a, axis, ans, keepdims)))


def _prod_jvp(t, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    if a.size == 0:
        return ans * 0
    return sum(t * _prod_others(a, axis, ans, keepdims), axis=axis, keepdims=keepdims)


prod = op(_prod, name="prod", vjp=_prod_vjp, jvp=_prod_jvp, batch="reduce")
prod.__doc__ = """Product of elements over the given axes (numpy.prod).

The gradient is exact with zeros in the input: each entry gets the product of the others.

Parameters
----------
a : Tensor or array_like
axis : None, int or tuple of int
dtype : data-type, optional
out : None
    Not supported (raises TypeError).
keepdims : bool

Returns
-------
Tensor
"""


# ---- scans -----------------------------------------------------------------------------

def _scan_axis(a, axis):
    """The axis a scan runs along; None means the flattened input."""
    return 0 if axis is None else normalize_axis_index(axis, a.ndim)


def _reverse_cumsum(g, axis):
    return flip(cumsum(flip(g, axis), axis=axis), axis)


def _cumsum(a, axis=None, dtype=None, out=None):
    _no_out("cumsum", out)
    return np.cumsum(a, axis=axis, dtype=dtype)


def _cumsum_vjp(g, ans, a, axis=None, dtype=None, out=None):
    return reshape(_reverse_cumsum(g, _scan_axis(a, axis)), a.shape)


cumsum = op(_cumsum, name="cumsum", save_args=False, save_ans=False, linear=(0,),
            vjp=_cumsum_vjp, batch="scan")
cumsum.__doc__ = """Cumulative sum along an axis (numpy.cumsum).

Parameters
----------
a : Tensor or array_like
axis : int, optional
    Without it the input is flattened first.
dtype : data-type, optional
out : None
    Not supported (raises TypeError).

Returns
-------
Tensor
"""


def _cumprod(a, axis=None, dtype=None, out=None):
    _no_out("cumprod", out)
    return np.cumprod(a, axis=axis, dtype=dtype)


def _replaced_scans(x):
    """For x of shape (..., n): [..., i, k] = prod_{j <= k, j != i} x_j, the scans of the
    n copies of x with x_i replaced by 1 (n^2 work; used only when x has zeros)."""
    n = x.shape[-1]
    copies = where(namespace(_values(x)).eye(n, dtype=bool), 1, reshape(x, x.shape[:-1] + (1, n)))
    return cumprod(copies, axis=-1)


def _upper(like, n):
    """The mask ``k >= i`` of shape ``(n, n)``, of the library of ``like``'s values."""
    xp = namespace(_values(like))
    return xp.triu(xp.ones((n, n), dtype=xp.bool))


def _cumprod_vjp(g, ans, a, axis=None, dtype=None, out=None):
    shape = a.shape
    if axis is None:
        a = reshape(a, (-1,))
    axis = _scan_axis(a, axis)
    if not _has_zero(a):
        return reshape(_reverse_cumsum(g * _conj_of(ans), axis) / _conj_of(a), shape)
    # grad_i = sum_{k >= i} g_k prod_{j <= k, j != i} a_j
    scans = _replaced_scans(moveaxis(a, axis, -1))
    gm = moveaxis(g, axis, -1)
    n = gm.shape[-1]
    later = _upper(gm, n)  # [i, k]: k >= i
    terms = where(later, reshape(gm, gm.shape[:-1] + (1, n)) * _conj_of(scans), 0)
    return reshape(moveaxis(sum(terms, axis=-1), -1, axis), shape)


def _cumprod_jvp(t, ans, a, axis=None, dtype=None, out=None):
    if axis is None:
        a, t = reshape(a, (-1,)), reshape(t, (-1,))
    axis = _scan_axis(a, axis)
    if not _has_zero(a):
        return ans * cumsum(t / a, axis=axis)
    # dy_k = sum_{i <= k} t_i prod_{j <= k, j != i} a_j
    scans = _replaced_scans(moveaxis(a, axis, -1))
    tm = moveaxis(t, axis, -1)
    n = tm.shape[-1]
    later = _upper(tm, n)
    terms = where(later, reshape(tm, tm.shape + (1,)) * scans, 0)
    return moveaxis(sum(terms, axis=-2), -1, axis)


cumprod = op(_cumprod, name="cumprod", vjp=_cumprod_vjp, jvp=_cumprod_jvp, batch="scan")
cumprod.__doc__ = """Cumulative product along an axis (numpy.cumprod).

The gradient is exact with zeros in the input (it then costs n^2 per slice).

Parameters
----------
a : Tensor or array_like
axis : int, optional
    Without it the input is flattened first.
dtype : data-type, optional
out : None
    Not supported (raises TypeError).

Returns
-------
Tensor
"""


# ---- extremes ------------------------------------------------------------------------

def _extreme(name: str, fn):
    def forward(a, axis=None, out=None, keepdims=False):
        _no_out(name, out)
        return fn(a, axis=axis, keepdims=keepdims)

    def share(ans, a, axis, keepdims):
        """The tie-splitting weights: 1/count at each extreme of a slice, 0 elsewhere."""
        if _is_complex(a):
            raise TypeError(f"{name}: the gradient is not defined for complex inputs "
                            f"(NumPy orders complex numbers lexicographically)")
        m = expand_reduced(ans, a.shape, axis, keepdims)
        hit = a == m
        v = _values(ans)
        xp = namespace(v)  # (NumPy, or the library of another's array: no conversion)
        if is_lazy(v) or xp.any(xp.isnan(v)):
            hit = hit | (isnan(a) & isnan(m))
        count = sum(hit, axis=axis, keepdims=True)
        return where(hit, 1 / astype(count, a.dtype), 0)

    def vjp(g, ans, a, axis=None, out=None, keepdims=False):
        return expand_reduced(g, a.shape, axis, keepdims) * share(ans, a, axis, keepdims)

    def jvp(t, ans, a, axis=None, out=None, keepdims=False):
        return sum(t * share(ans, a, axis, keepdims), axis=axis, keepdims=keepdims)

    spec = op(forward, name=name, vjp=vjp, jvp=jvp, selects=True, batch="reduce")
    spec.__doc__ = f"""The {'largest' if name == 'max' else 'smallest'} element over the \
given axes (numpy.{name}, also ``a{name}``).

    Ties split the gradient evenly among the tied entries (like ``torch.a{name}``); a NaN
    result gives its gradient to the NaN entries. Real inputs only for the gradient.

    Parameters
    ----------
    a : Tensor or array_like
    axis : None, int or tuple of int
    out : None
        Not supported (raises TypeError).
    keepdims : bool

    Returns
    -------
    Tensor
    """
    return spec


max = _extreme("max", np.max)  # noqa: A001
min = _extreme("min", np.min)  # noqa: A001
amax = max
amin = min


def ptp(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    """Range of values, maximum minus minimum (numpy.ptp).

    Parameters
    ----------
    a : Tensor or array_like
    axis : None, int or tuple of int
    out : None
        Not supported (raises TypeError).
    keepdims : bool

    Returns
    -------
    Tensor
    """
    _no_out("ptp", out)
    return max(a, axis=axis, keepdims=keepdims) - min(a, axis=axis, keepdims=keepdims)


# ---- sorting -------------------------------------------------------------------------

def sort(a: Any, axis: int | None = -1, kind: str | None = None, order: Any = None, *,
         stable: bool | None = None) -> Any:
    """A sorted copy (numpy.sort); the gradient goes back through the permutation.

    Parameters
    ----------
    a : Tensor or array_like
    axis : int or None
        None sorts the flattened input.
    kind : str, optional
    order : None
        Structured arrays are not supported.
    stable : bool, optional

    Returns
    -------
    Tensor
    """
    if not isinstance(a, Tensor):
        return np.sort(a, axis=axis, kind=kind, order=order, stable=stable)
    if axis is None:
        a, axis = reshape(a, (-1,)), -1
    # (the permutation is an op's result: a compiled replay sorts the new values)
    perm = argsort(a, axis=axis, kind=kind, order=order, stable=stable)
    return take_along_axis(a, perm, axis=axis)


def partition(a: Any, kth: Any, axis: int | None = -1, kind: str = "introselect",
              order: Any = None) -> Any:
    """A copy with the ``kth`` element(s) where a full sort would put them, smaller ones
    before and larger ones after (numpy.partition); the gradient goes back through the
    same permutation (ties are broken as numpy.argpartition breaks them).

    Parameters
    ----------
    a : Tensor or array_like
    kth : int or sequence of int
    axis : int or None
        None partitions the flattened input.
    kind : str
    order : None
        Structured arrays are not supported.

    Returns
    -------
    Tensor
    """
    if not isinstance(a, Tensor):
        return np.partition(a, kth, axis=axis, kind=kind, order=order)
    if axis is None:
        a, axis = reshape(a, (-1,)), -1
    perm = argpartition(a, kth, axis=axis, kind=kind, order=order)  # (an op: also vmap's)
    return take_along_axis(a, perm, axis=axis)


# ---- without gradient ------------------------------------------------------------------

def _nondiff(fn, name: str, doc: str, batch: str):
    spec = op(fn, name=name, batch=batch)
    spec.__doc__ = doc
    return spec


def _argext(fn, name):
    def forward(a, axis=None, out=None, *, keepdims=False):
        _no_out(name, out)
        return fn(a, axis=axis, keepdims=keepdims)

    return forward


argmax = _nondiff(_argext(np.argmax, "argmax"), "argmax", """Indices of the maxima (numpy.argmax).

Parameters
----------
a : Tensor or array_like
axis : int, optional
    Without it the index is into the flattened input.
out : None
    Not supported (raises TypeError).
keepdims : bool

Returns
-------
Tensor
    Integer, without gradient.
""", "scan")

argmin = _nondiff(_argext(np.argmin, "argmin"), "argmin", """Indices of the minima (numpy.argmin).

Parameters
----------
a : Tensor or array_like
axis : int, optional
    Without it the index is into the flattened input.
out : None
    Not supported (raises TypeError).
keepdims : bool

Returns
-------
Tensor
    Integer, without gradient.
""", "scan")

argsort = _nondiff(lambda a, axis=-1, kind=None, order=None, *, stable=None: np.argsort(
    a, axis=axis, kind=kind, order=order, stable=stable), "argsort",
    """Indices that sort the array (numpy.argsort).

Parameters
----------
a : Tensor or array_like
axis : int or None
kind : str, optional
order : None
stable : bool, optional

Returns
-------
Tensor
    Integer, without gradient.
""", "scan")


argpartition = _nondiff(
    lambda a, kth, axis=-1, kind="introselect", order=None: np.argpartition(
        a, kth, axis=axis, kind=kind, order=order), "argpartition",
    """Indices that partition the array (numpy.argpartition).

Parameters
----------
a : Tensor or array_like
kth : int or sequence of int
axis : int or None
kind : str
order : None

Returns
-------
Tensor
    Integer, without gradient.
""", "scan")


def _logical(fn, name):
    def forward(a, axis=None, out=None, keepdims=False):
        _no_out(name, out)
        return fn(a, axis=axis, keepdims=keepdims)

    return forward


all = _nondiff(_logical(np.all, "all"), "all", """Whether all elements are true (numpy.all).

Parameters
----------
a : Tensor or array_like
axis : None, int or tuple of int
out : None
    Not supported (raises TypeError).
keepdims : bool

Returns
-------
Tensor
    Boolean, without gradient.
""", "reduce")

any = _nondiff(_logical(np.any, "any"), "any", """Whether any element is true (numpy.any).

Parameters
----------
a : Tensor or array_like
axis : None, int or tuple of int
out : None
    Not supported (raises TypeError).
keepdims : bool

Returns
-------
Tensor
    Boolean, without gradient.
""", "reduce")

def allclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """Whether two arrays are equal within a tolerance (numpy.allclose):
    ``|a - b| <= atol + rtol * |b|`` everywhere, after broadcasting.

    Parameters
    ----------
    a : Tensor or array_like
    b : Tensor or array_like
    rtol : float, optional
    atol : float, optional
    equal_nan : bool
        Whether NaNs in the same places compare equal.

    Returns
    -------
    bool
        A Python bool, read from the values (so a compiled function guards it).
    """
    return bool(all(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))


def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> bool:
    """Whether two arrays have the same shape and elements (numpy.array_equal).

    Parameters
    ----------
    a1 : Tensor or array_like
    a2 : Tensor or array_like
    equal_nan : bool
        Whether NaNs in the same places compare equal.

    Returns
    -------
    bool
        A Python bool, read from the values (so a compiled function guards it).
    """
    if np.shape(a1) != np.shape(a2):
        return False
    same = equal(a1, a2)
    if equal_nan:
        same = logical_or(same, logical_and(isnan(a1), isnan(a2)))
    return bool(all(same))


count_nonzero = _nondiff(lambda a, axis=None, *, keepdims=False: np.count_nonzero(
    a, axis=axis, keepdims=keepdims), "count_nonzero",
    """Number of non-zero elements (numpy.count_nonzero).

Parameters
----------
a : Tensor or array_like
axis : None, int or tuple of int
keepdims : bool

Returns
-------
Tensor
    Integer, without gradient.
""", "reduce")


def nonzero(a: Any) -> tuple:
    """Indices of the non-zero elements, one array per axis (numpy.nonzero).

    Parameters
    ----------
    a : Tensor or array_like

    Returns
    -------
    tuple of Tensor
        Integer tensors without gradient (arrays for an array input).
    """
    if not isinstance(a, Tensor) or a.ndim == 0:
        return np.nonzero(a if not isinstance(a, Tensor) else a.data)
    rows = argwhere(a)  # (the indices are an op's result, so a compiled replay has them)
    return tuple(getitem(rows, (slice(None), d)) for d in range(a.ndim))


def argwhere(a: Any) -> Any:
    """Indices of the non-zero elements, one row per element (numpy.argwhere).

    Parameters
    ----------
    a : Tensor or array_like

    Returns
    -------
    Tensor
        Integer, shape ``(count, a.ndim)``, without gradient.
    """
    return _argwhere(a)


_argwhere = _nondiff(np.argwhere, "argwhere", "", "per_example")


def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None) -> Any:
    """Insertion indices that keep ``a`` sorted (numpy.searchsorted); no gradient.

    Parameters
    ----------
    a : Tensor or array_like
        1-D, sorted ascending (or ordered by ``sorter``).
    v : Tensor or array_like
    side : {'left', 'right'}
    sorter : array_like of int, optional

    Returns
    -------
    Tensor
        Integer, without gradient (an array for array inputs).
    """
    if not any(isinstance(x, Tensor) for x in (a, v, sorter)):
        return np.searchsorted(a, v, side=side, sorter=sorter)
    return _searchsorted(a, v, side, sorter)


def _searchsorted_batch(dims, a, v, side="left", sorter=None):
    if dims[0] is None and dims[3:] in ((), (None,)):  # one sorted array: v elementwise
        return _searchsorted(a, v, side, sorter), dims[1]
    return NotImplemented


_searchsorted = _nondiff(lambda a, v, side="left", sorter=None: np.asarray(
    np.searchsorted(a, v, side=side, sorter=sorter)), "searchsorted", "", _searchsorted_batch)


# ---- the bodies on other libraries' arrays, in their array API namespace xp (yaad.backend) --

def _axes(axis):
    return tuple(axis) if isinstance(axis, list) else axis


@implements("sum")
def _sum_xp(xp, a, axis=None, dtype=None, out=None, keepdims=False):
    _no_out("sum", out)
    if dtype_kind(a.dtype) == "b":  # (NumPy counts booleans as integers)
        a = xp.astype(a, xp.int64)
    return xp.sum(a, axis=_axes(axis), dtype=native_dtype(xp, dtype), keepdims=keepdims)


@implements("prod")
def _prod_xp(xp, a, axis=None, dtype=None, out=None, keepdims=False):
    _no_out("prod", out)
    return xp.prod(a, axis=_axes(axis), dtype=native_dtype(xp, dtype), keepdims=keepdims)


@implements("mean")
def _mean_xp(xp, a, axis=None, dtype=None, out=None, keepdims=False):
    _no_out("mean", out)
    if dtype is not None:
        a = xp.astype(a, native_dtype(xp, dtype))
    return xp.mean(a, axis=_axes(axis), keepdims=keepdims)


def _extreme_xp(name):
    def forward(xp, a, axis=None, out=None, keepdims=False):
        _no_out(name, out)
        return getattr(xp, name)(a, axis=_axes(axis), keepdims=keepdims)

    implements(name)(forward)


_extreme_xp("max")
_extreme_xp("min")


def _stat_xp(name):
    def forward(xp, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *,
                correction=None):
        _no_out(name, out)
        if dtype is not None:
            a = xp.astype(a, native_dtype(xp, dtype))
        return getattr(xp, name)(a, axis=_axes(axis), keepdims=keepdims,
                                 correction=ddof if correction is None else correction)

    implements(name)(forward)


_stat_xp("std")
_stat_xp("var")


@implements("cumsum")
def _cumsum_xp(xp, a, axis=None, dtype=None, out=None):
    _no_out("cumsum", out)
    if axis is None:
        a, axis = xp.reshape(a, (-1,)), 0
    return xp.cumulative_sum(a, axis=axis, dtype=native_dtype(xp, dtype))


__all__ = exported(globals())
