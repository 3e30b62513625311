"""Determinants, pseudo-inverse, least squares and rank: ``det``, ``slogdet``, ``pinv``,
``lstsq`` and ``matrix_rank``, the functions that meet rank-deficient matrices.

``det``'s gradient at a singular matrix is the adjugate, from the SVD; ``pinv`` and
``lstsq`` are differentiable where the rank is locally constant (Golub and Pereyra).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

from ..core.backend import implements, namespace
from ..core.op import Op, apply, op
from ..core.presentation import ndim_of, shape_of
from ..core.tensor import Tensor
from ..modes.batched_values import per_example
from ..ops.elementwise import conj, imag, real, where
from ..ops.products import matmul
from ..ops.reductions import sum as _sum
from ..ops.shape import expand_dims
from .helpers import (
    as_array,
    col,
    data_of,
    diag,
    herm,
    is_complex,
    mH,
    mT,
    mv,
    outer_h,
    public,
    row,
    solve_batch,
    square_matrices,
)
from .spectral import svdvals
from .systems import inv

__all__ = ["det", "slogdet", "SlogdetResult", "pinv", "lstsq", "matrix_rank"]

# ---- determinants ----------------------------------------------------------------------


class SlogdetResult(NamedTuple):
    """Result of :func:`slogdet`: ``det = sign * exp(logabsdet)``."""

    sign: Any
    logabsdet: Any


def _det(a: Any) -> Any:
    a = square_matrices("det", a)
    return np.linalg.det(a)


def _nearly_singular(a: Any, det_a: Any) -> bool:
    """Whether ``det(a) inv(a)`` would lose the adjugate to rounding for some matrix:
    ``|det(a)|`` at most ``sqrt(eps)`` times the product of the rows' norms (Hadamard's
    bound on it, so the test does not depend on the scale)."""
    a, d = data_of(a), data_of(det_a)
    xp = namespace(a)
    bound = xp.prod(xp.linalg.vector_norm(a, axis=-1), axis=-1)
    return bool(xp.any(xp.abs(d) <= float(xp.finfo(a.dtype).eps) ** 0.5 * bound))


def adjugate(a: Any, det_a: Any) -> Any:
    """The adjugate ``adj(a)`` (``d det(a) = tr(adj(a) da)``), also for singular matrices.

    ``det(a) inv(a)`` when every matrix is well away from singular; otherwise from the SVD
    (:func:`_adjugate_svd`).
    """
    if not _nearly_singular(a, det_a):
        return col(col(det_a)) * inv(a)
    if isinstance(a, Tensor) and is_complex(a):
        # Differentiating this SVD route again is wrong for complex matrices (the null
        # singular vectors' phases); refuse rather than return a wrong answer.
        raise NotImplementedError(
            "linalg.det: second derivatives at a singular complex matrix are not "
            "supported (first derivatives are). Perturb the matrix off the singular set, "
            "or differentiate det of the real and imaginary parts.")
    return _adjugate_svd(a)


def _svd_adjugate_parts(a: Any) -> tuple[Any, Any, Any, Any]:
    """For ``a = u diag(s) vh`` (arrays): ``u``, ``vh``, ``det(u) det(vh)`` and the
    products ``p[..., i, j] = prod_{k not in {i, j}} s_k`` (on the diagonal:
    ``prod_{k != i} s_k``), without dividing by a zero ``s_k``."""
    xp = namespace(a)
    u, s, vh = xp.linalg.svd(a)
    k = xp.arange(s.shape[-1])
    p = xp.ones(a.shape, dtype=s.dtype)
    for j in range(s.shape[-1]):
        p = p * where((k[:, None] == j) | (k[None, :] == j), 1, s[..., j, None, None])
    phase = xp.linalg.det(u) * xp.linalg.det(vh)
    return u, vh, phase[..., None, None], p


def _adjugate_from_svd(a: Any) -> Any:
    # adj(u s vh) = adj(vh) adj(s) adj(u) = det(u) det(vh) vh^H diag(prod_{k != i} s_k) u^H
    u, vh, phase, p = _svd_adjugate_parts(a)
    return phase * matmul(mH(vh) * row(diag(p)), mH(u))


def _adjugate_map(m: Any, p: Any) -> Any:
    """The derivative of the adjugate at ``diag(s)`` in the direction ``m``: ``-m_ij p_ij``
    off the diagonal, ``sum_{k != i} p_ik m_kk`` on it (each entry of ``adj(s + m)`` is a
    minor of the nearly diagonal ``s + m``). The map is its own adjoint."""
    k = namespace(p).arange(p.shape[-1])
    eye = k[:, None] == k[None, :]
    off = where(eye, 0, p)
    return where(eye, matmul(off, col(diag(m))), -m * off)


def _third_order_refused(g: Any, ans: Any, a: Any) -> Any:
    raise NotImplementedError(
        "linalg.det: third and higher derivatives at a singular matrix are not supported "
        "(first and second derivatives are)")


def _private_op(forward: Callable[..., Any], name: str, vjp: Callable[..., Any],
                jvp: Callable[..., Any]) -> Callable[..., Any]:
    """An op of one input outside ``yaad.registry`` (a helper of det's rules, checked by
    their tests), called on tensors through ``apply`` and directly on arrays."""
    spec = Op(forward=forward, name=name, vjps=(vjp,), jvps=(jvp,), save_args=True,
              save_ans=False, nout=1, variadic=False, elementwise=False, selects=False,
              linear=False)
    spec.batch = "broadcast"

    def fn(a: Any) -> Any:
        return apply(spec, (a,), {}) if isinstance(a, Tensor) else forward(a)

    spec.fn = fn
    return fn


# A zero that depends on a: the adjugate's rules read the SVD of a's values, so their own
# derivatives in a are not there; differentiating them raises instead of dropping them.
_refuse_further = _private_op(lambda a: namespace(a).zeros_like(a), "linalg.det_refused",
                              _third_order_refused, _third_order_refused)


def _adjugate_svd_vjp(g: Any, ans: Any, a: Any) -> Any:
    # d adj(a) = phase vh^H D(u^H da vh^H) u^H for the map D above, its own adjoint
    u, vh, phase, p = _svd_adjugate_parts(data_of(a))
    h = matmul(matmul(vh, g), u) * phase
    out = matmul(matmul(u, _adjugate_map(h, p)), vh)
    return out + _refuse_further(a) if isinstance(a, Tensor) else out


def _adjugate_svd_jvp(t: Any, ans: Any, a: Any) -> Any:
    u, vh, phase, p = _svd_adjugate_parts(data_of(a))
    m = matmul(matmul(mH(u), t), mH(vh))
    out = matmul(matmul(mH(vh), _adjugate_map(m, p)), mH(u)) * phase
    return out + _refuse_further(a) if isinstance(a, Tensor) else out


# (real matrices: the derivatives of a complex one's adjugate refuse above)
_adjugate_svd = _private_op(_adjugate_from_svd, "linalg.adjugate", _adjugate_svd_vjp,
                            _adjugate_svd_jvp)


det = public(op(_det, name="linalg.det", batch="broadcast",
                vjp=lambda g, ans, a: col(col(g)) * mH(adjugate(a, ans)),
                jvp=lambda t, ans, a: _sum(mT(adjugate(a, ans)) * t, axis=(-2, -1))))
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


def _slogdet(a: Any) -> Any:
    a = square_matrices("slogdet", a)
    sign, logabsdet = np.linalg.slogdet(a)
    return sign, logabsdet


def _inv_for_log(a: Any, sign: Any) -> Any:
    sign = data_of(sign)
    if bool(namespace(sign).any(sign == 0)):
        raise np.linalg.LinAlgError(
            "linalg.slogdet: a matrix is singular, so log|det| = -inf has no gradient; use "
            "det, whose gradient is finite there")
    return inv(a)


def _slogdet_vjp(g: Any, ans: Any, a: Any) -> Any:
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


def _slogdet_jvp(t: Any, ans: Any, a: Any) -> Any:
    sign = ans[0]
    d = _sum(diag(matmul(_inv_for_log(a, sign), t)), axis=-1)
    if not is_complex(d):
        return None, d
    return sign * (1j * imag(d)), real(d)


slogdet_op = op(_slogdet, name="linalg.slogdet", nout=2, vjp=_slogdet_vjp, jvp=_slogdet_jvp,
                batch="broadcast")


def slogdet(a: Any) -> SlogdetResult:
    """Sign (or phase) and log of the absolute value of the determinant (numpy.linalg.slogdet).

    Parameters
    ----------
    a : (..., n, n) Tensor or array_like

    Returns
    -------
    SlogdetResult
        ``(sign, logabsdet)``. Both are differentiable; for complex ``a`` the phase
        ``sign`` has a gradient too. A singular matrix has no gradient (``-inf``).
    """
    return SlogdetResult(*slogdet_op(a))


# ---- pseudo-inverse and least squares -----------------------------------------------


def pinv_vjp(a: Any, p: Any, g: Any, hermitian: Any = False) -> Any:
    """Gradient for ``a`` of ``p = pinv(a)`` given the gradient ``g`` for ``p`` (Golub and
    Pereyra's derivative, valid where the rank is locally constant)."""
    ph = mH(p)
    gh = mH(g)
    x2 = matmul(gh, matmul(p, ph))
    y3 = matmul(matmul(ph, p), gh)
    ga = (-matmul(ph, matmul(g, ph)) + x2 - matmul(a, matmul(p, x2))
          + y3 - matmul(matmul(y3, p), a))
    return herm(ga) if hermitian else ga


def pinv_jvp(a: Any, p: Any, t: Any, hermitian: Any = False) -> Any:
    """Tangent of ``pinv(a)`` for a tangent ``t`` of ``a``."""
    if hermitian:
        t = herm(t)
    th = mH(t)
    ph = mH(p)
    return (-matmul(p, matmul(t, p))
            + matmul(matmul(p, ph), th - matmul(th, matmul(a, p)))
            + matmul(th - matmul(p, matmul(a, th)), matmul(ph, p)))


def _pinv(a: Any, rcond: Any = None, hermitian: Any = False, rtol: Any = None) -> Any:
    kw = {} if rtol is None else {"rtol": rtol}
    return np.linalg.pinv(a, rcond=rcond, hermitian=hermitian, **kw)


pinv = public(op(_pinv, name="linalg.pinv", batch="broadcast",
                 vjp=lambda g, p, a, rcond=None, hermitian=False, rtol=None: pinv_vjp(a, p, g,
                                                                                      hermitian),
                 jvp=lambda t, p, a, rcond=None, hermitian=False, rtol=None: pinv_jvp(a, p, t,
                                                                                      hermitian)))
pinv.__doc__ = """Moore-Penrose pseudo-inverse (numpy.linalg.pinv).

The gradient assumes the rank is constant near ``a`` (no singular value at the cutoff).
With ``hermitian=True`` only the lower triangle is read and the gradient is Hermitian.

Parameters
----------
a : (..., m, n) Tensor or array_like
rcond : float, optional
    Cutoff for small singular values, relative to the largest (NumPy's meaning).
rtol : float, optional
    Cutoff for small singular values, relative to the largest (NumPy's meaning).
hermitian : bool
    ``a`` is Hermitian.

Returns
-------
Tensor
    ``(..., n, m)``.
"""


def lstsq_rtol(a: Any, rcond: Any) -> Any:
    """The relative singular-value cutoff NumPy's ``lstsq`` uses for ``rcond``."""
    # (integer and bool matrices are solved in float64, as NumPy does)
    eps = np.finfo(a.dtype if np.issubdtype(a.dtype, np.inexact) else np.float64).eps
    if rcond is None:
        return eps * max(a.shape[-2:])
    return eps if rcond < 0 else rcond


def _lstsq_solution(a: Any, b: Any, rcond: Any = None) -> Any:
    a, b = as_array(a), as_array(b)
    if a.ndim < 2:
        raise np.linalg.LinAlgError(f"lstsq: a must be (..., m, n), got shape {a.shape}")
    vec = b.ndim == 1
    shape = np.broadcast_shapes(a.shape[:-2], () if vec else b.shape[:-2])
    m, n = a.shape[-2:]
    a_b = np.broadcast_to(a, shape + (m, n))
    b_b = b if vec else np.broadcast_to(b, shape + b.shape[-2:])
    out = np.empty(shape + (n,) + (() if vec else b.shape[-1:]),
                   dtype=np.result_type(*(x.dtype if np.issubdtype(x.dtype, np.inexact)
                                          else np.float64 for x in (a, b))))
    for idx in np.ndindex(*shape):
        out[idx] = np.linalg.lstsq(a_b[idx], b if vec else b_b[idx], rcond=rcond)[0]
    return out


def _lstsq_vjp_a(g: Any, x: Any, a: Any, b: Any, rcond: Any = None) -> Any:
    p = pinv(a, rtol=lstsq_rtol(a, rcond))
    return pinv_vjp(a, p, outer_h(g, b, b.ndim == 1))


def _lstsq_vjp_b(g: Any, x: Any, a: Any, b: Any, rcond: Any = None) -> Any:
    return mv(mH(pinv(a, rtol=lstsq_rtol(a, rcond))), g, b.ndim == 1)


def _lstsq_jvp_a(t: Any, x: Any, a: Any, b: Any, rcond: Any = None) -> Any:
    p = pinv(a, rtol=lstsq_rtol(a, rcond))
    return mv(pinv_jvp(a, p, t), b, b.ndim == 1)


lstsq_solution: Callable[..., Any] = op(_lstsq_solution, name="linalg.lstsq", linear=(1,),
                    vjp=(_lstsq_vjp_a, _lstsq_vjp_b), jvp=(_lstsq_jvp_a, None),
                    batch=solve_batch(lambda a, b, rcond=None: lstsq_solution(a, b, rcond)))
lstsq_solution.__doc__ = """The minimum-norm least-squares solution ``pinv(a) @ b``, batched
(the first output of numpy.linalg.lstsq)."""


@per_example()
def lstsq(a: Any, b: Any, rcond: float | None = None) -> tuple[Any, ...]:
    """Least-squares solution of ``a x = b`` (numpy.linalg.lstsq), batched.

    Parameters
    ----------
    a : (..., M, N) Tensor or array_like
    b : (M,) or (..., M, K) Tensor or array_like
    rcond : float, optional
        Singular values below ``rcond * max(s)`` count as zero (default: machine
        precision times ``max(M, N)``).

    Returns
    -------
    x : Tensor
        The minimum-norm solution, differentiable in ``a`` and ``b`` (where the rank is
        locally constant).
    residuals : Tensor
        Squared residual norms per column, or an empty array when the rank is below N or
        ``M <= N`` (as in NumPy).
    rank : int or ndarray of int
    s : Tensor
        Singular values of ``a``.
    """
    if not isinstance(a, Tensor) and not isinstance(b, Tensor) and np.ndim(a) == 2:
        return np.linalg.lstsq(a, b, rcond=rcond)
    x = lstsq_solution(a, b, rcond=rcond)
    s = svdvals(a)
    sd = data_of(s)
    m, n = shape_of(a)[-2:]
    rank = np.sum(sd > lstsq_rtol(data_of(a), rcond) * sd[..., :1], axis=-1)
    if np.all(rank == n) and m > n:
        r = matmul(a, x if ndim_of(b) > 1 else expand_dims(x, -1))
        r = r - (b if ndim_of(b) > 1 else expand_dims(b, -1))
        residuals = _sum(abs(r) ** 2, axis=-2)
    else:
        residuals = np.empty((0,), dtype=sd.dtype)
    return x, residuals, (int(rank) if np.ndim(rank) == 0 else rank), s


# ---- rank -----------------------------------------------------------------------------


def matrix_rank(A: Any, tol: Any = None, hermitian: bool = False, *,
                rtol: Any = None) -> Any:
    """Rank by SVD (numpy.linalg.matrix_rank); an integer array without gradient.

    Parameters
    ----------
    A : (..., M, N) Tensor or array_like
    tol : float, optional
        Absolute / relative thresholds, as in NumPy.
    rtol : float, optional
        Absolute / relative thresholds, as in NumPy.
    hermitian : bool

    Returns
    -------
    int or ndarray of int
    """
    if not any(isinstance(x, Tensor) for x in (A, tol, rtol)):
        return _matrix_rank(A, tol, hermitian, rtol)
    return _rank_op(A, tol, hermitian, rtol)  # an op: a compiled replay ranks new values


def _matrix_rank(A: Any, tol: Any, hermitian: bool, rtol: Any) -> Any:
    return np.linalg.matrix_rank(A, tol=tol, hermitian=hermitian, rtol=rtol)


_rank_op = op(lambda A, tol, hermitian, rtol: np.asarray(_matrix_rank(A, tol, hermitian, rtol)),
              name="linalg.matrix_rank", batch="broadcast")


# ---- other libraries' arrays, in their array API namespace xp (yaad.backend) --------------

@implements("linalg.pinv")
def _pinv_xp(xp: Any, a: Any, rcond: Any = None, hermitian: Any = False, rtol: Any = None) -> Any:
    if hermitian:
        raise NotImplementedError("hermitian=True (NumPy's route through eigh)")
    return xp.linalg.pinv(a, rtol=rtol if rtol is not None else rcond)


implements("linalg.det")(lambda xp, a: xp.linalg.det(square_matrices("det", a)))
implements("linalg.slogdet")(lambda xp, a: tuple(xp.linalg.slogdet(square_matrices("slogdet",
                                                                                    a))))
