"""Linear systems and matrix equations: ``solve``, ``solve_triangular``, ``solve_banded``,
``solve_sylvester``, ``solve_continuous_lyapunov``, ``inv``, ``cholesky``, ``tensorsolve``,
``tensorinv`` and ``matrix_power``.

All are batched over leading axes ``(..., m, n)`` (``solve_banded``: one band) and defined
for real and complex inputs.

- ``solve_sylvester``: ``A X + X B = Q``. Differentiating, ``A dX + dX B = dQ - dA X -
  X dB``: the JVP is one more Sylvester solve, and the VJP solves the adjoint equation
  ``A^H Y + Y B^H = G``, then ``grad Q = Y``, ``grad A = -Y X^H``, ``grad B = -X^H Y``.
  Batched over leading axes (a loop of SciPy calls).
- ``solve_continuous_lyapunov``: ``A X + X A^H = Q`` is ``solve_sylvester(A, A^H, Q)``.
- ``solve_banded``: ``A x = b`` with ``A`` in LAPACK's band storage
  (``ab[u + i - j, j] = A[i, j]``). The adjoint system uses the band storage of ``A^H``
  (rows reversed and shifted, conjugated); the gradient for ``ab`` is ``-y x^H`` read on
  the band.
"""

from __future__ import annotations

import importlib
import math
import operator
from typing import Any, Callable

import numpy as np
import scipy.linalg as sla
from numpy.linalg import LinAlgError

from ..core.backend import backend_name, implements, no_implementation
from ..core.op import op
from ..core.presentation import ndim_of, shape_of
from ..core.tensor import Tensor
from ..ops.elementwise import conj
from ..ops.products import matmul
from ..ops.reductions import sum as _sum
from ..ops.shape import columns, getitem, moveaxis, pad, reshape, squeeze, stack, tril
from .helpers import (
    as_array,
    col,
    herm,
    is_complex,
    mH,
    mT,
    mv,
    outer_h,
    public,
    real_diag_matrix,
    solve_batch,
    square_matrices,
    tri,
)

__all__ = ["solve", "solve_triangular", "solve_banded", "solve_sylvester",
           "solve_continuous_lyapunov", "inv", "cholesky", "tensorsolve", "tensorinv",
           "matrix_power"]

# ---- triangular solve ----------------------------------------------------------------

_TRANS = {0: 0, "N": 0, "n": 0, 1: 1, "T": 1, "t": 1, 2: 2, "C": 2, "c": 2}


def _trans_code(trans: Any) -> int:
    try:
        return _TRANS[trans]
    except (KeyError, TypeError):
        raise ValueError(f"solve_triangular: trans must be 0, 1, 2 or 'N', 'T', 'C', got "
                         f"{trans!r}") from None


def _solve_triangular(a: Any, b: Any, trans: int | str = 0, lower: bool = False,
                      unit_diagonal: bool = False, overwrite_b: bool = False,
                      check_finite: bool = True) -> Any:
    a = square_matrices("solve_triangular", a)
    b = as_array(b)
    code = _trans_code(trans)
    if a.ndim == 2 and b.ndim <= 2:
        return sla.solve_triangular(a, b, trans=code, lower=lower,
                                    unit_diagonal=unit_diagonal, check_finite=check_finite)
    # A batch: one LAPACK call for all matrices (SciPy loops over them in Python).
    t = tri(a, lower, unit_diagonal)
    if unit_diagonal:
        t = t + np.eye(a.shape[-1], dtype=a.dtype)
    return np.linalg.solve(_op_of(t, code), b)


def _op_of(x: Any, code: int) -> Any:
    """``op(x)`` of the triangular solve: x, x^T or x^H."""
    return x if code == 0 else mT(x) if code == 1 else mH(x)


def _st_solve(a: Any, y: Any, code: Any, lower: Any, unit: Any, vec: Any) -> Any:
    """``solve_triangular`` where ``y`` is a batch of vectors (``vec``) or of matrices."""
    if vec and y.ndim > 1:
        return squeeze(solve_triangular(a, col(y), code, lower, unit), -1)
    return solve_triangular(a, y, code, lower, unit)


