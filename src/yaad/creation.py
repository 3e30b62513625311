"""Making tensors: from data, and NumPy's constructors with ``requires_grad``."""

from __future__ import annotations

from typing import Any

import numpy as np

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

        return astype(data, dtype)
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


def _maker(np_fn, name):
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
linspace = _maker(np.linspace, "linspace")


def _like_maker(np_fn, name):
    def make(a: Any, *args: Any, requires_grad: bool = False, **kwargs: Any) -> Tensor:
        data = a.data if isinstance(a, Tensor) else a
        return Tensor(np_fn(data, *args, **kwargs), requires_grad=requires_grad)

    make.__name__ = name
    make.__doc__ = f"numpy.{name} of an array or tensor, as a tensor (no gradient link)."
    return make


zeros_like = _like_maker(np.zeros_like, "zeros_like")
ones_like = _like_maker(np.ones_like, "ones_like")
full_like = _like_maker(np.full_like, "full_like")
empty_like = _like_maker(np.empty_like, "empty_like")


def rand(*shape: int, requires_grad: bool = False, seed: Any = None,
         dtype: Any = np.float64) -> Tensor:
    """Uniform [0, 1) samples of the given shape (``numpy.random.default_rng(seed)``)."""
    data = np.random.default_rng(seed).random(shape).astype(dtype, copy=False)
    return Tensor(data, requires_grad=requires_grad)


def randn(*shape: int, requires_grad: bool = False, seed: Any = None,
          dtype: Any = np.float64) -> Tensor:
    """Standard normal samples of the given shape (``numpy.random.default_rng(seed)``)."""
    data = np.random.default_rng(seed).standard_normal(shape).astype(dtype, copy=False)
    return Tensor(data, requires_grad=requires_grad)
