"""yaad.linalg: NumPy's linear algebra, differentiable, batched and complex.

The functions of ``numpy.linalg`` with their names and signatures, batched over leading
axes ``(..., m, n)``, for real and complex inputs, each with a VJP and a JVP (so second
derivatives and forward mode work), plus SciPy's ``expm``, ``logm``, ``sqrtm``,
``solve_triangular``, ``solve_sylvester``, ``solve_continuous_lyapunov``,
``solve_banded``, ``polar`` and ``schur`` (without gradient). ``numpy.linalg.f(t)`` on a
tensor calls ``yaad.linalg.f``.

Differences from NumPy, all deliberate:

- ``eig`` and ``eigvals`` always return complex arrays (NumPy returns real ones when all
  eigenvalues happen to be real, a value-dependent dtype that breaks differentiation).
- ``eigh``, ``eig`` and ``svd`` take ``eps=``: Lorentzian broadening of the gradient for
  losses that depend on the basis inside a degenerate subspace (see ``docs/linalg.md``).
- ``lstsq`` is batched too; ``residuals`` is then ``(..., K)``.

Gradients stay finite where the mathematics allows: degenerate eigenvalues and singular
values (for losses that do not depend on the basis inside the degenerate subspace), the
norm at zero (subgradient 0), singular matrices in ``det``. Where a gradient does not
exist (the loss depends on an eigenvector's phase) a :class:`GaugeError` says so.
"""

from __future__ import annotations

import operator
from typing import Any, NamedTuple

import numpy as np
from numpy.linalg import LinAlgError

from .batching import per_example
from .grad_mode import is_grad_enabled
from .op import op
from .ops.elementwise import conj
from .ops.linalg_basic import (
    cholesky,
    cross,
    data_of,
    det,
    inv,
    lstsq_rtol,
    lstsq_solution,
    pinv,
    slogdet_op,
    solve,
    solve_triangular,
)
from .ops.linalg_matfuncs import expm, logm, sqrtm
from .ops.linalg_norms import matrix_norm, norm, vector_norm
from .ops.linalg_scipy import (
    polar,
    schur,
    solve_banded,
    solve_continuous_lyapunov,
    solve_sylvester,
)
from .ops.linalg_spectral import GaugeError
from .ops.linalg_spectral import eig as _eig
from .ops.linalg_spectral import eigh as _eigh
from .ops.linalg_spectral import qr as _qr
from .ops.linalg_spectral import svd as _svd
from .ops.products import matmul as _matmul
from .ops.products import outer as _outer
from .ops.products import tensordot as _tensordot
from .ops.products import trace as _trace
from .ops.reductions import sum as _sum
from .ops.shape import diagonal as _diagonal
from .ops.shape import expand_dims, reshape, squeeze
from .ops.shape import matrix_transpose as _matrix_transpose
from .tensor import Tensor, dtype_of, ndim_of, shape_of

__all__ = [
    "LinAlgError", "GaugeError", "EighResult", "EigResult", "SVDResult", "QRResult",
    "SlogdetResult", "trace", "diagonal", "det", "slogdet", "inv", "pinv", "solve", "lstsq",
    "cholesky", "qr", "eigh", "eigvalsh", "eig", "eigvals", "svd", "svdvals", "norm",
    "matrix_norm", "vector_norm", "cond", "matrix_rank", "matrix_power", "cross", "outer",
    "tensordot", "vecdot", "matmul", "matrix_transpose", "multi_dot", "tensorinv",
    "tensorsolve", "expm", "logm", "sqrtm", "solve_triangular", "solve_sylvester",
    "solve_continuous_lyapunov", "solve_banded", "polar", "schur",
]

# The ops keep their "linalg."-prefixed names in errors and in the registry; as functions
# of this namespace they go by NumPy's names.
for _f in (cholesky, cross, det, inv, pinv, solve, solve_triangular, expm, logm, sqrtm,
           solve_sylvester, solve_banded):
    _f.__name__ = _f.__qualname__ = _f.op.name.removeprefix("linalg.")


