"""Softmax, log-softmax and logsumexp, with ``scipy.special``'s names and signatures.

All three shift by the maximum first, so large inputs do not overflow. ``-inf`` entries
are exact zeros of the weights: they get a zero gradient. A slice whose entries are all
``-inf`` has ``logsumexp`` equal to ``-inf`` and a zero gradient (no entry contributes;
the weights ``exp(a - logsumexp)`` have no limit there, and zero keeps the gradients of
the other slices usable). Complex inputs are treated as holomorphic functions
(principal logarithm), with PyTorch's convention for the gradient.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from ..core.backend import dtype_kind, implements, is_complex
from ..core.op import op
from ..modes.batched_values import example_shape, size_of
from .elementwise import conj, exp, imag, real, sign, where
from .public_names import exported
from .reductions import expand_reduced
from .reductions import sum as _sum
from .shape import aligned, broadcast_to, front


def _c(x):
    kind = getattr(x.dtype, "kind", None)  # (NumPy's, without a call on its path)
    return conj(x) if (kind if kind is not None else dtype_kind(x.dtype)) == "c" else x


def _array(x):
    """``x`` itself when it is an array; a list or a scalar made into one."""
    return x if hasattr(x, "dtype") and hasattr(x, "sum") else np.asarray(x)


def _shift(x, axis):
    """The maximum over ``axis`` (of the real part), kept dims; 0 where not finite."""
    # Array methods rather than np.max/np.sum: the same result without NumPy's dispatch
    # overhead (3 us of a 12 us log_softmax on a 64x10 array).
    m = (x.real if x.dtype.kind == "c" else x).max(axis=axis, keepdims=True, initial=-np.inf)
    return np.where(np.isfinite(m), m, 0)


# ---- softmax, log_softmax ------------------------------------------------------------


def _softmax(x, axis=None):
    x = _array(x)
    e = np.exp(x - _shift(x, axis))
    return e / e.sum(axis=axis, keepdims=True)


def _softmax_vjp(g, ans, x, axis=None):
    s = _c(ans)
    return s * (g - _sum(g * s, axis=axis, keepdims=True))


def _softmax_jvp(t, ans, x, axis=None):
    return ans * (t - _sum(t * ans, axis=axis, keepdims=True))


softmax = op(_softmax, name="softmax", save_args=False, vjp=_softmax_vjp, jvp=_softmax_jvp,
             batch="reduce")
softmax.__doc__ = """Softmax, ``exp(x) / sum(exp(x))`` over ``axis`` (scipy.special.softmax).

Parameters
----------
x : Tensor or array_like
    Real or complex.
axis : int or tuple of int, optional
    The axes to normalise over; None (the default): all of them, as SciPy does.

Returns
-------
Tensor
    Same shape and dtype as ``x``; computed after subtracting the maximum, so large
    inputs do not overflow.
"""


def _log_softmax(x, axis=None):
    x = _array(x)
    y = x - _shift(x, axis)
    return y - np.log(np.exp(y).sum(axis=axis, keepdims=True))


def _log_softmax_vjp(g, ans, x, axis=None):
    return g - _c(exp(ans)) * _sum(g, axis=axis, keepdims=True)


def _log_softmax_jvp(t, ans, x, axis=None):
    return t - _sum(exp(ans) * t, axis=axis, keepdims=True)


log_softmax = op(_log_softmax, name="log_softmax", save_args=False, vjp=_log_softmax_vjp,
                 jvp=_log_softmax_jvp, batch="reduce")
log_softmax.__doc__ = """Logarithm of the softmax over ``axis`` (scipy.special.log_softmax).

Parameters
----------
x : Tensor or array_like
    Real or complex.
axis : int or tuple of int, optional
    The axes to normalise over; None (the default): all of them, as SciPy does.

Returns
-------
Tensor
    ``x - logsumexp(x, axis, keepdims=True)``, computed stably; same shape and dtype as
    ``x``.
