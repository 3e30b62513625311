"""Spectral decompositions with gradients that stay finite: ``eigh``, ``eigvalsh``, ``eig``,
``eigvals``, ``svd``, ``svdvals``, ``qr`` (and ``schur``, without gradient).

Degenerate spectra
    The rules divide by differences of eigenvalues (``l_j - l_i``) or of singular values
    (``s_j -+ s_i``), and by the singular values themselves. Where such a denominator is
    zero to working precision (``|x| <= 100 * n * eps * max|l|``) the term is a 0/0 limit.
    Columns that receive no gradient (a truncation) enter as one block, through the
    matrix they span (:func:`resolvent`), so their degeneracies never matter. Among the
    others, the limit is 0 for losses that depend on a degenerate block only through its
    span, and for the SVD ``herm(J + K) / (s_a + s_b)`` for a bond of a tensor network
    (``_svd_degenerate_term``); where the gradients do not say which, where the numerator
    does not vanish (the loss depends on a basis), or where a second derivative would need
    the limit's own derivative (:func:`second_order_guard`), :class:`GaugeError` says so.
    The keyword ``eps=`` replaces every ``1/x`` by the Lorentzian ``x / (x^2 + eps^2)``
    instead: a finite gradient, biased by about ``eps^2 / x^2`` for the well-separated
    pairs. ``docs/linalg.md`` states what is exact and what no rule can do.

Phases
    Complex eigenvectors and singular vectors are determined up to a phase each
    (``v -> v e^{i phi}``; for the SVD, the same phase on ``u_i`` and ``v_i``). A loss that
    depends on those phases has no gradient: the rules check that the imaginary part of
    ``diag(V^H gV)`` (``diag(U^H gU + V^H gV)`` for the SVD) vanishes, and raise
    :class:`GaugeError` if not.

Hermitian inputs
    ``eigh`` reads the lower triangle only; its gradient is the one for Hermitian
    perturbations (that of ``eigh((a + a^H) / 2)``), which is Hermitian, as in PyTorch.

Schur
    The Schur vectors are unique only up to a phase per column (and, for real output, up
    to the basis of each 2x2 block), and the order of the eigenvalues along the diagonal
    is LAPACK's: a gradient exists only for losses invariant under those choices, and is
    not implemented. ``schur`` of a tensor that requires grad raises, naming ``eig`` and
    ``eigvals`` for eigenvalue losses.
"""

from __future__ import annotations

import collections
import linecache
import weakref
from typing import Any, Callable, Literal, NamedTuple, overload

import numpy as np
import scipy.linalg as sla

from ..core.backend import (
    backend_name,
    dtype_kind,
    implements,
    is_foreign,
    namespace,
    no_implementation,
)
from ..core.frames import user_frames
from ..core.grad_mode import engine, is_grad_enabled, state
from ..core.lazy import is_lazy
from ..core.op import op
from ..core.tensor import Tensor
from ..modes.batched_values import BatchAxis, batch_axes, per_example
from ..ops.elementwise import conj, imag, real, where
from ..ops.products import matmul
from ..ops.reductions import sum as _sum
from ..ops.shape import aligned, getitem, tril, triu
from .helpers import (
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
    square_matrices,
)
from .systems import solve, solve_triangular

__all__ = ["GaugeError", "EighResult", "EigResult", "SVDResult", "QRResult", "eigh",
           "eigvalsh", "eig", "eigvals", "svd", "svdvals", "qr", "schur"]


class GaugeError(RuntimeError):
    """The loss depends on a choice the decomposition leaves free (an eigenvector's phase,
    or the basis inside a degenerate subspace), so its gradient does not exist."""

    def __str__(self) -> str:
        return f"{super().__str__()} (see docs/errors.md#gauge-error)"


# ---- where a decomposition was called ---------------------------------------------------
# A GaugeError is raised in backward, far from the line that called the decomposition;
# each call notes where the user's code made it (cheap next to the decomposition), and
# the errors of its rules name that line, and which call from it (a loop of truncations).

# id(an output array) -> (weakref to it, frames, call number)
_SITES: dict[int, tuple[Any, ...]] = {}
_CALLS: collections.Counter[Any] = collections.Counter()


def note_call_site(values: Any) -> None:
    """Remember where the user's code called the decomposition that returned ``values``."""
    frames = user_frames()
    where = frames[0][:2] if frames else None
    _CALLS[where] += 1
    key = id(values)
    _SITES[key] = (weakref.ref(values, lambda _, k=key: _SITES.pop(k, None)),  # type: ignore[misc]
                   frames,
                   _CALLS[where])


def call_site(values: Any) -> str:
    """``values``'s call site, for an error message (empty if unknown)."""
    d = data_of(values)
    entry = _SITES.get(id(d))
    if entry is None or entry[0]() is not d or not entry[1]:
        return ""
    filename, line, function = entry[1][0]
    code = linecache.getline(filename, line).strip()
    return (f" [the call at {filename}, line {line}, in {function}"
            + (f": `{code}`" if code else "")
            + f"; call {entry[2]} from that line in this process]")


def located(rule: Any, name: str, index: int) -> Any:
    """``rule`` with the call site of its decomposition (output ``index``) in its errors."""
    def wrapped(g: Any, ans: Any, *args: Any, **kw: Any) -> Any:
        try:
            return rule(g, ans, *args, **kw)
        except (GaugeError, np.linalg.LinAlgError) as e:
            msg = str(e.args[0] if e.args else e).removeprefix("linalg.resolvent: ")
            site = call_site(ans[index])
            if site and site not in msg:
                raise type(e)(msg + site) from e
            raise
    wrapped.__name__ = getattr(rule, "__name__", name)
    return wrapped


PHASE_ERROR = ("{name}: the loss depends on the phases of the complex {what}, which are arbitrary "
          "(each is determined only up to a factor e^(i phi)), so its gradient is not "
          "defined. Make the loss invariant to them, e.g. use abs(v) or v @ v^H instead of v.")
_FREE = ("{name}: the loss depends on the {what}, an arbitrary orthonormal basis of the "
         "orthogonal complement, so its gradient is not defined. Use the reduced "
         "decomposition, or make the loss depend on that subspace only (a projector).")
_COUPLED = ("{name}: at equal {what}, the loss depends both on those values and on the "
            "basis of their subspace{example}: that part of the derivative is a 0/0 limit which "
            "the gradients reaching {name} do not determine. {advice}Pass eps= to accept "
            "a gradient without that term.")
_SECOND = ("{name}: a second derivative (create_graph=True, hessian, grad of grad) at equal "
           "{what} through vectors of that block: the first derivative there is exact, but "
           "its own derivative is a limit that the chain rule through {name} cannot reach "
           "(the vectors of a degenerate block have no derivative). Make the loss depend on "
           "the block's vectors not at all at second order (a gap above working precision, "
           "a symmetry that decouples them), or compute that part without {name} (a matrix "
           "function such as yaad.linalg.expm).")
DEGENERATE_ERROR = ("{name}: the loss depends on the basis chosen inside a degenerate subspace "
               "(equal {what}), where the derivative does not exist. Make the loss depend on "
               "the whole subspace (a projector, a sum over the block), or pass eps= (for "
               "example 1e-12) for a Lorentzian-broadened, finite gradient.")


def require_negligible(num: Any, mask: Any, scale: float, message: str) -> None:
    """Raise :class:`GaugeError` if ``num`` is not negligible where ``mask`` holds.

    Negligible: below ``sqrt(eps)`` times the size of the incoming gradient ``scale``, and
    never above ``sqrt(eps)`` in absolute terms (rounding errors of a cotangent that is
    zero in exact arithmetic, as in second derivatives, carry no scale of their own).
    """
    num = data_of(num)
    xp = namespace(num)
    num = xp.abs(num)
    if not num.size or not _any(mask):
        return
    limit = float(np.sqrt(xp.finfo(num.dtype).eps)) * max(scale, 1.0)
    if _any(mask & (num > limit)):
        raise GaugeError(message)


_NOT_SYMMETRIC = (
    "{name}: the loss is not a symmetric function of the {what} of a degenerate level "
    "({detail}): their cotangents differ. A single {one} inside a degenerate level has no "
    "derivative: along a perturbation that splits the level its one-sided derivatives differ, "
    "and any number returned would depend on the basis the solver chose. Make the loss "
    "symmetric in the level (its sum or mean, e.g. w[1:4].sum(), or any function that treats "
    "the members of the level alike), or lift the degeneracy (a small term that breaks the "
    "symmetry).")
_AT_ZERO = (
    "{name}: the loss depends on singular values equal to 0 ({detail}): a singular value at 0 "
    "has no derivative (it grows as |t| along any perturbation that lifts it, as abs does at "
    "0), in a symmetric function such as their sum too. Make the loss flat there (s**2 rather "
    "than s), or use yaad.linalg.matrix_norm, whose gradient there is the minimum-norm "
    "subgradient.")


def _level_detail(values: Any, g: Any, bad: Any, flat: Any) -> str:
    """Which level an error is about: its members, value and cotangents (first offender)."""
    try:
        v, gd = np.asarray(data_of(values)), np.asarray(data_of(g))
        first = tuple(np.argwhere(np.asarray(bad))[0])
        batch, i = first[:-2], first[-2]
        members = np.flatnonzero(np.asarray(flat)[batch + (i,)] | (np.arange(v.shape[-1]) == i))
        where = f" of matrix {batch} of the batch" if batch else ""
        gs = ", ".join(f"{x:.3g}" for x in gd[batch][members])
        return (f"entries {members.tolist()}{where}, all {v[batch + (i,)]:.6g}; "
                f"cotangents {gs}")
    except Exception:  # noqa: BLE001  (an array library NumPy cannot read: no detail)
        return "see the values"


def require_symmetric(g: Any, values: Any, tol: Any, scale: float, name: str, what: str,
                      one: str, zero_kink: bool = False, exempt: Any = None) -> None:
    """Raise :class:`GaugeError` unless the loss is a symmetric function of each degenerate
    level of ``values`` (to first order: its cotangent ``g`` is constant across the level).

    Values closer than ``tol`` (shape ``(..., 1)``, relative to the matrix's norm, so that a
    level at 0 is seen) form a level; the cotangents are compared as in
    :func:`require_negligible`. A symmetric function of a level has the exact gradient
    ``g V_B V_B^H`` there (the level's spectral projector), whatever basis ``V_B`` the solver
    returned; anything else has no derivative. With ``zero_kink`` (singular values), values
    within ``tol`` of 0 must have a negligible cotangent: ``s`` is ``|t|``-like there.
    Columns where ``exempt`` (shape ``(..., k)``) holds are left to the rules of the
    vectors (a loss through the vectors too, such as ``U diag(S) Vh``, is judged there).
    """
    if g is None:
        return
    gd, vd = data_of(g), data_of(values)
    xp = namespace(gd)
    free: Any = True if exempt is None else ~exempt
    if zero_kink:
        bad = (vd <= tol) & ~negligible(gd, scale) & free
        if _any(bad):
            zero = (vd <= tol)
            flat = zero[..., :, None] & zero[..., None, :]
            eye = xp.eye(vd.shape[-1], dtype=xp.bool)
            raise GaugeError(_AT_ZERO.format(name=name, detail=_level_detail(
                values, g, bad[..., :, None] & eye, flat & ~eye)))
    flat = degenerate_pairs(vd, tol, nonzero=False)
    if exempt is not None:
        flat = flat & free[..., :, None] & free[..., None, :]
    if not _any(flat):
        return
    bad = flat & ~negligible(gd[..., :, None] - gd[..., None, :], scale)
    if _any(bad):
        raise GaugeError(_NOT_SYMMETRIC.format(name=name, what=what, one=one,
                                               detail=_level_detail(values, g, bad, flat)))


def negligible(x: Any, scale: float) -> Any:
    """Where ``x`` is negligible, in the sense of :func:`require_negligible` (``x`` may be
    the number 0)."""
    x = data_of(x)
    xp = namespace(x)
    x = xp.abs(x)
    dtype = x.dtype if dtype_kind(x.dtype) in "fc" else xp.float64
    return x <= float(np.sqrt(xp.finfo(dtype).eps)) * max(scale, 1.0)


def _any(x: Any) -> bool:
    """Whether any entry of the mask ``x`` (an array of any library, or a bool) holds."""
    return bool(namespace(x).any(x)) if hasattr(x, "shape") else bool(x)


