"""Spectral decompositions (eigh, eig, svd, qr) with gradients that stay finite.

Degenerate spectra
    The rules divide by differences of eigenvalues (``l_j - l_i``) or of singular values
    (``s_j -+ s_i``), and by the singular values themselves. Where such a denominator is
    zero to working precision (``|x| <= 100 * n * eps * max|l|``) the term is set to 0:
    for a loss that depends only on the eigenvalues, or on quantities that do not depend
    on the basis chosen inside a degenerate subspace (projectors onto the whole subspace,
    ``u @ diag(s) @ vh``, sums over a degenerate block), the numerator vanishes there in
    exact arithmetic, so 0 is the exact value, where an unmasked rule would divide
    rounding errors by zero. If the numerator does not vanish, the loss depends on that
    basis, the derivative does not exist, and :class:`GaugeError` says so. The keyword
    ``eps=`` then replaces every ``1/x`` by the Lorentzian ``x / (x^2 + eps^2)`` instead: a
    finite gradient, biased by about ``eps^2 / x^2`` for the well-separated pairs.

Phases
    Complex eigenvectors and singular vectors are determined up to a phase each
    (``v -> v e^{i phi}``; for the SVD, the same phase on ``u_i`` and ``v_i``). A loss that
    depends on those phases has no gradient: the rules check that the imaginary part of
    ``diag(V^H gV)`` (``diag(U^H gU + V^H gV)`` for the SVD) vanishes, and raise
    :class:`GaugeError` if not.

Hermitian inputs
    ``eigh`` reads the lower triangle only; its gradient is the one for Hermitian
    perturbations (that of ``eigh((a + a^H) / 2)``), which is Hermitian, as in PyTorch.
"""

from __future__ import annotations

import numpy as np

from ..op import exported, op
from .elementwise import conj, imag, real, where
from .linalg_basic import (
    col,
    concat_last,
    data_of,
    diag,
    diag_matrix,
    herm,
    is_complex,
    mH,
    mT,
    real_diag_matrix,
    row,
    solve,
    solve_triangular,
    square_matrices,
)
from .products import matmul
from .shape import tril, triu


class GaugeError(RuntimeError):
    """The loss depends on a choice the decomposition leaves free (an eigenvector's phase,
    or the basis inside a degenerate subspace), so its gradient does not exist."""

    def __str__(self) -> str:
        return f"{super().__str__()} (see docs/errors.md#gauge-error)"


_PHASE = ("{name}: the loss depends on the phases of the complex {what}, which are arbitrary "
          "(each is determined only up to a factor e^(i phi)), so its gradient is not "
          "defined. Make the loss invariant to them, e.g. use abs(v) or v @ v^H instead of v.")
_FREE = ("{name}: the loss depends on the {what}, an arbitrary orthonormal basis of the "
         "orthogonal complement, so its gradient is not defined. Use the reduced "
         "decomposition, or make the loss depend on that subspace only (a projector).")
_COUPLED = ("{name}: at equal {what}, the loss depends both on those values and on the "
            "basis of their subspace{example}: that part of the derivative is a 0/0 limit which "
            "the gradients reaching {name} do not determine. {advice}Pass eps= to accept "
            "a gradient without that term.")
_DEGENERATE = ("{name}: the loss depends on the basis chosen inside a degenerate subspace "
               "(equal {what}), where the derivative does not exist. Make the loss depend on "
               "the whole subspace (a projector, a sum over the block), or pass eps= (for "
               "example 1e-12) for a Lorentzian-broadened, finite gradient.")


def _check(num, mask, scale: float, message: str) -> None:
    """Raise :class:`GaugeError` if ``num`` is not negligible where ``mask`` holds.

    Negligible: below ``sqrt(eps)`` times the size of the incoming gradient ``scale``, and
    never above ``sqrt(eps)`` in absolute terms (rounding errors of a cotangent that is
    zero in exact arithmetic, as in second derivatives, carry no scale of their own).
    """
    num = np.abs(data_of(num))
    if not num.size or not np.any(mask):
        return
    limit = np.sqrt(np.finfo(num.dtype).eps) * max(scale, 1.0)
    if np.any(np.where(mask, num, 0) > limit):
        raise GaugeError(message)


def _negligible(x, scale: float):
    """Where ``x`` is negligible, in the sense of :func:`_check` (x may be the number 0)."""
    x = np.abs(data_of(x))
    return x <= np.sqrt(np.finfo(x.dtype if x.dtype.kind in "fc" else float).eps) * max(scale,
                                                                                     1.0)