def _st_adjoint(a: Any, g: Any, code: Any, lower: Any, unit: Any, vec: Any) -> Any:
    """Solve ``op(T)^H y = g`` (the gradient for ``b``)."""
    if code == 1 and is_complex(a):
        # op(T)^H = conj(T), which LAPACK does not offer: conj(T) y = g <=> T conj(y) = conj(g)
        return conj(_st_solve(a, conj(g), 0, lower, unit, vec))
    return _st_solve(a, g, 2 if code == 0 else 0, lower, unit, vec)


def _st_vjp_a(g: Any, x: Any, a: Any, b: Any, trans: int | str = 0, lower: bool = False,
              unit_diagonal: bool = False, overwrite_b: bool = False,
              check_finite: bool = True) -> Any:
    code = _trans_code(trans)
    vec = b.ndim == 1
    gm = -outer_h(_st_adjoint(a, g, code, lower, unit_diagonal, vec), x, vec)
    return tri(_op_of(gm, code), lower, unit_diagonal)


def _st_vjp_b(g: Any, x: Any, a: Any, b: Any, trans: int | str = 0, lower: bool = False,
              unit_diagonal: bool = False, overwrite_b: bool = False,
              check_finite: bool = True) -> Any:
    return _st_adjoint(a, g, _trans_code(trans), lower, unit_diagonal, b.ndim == 1)


def _st_jvp_a(t: Any, x: Any, a: Any, b: Any, trans: int | str = 0, lower: bool = False,
              unit_diagonal: bool = False, overwrite_b: bool = False,
              check_finite: bool = True) -> Any:
    code = _trans_code(trans)
    vec = b.ndim == 1
    dm = _op_of(tri(t, lower, unit_diagonal), code)
    return -_st_solve(a, mv(dm, x, vec), code, lower, unit_diagonal, vec)


solve_triangular: Callable[..., Any] = public(op(
    _solve_triangular, name="linalg.solve_triangular", linear=(1,),
    vjp=(_st_vjp_a, _st_vjp_b), jvp=(_st_jvp_a, None),
    batch=solve_batch(lambda a, b, *rest, **kw: solve_triangular(a, b, *rest, **kw))))
solve_triangular.__doc__ = """Solve ``op(a) x = b`` for a triangular ``a``.

SciPy's ``scipy.linalg.solve_triangular``, batched. Only the triangle selected by
``lower`` is read (and not the diagonal when ``unit_diagonal``); the gradient for ``a``
lives in that triangle too.

Parameters
----------
a : (..., n, n) Tensor or array_like
    Triangular matrices.
b : (n,) or (..., n, k) Tensor or array_like
    Right-hand sides: a vector when 1-D, else a batch of matrices.
trans : {0, 1, 2, 'N', 'T', 'C'}
    Solve ``a x = b``, ``a^T x = b`` or ``a^H x = b``.
lower : bool
    Use the lower triangle of ``a`` (default: the upper one).
unit_diagonal : bool
    Assume ones on the diagonal of ``a``.
overwrite_b : bool, optional
    Accepted for SciPy compatibility; ``b`` is never overwritten.
check_finite : bool, optional
    Accepted for SciPy compatibility; ``b`` is never overwritten.

Returns
-------
Tensor
    ``x``, with the shape of ``b`` broadcast against the batch of ``a``.
"""


# ---- inverse, solve, determinants -----------------------------------------------------


def _inv(a: Any) -> Any:
    a = square_matrices("inv", a)
    return np.linalg.inv(a)


inv = public(op(_inv, name="linalg.inv", save_args=False, batch="broadcast",
                vjp=lambda g, ans, a: -matmul(mH(ans), matmul(g, mH(ans))),
                jvp=lambda t, ans, a: -matmul(ans, matmul(t, ans))))
inv.__doc__ = """Inverse of (a batch of) square matrices (numpy.linalg.inv).

Parameters
----------
a : (..., n, n) Tensor or array_like

Returns
-------
Tensor
    ``inv(a)``; its gradient is ``-inv(a)^H g inv(a)^H``.

Raises
------
numpy.linalg.LinAlgError
    If a matrix is singular.
"""


