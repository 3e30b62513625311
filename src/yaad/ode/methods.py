"""One step of an ODE method on flat arrays, its dense output, and the step's adjoint.

A method steps ``y' = f(y, t)`` from ``(y, t)`` by ``h`` and returns the new state and
the step's *data* (the stages), from which the dense output and the adjoint are computed.
A step is a deterministic function of ``(y, t, h)`` (and of the cache handed over from
the previous step, itself a function of ``y``), so the reverse pass recomputes exactly
the steps the forward pass took. The adjoint of a step is the exact vector-Jacobian
product of that computation with the step size held fixed (the step size controller's
choices are not differentiated):

    adjoint(field, y, t, h, data, ybar_new, thetas, G, need_t, acc)
        -> (ybar, tbar, hbar, toutbar)

for the gradient ``ybar_new`` of the new state and the gradients ``G`` of the outputs
interpolated at the fractions ``thetas`` of the step; the parameters' gradients are added
by ``acc``. Complex states: gradients follow yaad's convention (``dL/dRe + i dL/dIm``),
so the gradient of a real scalar ``s`` that multiplies ``v`` is ``Re vdot(vbar, v)``.

Dormand-Prince 5(4) coefficients and its dense output are those of Dormand and Prince
(1980) with Shampine's interpolant, as in SciPy's ``RK45``; Radau IIA of order 5 and its
error estimate are Hairer and Wanner's (``RADAU5``, SciPy's ``Radau``).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import scipy.linalg

from ..core.tensor import Tensor
from ..implicit import ConvergenceError, _Implicit, data_of, differentiable
from ..ops.products import matmul
from ..ops.shape import stack


def rms(x: np.ndarray) -> float:
    """The root mean square of ``|x|`` (the solvers' error norm)."""
    return float(np.sqrt(np.mean(np.abs(x) ** 2))) if x.size else 0.0


def _re_vdot(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.vdot(a, b).real)


def _weights_ops(thetas: Any, basis: np.ndarray) -> Any:
    """Dense-output weights ``sum_q theta^(q + 1) basis[q]`` at ``thetas``, ``(M, stages)``:
    yaad operations for a tensor (times that require grad), an array otherwise."""
    if isinstance(thetas, Tensor):
        th = thetas.reshape(-1, 1)
        return sum(th ** (q + 1) * basis[q] for q in range(basis.shape[0]))
    t = np.asarray(thetas, float)
    out: np.ndarray = (t[:, None] ** np.arange(1, basis.shape[0] + 1)) @ basis
    return out


class Dopri5:
    """Dormand-Prince 5(4), seven stages (the seventh is the next step's first)."""

    name = "dopri5"
    error_order = 4
    C = np.array([0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1, 1])
    A = np.zeros((7, 7))
    A[1, :1] = [1 / 5]
    A[2, :2] = [3 / 40, 9 / 40]
    A[3, :3] = [44 / 45, -56 / 15, 32 / 9]
    A[4, :4] = [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729]
    A[5, :5] = [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656]
    A[6, :6] = [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84]
    B = A[6].copy()
    E = np.array([-71 / 57600, 0, 71 / 16695, -71 / 1920, 17253 / 339200, -22 / 525,
                  1 / 40])
    P = np.array([
        [1, -8048581381 / 2820520608, 8663915743 / 2820520608,
         -12715105075 / 11282082432],
        [0, 0, 0, 0],
        [0, 131558114200 / 32700410799, -68118460800 / 10900136933,
         87487479700 / 32700410799],
        [0, -1754552775 / 470086768, 14199869525 / 1410260304,
         -10690763975 / 1880347072],
        [0, 127303824393 / 49829197408, -318862633887 / 49829197408,
         701980252875 / 199316789632],
        [0, -282668133 / 205662961, 2019193451 / 616988883, -1453857185 / 822651844],
        [0, 40617522 / 29380423, -110615467 / 29380423, 69997945 / 29380423]])

    def __init__(self, rtol: float, atol: float) -> None:
        self.rtol, self.atol = rtol, atol

    def first(self, field: Any, y: np.ndarray, t: float) -> Any:
        """The cache of a step from ``y``: ``f(y, t)``."""
        return field.value(y, t)

    @staticmethod
    def next_cache(data: Any) -> Any:
        """The next step's cache from this step's data (first same as last)."""
        return data[6]

    def step(self, field: Any, y: np.ndarray, t: float, h: float, k1: np.ndarray,
             error: bool = True) -> tuple[np.ndarray, np.ndarray, float]:
        """``(y_new, K, error norm)``; ``K`` holds the seven stages' ``f`` values."""
        if field.compiled:
            Y, K = field.run_step(self.name, y, t, h, k1)
        else:
            K = np.empty((7, y.size), np.result_type(y, k1))
            K[0] = k1
            A, C = self.A, self.C
            for i in range(1, 7):
                Y = y + h * (A[i, :i] @ K[:i])
                K[i] = field.value(Y, t + C[i] * h)
        if not error:
            return Y, K, 0.0
        scale = self.atol + self.rtol * np.maximum(np.abs(y), np.abs(Y))
        return Y, K, rms(h * (self.E @ K) / scale)

    @classmethod
    def step_ops(cls, f: Callable, y: Any, t: Any, h: Any, k1: Any = None) -> tuple:
        """The step written with operators, for yaad tensors: ``(y_new, [K_1..K_7])``
        (``k1 = f(y, t)`` unless given)."""
        A, C = cls.A, cls.C
        K = [f(y, t) if k1 is None else k1]
        for i in range(1, 7):
            acc = None
            for j in range(i):
                if A[i, j]:
                    term = A[i, j] * K[j]
                    acc = term if acc is None else acc + term
            Y = y + h * acc
            K.append(f(Y, t + C[i] * h))
        return Y, K

    def weights(self, thetas: np.ndarray) -> np.ndarray:
        """The dense output's weights of the stages at ``thetas``, ``(M, 7)``."""
        out: np.ndarray = _weights_ops(thetas, self.P.T)
        return out

    def dweights(self, thetas: np.ndarray) -> np.ndarray:
        """Their derivatives with respect to ``theta``."""
        return (np.arange(1, 5) * thetas[:, None] ** np.arange(4)) @ self.P.T

    def dense(self, y: np.ndarray, h: float, K: np.ndarray, thetas: np.ndarray) -> np.ndarray:
        """The states at ``t + theta h``, ``(M, n)``."""
        return y + h * (self.weights(thetas) @ K)

    # ---- the step as yaad operations (Trajectory.replay: second order, forward mode) ----

    @staticmethod
    def replay_first(f: Callable, y: Any, t: Any) -> Any:
        """The first replayed step's cache: ``f(y, t)``."""
        return f(y, t)

    @staticmethod
    def replay_data(field: Any, steps: Callable, ts: np.ndarray, hs: np.ndarray) -> Any:
        """What :meth:`replay_step` needs of each step beyond its inputs: nothing."""
        return iter(lambda: None, 0)

    def replay_step(self, f: Callable, field: Any, params: list, y: Any, t: Any, h: Any,
                    k1: Any, data: Any) -> tuple:
        """``(y_new, stages (7, n), next cache)`` as yaad operations."""
        Y, K = self.step_ops(f, y, t, h, k1)
        return Y, stack(K), K[6]

    def dense_ops(self, y: Any, h: Any, K: Any, thetas: Any) -> Any:
        """:meth:`dense` as yaad operations (``thetas`` a tensor or an array)."""
        return y + h * matmul(_weights_ops(thetas, self.P.T), K)

    def adjoint(self, field: Any, y: np.ndarray, t: float, h: float, K: np.ndarray,
                ybar_new: np.ndarray, thetas: np.ndarray, G: np.ndarray, need_t: bool,
                acc: Callable) -> tuple[np.ndarray, float, float, np.ndarray | None]:
        A, C = self.A, self.C
        ybar = ybar_new
        tbar = hbar = 0.0
        toutbar = None
        Kbar = None
        if thetas.size:
            W = self.weights(thetas)
            ybar = ybar + G.sum(axis=0)
            Kbar = h * (W.T @ G)
            hbar += float(np.sum((G.conj() * (W @ K)).real))
            if need_t:
                # theta = (tout - t) / h: dout/dtheta = h dW K
                thbar = h * np.sum((G.conj() * (self.dweights(thetas) @ K)).real, axis=1)
                toutbar = thbar / h
                tbar -= float(thbar.sum()) / h
                hbar -= float(thbar @ thetas) / h
        Kbar = h * np.outer(self.B, ybar_new) + (0 if Kbar is None else Kbar)
        hbar += _re_vdot(ybar_new, self.B @ K)
        for i in range(6, -1, -1):
            kb = Kbar[i]
            if not kb.any():
                continue
            Yi = y + h * (A[i, :i] @ K[:i]) if i else y
            yb, tb, pbars = field.vjp(Yi, t + C[i] * h, kb)
            ybar = ybar + yb
            if i:
                Kbar[:i] += h * np.outer(A[i, :i], yb)
                hbar += _re_vdot(yb, A[i, :i] @ K[:i]) + C[i] * tb
            tbar += tb
            acc(pbars)
        return ybar, tbar, hbar, toutbar


    def adjoint_native(self, field: Any, y: np.ndarray, t: np.ndarray, h: np.ndarray,
                       K: np.ndarray, ybar_end: np.ndarray, step: np.ndarray,
                       thetas: np.ndarray, G: np.ndarray, need_t: bool) -> tuple | None:
        """:meth:`adjoint` of ``M`` consecutive steps, last first, in one numba loop
        (``native.dopri5_adjoint``) where the field's vector-Jacobian product is one
        native program; None where it is not. Arguments and results as
        :meth:`adjoint_block`'s."""
        M, n = y.shape
        if not M:
            return None
        found = field.native("vjp", [y[0], np.asarray(t[0], float), y[0]])
        if found is None:
            return None
        from . import native

        program, ins, outs, R, Z = found
        starts = np.searchsorted(step, np.arange(M + 1), "left")
        ybar = np.array(ybar_end, np.float64)
        pbar = np.zeros(sum(int(np.size(p)) for p in field.params))
        tbar, hbar, toutbar = np.zeros(M), np.zeros(M), np.zeros(len(thetas))
        if native.dopri5_adjoint(
                program.code, program.idx, R, Z, ins, outs, self.A, self.B, self.C,
                np.ascontiguousarray(y), np.ascontiguousarray(t, float),
                np.ascontiguousarray(h, float), np.ascontiguousarray(K), ybar, starts,
                self.weights(thetas), self.dweights(thetas), np.asarray(thetas, float),
                np.ascontiguousarray(G, float), need_t, pbar, tbar, hbar, toutbar) >= 0:
            return None
        return ybar, pbar, tbar, hbar, toutbar if need_t else None

    def adjoint_block(self, field: Any, y: np.ndarray, t: np.ndarray, h: np.ndarray,
                      K: np.ndarray, ybar_end: np.ndarray, step: np.ndarray,
                      thetas: np.ndarray, G: np.ndarray, need_t: bool) -> tuple:
        """The adjoint of ``M`` consecutive steps at once, from the Jacobians of the field
        at all their stages (``field.jacobians``, one vectorized call): a real state.

        ``y (M, n)``, ``t, h (M,)``, ``K (M, 7, n)``: the steps; ``ybar_end``: the
        gradient of the state after the last; the outputs ``G (O, n)`` at the fractions
        ``thetas`` of the steps ``step (O,)``. Each step's sensitivities to its inputs
        ``z = (y, parameters, t, h)`` are propagated through its stages for all steps at
        once (forward mode, ``M x 7`` small matrix products); only the state's gradient
        is a loop over the steps (one ``n x n`` product each). Returns ``(ybar, pbar
        (flat), tbar (M,), hbar (M,), toutbar (O,) or None)``: the same numbers as
        :meth:`adjoint` step by step, to rounding."""
        A, C = self.A, self.C
        M, n = y.shape
        AK = np.einsum("ij,mjn->min", A, K)  # (M, 7, n)
        Ys = y[:, None] + h[:, None, None] * AK
        Ts = t[:, None] + C * h[:, None]
        need_p = bool(field.params)
        Jy, Jt, Jp = field.jacobians(Ys.reshape(-1, n), Ts.reshape(-1), need_t, need_p)
        Jy = Jy.reshape(M, 7, n, n)
        P = Jp.shape[2] if need_p else 0
        D = n + P + 2 * need_t
        # the explicit parts of dK_i/dz: [0 | J_p | J_t | c_i J_t]
        X = np.zeros((M, 7, n, D))
        if need_p:
            X[..., n:n + P] = Jp.reshape(M, 7, n, P)
        if need_t:
            Jt = Jt.reshape(M, 7, n)
            X[..., -2] = Jt
            X[..., -1] = C[:, None] * Jt
        dK = np.empty((M, 7, n, D))
        eye = np.zeros((n, D))
        eye[:, :n] = np.eye(n)
        for i in range(7):
            dY = np.broadcast_to(eye, (M, n, D)).copy()
            if i:
                dY += h[:, None, None] * np.einsum("j,mjnd->mnd", A[i, :i], dK[:, :i])
                if need_t:
                    dY[..., -1] += AK[:, i]
            dK[:, i] = Jy[:, i] @ dY + X[:, i]
        S = dY  # the step's map: y_new = Y_7 (first same as last: B = A[6])
        # the outputs: out = y + h W K, theta = (tout - t) / h
        c = np.zeros((M, D))
        toutbar = None
        if thetas.size:
            W = self.weights(thetas)
            hs = h[step]
            GdK = np.einsum("on,ojnd->ojd", G, dK[step])
            Gz = hs[:, None] * np.einsum("oj,ojd->od", W, GdK)
            Gz[:, :n] += G
            if need_t:
                WK = np.einsum("oj,ojn->on", W, K[step])
                Gz[:, -1] += np.sum(G * WK, axis=1)
                dWK = np.einsum("oj,ojn->on", self.dweights(thetas), K[step])
                thbar = np.sum(G * dWK, axis=1)  # = h G.(dW K) / h
                toutbar = thbar
                Gz[:, -2] -= thbar
                Gz[:, -1] -= thbar * thetas
            np.add.at(c, step, Gz)
        # the state's gradient, last step first; the rest at once
        ST = np.ascontiguousarray(np.swapaxes(S[:, :, :n], 1, 2))
        after = np.empty((M, n))
        yb = ybar_end
        for m in range(M - 1, -1, -1):
            after[m] = yb
            yb = ST[m] @ yb + c[m, :n]
        zbar = np.einsum("mn,mnd->md", after, S[:, :, n:]) + c[:, n:]
        pbar = zbar[:, :P].sum(axis=0)
        tbar = zbar[:, P] if need_t else None
        hbar = zbar[:, P + 1] if need_t else None
        return yb, pbar, tbar, hbar, toutbar


_S6 = 6 ** 0.5


class Radau:
    """Radau IIA of order 5 (three implicit stages, stiffly accurate, L-stable).

    The stages ``Z`` (offsets from ``y``) solve ``Z = h (A x I) F(y + Z)`` by Newton's
    method with the Jacobian at ``(y, t)``, from ``Z = 0`` to a scaled tolerance far
    below the step's; the adjoint differentiates the solved equations (the implicit
    function theorem, with the exact Jacobians at the three stages).
    """

    name = "radau"
    error_order = 3
    C = np.array([(4 - _S6) / 10, (4 + _S6) / 10, 1.0])
    A = np.array([
        [(88 - 7 * _S6) / 360, (296 - 169 * _S6) / 1800, (-2 + 3 * _S6) / 225],
        [(296 + 169 * _S6) / 1800, (88 + 7 * _S6) / 360, (-2 - 3 * _S6) / 225],
        [(16 - _S6) / 36, (16 + _S6) / 36, 1 / 9]])
    E = np.array([-13 - 7 * _S6, -13 + 7 * _S6, -1]) / 3
    MU_REAL = 3 + 3 ** (2 / 3) - 3 ** (1 / 3)
    # the collocation polynomial: y + sum_j Z_j L_j(theta), L_j(c_k) = delta_jk, L_j(0) = 0
    Q = np.linalg.inv(C[:, None] ** np.arange(1, 4))
    NEWTON_TOL = 1e-4
    NEWTON_MAXITER = 12

    def __init__(self, rtol: float, atol: float) -> None:
        self.rtol, self.atol = rtol, atol

    def first(self, field: Any, y: np.ndarray, t: float) -> Any:
        return None

    @staticmethod
    def next_cache(data: Any) -> Any:
        return None

    def step(self, field: Any, y: np.ndarray, t: float, h: float, cache: Any,
             error: bool = True) -> tuple[np.ndarray, Any, float]:
        """``(y_new, Z, error norm)``; raises ``_NewtonFailed`` if Newton stalls."""
        n = y.size
        J = field.jac(y, t)
        lu = scipy.linalg.lu_factor(np.eye(3 * n) - h * np.kron(self.A, J))
        scale = self.atol + self.rtol * np.abs(y)
        Z = np.zeros((3, n))
        times = t + self.C * h
        for _ in range(self.NEWTON_MAXITER):
            F = np.stack([field.value(y + Z[j], times[j]) for j in range(3)])
            R = h * (self.A @ F) - Z
            dZ = scipy.linalg.lu_solve(lu, R.reshape(-1)).reshape(3, n)
            Z = Z + dZ
            if not np.all(np.isfinite(Z)):
                break
            if rms(dZ / scale) < self.NEWTON_TOL:
                break
        else:
            raise _NewtonFailed
        if not np.all(np.isfinite(Z)):
            raise _NewtonFailed
        y_new = y + Z[2]
        if not error:
            return y_new, Z, 0.0
        f0 = field.value(y, t)
        E = scipy.linalg.solve(self.MU_REAL / h * np.eye(n) - J, f0 + (self.E @ Z) / h)
        scale = self.atol + self.rtol * np.maximum(np.abs(y), np.abs(y_new))
        return y_new, Z, rms(E / scale)

    def weights(self, thetas: np.ndarray) -> np.ndarray:
        out: np.ndarray = _weights_ops(thetas, self.Q)
        return out

    def dweights(self, thetas: np.ndarray) -> np.ndarray:
        return (np.arange(1, 4) * thetas[:, None] ** np.arange(3)) @ self.Q

    def dense(self, y: np.ndarray, h: float, Z: np.ndarray, thetas: np.ndarray) -> np.ndarray:
        return y + self.weights(thetas) @ Z

    def stage_matrix(self, h: float, Js: np.ndarray) -> np.ndarray:
        """``dG/dZ = I - h (A x I) diag(J_1, J_2, J_3)`` for ``G(Z) = Z - h (A x I) F(y + Z)``,
        ``Js`` the field's Jacobians at the three stages, ``(3n, 3n)``."""
        n = Js.shape[-1]
        out: np.ndarray = np.eye(3 * n) - h * np.kron(self.A, np.ones((n, n))) * np.tile(
            np.hstack(list(Js)), (3, 1))
        return out

    # ---- the step as yaad operations (Trajectory.replay: second order, forward mode) ----

    @staticmethod
    def replay_first(f: Callable, y: Any, t: Any) -> Any:
        return None

    def replay_data(self, field: Any, steps: Callable, ts: np.ndarray,
                    hs: np.ndarray) -> Any:
        """Each step's stages ``Z`` (those of the forward pass: ``steps(lo, hi)`` gives
        the kept or recomputed ``(y, Z)`` of steps ``lo .. hi-1``) and the field's
        Jacobians at them, taken for many steps in one vectorized call (at most 32 MiB of
        Jacobians at once)."""
        N = len(hs)
        chunk = 1
        for lo in range(0, N, chunk):
            kept = steps(lo, min(N, lo + chunk))
            n = kept[0][0].size
            chunk = max(1, (32 << 20) // (3 * 8 * n * n))
            Y = np.concatenate([y + Z for y, Z in kept])
            T = np.concatenate([ts[k] + self.C * hs[k] for k in range(lo, lo + len(kept))])
            Js = field.jacobians(Y, T, False, False)[0].reshape(len(kept), 3, n, n)
            yield from ((Z, J) for (_, Z), J in zip(kept, Js))

    def replay_step(self, f: Callable, field: Any, params: list, y: Any, t: Any, h: Any,
                    cache: Any, data: Any) -> tuple:
        """``(y_new, Z (3, n), None)`` as yaad operations. The stages ``Z`` (the forward
        pass's Newton solution, in ``data`` with the Jacobians at them) are the root of
        ``G(Z) = Z - h (A x I) F(y + Z)``, an implicit function of ``y``, ``t``, ``h`` and the
        field's parameters (:class:`yaad.implicit._Implicit`): its derivatives of every
        order, and its tangents, are solves with ``dG/dZ`` at the stages (the adjoint's
        matrix, factored once)."""
        Z, Js = data
        n = Z.shape[1]
        lu = scipy.linalg.lu_factor(self.stage_matrix(float(np.real(data_of(h))), Js))

        def solver(trans: int) -> Callable:
            return lambda r: [scipy.linalg.lu_solve(
                lu, np.asarray(data_of(r[0]), float).reshape(-1), trans=trans).reshape(3, n)]

        A, C = self.A, self.C

        def residual(xl: list, full: list) -> list:
            z = xl[0]
            yy, tt, hh, *ps = full
            F = stack([f(yy + z[j], tt + C[j] * hh, ps) for j in range(3)])
            return [z - hh * matmul(A, F)]

        full = [y, t, h, *params]
        problem = _Implicit("integrate (a Radau step's stages)", residual, None, full,
                            [k for k, p in enumerate(full) if differentiable(p)], 0.0, None,
                            solvers=(solver(0), solver(1)))
        z = problem.solve(lambda arrays: [Z], [Z])[0]
        return y + z[2], z, None

    def dense_ops(self, y: Any, h: Any, Z: Any, thetas: Any) -> Any:
        """:meth:`dense` as yaad operations (``thetas`` a tensor or an array)."""
        return y + matmul(_weights_ops(thetas, self.Q), Z)

    def adjoint(self, field: Any, y: np.ndarray, t: float, h: float, Z: np.ndarray,
                ybar_new: np.ndarray, thetas: np.ndarray, G: np.ndarray, need_t: bool,
                acc: Callable) -> tuple[np.ndarray, float, float, np.ndarray | None]:
        n = y.size
        Zbar = np.zeros((3, n))
        Zbar[2] = ybar_new
        ybar = ybar_new.copy()
        tbar = hbar = 0.0
        toutbar = None
        if thetas.size:
            ybar = ybar + G.sum(axis=0)
            Zbar = Zbar + self.weights(thetas).T @ G
            if need_t:
                thbar = np.sum(G * (self.dweights(thetas) @ Z), axis=1)
                toutbar = thbar / h
                tbar -= float(thbar.sum()) / h
                hbar -= float(thbar @ thetas) / h
        times = t + self.C * h
        # the three stages' Jacobians in one vectorized call (and, for a small state, those
        # of the time and the parameters: then no VJP of func is needed)
        small = field.linear_points(y.dtype) >= 3
        need_p = small and bool(field.params)
        Js, Jt, Jp = field.jacobians(y + Z, times, need_t and small, need_p)
        # (dG/dZ)^T W = Zbar with G(Z) = Z - h (A x I) F(y + Z)
        W = scipy.linalg.solve(self.stage_matrix(h, Js).T, Zbar.reshape(-1)).reshape(3, n)
        V = h * (self.A.T @ W)
        for j in range(3):
            if small:
                yb = V[j] @ Js[j]
                tb = float(V[j] @ Jt[j]) if need_t else 0.0
                pbars = field.split(V[j] @ Jp[j]) if need_p else []
            else:
                yb, tb, pbars = field.vjp(y + Z[j], times[j], V[j])
            ybar = ybar + yb
            Fj = field.value(y + Z[j], times[j])
            hbar += float(V[j] @ Fj) / h + self.C[j] * tb
            tbar += tb
            acc(pbars)
        return ybar, tbar, hbar, toutbar


class _NewtonFailed(Exception):
    """Newton's method did not converge on a Radau step (the step is halved)."""


METHODS = {"dopri5": Dopri5, "rk45": Dopri5, "radau": Radau}


def method_of(name: str, rtol: float, atol: float, fname: str) -> Any:
    """The method called ``name`` (case-insensitive: ``"dopri5"``/``"RK45"``,
    ``"Radau"``)."""
    cls = METHODS.get(str(name).lower())
    if cls is None:
        raise ValueError(
            f"{fname}: unknown method {name!r}; the discrete adjoint has 'dopri5' (or "
            f"'RK45', explicit) and 'Radau' (implicit, for stiff systems). SciPy's other "
            f"methods ('DOP853', 'BDF', 'LSODA') run with adjoint='backsolve'")
    return cls(rtol, atol)


__all__ = ["ConvergenceError", "Dopri5", "Radau", "method_of", "rms"]