def degenerate_pairs(values, tol):
    """``(i, j)``, ``i != j``, with ``|values_i - values_j| <= tol`` and ``values_i`` not
    zero: a mask of shape ``(..., k, k)``."""
    v = data_of(values)
    k = v.shape[-1]
    t = tol[..., None]
    return ((np.abs(v[..., None, :] - v[..., :, None]) <= t) & ~np.eye(k, dtype=bool)
            & (np.abs(v[..., :, None]) > t))


def _scale(*xs) -> float:
    return max((float(np.max(np.abs(data_of(x)))) for x in xs if x is not None and x.size),
               default=0.0)


def degeneracy_tol(values, n: int):
    """Values closer than this are equal to working precision: ``100 n eps max|values|``,
    per matrix of the batch, shape ``(..., 1)``."""
    v = np.abs(data_of(values))
    return 100 * n * np.finfo(v.dtype).eps * np.max(v, axis=-1, keepdims=True)


def _lorentz(x, eps: float):
    """``1/x`` broadened: ``conj(x) / (|x|^2 + eps^2)``."""
    if is_complex(x):
        return conj(x) / (real(x * conj(x)) + eps * eps)
    return x / (x * x + eps * eps)


def inverse_gaps(diff, tol, eps, num=None, scale: float = 0.0, message: str = ""):
    """``1 / diff`` off the diagonal and 0 on it, with degenerate entries masked.

    Where ``|diff| <= tol`` the entry is 0, after checking that ``num`` (the matrix the
    result will multiply) vanishes there; with ``eps`` the Lorentzian replaces ``1/x``.
    """
    n = diff.shape[-1]
    off = ~np.eye(n, dtype=bool)
    if eps is not None:
        return _lorentz(diff, eps) * off
    flat = (np.abs(data_of(diff)) <= tol[..., None]) & off
    if num is not None:
        _check(num, flat, scale, message)
    zero = flat | ~off
    return where(zero, 0, 1 / where(zero, 1, diff))


def inverse_values(s, tol, eps, num=None, scale: float = 0.0, message: str = ""):
    """``1 / s`` for non-negative values, 0 where ``s <= tol`` (``num`` checked there)."""
    if eps is not None:
        return _lorentz(s, eps)
    zero = data_of(s) <= tol
    if num is not None:
        _check(num, zero, scale, message)
    return where(zero, 0, 1 / where(zero, 1, s))


def fold_complement(q, gq, k: int, message: str):
    """Fold the gradient of the free columns ``q[..., k:]`` (an arbitrary orthonormal basis
    of the complement of ``q[..., :k]``) into the gradient of the first ``k`` columns.

    The complement moves with ``q1`` as ``dq2 = -q1 dq1^H q2`` up to a rotation, which the
    loss must not depend on (the skew part of ``q2^H gq2`` vanishes).
    """
    q1 = q[..., :k]
    if gq is None:
        return q1, None
    q2 = q[..., k:]
    g2 = gq[..., k:]
    x = matmul(mH(q2), g2)
    _check(x - mH(x), True, _scale(gq), message)
    return q1, gq[..., :k] - matmul(q2, matmul(mH(g2), q1))


def _extend_complement(q, dq1, k: int):
    """The tangent of all columns of ``q`` from that of the first ``k`` (see above)."""
    q1, q2 = q[..., :k], q[..., k:]
    return concat_last(dq1, -matmul(q1, matmul(mH(dq1), q2)))


# ---- eigh --------------------------------------------------------------------------------


def _eigh(a, UPLO="L", eps=None):
    a = square_matrices("eigh", a)
    w, v = np.linalg.eigh(a, UPLO)
    return w, v


def _eigh_vjp(g, ans, a, UPLO="L", eps=None):
    gw, gv = g
    w, v = ans
    vh = mH(v)
    inner = None
    if gv is not None:
        j = matmul(vh, gv)
        scale = _scale(gw, gv)
        if is_complex(j):
            _check(imag(diag(j)), True, scale, _PHASE.format(name="linalg.eigh",
                                                             what="eigenvectors"))
        skew = (j - mH(j)) * 0.5
        tol = degeneracy_tol(w, w.shape[-1])
        f = inverse_gaps(row(w) - col(w), tol, eps, skew, scale,
                         _DEGENERATE.format(name="linalg.eigh", what="eigenvalues"))
        if eps is None:
            _eigh_coupling_check(w, tol, j, gw, scale)
        inner = f * skew
    if gw is not None:
        inner = diag_matrix(gw) if inner is None else inner + diag_matrix(gw)
    return matmul(v, matmul(inner, vh))