def _solve(a: Any, b: Any) -> Any:
    a, b = square_matrices("solve", a), as_array(b)
    return np.linalg.solve(a, b)


def _solve_vjp_b(g: Any, x: Any, a: Any, b: Any) -> Any:
    return mv_solve(mH(a), g, b.ndim == 1)


def _solve_vjp_a(g: Any, x: Any, a: Any, b: Any) -> Any:
    vec = b.ndim == 1
    return -outer_h(mv_solve(mH(a), g, vec), x, vec)


def mv_solve(a: Any, b: Any, vec: bool) -> Any:
    """``solve(a, b)`` where ``b`` is a batch of vectors (``vec``) or of matrices."""
    if vec and b.ndim > 1:
        return squeeze(solve(a, col(b)), -1)
    return solve(a, b)


solve: Callable[..., Any] = public(op(_solve, name="linalg.solve", linear=(1,),
                  vjp=(_solve_vjp_a, _solve_vjp_b), batch=solve_batch(lambda a, b: solve(a, b)),
                  jvp=(lambda t, x, a, b: -mv_solve(a, mv(t, x, b.ndim == 1), b.ndim == 1), None)))
solve.__doc__ = """Solve ``a x = b`` (numpy.linalg.solve, NumPy 2 broadcasting).

Parameters
----------
a : (..., n, n) Tensor or array_like
b : (n,) or (..., n, k) Tensor or array_like
    A vector when 1-D, else a batch of matrices.

Returns
-------
Tensor
    ``x``.

Raises
------
numpy.linalg.LinAlgError
    If a matrix is singular.
"""


# ---- Cholesky --------------------------------------------------------------------------


def _cholesky(a: Any, upper: Any = False) -> Any:
    a = square_matrices("cholesky", a)
    return np.linalg.cholesky(a, upper=upper)


def _cholesky_vjp(g: Any, ans: Any, a: Any, upper: Any = False) -> Any:
    low = mH(ans) if upper else ans
    gl = mH(g) if upper else g
    z = matmul(mH(low), gl)
    lower = tril(z, -1)
    w = (lower + mH(lower) + real_diag_matrix(z)) * 0.5
    t1 = solve_triangular(low, w, 2, True)  # L^{-H} W
    return mH(solve_triangular(low, mH(t1), 2, True))  # L^{-H} W L^{-1}


def _cholesky_jvp(t: Any, ans: Any, a: Any, upper: Any = False) -> Any:
    low = mH(ans) if upper else ans
    s1 = solve_triangular(low, herm(t), 0, True)
    s = mH(solve_triangular(low, mH(s1), 0, True))  # L^{-1} herm(t) L^{-H}
    dl = matmul(low, tril(s, -1) + real_diag_matrix(s) * 0.5)
    return mH(dl) if upper else dl


cholesky = public(op(_cholesky, name="linalg.cholesky", save_args=False, batch="broadcast",
                     vjp=_cholesky_vjp, jvp=_cholesky_jvp))
cholesky.__doc__ = """Cholesky factorisation ``a = L L^H`` (numpy.linalg.cholesky).

Only the lower triangle of ``a`` is read, as in NumPy. The gradient is the one for
Hermitian perturbations, i.e. that of ``cholesky((a + a^H) / 2)``: it is Hermitian, as in
PyTorch, so gradient steps keep ``a`` Hermitian.

Parameters
----------
a : (..., n, n) Tensor or array_like
upper : bool
    Return the upper factor ``U = L^H`` instead of ``L``.

Returns
-------
Tensor
"""


# ---- matrix equations ------------------------------------------------------------------


def _batched(fn: Any, *mats: Any) -> Any:
    """``fn`` of the matrices of each batch entry (broadcast leading axes)."""
    batch = np.broadcast_shapes(*(m.shape[:-2] for m in mats))
    if not batch:
        return fn(*mats)
    full = [np.broadcast_to(m, batch + m.shape[-2:]) for m in mats]
    first = fn(*(m[(0,) * len(batch)] for m in full))
    out = np.empty(batch + first.shape, dtype=first.dtype)
    for idx in np.ndindex(*batch):
        out[idx] = fn(*(m[idx] for m in full))
    return out


