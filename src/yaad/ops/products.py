"""Products: matmul, dot, trace and friends (NumPy semantics, batched where NumPy is)."""

from __future__ import annotations

import numpy as np

from ..op import exported, op
from .elementwise import multiply
from .shape import expand_dims, moveaxis, squeeze


def _c(x):
    """conj(x) for complex values, x itself for real ones (no copy)."""
    return x.conj() if x.dtype.kind == "c" else x


def _matmul_vjp_a(g, ans, a, b):
    if a.ndim == 1 and b.ndim == 1:
        return g * _c(b)
    if b.ndim == 1:
        return multiply(expand_dims(g, -1), _c(b))
    if a.ndim == 1:
        return squeeze(matmul(expand_dims(g, -2), _c(b).mT), -2)
    return matmul(g, _c(b).mT)


def _matmul_vjp_b(g, ans, a, b):
    if a.ndim == 1 and b.ndim == 1:
        return g * _c(a)
    if a.ndim == 1:
        return multiply(expand_dims(_c(a), -1), expand_dims(g, -2))
    if b.ndim == 1:
        return squeeze(matmul(_c(a).mT, expand_dims(g, -1)), -1)
    return matmul(_c(a).mT, g)


matmul = op(np.matmul, name="matmul", save_ans=False, linear=True,
            vjp=(_matmul_vjp_a, _matmul_vjp_b))
matmul.__doc__ = """Matrix product with NumPy's broadcasting over leading axes (numpy.matmul)."""


def _trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    if out is not None:
        raise TypeError("trace: out= is not supported")
    return np.trace(a, offset, axis1, axis2, dtype)


def _trace_vjp(g, ans, a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    n, m = a.shape[axis1], a.shape[axis2]
    eye = np.eye(n, m, k=offset, dtype=g.dtype)
    g = expand_dims(expand_dims(g, -1), -1) * eye
    return moveaxis(g, (-2, -1), (axis1 % a.ndim, axis2 % a.ndim))


trace = op(_trace, name="trace", save_args=False, save_ans=False, linear=(0,),
           vjp=_trace_vjp)
trace.__doc__ = """Sum along a diagonal (numpy.trace), batched through ``axis1``/``axis2``."""

__all__ = exported(globals())