def _conj_t(x: Any) -> Any:
    """The conjugate transpose of the last two axes of an array (no gradient)."""
    xp = namespace(x)
    return xp.conj(xp.matrix_transpose(x))


def _differentiated(x: Any) -> bool:
    """Whether a rule's value is itself being differentiated (create_graph or forward mode)."""
    return isinstance(x, Tensor) and bool(x.requires_grad or getattr(x, "_tangents", None))


# The values (eigenvalues, singular values) of decompositions whose rule was differentiated
# (create_graph): a later backward pass through the same node is then a second derivative.
_DIFFERENTIATED: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()


def second_order_guard(name: str, what: str, values: Any, flat: Any, coupled: Any, a: Any,
                       mix: Any) -> None:
    """Refuse a second derivative that the chain rule through a decomposition cannot give.

    At equal values (``flat`` pairs of the columns in use), the first derivative is exact,
    but its own derivative needs 0/0 limits of the rule at a split spectrum, which no rule
    receives. They are determined where the loss does not couple the pair (``coupled``
    False: a symmetry that decouples the block, as in TRG) and, in forward mode, where the
    tangent ``da`` does not mix the pair (``mix(da)`` zero there: the vectors need not
    turn). Otherwise :class:`GaugeError`.
    """
    d = data_of(values)
    if _DIFFERENTIATED.get(id(d)) is d and _any(coupled):
        raise GaugeError(_SECOND.format(name=name, what=what))
    if not _differentiated(values) or not _any(flat):
        return
    _DIFFERENTIATED[id(d)] = d
    for t in (getattr(a, "_tangents", None) or {}).values():
        t = data_of(t)
        if _any(flat & ~negligible(mix(t), magnitude(t))):
            raise GaugeError(_SECOND.format(name=name, what=what))


def degenerate_pairs(values: Any, tol: Any, nonzero: bool = True, chain: bool = False) -> Any:
    """``(i, j)``, ``i != j``, with ``|values_i - values_j| <= tol`` (and ``values_i`` not
    zero if ``nonzero``): a mask of shape ``(..., k, k)``; with ``chain`` (forward mode's
    rules, whose turn mixes a whole chain) its transitive closure (:func:`same_level`)."""
    v = data_of(values)
    xp = namespace(v)
    k = v.shape[-1]
    t = tol[..., None]
    pairs = (xp.abs(v[..., None, :] - v[..., :, None]) <= t) & ~xp.eye(k, dtype=xp.bool)
    pairs = same_level(pairs) if chain else pairs
    return pairs & (xp.abs(v[..., :, None]) > t) if nonzero else pairs


def same_level(flat: Any) -> Any:
    """The transitive closure of the pairs ``flat`` (a symmetric mask ``(..., k, k)``, False
    on the diagonal): values each within the tolerance of the next form one level even
    where its ends are further apart (``1, 1 + 0.6 tol, 1 + 1.2 tol``). The forward-mode
    turn of a level (:func:`level_rotation`, :func:`_components`) mixes the whole chain, so
    the masks of the rules must cover it too: a gap ``1.2 tol`` left unmasked inside a
    turned level made the tangent of ``V diag(w) V^H`` wrong by O(1) (``U diag(S) Vh``'s by
    1e9). Reverse mode keeps the pairs: its rules turn nothing, and a chain there is a
    run of pairs at the edge of working precision (the small singular values of a
    truncated tensor network: a closure made the second-order guard refuse TRG's
    specific heat). Lazy (Dask) masks are left as they are (no value is read inside a
    rule)."""
    if is_lazy(flat) or not _any(flat):
        return flat
    xp = namespace(flat)
    off = ~xp.eye(flat.shape[-1], dtype=xp.bool)
    while True:
        f = xp.astype(flat, xp.float32)
        wider = flat | ((xp.matmul(f, f) > 0) & off)
        if not _any(wider & ~flat):
            return flat
        flat = wider


def magnitude(*xs: Any) -> float:
    """The largest absolute entry of the arrays ``xs`` (None skipped): the size of the
    gradients a rule receives, which scales the checks of :func:`require_negligible`."""
    return max((_largest(data_of(x)) for x in xs if x is not None and x.size), default=0.0)


def _largest(d: Any) -> float:
    xp = namespace(d)
    return float(xp.max(xp.abs(d)))


def degeneracy_tol(values: Any, n: int, matrix: Any = None) -> Any:
    """Values closer than this are equal to working precision: ``100 n eps max|values|``,
    per matrix of the batch, shape ``(..., 1)``.

    ``max|values|`` is the norm of a Hermitian matrix (eigenvalues) or of any matrix
    (singular values), so that a level at 0 is seen; for the eigenvalues of a general
    ``matrix``, whose spectral radius can be far below its norm, pass it: its Frobenius
    norm then bounds the scale from below.
    """
    v = data_of(values)
    xp = namespace(v)
    v = xp.abs(v)
    if v.shape[-1] == 0:  # no values (0x0 matrices): no pairs to compare
        return xp.zeros(v.shape[:-1] + (1,), dtype=v.dtype)
    top = xp.max(v, axis=-1, keepdims=True)
    if matrix is not None:
        m = data_of(matrix)
        top = xp.maximum(top, xp.sqrt(xp.sum(xp.abs(m) ** 2, axis=(-2, -1)))[..., None])
    return 100 * n * float(xp.finfo(v.dtype).eps) * top


def _lorentz(x: Any, eps: float) -> Any:
    """``1/x`` broadened: ``conj(x) / (|x|^2 + eps^2)``."""
    if is_complex(x):
        return conj(x) / (real(x * conj(x)) + eps * eps)
    return x / (x * x + eps * eps)


def inverse_gaps(diff: Any, tol: Any, eps: Any, num: Any = None, scale: float = 0.0,
                 message: str = "", chain: bool = False) -> Any:
    """``1 / diff`` off the diagonal and 0 on it, with degenerate entries masked.

    Where ``|diff| <= tol`` the entry is 0, after checking that ``num`` (the matrix the
    result will multiply) vanishes there; with ``eps`` the Lorentzian replaces ``1/x``;
    with ``chain`` the mask is closed transitively, as :func:`degenerate_pairs`'.
    """
    n = diff.shape[-1]
    d = data_of(diff)
    xp = namespace(d)
    off = ~xp.eye(n, dtype=xp.bool)
    if eps is not None:
        return _lorentz(diff, eps) * (off if xp is np else xp.astype(off, d.dtype))
    flat = (xp.abs(d) <= tol[..., None]) & off
    flat = same_level(flat) if chain else flat
    if num is not None:
        require_negligible(num, flat, scale, message)
    zero = flat | ~off
    return where(zero, 0, 1 / where(zero, 1, diff))


def inverse_values(s: Any, tol: Any, eps: Any, num: Any = None, scale: float = 0.0,
                   message: str = "") -> Any:
    """``1 / s`` for non-negative values, 0 where ``s <= tol`` (``num`` checked there)."""
    if eps is not None:
        return _lorentz(s, eps)
    zero = data_of(s) <= tol
    if num is not None:
        require_negligible(num, zero, scale, message)
    return where(zero, 0, 1 / where(zero, 1, s))


def fold_complement(q: Any, gq: Any, k: int, message: str) -> Any:
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
    require_negligible(x - mH(x), True, magnitude(gq), message)
    return q1, gq[..., :k] - matmul(q2, matmul(mH(g2), q1))


def _extend_complement(q: Any, dq1: Any, k: int) -> Any:
    """The tangent of all columns of ``q`` from that of the first ``k`` (see above)."""
    q1, q2 = q[..., :k], q[..., k:]
    return concat_last(dq1, -matmul(q1, matmul(mH(dq1), q2)))


# ---- the discarded part of a spectrum, as one matrix --------------------------------------


def active_columns(*cotangents: Any) -> Any:
    """The columns (last axis) that receive a cotangent, and the others.

    Returns ``(active, rest)``: index arrays into the last axis, ``rest`` None when every
    column is active. A column whose cotangents are exactly zero (sliced away by the
    caller, as in a truncation) does not enter the loss: the rules treat those columns as
    one block, through the matrix they span (see :func:`resolvent`), so that no derivative
    ever depends on a basis chosen inside it.
    """
    hit = None
    for x in cotangents:
        if x is None:
            continue
        d = data_of(x)
        xp = namespace(d)
        nz = d != 0
        nz = xp.any(nz, axis=tuple(range(nz.ndim - 1))) if nz.ndim > 1 else nz
        hit = nz if hit is None else hit | nz
    if hit is None or bool(xp.all(hit)):
        return slice(None), None
    return xp.nonzero(hit)[0], xp.nonzero(~hit)[0]


def _inverse_or_zero(x: Any, tol: Any, num: Any, scale: float, message: str) -> Any:
    """``1 / x`` (arrays), 0 where ``|x| <= tol`` after checking ``num`` vanishes there."""
    xp = namespace(x)
    flat = xp.abs(x) <= tol
    require_negligible(num, flat, scale, message)
    return xp.where(flat, 0.0, 1 / xp.where(flat, 1.0, x))


def _resolvent(m: Any, shifts: Any, g: Any, vectors: Any, values: Any, right: Any = None, *, n: Any,
               name: Any) -> Any:
    """``x[..., :, a] = (shifts[a] - M)^{-1} g[..., :, a]`` for a Hermitian ``M`` given by the
    non-zero part of its spectrum (``M`` is 0 on the rest of the space).

    ``vectors``, ``values``: eigenvectors and eigenvalues of ``M = m`` (``eigh``); with
    ``right``, singular triplets ``(vectors, values, right)`` of ``m`` for the
    Jordan-Wielandt matrix ``M = [[0, m], [m^H, 0]]``, whose eigenpairs are
    ``([u; +-v] / sqrt 2, +-s)`` (``svd``; ``g`` and ``x`` then stack the two blocks,
    ``m.shape[-2]`` rows first). The value of ``m`` itself is not read: it is an input so
    that derivatives reach it; the basis gets none. Values closer than
    ``degeneracy_tol`` (for an ``n x n`` problem) to a shift are masked.
    """
    xp = namespace(g)
    if not shifts.shape[-1]:  # no column receives a cotangent: x has no columns
        return xp.zeros_like(g)
    sh = shifts[..., None, :]
    scale = magnitude(g)
    top = xp.max(xp.abs(shifts), axis=-1, keepdims=True)
    if values.shape[-1]:
        top = xp.maximum(top, xp.max(xp.abs(values), axis=-1, keepdims=True))
    tol = degeneracy_tol(top, n)[..., None]
    cut = _CUT.format(name=name, what="singular values" if right is not None else "eigenvalues")
    uh = xp.conj(xp.matrix_transpose(vectors))
    if right is not None:
        p = vectors.shape[-2]
        cu = uh @ g[..., :p, :]
        cv = xp.conj(xp.matrix_transpose(right)) @ g[..., p:, :]
        sc = values[..., :, None]
        plus = (cu + cv) * _inverse_or_zero(sh - sc, tol, cu + cv, scale, cut)
        minus = (cu - cv) * _inverse_or_zero(sh + sc, tol, cu - cv, scale, cut)
        x = xp.concat([vectors @ ((plus + minus) / 2), right @ ((plus - minus) / 2)], axis=-2)
        rest = g - xp.concat([vectors @ cu, right @ cv], axis=-2)
    else:
        c = uh @ g
        x = vectors @ (c * _inverse_or_zero(sh - values[..., :, None], tol, c, scale, cut))
        rest = g - vectors @ c
    zero = DEGENERATE_ERROR.format(name=name, what="zero singular values")
    return x + rest * _inverse_or_zero(sh, tol, xp.max(xp.abs(rest), axis=-2, keepdims=True),
                                       scale, zero)


def _apply_m(t: Any, x: Any, right: Any) -> Any:
    """``dM @ x`` for a tangent ``t`` of ``m`` (Jordan-Wielandt when ``right`` is given)."""
    if right is not None:
        p = t.shape[-2]
        return concat_last(matmul(t, x[..., p:, :]), matmul(mH(t), x[..., :p, :]), axis=-2)
    return matmul(t, x)


