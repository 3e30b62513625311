"""``yaad.sparse.linalg``: Krylov eigensolvers, time evolution and linear solvers with gradients.

Every solver takes a SciPy sparse matrix, a SciPy ``LinearOperator``, a
:class:`~yaad.sparse.SparseTensor` (``sum(theta[k] * H[k])``, differentiable nonzeros) or
a :class:`LinearOperator` built from a Python function ``v -> A v`` written with yaad
functions, and differentiates its result with respect to every tensor the operator
depends on (the coefficients, the nonzeros, the tensors the function uses), and the
right-hand side or initial vector. The forward computations are SciPy's (ARPACK,
CG/MINRES/GMRES, SuperLU) or, for ``expm_multiply``, Taylor steps as in Al-Mohy and
Higham's algorithm; the gradients are adjoint methods that only apply the operator to
vectors (never a dense matrix):

- ``eigsh``: eigenvalues by Hellmann–Feynman, eigenvectors by a MINRES solve projected
  out of the computed eigenvectors (the other computed ones enter as in ``linalg.eigh``);
- ``eigs``: a bordered solve per eigenpair (no left eigenvectors needed; a sparse LU for a
  sparse matrix, GMRES for a matrix-free operator);
- ``expm_multiply``: the Taylor steps run backwards (the discrete adjoint, exact);
- ``cg``, ``minres``, ``gmres``, ``spsolve``: one solve with ``A^H``.

The parameter gradients are vector-Jacobian products of ``theta -> A(theta) V`` at the
vectors the adjoint method gives, by running the operator once more on them. Degenerate
eigenvalues behave as in ``yaad.linalg.eigh``: the gradient is exact where the loss does
not depend on the basis of the degenerate subspace or on eigenvector phases, and
:class:`yaad.linalg.GaugeError` is raised where it does. Solvers that stop above their
tolerance raise :class:`ConvergenceError`. Second derivatives and forward mode go through
every solver: ``eigsh`` (its rules are yaad operations: the projected solves are
differentiable MINRES solves), ``eigs`` (each eigenpair an implicit function, as
``yaad.func.root``'s), ``expm_multiply`` and the linear solvers.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import scipy.sparse as sps
import scipy.sparse.linalg as spla

from ..core.arguments import no_derivative
from ..core.grad_mode import enable_grad, no_grad, state
from ..core.tensor import Tensor, make_tensor
from ..implicit import (
    ConvergenceError,
    _any_tensor_in,
    _Implicit,
    data_of,
    differentiable,
    forward_mode_on,
    local,
    not_converged,
    pack,
    record,
    tangent_map,
    unpack,
    vjp_of,
)
from ..linalg.spectral import (
    DEGENERATE_ERROR,
    PHASE_ERROR,
    GaugeError,
    degeneracy_tol,
    degenerate_pairs,
    eigh_coupling_check,
    inverse_gaps,
    magnitude,
    negligible,
    require_negligible,
    require_symmetric,
)
from ..ops.elementwise import conj, imag, real
from ..ops.reductions import sum as reduce_sum
from ..ops.shape import stack
from .array_operator import ArrayOperator
from .tensor import WRAPPED, SparseTensor, _FunctionPart, asarray, is_operator

__all__ = ["LinearOperator", "aslinearoperator", "eigsh", "eigs", "expm_multiply", "cg",
           "minres", "gmres", "spsolve", "ConvergenceError", "GaugeError"]


def __dir__() -> list[str]:  # what dir() and completion list: the public names only
    return list(__all__)


def LinearOperator(shape: tuple[int, ...], matvec: Callable[..., Any],  # noqa: N802
                   rmatvec: Callable[..., Any] | None = None,
                   dtype: Any = None) -> SparseTensor:
    """A matrix-free operator ``v -> matvec(v)`` written with yaad functions.

    Parameters
    ----------
    shape : tuple
        ``(n_rows, n_cols)``.
    matvec : callable
        ``v -> A v`` for a vector ``v`` of length ``n_cols``. Tensors it uses that require
        grad (``theta`` in ``lambda v: theta * (H0 @ v)``) get gradients through every
        solver and product.
    rmatvec : callable, optional
        ``v -> A^H v``; without it the adjoint (needed by ``eigs``, ``gmres``,
        ``expm_multiply``'s gradient) is the vector-Jacobian product of ``matvec``.
    dtype : dtype, optional
        The dtype of ``A v`` for a real ``v``; found by one call of ``matvec`` if omitted.

    Returns
    -------
    SparseTensor
        Usable with ``@`` and every solver of ``yaad.sparse.linalg``, and in sums.
    """
    shape = (int(shape[0]), int(shape[1]))
    if dtype is None:
        with no_grad():
            dtype = data_of(matvec(np.zeros(shape[1]))).dtype
    return SparseTensor([(None, _FunctionPart(shape, matvec, rmatvec, dtype))])


def aslinearoperator(a: Any) -> SparseTensor:
    """Any operator the solvers take (SciPy sparse or ``LinearOperator``, SparseTensor,
    dense 2-D array) as a :class:`~yaad.sparse.SparseTensor`.

    Parameters
    ----------
    a : operator

    Returns
    -------
    SparseTensor
    """
    if isinstance(a, Tensor) and not isinstance(a, SparseTensor):
        if is_operator(a.data):
            raise TypeError(WRAPPED)
        return LinearOperator(a.shape, lambda v: a @ v, dtype=a.dtype)
    return asarray(a)


def _operator(a: Any, name: str) -> ArrayOperator:
    """The operator ``a`` (any that the solvers take) as the solver ``name`` uses it."""
    if callable(a) and not isinstance(a, Tensor) and not is_operator(a):
        raise TypeError(f"{name}: a Python function needs its shape: pass "
                        f"yaad.sparse.linalg.LinearOperator((n, n), f)")
    op = ArrayOperator(aslinearoperator(a), name)
    op.given_tensor = isinstance(a, Tensor)
    return op


def _result_tensors(op: ArrayOperator, *others: Any) -> bool:
    """Whether a solver's results are tensors: when the operator was given as a yaad
    tensor (a SparseTensor, a LinearOperator of a function, a dense tensor, whether or
    not it requires grad) or depends on one that requires grad, or another argument is a
    tensor; arrays only when everything that went in was SciPy's or NumPy's."""
    return (op.given_tensor or bool(op.inputs)
            or any(isinstance(o, Tensor) for o in others))


def hermitian_minres(apply: Callable[..., Any], b: np.ndarray, shift: float, rtol: float,
                     maxiter: int | None, x0: Any = None, M: Any = None) -> tuple[Any, ...]:
    """MINRES for ``(A - shift) x = b``, ``A`` Hermitian (``apply``: x -> A x). SciPy's
    MINRES is for real symmetric matrices; a complex system is solved as the real
    symmetric one of its real and imaginary parts."""
    if b.dtype.kind != "c":
        n = b.size
        a = spla.LinearOperator((n, n), matvec=apply, dtype=b.dtype)
        result: tuple[Any, ...] = spla.minres(a, b, x0, shift=shift, rtol=rtol,
                                              maxiter=maxiter, M=M)
        return result
    like = [b]
    n = 2 * b.size

    def real_form(f: Callable[..., Any]) -> spla.LinearOperator:
        return spla.LinearOperator((n, n), dtype=b.real.dtype,
                                   matvec=lambda v: pack([f(unpack(v, like)[0])], like))

    m = None if M is None else real_form(spla.aslinearoperator(M).matvec)
    x, info = spla.minres(real_form(apply), pack([b], like),
                          None if x0 is None else pack([x0], like), shift=shift, rtol=rtol,
                          maxiter=maxiter, M=m)
    return unpack(x, like)[0], info


# ---- eigsh --------------------------------------------------------------------------------


class _Eig:
    """Eigenpairs ``(w, v)`` of an operator and the settings of their adjoint solves."""

    def __init__(self, op: ArrayOperator, w: np.ndarray, v: np.ndarray, tol: float,
                 maxiter: int | None, which: str = "LM", sigma: Any = None) -> None:
        self.name = op.name
        self.op = op
        self.xs = [w, v]
        self.tol = tol
        self.maxiter = maxiter
        self.which = which
        self.sigma = sigma
        self.norm: float | None = None
        self.edges_checked = False

    def degeneracy_tol(self, w: np.ndarray) -> Any:
        """Eigenvalues closer than this are one level: as in ``linalg.eigh``, relative to the
        operator's norm (not to the computed eigenvalues, which may all be near 0)."""
        if self.norm is None:
            self.norm = operator_norm(self.op)
        return degeneracy_tol(np.append(w, self.norm), max(w.size, 10))

    def check_symmetric(self, w: np.ndarray, gw: np.ndarray) -> None:
        """GaugeError unless the loss is a symmetric function of each degenerate level."""
        require_symmetric(gw, w, self.degeneracy_tol(w), magnitude(gw), self.name,
                          "eigenvalues", "eigenvalue")

    def edges(self, w: np.ndarray) -> list[Any]:
        """The eigenvalues where the ``which`` ordering cuts the spectrum: the last computed
        one's (both ends' for ``"BE"``), and for a Hermitian ``"LM"``/``"SM"`` its mirror
        image, which ties with it in ``|t|`` (``t = w``, or ``1 / (w - sigma)`` in
        shift-invert mode, as ARPACK orders them)."""
        with np.errstate(divide="ignore"):
            t = w if self.sigma is None else 1 / (w - self.sigma)
        hermitian = isinstance(self, _Eigsh)
        if self.which == "BE":
            ts = np.sort(t.real)
            low = w.size // 2
            cut = [ts[low - 1], ts[low]] if low else [ts[low]]
        else:
            key = {"LM": np.abs(t), "SM": -np.abs(t), "LA": t.real, "LR": t.real,
                   "SA": -t.real, "SR": -t.real, "LI": t.imag, "SI": -t.imag}[self.which]
            e = t[np.argmin(key)]
            cut = [e, -e] if hermitian and self.which in ("LM", "SM") and e != 0 else [e]
        if self.sigma is not None:
            cut = [self.sigma + 1 / c for c in cut if c != 0 and np.isfinite(c)]
        return cut

    def check_edges(self, w: np.ndarray, v: np.ndarray, gw: Any, gv: Any) -> None:
        """GaugeError if ``k`` cuts through a degenerate level and the loss depends on its
        computed part: the states of the level that were not computed decide how it
        splits, so neither its eigenvalues (not even their sum) nor its vectors have a
        derivative. One solve of ``P (A - w_e) P x = r`` in the complement of the computed
        eigenvectors (``r`` random there) per edge ``w_e``: a state of the level outside
        them makes it singular (no convergence, or ``|x|`` beyond ``|r| / tol``)."""
        if self.edges_checked:
            return
        tol = float(np.ravel(self.degeneracy_tol(w))[0])
        cuts = self.edges(w)
        near = np.zeros(w.size, bool)
        for c in cuts:
            near |= np.abs(w - c) <= tol
        touched = (gw is not None and np.any(np.asarray(data_of(gw))[near])) or (
            gv is not None and np.any(np.asarray(data_of(gv))[:, near]))
        if not touched:
            return
        for c in cuts:
            self._complement_check(v, c, tol)
        self.edges_checked = True

    def _complement_check(self, v: np.ndarray, c: Any, tol: float) -> None:
        n = v.shape[0]
        q = v
        if not isinstance(self, _Eigsh):
            # ARPACK's vectors of a degenerate level of a general operator can be linearly
            # dependent: the span they reach, not a QR of them (whose extra columns would
            # hide the states not computed)
            u, sv, _ = np.linalg.svd(v, full_matrices=False)
            q = u[:, sv > 1e-8 * sv[0]]
        qh = q.conj().T
        dt = np.result_type(v.dtype, self.op.dtype, np.asarray(c).dtype)
        rng = np.random.default_rng(0)
        r = np.asarray(rng.standard_normal(n), dtype=dt)
        if dt.kind == "c":
            r = r + 1j * rng.standard_normal(n)

        def project(x: np.ndarray) -> np.ndarray:
            out: np.ndarray = x - q @ (qh @ x)
            return out

        def apply(x: np.ndarray) -> np.ndarray:
            return project(self.op.mv(project(x)))

        r = project(r)
        nr = float(np.linalg.norm(r))
        maxiter = self.maxiter or 20 * n
        x: Any = None
        reached = np.inf
        # SciPy's MINRES stops at |r_j| <= rtol (|A| |x| + |b|): where |x| is large (a gap
        # that is small but not degenerate) restart from x; at a degenerate level restarts do
        # not help (the system has no solution) and the residual stays near |r| / sqrt(n)
        for _ in range(3):
            if isinstance(self, _Eigsh):
                x, _ = hermitian_minres(apply, r, float(np.real(c)), 1e-10, maxiter, x0=x)
            else:
                a = spla.LinearOperator((n, n), matvec=lambda x: apply(x) - c * x, dtype=dt)
                x, _ = spla.gmres(a, r, x0=x, rtol=1e-10, atol=0.0, restart=min(n, 50),
                                  maxiter=maxiter)
            last, reached = reached, np.linalg.norm(apply(x) - c * x - r) / nr
            if reached <= 1e-6 or reached > 0.5 * last:
                break
        if not (reached <= 1e-6 and np.linalg.norm(x) * tol * np.sqrt(n) <= nr):
            raise GaugeError(
                f"{self.name}: k cuts through a degenerate level; ask for k that includes the "
                f"whole level. The loss depends on the computed eigenpairs at {c:.6g}, and "
                f"A has more eigenvectors there (a solve with A - {c:.6g} outside the computed "
                f"eigenvectors is singular: relative residual {reached:.3g}); which of them "
                f"are computed is decided by rounding, and a perturbation that splits the "
                f"level moves the computed ones apart (no derivative, not even of their sum). "
                f"If the level is not degenerate but split by little, raise adjoint_maxiter.")


class _Eigsh(_Eig):

    def backward(self, inputs: tuple[Any, ...], xs: tuple[Any, ...],
                 grads: tuple[Any, ...]) -> tuple[Any, ...]:
        if state.enabled or forward_mode_on():
            return self._recorded(inputs, xs, grads)
        w, v = self.xs
        gw, gv = grads
        gw = np.asarray(data_of(gw))
        self.check_edges(w, v, gw, gv)
        if gv is None or not np.any(gv):
            self.check_symmetric(w, gw)
        ybar = v * gw.astype(v.dtype)  # Hellmann-Feynman: dw_i = v_i^H dA v_i
        if gv is not None and np.any(gv):
            gv = np.asarray(data_of(gv))
            ybar = ybar + self._vector_part(w, v, gw, gv)
        return tuple(self.op.vjp(v, ybar, inputs))

    def _recorded(self, inputs: tuple[Any, ...], xs: tuple[Any, ...],
                  grads: tuple[Any, ...]) -> tuple[Any, ...]:
        """The gradient as yaad operations (``create_graph=True``, or forward mode over the
        backward pass: ``hvp``): Hellmann-Feynman, ``Re <v gw, A(theta) v>`` differentiated
        for ``theta`` with the eigenvectors ``v`` the node's outputs, so that a second pass
        reaches them; a loss of the eigenvectors adds the rotation inside the computed
        ones and the projected solves of :meth:`_complement_solve`, differentiable."""
        w, v = xs
        gw, gv = grads
        gwa = np.zeros(self.xs[0].shape) if gw is None else np.asarray(data_of(gw))
        gva = None if gv is None else np.asarray(data_of(gv))
        vector = gva is not None and bool(np.any(gva))
        if not (vector or np.any(gwa)):
            return tuple(np.zeros(np.shape(a), data_of(a).dtype) for a in inputs)
        self.check_edges(self.xs[0], self.xs[1], gwa, gva)
        if gva is None or not vector:
            self.check_symmetric(self.xs[0], gwa)
            return tuple(self.op.vjp_recorded(v, v * gw, inputs))
        self._vector_checks(self.xs[0], self.xs[1], gwa, gva)
        with enable_grad():
            vh = conj(v).T
            j = vh @ gv
            skew = (j - conj(j).T) * 0.5
            f = inverse_gaps(w[None, :] - w[:, None], self.degeneracy_tol(self.xs[0]), None)
            ybar = v @ (f * skew) - self._complement_solve(inputs, w, v, gv - v @ j)
            if gw is not None:
                ybar = ybar + v * gw
            return tuple(self.op.vjp_recorded(v, ybar, inputs))

    def jvp(self, inputs: tuple[Any, ...], xs: tuple[Any, ...], ts: tuple[Any, ...]) -> Any:
        """The tangents ``(dw, dv)``: ``dw_i = Re v_i^H dA v_i``, ``dv = V (F * V^H dA V)``
        inside the computed eigenvectors (``F_ji = 1 / (w_i - w_j)``, ``v_i^H dv_i = 0``)
        and ``-x_i`` outside, ``P (A - w_i) P x_i = P dA v_i`` (:meth:`_complement_solve`).
        Written in yaad operations, so that it composes with reverse mode."""
        w, v = xs
        wa, va = self.xs
        op = self.op
        dav = tangent_map(lambda d: [op.closure.call(lambda: op.s @ v, d)], list(inputs),
                          list(ts))[0]
        m = conj(v).T @ dav
        ma = np.asarray(data_of(m))
        tol = self.degeneracy_tol(wa)
        self.check_edges(wa, va, np.ones(wa.shape), None)
        require_negligible(ma, degenerate_pairs(wa, tol, nonzero=False), magnitude(ma),
                           DEGENERATE_ERROR.format(name=self.name, what="eigenvalues") +
                           " (forward mode: the tangent couples the vectors of a degenerate "
                           "level, so the eigenvalues' tangents depend on the basis too)")
        dw = real((conj(v) * dav).sum(axis=0))
        f = inverse_gaps(w[None, :] - w[:, None], tol, None)
        dv = v @ (f * m) - self._complement_solve(inputs, w, v, dav - v @ m)
        return dw, dv

    def _complement_solve(self, inputs: tuple[Any, ...], w: Any, v: Any, rhs: Any) -> Any:
        """The columns ``x_i`` of ``P (A - w_i) P x_i = rhs_i`` (``rhs`` and ``x`` in the
        complement ``P`` of the computed eigenvectors ``v``) as yaad operations: MINRES
        (``sparse.linalg.minres``, differentiable to any order and in forward mode) with
        ``B_i = P (A - w_i) P + c V V^H``, which has the same solution and no null space
        (the computed directions get the eigenvalue ``c``, the operator's norm), so that the
        adjoint and tangent solves of its derivatives are well posed too."""
        op = self.op
        n, k = self.xs[1].shape
        c = float(self.norm or operator_norm(op))
        dt = np.result_type(self.xs[1].dtype, op.dtype)
        cols = []
        for i in range(k):
            ri = rhs[:, i]
            if not np.any(data_of(ri)):
                cols.append(ri * 0)
                continue

            def matvec(x: Any, wi: Any = w[i]) -> Any:
                px = x - v @ (conj(v).T @ x)
                ax = op.closure.call(lambda: op.s @ px, list(inputs))
                return ax - v @ (conj(v).T @ ax) - wi * px + c * (x - px)

            b = LinearOperator((n, n), matvec, dtype=dt)
            x, _ = minres(b, ri, rtol=self.tol, maxiter=self.maxiter or 20 * n)
            cols.append(x)
        return stack(cols, axis=1)

    def _vector_checks(self, w: np.ndarray, v: np.ndarray, gw: np.ndarray,
                       gv: np.ndarray) -> tuple[Any, ...]:
        """GaugeError where a loss of the eigenvectors has no derivative (phases, bases of
        degenerate levels); returns ``V^H gV``, its skew part, the inverse gaps and the
        scale."""
        vh = v.conj().T
        j = vh @ gv
        scale = magnitude(gw, gv)
        if j.dtype.kind == "c":
            require_negligible(j.diagonal().imag, True, scale,
                               PHASE_ERROR.format(name=self.name, what="eigenvectors"))
        skew = (j - j.conj().T) * 0.5
        tol = self.degeneracy_tol(w)
        f = inverse_gaps(w[None, :] - w[:, None], tol, None, skew, scale,
                         DEGENERATE_ERROR.format(name=self.name, what="eigenvalues"))
        flat = degenerate_pairs(w, tol, nonzero=False)
        try:
            eigh_coupling_check(flat, flat & ~negligible((j + j.conj().T) * 0.5, scale), gw,
                                 scale)
        except GaugeError as e:
            raise GaugeError(e.args[0].replace("linalg.eigh", self.name)) from None
        self.check_symmetric(w, gw)
        return j, skew, f, scale

    def _vector_part(self, w: Any, v: Any, gw: Any, gv: Any) -> np.ndarray:
        vh = v.conj().T
        j, skew, f, scale = self._vector_checks(w, v, gw, gv)
        k = w.size
        ybar = v @ (f * skew)
        # The part of gV outside the computed eigenvectors: (A - w_i) xi = P gv_i in the
        # complement, by MINRES; it enters with a minus sign.
        rest = gv - v @ j
        n = v.shape[0]
        dt = np.result_type(v.dtype, self.op.dtype)

        def project(x: np.ndarray) -> np.ndarray:
            result: np.ndarray = x - v @ (vh @ x)
            return result

        for i in range(k):
            r = rest[:, i]
            nr = np.linalg.norm(r)
            if nr <= 1e-14 * max(scale, 1e-300) * np.sqrt(n):
                continue
            xi, _ = hermitian_minres(lambda x: project(self.op.mv(project(x))), r.astype(dt),
                                     w[i], self.tol, self.maxiter or 20 * n)
            reached = np.linalg.norm(project(self.op.mv(xi)) - w[i] * xi - r) / nr
            if not reached <= 100 * self.tol:
                raise GaugeError(
                    f"{self.name}: the gradient of eigenvector {i} needs a solve with "
                    f"A - w_{i} outside the computed eigenvectors, and MINRES stopped at a "
                    f"relative residual {reached:.3g} (tolerance {self.tol:.3g}). Either "
                    f"k cuts through a degenerate eigenvalue (the eigenvectors are not "
                    f"determined: compute the whole degenerate level with a larger k, or "
                    f"make the loss depend on eigenvalues only), or the solve needs a "
                    f"larger adjoint_maxiter / looser adjoint_tol.")
            ybar[:, i] -= xi
        result: np.ndarray = ybar
        return result


@no_derivative("v0", "sigma", why="a starting vector and a shift: the eigenpairs depend on neither")
def eigsh(A: Any, k: int = 6, M: Any = None, sigma: float | None = None, which: str = "LM",
          v0: Any = None, ncv: int | None = None, maxiter: int | None = None, tol: float = 0,
          return_eigenvectors: bool = True, *, adjoint_tol: float = 1e-12,
          adjoint_maxiter: int | None = None) -> Any:
    """k eigenvalues and eigenvectors of a Hermitian operator (``scipy.sparse.linalg.eigsh``),
    differentiable.

    Parameters
    ----------
    A : operator
        A Hermitian SciPy sparse matrix or ``LinearOperator``, a
        :class:`~yaad.sparse.SparseTensor` or a :class:`LinearOperator` of a function.
        A non-Hermitian operator raises ``ValueError`` (use :func:`eigs`).
    k : int, optional
        As in SciPy (``which``: ``"LM"``, ``"SM"``, ``"LA"``, ``"SA"``, ``"BE"``);
        ``sigma`` selects shift-invert mode (a sparse LU for sparse matrices, MINRES for
        matrix-free operators).
    sigma : float or None, optional
        As in SciPy (``which``: ``"LM"``, ``"SM"``, ``"LA"``, ``"SA"``, ``"BE"``);
        ``sigma`` selects shift-invert mode (a sparse LU for sparse matrices, MINRES for
        matrix-free operators).
    which : str, optional
        As in SciPy (``which``: ``"LM"``, ``"SM"``, ``"LA"``, ``"SA"``, ``"BE"``);
        ``sigma`` selects shift-invert mode (a sparse LU for sparse matrices, MINRES for
        matrix-free operators).
    v0 : optional
        As in SciPy (``which``: ``"LM"``, ``"SM"``, ``"LA"``, ``"SA"``, ``"BE"``);
        ``sigma`` selects shift-invert mode (a sparse LU for sparse matrices, MINRES for
        matrix-free operators).
    ncv : int or None, optional
        As in SciPy (``which``: ``"LM"``, ``"SM"``, ``"LA"``, ``"SA"``, ``"BE"``);
        ``sigma`` selects shift-invert mode (a sparse LU for sparse matrices, MINRES for
        matrix-free operators).
    maxiter : int or None, optional
        As in SciPy (``which``: ``"LM"``, ``"SM"``, ``"LA"``, ``"SA"``, ``"BE"``);
        ``sigma`` selects shift-invert mode (a sparse LU for sparse matrices, MINRES for
        matrix-free operators).
    tol : float, optional
        As in SciPy (``which``: ``"LM"``, ``"SM"``, ``"LA"``, ``"SA"``, ``"BE"``);
        ``sigma`` selects shift-invert mode (a sparse LU for sparse matrices, MINRES for
        matrix-free operators).
    return_eigenvectors : bool, optional
        As in SciPy (``which``: ``"LM"``, ``"SM"``, ``"LA"``, ``"SA"``, ``"BE"``);
        ``sigma`` selects shift-invert mode (a sparse LU for sparse matrices, MINRES for
        matrix-free operators).
    M : None
        Generalized problems are not supported.
    adjoint_tol : optional
        Tolerance and iterations of the MINRES solves of eigenvector gradients.
    adjoint_maxiter : optional
        Tolerance and iterations of the MINRES solves of eigenvector gradients.

    Returns
    -------
    w : Tensor
        The eigenvalues, ascending, shape ``(k,)``.
    v : Tensor
        The eigenvectors as columns, shape ``(n, k)`` (if ``return_eigenvectors``).

    Raises
    ------
    ConvergenceError
        If ARPACK does not converge (the message gives how many eigenpairs did).
    yaad.linalg.GaugeError
        In backward, for a loss that depends on an eigenvector's phase or on the basis
        of a degenerate eigenspace.
    """
    op = _operator(A, "sparse.linalg.eigsh")
    op.check_hermitian()
    _, v = _arpack(op, M, k, sigma, which, v0, ncv, maxiter, tol, hermitian=True)
    w, v = _rayleigh_ritz(op, v)
    return _eig_outputs(_Eigsh(op, w, v, adjoint_tol, adjoint_maxiter, which, sigma),
                        return_eigenvectors)


def _eig_outputs(problem: _Eig, return_eigenvectors: bool) -> Any:
    out = record(problem, problem.op.inputs, _result_tensors(problem.op))
    return tuple(out) if return_eigenvectors else out[0]


def operator_norm(op: ArrayOperator, steps: int = 12) -> float:
    """A lower bound of the operator's 2-norm, for tolerances: the largest ``|A x| / |x|``
    in ``steps`` power iterations from a fixed random vector (for a Hermitian operator,
    its norm to a few digits; products with ``A`` only, no adjoint)."""
    x = np.random.default_rng(0).standard_normal(op.shape[1]).astype(op.dtype)
    norm = 0.0
    for _ in range(steps):
        x = x / max(float(np.linalg.norm(x)), 1e-300)
        x = op.mv(x)
        norm = max(norm, float(np.linalg.norm(x)))
    return norm


def _rayleigh_ritz(op: ArrayOperator, v: np.ndarray) -> tuple[Any, ...]:
    """Orthonormal Ritz pairs of ``A`` in the span of ``v``, ascending. ARPACK has no
    complex Hermitian driver (SciPy runs its general one), whose eigenvectors of a
    degenerate eigenvalue are not orthogonal: one QR and a k x k eigh fix that."""
    q, _ = np.linalg.qr(v)
    small = q.conj().T @ op.mv(q)
    w, u = np.linalg.eigh((small + small.conj().T) / 2)
    return w, q @ u


def _arpack(op: ArrayOperator, M: Any, k: int, sigma: Any, which: str, v0: Any, ncv: Any,
            maxiter: Any, tol: float, hermitian: bool) -> tuple[Any, ...]:
    """Run ARPACK on the operator (shift-invert with a sparse LU or an iterative solve)."""
    if M is not None:
        raise NotImplementedError(f"{op.name}: generalized problems (M=) are not supported")
    v0 = None if v0 is None else np.asarray(data_of(v0))
    solver = spla.eigsh if hermitian else spla.eigs
    kw = dict(k=k, which=which, v0=v0, ncv=ncv, maxiter=maxiter, tol=tol,
              return_eigenvectors=True)
    a = op.sparse()
    if sigma is not None:
        kw["sigma"] = sigma
        if a is None:
            kw["OPinv"] = _shift_inverse(op, sigma, hermitian)
            a = op.scipy()
    else:
        a = op.scipy()
    try:
        result: tuple[Any, ...] = solver(A=a, **kw)
        return result
    except spla.ArpackNoConvergence as e:
        raise not_converged(
            f"{op.name} (ARPACK)", _worst_residual(op, e.eigenvalues, e.eigenvectors),
            tol or np.finfo(float).eps, maxiter or 10 * op.shape[0],
            f"Only {len(e.eigenvalues)} of the {k} eigenpairs converged. Raise maxiter or "
            f"ncv, or use sigma= (shift-invert) for interior or clustered eigenvalues."
        ) from None


def _worst_residual(op: ArrayOperator, w: np.ndarray, v: np.ndarray) -> float:
    if not len(w):
        return float("inf")
    r = op.mv(v) - v * w
    return float(np.max(np.linalg.norm(r, axis=0)) / max(np.max(np.abs(w)), 1e-300))


def _shift_inverse(op: ArrayOperator, sigma: Any, hermitian: bool) -> spla.LinearOperator:
    """``x -> (A - sigma)^-1 x`` by MINRES (Hermitian) or GMRES, for matrix-free A."""
    n = op.shape[0]
    dt = np.result_type(op.dtype, np.asarray(sigma).dtype)

    def solve(b: np.ndarray) -> np.ndarray:
        b = np.ravel(b)
        b = b.astype(dt, copy=False)
        shifted = spla.LinearOperator((n, n), matvec=lambda x: op.mv(x) - sigma * x, dtype=dt)
        x, info = (hermitian_minres(op.mv, b, sigma, 1e-12, None) if hermitian
                   else spla.gmres(shifted, b, rtol=1e-12, atol=0.0))
        if info:
            raise not_converged(f"{op.name} (shift-invert solve)",
                                np.linalg.norm(shifted @ x - b) / np.linalg.norm(b), 1e-12,
                                info, "Choose sigma away from an eigenvalue, or give a "
                                "sparse matrix (exact LU).")
        result: np.ndarray = x
        return result

    return spla.LinearOperator((n, n), matvec=solve, dtype=dt)


# ---- eigs ---------------------------------------------------------------------------------


class _Eigs(_Eig):
    """Eigenpairs of a general operator. Each pair ``(w_i, v_i)`` (``|v_i| = 1``, its phase
    fixed against the computed vector) is the root of ``A v - w v = 0``,
    ``(v^H v - 1) / 2 + i Im(v_ref^H v) = 0``, whose Jacobian at the root is the bordered
    matrix ``[[A - w_i, -v_i], [v_i^H, 0]]``: the first-order rules solve it (tangents) or
    its adjoint (gradients), and the recorded ones (second derivatives, tangents that are
    differentiated further) are those of this implicit function
    (:class:`yaad.implicit._Implicit`), with the same solves."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.lus: dict[int, Any] = {}  # the sparse LUs of the pairs' bordered matrices

    def level(self) -> np.ndarray:
        """``(k, k)``: pairs of computed eigenvalues in one degenerate level."""
        w = self.xs[0]
        mask: np.ndarray = degenerate_pairs(w, self.degeneracy_tol(w)[..., 0], nonzero=False)
        return mask

    def bordered(self, i: int, rhs_v: np.ndarray, rhs_mu: np.ndarray,
                 adjoint: bool) -> tuple[np.ndarray, np.ndarray]:
        """Solve ``K [x; mu] = [rhs_v; rhs_mu]``, ``K = [[A - w_i, -V_b], [V_b^H, 0]]`` (or
        with ``K^H = [[A^H - conj(w_i), V_b], [-V_b^H, 0]]`` if ``adjoint``). ``V_b`` holds
        the computed vectors of ``w_i``'s level, ``v_i`` first: a degenerate level is
        bordered by all of them (one leaves the system singular), and ``mu`` then holds the
        coefficients along each (for tangents: the level's block of ``V_b^-1 dA V_b``).
        A sparse matrix ``A``: a sparse LU of ``K`` (kept for the pair's further solves;
        restarted GMRES stalls on the bordered systems of interior eigenvalues of
        non-normal operators, e.g. a Liouvillian's); a matrix-free one: GMRES."""
        w, v = self.xs
        n = v.shape[0]
        members = [i, *np.flatnonzero(self.level()[i])]
        vb, li = v[:, members], w[i]
        vbh = vb.conj().T

        def apply(x: np.ndarray) -> np.ndarray:
            z, mu = x[:n], x[n:]
            if adjoint:
                return np.concatenate([self.op.rmv(z) - np.conj(li) * z + vb @ mu, -(vbh @ z)])
            return np.concatenate([self.op.mv(z) - li * z - vb @ mu, vbh @ z])

        rhs = np.concatenate([rhs_v, rhs_mu]).astype(v.dtype)
        m = rhs.size
        lu = self._bordered_lu(i, vb, li)
        if lu is not None:
            trans = "H" if adjoint else "N"
            x = lu.solve(rhs, trans)
            x = x + lu.solve(rhs - apply(x), trans)  # one step of refinement
        else:
            a = spla.LinearOperator((m, m), matvec=apply, dtype=v.dtype)
            x, _ = spla.gmres(a, rhs, rtol=self.tol, atol=0.0, restart=min(m, 50),
                              maxiter=self.maxiter)
        reached = np.linalg.norm(apply(x) - rhs) / np.linalg.norm(rhs)
        if not reached <= 100 * self.tol:
            raise GaugeError(
                f"{self.name}: the {'adjoint' if adjoint else 'tangent'} solve for eigenpair "
                f"{i} stopped at a relative residual {reached:.3g} (tolerance "
                f"{self.tol:.3g}): the eigenvalue {li:.6g} is (nearly) degenerate, where "
                f"eigenvectors and their derivatives are not determined, or the solve needs "
                f"a larger adjoint_maxiter / looser adjoint_tol.")
        return x[:n], x[n:]

    def _bordered_lu(self, i: int, vb: np.ndarray, li: Any) -> Any:
        """The sparse LU of pair ``i``'s bordered matrix, or None (a matrix-free operator, or
        a singular matrix: the residual check then reports it)."""
        lus = self.lus
        if i not in lus:
            a = self.op.sparse()
            lus[i] = None
            if a is not None:
                n, m = vb.shape
                k = sps.block_array([[sps.csc_array(a) - li * sps.eye_array(n),
                                      sps.csc_array(-vb)],
                                     [sps.csc_array(vb.conj().T), None]], format="csc")
                try:
                    lus[i] = spla.splu(k.astype(vb.dtype))
                except RuntimeError:  # exactly singular
                    pass
        return lus[i]

    def backward(self, inputs: tuple[Any, ...], xs: tuple[Any, ...],
                 grads: tuple[Any, ...]) -> tuple[Any, ...]:
        w, v = self.xs
        gw, gv = grads
        gwa = np.zeros_like(w) if gw is None else np.asarray(data_of(gw), dtype=w.dtype)
        gva = np.zeros_like(v) if gv is None else np.asarray(data_of(gv), dtype=v.dtype)
        self.check_edges(w, v, gwa, gva)
        require_symmetric(gwa, w, self.degeneracy_tol(w), magnitude(gwa), self.name,
                          "eigenvalues", "eigenvalue")
        require_negligible((v.conj() * gva).sum(axis=0).imag, True, magnitude(gwa, gva),
                           PHASE_ERROR.format(name=self.name, what="eigenvectors"))
        level = self.level()
        for i in range(w.size):
            if level[i].any() and np.any(gva[:, [i, *np.flatnonzero(level[i])]]):
                raise GaugeError(DEGENERATE_ERROR.format(name=self.name, what="eigenvalues"))
        if state.enabled or _any_tensor_in(inputs, xs, grads):
            # The pairs the gradient reaches: those with a cotangent, or all of them where
            # the cotangents are themselves differentiated (a pair whose cotangent is 0
            # here may have a derivative: the Hessian of (w_j - c)^2 at its minimum)
            if differentiable(gw) or differentiable(gv):
                pairs = np.arange(w.size)
            else:
                pairs = np.flatnonzero(np.any(gva != 0, axis=0) | (gwa != 0))
            gs = tuple(np.zeros_like(a) if g is None else g for g, a in zip(grads, self.xs))
            with enable_grad():  # (the selected pairs stay linked to the node's outputs)
                xs, gs = _pairs(xs, pairs), _pairs(gs, pairs)
            return self.implicit(pairs).backward(inputs, xs, gs)
        ybar = np.zeros_like(v)
        for i in range(w.size):
            if gwa[i] or np.any(gva[:, i]):
                members = 1 + int(level[i].sum())
                z, _ = self.bordered(i, gva[:, i], np.r_[gwa[i], np.zeros(members - 1)], True)
                ybar[:, i] = -z
        return tuple(self.op.vjp(v, ybar, inputs))

    def jvp(self, inputs: tuple[Any, ...], xs: tuple[Any, ...], ts: tuple[Any, ...]) -> Any:
        """The tangents ``(dw, dv)``: per pair, ``[[A - w_i, -V_b], [V_b^H, 0]] [dv_i; mu] =
        [-dA v_i; 0]`` and ``dw_i = mu_0``; ``GaugeError`` where ``dA`` couples the vectors of
        a degenerate level (``mu``'s other entries), whose eigenvalues' tangents then
        depend on the basis."""
        if _any_tensor_in(inputs, xs, ts):  # differentiated further: every pair
            return self.implicit(np.arange(self.xs[0].size)).jvp(inputs, xs, ts)
        w, v = self.xs
        op = self.op
        with no_grad():
            dav = np.asarray(data_of(tangent_map(
                lambda d: [op.closure.call(lambda: op.s @ v, d)], list(inputs), list(ts))[0]))
        dw, dv = np.zeros_like(w), np.zeros_like(v)
        scale = magnitude(dav)
        for i in range(w.size):
            if not np.any(dav[:, i]):
                continue
            members = 1 + int(self.level()[i].sum())
            dv[:, i], mu = self.bordered(i, -dav[:, i], np.zeros(members, v.dtype), False)
            require_negligible(mu[1:], True, scale,
                               DEGENERATE_ERROR.format(name=self.name, what="eigenvalues") +
                               " (forward mode: the tangent couples the vectors of a "
                               "degenerate level, so the eigenvalues' tangents depend on the "
                               "basis too)")
            dw[i] = mu[0]
        return dw, dv

    def implicit(self, pairs: np.ndarray) -> _Implicit:
        """The eigenpairs ``pairs`` as an implicit function, for the recorded rules."""
        w, v = _pairs(self.xs, pairs)
        vref = v.conj()
        op = self.op

        def residual(xl: list[Any], full: list[Any]) -> list[Any]:
            wl, vl = xl
            norm = (reduce_sum(conj(vl) * vl, axis=0) - 1) * 0.5
            return [norm + 1j * imag(reduce_sum(vref * vl, axis=0)), op.s @ vl - vl * wl]

        def solve(r: list[Any], adjoint: bool) -> list[Any]:
            rw, rv = (np.asarray(data_of(a)) for a in r)
            top, vecs = np.zeros_like(w), np.zeros_like(v)
            level = self.level()
            for j, i in enumerate(pairs):
                if not (rw[j] or np.any(rv[:, j])):
                    continue
                if level[i].any():
                    raise GaugeError(SECOND_ERROR.format(name=self.name, w=w[j]))
                vecs[:, j], mu = self.bordered(i, rv[:, j], rw[j:j + 1], adjoint)
                top[j] = mu[0]
            return [top, vecs]

        problem = _Implicit(self.name, residual, op.closure, [], [], self.tol, self.maxiter,
                            solvers=(lambda r: solve(r, False), lambda r: solve(r, True)))
        problem.xs = [w, v]
        return problem


def _pairs(wv: Any, pairs: np.ndarray) -> tuple[Any, Any]:
    """The eigenvalues and eigenvectors ``pairs`` of ``(w, v)`` (arrays or tensors)."""
    w, v = wv
    if len(pairs) == w.shape[0]:
        return w, v
    return w[pairs], v[:, pairs]


SECOND_ERROR = (
    "{name}: a second derivative (create_graph=True, hessian, hvp) or a differentiated "
    "tangent (jvp under grad, jvp of jvp) reaches the degenerate eigenvalue {w:.6g}, where "
    "the derivatives of a single eigenpair do not exist (a symmetric function of the level "
    "has exact first derivatives only). Once the loss's gradient is itself differentiated, "
    "every computed eigenpair enters: if the loss does not use that level, compute fewer "
    "eigenpairs (k, sigma) so that it is not among them; otherwise take first derivatives "
    "only, or split the level (a term that breaks the symmetry behind it).")


@no_derivative("v0", "sigma", why="a starting vector and a shift: the eigenpairs depend on neither")
def eigs(A: Any, k: int = 6, M: Any = None, sigma: Any = None, which: str = "LM",
         v0: Any = None, ncv: int | None = None, maxiter: int | None = None, tol: float = 0,
         return_eigenvectors: bool = True, *, adjoint_tol: float = 1e-12,
         adjoint_maxiter: int | None = None) -> Any:
    """k eigenvalues and eigenvectors of a general operator (``scipy.sparse.linalg.eigs``),
    differentiable.

    Parameters
    ----------
    A : operator
        A square SciPy sparse matrix or ``LinearOperator``, a
        :class:`~yaad.sparse.SparseTensor` or a :class:`LinearOperator` of a function.
    k : int, optional
        As in SciPy (``which``: ``"LM"``, ``"SM"``, ``"LR"``, ``"SR"``, ``"LI"``,
        ``"SI"``).
    sigma : optional
        As in SciPy (``which``: ``"LM"``, ``"SM"``, ``"LR"``, ``"SR"``, ``"LI"``,
        ``"SI"``).
    which : str, optional
        As in SciPy (``which``: ``"LM"``, ``"SM"``, ``"LR"``, ``"SR"``, ``"LI"``,
        ``"SI"``).
    v0 : optional
        As in SciPy (``which``: ``"LM"``, ``"SM"``, ``"LR"``, ``"SR"``, ``"LI"``,
        ``"SI"``).
    ncv : int or None, optional
        As in SciPy (``which``: ``"LM"``, ``"SM"``, ``"LR"``, ``"SR"``, ``"LI"``,
        ``"SI"``).
    maxiter : int or None, optional
        As in SciPy (``which``: ``"LM"``, ``"SM"``, ``"LR"``, ``"SR"``, ``"LI"``,
        ``"SI"``).
    tol : float, optional
        As in SciPy (``which``: ``"LM"``, ``"SM"``, ``"LR"``, ``"SR"``, ``"LI"``,
        ``"SI"``).
    return_eigenvectors : bool, optional
        As in SciPy (``which``: ``"LM"``, ``"SM"``, ``"LR"``, ``"SR"``, ``"LI"``,
        ``"SI"``).
    M : None
        Generalized problems are not supported.
    adjoint_tol : optional
        Tolerance and restart cycles of the GMRES solves of the gradient.
    adjoint_maxiter : optional
        Tolerance and restart cycles of the GMRES solves of the gradient.

    Returns
    -------
    w : Tensor
        The eigenvalues (complex), shape ``(k,)``, in ARPACK's order.
    v : Tensor
        Unit eigenvectors as columns, shape ``(n, k)`` (complex; each up to a phase).

    Notes
    -----
    The gradient of eigenpair ``(w_i, v_i)`` solves the bordered system
    ``[[A^H - conj(w_i), v_i], [-v_i^H, 0]] [z; mu] = [gv_i; gw_i]`` (a sparse LU of it for
    a sparse ``A``, GMRES for a matrix-free one) and is the VJP of ``A(theta) v_i`` at
    ``-z``: losses must not depend on the phases of the eigenvectors (``GaugeError``
    otherwise). The tangent (forward mode) solves ``[[A - w_i, -v_i], [v_i^H, 0]]
    [dv_i; dw_i] = [-dA v_i; 0]``; second derivatives differentiate the eigenpair as the
    implicit function ``A v = w v``, ``|v| = 1``, its phase held, with the same solves. At a
    degenerate level, a tangent that couples its vectors and a second derivative that
    reaches it raise ``GaugeError``.
    """
    op = _operator(A, "sparse.linalg.eigs")
    op.square()
    w, v = _arpack(op, M, k, sigma, which, v0, ncv, maxiter, tol, hermitian=False)
    w = w.astype(np.result_type(w.dtype, np.complex64))
    v = v.astype(np.result_type(v.dtype, np.complex64))
    return _eig_outputs(_Eigs(op, w, v, adjoint_tol, adjoint_maxiter, which, sigma),
                        return_eigenvectors)


# ---- expm_multiply --------------------------------------------------------------------------

# theta_m of Al-Mohy and Higham (2011), Table 3.1, for the unit roundoff 2^-53: the largest
# 1-norm of A / s for which m Taylor terms reach that backward error.
_THETA = dict(zip(
    [*range(1, 31), 35, 40, 45, 50, 55],
    [2.29e-16, 2.58e-8, 1.39e-5, 3.40e-4, 2.40e-3, 9.07e-3, 2.38e-2, 5.00e-2, 8.96e-2,
     1.44e-1, 2.14e-1, 3.00e-1, 4.00e-1, 5.14e-1, 6.41e-1, 7.81e-1, 9.31e-1, 1.09, 1.26,
     1.44, 1.62, 1.82, 2.01, 2.22, 2.43, 2.64, 2.86, 3.08, 3.31, 3.54, 4.7, 6.0, 7.2, 8.5,
     9.9]))
_M_MAX = 55
_P_MAX = 8  # the largest p with p (p - 1) <= m_max + 1
_ELL = 2  # columns of the 1-norm estimates


def _inf_norm(x: np.ndarray) -> float:
    return float(np.abs(x).max() if x.ndim == 1 else np.abs(x).sum(axis=1).max()) if x.size \
        else 0.0


def _sign(y: np.ndarray) -> np.ndarray:
    if y.dtype.kind == "c":
        a = np.abs(y)
        return np.where(a > 0, y / np.where(a > 0, a, 1), 1)
    result: np.ndarray = np.where(y >= 0, 1.0, -1.0).astype(y.dtype)
    return result


def _power_norm(mv: Callable[..., Any], rmv: Callable[..., Any], n: int, dtype: Any, p: int,
                iterations: int = 4) -> float:
    """An estimate (a lower bound) of ``|A^p|_1`` from products with ``A`` and ``A^H`` on
    blocks of ``_ELL`` columns, in the manner of Higham and Tisseur's block estimator: the
    column sums of ``A^p X``, then unit vectors where ``(A^H)^p sign(A^p X)`` is largest.
    The starting block is fixed (ones and fixed signs), so the estimate is reproducible."""
    def power(x: np.ndarray, f: Callable[..., Any]) -> np.ndarray:
        for _ in range(p):
            x = f(x)
        return x

    x = np.ones((n, _ELL), dtype)
    x[:, 1:] = np.where(np.random.default_rng(0).random((n, _ELL - 1)) < 0.5, -1, 1)
    x /= n
    best, used, rows = 0.0, set(), None
    for it in range(iterations):
        y = power(x, mv)
        sums = np.abs(y).sum(axis=0)
        est = float(sums.max())
        if it and est <= best:
            break
        best = est
        where: Any = None if rows is None else rows[int(np.argmax(sums))]
        h = np.abs(power(_sign(y), rmv)).max(axis=1)
        if where is not None and h.max() <= h[where]:
            break  # no unit vector promises more than the best one
        fresh = [int(i) for i in np.argsort(-h) if int(i) not in used][:_ELL]
        if not fresh:
            break
        used.update(fresh)
        rows = fresh
        x = np.zeros((n, len(fresh)), dtype)
        x[fresh, range(len(fresh))] = 1
    return best


def _degree_and_steps(norm1: float, power_norm: Callable[[int], float],
                      columns: int) -> tuple[int, int]:
    """The Taylor degree ``m`` and the number of steps ``s`` (Al-Mohy and Higham, Code
    Fragment 3.1): the fewest products ``m s`` whose truncation error is below the unit
    roundoff, judged from ``|A|_1`` or, when it is large, from ``|A^p|_1^(1/p)``."""
    if norm1 == 0:
        return 0, 1
    if norm1 * columns * _M_MAX <= _THETA[_M_MAX] * 2 * _ELL * _P_MAX * (_P_MAX + 3):
        m = min(_THETA, key=lambda k: (k * int(np.ceil(norm1 / _THETA[k])), k))
        return m, int(np.ceil(norm1 / _THETA[m]))
    roots: dict[int, float] = {}

    def root(p: int) -> float:
        if p not in roots:
            roots[p] = power_norm(p) ** (1.0 / p)
        return roots[p]

    best = None
    for p in range(2, _P_MAX + 1):
        alpha = max(root(p), root(p + 1))
        for m, theta in _THETA.items():
            if m >= p * (p - 1) - 1:
                cost = m * int(np.ceil(alpha / theta))
                if best is None or cost < best[0]:
                    best = (cost, m)
    assert best is not None
    cost, m = best
    return m, max(cost // m, 1)


class _Expm:
    """``y = exp(A) b`` by Al-Mohy and Higham's algorithm: the trace shift ``mu``, then
    ``s`` steps ``y_j = e^(mu/s) sum_k T_k``, ``T_k = (A - mu) T_(k-1) / (s k)``,
    ``T_0 = y_(j-1)``, each stopped after at most ``m`` terms when two in a row are
    negligible. The derivatives are those of this computation (the discrete adjoint, with
    ``mu``, ``s`` and each step's number of terms held fixed): exact to rounding."""

    # keep each step's terms for backward when they take at most this many bytes
    STORE_BYTES = 1 << 28

    def __init__(self, op: ArrayOperator, b: np.ndarray, trace: Any, store: bool) -> None:
        self.name = "sparse.linalg.expm_multiply"
        self.op = op
        n = op.shape[0]
        a = op.sparse()
        mu = trace / n if trace is not None else (a.trace() / n if a is not None else 0.0)
        dt = np.result_type(b.dtype, op.dtype, np.asarray(mu).dtype)
        if dt.kind not in "fc":
            dt = np.dtype(np.float64)
        if a is not None:
            if n * n <= 4 * a.nnz + 16_000:
                # small, or dense in all but name: a dense product is faster (SciPy's sparse
                # product costs 2-3 us a call before any arithmetic; a dense complex one 9 us
                # at n = 200, where the sparse one with 5 nonzeros a column takes 4.5)
                a = a.toarray()
            a, mu, norm1 = _shifted(a, mu)
            self.mv: Callable[..., Any] = a.__matmul__
            adjoint: list[Any] = []

            def rmv(x: np.ndarray) -> Any:  # (A^H made at its first use: backward, estimates)
                if not adjoint:
                    adjoint.append(a.conj().T)
                return adjoint[0] @ x

            self.rmv: Callable[..., Any] = rmv
        else:
            self.mv = (lambda x: op.mv(x) - mu * x) if mu else op.mv
            self.rmv = (lambda x: op.rmv(x) - np.conj(mu) * x) if mu else op.rmv
            norm1 = _power_norm(self.mv, self.rmv, n, dt, 1)
        self.mu = mu
        m, self.steps = _degree_and_steps(
            norm1, lambda p: _power_norm(self.mv, self.rmv, n, dt, p),
            1 if b.ndim == 1 else b.shape[1])
        self.eta = np.exp(mu / self.steps)
        tol = 2.0 ** -53 if np.finfo(dt).eps < 1e-10 else float(np.finfo(dt).eps) / 2
        y = b.astype(dt)
        self.counts: list[int] = []
        self.starts: list[np.ndarray] = []  # the vector at the start of each step
        self.terms: list[list[np.ndarray]] | None = [] if store else None
        for _ in range(self.steps):
            self.starts.append(y)
            terms, total, c1, k = [y], y, _inf_norm(y), 0
            for k in range(1, m + 1):
                t = self.mv(terms[-1]) * (1.0 / (self.steps * k))
                total = total + t
                c2 = _inf_norm(t)
                if c1 + c2 <= tol * _inf_norm(total):
                    break
                c1 = c2
                terms.append(t)
            self.counts.append(k)
            if self.terms is not None:
                self.terms.append(terms[:k])
                if len(self.terms) * (m + 1) * y.nbytes > self.STORE_BYTES:
                    self.terms = None
            y = total * self.eta if mu else total
        self.xs = [y]

    def _step_terms(self, j: int) -> list[np.ndarray]:
        """The terms ``T_0 .. T_(count - 1)`` of step ``j`` (kept, or recomputed)."""
        if self.terms is not None:
            return self.terms[j]
        terms = [self.starts[j]]
        for k in range(1, self.counts[j]):
            terms.append(self.mv(terms[-1]) * (1.0 / (self.steps * k)))
        return terms

    def backward(self, inputs: tuple[Any, ...], xs: tuple[Any, ...],
                 grads: tuple[Any, ...]) -> tuple[Any, ...]:
        if state.enabled or forward_mode_on():
            return self._recorded(inputs, grads)
        ybar = np.asarray(data_of(grads[0])).astype(self.xs[0].dtype)
        params = [data_of(a) for a in inputs[1:]]
        total = None
        for j in reversed(range(self.steps)):
            count = self.counts[j]
            top = ybar * np.conj(self.eta) if self.mu else ybar
            tbar, pairs = top, []
            for k in range(count, 0, -1):
                weighted = tbar * (1.0 / (self.steps * k))
                pairs.append(weighted)
                tbar = top + self.rmv(weighted)
            ybar = tbar  # the gradient of the step's start
            if params and count:
                # A met T_(k-1) with the cotangent weighted_k (mu is held fixed)
                part = self.op.vjp(_columns(self._step_terms(j)), _columns(pairs[::-1]),
                                   tuple(params))
                total = part if total is None else [a + b for a, b in zip(total, part)]
        return (ybar, *(total if total is not None else [np.zeros(np.shape(p), p.dtype)
                                                         for p in params]))

    def _replay(self, b: Any) -> Any:
        """The computation once more in yaad operations (the counts held fixed): what
        second derivatives and forward mode differentiate."""
        s, mu, y = self.op.s, self.mu, b
        for count in self.counts:
            term = total = y
            for k in range(1, count + 1):
                term = ((s @ term - mu * term) if mu else s @ term) * (1.0 / (self.steps * k))
                total = total + term
            y = total * self.eta if mu else total
        return y

    def _recorded(self, inputs: tuple[Any, ...], grads: tuple[Any, ...]) -> tuple[Any, ...]:
        live = [differentiable(a) for a in inputs]
        with enable_grad():
            locals_ = [local(a) if d else a for a, d in zip(inputs, live)]
            y = self.op.closure.call(lambda: self._replay(locals_[0]), locals_[1:])
            got = iter(vjp_of([y], [t for t, d in zip(locals_, live) if d], list(grads),
                              True, True))
        return tuple(next(got) if d else np.zeros(np.shape(a), data_of(a).dtype)
                     for a, d in zip(inputs, live))

    def jvp(self, inputs: tuple[Any, ...], xs: tuple[Any, ...], ts: tuple[Any, ...]) -> Any:
        return tangent_map(
            lambda d: [self.op.closure.call(lambda: self._replay(d[0]), d[1:])],
            list(inputs), list(ts))[0]


def _shifted(a: Any, mu: Any) -> tuple[Any, Any, float]:
    """``(a - mu I, mu, |a - mu I|_1)`` where the shift lowers the 1-norm, else
    ``(a, 0, |a|_1)``, for a dense array or a SciPy sparse matrix. Both norms come from one
    pass over ``|a|`` (the shift changes only the diagonal's terms of the column sums)."""
    dense = isinstance(a, np.ndarray)
    if not a.shape[0]:
        return a, 0.0, 0.0
    d = a.diagonal()
    if dense:
        m = np.abs(a)
        m.flat[::a.shape[0] + 1] = 0
        off = m.sum(axis=0)
    else:
        # (clipped: the sums less the diagonal's terms, to rounding)
        off = np.maximum(np.asarray(abs(a).sum(axis=0)).ravel() - np.abs(d), 0.0)
    norm = float((off + np.abs(d)).max())
    if not mu:
        return a, 0.0, norm
    norm_shifted = float((off + np.abs(d - mu)).max())
    if not norm_shifted < norm:
        return a, 0.0, norm
    if dense:
        a = a.astype(np.result_type(a.dtype, mu))  # (a copy)
        a.flat[::a.shape[0] + 1] -= mu
        return a, mu, norm_shifted
    a = sps.csr_array(a - mu * sps.eye_array(a.shape[0], dtype=np.result_type(a.dtype, mu)))
    return a, mu, _one_norm(a)


def _columns(vs: list[Any]) -> np.ndarray:
    """Vectors (n,) or batches (n, m) side by side as the columns of one (n, M) array."""
    return np.concatenate([v.reshape(v.shape[0], -1) for v in vs], axis=1)


def _one_norm(a: Any) -> float:
    """The 1-norm (largest column sum of magnitudes) of a SciPy sparse matrix or an array."""
    if isinstance(a, np.ndarray):
        return float(np.abs(a).sum(axis=0).max()) if a.size else 0.0
    return float(abs(a).sum(axis=0).max()) if a.nnz else 0.0


def expm_multiply(A: Any, B: Any, start: Any = None, stop: Any = None, num: int | None = None,
                  endpoint: bool | None = None, traceA: Any = None) -> Any:  # noqa: N803
    """``exp(A) @ B`` without forming ``exp(A)`` (``scipy.sparse.linalg.expm_multiply``),
    differentiable.

    Parameters
    ----------
    A : operator
        A square SciPy sparse matrix or ``LinearOperator``, a
        :class:`~yaad.sparse.SparseTensor` or a :class:`LinearOperator`. Write the time
        into it, ``-1j * t * H`` with ``t`` a 0-d tensor, for the gradient with respect to
        the time.
    B : Tensor or array_like
        A vector ``(n,)`` or a batch ``(n, m)``.
    start : optional
        As in SciPy: the results ``exp(t A) B`` at ``num`` times ``t`` from ``start`` to
        ``stop`` (numbers), stacked along a new first axis.
    stop : optional
        As in SciPy: the results ``exp(t A) B`` at ``num`` times ``t`` from ``start`` to
        ``stop`` (numbers), stacked along a new first axis.
    num : int or None, optional
        As in SciPy: the results ``exp(t A) B`` at ``num`` times ``t`` from ``start`` to
        ``stop`` (numbers), stacked along a new first axis.
    endpoint : bool or None, optional
        As in SciPy: the results ``exp(t A) B`` at ``num`` times ``t`` from ``start`` to
        ``stop`` (numbers), stacked along a new first axis.
    traceA : number, optional
        The trace of ``A`` (its value; no gradient flows through it), for the shift of a
        matrix-free operator; that of a sparse one is computed.

    Returns
    -------
    Tensor
        ``exp(A) B`` (or the stack of ``exp(t_j A) B``).

    Notes
    -----
    Al-Mohy and Higham's algorithm, as SciPy's: the shift ``mu = tr(A) / n``, then ``s``
    steps of a Taylor series of degree at most ``m``, ``(m, s)`` chosen from the 1-norm of
    ``A`` (and, when it is large, estimates of ``|A^p|_1^(1/p)``) as the fewest products
    whose truncation error is below the unit roundoff; each step stops early when two
    terms in a row are negligible. The gradient is that of this computation, run backwards:
    as many products with ``A^H`` as the forward pass with ``A``, and one vector-Jacobian
    product of ``A(theta)`` on each step's terms (kept from the forward pass while they
    take under 256 MiB, else recomputed). Second derivatives (``create_graph=True``) and
    forward mode (``jvp``, ``hvp``) differentiate the same computation (recorded in yaad
    operations, its step counts held fixed).
    """
    if start is not None or stop is not None:
        times = np.linspace(0.0 if start is None else start, 1.0 if stop is None else stop,
                            50 if num is None else num,
                            endpoint=True if endpoint is None else endpoint)
        out, prev, t_prev = [], B, 0.0
        for t in times:
            prev = expm_multiply((t - t_prev) * aslinearoperator(A), prev,
                                 traceA=None if traceA is None else (t - t_prev) * traceA)
            t_prev = t
            out.append(prev)
        return stack(out)
    op = _operator(A, "sparse.linalg.expm_multiply")
    n = op.square()
    b = np.asarray(data_of(B))
    if b.ndim not in (1, 2) or b.shape[0] != n:
        raise ValueError(f"sparse.linalg.expm_multiply: B must have shape ({n},) or ({n}, m), "
                         f"not {b.shape}")
    inputs = [B if isinstance(B, Tensor) else make_tensor(b), *op.inputs]
    store = bool(state.enabled or state.levels) and any(differentiable(t) for t in inputs)
    problem = _Expm(op, b, traceA, store)
    return record(problem, inputs, _result_tensors(op, B))[0]


# ---- linear solvers ---------------------------------------------------------------------------


def _linear_solve(name: str, op: ArrayOperator, b: Any, x: np.ndarray,
                  solve: Callable[..., Any], solve_h: Callable[..., Any]) -> Any:
    """``x = A(theta)^-1 b`` (computed) as the root of ``A(theta) x - b``: an implicit
    function of ``b`` and the operator's tensors, whose derivatives solve with ``A^H``
    (gradients) and ``A`` (tangents) by ``solve_h`` and ``solve`` (the user's solver and
    preconditioner), to any order and in both modes."""
    def residual(xl: list[Any], full: list[Any]) -> list[Any]:
        return [op.s @ xl[0] - full[0]]

    slots = [0] if differentiable(b) else []
    problem = _Implicit(name, residual, op.closure, [b], slots, 0.0, None,
                        solvers=(lambda r: [solve(np.asarray(r[0]))],
                                 lambda r: [solve_h(np.asarray(r[0]))]))
    problem.tensors = _result_tensors(op, b)
    return problem.solve(lambda arrays: [x], [x])[0]


def _krylov(name: str, solver: Callable[..., Any], op: ArrayOperator, b: Any, x0: Any,
            rtol: float, atol: float, maxiter: int | None, M: Any, hermitian: bool,
            **kw: Any) -> tuple[Any, ...]:
    n = op.square()
    bb = np.asarray(data_of(b))
    if bb.shape != (n,):
        raise ValueError(f"{name}: b must have shape ({n},), not {bb.shape}")
    if hermitian:
        op.check_hermitian()
    dt = np.result_type(op.dtype, bb.dtype)
    x0 = None if x0 is None else np.asarray(data_of(x0), dtype=dt)
    m_h = None if M is None or hermitian else spla.aslinearoperator(M).H

    def run(a: Any, rhs: np.ndarray, guess: Any, m: Any) -> np.ndarray:
        rhs = np.ravel(rhs)
        if not np.any(rhs):
            return np.zeros(n, np.result_type(dt, rhs.dtype))
        x, info = solver(a, rhs.astype(np.result_type(dt, rhs.dtype), copy=False), guess,
                         rtol=rtol, atol=atol, maxiter=maxiter, M=m, **kw)
        if info:
            reached = np.linalg.norm(a @ x - rhs) / np.linalg.norm(rhs)
            raise not_converged(name, reached, rtol, info if info > 0 else maxiter or 0,
                                "Raise maxiter, loosen rtol, or precondition (M=).")
        result: np.ndarray = x
        return result

    forward = op.scipy(bb.dtype)
    x = run(forward, bb, x0, M)
    if hermitian:
        adjoint = forward
    else:
        adjoint = spla.LinearOperator((n, n), matvec=op.rmv, dtype=dt)
    return _linear_solve(name, op, b, x, lambda r: run(forward, r, None, M),
                         lambda r: run(adjoint, r, None, M if hermitian else m_h)), 0


def _minres(a: Any, b: np.ndarray, x0: Any, *, rtol: float, atol: float, maxiter: Any,
            M: Any) -> tuple[Any, ...]:
    return hermitian_minres(a.matvec, b, 0.0, rtol, maxiter, x0, M)


@no_derivative("x0", "M", why="an initial guess and a preconditioner: the solution "
                              "depends on neither")
def cg(A: Any, b: Any, x0: Any = None, *, rtol: float = 1e-5, atol: float = 0.0,
       maxiter: int | None = None, M: Any = None) -> tuple[Any, ...]:
    """Solve ``A x = b`` for Hermitian positive definite ``A`` by conjugate gradients
    (``scipy.sparse.linalg.cg``), differentiable.

    Parameters
    ----------
    A : operator
        Hermitian positive definite (SciPy sparse or ``LinearOperator``,
        :class:`~yaad.sparse.SparseTensor`, :class:`LinearOperator`).
    b : Tensor or array_like
        The right-hand side, ``(n,)``.
    x0 : optional
        As in SciPy (``M``: a SciPy preconditioner, used in both solves).
    rtol : float, optional
        As in SciPy (``M``: a SciPy preconditioner, used in both solves).
    atol : float, optional
        As in SciPy (``M``: a SciPy preconditioner, used in both solves).
    maxiter : int or None, optional
        As in SciPy (``M``: a SciPy preconditioner, used in both solves).
    M : optional
        As in SciPy (``M``: a SciPy preconditioner, used in both solves).

    Returns
    -------
    x : Tensor
        The solution; its gradient is one more CG solve (``b``: ``A^-1 g``; operator
        parameters: the VJP of ``A(theta) x`` at ``-A^-1 g``), preconditioned by ``M``
        too; so are its tangent (forward mode) and higher derivatives.
    info : int
        0 (non-convergence raises :class:`ConvergenceError`, naming the residual).
    """
    return _krylov("sparse.linalg.cg", spla.cg, _operator(A, "sparse.linalg.cg"), b, x0, rtol,
                   atol, maxiter, M, True)


@no_derivative("x0", "M", why="an initial guess and a preconditioner: the solution "
                              "depends on neither")
def minres(A: Any, b: Any, x0: Any = None, *, rtol: float = 1e-5, maxiter: int | None = None,
           M: Any = None) -> tuple[Any, ...]:
    """Solve ``A x = b`` for Hermitian (possibly indefinite) ``A`` by MINRES
    (``scipy.sparse.linalg.minres``), differentiable.

    Parameters
    ----------
    A : operator
        Hermitian.
    b : Tensor or array_like
        The right-hand side, ``(n,)``.
    x0 : optional
        As in SciPy (``M``: a Hermitian positive definite SciPy preconditioner, used in
        every solve; a complex system is solved as the real symmetric system of its real
        and imaginary parts, preconditioned alike).
    rtol : float, optional
        As in SciPy (``M``: a Hermitian positive definite SciPy preconditioner, used in
        every solve; a complex system is solved as the real symmetric system of its real
        and imaginary parts, preconditioned alike).
    maxiter : int or None, optional
        As in SciPy (``M``: a Hermitian positive definite SciPy preconditioner, used in
        every solve; a complex system is solved as the real symmetric system of its real
        and imaginary parts, preconditioned alike).
    M : optional
        As in SciPy (``M``: a Hermitian positive definite SciPy preconditioner, used in
        every solve; a complex system is solved as the real symmetric system of its real
        and imaginary parts, preconditioned alike).

    Returns
    -------
    x : Tensor
        The solution (gradient: one more MINRES solve; likewise its tangent and higher
        derivatives).
    info : int
        0 (non-convergence raises :class:`ConvergenceError`).
    """
    return _krylov("sparse.linalg.minres", _minres, _operator(A, "sparse.linalg.minres"),
                   b, x0, rtol, 0.0, maxiter, M, True)


@no_derivative("x0", why="an initial guess: the solution does not depend on it")
def gmres(A: Any, b: Any, x0: Any = None, *, rtol: float = 1e-5, atol: float = 0.0,
          restart: int | None = None, maxiter: int | None = None,
          M: Any = None) -> tuple[Any, ...]:
    """Solve ``A x = b`` for a general square ``A`` by GMRES (``scipy.sparse.linalg.gmres``),
    differentiable.

    Parameters
    ----------
    A : operator
        Square (SciPy sparse or ``LinearOperator``, :class:`~yaad.sparse.SparseTensor`,
        :class:`LinearOperator`).
    b : Tensor or array_like
        The right-hand side, ``(n,)``.
    x0 : optional
        As in SciPy (``maxiter`` counts restart cycles; ``M``: a SciPy preconditioner,
        ``M^H`` preconditions the solve of the gradient).
    rtol : float, optional
        As in SciPy (``maxiter`` counts restart cycles; ``M``: a SciPy preconditioner,
        ``M^H`` preconditions the solve of the gradient).
    atol : float, optional
        As in SciPy (``maxiter`` counts restart cycles; ``M``: a SciPy preconditioner,
        ``M^H`` preconditions the solve of the gradient).
    restart : int or None, optional
        As in SciPy (``maxiter`` counts restart cycles; ``M``: a SciPy preconditioner,
        ``M^H`` preconditions the solve of the gradient).
    maxiter : int or None, optional
        As in SciPy (``maxiter`` counts restart cycles; ``M``: a SciPy preconditioner,
        ``M^H`` preconditions the solve of the gradient).
    M : optional
        As in SciPy (``maxiter`` counts restart cycles; ``M``: a SciPy preconditioner,
        ``M^H`` preconditions the solve of the gradient).

    Returns
    -------
    x : Tensor
        The solution; its gradient is a GMRES solve with ``A^H``, its tangent (forward
        mode) one with ``A``, and both compose to higher orders.
    info : int
        0 (non-convergence raises :class:`ConvergenceError`).
    """
    return _krylov("sparse.linalg.gmres", spla.gmres, _operator(A, "sparse.linalg.gmres"), b,
                   x0, rtol, atol, maxiter, M, False, restart=restart)


def spsolve(A: Any, b: Any) -> Any:
    """Solve ``A x = b`` with a sparse LU factorisation (``scipy.sparse.linalg.spsolve``),
    differentiable.

    Parameters
    ----------
    A : operator
        A square sparse matrix: SciPy's, or a :class:`~yaad.sparse.SparseTensor` without
        matrix-free terms (its nonzeros may require grad).
    b : Tensor or array_like
        ``(n,)`` or ``(n, m)``.

    Returns
    -------
    Tensor
        The solution; the gradient reuses the factorisation (a solve with ``A^H``), as do
        its tangent (forward mode) and higher derivatives.
    """
    name = "sparse.linalg.spsolve"
    op = _operator(A, name)
    n = op.square()
    a = op.sparse()
    if a is None:
        raise TypeError(f"{name}: the operator has matrix-free terms; use gmres, cg or minres")
    bb = np.asarray(data_of(b))
    if bb.ndim not in (1, 2) or bb.shape[0] != n:
        raise ValueError(f"{name}: b must have shape ({n},) or ({n}, m), not {bb.shape}")
    lu = spla.splu(sps.csc_array(a))

    def solve(rhs: np.ndarray, trans: str) -> np.ndarray:
        if rhs.dtype.kind == "c" and a.dtype.kind != "c":  # a real factorisation
            parts: np.ndarray = (lu.solve(rhs.real.copy(), trans)
                                 + 1j * lu.solve(rhs.imag.copy(), trans))
            return parts
        result: np.ndarray = lu.solve(rhs.astype(np.result_type(a.dtype, rhs.dtype)), trans)
        return result

    x = solve(bb, "N")
    return _linear_solve(name, op, b, x, lambda r: solve(r.reshape(bb.shape), "N"),
                         lambda r: solve(r.reshape(bb.shape), "H"))