"""


# ---- logsumexp -----------------------------------------------------------------------


def _logsumexp(a, b, axis, keepdims):
    a = _array(a)
    m = _shift(a, axis)
    e = np.exp(a - m)
    if b is not None:
        e = b * e
    s = e.sum(axis=axis, keepdims=keepdims)
    if b is not None and s.dtype.kind != "c":
        s = np.abs(s)  # the sign is returned separately (see logsumexp)
    with np.errstate(divide="ignore"):
        return np.log(s) + m.reshape(s.shape)


def _lse_derivatives(ans, a, b, axis, keepdims):
    """d logsumexp / da and d logsumexp / db, of the broadcast shape of a and b."""
    shape = a.shape if b is None else np.broadcast_shapes(a.shape, b.shape)
    lse = expand_reduced(ans, shape, axis, keepdims)
    # A slice of -inf: exp(a - inf) = 0 there, instead of exp(-inf - -inf) = nan.
    e = exp(a - where(real(lse) == -np.inf, np.inf, lse))
    if b is None:
        return e, None
    if dtype_kind(e.dtype) == "c" or dtype_kind(getattr(b, "dtype", np.dtype(float))) == "c":
        return b * e, e
    # For real inputs the result is log|s|; its derivatives carry the sign of s.
    sgn = sign(_sum(b * e, axis=axis, keepdims=True))
    return b * e * sgn, e * sgn


def _lse_vjp(k):
    def vjp(g, ans, a, b, axis, keepdims):
        d = _lse_derivatives(ans, a, b, axis, keepdims)[k]
        return expand_reduced(g, d.shape, axis, keepdims) * _c(d)

    return vjp


def _lse_jvp(k):
    def jvp(t, ans, a, b, axis, keepdims):
        d = _lse_derivatives(ans, a, b, axis, keepdims)[k]
        return _sum(t * d, axis=axis, keepdims=keepdims)

    return jvp


def _lse_batch(dims, a, b, axis, keepdims):
    nd = len(np.broadcast_shapes(*(example_shape(x, d) for x, d in zip((a, b), dims))))
    a, b = aligned((a, b), dims, nd)
    return _lse(a, b, _shifted_axes(axis, nd), keepdims), 0


def _shifted_axes(axis, nd):
    """The ``axis`` of an example (None: all) as axes of the batch (batch axis in front)."""
    if axis is None:
        return tuple(range(1, nd + 1))
    if isinstance(axis, (int, np.integer)):
        return normalize_axis_index(axis, nd) + 1
    return tuple(i + 1 for i in normalize_axis_tuple(axis, nd))


_lse = op(_logsumexp, name="logsumexp", vjp=(_lse_vjp(0), _lse_vjp(1)),
          jvp=(_lse_jvp(0), _lse_jvp(1)), batch=_lse_batch)


def logsumexp(a: Any, axis: Any = None, b: Any = None, keepdims: bool = False,
              return_sign: bool = False) -> Any:
    """Logarithm of the sum of exponentials, ``log(sum(b * exp(a)))`` (scipy.special).

    Parameters
    ----------
    a : Tensor or array_like
        Real or complex.
    axis : int or tuple of int, optional
        The axes to sum over; None (the default): all.
    b : Tensor or array_like, optional
        Weights, broadcast against ``a`` (differentiable too); may be negative.
    keepdims : bool
        Keep the summed axes with length one.
    return_sign : bool
        Also return the sign of the sum, and the logarithm of its absolute value (for
        complex inputs: the unit complex number ``s / |s|``).

    Returns
    -------
    Tensor, or (Tensor, Tensor) with ``return_sign``
        Computed after subtracting the maximum, so large inputs do not overflow. A
        ``-inf`` entry contributes nothing and gets a zero gradient; a slice of only
        ``-inf`` gives ``-inf`` with a zero gradient. For real inputs a negative sum gives
        NaN unless ``return_sign`` is set, as in SciPy.
    """
    out = _lse(a, b, axis, keepdims)
    if dtype_kind(out.dtype) == "c":
        if not return_sign:
            return out
        return real(out), exp(1j * imag(out))
    if b is None and not return_sign:
        return out
    sgn = _sign_of_sum(a, b, out, axis, keepdims)
    if not return_sign:
        return where(sgn < 0, np.nan, out)
    return out, sgn


def _sign_of_sum_forward(a, b, out, axis, keepdims) -> np.ndarray:
    """The sign of ``sum(b * exp(a))`` (0 where it is 0), carrying no gradient."""
    if b is None:
        return np.where(out == -np.inf, 0, 1).astype(out.dtype)
    a = np.asarray(a)
    b = np.asarray(b)
    ndim = len(np.broadcast_shapes(a.shape, b.shape))
    lse = out if keepdims else np.expand_dims(
        out, tuple(range(ndim)) if axis is None else axis)
    with np.errstate(invalid="ignore"):
        s = np.sum(b * np.exp(a - np.where(lse == -np.inf, np.inf, lse)), axis=axis,
                   keepdims=keepdims)
    return np.sign(s).astype(out.dtype)


# (an op: a compiled replay computes the sign of the new sum)
def _sign_batch(dims, a, b, out, axis, keepdims):
    nd = len(np.broadcast_shapes(*(example_shape(x, d) for x, d in zip((a, b), dims))))
    a, b = aligned((a, b), dims[:2], nd)
    n = size_of((a, b, out), dims[:3])
    out = front(out, dims[2]) if dims[2] is not None else broadcast_to(out, (n,) + np.shape(out))
    return _sign_of_sum(a, b, out, _shifted_axes(axis, nd), keepdims), 0


_sign_of_sum = op(_sign_of_sum_forward, name="logsumexp_sign", batch=_sign_batch)


__all__ = exported(globals())


# ---- the bodies on other libraries' arrays, in their array API namespace xp (yaad.backend) --

def _shift_xp(xp, x, axis):
    """:func:`_shift` with the array API: the maximum of the real part, 0 where not finite."""
    m = xp.max(xp.real(x) if is_complex(x) else x, axis=axis, keepdims=True)
    return xp.where(xp.isfinite(m), m, xp.zeros_like(m))


@implements("softmax")
def _softmax_xp(xp, x, axis=None):
    e = xp.exp(x - _shift_xp(xp, x, axis))
    return e / xp.sum(e, axis=axis, keepdims=True)


@implements("log_softmax")
def _log_softmax_xp(xp, x, axis=None):
    y = x - _shift_xp(xp, x, axis)
    return y - xp.log(xp.sum(xp.exp(y), axis=axis, keepdims=True))


@implements("logsumexp")
def _logsumexp_xp(xp, a, b, axis, keepdims):
    m = _shift_xp(xp, a, axis)
    e = xp.exp(a - m)
    if b is not None:
        e = b * e
    s = xp.sum(e, axis=axis, keepdims=keepdims)
    if b is not None and not is_complex(s):
        s = xp.abs(s)
    return xp.log(s) + xp.reshape(m, s.shape)


@implements("logsumexp_sign")
def _sign_of_sum_xp(xp, a, b, out, axis, keepdims):
    zero, one = xp.zeros_like(out), xp.ones_like(out)
    if b is None:
        return xp.where(out == -xp.inf, zero, one)
    lse = out if keepdims else xp.reshape(out, _kept_shape(a, b, axis))
    s = xp.sum(b * xp.exp(a - xp.where(lse == -xp.inf, xp.inf, lse)), axis=axis,
               keepdims=keepdims)
    return xp.astype(xp.sign(s), out.dtype)


def _kept_shape(a, b, axis):
    shape = np.broadcast_shapes(a.shape, b.shape)
    axes = range(len(shape)) if axis is None else normalize_axis_tuple(axis, len(shape))
    return tuple(1 if k in axes else n for k, n in enumerate(shape))
