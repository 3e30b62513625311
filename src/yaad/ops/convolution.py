"""Convolution and correlation: ``numpy.convolve`` and ``numpy.correlate`` (1-D),
``scipy.signal.convolve`` and ``scipy.signal.correlate`` (n-D), and ``fftconvolve``.

Every mode's output is a window of the full output. For the full convolution
``y = a * v`` the VJPs are correlations of the cotangent, zero-padded from the window
to the full output (``G``), with the other input (``correlate`` conjugates its second
argument, as NumPy and SciPy do, which is PyTorch's complex convention)::

    grad_a = correlate(G, v, "valid")        grad_v = correlate(G, a, "valid")

and since ``correlate(a, v) = a * conj(flip(v))``::

    grad_a = convolve(G, v, "valid")         grad_v = conj(flip(correlate(G, a, "valid")))

Both are real-linear in each input (``correlate`` plugs the tangent of ``v`` into the
conjugated slot, which is right), so the JVP is the op applied to the tangent. The rules
use the n-D SciPy ops, so second derivatives come from the same two rules.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import scipy  # (scipy.signal is imported where first used: it takes 0.4 s)
from numpy.lib.array_utils import normalize_axis_tuple

from ..core.op import op
from ..core.presentation import dtype_of, shape_of
from ..modes.batched_values import example_shape
from .elementwise import conj
from .products import einsum
from .shape import expand_dims, flip, front, getitem, pad

_MODES = ("full", "valid", "same")


def _check_mode(name: str, mode: Any) -> None:
    if mode not in _MODES:
        raise ValueError(f"{name}: mode must be 'full', 'valid' or 'same', got {mode!r}")


def _numpy_window(name: str, n: int, m: int, mode: str) -> tuple:
    """(start, length) of NumPy's ``mode`` output inside the full one."""
    lo, hi = min(n, m), max(n, m)
    if mode == "full":
        return 0, n + m - 1
    if mode == "valid":
        return lo - 1, hi - lo + 1
    start = (lo - 1) // 2
    if name == "correlate" and n < m:  # NumPy correlates the swapped inputs, reversed
        start = lo - 1 - start
    return start, hi


def _scipy_window(n: int, m: int, mode: str) -> tuple:
    """(start, length) of SciPy's ``mode`` output inside the full one, along one axis."""
    if mode == "full":
        return 0, n + m - 1
    if mode == "valid":
        return min(n, m) - 1, abs(n - m) + 1
    return (m - 1) // 2, n


def _embed(g: Any, windows: Sequence[tuple], full: Sequence[int]) -> Any:
    """The cotangent of a window, zero-padded to the full output."""
    widths = [(s, f - s - k) for (s, k), f in zip(windows, full)]
    return pad(g, widths) if any(w != (0, 0) for w in widths) else g


def _full_shape(a: Any, v: Any) -> list:
    return [n + m - 1 for n, m in zip(a.shape, v.shape)]


def _rules(windows, default, correlation):
    """VJPs of a convolution (or a correlation), given ``windows(a_shape, v_shape,
    mode)``, the mode's default and whether the op conjugates ``v``."""
    def full(g, a, v, mode):
        return _embed(g, windows(a.shape, v.shape, mode), _full_shape(a, v))

    if correlation:
        return (lambda g, ans, a, v, mode=default, method="auto": signal_convolve(
                    full(g, a, v, mode), v, "valid"),
                lambda g, ans, a, v, mode=default, method="auto": flip(conj(signal_correlate(
                    full(g, a, v, mode), a, "valid"))))
    return (lambda g, ans, a, v, mode=default, method="auto": signal_correlate(
                full(g, a, v, mode), v, "valid"),
            lambda g, ans, a, v, mode=default, method="auto": signal_correlate(
                full(g, a, v, mode), a, "valid"))


def _scipy_windows(a_shape, v_shape, mode):
    return [_scipy_window(n, m, mode) for n, m in zip(a_shape, v_shape)]


def _signal(name):
    def forward(in1, in2, mode="full", method="auto"):
        _check_mode(f"signal.{name}", mode)
        return getattr(scipy.signal, name)(in1, in2, mode=mode, method=method)

    return forward