def _resolvent_vjp_m(gx: Any, x: Any, m: Any, shifts: Any, g: Any, *basis: Any, **kw: Any) -> Any:
    y = resolvent(m, shifts, gx, *basis, **kw)
    if len(basis) == 3:
        p = m.shape[-2]
        return matmul(y[..., :p, :], mH(x[..., p:, :])) + matmul(x[..., :p, :], mH(y[..., p:, :]))
    return matmul(y, mH(x))


def _resolvent_vjp_shifts(gx: Any, x: Any, m: Any, shifts: Any, g: Any, *basis: Any,
                          **kw: Any) -> Any:
    y = resolvent(m, shifts, gx, *basis, **kw)
    d = _sum(conj(y) * x if is_complex(x) else y * x, axis=-2)
    return -(real(d) if is_complex(d) else d)


def _resolvent_batch(dims: Any, m: Any, shifts: Any, g: Any, *basis: Any, **kw: Any) -> Any:
    # every argument broadcast over its leading axes; these are its own:
    cores = (2, 1, 2, 2, 1, 2)[:3 + len(basis)]
    args = aligned((m, shifts, g, *basis), dims, cores=cores)
    return resolvent(*args, **kw), 0


resolvent: Callable[..., Any] = op(
    _resolvent, name="linalg.resolvent", batch=_resolvent_batch,
    vjp=(_resolvent_vjp_m, _resolvent_vjp_shifts,
         lambda gx, x, m, shifts, g, *basis, **kw: resolvent(m, shifts, gx, *basis, **kw),
         None, None, None),
    jvp=(lambda t, x, m, shifts, g, *basis, **kw: resolvent(
            m, shifts, _apply_m(t, x, basis[2] if len(basis) == 3 else None), *basis, **kw),
         lambda t, x, m, shifts, g, *basis, **kw: resolvent(m, shifts, -x * row(t), *basis, **kw),
         lambda t, x, m, shifts, g, *basis, **kw: resolvent(m, shifts, t, *basis, **kw),
         None, None, None))
resolvent.__doc__ = """(shifts_a - M)^{-1} applied to the columns of ``g``, by a spectral
decomposition of ``M`` known in advance (see ``_resolvent``). Its derivatives are those of a
linear solve, written with itself, so that they never read the eigenvectors one by one:
the rules of ``eigh`` and ``svd`` use it for the discarded part of a truncated spectrum,
whose basis is arbitrary where it is degenerate (or zero)."""

_CUT = ("{name}: the loss depends on the basis chosen inside a degenerate subspace (equal "
        "{what}): it uses some vectors of the block and not the others (a truncation that "
        "cuts through the block), where the derivative does not exist. Keep or drop the "
        "whole block, or pass eps= for a Lorentzian-broadened, finite gradient.")


def _hint(x: Any) -> Any:
    """A spectral basis passed to :func:`resolvent`: values without a gradient."""
    return x.detach() if isinstance(x, Tensor) else x


def _cols(x: Any, idx: Any) -> Any:
    """The columns (last axis) ``idx`` (a slice or an index array) of ``x``."""
    if idx == slice(None) if isinstance(idx, slice) else False:
        return x
    return x[..., idx] if isinstance(x, (np.ndarray, Tensor)) else getitem(x, (Ellipsis, idx))


# ---- eigh --------------------------------------------------------------------------------


def _eigh(a: Any, UPLO: Any = "L", eps: Any = None) -> Any:
    a = square_matrices("eigh", a)
    w, v = np.linalg.eigh(a, UPLO)
    note_call_site(w)
    return w, v


def _eigh_vjp(g: Any, ans: Any, a: Any, UPLO: Any = "L", eps: Any = None) -> Any:
    gw, gv = g
    w, v = ans
    tol = degeneracy_tol(w, w.shape[-1])
    if gv is None:
        require_symmetric(gw, w, tol, magnitude(gw), "linalg.eigh", "eigenvalues",
                          "eigenvalue")
        flat = degenerate_pairs(w, tol, nonzero=False)
        if _any(flat) and _differentiated(gw):  # a second derivative, the loss curved
            vr = _curved_levels(gw, w, v, a, flat, tol)
            if vr is not None:  # forward over reverse: the level's basis along the tangent
                return matmul(vr * row(gw), mH(vr))
            return matmul(v * row(gw), mH(v)) + _level_curvature(gw, w, v, a, flat)
        return matmul(v * row(gw), mH(v))
    idx, rest = (slice(None), None) if eps is not None else active_columns(gv, gw)
    vt, wt, gvt = _cols(v, idx), _cols(w, idx), _cols(gv, idx)
    gwt = None if gw is None else _cols(gw, idx)
    tol = degeneracy_tol(w, w.shape[-1])
    scale = magnitude(gw, gv)
    j = matmul(mH(vt), gvt)
    if is_complex(j):
        require_negligible(imag(diag(j)), True, scale,
                           PHASE_ERROR.format(name="linalg.eigh", what="eigenvectors"))
    skew = (j - mH(j)) * 0.5
    f = inverse_gaps(row(wt) - col(wt), tol, eps, skew, scale,
                     DEGENERATE_ERROR.format(name="linalg.eigh", what="eigenvalues"))
    flat = degenerate_pairs(wt, tol, nonzero=False)
    coupled = flat & ~negligible((j + mH(j)) * 0.5, scale)
    vd = data_of(vt)
    second_order_guard("linalg.eigh", "eigenvalues", w, flat, coupled, a,
                       lambda t: mH(vd) @ herm(t) @ vd)
    try:
        if eps is None:
            eigh_coupling_check(flat, coupled, gwt, scale)
        require_symmetric(gw, w, tol, magnitude(gw), "linalg.eigh", "eigenvalues", "eigenvalue")
    except GaugeError:
        if _CURVATURE.get(id(data_of(w))) is data_of(w):  # the second pass of a curved loss
            raise GaugeError(_CURVED.format(name="linalg.eigh", why=(
                "grad of grad: the second pass's direction splits the level, and the first "
                "derivative's own dependence on the level's basis is judged as a new loss"
                ))) from None
        raise
    inner = f * skew
    if gwt is not None:
        inner = inner + diag_matrix(gwt)
    ga = matmul(vt, matmul(inner, mH(vt)))
    if rest is not None:  # the discarded eigenvectors, as one block
        a_perp = herm(a) - matmul(vt * row(wt), mH(vt))
        x = resolvent(a_perp, wt, gvt - matmul(vt, j), _hint(_cols(v, rest)),
                      _hint(_cols(w, rest)), n=w.shape[-1], name="linalg.eigh")
        ga = ga + herm(matmul(x, mH(vt)))
    return ga


def _touched(g: Any, scale: float) -> Any:
    """Pairs ``(i, j)`` where the cotangent ``g`` of the values is not negligible at i or j."""
    if g is None:
        return False
    hit = ~negligible(g, scale)
    return hit[..., :, None] | hit[..., None, :]


def eigh_coupling_check(flat: Any, coupled: Any, gw: Any, scale: Any) -> None:
    """At equal eigenvalues the term of the Hermitian part of ``V^H gV`` is a 0/0 limit (the
    divided difference of ``f`` in ``V diag(f(w)) V^H``). It is 0 when the loss depends on the
    degenerate eigenvectors only through their span (``gw`` zero there) or not at all."""
    if gw is None or not _any(coupled):
        return
    quiet = negligible(gw, scale)
    if _any(coupled & ~(quiet[..., :, None] & quiet[..., None, :])):
        raise GaugeError(_COUPLED.format(
            name="linalg.eigh", what="eigenvalues", example=" (as V diag(f(w)) V^H does)",
            advice="For V f(w) V^H use a matrix function (yaad.linalg.expm, logm, sqrtm), or "
                   "make the loss depend on the eigenvectors only through projectors. "))


def _eigh_jvp(t: Any, ans: Any, a: Any, UPLO: Any = "L", eps: Any = None) -> Any:
    w, v = ans
    dp = matmul(mH(v), matmul(herm(t), v))
    tol = degeneracy_tol(w, w.shape[-1])
    f = inverse_gaps(row(w) - col(w), tol, eps, chain=True)
    dv = matmul(v, f * dp)
    if eps is None:
        r = level_rotation(w, v, t, tol)
        if r is not None:  # a degenerate level: its one-sided derivative, in any basis
            dp = matmul(mH(r), matmul(dp, r))
            turn = _turn_inside_levels(dp, f, w, tol)  # in the basis V R
            dv = dv + matmul(v, matmul(r, matmul(turn, mH(r))))
    dw = diag(dp)
    return (real(dw) if is_complex(dw) else dw), dv


def _turn_inside_levels(dp: Any, f: Any, w: Any, tol: Any) -> Any:
    """The tangent of the vectors ``V R`` of a degenerate level inside it (the coefficients
    on the level's own vectors), along the tangent whose compression ``dp`` (``R^H V^H
    herm(t) V R``) is diagonal on each level: second-order perturbation theory,
    ``(sum_j dp_mj dp_jn / (l - w_j)) / (mu_n - mu_m)`` (``j`` off the level, ``mu`` the
    diagonal), the turn that makes the members' vectors follow their split. Anti-Hermitian,
    so no function of the level's span sees it; a function of single members' vectors
    (``|v_m^H B v_m|``) needs it for its one-sided derivative. Pairs whose ``mu`` are equal
    too (a sub-level the tangent leaves degenerate) get 0: higher orders decide them. The
    same for eig, with ``dp = X^-1 V^-1 t V X`` (the left eigenvectors in ``V^-1``)."""
    mu = diag(dp)
    mu = real(mu) if is_complex(mu) and not is_complex(w) else mu  # (eig: complex values)
    inside = degenerate_pairs(w, tol, nonzero=False, chain=True)
    # (equal to working precision relative to the whole tangent, not to mu alone: a tangent
    # that leaves a level degenerate, zero on its block, gives mu of rounding noise)
    split = inverse_gaps(row(mu) - col(mu), degeneracy_tol(mu, mu.shape[-1], dp), None, chain=True)
    return where(inside, matmul(dp, f * dp) * split, 0)


# ---- degenerate levels at second order ------------------------------------------------------


def level_rotation(w: Any, v: Any, t: Any, tol: Any) -> Any:
    """The unitary ``R`` (an array), block-diagonal on the degenerate levels of the ascending
    eigenvalues ``w`` and the identity elsewhere, such that ``V R`` diagonalises the
    compression ``V_B^H herm(t) V_B`` of the tangent ``t`` to each level, its eigenvalues
    ascending; None when no level is degenerate, or when ``t`` is batched (vmap).

    Along ``t`` the members of a level split as ``w_B + s mu`` (``mu`` the compression's
    eigenvalues, ascending for ``s > 0``), and ``V R`` is the basis they continue from:
    the JVP of ``eigh`` returns ``mu`` (the one-sided derivative, the same number in every
    basis), and the rule of a second derivative (forward over reverse) takes the level's
    basis from the same ``R``, so that both describe one split.
    """
    if not _plain_tangent(t, w, v, tol) or tuple(data_of(v).shape) != tuple(v.shape):
        return None
    wd, vd, td, tl = _on_host(w, v, t, tol)
    flat = degenerate_pairs(wd, tl, nonzero=False, chain=True)
    if not flat.any():
        return None
    p = _conj_t(vd) @ ((td + _conj_t(td)) / 2) @ vd
    n = wd.shape[-1]
    r = np.broadcast_to(np.eye(n, dtype=p.dtype), p.shape).copy()
    for idx in np.ndindex(p.shape[:-2]):
        fl = flat[idx] if flat.ndim > 2 else flat
        start = 0
        for i in range(1, n + 1):  # levels: runs of neighbours within the tolerance
            if i == n or not fl[i - 1, i]:
                if i - start > 1:
                    block = np.ix_(range(start, i), range(start, i))
                    r[idx][block] = np.linalg.eigh(p[idx][block])[1]
                start = i
    return _like(r, t)


# ---- forward mode: the basis of a degenerate level, chosen by the tangent ------------------
# Along a tangent ``da`` a degenerate level continues (``s -> 0+``) from one basis: the one
# that diagonalises the tangent's block on the level. In the solver's basis that block is
# not diagonal, and no tangent of those vectors makes ``V diag(w) V^H`` (or any function of
# the level's span and values) right: the eigenvalues' tangents are the block's
# eigenvalues, its off-diagonal part is lost. So in forward mode the public functions
# turn the level's vectors to that basis (an equally valid eigenbasis of ``a``, by a
# constant unitary, so the tangent turns with them) and the rules, which choose the same
# rotation, give the eigenvalues in the same order, and the vectors' turn inside the level
# (second-order perturbation theory, eigh and eig: _turn_inside_levels), which no function
# of the level's span sees and a single member's vector needs. svd's vectors get no such
# turn: in forward over reverse (TRG's specific heat) its in-level tangent reached the next
# SVD's input as a mix of that SVD's degenerate levels, which its second-order guard refuses.