def _eigh_coupling_check(w, tol, j, gw, scale) -> None:
    """At equal eigenvalues the term of the Hermitian part of ``V^H gV`` is a 0/0 limit (the
    divided difference of ``f`` in ``V diag(f(w)) V^H``). It is 0 when the loss depends on the
    degenerate eigenvectors only through their span (``gw`` zero there) or not at all."""
    flat = degenerate_pairs(w, tol)
    if gw is None or not flat.any():
        return
    quiet = _negligible(gw, scale)
    ok = _negligible((j + mH(j)) * 0.5, scale) | (quiet[..., :, None] & quiet[..., None, :])
    if np.any(flat & ~ok):
        raise GaugeError(_COUPLED.format(
            name="linalg.eigh", what="eigenvalues", example=" (as V diag(f(w)) V^H does)",
            advice="For V f(w) V^H use a matrix function (yaad.linalg.expm, logm, sqrtm), or "
                   "make the loss depend on the eigenvectors only through projectors. "))


def _eigh_jvp(t, ans, a, UPLO="L", eps=None):
    w, v = ans
    dp = matmul(mH(v), matmul(herm(t), v))
    f = inverse_gaps(row(w) - col(w), degeneracy_tol(w, w.shape[-1]), eps)
    dw = diag(dp)
    return (real(dw) if is_complex(dw) else dw), matmul(v, f * dp)


eigh = op(_eigh, name="linalg.eigh", nout=2, save_args=False, vjp=_eigh_vjp, jvp=_eigh_jvp)


# ---- eig ---------------------------------------------------------------------------------


def _eig(a, eps=None):
    a = square_matrices("eig", a)
    w, v = np.linalg.eig(a)
    ctype = np.result_type(a.dtype, np.complex64)
    return w.astype(ctype, copy=False), v.astype(ctype, copy=False)


def _eig_vjp(g, ans, a, eps=None):
    gw, gv = g
    w, v = ans
    vh = mH(v)
    inner = None
    if gv is not None:
        j = matmul(vh, gv)
        scale = _scale(gw, gv) * _scale(v) ** 2
        _check(imag(diag(j)), True, scale, _PHASE.format(name="linalg.eig", what="eigenvectors"))
        # Columns of unit norm: the part of gV along each column's own length is not seen.
        num = j - matmul(vh, v) * row(real(diag(j)))
        e = row(w) - col(w)
        f = inverse_gaps(conj(e), degeneracy_tol(w, w.shape[-1]), eps, num, scale,
                         _DEGENERATE.format(name="linalg.eig", what="eigenvalues"))
        inner = f * num
    if gw is not None:
        inner = diag_matrix(gw) if inner is None else inner + diag_matrix(gw)
    return solve(vh, matmul(inner, vh))


def _eig_jvp(t, ans, a, eps=None):
    w, v = ans
    dp = solve(v, matmul(t, v))
    c = inverse_gaps(row(w) - col(w), degeneracy_tol(w, w.shape[-1]), eps) * dp
    c = c - real_diag_matrix(matmul(matmul(mH(v), v), c))  # keep the columns of unit norm
    return diag(dp), matmul(v, c)


eig = op(_eig, name="linalg.eig", nout=2, save_args=False, vjp=_eig_vjp, jvp=_eig_jvp)


# ---- svd ---------------------------------------------------------------------------------


def _svd(a, full_matrices=True, hermitian=False, eps=None):
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices, hermitian=hermitian)
    return u, s, vh


