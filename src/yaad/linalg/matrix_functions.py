"""Matrix functions (``expm``, ``logm``, ``sqrtm``), batched, with gradients from the
Frechet derivative, and the polar decomposition (``polar``), written with ``sqrtm``.

For a primary matrix function ``f``, the Frechet derivative ``L_f(a, e)`` is the upper
right block of ``f([[a, e], [0, a]])``, and the VJP is its adjoint
``conj(L_f(a^T, conj(g)))`` (Higham, "Functions of Matrices", 3.2; Mathias 1996). Both
are computed with ``f`` itself, so second derivatives come from the same rule.

``polar``: from the SVD ``a = W S V^H``: ``u = W V^H`` and ``p = V S V^H`` (or ``W S
W^H``); its derivatives are those of ``p = sqrtm(a^H a)``, ``u = a p^-1``, which stay
defined where singular values repeat.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import scipy.linalg as sla

from ..core.backend import dtype_kind, implements, namespace
from ..core.op import op
from ..core.tensor import Tensor
from ..modes.batched_values import per_example
from ..ops.elementwise import conj
from ..ops.products import matmul
from .helpers import as_array, data_of, mH, mT, public, square_matrices
from .spectral import svd_op
from .systems import inv

if TYPE_CHECKING:
    from ..core.op import OpFunction

__all__ = ["expm", "logm", "sqrtm", "polar"]

_PADE_DTYPES = (np.dtype(np.float64), np.dtype(np.complex128))  # (SciPy computes in these)


def _block_upper(a: Any, e: Any) -> Any:
    n = a.shape[-1]
    # (the usual call, from the VJP: a and e of one shape and dtype, without NumPy's
    # Python-level broadcast_shapes and result_type)
    same = a.shape == e.shape and a.dtype == e.dtype
    batch = a.shape[:-2] if same else np.broadcast_shapes(a.shape[:-2], e.shape[:-2])
    out = np.zeros(batch + (2 * n, 2 * n), dtype=a.dtype if same else np.result_type(a, e))
    out[..., :n, :n] = a
    out[..., n:, n:] = a
    out[..., :n, n:] = e
    return out


def _zeros_of(t: Any) -> Any:
    return namespace(data_of(t)).zeros(t.shape[-2:], dtype=t.dtype)


block_upper: Callable[..., Any] = op(
    _block_upper, name="linalg.block_upper", save_args=False, save_ans=False, batch="broadcast",
    vjp=(lambda g, ans, a, e: g[..., :a.shape[-1], :a.shape[-1]] + g[..., a.shape[-1]:,
                                                                     a.shape[-1]:],
         lambda g, ans, a, e: g[..., :a.shape[-1], a.shape[-1]:]),
    jvp=(lambda t, ans, a, e: block_upper(t, _zeros_of(t)),
         lambda t, ans, a, e: block_upper(_zeros_of(t), t)))
block_upper.__doc__ = """The block matrix ``[[a, e], [0, a]]`` (batched)."""


def frechet(f: Any, a: Any, e: Any) -> Any:
    """The Frechet derivative ``L_f(a, e)`` of the matrix function ``f`` at ``a`` in the
    direction ``e``: the upper right block of ``f([[a, e], [0, a]])``."""
    n = a.shape[-1]
    return f(block_upper(a, e))[..., :n, n:]


def _conj(x: Any) -> Any:
    kind = getattr(x.dtype, "kind", None)  # (NumPy's, without a call on its path)
    return conj(x) if (kind if kind is not None else dtype_kind(x.dtype)) == "c" else x


_CUT = ("linalg.{name}: the matrix{where} has {what} on the branch cut of the principal "
        "{fn} (the closed negative real axis), where {name} jumps: {why}, so it has no "
        "derivative there. {todo}")
_REAL_TODO = ("To differentiate the value SciPy returns (the upper side of the cut), pass "
              "the complex matrix a + 1j * eps * I with a small eps > 0.")
_COMPLEX_TODO = ("Move the eigenvalue off the axis (a + 1j * eps * I picks the upper side, "
                 "SciPy's value); a real matrix with a simple negative eigenvalue is "
                 "differentiable (a real perturbation keeps it on the axis).")


def _off_the_cut(name: str, a: Any) -> float:
    """Raise ``LinAlgError`` where ``logm`` or ``sqrtm`` has no derivative at ``a``: an
    eigenvalue 0; for a complex matrix, an eigenvalue on the negative real axis (a complex
    perturbation crosses it); for a real one, a repeated negative eigenvalue (a real
    perturbation splits it into a complex pair on both sides of the cut: logm(-I + t J)
    jumps from i pi I to pi J). A simple negative eigenvalue of a real matrix stays on the
    axis under real perturbations: the derivative exists (SciPy's side of the cut).

    Returns the angle ``phi`` by which to turn the matrix clockwise before its Frechet
    derivative is computed (0 if no eigenvalue is on the cut): ``f`` on the turned block
    matrix, whose eigenvalues are off the cut, with the branch of SciPy's value
    (``log z = log(e^-i phi z) + i phi``, ``sqrt z = e^(i phi / 2) sqrt(e^-i phi z)``).
    On the block itself a repeated negative eigenvalue came out of the Schur form as a
    complex pair on both sides of the cut (the gradient of logm at a real matrix with the
    eigenvalues -1, -2.5, 3 was 1e18)."""
    a = data_of(a)
    if type(a) is not np.ndarray or a.shape[-1] == 0:
        return 0.0
    w = np.linalg.eigvals(a)
    n = a.shape[-1]
    eps = np.finfo(a.dtype).eps
    scale = np.max(np.abs(w), axis=-1, keepdims=True)
    # (rounding: a simple eigenvalue moves by ~eps, a repeated (Jordan) one by ~sqrt(eps))
    exact, split = 100 * n * eps * scale, n * math.sqrt(eps) * scale
    fn = "logarithm" if name == "logm" else "square root"
    zero = np.abs(w) <= exact
    if zero.any():
        where = _batch_index(zero)
        raise np.linalg.LinAlgError(_CUT.format(
            name=name, where=where, what="the eigenvalue 0", fn=fn,
            why=("log 0 = -inf" if name == "logm" else "the derivative of sqrt at 0 is "
                 "infinite, and a perturbation makes the eigenvalue negative"),
            todo="Shift the matrix (a + eps * I)."))
    if a.dtype.kind == "c":
        on = (np.abs(w.imag) <= exact) & (w.real < 0)
        if on.any():
            lam = w[on][0]
            raise np.linalg.LinAlgError(_CUT.format(
                name=name, where=_batch_index(on), what=f"the eigenvalue {lam.real:.6g}",
                fn=fn, why="a perturbation of its imaginary part crosses the cut",
                todo=_COMPLEX_TODO))
        return 0.0
    near = (np.abs(w.imag) <= split) & (w.real < 0)
    if not near.any():
        return 0.0
    close = np.abs(w[..., :, None] - w[..., None, :]) <= split[..., None]
    repeated = near & ((close & near[..., None, :]).sum(axis=-1) > 1)
    if repeated.any():
        lam = w[repeated][0].real
        raise np.linalg.LinAlgError(_CUT.format(
            name=name, where=_batch_index(repeated),
            what=f"the repeated eigenvalue {lam:.6g}", fn=fn,
            why="a real perturbation splits it into a complex pair on both sides of the cut",
            todo=_REAL_TODO))
    return _turn_angle(w, near)


def _turn_angle(w: Any, near: Any) -> float:
    """An angle to turn eigenvalues ``w`` clockwise by, less than half that between the cut
    and the eigenvalues below it (``near``: those taken as on the cut)."""
    below = np.pi - np.abs(np.angle(w[(w.imag < 0) & ~near]))
    return float(min(0.5, 0.5 * below.min())) if below.size else 0.5


def _sqrtm(a: Any) -> Any:
    """SciPy's sqrtm, checked where it is complex for a real matrix: SciPy 1.17 returned a
    wrong root for a real matrix already in real Schur form with a negative eigenvalue
    (``[[1, .5, 0], [-.5, 1, 0], [0, 0, -1]]``: the square of its result was off by 0.5);
    there it is ``e^(i phi / 2) sqrtm(e^(-i phi) a)``, turned off the cut."""
    out = sla.sqrtm(a)
    if a.dtype.kind == "c" or out.dtype.kind != "c" or a.size == 0:
        return out
    tol = 1e3 * a.shape[-1] * np.finfo(a.dtype).eps * max(1.0, float(np.abs(a).max()))
    bad = np.abs(out @ out - a).max(axis=(-1, -2)) > tol * np.maximum(
        1.0, np.abs(out).max(axis=(-1, -2)) ** 2)
    if not np.any(bad):
        return out
    out = np.array(out, copy=True)
    for i in zip(*np.nonzero(bad)) if bad.ndim else [()]:
        w = np.linalg.eigvals(a[i])
        phi = _turn_angle(w, (w.imag == 0) & (w.real < 0))
        out[i] = np.exp(0.5j * phi) * sla.sqrtm(np.exp(-1j * phi) * a[i])
    return out


def _batch_index(mask: Any) -> str:
    """`` (batch index (i, j))`` of the first matrix where ``mask`` (..., n) holds."""
    if mask.ndim == 1:
        return ""
    return f" at batch index {tuple(int(i) for i in np.argwhere(mask.any(axis=-1))[0])}"


def _matrix_function(name: str, forward: Any, frechet_block: Any = None,
                     check: Callable[[str, Any], float] | None = None) -> Any:
    def fwd(A: Any) -> Any:
        A = square_matrices(name, A)
        # Computed in double precision (SciPy's single-precision logm is inaccurate), then
        # returned in the input's precision; always an array that owns its memory.
        dtype = A.dtype
        if type(A) is np.ndarray and dtype in _PADE_DTYPES:
            out = forward(A)
        else:
            out = forward(A.astype(np.promote_types(dtype, np.float64), copy=False))
            if dtype in (np.float32, np.complex64):
                return out.astype(np.complex64 if out.dtype.kind == "c" else np.float32)
        return out if out.base is None else out.copy()

    # The VJP is the adjoint of E -> L_f(A, E): conj(L_f(A^T, conj(g))), which holds for
    # every primary matrix function. (L_f(A^H, g) would need f(conj z) = conj f(z), false
    # on the branch cut: sqrtm and logm of a real matrix with a negative eigenvalue.)
    def turn(A: Any) -> tuple[complex, complex]:
        """(c, k): L_f(A, E) = k L_f(c A, c E) on SciPy's side of the cut (c = k = 1 off
        it; see _off_the_cut)."""
        phi = 0.0 if check is None else check(name, A)
        if not phi:
            return 1, 1
        return complex(np.exp(-1j * phi)), 1 if name == "logm" else complex(np.exp(0.5j * phi))

    def vjp(g: Any, ans: Any, A: Any) -> Any:
        c, k = turn(A)
        if type(g) is np.ndarray and type(A) is np.ndarray:
            # First-order backward on NumPy arrays: the same forwards as below, called
            # directly (each yaad call on arrays would only add its dispatch).
            n = A.shape[-1]
            e = g.conj() if g.dtype.kind == "c" else g
            # (frechet_block: f of the same block, built where f's kernels want it)
            block = None if frechet_block is None else frechet_block(A, e)
            if block is None:
                At = A.swapaxes(-1, -2)
                block = fwd(_block_upper(At, e) if c == 1 else _block_upper(c * At, c * e))
            r = block[..., :n, n:] if k == 1 else k * block[..., :n, n:]
            return r.conj() if r.dtype.kind == "c" else r
        if c == 1:
            return _conj(frechet(fn, mT(A), _conj(g)))
        return _conj(k * frechet(fn, c * mT(A), c * _conj(g)))

    def jvp(t: Any, ans: Any, A: Any) -> Any:
        c, k = turn(A)
        return frechet(fn, A, t) if c == 1 else k * frechet(fn, c * A, c * t)

    fn: OpFunction = public(op(fwd, name=f"linalg.{name}", save_ans=False, batch="broadcast",
                               vjp=vjp, jvp=jvp))
    return fn


# SciPy's expm of one small matrix is its two Pade kernels (Al-Mohy and Higham's choice of
# order and scaling, then the approximant) behind a wrapper that checks the input, loops
# over batch indices and measures the bandwidth for its triangular branch: for a 4x4
# complex matrix 92 k instructions, of which the kernels take 41 k (callgrind). A single
# double-precision matrix that is not triangular gets the kernels directly: the same
# calls as SciPy's generic branch, so the same bits (tests/test_linalg.py compares them).
try:
    from scipy.linalg._matfuncs_expm import pade_UV_calc, pick_pade_structure
except ImportError:  # pragma: no cover - another SciPy layout: its expm, as before
    pick_pade_structure = pade_UV_calc = None


def _pade(work: Any) -> Any:
    """SciPy's Pade kernels on the matrix in ``work[0]`` (their workspace of five matrices),
    then the squarings, as SciPy's generic branch does: the exponential, or None where a
    kernel fails (an allocation: SciPy's expm then raises the error)."""
    m, s = pick_pade_structure(work)
    if m < 0 or pade_UV_calc(work, m) != 0:
        return None
    r = work[0]
    for _ in range(s):
        r = r @ r
    return r if s else r.copy()  # (memory of its own, not the workspace's)


def _generic(a: Any) -> bool:
    """Whether SciPy's expm takes its generic branch for the matrix ``a`` (n >= 2): a
    triangular matrix has a zero in ``a[0, 1]`` or ``a[1, 0]``, and SciPy's own test of the
    rest decides (its triangular branch computes the diagonal exactly)."""
    return bool(a[1, 0] and a[0, 1])


def _expm(a: Any) -> Any:
    """``scipy.linalg.expm(a)``, with SciPy's kernels called directly for one matrix."""
    if (a.ndim != 2 or a.dtype not in _PADE_DTYPES or a.shape[0] < 2
            or pick_pade_structure is None or not _generic(a)):
        return sla.expm(a)
    n = a.shape[0]
    work = np.empty((5, n, n), dtype=a.dtype)  # (the kernels' workspace, as SciPy's)
    work[0] = a
    r = _pade(work)
    return sla.expm(a) if r is None else r


def _expm_frechet_block(a: Any, e: Any) -> Any:
    """``expm([[a^T, e], [0, a^T]])`` for one double-precision matrix ``a`` (expm's VJP),
    built in the kernels' workspace; None for anything else (the general route)."""
    dtype = a.dtype
    if (a.ndim != 2 or e.shape != a.shape or e.dtype != dtype or dtype not in _PADE_DTYPES
            or pick_pade_structure is None):
        return None
    n = a.shape[0]
    work = np.empty((5, 2 * n, 2 * n), dtype=dtype)
    block = work[0]
    at = a.T
    block[:n, :n] = at
    block[n:, n:] = at
    block[n:, :n] = 0
    block[:n, n:] = e
    if n < 1 or not _generic(block):
        return sla.expm(block)
    r = _pade(work)
    return sla.expm(block) if r is None else r


expm = _matrix_function("expm", _expm, _expm_frechet_block)
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

logm = _matrix_function("logm", sla.logm, check=_off_the_cut)
logm.__doc__ = """Principal matrix logarithm, batched (scipy.linalg.logm).

Complex for a real matrix with negative eigenvalues (SciPy's rule); the gradient is
the adjoint Frechet derivative ``conj(L_log(A^T, conj(g)))``. Where no derivative
exists, backward (and forward mode) raise ``numpy.linalg.LinAlgError``: an eigenvalue 0,
a complex matrix with an eigenvalue on the negative real axis (the branch cut), a real
matrix with a repeated negative eigenvalue (``-I``: a real perturbation splits it into a
complex pair on both sides of the cut). A simple negative eigenvalue of a real matrix is
differentiable (real perturbations keep it on the axis).

Parameters
----------
A : (..., n, n) Tensor or array_like

Returns
-------
Tensor
"""

sqrtm = _matrix_function("sqrtm", _sqrtm, check=_off_the_cut)
sqrtm.__doc__ = """Principal matrix square root, batched (scipy.linalg.sqrtm).

Complex for a real matrix with negative eigenvalues (SciPy's rule); the gradient is
the adjoint Frechet derivative ``conj(L_sqrt(A^T, conj(g)))``. Where no derivative
exists, backward (and forward mode) raise ``numpy.linalg.LinAlgError``, as for
:func:`logm` (an eigenvalue 0, the branch cut).

Parameters
----------
A : (..., n, n) Tensor or array_like

Returns
-------
Tensor
"""


# ---- polar decomposition ---------------------------------------------------------------


@per_example("a")  # (SciPy's values, for one matrix)
def polar(a: Any, side: str = "right") -> tuple[Any, ...]:
    """Polar decomposition ``a = u p`` (side "right") or ``a = p u`` (side "left")
    (scipy.linalg.polar), differentiable where ``a`` has full rank.

    The values are SciPy's (from the SVD). The derivatives are those of ``p = sqrtm(a^H
    a)``, ``u = a p^-1`` (or ``p = sqrtm(a a^H)``, ``u = p^-1 a``), which stay defined
    where singular values repeat (an orthogonal matrix, say), unlike the SVD's basis;
    when that Gram matrix is singular (``a`` wide for "right", tall for "left") they
    come from the SVD, whose gauge the factors do not depend on.

    Parameters
    ----------
    a : (m, n) array_like or Tensor
    side : {"right", "left"}

    Returns
    -------
    u : Tensor or ndarray
        (m, n) with orthonormal columns (or rows).
    p : Tensor or ndarray
        Hermitian positive semi-definite, (n, n) for "right", (m, m) for "left".
    """
    if side not in ("right", "left"):
        raise ValueError(f"polar: side must be 'right' or 'left', got {side!r}")
    a = as_array(a)
    if a.ndim != 2:
        raise ValueError(f"polar: a must be a 2-D array, got shape {a.shape}")
    m, n = a.shape
    if not isinstance(a, Tensor) or not (m >= n if side == "right" else m <= n):
        w, s, vh = svd_op(a, False)
        u = matmul(w, vh)
        p = matmul(mH(vh) * s, vh) if side == "right" else matmul(w * s, mH(w))
        return u, p
    u0, p0 = polar(a.data, side)
    if side == "right":
        p = sqrtm(matmul(mH(a), a))
        u = matmul(a, inv(p))
    else:
        p = sqrtm(matmul(a, mH(a)))
        u = matmul(inv(p), a)
    # SciPy's values, these derivatives: x - x.detach() is exactly 0 and carries x's
    return u0 + (u - u.detach()), p0 + (p - p.detach())


# ---- other libraries' arrays, in their array API namespace xp (yaad.backend) --------------

@implements("linalg.block_upper")
def _block_upper_xp(xp: Any, a: Any, e: Any) -> Any:
    batch = np.broadcast_shapes(a.shape[:-2], e.shape[:-2])
    dtype = xp.result_type(a, e)
    a = xp.astype(xp.broadcast_to(a, batch + a.shape[-2:]), dtype)
    e = xp.astype(xp.broadcast_to(e, batch + e.shape[-2:]), dtype)
    zero = xp.zeros_like(a)
    return xp.concat([xp.concat([a, e], axis=-1), xp.concat([zero, a], axis=-1)], axis=-2)


# Higham's (2005) [13/13] Pade approximant of exp, accurate to double precision for
# ||A||_1 <= 5.37 (after scaling by a power of two, undone by squaring).
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def _norm1(xp: Any, a: Any) -> Any:
    """The 1-norm (largest column sum) of each matrix."""
    return xp.max(xp.sum(xp.abs(a), axis=-2), axis=-1)


@implements("linalg.expm")
def _expm_xp(xp: Any, a: Any) -> Any:
    a = square_matrices("expm", a)
    single = dtype_kind(a.dtype) in "fc" and xp.finfo(a.dtype).bits == 32
    if single or dtype_kind(a.dtype) not in "fc":  # (computed in double precision)
        a = xp.astype(a, xp.complex128 if dtype_kind(a.dtype) == "c" else xp.float64)
    if not bool(xp.all(xp.isfinite(a))):
        raise NotImplementedError("a matrix with inf or NaN entries")
    eye = xp.eye(a.shape[-1], dtype=a.dtype)
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    # The scaling of Al-Mohy and Higham (2009): by the norms of powers, which for a
    # non-normal matrix are much smaller than ||A||^k (fewer squarings, less rounding).
    d6, d8, d10 = (_norm1(xp, p) ** (1 / k) for p, k in ((a6, 6), (a4 @ a4, 8), (a4 @ a6, 10)))
    eta = xp.minimum(xp.maximum(d6, d8), xp.maximum(d8, d10))
    top = float(xp.max(eta)) if eta.size else 0.0
    s = max(0, math.ceil(math.log2(top / _THETA13))) if top > _THETA13 else 0
    if s:
        a, a2, a4, a6 = a / 2.0 ** s, a2 / 4.0 ** s, a4 / 16.0 ** s, a6 / 64.0 ** s
    b = _PADE13
    u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2
             + b[1] * eye)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
    r = xp.linalg.solve(v - u, v + u)
    for _ in range(s):
        r = r @ r
    if single:
        r = xp.astype(r, xp.complex64 if dtype_kind(r.dtype) == "c" else xp.float32)
    return r