class EighResult(NamedTuple):
    """Result of :func:`eigh`: ascending real ``eigenvalues`` and ``eigenvectors`` (columns)."""

    eigenvalues: Any
    eigenvectors: Any


class EigResult(NamedTuple):
    """Result of :func:`eig`: complex ``eigenvalues`` and unit-norm ``eigenvectors`` (columns)."""

    eigenvalues: Any
    eigenvectors: Any


class SVDResult(NamedTuple):
    """Result of :func:`svd`: ``a = U @ diag(S) @ Vh``, ``S`` descending."""

    U: Any
    S: Any
    Vh: Any


class QRResult(NamedTuple):
    """Result of :func:`qr`: ``a = Q @ R``."""

    Q: Any
    R: Any


class SlogdetResult(NamedTuple):
    """Result of :func:`slogdet`: ``det = sign * exp(logabsdet)``."""

    sign: Any
    logabsdet: Any


def _is_tensor(*xs) -> bool:
    return any(isinstance(x, Tensor) for x in xs)


def _check_eps(name: str, eps: Any) -> None:
    if eps is not None and not eps > 0:
        raise ValueError(f"{name}: eps must be None or a positive float, got {eps!r}")


def _ndim(x) -> int:
    return ndim_of(x)


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    """Sum of the diagonal of each matrix, over the last two axes (numpy.linalg.trace).

    Parameters
    ----------
    x : (..., m, n) Tensor or array_like
    offset : int
        Diagonal above (> 0) or below (< 0) the main one.
    dtype : data-type, optional

    Returns
    -------
    Tensor
        Shape ``(...)``.
    """
    if _ndim(x) < 2:
        raise ValueError(f"trace: the input must be at least 2-D, got shape {shape_of(x)}")
    return _trace(x, offset, -2, -1, dtype)


def diagonal(x: Any, /, *, offset: int = 0) -> Any:
    """The diagonals of the matrices in the last two axes (numpy.linalg.diagonal).

    Parameters
    ----------
    x : (..., m, n) Tensor or array_like
    offset : int

    Returns
    -------
    Tensor
    """
    return _diagonal(x, offset, -2, -1)


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


@per_example()
def lstsq(a: Any, b: Any, rcond: float | None = None) -> tuple:
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
    if not _is_tensor(a, b) and np.ndim(a) == 2:
        return np.linalg.lstsq(a, b, rcond=rcond)
    x = lstsq_solution(a, b, rcond=rcond)
    s = svdvals(a)
    sd = data_of(s)
    m, n = shape_of(a)[-2:]
    rank = np.sum(sd > lstsq_rtol(data_of(a), rcond) * sd[..., :1], axis=-1)
    if np.all(rank == n) and m > n:
        r = _matmul(a, x if _ndim(b) > 1 else expand_dims(x, -1))
        r = r - (b if _ndim(b) > 1 else expand_dims(b, -1))
        residuals = _sum(abs(r) ** 2, axis=-2)
    else:
        residuals = np.empty((0,), dtype=sd.dtype)
    return x, residuals, (int(rank) if np.ndim(rank) == 0 else rank), s


