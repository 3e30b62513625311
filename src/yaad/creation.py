"""Making tensors: from data, and NumPy's constructors with ``requires_grad``."""

from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from .batching import batch_axes, draw
from .ops.elementwise import floor
from .ops.shape import astype, broadcast_to, concatenate, expand_dims, getitem, moveaxis
from .tensor import Tensor

__all__ = ["tensor", "as_tensor", "from_numpy", "zeros", "ones", "full", "empty", "eye",
           "identity", "arange", "linspace", "zeros_like", "ones_like", "full_like",
           "empty_like", "rand", "randn"]


def tensor(data: Any, requires_grad: bool = False, dtype: Any = None) -> Tensor:
    """Make a tensor from data (always a copy, like ``torch.tensor`` and ``numpy.array``).

    Parameters
    ----------
    data : array_like
        Numbers, nested lists, an array, or a tensor (its data is copied, detached).
    requires_grad : bool, optional
        Record operations on it, so that gradients with respect to it can be computed.
        Only floating point and complex dtypes can require grad.
    dtype : data-type, optional
        The NumPy dtype; by default NumPy's choice (float64 for Python floats).

    Returns
    -------
    Tensor
    """
    if isinstance(data, Tensor):
        if batch_axes(data):
            return _batched_copy(data, requires_grad, dtype)
        data = data.data
    try:
        array = np.array(data, dtype=dtype, copy=True)
    except TypeError as e:
        if "requires grad" not in str(e):
            raise
        raise TypeError(f"tensor: {e} To build a tensor from tensors and keep the gradient, "
                        f"use yaad.stack or yaad.concatenate.") from None
    return Tensor(array, requires_grad=requires_grad)


def as_tensor(data: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """Make a tensor sharing memory with ``data`` where possible (no copy).

    Parameters
    ----------
    data : array_like or Tensor
        A tensor is returned as is, or cast (recorded, like ``astype``) to ``dtype``.
    dtype : data-type, optional
    requires_grad : bool, optional
        For new tensors (not for a tensor passed in).

    Returns
    -------
    Tensor
    """
    if isinstance(data, Tensor):
        if dtype is None or data.dtype == dtype:
            return data
        from .ops.shape import astype

        converted: Tensor = astype(data, dtype)
        return converted
    return Tensor(np.asarray(data, dtype=dtype), requires_grad=requires_grad)


def from_numpy(array: np.ndarray) -> Tensor:
    """Make a tensor that shares memory with a NumPy array.

    Parameters
    ----------
    array : numpy.ndarray

    Returns
    -------
    Tensor
        A leaf that does not require grad; changes to either show in both.
    """
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy expects a numpy.ndarray, got {type(array).__name__}")
    return Tensor(array)


def _maker(np_fn: Callable[..., np.ndarray], name: str) -> Callable[..., Tensor]:
    def make(*args: Any, requires_grad: bool = False, **kwargs: Any) -> Tensor:
        return Tensor(np_fn(*args, **kwargs), requires_grad=requires_grad)

    make.__name__ = name
    make.__doc__ = (f"numpy.{name} as a tensor; ``requires_grad=True`` makes it a leaf that "
                    f"records operations.")
    return make


zeros = _maker(np.zeros, "zeros")
ones = _maker(np.ones, "ones")
full = _maker(np.full, "full")
empty = _maker(np.empty, "empty")
eye = _maker(np.eye, "eye")
identity = _maker(np.identity, "identity")
arange = _maker(np.arange, "arange")


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
             retstep: bool = False, dtype: Any = None, axis: int = 0, *,
             device: Any = None, requires_grad: bool = False) -> Any:
    """Evenly spaced numbers over an interval (numpy.linspace), differentiable in the ends.

    Parameters
    ----------
    start, stop : array_like or Tensor
        The ends (broadcast together). Tensors among them are differentiated: the result
        is recorded as NumPy computes it, ``start + arange(num) * (stop - start) / div``
        with the last sample exactly ``stop`` (``div`` is ``num - 1``, or ``num`` without
        the endpoint), so values equal NumPy's bit for bit.
    num : int
        The number of samples.
    endpoint : bool
        Whether ``stop`` is the last sample.
    retstep : bool
        Also return the spacing.
    dtype : data-type, optional
        An integer dtype floors the samples (no gradient).
    axis : int
        Where the samples go in the result, for array ends.
    device : None or "cpu"
        NumPy's array-API argument.
    requires_grad : bool
        Make the result a leaf that requires grad (for constant ends only).

    Returns
    -------
    Tensor, or (Tensor, step) with ``retstep``
    """
    if not (isinstance(start, Tensor) or isinstance(stop, Tensor)):
        out = np.linspace(start, stop, num, endpoint, retstep, dtype, axis,  # type: ignore[call-overload]
                          device=device)  # (retstep a bool, not a Literal)
        if retstep:
            return Tensor(out[0], requires_grad=requires_grad), out[1]
        return Tensor(out, requires_grad=requires_grad)
    if requires_grad:
        raise ValueError("linspace: requires_grad=True makes a leaf, but start or stop is a "
                         "tensor: the result is already differentiated through them")
    if device not in (None, "cpu"):
        raise ValueError(f"linspace: device must be None or 'cpu', got {device!r}")
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"linspace: number of samples, {num}, must be non-negative.")
    div = (num - 1) if endpoint else num
    data = [e.data if isinstance(e, Tensor) else e for e in (start, stop)]
    dt = np.result_type(*data, 1.0)  # NumPy's: the ends' type, made inexact
    start, stop = (astype(e, dt) if isinstance(e, Tensor) else np.asarray(e, dt)
                   for e in (start, stop))
    delta = stop - start
    r = np.arange(0, num, dtype=dt).reshape((-1,) + (1,) * np.ndim(delta))
    if div > 0:
        step = delta / div
        zero = np.any((step.data if isinstance(step, Tensor) else step) == 0)
        y = r / div * delta if zero else r * step
    else:
        step = np.nan
        y = r * delta
    y = y + start
    if endpoint and num > 1:
        last = expand_dims(broadcast_to(stop, y.shape[1:]), 0)
        y = concatenate([getitem(y, slice(None, -1)), last])
    if axis != 0:
        y = moveaxis(y, 0, axis)
    if dtype is not None:
        if np.issubdtype(dtype, np.integer):
            y = floor(y)
        y = astype(y, dtype)
    return (y, step) if retstep else y