def _forward_tangents(a: Any) -> dict[int, Any]:
    """The forward-mode tangents of ``a`` at the active levels (vmap's markers left out)."""
    tans = getattr(a, "_tangents", None) if isinstance(a, Tensor) else None
    if not tans:
        return {}
    levels = state.levels
    return {lv: t for lv, t in tans.items() if lv in levels and type(t) is not BatchAxis}


def _members(x: Any, levels: list[int]) -> Any:
    """The value of ``x`` as a NumPy array with the batch axes of ``levels`` (vmap) in
    front, in that order (of size 1 where ``x`` is not batched at a level); None when it
    cannot be read on the CPU."""
    host = _on_host(x)
    if host is None:
        return None
    d = host[0]
    axes = batch_axes(x)
    src = [axes[lv] for lv in levels if lv in axes]
    d = np.moveaxis(d, src, list(range(len(src))))
    shape, i = [], 0
    for lv in levels:
        if lv in axes:
            shape.append(d.shape[i])
            i += 1
        else:
            shape.append(1)
    return d.reshape(tuple(shape) + d.shape[i:])


_UNCHOSEN = ("{name}: forward mode through the vectors of a degenerate level, along "
             "{what}: the level continues from the basis that diagonalises the tangent's "
             "block on it, and {why}, so no basis can be chosen for it (the vectors' "
             "tangent would be wrong for any function of them). Call jvp once per "
             "direction (one tangent, no vmap/jacfwd), use reverse mode (grad, vjp, "
             "jacrev: exact for a function of the level's span and values), or, for the "
             "values only, {values}.")


def _gauge_check(name: str, values: str, what: str, tans: dict[int, Any],
                 blocks: Callable[..., Any], *outs: Any) -> None:
    """Where the public function cannot turn a level for the tangent (several tangents,
    each choosing its own basis; a batched tangent; arrays off the CPU), the rules'
    tangents stay in the solver's basis, exact only where no tangent mixes a level: raise
    :class:`GaugeError` where one does. ``blocks(t, *outs)`` (arrays, the batch axes of
    every vmap level in front) gives the entries of the tangent that turn the levels (the
    rest 0), and its scale."""
    if len(tans) > 1:
        why = "several forward-mode levels (jvp of jvp) each turn it their own way"
    elif any(batch_axes(x) for x in (*tans.values(), *outs)):
        why = ("the tangents are batched (vmap, jacfwd, hessian): each would turn it its "
               "own way")
    else:
        why = "the arrays cannot be read on the CPU (another library's, on a GPU)"
    for t in tans.values():
        levels = sorted({lv for x in (t, *outs) for lv in batch_axes(x)})
        arrays = [_members(x, levels) for x in (t, *outs)]
        if any(x is None for x in arrays):
            raise GaugeError(_UNCHOSEN.format(name=name, what="a tangent", why=why,
                                              values=values))
        mix, scale = blocks(*arrays)
        if _any(~negligible(mix, scale)):
            raise GaugeError(_UNCHOSEN.format(name=name, what=what, why=why, values=values))


def _eigh_mixing(td: np.ndarray, wd: np.ndarray, vd: np.ndarray) -> Any:
    """The off-diagonal entries of ``V^H herm(t) V`` on the degenerate levels, and the scale."""
    flat = degenerate_pairs(wd, degeneracy_tol(wd, wd.shape[-1]), nonzero=False, chain=True)
    p = _conj_t(vd) @ ((td + _conj_t(td)) / 2) @ vd
    return np.where(flat, p, 0), magnitude(td)


def eigh_along_tangent(a: Any, w: Any, v: Any) -> Any:
    """The eigenvectors ``v`` of ``eigh(a)``, in forward mode turned inside each degenerate
    level to the basis the tangent of ``a`` splits it from (:func:`level_rotation`), so
    that their tangents (those of the rule, turned the same way) describe the same path as
    the eigenvalues' (the one-sided derivative): a reconstruction ``V diag(w) V^H`` has the
    tangent ``herm(da)``. Raises :class:`GaugeError` where no basis can be chosen."""
    tans = _forward_tangents(a)
    if not tans:
        return v
    wd = data_of(w)
    if not _any(degenerate_pairs(wd, degeneracy_tol(wd, wd.shape[-1]), nonzero=False, chain=True)):
        return v
    if len(tans) == 1:
        (t,) = tans.values()
        tol = degeneracy_tol(w, w.shape[-1])
        r = level_rotation(w, v, t, tol)
        if r is not None:
            return matmul(v, r)
    _gauge_check("linalg.eigh", "use linalg.eigvalsh", "a direction that mixes it", tans,
                 _eigh_mixing, w, v)
    return v


def _curved_levels(gw: Any, w: Any, v: Any, a: Any, flat: Any, tol: Any) -> Any:
    """The basis for the rule ``V diag(gw) V^H`` of a second derivative in forward mode
    (forward over reverse, ``hvp``), or None in reverse mode (``create_graph``).

    ``gw`` is constant on each degenerate level (the loss is symmetric there), but its
    tangent ``dgw = H dw`` (``H`` the loss's Hessian in the eigenvalues) is not: the
    derivative of ``V diag(gw) V^H`` needs the divided difference of ``gw`` across the
    level, ``H_ii - H_ij``, which no gradient carries. In the basis ``V R`` of
    :func:`level_rotation`, where the JVP of ``eigh`` gave ``dw = mu``, the tangent is
    diagonal on the level and that term is absent: ``V R diag(gw) (V R)^H`` (the same
    value) is exact, if the loss is symmetric in the level to second order (``dgw`` on it
    an affine function of ``mu``, as ``H = alpha I + beta 1 1^T`` gives), else GaugeError.
    """
    gtans = getattr(gw, "_tangents", None)
    if not gtans:  # reverse mode: the guard of the second pass
        return None
    atans = getattr(a, "_tangents", None) or {}
    lv = next(iter(gtans))
    t = atans.get(lv)
    r = None
    if len(gtans) == 1 and len(atans) == 1 and isinstance(t, (Tensor, np.ndarray)):
        r = level_rotation(w, v, t, tol)
    dgw, dw = gtans[lv], (getattr(w, "_tangents", None) or {}).get(lv)
    if r is None or dw is None:
        raise GaugeError(_CURVED.format(name="linalg.eigh", why=(
            "several forward-mode levels, or a batched tangent (vmap)")))
    x, y = np.asarray(data_of(dw)), np.asarray(data_of(dgw))
    x, y = np.broadcast_to(x, flat.shape[:-1]), np.broadcast_to(y, flat.shape[:-1])
    same = flat | np.eye(flat.shape[-1], dtype=bool)
    count = same.sum(-1)
    xc = x - (same * x[..., None, :]).sum(-1) / count  # centred on each member's level
    yc = y - (same * y[..., None, :]).sum(-1) / count
    split = ~negligible(xc, magnitude(dw))
    xx = (same * (xc * xc)[..., None, :]).sum(-1)  # per member: |xc|^2 over its level
    xy = (same * (xc * yc)[..., None, :]).sum(-1)
    split = (same & split[..., None, :]).any(-1)  # per member: its level is split
    alpha = np.where(split, xy / np.where(split, xx, 1), 0.0)
    bad = flat.any(-1) & ~negligible(yc - alpha * xc, magnitude(dgw))
    if bad.any():
        raise GaugeError(_CURVED.format(name="linalg.eigh", why=(
            "its curvature across the level is not that of a symmetric function (the "
            "tangent of the eigenvalues' cotangent is not an affine function of the "
            "eigenvalues' tangent on the level)")))
    return matmul(v, r)


# The eigenvalues of decompositions whose first-order rule added the level's curvature.
_CURVATURE: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()


def _level_curvature(gw: Any, w: Any, v: Any, a: Any, flat: Any) -> Any:
    """The term of the rule ``V diag(gw) V^H`` that its chain rule misses at a degenerate
    level in reverse over reverse (``create_graph``): ``V (A o V^H herm(da) V) V^H`` with
    ``A_ij = H_ii - H_ij`` on each level (``H`` the loss's Hessian in the eigenvalues), the
    divided difference of ``gw`` across the level. A value 0 with that derivative.

    ``H`` is read by one backward pass from ``gw`` to ``w`` with a probe ``u`` centred on
    each level: a function symmetric in the level to second order has
    ``H = alpha I + beta 1 1^T`` there, so ``H u = alpha u`` on the level. A level where
    it is not (the loss's symmetry breaks at second order) gets :func:`split_guard`: a
    GaugeError in the second pass if its direction splits the level.
    """
    wd = data_of(w)
    xp = namespace(wd)  # (the arrays' own library: nothing converted to NumPy)
    n = wd.shape[-1]
    same = xp.astype(flat | xp.eye(n, dtype=xp.bool), wd.dtype)

    def level_sum(x: Any) -> Any:  # (over each level)
        return xp.sum(same * x[..., None, :], axis=-1)

    pos = xp.broadcast_to(xp.arange(n, dtype=wd.dtype), wd.shape)
    zero = xp.zeros_like(pos)
    u = xp.where(xp.any(flat, axis=-1), pos - level_sum(pos) / xp.sum(same, axis=-1), zero)
    (y,) = engine.run_backward((gw,), (u,), True, False, (w,), capture=True,
                               allow_unused=True)
    _CURVATURE[id(wd)] = wd
    if y is None:  # gw does not depend on the eigenvalues: no curvature across a level
        return 0
    y = data_of(y)
    uu = level_sum(u * u)
    alpha = xp.where(uu > 0, level_sum(u * y) / xp.where(uu > 0, uu, zero + 1), zero)
    broken = flat & ~negligible(y - alpha * u, magnitude(y))[..., :, None]
    broken = broken | xp.matrix_transpose(broken)
    out = 0
    if _any(broken):
        out = split_guard(a, data_of(v), broken)
    coef = xp.where(flat & ~broken, alpha[..., :, None], xp.zeros_like(same))
    if _any(coef != 0):
        out = out + level_curvature(a, data_of(v), coef)
    return out


def _project_levels(g: Any, vd: Any, coef: Any) -> Any:
    """``V (coef o V^H herm(g) V) V^H``, on arrays."""
    p = _conj_t(vd) @ ((g + _conj_t(g)) / 2) @ vd
    return vd @ (coef * p) @ _conj_t(vd)


def _third_order(*_: Any) -> Any:
    raise GaugeError("linalg.eigh: a third derivative through a degenerate level of eigh, "
                     "of a loss curved across the level, is not implemented.")


_level_term: Callable[..., Any] = op(
    lambda g, vd, coef: _project_levels(data_of(g), vd, coef), name="linalg.eigh_level_term",
    vjp=(_third_order, None, None), jvp=(_third_order, None, None), batch="broadcast")

level_curvature: Callable[..., Any] = op(
    lambda a, vd, coef: namespace(data_of(a)).zeros(a.shape, dtype=a.dtype),
    name="linalg.eigh_level_curvature",
    vjp=(lambda g, ans, a, vd, coef: _level_term(g, vd, coef), None, None),
    jvp=(lambda t, ans, a, vd, coef: _level_term(t, vd, coef), None, None), batch="broadcast")
level_curvature.__doc__ = """Zero, with the derivative ``V (coef o V^H herm(da) V) V^H``:
the term of the loss's curvature across a degenerate level of ``eigh`` that the rule
``V diag(gw) V^H`` needs at second order (:func:`_level_curvature`); its own derivative
(a third order) raises."""


_CURVED = ("{name}: a second derivative through the eigenvalues of a degenerate level, along "
           "a direction that splits the level, of a loss curved across it: the term it needs "
           "is the loss's curvature across the level, which this pass cannot see ({why}). "
           "Use yaad.func.hvp (forward over reverse, exact for a symmetric function of the "
           "level), or lift the degeneracy.")


def _split_guard(a: Any, vd: Any, flat: Any) -> Any:
    return namespace(data_of(a)).zeros(a.shape, dtype=a.dtype)