def qr(a: Any, mode: str = "reduced") -> Any:
    """QR decomposition (numpy.linalg.qr), batched.

    Parameters
    ----------
    a : (..., M, N) Tensor or array_like
    mode : {'reduced', 'complete', 'r', 'raw'}
        'reduced': ``Q`` is (M, K), ``R`` (K, N), ``K = min(M, N)``; 'complete': ``Q`` is
        (M, M); 'r': ``R`` only; 'raw': LAPACK's ``(h, tau)``, not differentiable.

    Returns
    -------
    QRResult or Tensor or tuple
        With ``mode='complete'`` and ``M > N`` the last ``M - N`` columns of ``Q`` are an
        arbitrary basis: a loss may depend on them only through their span.
    """
    if mode in ("reduced", "complete"):
        return QRResult(*_qr(a, mode == "complete"))
    if mode == "r":
        return _qr(a, False)[1]
    if mode == "raw":
        if isinstance(a, Tensor) and a.requires_grad and is_grad_enabled():
            raise ValueError("qr: mode='raw' is not differentiable; use mode='reduced' or "
                             "'complete', or call it under yaad.no_grad()")
        return _qr_raw(a)
    raise ValueError(f"qr: unrecognized mode {mode!r}; use 'reduced', 'complete', 'r' or 'raw'")


@per_example()
def _qr_raw(a: Any) -> tuple:
    h, tau = np.linalg.qr(data_of(a), "raw")
    return (Tensor(h), Tensor(tau)) if isinstance(a, Tensor) else (h, tau)


def eigh(a: Any, UPLO: str = "L", *, eps: float | None = None) -> EighResult:
    """Eigenvalues and eigenvectors of Hermitian matrices (numpy.linalg.eigh), batched.

    Parameters
    ----------
    a : (..., n, n) Tensor or array_like
        Only the triangle ``UPLO`` is read.
    UPLO : {'L', 'U'}
    eps : float, optional
        Lorentzian broadening of ``1/(l_i - l_j)`` in the gradient, for losses that depend
        on the eigenvectors inside a degenerate eigenspace (otherwise a
        :class:`GaugeError`); see ``docs/linalg.md``.

    Returns
    -------
    EighResult
        ``(eigenvalues, eigenvectors)``, eigenvalues ascending. The gradient is the one
        for Hermitian perturbations (that of ``eigh((a + a^H) / 2)``). It is finite and exact
        for degenerate eigenvalues when the loss depends only on eigenvalues or on whole
        eigenspaces; a loss depending on complex eigenvector phases raises GaugeError.
    """
    _check_eps("eigh", eps)
    return EighResult(*_eigh(a, UPLO, eps=eps))


def eigvalsh(a: Any, UPLO: str = "L") -> Any:
    """Eigenvalues of Hermitian matrices, ascending (numpy.linalg.eigvalsh).

    Parameters
    ----------
    a : (..., n, n) Tensor or array_like
    UPLO : {'L', 'U'}

    Returns
    -------
    Tensor
        Its gradient ``V diag(g) V^H`` is exact for repeated eigenvalues too.
    """
    if not isinstance(a, Tensor):
        return np.linalg.eigvalsh(a, UPLO)
    return _eigh(a, UPLO)[0]


def eig(a: Any, *, eps: float | None = None) -> EigResult:
    """Eigenvalues and right eigenvectors of general square matrices (numpy.linalg.eig).

    Parameters
    ----------
    a : (..., n, n) Tensor or array_like
    eps : float, optional
        Lorentzian broadening for degenerate eigenvalues, as in :func:`eigh`.

    Returns
    -------
    EigResult
        ``(eigenvalues, eigenvectors)``, always complex (unlike NumPy); eigenvectors have
        unit norm. Each is defined up to a phase: a loss must not depend on it.
    """
    _check_eps("eig", eps)
    return EigResult(*_eig(a, eps=eps))


