"""Reductions over axes (NumPy names: ``axis`` an int or tuple, ``keepdims``)."""

from __future__ import annotations

import numpy as np

from ..op import exported, op
from .shape import _normalize_axes, broadcast_to, reshape


def _no_out(name, out):
    if out is not None:
        raise TypeError(f"{name}: out= is not supported (results are new tensors)")


def expand_reduced(g, shape, axis, keepdims):
    """Reshape a reduced gradient so it broadcasts against the input's ``shape``."""
    if keepdims:
        return g
    kept = [1 if i in _normalize_axes(axis, len(shape)) else s for i, s in enumerate(shape)]
    return reshape(g, tuple(kept))


def _sum(a, axis=None, dtype=None, out=None, keepdims=False):
    _no_out("sum", out)
    return np.sum(a, axis=axis, dtype=dtype, keepdims=keepdims)


def _sum_vjp(g, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    return broadcast_to(expand_reduced(g, a.shape, axis, keepdims), a.shape)


sum = op(_sum, name="sum", save_args=False, save_ans=False, linear=(0,),  # noqa: A001
         vjp=_sum_vjp)
sum.__doc__ = """Sum of elements over the given axes (numpy.sum)."""


def mean(a, axis=None, dtype=None, out=None, keepdims=False):
    """Arithmetic mean over the given axes (numpy.mean)."""
    _no_out("mean", out)
    shape = np.shape(a)
    n = int(np.prod([shape[i] for i in _normalize_axes(axis, len(shape))]))
    total = sum(a, axis=axis, dtype=dtype, keepdims=keepdims)
    return total / n if n else total * np.nan

__all__ = exported(globals())