def _svd_core_vjp(u, s, v, gu, gs, gv, eps, scale):
    """Gradient of the reduced SVD ``a = u diag(s) v^H`` (``u``: m x k, ``v``: n x k);
    ``scale`` is the size of the incoming gradients (for the checks)."""
    m, n, k = u.shape[-2], v.shape[-2], s.shape[-1]
    tol = degeneracy_tol(s, max(m, n))
    name = "linalg.svd"
    j = None if gu is None else matmul(mH(u), gu)
    kk = None if gv is None else matmul(mH(v), gv)
    inner = None
    if j is not None or kk is not None:
        sj = 0 if j is None else j - mH(j)
        sk = 0 if kk is None else kk - mH(kk)
        plus, minus = sj + sk, sj - sk
        # (sj_ab s_b + s_a sk_ab) / (s_b^2 - s_a^2), split into 1/(s_b - s_a) and 1/(s_b + s_a)
        fm = inverse_gaps(row(s) - col(s), tol, eps, plus, scale,
                          _DEGENERATE.format(name=name, what="singular values"))
        fp = inverse_gaps(row(s) + col(s), tol, eps, minus, scale,
                          _DEGENERATE.format(name=name, what="zero singular values"))
        inner = (fm * plus + fp * minus) * 0.5
        if eps is None:
            inner = inner + _svd_degenerate_term(s, tol, j, kk, gs, scale)
        if is_complex(inner):
            im_j = 0 if j is None else imag(diag(j))
            im_k = 0 if kk is None else imag(diag(kk))
            _check(im_j + im_k, True, scale, _PHASE.format(name=name, what="singular vectors"))
            phase = im_j - im_k
            inner = inner + diag_matrix(0.5j * phase * inverse_values(
                s, tol, eps, phase, scale, _DEGENERATE.format(name=name,
                                                                what="zero singular values")))
    if gs is not None:
        inner = diag_matrix(gs) if inner is None else inner + diag_matrix(gs)
    ga = matmul(u, matmul(inner, mH(v)))
    if m > k and gu is not None:  # (I - u u^H) gu s^{-1} v^H
        rest = gu - matmul(u, j)
        sinv = inverse_values(s, tol, eps, np.max(np.abs(data_of(rest)), axis=-2), scale,
                              _DEGENERATE.format(name=name, what="zero singular values"))
        ga = ga + matmul(rest * row(sinv), mH(v))
    if n > k and gv is not None:  # u s^{-1} gv^H (I - v v^H)
        rest = gv - matmul(v, kk)
        sinv = inverse_values(s, tol, eps, np.max(np.abs(data_of(rest)), axis=-2), scale,
                              _DEGENERATE.format(name=name, what="zero singular values"))
        ga = ga + matmul(u, col(sinv) * mH(rest))
    return ga


def _svd_degenerate_term(s, tol, j, kk, gs, scale):
    """The Hermitian term of a pair of equal, non-zero singular values ``s_i = s_j``.

    It is the 0/0 limit of ``(sj + sk)_ij / (2 (s_j - s_i))``, which first-order data
    determine in two cases: the loss depends on U and V jointly, as through ``u diag(s) vh``
    or a bond split ``(u, diag(s) vh)`` (then ``herm(U^H gU) = herm(V^H gV) = s P`` in the
    block and the term is ``herm(P)``), or on one of them only through its span (then 0).
    Otherwise :class:`GaugeError`.
    """
    flat = degenerate_pairs(s, tol)
    if not flat.any():
        return 0
    hj = 0 if j is None else (j + mH(j)) * 0.5
    hk = 0 if kk is None else (kk + mH(kk)) * 0.5
    joint = _negligible(hj - hk, scale)
    quiet = True
    if gs is not None:
        q = _negligible(gs, scale)
        quiet = q[..., :, None] & q[..., None, :]
    one_sided = (_negligible(hj, scale) | _negligible(hk, scale)) & quiet
    if np.any(flat & ~(joint | one_sided)):
        raise GaugeError(_COUPLED.format(
            name="linalg.svd", what="singular values",
            example=" through U and V separately (not only through U diag(s) Vh)", advice=""))
    if j is None or kk is None:
        return 0
    use = flat & joint
    return where(use, hj / col(where(data_of(s) <= tol, 1, s)), 0)


def _svd_vjp(g, ans, a, full_matrices=True, hermitian=False, eps=None):
    gu, gs, gvh = g
    u, s, vh = ans
    k = s.shape[-1]
    scale = _scale(gu, gs, gvh)
    free = _FREE.format(name="linalg.svd",
                        what="singular vectors beyond min(m, n) (full_matrices=True)")
    u, gu = fold_complement(u, gu, k, free) if u.shape[-1] > k else (u, gu)
    v = mH(vh)
    gv = None if gvh is None else mH(gvh)
    v, gv = fold_complement(v, gv, k, free) if v.shape[-1] > k else (v, gv)
    ga = _svd_core_vjp(u, s, v, gu, gs, gv, eps, scale)
    return herm(ga) if hermitian else ga


