"""``scipy.linalg`` beyond NumPy: ``solve_sylvester``, ``solve_continuous_lyapunov``,
``solve_banded``, ``polar`` and ``schur`` (without gradient).

- ``solve_sylvester``: ``A X + X B = Q``. Differentiating, ``A dX + dX B = dQ - dA X -
  X dB``: the JVP is one more Sylvester solve, and the VJP solves the adjoint equation
  ``A^H Y + Y B^H = G``, then ``grad Q = Y``, ``grad A = -Y X^H``, ``grad B = -X^H Y``.
  Batched over leading axes (a loop of SciPy calls).
- ``solve_continuous_lyapunov``: ``A X + X A^H = Q`` is ``solve_sylvester(A, A^H, Q)``.
- ``solve_banded``: ``A x = b`` with ``A`` in LAPACK's band storage
  (``ab[u + i - j, j] = A[i, j]``). The adjoint system uses the band storage of ``A^H``
  (rows reversed and shifted, conjugated); the gradient for ``ab`` is ``-y x^H`` read on
  the band.
- ``polar``: from the SVD ``a = W S V^H``: ``u = W V^H`` and ``p = V S V^H`` (or ``W S
  W^H``), composed of ``yaad.linalg.svd``, so its gradient is the SVD's for a loss that
  does not depend on the SVD's gauge, as the polar factors do not.
- ``schur``: the Schur vectors are unique only up to a phase per column (and, for real
  output, up to the basis of each 2x2 block), and the order of the eigenvalues along the
  diagonal is LAPACK's: a gradient exists only for losses invariant under those choices,
  and is not implemented. ``schur`` of a tensor that requires grad raises, naming
  ``yaad.linalg.eig`` and ``eigvals`` for eigenvalue losses.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg as sla

from ..batching import columns, per_example
from ..op import op
from ..tensor import Tensor
from .elementwise import conj
from .linalg_basic import as_array, inv, mH, square_matrices
from .linalg_matfuncs import sqrtm
from .linalg_spectral import svd
from .products import matmul
from .reductions import sum as _sum
from .shape import getitem, pad, stack


def _batched(fn, *mats):
    """``fn`` of the matrices of each batch entry (broadcast leading axes)."""
    batch = np.broadcast_shapes(*(m.shape[:-2] for m in mats))
    if not batch:
        return fn(*mats)
    mats = [np.broadcast_to(m, batch + m.shape[-2:]) for m in mats]
    first = fn(*(m[(0,) * len(batch)] for m in mats))
    out = np.empty(batch + first.shape, dtype=first.dtype)
    for idx in np.ndindex(*batch):
        out[idx] = fn(*(m[idx] for m in mats))
    return out


def _sylvester(a, b, q):
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


def _adjoint(g, a, b):
    return solve_sylvester(mH(a), mH(b), g)


solve_sylvester = op(
    _sylvester, name="linalg.solve_sylvester", batch="broadcast",
    vjp=(lambda g, x, a, b, q: -matmul(_adjoint(g, a, b), mH(x)),
         lambda g, x, a, b, q: -matmul(mH(x), _adjoint(g, a, b)),
         lambda g, x, a, b, q: _adjoint(g, a, b)),
    jvp=(lambda t, x, a, b, q: solve_sylvester(a, b, -matmul(t, x)),
         lambda t, x, a, b, q: solve_sylvester(a, b, -matmul(x, t)),
         lambda t, x, a, b, q: solve_sylvester(a, b, t)))
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
    a, q : (..., n, n) array_like or Tensor

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


def _banded(l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True):
    return sla.solve_banded(l_and_u, ab, b, check_finite=check_finite)


def _banded_vjp_ab(g, x, l_and_u, ab, b, *rest, **kw):
    lower, upper = l_and_u
    y = solve_banded((upper, lower), _band_adjoint(lower, upper, ab), g)
    return -_band_outer(lower, upper, y, x)


def _banded_vjp_b(g, x, l_and_u, ab, b, *rest, **kw):
    lower, upper = l_and_u
    return solve_banded((upper, lower), _band_adjoint(lower, upper, ab), g)


def _banded_jvp_ab(t, x, l_and_u, ab, b, *rest, **kw):
    return solve_banded(l_and_u, ab, -_band_matvec(*l_and_u, t, x))


def _banded_batch(dims, l_and_u, ab, b, *rest, **kw):
    if dims[1] is not None or any(d is not None for d in dims[3:]):
        return NotImplemented  # a band per example: SciPy solves one at a time
    cols, back = columns(b, dims[2])  # one band: the examples' right-hand sides as columns
    return back(solve_banded(l_and_u, ab, cols, *rest, **kw))


solve_banded = op(_banded, name="linalg.solve_banded", linear=(2,),
                  vjp=(None, _banded_vjp_ab, _banded_vjp_b), jvp=(None, _banded_jvp_ab, None),
                  batch=_banded_batch)
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
overwrite_ab, overwrite_b : bool
    Ignored (inputs are never overwritten).
check_finite : bool

Returns
-------
Tensor or ndarray
"""


# ---- decompositions --------------------------------------------------------------------


@per_example("a")  # (SciPy's values, for one matrix)
def polar(a: Any, side: str = "right") -> tuple:
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
        w, s, vh = svd(a, False)
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


def _schur(a, output="real", lwork=None, overwrite_a=False, sort=None, check_finite=True):
    return sla.schur(a, output=output, lwork=lwork, sort=sort, check_finite=check_finite)


@per_example("a")  # (LAPACK's, for one matrix)
def schur(a: Any, output: str = "real", lwork: Any = None, overwrite_a: bool = False,
          sort: Any = None, check_finite: bool = True) -> tuple:
    """Schur decomposition ``a = z t z^H`` (scipy.linalg.schur), without gradient.

    The Schur vectors are unique only up to a phase per column (for real output, up to
    the basis of each 2x2 block) and the eigenvalues' order on the diagonal is LAPACK's
    choice: a gradient exists only for losses invariant under those choices, and it is
    not implemented. A tensor that requires grad raises ``TypeError``; for eigenvalues use
    ``yaad.linalg.eigvals`` or ``eig``, which have gradients.

    Parameters
    ----------
    a : (n, n) array_like or Tensor
    output : {"real", "complex"}
    lwork, overwrite_a, sort, check_finite
        As SciPy's (``overwrite_a`` is ignored).

    Returns
    -------
    t, z : Tensor or ndarray
        (and ``sdim`` when ``sort`` is given), without gradient.
    """
    if isinstance(a, Tensor) and a.requires_grad:
        raise TypeError(
            "linalg.schur: no gradient: the Schur vectors are defined only up to a phase per "
            "column (and a basis of each 2x2 block for real output) and the eigenvalue "
            "order is LAPACK's, so the gradient exists only for losses invariant under "
            "those choices, and yaad does not implement it. Use yaad.linalg.eigvals or eig "
            "for losses of eigenvalues, or a.detach() if no gradient is wanted.")
    out = _schur(a.data if isinstance(a, Tensor) else a, output, lwork, overwrite_a, sort,
                 check_finite)
    if isinstance(a, Tensor):
        return tuple(Tensor(o) if isinstance(o, np.ndarray) else o for o in out)
    return out
