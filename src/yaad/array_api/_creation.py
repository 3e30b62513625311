"""The array API's creation functions with the standard's signatures (positional-only
and keyword-only arguments, ``device=``), over yaad's (NumPy's) makers."""

from __future__ import annotations

from typing import Any

from .. import creation as c
from ._info import check_device


def arange(start: Any, /, stop: Any = None, step: Any = 1, *, dtype: Any = None,
           device: Any = None) -> Any:
    """Evenly spaced values in [start, stop) (numpy.arange)."""
    check_device(device, "arange")
    return c.arange(start, stop, step, dtype=dtype)


def empty(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """An uninitialised tensor (numpy.empty); float64 by default."""
    check_device(device, "empty")
    return c.empty(shape, dtype=dtype)


def zeros(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """Zeros (numpy.zeros); float64 by default."""
    check_device(device, "zeros")
    return c.zeros(shape, dtype=dtype)


def ones(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """Ones (numpy.ones); float64 by default."""
    check_device(device, "ones")
    return c.ones(shape, dtype=dtype)


def full(shape: Any, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """``fill_value`` everywhere (numpy.full); the dtype of the Python scalar by default."""
    check_device(device, "full")
    return c.full(shape, fill_value, dtype=dtype)


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: Any = None,
        device: Any = None) -> Any:
    """Ones on the ``k``-th diagonal (numpy.eye)."""
    check_device(device, "eye")
    return c.eye(n_rows, n_cols, k, dtype=dtype)


def linspace(start: Any, stop: Any, /, num: int, *, dtype: Any = None, device: Any = None,
             endpoint: bool = True) -> Any:
    """``num`` evenly spaced samples (numpy.linspace; differentiable in tensor ends)."""
    check_device(device, "linspace")
    return c.linspace(start, stop, num, endpoint=endpoint, dtype=dtype)


def empty_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    """numpy.empty_like."""
    check_device(device, "empty_like")
    return c.empty_like(x, dtype=dtype)


def zeros_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    """numpy.zeros_like."""
    check_device(device, "zeros_like")
    return c.zeros_like(x, dtype=dtype)


def ones_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    """numpy.ones_like."""
    check_device(device, "ones_like")
    return c.ones_like(x, dtype=dtype)


def full_like(x: Any, /, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """numpy.full_like."""
    check_device(device, "full_like")
    return c.full_like(x, fill_value, dtype=dtype)


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None,
            copy: bool | None = None) -> Any:
    """``obj`` as a tensor (:func:`yaad.asarray`: a tensor passed in is returned as is or
    cast, recorded; nested sequences holding tensors are stacked, differentiably)."""
    return c.asarray(obj, dtype=dtype, device=device, copy=copy)