def eigvals(a: Any) -> Any:
    """Eigenvalues of general square matrices (numpy.linalg.eigvals), always complex.

    Parameters
    ----------
    a : (..., n, n) Tensor or array_like

    Returns
    -------
    Tensor
    """
    if not isinstance(a, Tensor):
        w = np.linalg.eigvals(a)
        return w.astype(np.result_type(w.dtype, np.complex64), copy=False)
    return _eig(a)[0]


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        *, eps: float | None = None) -> Any:
    """Singular value decomposition (numpy.linalg.svd), batched.

    Parameters
    ----------
    a : (..., M, N) Tensor or array_like
    full_matrices : bool
        ``U`` (M, M) and ``Vh`` (N, N) if True (NumPy's default), else (M, K) and (K, N),
        ``K = min(M, N)``. The extra columns are an arbitrary basis: a loss may depend on
        them only through their span.
    compute_uv : bool
        If False, return the singular values only.
    hermitian : bool
        ``a`` is Hermitian (only its lower triangle is read; the gradient is Hermitian).
    eps : float, optional
        Lorentzian broadening for degenerate singular values, as in :func:`eigh`.

    Returns
    -------
    SVDResult or Tensor
        ``(U, S, Vh)`` with ``a = U @ diag(S) @ Vh``, or ``S``. Gradients are exact for
        repeated and zero singular values when the loss does not depend on the basis
        inside the degenerate subspaces (functions of ``S``, subspaces, ``U @ Vh``,
        ``U @ diag(S) @ Vh`` and the bonds ``(U S^p, S^(1-p) Vh)`` of a tensor network);
        repeated values among the discarded ones of a truncation leave second derivatives
        exact too. A loss depending on a basis or on the phases of complex singular
        vectors raises GaugeError (see ``docs/linalg.md``).
    """
    _check_eps("svd", eps)
    if not compute_uv:
        if not isinstance(a, Tensor):
            return np.linalg.svd(a, compute_uv=False, hermitian=hermitian)
        return _svd(a, False, hermitian, eps=eps)[1]
    return SVDResult(*_svd(a, full_matrices, hermitian, eps=eps))


def svdvals(x: Any, /) -> Any:
    """Singular values, descending (numpy.linalg.svdvals).

    Parameters
    ----------
    x : (..., M, N) Tensor or array_like

    Returns
    -------
    Tensor
        Its gradient ``U diag(g) Vh`` is exact for repeated singular values too.
    """
    return svd(x, compute_uv=False)


def cond(x: Any, p: Any = None) -> Any:
    """Condition number (numpy.linalg.cond).

    Parameters
    ----------
    x : (..., M, N) Tensor or array_like
    p : {None, 1, -1, 2, -2, inf, -inf, 'fro', 'nuc'}
        None or 2: the ratio of the largest to the smallest singular value.

    Returns
    -------
    Tensor
    """
    if p is None or p in (2, -2):
        s = svdvals(x)
        ratio = s[..., 0] / s[..., -1]
        return 1 / ratio if p == -2 else ratio
    return matrix_norm(x, ord=p) * matrix_norm(inv(x), ord=p)


