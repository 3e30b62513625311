"""Ops that exist on compiled tapes only: the trace and the diagonal of a matrix product.

``trace(a @ b)`` is ``sum(a * b.mT)``, whose gradients ``g * b.mT`` and ``g * a.mT`` need
no matrix product; :mod:`yaad.compiled.rewrite` puts ``TRACE_MM`` and ``DIAG_MM`` in place
of the two calls, the recorder knows their output shapes, and code generation spells
``TRACE_MM`` cheaply. They are not in ``yaad.registry``.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..core.op import Op
from ..core.op import apply as _apply
from ..core.tensor import Tensor
from ..ops.elementwise import conj
from ..ops.shape import expand_dims, swapaxes


def private_op(forward: Callable, name: str, vjps: tuple, save_args: bool = True,
               save_ans: bool = False, linear: Any = True) -> Op:
    """An op for compiled tapes only: not in ``yaad.registry``, callable on tensors."""
    spec = Op(forward=forward, name=name, vjps=tuple(vjps), jvps=(), save_args=save_args,
              save_ans=save_ans, nout=1, variadic=False, elementwise=False, selects=False,
              linear=linear)

    def fn(*args: Any, **kw: Any) -> Any:
        if any(isinstance(a, Tensor) for a in args):
            return _apply(spec, args, kw)
        return forward(*args, **kw)

    fn.op = spec
    spec.fn = fn
    return spec


def _c(x: Any) -> Any:
    return conj(x) if x.dtype.kind == "c" else x


def _mT(x: Any) -> Any:
    return swapaxes(x, -1, -2)


def _trace_mm(a: Any, b: Any) -> Any:
    if a.ndim == 2 and b.ndim == 2 and a.dtype.kind != "c" and b.dtype.kind != "c":
        return np.vdot(a, b.T)
    return np.einsum("...ij,...ji->...", a, b)


def _trace_mm_vjp(k: int) -> Callable:
    def vjp(g: Any, ans: Any, a: Any, b: Any) -> Any:
        other = _c(_mT(b if k == 0 else a))
        if g.ndim:
            g = expand_dims(g, (-2, -1))
        return g * other

    return vjp


TRACE_MM = private_op(_trace_mm, "trace_of_product", (_trace_mm_vjp(0), _trace_mm_vjp(1)))


def _diag_mm(a: Any, b: Any) -> Any:
    return np.einsum("...ij,...ji->...i", a, b)


def _diag_mm_vjp_a(g: Any, ans: Any, a: Any, b: Any) -> Any:
    return expand_dims(g, -1) * _c(_mT(b))


def _diag_mm_vjp_b(g: Any, ans: Any, a: Any, b: Any) -> Any:
    return expand_dims(g, -2) * _c(_mT(a))


DIAG_MM = private_op(_diag_mm, "diagonal_of_product", (_diag_mm_vjp_a, _diag_mm_vjp_b))
