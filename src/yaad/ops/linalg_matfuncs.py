"""Matrix functions (expm, logm, sqrtm), batched, with gradients from the Frechet derivative.

For a primary matrix function ``f``, the Frechet derivative ``L_f(a, e)`` is the upper
right block of ``f([[a, e], [0, a]])``, and the VJP is its adjoint
``conj(L_f(a^T, conj(g)))`` (Higham, "Functions of Matrices", 3.2; Mathias 1996). Both
are computed with ``f`` itself, so second derivatives come from the same rule.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from ..op import exported, op
from .elementwise import conj
from .linalg_basic import mT, square_matrices


def _block_upper(a, e):
    n = a.shape[-1]
    batch = np.broadcast_shapes(a.shape[:-2], e.shape[:-2])
    out = np.zeros(batch + (2 * n, 2 * n), dtype=np.result_type(a, e))
    out[..., :n, :n] = a
    out[..., n:, n:] = a
    out[..., :n, n:] = e
    return out


def _zeros_of(t):
    return np.zeros(t.shape[-2:], dtype=t.dtype)


block_upper = op(
    _block_upper, name="linalg.block_upper", save_args=False, save_ans=False, batch="broadcast",
    vjp=(lambda g, ans, a, e: g[..., :a.shape[-1], :a.shape[-1]] + g[..., a.shape[-1]:,
                                                                     a.shape[-1]:],
         lambda g, ans, a, e: g[..., :a.shape[-1], a.shape[-1]:]),
    jvp=(lambda t, ans, a, e: block_upper(t, _zeros_of(t)),
         lambda t, ans, a, e: block_upper(_zeros_of(t), t)))
block_upper.__doc__ = """The block matrix ``[[a, e], [0, a]]`` (batched)."""


def frechet(f, a, e):
    """The Frechet derivative ``L_f(a, e)`` of the matrix function ``f`` at ``a`` in the
    direction ``e``: the upper right block of ``f([[a, e], [0, a]])``."""
    n = a.shape[-1]
    return f(block_upper(a, e))[..., :n, n:]


def _conj(x):
    return conj(x) if x.dtype.kind == "c" else x


def _matrix_function(name: str, forward):
    def fwd(A):
        A = square_matrices(name, A)
        # Computed in double precision (SciPy's single-precision logm is inaccurate), then
        # returned in the input's precision; always an array that owns its memory.
        out = forward(A.astype(np.promote_types(A.dtype, np.float64), copy=False))
        if A.dtype in (np.float32, np.complex64):
            return out.astype(np.complex64 if out.dtype.kind == "c" else np.float32)
        return out if out.base is None else out.copy()

    # The VJP is the adjoint of E -> L_f(A, E): conj(L_f(A^T, conj(g))), which holds for
    # every primary matrix function. (L_f(A^H, g) would need f(conj z) = conj f(z), false
    # on the branch cut: sqrtm and logm of a real matrix with a negative eigenvalue.)
    fn = op(fwd, name=f"linalg.{name}", save_ans=False, batch="broadcast",
            vjp=lambda g, ans, A: _conj(frechet(fn, mT(A), _conj(g))),
            jvp=lambda t, ans, A: frechet(fn, A, t))
    return fn


expm = _matrix_function("expm", sla.expm)
expm.__doc__ = """Matrix exponential, batched (scipy.linalg.expm).

The gradient is the adjoint Frechet derivative, ``L_exp(A^H, g)``, computed as a block of
``expm([[A^T, conj(g)], [0, A^T]])``, conjugated.

Parameters
----------
A : (..., n, n) Tensor or array_like
    Real or complex.

Returns
-------
Tensor
"""

logm = _matrix_function("logm", sla.logm)
logm.__doc__ = """Principal matrix logarithm, batched (scipy.linalg.logm).

Complex for a real matrix with negative eigenvalues (SciPy's rule); the gradient is
the adjoint Frechet derivative ``conj(L_log(A^T, conj(g)))``. Not differentiable at a
matrix with an eigenvalue on the closed negative real axis.

Parameters
----------
A : (..., n, n) Tensor or array_like

Returns
-------
Tensor
"""

sqrtm = _matrix_function("sqrtm", sla.sqrtm)
sqrtm.__doc__ = """Principal matrix square root, batched (scipy.linalg.sqrtm).

Complex for a real matrix with negative eigenvalues (SciPy's rule); the gradient is
the adjoint Frechet derivative ``conj(L_sqrt(A^T, conj(g)))``. Not
differentiable at a matrix with an eigenvalue on the closed negative real axis.

Parameters
----------
A : (..., n, n) Tensor or array_like

Returns
-------
Tensor
"""

__all__ = exported(globals())