def _batched_copy(x: Tensor, requires_grad: bool, dtype: Any) -> Tensor:
    """``tensor(x)`` inside vmap: a copy of every example, cut from the graph."""
    from .ops.shape import astype

    if requires_grad:
        raise ValueError("tensor(x, requires_grad=True) inside vmap: a leaf cannot have a "
                         "batch axis; differentiate with yaad.func.grad inside the "
                         "vmapped function instead")
    copied: Tensor = astype(x.detach(), x.dtype if dtype is None else dtype, copy=True)
    return copied


def _like_maker(np_fn: Callable[..., np.ndarray], name: str) -> Callable[..., Tensor]:
    def make(a: Any, *args: Any, requires_grad: bool = False, **kwargs: Any) -> Tensor:
        if batch_axes(a):  # inside vmap: the same for every example, of one example's shape
            data = a._stand_in()
        else:
            data = a.data if isinstance(a, Tensor) else a
        return Tensor(np_fn(data, *args, **kwargs), requires_grad=requires_grad)

    make.__name__ = name
    make.__doc__ = f"numpy.{name} of an array or tensor, as a tensor (no gradient link)."
    return make


zeros_like = _like_maker(np.zeros_like, "zeros_like")
ones_like = _like_maker(np.ones_like, "ones_like")
full_like = _like_maker(np.full_like, "full_like")
empty_like = _like_maker(np.empty_like, "empty_like")


def _sampled(method: str, shape: tuple[int, ...], seed: Any, dtype: Any, requires_grad: bool,
             name: str) -> Tensor:
    rng = np.random.default_rng(seed)

    def sample(s: tuple[int, ...]) -> np.ndarray:
        drawn: np.ndarray = getattr(rng, method)(s).astype(dtype, copy=False)
        return drawn

    if seed is not None and not isinstance(seed, (np.random.Generator,
                                                  np.random.BitGenerator)):
        return Tensor(sample(shape), requires_grad=requires_grad)  # the same numbers each call
    data = draw(sample, shape, name)  # inside vmap: as its randomness says
    if isinstance(data, Tensor):
        return data.requires_grad_(requires_grad) if requires_grad else data
    return Tensor(data, requires_grad=requires_grad)


def rand(*shape: int, requires_grad: bool = False, seed: Any = None,
         dtype: Any = np.float64) -> Tensor:
    """Uniform [0, 1) samples of the given shape (``numpy.random.default_rng(seed)``).

    Inside :func:`yaad.func.vmap` a draw without a fixed seed follows vmap's
    ``randomness``: refused by default, or one draw for all examples, or one per example.
    """
    return _sampled("random", shape, seed, dtype, requires_grad, "yaad.rand")


def randn(*shape: int, requires_grad: bool = False, seed: Any = None,
          dtype: Any = np.float64) -> Tensor:
    """Standard normal samples of the given shape (``numpy.random.default_rng(seed)``).

    Inside :func:`yaad.func.vmap`: as :func:`rand`.
    """
    return _sampled("standard_normal", shape, seed, dtype, requires_grad, "yaad.randn")