def _sylvester(a: Any, b: Any, q: Any) -> Any:
    a = square_matrices("solve_sylvester", a)
    b = square_matrices("solve_sylvester", b)
    q = as_array(q)
    if q.ndim < 2 or q.shape[-2:] != (a.shape[-1], b.shape[-1]):
        raise ValueError(f"solve_sylvester: q must have shape (..., {a.shape[-1]}, "
                         f"{b.shape[-1]}) for a of shape {a.shape} and b of shape {b.shape}, "
                         f"got {q.shape}")
    # One dtype for the three: SciPy (1.17) returns a wrong solution for a real a and a
    # complex b (a real Schur form of a, a complex one of b).
    dt = np.result_type(a, b, q)
    return _batched(sla.solve_sylvester, *(m.astype(dt, copy=False) for m in (a, b, q)))


def _adjoint(g: Any, a: Any, b: Any) -> Any:
    return solve_sylvester(mH(a), mH(b), g)


solve_sylvester: Callable[..., Any] = public(op(
    _sylvester, name="linalg.solve_sylvester", batch="broadcast",
    vjp=(lambda g, x, a, b, q: -matmul(_adjoint(g, a, b), mH(x)),
         lambda g, x, a, b, q: -matmul(mH(x), _adjoint(g, a, b)),
         lambda g, x, a, b, q: _adjoint(g, a, b)),
    jvp=(lambda t, x, a, b, q: solve_sylvester(a, b, -matmul(t, x)),
         lambda t, x, a, b, q: solve_sylvester(a, b, -matmul(x, t)),
         lambda t, x, a, b, q: solve_sylvester(a, b, t))))
solve_sylvester.__doc__ = """Solve the Sylvester equation ``a x + x b = q``
(scipy.linalg.solve_sylvester), batched, differentiable in ``a``, ``b`` and ``q``.

Parameters
----------
a : (..., m, m) array_like or Tensor
b : (..., n, n) array_like or Tensor
q : (..., m, n) array_like or Tensor

Returns
-------
Tensor or ndarray
    ``x``, of shape (..., m, n).
"""


def solve_continuous_lyapunov(a: Any, q: Any) -> Any:
    """Solve the continuous Lyapunov equation ``a x + x a^H = q``
    (scipy.linalg.solve_continuous_lyapunov), batched, differentiable in ``a`` and ``q``.

    Parameters
    ----------
    a : (..., n, n) array_like or Tensor
    q : (..., n, n) array_like or Tensor

    Returns
    -------
    Tensor or ndarray
    """
    return solve_sylvester(a, mH(as_array(a)), q)


# ---- banded systems --------------------------------------------------------------------


def _shifted(row: Any, s: int, n: int) -> Any:
    """``out[j] = row[j + s]`` along the first axis (zero where ``j + s`` is outside)."""
    k = min(abs(s), n)
    rest = [(0, 0)] * (len(row.shape) - 1)
    if s >= 0:
        return pad(getitem(row, slice(k, n)), [(0, k)] + rest)
    return pad(getitem(row, slice(0, n - k)), [(k, 0)] + rest)


def _band_adjoint(lower: int, upper: int, ab: Any) -> Any:
    """The band storage of ``A^H`` (lower and upper bandwidths swapped)."""
    n = ab.shape[-1]
    rows = [_shifted(conj(getitem(ab, upper + lower - r)), r - lower, n)
            for r in range(lower + upper + 1)]
    return stack(rows)


def _band_matvec(lower: int, upper: int, ab: Any, x: Any) -> Any:
    """``A x`` for ``A`` in band storage (``x`` a vector or a matrix of columns)."""
    n = ab.shape[-1]
    extra = (None,) * (len(x.shape) - 1)
    total = 0
    for r in range(lower + upper + 1):
        s = r - upper  # row r holds A[j + s, j]
        total = total + _shifted(getitem(ab, (r,) + (slice(None),) + extra) * x, -s, n)
    return total