def _split_guard_vjp(g: Any, ans: Any, a: Any, vd: Any, flat: Any) -> Any:
    gd = data_of(g)
    p = _conj_t(vd) @ ((gd + _conj_t(gd)) / 2) @ vd
    xp = namespace(p)
    d = xp.real(xp.linalg.diagonal(p)) if is_complex(p) else xp.linalg.diagonal(p)
    spread = xp.abs(p) + xp.abs(d[..., :, None] - d[..., None, :])
    if _any(flat & ~negligible(spread, magnitude(g))):
        raise GaugeError(_CURVED.format(name="linalg.eigh", why=(
            "reverse over reverse (grad of grad, create_graph=True) receives the direction "
            "only after the first derivative was taken")))
    return None


split_guard: Callable[..., Any] = op(_split_guard, name="linalg.eigh_split_guard",
                                     vjp=(_split_guard_vjp, None, None), batch="broadcast")
split_guard.__doc__ = """Zero, with a VJP that raises :class:`GaugeError` where the
direction ``g`` of a second backward pass splits a degenerate level of ``eigh``
(``flat``): the rule ``V diag(gw) V^H`` of the first pass, with a cotangent ``gw`` that
depends on the eigenvalues, then lacks the term of the loss's curvature across the level
(``tests/linalg/test_degenerate_spectra.py``). Along a direction that does not split the level
the chain rule is exact, and the guard passes."""


eigh_op = op(_eigh, name="linalg.eigh", nout=2, vjp=located(_eigh_vjp, "linalg.eigh", 0),
          jvp=_eigh_jvp, batch="broadcast")


# ---- eig ---------------------------------------------------------------------------------


def _eig(a: Any, eps: Any = None) -> Any:
    a = square_matrices("eig", a)
    w, v = np.linalg.eig(a)
    ctype = np.result_type(w.dtype, np.complex64)  # (float64 for an integer a, as NumPy)
    w = w.astype(ctype, copy=False)
    note_call_site(w)
    return w, v.astype(ctype, copy=False)


def _eig_vjp(g: Any, ans: Any, a: Any, eps: Any = None) -> Any:
    gw, gv = g
    w, v = ans
    vh = mH(v)
    inner = None
    if gv is not None:
        j = matmul(vh, gv)
        scale = magnitude(gw, gv) * magnitude(v) ** 2
        require_negligible(imag(diag(j)), True, scale,
                           PHASE_ERROR.format(name="linalg.eig", what="eigenvectors"))
        # Columns of unit norm: the part of gV along each column's own length is not seen.
        num = j - matmul(vh, v) * row(real(diag(j)))
        e = row(w) - col(w)
        tol = degeneracy_tol(w, w.shape[-1], a)
        f = inverse_gaps(conj(e), tol, eps, num, scale,
                         DEGENERATE_ERROR.format(name="linalg.eig", what="eigenvalues"))
        if eps is None:
            _eig_coupling_check(w, tol, gv, gw, scale, a, v)
        inner = f * num
    else:
        vd = data_of(v)
        flat = degenerate_pairs(w, degeneracy_tol(w, w.shape[-1], a), nonzero=False)
        second_order_guard("linalg.eig", "eigenvalues", w, flat, flat & _touched(gw, magnitude(gw)),
                           a, lambda t: np.linalg.solve(vd, t @ vd))
    require_symmetric(gw, w, degeneracy_tol(w, w.shape[-1], a), magnitude(gw), "linalg.eig",
                      "eigenvalues", "eigenvalue")
    if gw is not None:
        inner = diag_matrix(gw) if inner is None else inner + diag_matrix(gw)
    return solve(vh, matmul(inner, vh))


def _eig_coupling_check(w: Any, tol: Any, gv: Any, gw: Any, scale: Any, a: Any, v: Any) -> None:
    """As for ``eigh``: at equal eigenvalues, a loss that depends on the eigenvalues and on
    the eigenvectors of the block (``V diag(f(w)) V^-1``) needs a 0/0 limit the gradients do
    not determine; a loss through the block's span only (a spectral projector) has ``gw``
    zero there. (``V^H gV`` vanishes on the block for every loss that does not depend on the
    basis there, so the eigenvectors' part of the coupling shows in ``gV`` itself.)"""
    flat = degenerate_pairs(w, tol, nonzero=False)
    if not flat.any():
        return
    used = np.any(~negligible(gv, scale), axis=-2)
    coupled = flat & (used[..., :, None] | used[..., None, :])
    vd = data_of(v)
    second_order_guard("linalg.eig", "eigenvalues", w, flat, coupled, a,
                       lambda t: np.linalg.solve(vd, t @ vd))
    if gw is None:
        return
    quiet = negligible(gw, scale)
    if _any(coupled & ~(quiet[..., :, None] & quiet[..., None, :])):
        raise GaugeError(_COUPLED.format(
            name="linalg.eig", what="eigenvalues", example=" (as V diag(f(w)) V^-1 does)",
            advice="For V f(w) V^-1 use a matrix function (yaad.linalg.expm, logm, sqrtm). "))


def _eig_jvp(t: Any, ans: Any, a: Any, eps: Any = None) -> Any:
    w, v = ans
    dp = solve(v, matmul(t, v))
    tol = degeneracy_tol(w, w.shape[-1], a)
    c = inverse_gaps(row(w) - col(w), tol, eps, chain=True) * dp
    dw = diag(dp)
    split = _eig_level_split(w, dp, t, tol) if eps is None else None
    if split is None:
        c = c - real_diag_matrix(matmul(matmul(mH(v), v), c))  # keep the columns of unit norm
        return dw, matmul(v, c)
    # A degenerate level: its one-sided derivative, in any basis. In forward mode eig()
    # returns the basis W = V X diag(1/n) (unit columns) the level continues from: the
    # coefficients there, with the turn inside the levels, normalised, then back in V's.
    x, x_inv = split
    turned = matmul(x_inv, matmul(dp, x))
    dw = diag(turned)
    f = inverse_gaps(row(w) - col(w), tol, None, chain=True)
    cw = matmul(x_inv, matmul(c, x)) + _turn_inside_levels(turned, f, w, tol)
    (vd,) = _on_host(v)
    n = _like(np.sqrt(np.sum(np.abs(vd @ data_of(x)) ** 2, axis=-2)), t)
    wd = _like(vd @ data_of(x) / n[..., None, :], t)
    cw = cw * col(n) / row(n)
    cw = cw - real_diag_matrix(matmul(matmul(mH(wd), wd), cw))
    c = matmul(x, matmul(cw * row(n) / col(n), x_inv))
    return dw, matmul(v, c)


def _components(adjacent: np.ndarray) -> list[np.ndarray]:
    """The groups of indices joined by the symmetric boolean matrix ``adjacent`` (of size
    two or more): the degenerate levels, whose members need not be neighbours (eig)."""
    n = adjacent.shape[-1]
    label = -np.ones(n, dtype=int)
    groups: list[np.ndarray] = []
    for i in range(n):
        if label[i] >= 0 or not adjacent[i].any():
            continue
        stack, members = [i], []
        label[i] = len(groups)
        while stack:
            j = stack.pop()
            members.append(j)
            for k in np.flatnonzero(adjacent[j] & (label < 0)).tolist():
                label[k] = len(groups)
                stack.append(k)
        groups.append(np.sort(np.array(members)))
    return groups


def _plain_tangent(t: Any, *values: Any) -> bool:
    """Whether the level splits can be computed: arrays NumPy can read in place (NumPy's,
    or another library's on the CPU, through DLPack), and a tangent of the primal's own
    shape (not batched by vmap: jacfwd then keeps the basis's numbers)."""
    return tuple(data_of(t).shape) == tuple(t.shape) and _on_host(t, *values) is not None


def _on_host(*xs: Any) -> Any:
    """The values of tensors or arrays ``xs`` as NumPy arrays (another library's CPU array
    read through DLPack, not copied), or None when one cannot be (a GPU array)."""
    out = []
    for x in xs:
        d = data_of(x) if isinstance(x, Tensor) else x
        if isinstance(d, (int, float, complex, np.generic)):
            d = np.asarray(d)
        elif not isinstance(d, np.ndarray):
            try:
                d = np.from_dlpack(d)
            except (TypeError, AttributeError, BufferError, RuntimeError, ValueError):
                return None
        out.append(d)
    return out


def _like(result: np.ndarray, t: Any) -> Any:
    """The constant array ``result`` in the array library of the tangent ``t``."""
    td = data_of(t)
    return result if isinstance(td, np.ndarray) else namespace(td).asarray(result)


def _eig_level_split(w: Any, dp: Any, t: Any, tol: Any) -> Any:
    """``(X, X^-1)`` (arrays), block-diagonal on the degenerate levels of the eigenvalues
    ``w`` of a general matrix and the identity elsewhere, such that ``X^-1 dP X`` is
    diagonal on each level (``dP = V^-1 da V``), or None when no level is degenerate.

    Along ``da`` the members of a level ``l`` move as ``l + s mu`` (``mu`` the eigenvalues
    of the level's block of ``dP``): the JVP returns ``mu``, the same numbers in every
    basis the solver may return, ordered by real part (then imaginary part) and given to
    the members in the order of their computed eigenvalues' real parts: the derivative
    from the right of ``sort(real(eigvals(a)))``. (LAPACK's order inside a level is its
    own: a single member of ``eigvals(a)`` itself has no derivative.) A level whose
    block is not diagonalisable keeps ``diag(dP)``: its trace, which a symmetric function
    of the level needs, is right in any basis."""
    if not _plain_tangent(t, w, dp, tol):
        return None
    wd, pd, tl = _on_host(w, dp, tol)
    flat = degenerate_pairs(wd, tl, nonzero=False, chain=True)
    if not flat.any():
        return None
    n = wd.shape[-1]
    x = np.broadcast_to(np.eye(n, dtype=pd.dtype), pd.shape).copy()
    x_inv = x.copy()
    for idx in np.ndindex(pd.shape[:-2]):
        fl = flat[idx] if flat.ndim > 2 else flat
        for level in _components(fl):
            block = np.ix_(level, level)
            mu, vecs = np.linalg.eig(pd[idx][block])
            if np.linalg.cond(vecs) > 1e8:  # not diagonalisable: keep the basis's numbers
                continue
            members = np.lexsort((wd[idx][level].imag, wd[idx][level].real))
            rates = np.lexsort((mu.imag, mu.real))
            cols = np.empty_like(vecs)
            cols[:, members] = vecs[:, rates]
            x[idx][block] = cols
            x_inv[idx][block] = np.linalg.inv(cols)
    return _like(x, t), _like(x_inv, t)


def _eig_mixing(td: np.ndarray, wd: np.ndarray, vd: np.ndarray, ad: np.ndarray) -> Any:
    """The off-diagonal entries of ``V^-1 t V`` on the degenerate levels, and the scale."""
    flat = degenerate_pairs(wd, degeneracy_tol(wd, wd.shape[-1], ad), nonzero=False, chain=True)
    return np.where(flat, np.linalg.solve(vd, td @ vd), 0), magnitude(td)


def eig_along_tangent(a: Any, w: Any, v: Any) -> Any:
    """The eigenvectors ``v`` of ``eig(a)``, in forward mode turned inside each degenerate
    level to the basis the tangent of ``a`` splits it from (``V X``, ``X^-1 V^-1 da V X``
    diagonal on the level, :func:`_eig_level_split`), columns of unit norm: a
    reconstruction ``V diag(w) V^-1`` has the tangent ``da``; the rule gives the tangent
    of that basis (unit columns, turned inside the level as the members split). Raises
    :class:`GaugeError` where no
    basis can be chosen, or where the tangent's block on a level is not diagonalisable
    (the level then splits as a square root: no derivative)."""
    tans = _forward_tangents(a)
    if not tans:
        return v
    wd = data_of(w)
    tol = degeneracy_tol(w, w.shape[-1], a)
    flat = degenerate_pairs(wd, data_of(tol), nonzero=False, chain=True)
    if not _any(flat):
        return v
    if len(tans) == 1:
        (t,) = tans.values()
        host = _on_host(w, v, t) if _plain_tangent(t, w, v, a) and all(
            tuple(data_of(x).shape) == tuple(x.shape) for x in (w, v, a)) else None
        if host is not None:
            _, vd, td = host
            dp = np.linalg.solve(vd, td @ vd)
            split = _eig_level_split(w, dp, t, tol)
            x, x_inv = (np.asarray(data_of(m)) for m in split)
            turned = x_inv @ dp @ x
            if _any(flat & ~negligible(turned, magnitude(dp))):
                raise GaugeError(
                    "linalg.eig: forward mode through the vectors of a degenerate level "
                    "along a direction whose block on the level (of V^-1 da V) is not "
                    "diagonalisable: the level splits as a square root of the step, so it "
                    "has no derivative and no basis continues it. Use the eigenvalues' "
                    "symmetric functions (a trace), or lift the degeneracy.")
            m = x / np.sqrt(np.sum(np.abs(vd @ x) ** 2, axis=-2))[..., None, :]
            return matmul(v, _like(m, t))  # (the rule's tangent keeps unit columns)
    _gauge_check("linalg.eig", "use linalg.eigvals", "a direction that mixes it", tans,
                 _eig_mixing, w, v, a)
    return v


