"""Linear algebra ops: solves, inverse, determinants, pseudo-inverse, Cholesky, cross product.

All ops are batched over leading axes ``(..., m, n)`` and defined for real and complex
inputs. Rules follow the package's convention: with the inner product
``<X, Y> = Re tr(X^H Y)``, the VJP is the adjoint of the JVP, so for a holomorphic map the
gradient is ``g * conj(f'(z))`` (``ga = -inv(a)^H g inv(a)^H`` for ``inv``).

The helpers at the top (``mH``, ``mv``, ``herm``, ...) work on arrays and tensors alike, so
the rules below them give second derivatives.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
from numpy.lib.array_utils import normalize_axis_index

from ..batching import aligned, columns, front
from ..op import exported, op
from ..tensor import Tensor
from .elementwise import conj, imag, real, where
from .products import matmul
from .reductions import sum as _sum
from .shape import (
    _values,
    concatenate,
    diag_embed,
    diagonal,
    expand_dims,
    squeeze,
    swapaxes,
    tril,
    triu,
)

# ---- helpers (arrays or tensors) ----------------------------------------------------


def data_of(x):
    """The array behind ``x`` (for masks and checks, which carry no gradient; inside
    vmap, every example's)."""
    return _values(x)


def is_complex(x) -> bool:
    """Whether ``x`` has a complex dtype."""
    return x.dtype.kind == "c"


def mT(x):
    """The last two axes swapped."""
    return swapaxes(x, -1, -2)


def mH(x):
    """The conjugate transpose of the last two axes."""
    t = swapaxes(x, -1, -2)
    return conj(t) if is_complex(x) else t


def herm(x):
    """The Hermitian part ``(x + x^H) / 2``."""
    return (x + mH(x)) * 0.5


def col(v):
    """``v[..., :, None]``."""
    return expand_dims(v, -1)


def row(v):
    """``v[..., None, :]``."""
    return expand_dims(v, -2)


def mv(m, x, vec: bool):
    """``m @ x`` where ``x`` is a batch of vectors (``vec``) or of matrices."""
    if vec:
        return squeeze(matmul(m, col(x)), -1)
    return matmul(m, x)


def outer_h(x, y, vec: bool):
    """``x @ y^H`` for batches of matrices, ``x y^H`` (an outer product) for vectors."""
    if vec:
        return col(x) * conj(row(y)) if is_complex(y) else col(x) * row(y)
    return matmul(x, mH(y))


def diag(x):
    """The main diagonals of a batch of matrices (last axis)."""
    return diagonal(x, 0, -2, -1)


def diag_matrix(d):
    """A batch of diagonal matrices with ``d`` (last axis) on the diagonal."""
    n = d.shape[-1]
    return diag_embed(d, tuple(d.shape[:-1]) + (n, n), 0, -2, -1)


def tri(x, lower: bool, strict: bool = False):
    """The lower or upper triangle (without the diagonal when ``strict``)."""
    if lower:
        return tril(x, -1 if strict else 0)
    return triu(x, 1 if strict else 0)


def real_diag_matrix(x):
    """``diag(Re diag(x))``: the Hermitian part of the diagonal of ``x``."""
    d = diag(x)
    return diag_matrix(real(d) if is_complex(d) else d)


def as_array(x):
    """``x`` itself if it is an array (of any array library), else a NumPy array (lists)."""
    return x if hasattr(x, "shape") and hasattr(x, "dtype") else np.asarray(x)


def square_matrices(name: str, a):
    """``a`` as an array, checked to be a (batch of) square matrices."""
    a = as_array(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise np.linalg.LinAlgError(
            f"{name}: expected a (batch of) square matrices of shape (..., n, n), got shape "
            f"{a.shape}")
    return a


def solve_batch(fn):
    """The batching rule of a solve ``fn(a, b, *rest)`` for ``a x = b`` (``b``: a vector or
    matrices): with one matrix ``a``, a single solve for the examples' right-hand sides as
    columns; else stacks of matrices, each vector made a column."""
    def batch(dims, a, b, *rest, **kw):
        da, db = dims[:2]
        if any(d is not None for d in dims[2:]):
            return NotImplemented
        nda, ndb = np.ndim(a) - (da is not None), np.ndim(b) - (db is not None)
        if da is None and nda == 2 and ndb <= 2:
            cols, back = columns(b, db)
            return back(fn(a, cols, *rest, **kw))
        vec = ndb == 1
        b = front(b, db)
        a, b = aligned((a, expand_dims(b, -1) if vec else b), (da, db and 0), cores=(2, 2))
        out = fn(a, b, *rest, **kw)
        return (squeeze(out, -1) if vec else out), 0

    return batch


# ---- triangular solve ----------------------------------------------------------------

_TRANS = {0: 0, "N": 0, "n": 0, 1: 1, "T": 1, "t": 1, 2: 2, "C": 2, "c": 2}


def _trans_code(trans) -> int:
    try:
        return _TRANS[trans]
    except (KeyError, TypeError):
        raise ValueError(f"solve_triangular: trans must be 0, 1, 2 or 'N', 'T', 'C', got "
                         f"{trans!r}") from None


def _solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                      check_finite=True):
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


def _op_of(x, code: int):
    """``op(x)`` of the triangular solve: x, x^T or x^H."""
    return x if code == 0 else mT(x) if code == 1 else mH(x)


def _st_solve(a, y, code, lower, unit, vec):
    """``solve_triangular`` where ``y`` is a batch of vectors (``vec``) or of matrices."""
    if vec and y.ndim > 1:
        return squeeze(solve_triangular(a, col(y), code, lower, unit), -1)
    return solve_triangular(a, y, code, lower, unit)


def _st_adjoint(a, g, code, lower, unit, vec):
    """Solve ``op(T)^H y = g`` (the gradient for ``b``)."""
    if code == 1 and is_complex(a):
        # op(T)^H = conj(T), which LAPACK does not offer: conj(T) y = g <=> T conj(y) = conj(g)
        return conj(_st_solve(a, conj(g), 0, lower, unit, vec))
    return _st_solve(a, g, 2 if code == 0 else 0, lower, unit, vec)


def _st_vjp_a(g, x, a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
              check_finite=True):
    code = _trans_code(trans)
    vec = b.ndim == 1
    gm = -outer_h(_st_adjoint(a, g, code, lower, unit_diagonal, vec), x, vec)
    return tri(_op_of(gm, code), lower, unit_diagonal)


def _st_vjp_b(g, x, a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
              check_finite=True):
    return _st_adjoint(a, g, _trans_code(trans), lower, unit_diagonal, b.ndim == 1)


def _st_jvp_a(t, x, a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
              check_finite=True):
    code = _trans_code(trans)
    vec = b.ndim == 1
    dm = _op_of(tri(t, lower, unit_diagonal), code)
    return -_st_solve(a, mv(dm, x, vec), code, lower, unit_diagonal, vec)


solve_triangular = op(_solve_triangular, name="linalg.solve_triangular", linear=(1,),
                      vjp=(_st_vjp_a, _st_vjp_b), jvp=(_st_jvp_a, None),
                      batch=solve_batch(lambda a, b, *rest, **kw: solve_triangular(
                          a, b, *rest, **kw)))
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
overwrite_b, check_finite : bool
    Accepted for SciPy compatibility; ``b`` is never overwritten.

Returns
-------
Tensor
    ``x``, with the shape of ``b`` broadcast against the batch of ``a``.
"""


# ---- inverse, solve, determinants -----------------------------------------------------


def _inv(a):
    a = square_matrices("inv", a)
    return np.linalg.inv(a)


inv = op(_inv, name="linalg.inv", save_args=False, batch="broadcast",
         vjp=lambda g, ans, a: -matmul(mH(ans), matmul(g, mH(ans))),
         jvp=lambda t, ans, a: -matmul(ans, matmul(t, ans)))
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


def _solve(a, b):
    a, b = square_matrices("solve", a), as_array(b)
    return np.linalg.solve(a, b)


def _solve_vjp_b(g, x, a, b):
    return mv_solve(mH(a), g, b.ndim == 1)


def _solve_vjp_a(g, x, a, b):
    vec = b.ndim == 1
    return -outer_h(mv_solve(mH(a), g, vec), x, vec)


def mv_solve(a, b, vec: bool):
    """``solve(a, b)`` where ``b`` is a batch of vectors (``vec``) or of matrices."""
    if vec and b.ndim > 1:
        return squeeze(solve(a, col(b)), -1)
    return solve(a, b)


solve = op(_solve, name="linalg.solve", linear=(1,),
           vjp=(_solve_vjp_a, _solve_vjp_b), batch=solve_batch(lambda a, b: solve(a, b)),
           jvp=(lambda t, x, a, b: -mv_solve(a, mv(t, x, b.ndim == 1), b.ndim == 1), None))
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


def _det(a):
    a = square_matrices("det", a)
    return np.linalg.det(a)


def _nearly_singular(a, det_a) -> bool:
    """Whether ``det(a) inv(a)`` would lose the adjugate to rounding for some matrix:
    ``|det(a)|`` at most ``sqrt(eps)`` times the product of the rows' norms (Hadamard's
    bound on it, so the test does not depend on the scale)."""
    a, d = data_of(a), data_of(det_a)
    bound = np.prod(np.linalg.norm(a, axis=-1), axis=-1)
    return bool(np.any(np.abs(d) <= np.finfo(a.dtype).eps ** 0.5 * bound))


def adjugate(a, det_a):
    """The adjugate ``adj(a)`` (``d det(a) = tr(adj(a) da)``), also for singular matrices.

    ``det(a) inv(a)`` when every matrix is well away from singular; otherwise from the SVD
    ``a = u diag(s) vh``: ``det(u) det(vh) vh^H diag(prod_{j != i} s_j) u^H``.
    """
    if not _nearly_singular(a, det_a):
        return col(col(det_a)) * inv(a)
    if isinstance(a, Tensor) and a.dtype.kind == "c":
        # Differentiating this SVD route again is wrong for complex matrices (the null
        # singular vectors' phases); refuse rather than return a wrong answer.
        raise NotImplementedError(
            "linalg.det: second derivatives at a singular complex matrix are not "
            "supported (first derivatives are). Perturb the matrix off the singular set, "
            "or differentiate det of the real and imaginary parts.")
    from .linalg_spectral import svd

    u, s, vh = svd(a, False)
    n = s.shape[-1]
    others = 1
    for j in range(n):  # prod_{j != i} s_j, without dividing by a zero s_i
        others = others * where(np.arange(n) == j, 1, s[..., j:j + 1])
    phase = det(u) * det(vh)
    return col(col(phase)) * matmul(mH(vh) * row(others), mH(u))


det = op(_det, name="linalg.det", batch="broadcast",
         vjp=lambda g, ans, a: col(col(g)) * mH(adjugate(a, ans)),
         jvp=lambda t, ans, a: _sum(mT(adjugate(a, ans)) * t, axis=(-2, -1)))
det.__doc__ = """Determinant of (a batch of) square matrices (numpy.linalg.det).