def _band_outer(lower: int, upper: int, y: Any, x: Any) -> Any:
    """``y x^H`` read on the band, in band storage."""
    n = y.shape[0]
    rows = []
    for r in range(lower + upper + 1):
        s = r - upper  # entry (j + s, j)
        prod = _shifted(y, s, n) * conj(x)
        rows.append(_sum(prod, axis=tuple(range(1, len(prod.shape)))) if len(prod.shape) > 1
                    else prod)
    return stack(rows)


def _banded(l_and_u: Any, ab: Any, b: Any, overwrite_ab: bool = False, overwrite_b: bool = False,
            check_finite: bool = True) -> Any:
    return sla.solve_banded(l_and_u, ab, b, check_finite=check_finite)


def _banded_vjp_ab(g: Any, x: Any, l_and_u: Any, ab: Any, b: Any, *rest: Any, **kw: Any) -> Any:
    lower, upper = l_and_u
    y = solve_banded((upper, lower), _band_adjoint(lower, upper, ab), g)
    return -_band_outer(lower, upper, y, x)


def _banded_vjp_b(g: Any, x: Any, l_and_u: Any, ab: Any, b: Any, *rest: Any, **kw: Any) -> Any:
    lower, upper = l_and_u
    return solve_banded((upper, lower), _band_adjoint(lower, upper, ab), g)


def _banded_jvp_ab(t: Any, x: Any, l_and_u: tuple[int, int], ab: Any, b: Any, *rest: Any,
                   **kw: Any) -> Any:
    return solve_banded(l_and_u, ab, -_band_matvec(*l_and_u, t, x))


def _banded_batch(dims: Any, l_and_u: Any, ab: Any, b: Any, *rest: Any, **kw: Any) -> Any:
    if dims[1] is not None or any(d is not None for d in dims[3:]):
        return NotImplemented  # a band per example: SciPy solves one at a time
    cols, back = columns(b, dims[2])  # one band: the examples' right-hand sides as columns
    return back(solve_banded(l_and_u, ab, cols, *rest, **kw))


solve_banded = public(op(_banded, name="linalg.solve_banded", linear=(2,),
                         vjp=(None, _banded_vjp_ab, _banded_vjp_b),
                         jvp=(None, _banded_jvp_ab, None),
                         batch=_banded_batch))
solve_banded.__doc__ = """Solve ``a x = b`` for a banded ``a`` given in LAPACK's band
storage (scipy.linalg.solve_banded), differentiable in ``ab`` and ``b``.

Parameters
----------
l_and_u : (int, int)
    The numbers of non-zero lower and upper diagonals.
ab : (l + u + 1, n) array_like or Tensor
    ``ab[u + i - j, j] = a[i, j]``; entries outside the matrix are not read (their
    gradient is zero).
b : (n,) or (n, k) array_like or Tensor
overwrite_ab : bool, optional
    Ignored (inputs are never overwritten).
overwrite_b : bool, optional
    Ignored (inputs are never overwritten).
check_finite : bool

Returns
-------
Tensor or ndarray
"""


# ---- tensors and powers ----------------------------------------------------------------


def tensorinv(a: Any, ind: int = 2) -> Any:
    """The inverse of ``a`` seen as a linear map from its first ``ind`` axes to the rest
    (numpy.linalg.tensorinv).

    Parameters
    ----------
    a : Tensor or array_like
        ``prod(a.shape[:ind]) == prod(a.shape[ind:])``.
    ind : int

    Returns
    -------
    Tensor
        Shape ``a.shape[ind:] + a.shape[:ind]``.
    """
    shape = shape_of(a)
    if ind <= 0:
        raise ValueError(f"tensorinv: ind must be a positive integer, got {ind}")
    rows = int(np.prod(shape[:ind]))
    return reshape(inv(reshape(a, (rows, -1))), shape[ind:] + shape[:ind])