def _batching(signal, default: str, one_d: bool, correlation: bool):
    """The batching rule of a convolution computed by ``signal`` (``signal.convolve`` or
    ``signal.correlate``, as ``correlation`` says). NumPy's 1-D ops (``one_d``):
    :func:`_pairwise_convolve`, for any of the two batched. SciPy's n-D ones with one input
    batched: the batch is one more axis, along which the other has length one (the inputs
    swapped when it is ``in2``), and the mode's window is cut from the full output where
    SciPy would not give it directly; with both batched, once per example."""
    def batch(dims, in1, in2, mode=default, method="auto"):
        if any(d is not None for d in dims[2:]):
            return NotImplemented
        if one_d:
            a, v = _rows(in1, dims[0]), _rows(in2, dims[1])
            late = False
            if correlation:  # numpy.correlate(a, v) = convolve(a, conj(v[::-1]))
                v = conj(flip(v, axis=-1))  # (whose "same" window starts one later for an
                late = np.shape(v)[-1] > np.shape(a)[-1]  # even, longer v)
            return _pairwise_convolve(a, dims[0] is not None, v, dims[1] is not None, mode,
                                      late), 0
        if dims[0] is not None and dims[1] is not None:
            return NotImplemented
        if dims[0] is not None:
            s1, s2 = example_shape(in1, dims[0]), np.shape(in2)
            if mode == "full" or all(n >= m for n, m in zip(s1, s2)):
                return signal(front(in1, dims[0]), expand_dims(in2, 0), mode, method), 0
            full = signal(front(in1, dims[0]), expand_dims(in2, 0), "full", method)
        else:  # in2 alone: the inputs swapped
            s1, s2 = np.shape(in1), example_shape(in2, dims[1])
            full = signal(front(in2, dims[1]), expand_dims(in1, 0), "full", method)
            if correlation:  # correlate(a, v) = conj(flip(correlate(v, a)))
                full = conj(flip(full, axis=tuple(range(1, np.ndim(full)))))
        windows = _scipy_windows(s1, s2, mode)  # the mode's window of the full output
        return getitem(full, (slice(None),) + tuple(slice(s, s + k) for s, k in windows)), 0

    return batch


signal_convolve = op(_signal("convolve"), name="signal.convolve", linear=True, save_ans=False,
                     vjp=_rules(_scipy_windows, "full", False),
                     batch=_batching(lambda *a: signal_convolve(*a), "full", False, False))
signal_convolve.__doc__ = """N-dimensional convolution (scipy.signal.convolve), differentiable
in both inputs.

Parameters
----------
in1 : array_like or Tensor
    The same number of dimensions; real or complex.
in2 : array_like or Tensor
    The same number of dimensions; real or complex.
mode : {"full", "valid", "same"}
    "same": the size of ``in1``, centred; "valid": where one input covers the other.
method : {"auto", "direct", "fft"}
    How SciPy computes the forward (the gradients use "auto").

Returns
-------
Tensor or ndarray
"""
signal_correlate = op(_signal("correlate"), name="signal.correlate",
                      linear=True, save_ans=False, vjp=_rules(_scipy_windows, "full", True),
                      batch=_batching(lambda *a: signal_correlate(*a), "full", False, True))
signal_correlate.__doc__ = """N-dimensional cross-correlation (scipy.signal.correlate):
``sum in1[k + n] conj(in2[n])``, differentiable in both inputs.

Parameters
----------
in1 : array_like or Tensor
in2 : array_like or Tensor
mode : {"full", "valid", "same"}
method : {"auto", "direct", "fft"}

Returns
-------
Tensor or ndarray
"""