def _svd_jvp(t, ans, a, full_matrices=True, hermitian=False, eps=None):
    if hermitian:
        t = herm(t)
    u, s, vh = ans
    k = s.shape[-1]
    m, n = u.shape[-2], vh.shape[-1]
    u1 = u[..., :k]
    v = mH(vh)
    v1 = v[..., :k]
    tol = degeneracy_tol(s, max(m, n))
    dp = matmul(mH(u1), matmul(t, v1))
    dph = mH(dp)
    sym, asym = dp + dph, dp - dph
    fm = inverse_gaps(row(s) - col(s), tol, eps)
    fp = inverse_gaps(row(s) + col(s), tol, eps)
    om_u = (fm * sym + fp * asym) * 0.5
    om_v = (fm * sym - fp * asym) * 0.5
    sinv = inverse_values(s, tol, eps)
    if is_complex(dp):
        phase = diag_matrix(0.5j * imag(diag(dp)) * sinv)
        om_u = om_u + phase
        om_v = om_v - phase
    du = matmul(u1, om_u)
    dv = matmul(v1, om_v)
    if m > k:
        du = du + (matmul(t, v1) - matmul(u1, dp)) * row(sinv)
    if n > k:
        dv = dv + (matmul(mH(t), u1) - matmul(v1, dph)) * row(sinv)
    if u.shape[-1] > k:
        du = _extend_complement(u, du, k)
    if v.shape[-1] > k:
        dv = _extend_complement(v, dv, k)
    ds = diag(dp)
    return du, (real(ds) if is_complex(ds) else ds), mH(dv)


svd = op(_svd, name="linalg.svd", nout=3, save_args=False, vjp=_svd_vjp, jvp=_svd_jvp)


# ---- qr ------------------------------------------------------------------------------------


def _qr(a, complete=False):
    q, r = np.linalg.qr(a, "complete" if complete else "reduced")
    return q, r


def _rsolve(x, r):
    """``x @ inv(r)`` for upper triangular ``r``."""
    return mT(solve_triangular(r, mT(x), 1, False))


def _qr_tall_vjp(q, r, gq, gr):
    """Gradient of ``a = q r`` for ``q``: m x n with orthonormal columns, ``r``: n x n upper
    triangular with a real diagonal (LAPACK's convention, which fixes the phases)."""
    m = 0
    if gr is not None:
        m = matmul(gr, mH(r))
    if gq is not None:
        m = m - matmul(mH(q), gq)
    upper = triu(m, 1)
    b = matmul(q, upper + mH(upper) + real_diag_matrix(m))
    if gq is not None:
        b = gq + b
    return mH(solve_triangular(r, mH(b), 0, False))  # b r^{-H}


def _qr_vjp(g, ans, a, complete=False):
    gq, gr = g
    q, r = ans
    m, n = q.shape[-2], r.shape[-1]
    k = min(m, n)
    if q.shape[-1] > k:  # complete with m > n: the last m - n columns of q are free
        q, gq = fold_complement(q, gq, k, _FREE.format(
            name="linalg.qr", what="columns of Q beyond n (mode='complete')"))
        r = r[..., :k, :]
        gr = None if gr is None else gr[..., :k, :]
    if m >= n:
        return _qr_tall_vjp(q, r, gq, gr)
    # Wide: a = [x | y] with x = q u (square QR) and y = q w.
    u, w = r[..., :m], r[..., m:]
    gu = gw = None
    if gr is not None:
        gu, gw = gr[..., :m], gr[..., m:]
    if gw is None:
        gy = np.zeros(q.shape[:-2] + (m, n - m), dtype=q.dtype)
    else:
        extra = matmul(matmul(q, w), mH(gw))
        gq = extra if gq is None else gq + extra
        gy = matmul(q, gw)
    return concat_last(_qr_tall_vjp(q, u, gq, gu), gy)


def _qr_tall_jvp(q, r, t):
    x = _rsolve(matmul(mH(q), t), r)
    lower = tril(x, -1)
    c = lower - mH(lower)
    if is_complex(x):
        c = c + 1j * diag_matrix(imag(diag(x)))
    return _rsolve(t, r) - matmul(q, x - c), triu(matmul(x - c, r))


def _qr_jvp(t, ans, a, complete=False):
    q, r = ans
    m, n = q.shape[-2], r.shape[-1]
    if m >= n:
        dq, dr = _qr_tall_jvp(q[..., :n], r[..., :n, :], t)
        if q.shape[-1] > n:
            dq = _extend_complement(q, dq, n)
            dr = concat_last(dr, np.zeros(dr.shape[:-2] + (m - n, n), dtype=dr.dtype), axis=-2)
        return dq, dr
    u, w = r[..., :m], r[..., m:]
    dq, du = _qr_tall_jvp(q, u, t[..., :m])
    dw = matmul(mH(dq), matmul(q, w)) + matmul(mH(q), t[..., m:])
    return dq, concat_last(du, dw)


qr = op(_qr, name="linalg.qr", nout=2, save_args=False, vjp=_qr_vjp, jvp=_qr_jvp)

__all__ = exported(globals())