eig_op = op(_eig, name="linalg.eig", nout=2, vjp=located(_eig_vjp, "linalg.eig", 0), jvp=_eig_jvp,
         batch="broadcast")


# ---- svd ---------------------------------------------------------------------------------


def _svd(a: Any, full_matrices: Any = True, hermitian: Any = False, eps: Any = None) -> Any:
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices, hermitian=hermitian)
    note_call_site(s)
    return u, s, vh


def _svd_core_vjp(a: Any, u: Any, s: Any, v: Any, gu: Any, gs: Any, gv: Any, eps: Any,
                  scale: Any) -> Any:
    """Gradient of the reduced SVD ``a = u diag(s) v^H`` (``u``: m x r, ``v``: n x r);
    ``scale`` is the size of the incoming gradients (for the checks).

    The columns that receive a cotangent (all of them with ``eps``) are treated one by
    one; the others, as one block through :func:`resolvent`, together with the null
    spaces of ``a``.
    """
    m, n = u.shape[-2], v.shape[-2]
    name = "linalg.svd"
    tol = degeneracy_tol(s, max(m, n))
    require_symmetric(gs, s, tol, magnitude(gs), name, "singular values", "singular value",
                      zero_kink=True, exempt=_columns_touched(scale, gu, gv))
    _require_unpaired_at_zero(s, tol, gu, gv, scale)
    idx, rest = (slice(None), None) if eps is not None else active_columns(gu, gs, gv)
    ut, st, vt = _cols(u, idx), _cols(s, idx), _cols(v, idx)
    gut = None if gu is None else _cols(gu, idx)
    gvt = None if gv is None else _cols(gv, idx)
    gst = None if gs is None else _cols(gs, idx)
    j = None if gut is None else matmul(mH(ut), gut)
    kk = None if gvt is None else matmul(mH(vt), gvt)
    flat = degenerate_pairs(st, tol, nonzero=False)
    if j is None and kk is None:
        coupled = flat & _touched(gst, scale)
    else:
        x = data_of(j if kk is None else kk if j is None else j + kk)
        coupled = flat & ~negligible((x + _conj_t(x)) * 0.5, scale)
    ud, vd = data_of(ut), data_of(vt)
    second_order_guard(name, "singular values", s, flat, coupled, a,
                       lambda t: herm(mH(ud) @ t @ vd))
    inner = None
    if j is not None or kk is not None:
        sj = 0 if j is None else j - mH(j)
        sk = 0 if kk is None else kk - mH(kk)
        plus, minus = sj + sk, sj - sk
        # (sj_ab s_b + s_a sk_ab) / (s_b^2 - s_a^2), split into 1/(s_b - s_a) and 1/(s_b + s_a)
        fm = inverse_gaps(row(st) - col(st), tol, eps, plus, scale,
                          DEGENERATE_ERROR.format(name=name, what="singular values"))
        fp = inverse_gaps(row(st) + col(st), tol, eps, minus, scale,
                          DEGENERATE_ERROR.format(name=name, what="zero singular values"))
        inner = (fm * plus + fp * minus) * 0.5
        if eps is None:
            inner = inner + _svd_degenerate_term(st, tol, j, kk, gst, scale)
        if is_complex(inner):
            im_j = 0 if j is None else imag(diag(j))
            im_k = 0 if kk is None else imag(diag(kk))
            require_negligible(im_j + im_k, True, scale,
                               PHASE_ERROR.format(name=name, what="singular vectors"))
            phase = im_j - im_k
            inner = inner + diag_matrix(0.5j * phase * inverse_values(
                st, tol, eps, phase, scale, DEGENERATE_ERROR.format(name=name,
                                                                 what="zero singular values")))
    if gst is not None:
        inner = diag_matrix(gst) if inner is None else inner + diag_matrix(gst)
    ga = matmul(ut, matmul(inner, mH(vt)))
    t = st.shape[-1]
    if (j is not None or kk is not None) and (t < m or t < n):
        # The rest of the space: the discarded columns and the null spaces, as one block.
        xp = namespace(data_of(u))
        zero = xp.zeros(u.shape[:-2] + (m, t), dtype=u.dtype)
        g_u = zero if j is None else gut - matmul(ut, j)
        g_v = xp.zeros(v.shape[:-2] + (n, t), dtype=v.dtype) if kk is None else gvt - matmul(
            vt, kk)
        sel = slice(0, 0) if rest is None else rest
        a_perp = a - matmul(ut * row(st), mH(vt))
        x = resolvent(a_perp, st, concat_last(g_u, g_v, axis=-2), _hint(_cols(u, sel)),
                      _hint(_cols(s, sel)), _hint(_cols(v, sel)), n=max(m, n), name=name)
        ga = ga + matmul(x[..., :m, :], mH(vt)) + matmul(ut, mH(x[..., m:, :]))
    return ga


def _columns_touched(scale: float, *gs: Any) -> Any:
    """The columns (shape ``(..., k)``) where one of the cotangents ``gs`` of vectors is not
    negligible, or None if there are none."""
    hit = None
    for g in gs:
        if g is not None:
            d = data_of(g)
            h = namespace(d).any(~negligible(d, scale), axis=-2)
            hit = h if hit is None else hit | h
    return hit


_PAIR_AT_ZERO = (
    "linalg.svd: the loss uses both singular vectors u_i and v_i of a singular value equal to "
    "0 ({detail}). At s_i = 0 nothing ties u_i to v_i: the analytic singular value changes "
    "sign there and the solver keeps s >= 0 by flipping one of the two, so u_i v_i^H (and "
    "U @ Vh, a polar factor, u_i^H C v_i) jumps as s_i crosses 0 and has no derivative. The "
    "gradients reaching svd cannot tell such a loss from one that depends on u_i and v_i "
    "only through u_i u_i^H and v_i v_i^H (the null spaces), whose derivative exists. For "
    "the null spaces use yaad.linalg.eigh(a @ a^H) (left) and eigh(a^H @ a) (right), "
    "whose derivatives there are exact; a loss through U diag(S) Vh or a bond "
    "(U S^p, S^(1-p) Vh) sends nothing to these columns and is exact as it is.")


def _require_unpaired_at_zero(s: Any, tol: Any, gu: Any, gv: Any, scale: float) -> None:
    """Raise :class:`GaugeError` where a singular value is 0 (``<= tol``) and the
    cotangents of both its vectors are not negligible.

    The signs (phases) of ``u_i`` and ``v_i`` are independent at ``s_i = 0``: along a
    perturbation the analytic singular value crosses 0 and the solver flips one vector,
    so a loss of ``u_i v_i^H`` jumps; a loss of ``u_i u_i^H`` and ``v_i v_i^H`` alone does
    not. This discrete symmetry leaves no trace in first-order data (any pair of
    cotangents comes from a loss of either kind), so the pair is refused.
    """
    if gu is None or gv is None:
        return
    sd = data_of(s)
    xp = namespace(sd)
    zero = sd <= tol
    if not _any(zero):
        return
    hit_u = xp.any(~negligible(data_of(gu), scale), axis=-2)
    hit_v = xp.any(~negligible(data_of(gv), scale), axis=-2)
    bad = zero & hit_u & hit_v
    if _any(bad):
        try:
            first = tuple(int(i) for i in np.argwhere(np.asarray(bad))[0])
            where = f" of matrix {first[:-1]} of the batch" if first[:-1] else ""
            detail = f"column {first[-1]}{where}, s = {float(np.asarray(sd)[first]):.3g}"
        except Exception:  # noqa: BLE001  (an array library NumPy cannot read: no detail)
            detail = "see the singular values"
        raise GaugeError(_PAIR_AT_ZERO.format(detail=detail))


def _svd_degenerate_term(s: Any, tol: Any, j: Any, kk: Any, gs: Any, scale: Any) -> Any:
    """The Hermitian term of a pair of equal, non-zero singular values ``s_a = s_b``.

    It is the 0/0 limit of ``plus_ab / (2 (s_b - s_a))`` (``plus = skew(J + K)``, ``J =
    U^H gU``, ``K = V^H gV``), which first-order data determine for two kinds of losses:

    - a bond of a tensor network, ``(U S^p, S^(1-p) V^H)`` contracted in a gauge-invariant
      network (``U diag(S) Vh`` itself, a truncated split, TRG's ``(U sqrt(S), sqrt(S) Vh)``):
      then ``S (J + K)`` is Hermitian and the term equals ``herm(J + K)_ab / (s_a + s_b)``
      identically, a smooth expression whose derivatives are those of the exact term;
    - a loss invariant under ``(U R, V R)`` (subspaces, ``U Vh``): ``J + K`` is Hermitian, the
      numerator vanishes identically and the term is 0.

    The two are told apart by the pairs that are not degenerate, where ``S (J + K)`` or ``J + K``
    is Hermitian; when those carry nothing (a multiple of the identity), by ``gs``: ``s gs =
    Re diag(J + K) / 2`` for a bond, ``gs = 0`` on the block for the other kind. Anything else
    raises :class:`GaugeError`. (A coincidence in the basis LAPACK returns, such as a zero
    diagonal of ``J + K`` on the block, can make a loss of neither kind pass for one.)
    """
    flat = degenerate_pairs(s, tol)
    if not _any(flat) or (j is None and kk is None):
        return 0
    x = data_of(j if kk is None else kk if j is None else j + kk)
    xp = namespace(x)
    xh = _conj_t(x)
    need = flat & ~negligible((x + xh) * 0.5, scale)
    if not _any(need):
        return 0
    sd = data_of(s)
    k = sd.shape[-1]
    off = ~flat & ~xp.eye(k, dtype=xp.bool)
    tiny = float(xp.finfo(sd.dtype).smallest_normal)
    top = xp.maximum(xp.max(sd, axis=-1), tiny)[..., None, None]
    y = sd[..., :, None] * x

    def holds(residual: Any, where: Any) -> Any:
        return xp.all(negligible(residual, scale) | ~where, axis=(-2, -1))

    informative = xp.any(off & ~negligible(x, scale), axis=(-2, -1))
    bond = holds((y - _conj_t(y)) / top, off)
    rotation = holds(x - xh, off)
    rows = xp.any(flat, axis=-1)
    gsd = 0 if gs is None else data_of(gs)
    diag_ok = xp.all(negligible((sd * gsd - xp.real(xp.linalg.diagonal(x)) / 2)
                                 / top[..., 0], scale) | ~rows, axis=-1)
    quiet = xp.all(negligible(gsd, scale) | ~rows, axis=-1)
    use_bond = xp.where(informative, bond, diag_ok)
    use_zero = xp.where(informative, rotation, quiet) & ~use_bond
    if _any(xp.any(need, axis=(-2, -1)) & ~(use_bond | use_zero)):
        raise GaugeError(_COUPLED.format(
            name="linalg.svd", what="singular values",
            example=" through U and V otherwise than through U diag(s) Vh or a bond "
                    "(U S^p, S^(1-p) Vh) of a network", advice=""))
    if gs is not None:  # what the values' cotangent adds to a bond must be symmetric too
        extra = gsd - xp.where(use_bond[..., None], xp.real(xp.linalg.diagonal(x)) / 2
                               / xp.where(sd > 0, sd, 1), 0)
        require_symmetric(extra, sd, tol, scale, "linalg.svd", "singular values",
                          "singular value", exempt=~rows)
    use = flat & use_bond[..., None, None]
    hx = herm(j if kk is None else kk if j is None else j + kk)
    return where(use, hx / where(use, row(s) + col(s), 1), 0)