def matrix_rank(A: Any, tol: Any = None, hermitian: bool = False, *,
                rtol: Any = None) -> Any:
    """Rank by SVD (numpy.linalg.matrix_rank); an integer array without gradient.

    Parameters
    ----------
    A : (..., M, N) Tensor or array_like
    tol, rtol : float, optional
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
    if not _is_tensor(a):
        return np.linalg.matrix_power(a, n)
    if _ndim(a) < 2 or a.shape[-1] != a.shape[-2]:
        raise LinAlgError(f"matrix_power: expected square matrices (..., m, m), got shape "
                          f"{a.shape}")
    if n == 0:
        return Tensor(np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape).copy())
    if n < 0:
        a, n = inv(a), -n
    result = None
    while n:
        if n & 1:
            result = a if result is None else _matmul(result, a)
        n >>= 1
        if n:
            a = _matmul(a, a)
    return result


def outer(x1: Any, x2: Any, /) -> Any:
    """Outer product of two vectors (numpy.linalg.outer: 1-D inputs only).

    Parameters
    ----------
    x1 : (M,) Tensor or array_like
    x2 : (N,) Tensor or array_like

    Returns
    -------
    Tensor
        (M, N), ``x1[i] * x2[j]`` (no conjugation).
    """
    if _ndim(x1) != 1 or _ndim(x2) != 1:
        raise ValueError(f"outer: both inputs must be 1-D, got shapes {shape_of(x1)} "
                         f"and {shape_of(x2)}")
    return _outer(x1, x2)


def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2) -> Any:
    """Tensor contraction over ``axes`` (numpy.linalg.tensordot).

    Parameters
    ----------
    x1, x2 : Tensor or array_like
    axes : int or (sequence, sequence)
        The last ``axes`` axes of ``x1`` with the first of ``x2``, or explicit lists.

    Returns
    -------
    Tensor
    """
    return _tensordot(x1, x2, axes)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """Vector dot product along ``axis``, conjugating ``x1`` (numpy.linalg.vecdot).

    Parameters
    ----------
    x1, x2 : Tensor or array_like
        Broadcast against each other.
    axis : int

    Returns
    -------
    Tensor
        ``sum(conj(x1) * x2, axis)``.
    """
    if dtype_of(x1).kind == "c":
        x1 = conj(x1)
    return _sum(x1 * x2, axis=axis)


def matmul(x1: Any, x2: Any, /) -> Any:
    """Matrix product, broadcast over leading axes (numpy.linalg.matmul).

    Parameters
    ----------
    x1, x2 : Tensor or array_like

    Returns
    -------
    Tensor
    """
    return _matmul(x1, x2)


def matrix_transpose(x: Any, /) -> Any:
    """Swap the last two axes (numpy.linalg.matrix_transpose).

    Parameters
    ----------
    x : (..., m, n) Tensor or array_like

    Returns
    -------
    Tensor
    """
    return _matrix_transpose(x)


def _chain_order(dims: list) -> list:
    """Optimal parenthesization of a matrix chain (the classic dynamic programme): the
    split point ``s[i][j]`` of each sub-chain ``i..j``."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = float("inf")
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j] = c
                    split[i][j] = k
    return split


def multi_dot(arrays: Any, *, out: Any = None) -> Any:
    """Product of a chain of matrices in the cheapest order (numpy.linalg.multi_dot).

    Parameters
    ----------
    arrays : sequence of Tensor or array_like
        2-D, except that the first may be 1-D (a row vector) and the last 1-D (a column).
    out : None
        Not supported (TypeError).

    Returns
    -------
    Tensor
    """
    if out is not None:
        raise TypeError("multi_dot: out= is not supported (results are new tensors)")
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError("multi_dot: expecting at least two arrays")
    first_vec = _ndim(arrays[0]) == 1
    last_vec = _ndim(arrays[-1]) == 1
    if first_vec:
        arrays[0] = expand_dims(arrays[0], 0)
    if last_vec:
        arrays[-1] = expand_dims(arrays[-1], -1)
    for k, x in enumerate(arrays):
        if _ndim(x) != 2:
            raise ValueError(f"multi_dot: array {k} must be 2-D (1-D only first or last), "
                             f"got shape {shape_of(x)}")
    dims = [shape_of(x)[0] for x in arrays] + [shape_of(arrays[-1])[1]]
    split = _chain_order(dims)

    def product(i: int, j: int) -> Any:
        if i == j:
            return arrays[i]
        k = split[i][j]
        return _matmul(product(i, k), product(k + 1, j))

    result = product(0, len(arrays) - 1)
    if first_vec and last_vec:
        return reshape(result, ())
    if first_vec:
        return squeeze(result, 0)
    if last_vec:
        return squeeze(result, -1)
    return result


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
    from .ops.shape import moveaxis

    if axes is not None:
        nd = _ndim(a)
        axes = [ax % nd for ax in axes]
        a = moveaxis(a, axes, list(range(nd - len(axes), nd)))
    shape = shape_of(a)
    nb = _ndim(b)
    rows = int(np.prod(shape[:nb]))
    x = solve(reshape(a, (rows, -1)), reshape(b, (rows,)))
    return reshape(x, shape[nb:])