The gradient is ``g * conj(adj(a))^T``; for a singular matrix the adjugate comes from the
SVD, so it stays finite and correct (``det`` of a rank-deficient matrix has a gradient).

Parameters
----------
a : (..., n, n) Tensor or array_like

Returns
-------
Tensor
"""


def _slogdet(a):
    a = square_matrices("slogdet", a)
    sign, logabsdet = np.linalg.slogdet(a)
    return sign, logabsdet


def _inv_for_log(a, sign):
    if np.any(data_of(sign) == 0):
        raise np.linalg.LinAlgError(
            "linalg.slogdet: a matrix is singular, so log|det| = -inf has no gradient; use "
            "det, whose gradient is finite there")
    return inv(a)


def _slogdet_vjp(g, ans, a):
    gs, gl = g
    sign = ans[0]
    c = gl
    if gs is not None and is_complex(sign):
        # sign = det/|det| moves by i Im(tr(a^{-1} da)) * sign
        c2 = -1j * imag(conj(gs) * sign)
        c = c2 if c is None else c + c2
    if c is None:
        return None
    return col(col(c)) * mH(_inv_for_log(a, sign))


def _slogdet_jvp(t, ans, a):
    sign = ans[0]
    d = _sum(diag(matmul(_inv_for_log(a, sign), t)), axis=-1)
    if not is_complex(d):
        return None, d
    return sign * (1j * imag(d)), real(d)


slogdet_op = op(_slogdet, name="linalg.slogdet", nout=2, vjp=_slogdet_vjp, jvp=_slogdet_jvp,
                batch="broadcast")


# ---- pseudo-inverse and least squares -----------------------------------------------


def pinv_vjp(a, p, g, hermitian=False):
    """Gradient for ``a`` of ``p = pinv(a)`` given the gradient ``g`` for ``p`` (Golub and
    Pereyra's derivative, valid where the rank is locally constant)."""
    ph = mH(p)
    gh = mH(g)
    x2 = matmul(gh, matmul(p, ph))
    y3 = matmul(matmul(ph, p), gh)
    ga = (-matmul(ph, matmul(g, ph)) + x2 - matmul(a, matmul(p, x2))
          + y3 - matmul(matmul(y3, p), a))
    return herm(ga) if hermitian else ga


def pinv_jvp(a, p, t, hermitian=False):
    """Tangent of ``pinv(a)`` for a tangent ``t`` of ``a``."""
    if hermitian:
        t = herm(t)
    th = mH(t)
    ph = mH(p)
    return (-matmul(p, matmul(t, p))
            + matmul(matmul(p, ph), th - matmul(th, matmul(a, p)))
            + matmul(th - matmul(p, matmul(a, th)), matmul(ph, p)))


def _pinv(a, rcond=None, hermitian=False, rtol=None):
    kw = {} if rtol is None else {"rtol": rtol}
    return np.linalg.pinv(a, rcond=rcond, hermitian=hermitian, **kw)


pinv = op(_pinv, name="linalg.pinv", batch="broadcast",
          vjp=lambda g, p, a, rcond=None, hermitian=False, rtol=None: pinv_vjp(a, p, g,
                                                                               hermitian),
          jvp=lambda t, p, a, rcond=None, hermitian=False, rtol=None: pinv_jvp(a, p, t,
                                                                               hermitian))
pinv.__doc__ = """Moore-Penrose pseudo-inverse (numpy.linalg.pinv).

The gradient assumes the rank is constant near ``a`` (no singular value at the cutoff).
With ``hermitian=True`` only the lower triangle is read and the gradient is Hermitian.

Parameters
----------
a : (..., m, n) Tensor or array_like
rcond, rtol : float, optional
    Cutoff for small singular values, relative to the largest (NumPy's meaning).
hermitian : bool
    ``a`` is Hermitian.

Returns
-------
Tensor
    ``(..., n, m)``.
"""


def lstsq_rtol(a, rcond):
    """The relative singular-value cutoff NumPy's ``lstsq`` uses for ``rcond``."""
    eps = np.finfo(a.dtype).eps
    if rcond is None:
        return eps * max(a.shape[-2:])
    return eps if rcond < 0 else rcond


def _lstsq_solution(a, b, rcond=None):
    a, b = as_array(a), as_array(b)
    if a.ndim < 2:
        raise np.linalg.LinAlgError(f"lstsq: a must be (..., m, n), got shape {a.shape}")
    vec = b.ndim == 1
    shape = np.broadcast_shapes(a.shape[:-2], () if vec else b.shape[:-2])
    m, n = a.shape[-2:]
    a_b = np.broadcast_to(a, shape + (m, n))
    b_b = b if vec else np.broadcast_to(b, shape + b.shape[-2:])
    out = np.empty(shape + (n,) + (() if vec else b.shape[-1:]),
                   dtype=np.result_type(a.dtype, b.dtype))
    for idx in np.ndindex(*shape):
        out[idx] = np.linalg.lstsq(a_b[idx], b if vec else b_b[idx], rcond=rcond)[0]
    return out


def _lstsq_vjp_a(g, x, a, b, rcond=None):
    p = pinv(a, rtol=lstsq_rtol(a, rcond))
    return pinv_vjp(a, p, outer_h(g, b, b.ndim == 1))


def _lstsq_vjp_b(g, x, a, b, rcond=None):
    return mv(mH(pinv(a, rtol=lstsq_rtol(a, rcond))), g, b.ndim == 1)


def _lstsq_jvp_a(t, x, a, b, rcond=None):
    p = pinv(a, rtol=lstsq_rtol(a, rcond))
    return mv(pinv_jvp(a, p, t), b, b.ndim == 1)


lstsq_solution = op(_lstsq_solution, name="linalg.lstsq", linear=(1,),
                    vjp=(_lstsq_vjp_a, _lstsq_vjp_b), jvp=(_lstsq_jvp_a, None),
                    batch=solve_batch(lambda a, b, rcond=None: lstsq_solution(a, b, rcond)))
lstsq_solution.__doc__ = """The minimum-norm least-squares solution ``pinv(a) @ b``, batched
(the first output of numpy.linalg.lstsq)."""


# ---- Cholesky --------------------------------------------------------------------------


def _cholesky(a, upper=False):
    a = square_matrices("cholesky", a)
    return np.linalg.cholesky(a, upper=upper)


def _cholesky_vjp(g, ans, a, upper=False):
    low = mH(ans) if upper else ans
    gl = mH(g) if upper else g
    z = matmul(mH(low), gl)
    lower = tril(z, -1)
    w = (lower + mH(lower) + real_diag_matrix(z)) * 0.5
    t1 = solve_triangular(low, w, 2, True)  # L^{-H} W
    return mH(solve_triangular(low, mH(t1), 2, True))  # L^{-H} W L^{-1}


def _cholesky_jvp(t, ans, a, upper=False):
    low = mH(ans) if upper else ans
    s1 = solve_triangular(low, herm(t), 0, True)
    s = mH(solve_triangular(low, mH(s1), 0, True))  # L^{-1} herm(t) L^{-H}
    dl = matmul(low, tril(s, -1) + real_diag_matrix(s) * 0.5)
    return mH(dl) if upper else dl


cholesky = op(_cholesky, name="linalg.cholesky", save_args=False, batch="broadcast",
              vjp=_cholesky_vjp, jvp=_cholesky_jvp)
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


# ---- cross product ---------------------------------------------------------------------


def _cross(x1, x2, axis=-1):
    x1, x2 = as_array(x1), as_array(x2)
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(f"cross: both inputs must have 3 entries along axis {axis}, got "
                         f"shapes {x1.shape} and {x2.shape}")
    return np.cross(x1, x2, axis=axis)


def _cconj(x):
    return conj(x) if is_complex(x) else x


def _cross_batch(dims, x1, x2, axis=-1):
    # the axis counted from the end is the same in both once they are aligned
    ends = {normalize_axis_index(axis, np.ndim(x) - (d is not None)) - np.ndim(x) + (
        d is not None) for x, d in zip((x1, x2), dims)}
    if len(ends) != 1:
        return NotImplemented
    return cross(*aligned((x1, x2), dims), axis=ends.pop()), 0


cross = op(_cross, name="linalg.cross", save_ans=False, linear=True,
           vjp=(lambda g, ans, x1, x2, axis=-1: cross(_cconj(x2), g, axis=axis),
                lambda g, ans, x1, x2, axis=-1: cross(g, _cconj(x1), axis=axis)),
           batch=_cross_batch)
cross.__doc__ = """Cross product of 3-vectors along ``axis`` (numpy.linalg.cross), broadcasting."""


def concat_last(*xs, axis=-1):
    """Concatenate along ``axis`` (default the last), for rules."""
    return concatenate(list(xs), axis=axis)


__all__ = exported(globals())