def _pairwise_convolve(a, a_batched, v, v_batched, mode, late=False):
    """numpy.convolve of each example of ``a`` with the same example of ``v`` (see
    :func:`_rows`; ``a_batched``: whether ``a`` has a batch axis in front, or is one
    vector for all), summed exactly as NumPy does (no FFT): the shorter sequence times a
    Toeplitz matrix of the longer one, per example (so the memory is batch x output length
    x shorter length). ``late``: the "same" window starts at ``shorter // 2`` instead of
    ``(shorter - 1) // 2`` (numpy.correlate with the longer ``v``)."""
    a, v = (a, a_batched), (v, v_batched)
    (short, s_batched), (long, l_batched) = sorted((a, v), key=lambda x: np.shape(x[0])[-1])
    lo, hi = np.shape(short)[-1], np.shape(long)[-1]
    k = np.arange(lo + hi - 1)[:, None] - np.arange(lo)[None, :]  # index into long
    padded = pad(long, ((0, 0),) * l_batched + ((0, 1),))  # a zero where k is outside
    toeplitz = getitem(padded, (slice(None),) * l_batched + (np.where(
        (k >= 0) & (k < hi), k, hi),))
    full = einsum(f"{'b' if s_batched else ''}j,{'b' if l_batched else ''}ij->bi", short,
                  toeplitz)
    start, length = {"full": (0, lo + hi - 1), "same": ((lo - (not late)) // 2, hi),
                     "valid": (lo - 1, hi - lo + 1)}[mode]
    return getitem(full, (slice(None), slice(start, start + length)))


def _rows(x, d):
    """A batched sequence as (batch, length), the batch axis in front; a shared one as a
    vector (a 0-d value as a vector of length one)."""
    x = front(x, d) if d is not None else x
    return x if np.ndim(x) == (d is not None) + 1 else expand_dims(x, -1)


def _numpy_windows(name):
    def windows(a_shape, v_shape, mode):
        return [_numpy_window(name, a_shape[0], v_shape[0], mode)]

    return windows


def _np_convolve(a, v, mode="full"):
    _check_mode("convolve", mode)
    return np.convolve(a, v, mode)


def _np_correlate(a, v, mode="valid"):
    _check_mode("correlate", mode)
    return np.correlate(a, v, mode)


def _as_1d(rules):
    """Rules of a 1-D NumPy op: a 0-d input is used as a vector of length one."""
    def wrap(rule):
        return lambda g, ans, a, v, *args, **kw: rule(g, ans, _vector(a), _vector(v), *args,
                                                       **kw)

    return tuple(wrap(r) for r in rules)


def _vector(x):
    return x if len(x.shape) == 1 else getitem(x, (None,))


convolve = op(_np_convolve, name="convolve", linear=True, save_ans=False,
              vjp=_as_1d(_rules(_numpy_windows("convolve"), "full", False)),
              batch=_batching(signal_convolve, "full", True, False))
convolve.__doc__ = """Discrete linear convolution of two 1-D sequences (numpy.convolve),
differentiable in both.

Parameters
----------
a : 1-D array_like or Tensor
v : 1-D array_like or Tensor
mode : {"full", "valid", "same"}
    "same" has length max(len(a), len(v)), as in NumPy.

Returns
-------
Tensor or ndarray
"""

correlate = op(_np_correlate, name="correlate", linear=True, save_ans=False,
               vjp=_as_1d(_rules(_numpy_windows("correlate"), "valid", True)),
               batch=_batching(signal_correlate, "valid", True, True))
correlate.__doc__ = """Cross-correlation of two 1-D sequences, ``sum a[n + k] conj(v[n])``
(numpy.correlate), differentiable in both.

Parameters
----------
a : 1-D array_like or Tensor
v : 1-D array_like or Tensor
mode : {"valid", "same", "full"}

Returns
-------
Tensor or ndarray
"""


def fftconvolve(in1: Any, in2: Any, mode: str = "full", axes: Any = None) -> Any:
    """N-dimensional convolution by FFTs (scipy.signal.fftconvolve), composed of
    ``yaad.fft`` (values equal SciPy's to rounding: SciPy pads to fast lengths).

    As in SciPy, an axis where either input has length 1 is a broadcast product, and the
    axes not in ``axes`` are a batch (lengths equal or 1).

    Parameters
    ----------
    in1 : array_like or Tensor
        The same number of dimensions.
    in2 : array_like or Tensor
        The same number of dimensions.
    mode : {"full", "valid", "same"}
    axes : int or sequence of int, optional
        The axes convolved (default: all).

    Returns
    -------
    Tensor or ndarray
    """
    from .. import fft

    _check_mode("signal.fftconvolve", mode)
    s1, s2 = shape_of(in1), shape_of(in2)
    if len(s1) != len(s2):
        raise ValueError("signal.fftconvolve: in1 and in2 should have the same "
                         f"dimensionality, got shapes {s1} and {s2}")
    if not s1:
        return in1 * in2
    if 0 in s1 + s2:
        raise ValueError("signal.fftconvolve: inputs must not be empty")
    nd = len(s1)
    given = list(range(nd)) if axes is None else list(normalize_axis_tuple(axes, nd))
    if axes is not None and not given:
        raise ValueError("signal.fftconvolve: when provided, axes cannot be empty")
    axes = [a for a in given if s1[a] != 1 and s2[a] != 1]
    if not all(s1[a] == s2[a] or 1 in (s1[a], s2[a]) for a in range(nd) if a not in axes):
        raise ValueError(f"signal.fftconvolve: incompatible shapes for in1 and in2: {s1} "
                         f"and {s2}")
    if mode == "valid":
        ok1 = all(s1[a] >= s2[a] for a in axes)
        if not (ok1 or all(s2[a] >= s1[a] for a in axes)):
            raise ValueError("signal.fftconvolve: for 'valid' mode, one must be at least as "
                             "large as the other in every dimension")
        if not ok1:
            in1, in2, s1, s2 = in2, in1, s2, s1
    if not axes:
        ret = in1 * in2
    else:
        full = [s1[a] + s2[a] - 1 for a in axes]
        complex_ = any(dtype_of(x).kind == "c" for x in (in1, in2))
        forward, inverse = (fft.fftn, fft.ifftn) if complex_ else (fft.rfftn, fft.irfftn)
        ret = inverse(forward(in1, full, axes) * forward(in2, full, axes), full, axes)
    if mode == "full":
        return ret
    shape = shape_of(ret)
    keep = s1 if mode == "same" else [s1[a] - s2[a] + 1 if a in axes else shape[a]
                                      for a in range(nd)]
    return getitem(ret, tuple(slice((n - k) // 2, (n - k) // 2 + k) for n, k in zip(shape, keep)))