def _svd_vjp(g: Any, ans: Any, a: Any, full_matrices: Any = True, hermitian: Any = False,
             eps: Any = None) -> Any:
    gu, gs, gvh = g
    u, s, vh = ans
    k = s.shape[-1]
    scale = magnitude(gu, gs, gvh)
    free = _FREE.format(name="linalg.svd",
                        what="singular vectors beyond min(m, n) (full_matrices=True)")
    u, gu = fold_complement(u, gu, k, free) if u.shape[-1] > k else (u, gu)
    v = mH(vh)
    gv = None if gvh is None else mH(gvh)
    v, gv = fold_complement(v, gv, k, free) if v.shape[-1] > k else (v, gv)
    ga = _svd_core_vjp(herm(a) if hermitian else a, u, s, v, gu, gs, gv, eps, scale)
    return herm(ga) if hermitian else ga


def _svd_jvp(t: Any, ans: Any, a: Any, full_matrices: Any = True, hermitian: Any = False,
             eps: Any = None) -> Any:
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
    fm = inverse_gaps(row(s) - col(s), tol, eps, chain=True)
    fp = inverse_gaps(row(s) + col(s), tol, eps, chain=True)
    om_u = (fm * sym + fp * asym) * 0.5
    om_v = (fm * sym - fp * asym) * 0.5
    sinv = inverse_values(s, tol, eps)
    if is_complex(dp):
        phase = diag_matrix(0.5j * imag(diag(dp)) * sinv)
        om_u = om_u + phase
        om_v = om_v - phase
    ds = diag(dp)
    ds = real(ds) if is_complex(ds) else ds
    if eps is None:  # degenerate levels and zeros: the one-sided derivative, in any basis
        ds = _svd_level_values(s, u1, v1, t, dp, tol, ds)
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
    return du, ds, mH(dv)


def _svd_level_values(s: Any, u1: Any, v1: Any, t: Any, dp: Any, tol: Any, ds: Any) -> Any:
    """The JVP of the singular values ``ds``, with their derivative from the right where
    they are degenerate or 0: the same numbers in every basis the solver may return.

    Along ``da`` a level ``s_B`` (not 0) splits as ``s_B + t mu``, ``mu`` the eigenvalues
    of ``herm(U_B^H da V_B)``, descending as the values are; the values at 0 grow as ``t``
    times the singular values of ``P_L da P_R`` (``P_L``, ``P_R``: the projectors on the
    left and right null spaces, the columns beyond ``min(m, n)`` included), never
    negative (``diag(U^H da V)`` there had the sign of the basis's pair). Both are written
    as ``Re(x^H da y)`` with constant vectors ``x``, ``y``, so ``ds`` stays linear in the
    tangent's graph (second order). A tangent batched by vmap keeps ``ds``."""
    if not _plain_tangent(t, s, u1, v1, dp, tol):
        return ds
    sd, ud, vd, td, pd, tl = _on_host(s, u1, v1, t, dp, tol)
    flat = degenerate_pairs(sd, tl, nonzero=True, chain=True)
    zero = sd <= tl
    if not (flat.any() or zero.any()):
        return ds
    k, m, n = sd.shape[-1], ud.shape[-2], vd.shape[-2]
    dtype = np.result_type(ud.dtype, vd.dtype, td.dtype)
    batch = np.broadcast_shapes(td.shape[:-2], ud.shape[:-2])
    xs = np.broadcast_to(ud, batch + (m, k)).astype(dtype)
    ys = np.broadcast_to(vd, batch + (n, k)).astype(dtype)
    for idx in np.ndindex(batch):
        fl = flat[idx] if flat.ndim > 2 else flat
        for level in _components(fl):
            block = pd[idx][np.ix_(level, level)]
            q = np.linalg.eigh((block + block.conj().T) / 2)[1][:, ::-1]  # descending
            xs[idx][:, level] = ud[idx][:, level] @ q
            ys[idx][:, level] = vd[idx][:, level] @ q
        z = np.flatnonzero(zero[idx] if zero.ndim > 1 else zero)
        if z.size:
            live = np.flatnonzero(~(zero[idx] if zero.ndim > 1 else zero))
            ul, vl = ud[idx][:, live], vd[idx][:, live]
            p_left = np.eye(m, dtype=dtype) - ul @ ul.conj().T
            p_right = np.eye(n, dtype=dtype) - vl @ vl.conj().T
            left, _, right_h = np.linalg.svd(p_left @ td[idx] @ p_right)
            xs[idx][:, z] = p_left @ left[:, :z.size]
            ys[idx][:, z] = p_right @ right_h[:z.size].conj().T
    # Re(x_j^H da y_j), with x, y constants (the values' tangents stay linear in da)
    xs, ys, cx = _like(xs, t), _like(ys, t), np.iscomplexobj(xs)
    x_da_y = _sum(conj(xs) * matmul(t, ys) if cx else xs * matmul(t, ys), axis=-2)
    return real(x_da_y) if is_complex(x_da_y) else x_da_y


def svd_rotation(s: Any, u: Any, vh: Any, t: Any) -> Any:
    """``(R_U, R_V)`` (arrays), unitary and block-diagonal, such that ``U R_U`` and
    ``V R_V`` (``V = Vh^H``) are the singular vectors that ``a``'s degenerate levels and
    zeros continue from along the tangent ``t`` (``s -> 0+``); None when there are none, or
    when ``t`` or the vectors are batched (vmap).

    A level ``s_B > 0`` turns both ``U_B`` and ``V_B`` by the eigenvectors of
    ``herm(U_B^H t V_B)``, descending (its members' one-sided derivatives, which the rule
    gives them); the zeros, with the columns beyond ``min(m, n)`` (the null spaces; all of
    them are columns of ``U`` and ``V`` when the matrix is square or ``full_matrices``),
    turn ``U_N`` and ``V_N`` by the singular vectors of ``U_N^H t V_N``, so that the zeros
    grow as its singular values, in the order of the rule's values."""
    if not _plain_tangent(t, s, u, vh) or any(tuple(data_of(x).shape) != tuple(x.shape)
                                              for x in (s, u, vh)):
        return None
    sd, ud, vhd, td = _on_host(s, u, vh, t)
    k, m, n = sd.shape[-1], ud.shape[-2], vhd.shape[-1]
    tol = degeneracy_tol(sd, max(m, n))
    flat = degenerate_pairs(sd, tol, nonzero=True, chain=True)
    zero = sd <= tol
    if not (flat.any() or zero.any()):
        return None
    vd = _conj_t(vhd)
    cu, cv = ud.shape[-1], vd.shape[-1]
    dtype = np.result_type(ud.dtype, vd.dtype, td.dtype)
    batch = np.broadcast_shapes(td.shape[:-2], ud.shape[:-2])
    ru = np.broadcast_to(np.eye(cu, dtype=dtype), batch + (cu, cu)).copy()
    rv = np.broadcast_to(np.eye(cv, dtype=dtype), batch + (cv, cv)).copy()
    ub, vb, tb = (np.broadcast_to(x, batch + x.shape[-2:]) for x in (ud, vd, td))
    for idx in np.ndindex(batch):
        ui, vi, ti = ub[idx], vb[idx], tb[idx]
        for level in _components(flat[idx] if flat.ndim > 2 else flat):
            block = ui[:, level].conj().T @ ti @ vi[:, level]
            q = np.linalg.eigh((block + block.conj().T) / 2)[1][:, ::-1]  # descending
            ru[idx][np.ix_(level, level)] = q
            rv[idx][np.ix_(level, level)] = q
        z = np.flatnonzero(zero[idx] if zero.ndim > 1 else zero)
        if z.size:
            nu, nv = np.concatenate([z, np.arange(k, cu)]), np.concatenate([z, np.arange(k, cv)])
            left, _, right_h = np.linalg.svd(ui[:, nu].conj().T @ ti @ vi[:, nv])
            ru[idx][np.ix_(nu, nu)] = left
            rv[idx][np.ix_(nv, nv)] = right_h.conj().T
    return _like(ru, t), _like(rv, t)


def _svd_mixing(td: np.ndarray, sd: np.ndarray, ud: np.ndarray, vhd: np.ndarray) -> Any:
    """Where the rule's tangents in the solver's basis miss part of ``t`` (batched
    tangents): the off-diagonal entries of ``herm(U_B^H t V_B)`` on the repeated values,
    and the part of ``t`` between the null spaces that ``diag(U_z^H t V_z)`` misses."""
    m, n = ud.shape[-2], vhd.shape[-1]
    tol = degeneracy_tol(sd, max(m, n))
    flat = degenerate_pairs(sd, tol, nonzero=True, chain=True)
    zero = sd <= tol
    k = sd.shape[-1]
    u1, v1 = ud[..., :k], _conj_t(vhd)[..., :k]
    p = _conj_t(u1) @ td @ v1
    mix = [np.where(flat, (p + _conj_t(p)) / 2, 0).reshape(-1)]
    if zero.any():
        live = ~zero
        ul, vl = u1 * live[..., None, :], v1 * live[..., None, :]
        p_left = np.eye(m) - ul @ _conj_t(ul)
        p_right = np.eye(n) - vl @ _conj_t(vl)
        dz = np.where(zero, np.diagonal(p, axis1=-2, axis2=-1), 0)
        uz, vz = u1 * zero[..., None, :], v1 * zero[..., None, :]
        mix.append((p_left @ td @ p_right - (uz * dz[..., None, :]) @ _conj_t(vz)).reshape(-1))
    return np.concatenate(mix), magnitude(td)


def svd_along_tangent(a: Any, out: tuple[Any, Any, Any], full_matrices: bool,
                      hermitian: bool) -> tuple[Any, Any, Any]:
    """``(U, S, Vh)`` of ``svd(a)``, in forward mode turned inside each repeated value and
    the null spaces to the basis the tangent of ``a`` continues them from
    (:func:`svd_rotation`): a reconstruction ``U diag(S) Vh`` then has the tangent ``da``.
    A reduced SVD of a non-square matrix with zeros is taken from the full one (its null
    space is not among its columns). Raises :class:`GaugeError` where no basis can be
    chosen."""
    tans = _forward_tangents(a)
    if not tans:
        return out
    u, s, vh = out
    sd = data_of(s)
    m, n = u.shape[-2], vh.shape[-1]
    tol = degeneracy_tol(sd, max(m, n))
    zero = _any(sd <= tol)
    if not (zero or _any(degenerate_pairs(sd, tol, nonzero=True, chain=True))):
        return out
    if len(tans) == 1:
        (t,) = tans.values()
        if hermitian:
            t = herm(t)
        k = sd.shape[-1]
        if zero and not full_matrices and m != n:
            u, s, vh = svd_op(a, True, hermitian)
        rot = svd_rotation(s, u, vh, t)
        if rot is not None:
            u, vh = matmul(u, rot[0]), matmul(mH(rot[1]), vh)
            if u.shape[-1] != out[0].shape[-1] or vh.shape[-2] != out[2].shape[-2]:
                u, vh = u[..., :k], vh[..., :k, :]
            return u, s, vh
    _gauge_check("linalg.svd", "use linalg.svdvals", "a direction that mixes it (a "
                 "repeated singular value, or the null spaces at a zero)",
                 {lv: herm(t) if hermitian else t for lv, t in tans.items()}, _svd_mixing,
                 s, u, vh)
    return out


svd_op = op(_svd, name="linalg.svd", nout=3, vjp=located(_svd_vjp, "linalg.svd", 1), jvp=_svd_jvp,
         batch="broadcast")


# ---- qr ------------------------------------------------------------------------------------


def _qr(a: Any, complete: Any = False) -> Any:
    q, r = np.linalg.qr(a, "complete" if complete else "reduced")
    note_call_site(r)
    return q, r


def _rsolve(x: Any, r: Any) -> Any:
    """``x @ inv(r)`` for upper triangular ``r``."""
    return mT(solve_triangular(r, mT(x), 1, False))


def _qr_tall_vjp(q: Any, r: Any, gq: Any, gr: Any) -> Any:
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


_RANK = ("linalg.qr: the input has rank {r} < {k} (a diagonal entry of R is 0 to working "
         "precision, at column {r}): Q's columns from {r} on and R's rows from {r} on are "
         "not determined by the input (LAPACK picks them from rounding errors), so a loss "
         "that uses them has no gradient{what}. Use only Q[..., :{r}] and R[..., :{r}, :] "
         "(exact: the first {r} columns are independent), a rank-revealing decomposition "
         "(yaad.linalg.svd), or lift the rank deficiency.")