def tensorsolve(a: Any, b: Any, axes: Any = None) -> Any:
    """Solve ``tensordot(a, x, axes=x.ndim) = b`` for ``x`` (numpy.linalg.tensorsolve).

    Parameters
    ----------
    a : Tensor or array_like
    b : Tensor or array_like
    axes : tuple of int, optional
        Axes of ``a`` to move to the end first.

    Returns
    -------
    Tensor
        Shape ``a.shape[b.ndim:]`` (after moving ``axes``).
    """
    if axes is not None:
        nd = ndim_of(a)
        axes = [ax % nd for ax in axes]
        a = moveaxis(a, axes, list(range(nd - len(axes), nd)))
    shape = shape_of(a)
    # NumPy's rule, kept to the letter (when b has as many axes as a, x takes all of a's)
    xshape = shape[-(len(shape) - ndim_of(b)):]
    n = math.prod(xshape)
    if math.prod(shape) != n * n:
        raise LinAlgError(
            f"tensorsolve: a of shape {shape} and b of shape {shape_of(b)} do not make a "
            f"square system (x would have shape {xshape}, {n} unknowns)")
    x = solve(reshape(a, (n, n)), reshape(b, (n,)))
    return reshape(x, xshape)


def matrix_power(a: Any, n: int) -> Any:
    """Integer power of square matrices by repeated squaring (numpy.linalg.matrix_power).

    Parameters
    ----------
    a : (..., m, m) Tensor or array_like
    n : int
        Negative powers invert first; 0 gives the identity (a constant).

    Returns
    -------
    Tensor
    """
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"matrix_power: the exponent must be an integer, got {n!r}") from None
    if not isinstance(a, Tensor):
        return np.linalg.matrix_power(a, n)
    if ndim_of(a) < 2 or a.shape[-1] != a.shape[-2]:
        raise LinAlgError(f"matrix_power: expected square matrices (..., m, m), got shape "
                          f"{a.shape}")
    if n == 0:
        return Tensor(np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape).copy())
    if n < 0:
        a, n = inv(a), -n
    result = None
    while n:
        if n & 1:
            result = a if result is None else matmul(result, a)
        n >>= 1
        if n:
            a = matmul(a, a)
    return result


# ---- other libraries' arrays (Dask: dask.array.linalg) ----------------------------------

implements("linalg.inv")(lambda xp, a: xp.linalg.inv(square_matrices("inv", a)))


@implements("linalg.solve")
def _solve_xp(xp: Any, a: Any, b: Any) -> Any:
    if backend_name(a) == "dask" and (a.ndim != 2 or b.ndim > 2):
        raise no_implementation("linalg.solve", "dask", "a stack of matrices")
    return xp.linalg.solve(a, b)


@implements("linalg.cholesky")
def _cholesky_xp(xp: Any, a: Any, upper: Any = False) -> Any:
    library = backend_name(a)
    if library == "dask":  # (array-api-compat 1.16 gives Dask's upper factor)
        if a.ndim != 2:
            raise no_implementation("linalg.cholesky", library, "a stack of matrices")
        dask_linalg: Any = importlib.import_module("dask.array.linalg")
        low = dask_linalg.cholesky(a, lower=True)
    else:  # (NumPy's LAPACK reads the lower triangle only)
        low = xp.tril(a, k=-1)
        d = xp.linalg.diagonal(a)
        eye = xp.eye(a.shape[-1], dtype=a.dtype)
        low = xp.linalg.cholesky(low + xp.conj(xp.matrix_transpose(low)) + (
            xp.real(d) if is_complex(d) else d)[..., None] * eye)
    return xp.conj(xp.matrix_transpose(low)) if upper else low


@implements("linalg.solve_triangular")
def _solve_triangular_xp(xp: Any, a: Any, b: Any, trans: int | str = 0, lower: bool = False,
                         unit_diagonal: bool = False, overwrite_b: bool = False,
                         check_finite: bool = True) -> Any:
    # (a general solve of the triangle: the array API has no triangular solve)
    code = _trans_code(trans)
    t = xp.tril(a) if lower else xp.triu(a)
    if unit_diagonal:
        eye = xp.eye(a.shape[-1], dtype=a.dtype)
        t = t - t * eye + eye
    if code:
        t = xp.matrix_transpose(xp.conj(t) if code == 2 else t)
    return _solve_xp(xp, t, b)