def qr_rank(r: Any) -> int | None:
    """The number of leading independent columns of ``a = q r`` (the first diagonal entry
    of ``r`` that is 0 to working precision; the least over a batch), or None at full
    rank."""
    rd = data_of(r)
    xp = namespace(rd)
    k = min(rd.shape[-2], rd.shape[-1])
    if k == 0:
        return None
    if is_lazy(rd):  # (Dask: no value is read inside a rule; the check is skipped)
        return None
    d = xp.abs(xp.linalg.diagonal(rd[..., :k, :k]))
    top = xp.max(xp.abs(rd), axis=(-2, -1))
    tol = 100 * max(rd.shape[-2:]) * float(xp.finfo(d.dtype).eps) * top
    tiny = d <= tol[..., None]
    if not bool(xp.any(tiny)):
        return None
    index = xp.arange(k)
    return int(xp.min(xp.where(tiny, index, xp.full(tiny.shape, k, dtype=index.dtype))))


def _qr_vjp(g: Any, ans: Any, a: Any, complete: Any = False) -> Any:
    gq, gr = g
    q, r = ans
    m, n = q.shape[-2], r.shape[-1]
    k = min(m, n)
    rank = qr_rank(r)
    if rank is not None:
        return _qr_deficient_vjp(gq, gr, q, r, rank)
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
        gy = namespace(data_of(q)).zeros(q.shape[:-2] + (m, n - m), dtype=q.dtype)
    else:
        extra = matmul(matmul(q, w), mH(gw))
        gq = extra if gq is None else gq + extra
        gy = matmul(q, gw)
    return concat_last(_qr_tall_vjp(q, u, gq, gu), gy)


def _qr_deficient_vjp(gq: Any, gr: Any, q: Any, r: Any, rank: int) -> Any:
    """The gradient at rank deficiency: only ``q[..., :rank]`` and ``r[..., :rank, :]`` are
    functions of ``a`` there (the QR of the independent columns ``x = a[..., :rank]``, and
    ``w = q_1^H y`` for the others ``y``); a cotangent on the rest raises."""
    scale = magnitude(gq, gr)
    k = min(q.shape[-2], r.shape[-1])
    if gq is not None and _any(~negligible(gq[..., rank:], scale)):
        raise GaugeError(_RANK.format(r=rank, k=k, what=f" (here through Q[..., {rank}:])"))
    if gr is not None and _any(~negligible(gr[..., rank:, :], scale)):
        raise GaugeError(_RANK.format(r=rank, k=k, what=f" (here through R[..., {rank}:, :])"))
    gq = None if gq is None else gq[..., :rank]
    q1, u = q[..., :rank], r[..., :rank, :rank]
    y = matmul(q[..., :k], r[..., :k, rank:])  # a[..., rank:]
    gu = gw = None
    if gr is not None:
        gu, gw = gr[..., :rank, :rank], gr[..., :rank, rank:]
        extra = matmul(y, mH(gw))  # w = q_1^H y
        gq = extra if gq is None else gq + extra
    gx = _qr_tall_vjp(q1, u, gq, gu)
    gy = (namespace(data_of(q)).zeros(q.shape[:-2] + y.shape[-2:], dtype=q.dtype)
          if gw is None else matmul(q1, gw))
    return concat_last(gx, gy)


def _qr_tall_jvp(q: Any, r: Any, t: Any) -> Any:
    x = _rsolve(matmul(mH(q), t), r)
    lower = tril(x, -1)
    c = lower - mH(lower)
    if is_complex(x):
        c = c + 1j * diag_matrix(imag(diag(x)))
    return _rsolve(t, r) - matmul(q, x - c), triu(matmul(x - c, r))


def _qr_jvp(t: Any, ans: Any, a: Any, complete: Any = False) -> Any:
    q, r = ans
    m, n = q.shape[-2], r.shape[-1]
    rank = qr_rank(r)
    if rank is not None:  # a forward pass cannot tell which outputs the loss will use
        raise GaugeError(_RANK.format(r=rank, k=min(m, n), what=(
            " (forward mode computes the tangents of all of them: use reverse mode)")))
    if m >= n:
        dq, dr = _qr_tall_jvp(q[..., :n], r[..., :n, :], t)
        if q.shape[-1] > n:
            dq = _extend_complement(q, dq, n)
            dr = concat_last(dr, namespace(data_of(dr)).zeros(dr.shape[:-2] + (m - n, n),
                                                              dtype=dr.dtype), axis=-2)
        return dq, dr
    u, w = r[..., :m], r[..., m:]
    dq, du = _qr_tall_jvp(q, u, t[..., :m])
    dw = matmul(mH(dq), matmul(q, w)) + matmul(mH(q), t[..., m:])
    return dq, concat_last(du, dw)


qr_op = op(_qr, name="linalg.qr", nout=2, save_args=False, vjp=located(_qr_vjp, "linalg.qr", 1),
         jvp=_qr_jvp, batch="broadcast")


# ---- the functions of yaad.linalg ------------------------------------------------------


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


def _check_eps(name: str, eps: Any) -> None:
    if eps is not None and not eps > 0:
        raise ValueError(f"{name}: eps must be None or a positive float, got {eps!r}")


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
        In forward mode (``jvp``) the vectors of a degenerate level come turned to the
        basis the tangent splits it from, so that every function of the level's span and
        values has its exact tangent (``docs/linalg.md``).
    """
    _check_eps("eigh", eps)
    w, v = eigh_op(a, UPLO, eps=eps)
    if eps is None and state.levels:
        v = eigh_along_tangent(a, w, v)
    return EighResult(w, v)


def eigvalsh(a: Any, UPLO: Literal["L", "U", "l", "u"] = "L") -> Any:
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
    return eigh_op(a, UPLO)[0]


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
        unit norm. Each is defined up to a phase: a loss must not depend on it. In
        forward mode the vectors of a degenerate level come turned to the basis the
        tangent splits it from, as :func:`eigh`'s.
    """
    _check_eps("eig", eps)
    w, v = eig_op(a, eps=eps)
    if eps is None and state.levels:
        v = eig_along_tangent(a, w, v)
    return EigResult(w, v)


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
    return eig_op(a)[0]


@overload
def svd(a: Any, full_matrices: bool = ..., compute_uv: Literal[True] = ...,
        hermitian: bool = ..., *, eps: float | None = ...) -> SVDResult: ...
@overload
def svd(a: Any, full_matrices: bool, compute_uv: Literal[False], hermitian: bool = ..., *,
        eps: float | None = ...) -> Any: ...
@overload
def svd(a: Any, full_matrices: bool = ..., *, compute_uv: Literal[False],
        hermitian: bool = ..., eps: float | None = ...) -> Any: ...
@overload
def svd(a: Any, full_matrices: bool = ..., compute_uv: bool = ..., hermitian: bool = ..., *,
        eps: float | None = ...) -> Any: ...


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
        vectors raises GaugeError, and so does one through both ``u_i`` and ``v_i`` of a
        singular value at 0, whose relative sign jumps there (see ``docs/linalg.md``).
        In forward mode the vectors of a repeated value and the null spaces come turned
        to the basis the tangent continues them from, as :func:`eigh`'s.
    """
    _check_eps("svd", eps)
    if not compute_uv:
        if not isinstance(a, Tensor):
            return np.linalg.svd(a, compute_uv=False, hermitian=hermitian)
        return svd_op(a, False, hermitian, eps=eps)[1]
    out = svd_op(a, full_matrices, hermitian, eps=eps)
    if eps is None and state.levels:
        out = svd_along_tangent(a, out, full_matrices, hermitian)
    return SVDResult(*out)


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
        return QRResult(*qr_op(a, mode == "complete"))
    if mode == "r":
        return qr_op(a, False)[1]
    if mode == "raw":
        if isinstance(a, Tensor) and a.requires_grad and is_grad_enabled():
            raise ValueError("qr: mode='raw' is not differentiable; use mode='reduced' or "
                             "'complete', or call it under yaad.no_grad()")
        return _qr_raw(a)
    raise ValueError(f"qr: unrecognized mode {mode!r}; use 'reduced', 'complete', 'r' or 'raw'")


@per_example()
def _qr_raw(a: Any) -> tuple[Any, ...]:
    h, tau = np.linalg.qr(data_of(a), "raw")
    return (Tensor(h), Tensor(tau)) if isinstance(a, Tensor) else (h, tau)


def _schur(a: Any, output: Any = "real", lwork: Any = None, overwrite_a: bool = False,
           sort: Any = None, check_finite: bool = True) -> Any:
    return sla.schur(a, output=output, lwork=lwork, sort=sort, check_finite=check_finite)


@per_example("a")  # (LAPACK's, for one matrix)
def schur(a: Any, output: str = "real", lwork: Any = None, overwrite_a: bool = False,
          sort: Any = None, check_finite: bool = True) -> tuple[Any, ...]:
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
    lwork : optional
        As SciPy's (``overwrite_a`` is ignored).
    overwrite_a : bool, optional
        As SciPy's (``overwrite_a`` is ignored).
    sort : optional
        As SciPy's (``overwrite_a`` is ignored).
    check_finite : bool, optional
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
    data = a.data if isinstance(a, Tensor) else a
    if is_foreign(data):  # (SciPy would turn it into a NumPy array)
        raise no_implementation("linalg.schur", backend_name(data), "SciPy's LAPACK Schur form")
    out: tuple[Any, ...] = _schur(data, output, lwork, overwrite_a, sort, check_finite)
    if isinstance(a, Tensor):
        return tuple(Tensor(o) if isinstance(o, np.ndarray) else o for o in out)
    return out


# ---- other libraries' arrays (Dask: dask.array.linalg, tall-and-skinny matrices) ---------

@implements("linalg.eigh")
def _eigh_xp(xp: Any, a: Any, UPLO: Any = "L", eps: Any = None) -> Any:
    a = square_matrices("eigh", a)
    if not hasattr(xp.linalg, "eigh"):
        raise NotImplementedError(f"{backend_name(a)} has no linalg.eigh")
    # The Hermitian matrix of the triangle NumPy's LAPACK reads (its diagonal's real part):
    # the array API leaves a non-Hermitian input's result undefined.
    low = xp.tril(a, k=-1) if UPLO in ("L", "l") else xp.conj(xp.matrix_transpose(
        xp.triu(a, k=1)))
    d = xp.linalg.diagonal(a)
    eye = xp.eye(a.shape[-1], dtype=a.dtype)
    h = low + xp.conj(xp.matrix_transpose(low)) + (xp.real(d) if is_complex(d) else d)[
        ..., None] * eye
    w, v = xp.linalg.eigh(h)
    note_call_site(w)
    return w, v


@implements("linalg.qr")
def _qr_xp(xp: Any, a: Any, complete: Any = False) -> Any:
    library = backend_name(a)
    if library == "dask" and (complete or a.ndim != 2):
        raise no_implementation("linalg.qr", library,
                                "mode='complete'" if complete else "a stack of matrices")
    try:
        return tuple(xp.linalg.qr(a, mode="complete" if complete else "reduced"))
    except (ValueError, NotImplementedError) as e:  # (Dask: tall-and-skinny, row chunks)
        raise no_implementation("linalg.qr", library, str(e)) from e


@implements("linalg.svd")
def _svd_xp(xp: Any, a: Any, full_matrices: Any = True, hermitian: Any = False,
            eps: Any = None) -> Any:
    library = backend_name(a)
    if hermitian:  # (NumPy's route through eigh gives other signs of the vectors)
        raise no_implementation("linalg.svd", library, "hermitian=True")
    if library == "dask" and (a.ndim != 2 or (full_matrices and a.shape[0] != a.shape[1])):
        raise no_implementation("linalg.svd", library, "full_matrices=True"
                                if a.ndim == 2 else "a stack of matrices")
    try:
        u, s, vh = xp.linalg.svd(a, full_matrices=bool(full_matrices and library != "dask"))
    except (ValueError, NotImplementedError) as e:  # (Dask: tall-and-skinny, row chunks)
        raise no_implementation("linalg.svd", library, str(e)) from e
    note_call_site(s)
    return u, s, vh
