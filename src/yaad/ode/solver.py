"""The adaptive forward pass with checkpoints and the discrete adjoint over its steps.

Forward: an adaptive loop of a method's steps from ``times[0]`` to ``times[-1]``; the
outputs at the times in between are the method's dense output in the step that holds
them (the steps are not shortened to land on them). The step sizes ``hs`` are kept
(a few floats a step); states are kept at checkpoints: every step's state and stages
while at most ``budget`` are kept, then every second one's state, every fourth one's,
... (the stride doubles each time the budget fills).

Reverse: the steps are visited last to first; a stretch between two checkpoints is
recomputed from the earlier one with the same step sizes (a step is a deterministic
function of its state, time and size, so it recomputes the same numbers) and, if longer
than the budget, checkpointed again recursively. Each step's adjoint is the exact
vector-Jacobian product of the step (``methods``): the gradient is that of the computed
solution, with the step sizes held fixed. The time gradients follow the grid
``t_{n+1} = t_n + h_n``: the steps' sizes are constants except the last, which ends at
``times[-1]``; so the grid moves with ``times[0]``, and the output times move within
their steps.

Replay (second order, forward mode): the same steps as yaad operations on tensors, so
the graph they record (or the tangents they carry) is differentiated again.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..core.tensor import Tensor
from ..implicit import ConvergenceError, not_converged
from ..ops.shape import concatenate
from .methods import Radau, _NewtonFailed, rms

DEFAULT_CHECKPOINT_BYTES = 64 << 20


class Trajectory:
    """An ODE solution on a grid of accepted steps, and its adjoint.

    Parameters
    ----------
    method : Dopri5 or Radau
        The method (with its tolerances).
    field : Field
        The vector field.
    times : ndarray
        The output times, strictly monotonic; ``times[0]`` is the initial time.
    checkpoints : int or None
        The most states (with their stages, while every step is kept) kept at once per
        level of recomputation; ``None``: as many as fit in 64 MiB, at least 8.
    max_steps : int
        The most steps the forward pass takes.
    name : str
        The public function's name, for errors.
    """

    def __init__(self, method: Any, field: Any, times: np.ndarray, checkpoints: int | None,
                 max_steps: int, name: str) -> None:
        self.method = method
        self.field = field
        self.times = times
        self.checkpoints = checkpoints
        self.max_steps = max_steps
        self.name = name
        self.direction = 1.0 if times[-1] > times[0] else -1.0

    # ---- forward ------------------------------------------------------------------------

    def _initial_step(self, y: np.ndarray, t0: float, T: float, f0: np.ndarray) -> float:
        """Hairer, Norsett and Wanner's starting step (Solving ODEs I, II.4)."""
        m = self.method
        span = abs(T - t0)
        scale = m.atol + m.rtol * np.abs(y)
        d0, d1 = rms(y / scale), rms(f0 / scale)
        h0 = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
        h0 = min(h0, span)
        f1 = self.field.value(y + h0 * self.direction * f0, t0 + h0 * self.direction)
        d2 = rms((f1 - f0) / scale) / h0
        if d1 <= 1e-15 and d2 <= 1e-15:
            h1 = max(1e-6, h0 * 1e-3)
        else:
            h1 = (0.01 / max(d1, d2)) ** (1 / (m.error_order + 1))
        return min(100 * h0, h1, span)

    def run(self, y0: np.ndarray) -> np.ndarray:
        """The states at ``times``, ``(len(times), n)``."""
        m, f, d = self.method, self.field, self.direction
        times = self.times
        t0, T = float(times[0]), float(times[-1])
        touts = times[1:]
        outs = np.empty((len(times), y0.size), y0.dtype)
        outs[0] = y0
        per_step = (8 if m.name == "dopri5" else 4) * max(y0.nbytes, 1)
        self.budget = max(2, self.checkpoints if self.checkpoints is not None else
                          max(8, DEFAULT_CHECKPOINT_BYTES // per_step))
        self.stride = 1
        self.ckpts: list[tuple[int, np.ndarray, Any]] = []
        cache = m.first(f, y0, t0)
        h = self._initial_step(y0, t0, T, f.value(y0, t0) if cache is None else cache)
        if m.name == "dopri5" and self._run_native(y0, h, cache, outs):
            return outs
        t, y, j, n, rejected = t0, y0, 0, 0, False
        ts, hs = [t0], []
        exponent = -1.0 / (m.error_order + 1)
        while True:
            remaining = T - t
            last = h >= abs(remaining)
            hh = remaining if last else d * h
            if abs(hh) < 10 * np.spacing(abs(t)) or not np.isfinite(hh):
                raise self._failure("the step size became too small", t, n)
            try:
                y_new, data, err = m.step(f, y, t, hh, cache)
            except _NewtonFailed:
                h, rejected = abs(hh) * 0.5, True
                continue
            if not err <= 1:  # also NaN
                factor = max(0.2, 0.9 * err ** exponent) if np.isfinite(err) else 0.2
                h, rejected = abs(hh) * factor, True
                continue
            t_new = T if last else t + hh
            k = j
            while k < len(touts) and d * (touts[k] - t_new) <= 0:
                k += 1
            if k > j:
                outs[1 + j:1 + k] = m.dense(y, hh, data, (touts[j:k] - t) / hh)
                j = k
            self._keep(n, y, data)
            ts.append(t_new)
            hs.append(hh)
            n += 1
            if last:
                break
            if n >= self.max_steps:
                raise self._failure(f"max_steps={self.max_steps} steps were taken", t_new, n)
            cache = m.next_cache(data)
            factor = 10.0 if err == 0 else min(10.0, 0.9 * err ** exponent)
            if rejected:
                factor = min(1.0, factor)
            h, rejected = abs(hh) * factor, False
            t, y = t_new, y_new
        self.ts, self.hs = np.array(ts), np.array(hs)
        return outs

    def _run_native(self, y0: np.ndarray, h: float, k1: np.ndarray, outs: np.ndarray) -> bool:
        """The forward pass of :meth:`run` in numba (``native.dopri5_steps``) where the
        field's step is one native program: False (nothing done) where it is not."""
        m, f = self.method, self.field
        found = f.native(f"step:{m.name}", [y0, 0.0, h, k1])
        if found is None:
            return False
        from . import native

        program, ins, res, R, Z = found
        io = np.concatenate([ins[:, 0], res[:, 0]])
        t0, T = float(self.times[0]), float(self.times[-1])
        state = np.array([t0, T, h, 0.0, self.direction, m.rtol, m.atol,
                          -1.0 / (m.error_order + 1), 0.0, 0.0, self.max_steps])
        y, k1 = np.array(y0, np.float64), np.array(k1, np.float64)
        E, PT = np.ascontiguousarray(m.E), m.P.T
        ts, hs = [np.array([t0])], []
        size = 64
        while True:
            size = min(2 * size, 4096)
            chunk = (np.empty((size, y.size)), np.empty((size, 7, y.size)), np.empty(size),
                     np.empty(size))
            n0 = int(state[9])
            outcome, n = native.dopri5_steps(program.code, program.idx, R, Z, io, E, PT, y,
                                             k1, state, self.times[1:], outs, *chunk)
            if outcome == native.FAILED:
                self.stride, self.ckpts = 1, []
                return False
            ys, Ks, tc, hc = chunk
            for i in range(n):
                self._keep(n0 + i, ys[i].copy(), Ks[i])
            ts.append(tc[:n])
            hs.append(hc[:n])
            if outcome == native.DONE:
                break
            if outcome == native.SMALL:
                raise self._failure("the step size became too small", state[0], n0 + n)
            if outcome == native.MAX_STEPS:
                raise self._failure(f"max_steps={self.max_steps} steps were taken",
                                    float(tc[n - 1]), n0 + n)
        self.ts, self.hs = np.concatenate(ts), np.concatenate(hs)
        return True

    def _failure(self, what: str, t: float, n: int) -> ConvergenceError:
        stiff = ("" if isinstance(self.method, Radau) else
                 " If the system is stiff, use method='Radau'.")
        return not_converged(
            f"{self.name} (forward, method={self.method.name!r})", float("nan"),
            self.method.rtol, n,
            f"The integration stopped at t = {t:.6g}: {what} (a singularity, or a "
            f"solution that blows up?).{stiff} Or loosen rtol/atol.")

    def _keep(self, n: int, y: np.ndarray, data: Any) -> None:
        if n % self.stride:
            return
        self.ckpts.append((n, y, data if self.stride == 1 else None))
        if len(self.ckpts) > self.budget:
            self.stride *= 2
            self.ckpts = [(i, s, None) for i, s, _ in self.ckpts if i % self.stride == 0]

    # ---- reverse ------------------------------------------------------------------------

    def backward(self, G: np.ndarray, need_t: bool) -> tuple[np.ndarray, Any, list]:
        """The gradients of ``y0``, of the times (``None`` unless ``need_t``) and of the
        field's parameters, for the gradients ``G`` of the outputs (``(len(times), n)``)."""
        d = self.direction
        N = len(self.hs)
        touts = self.times[1:]
        step_of = np.clip(np.searchsorted(d * self.ts, d * touts, "left") - 1, 0, N - 1)
        self._step_of = step_of
        self._starts = np.searchsorted(step_of, np.arange(N + 1), "left")
        self._G = G[1:]
        self._need_t = need_t
        self._ybar = np.zeros(G.shape[1], np.result_type(G, self.ckpts[0][1]))
        self._tcarry = 0.0
        self._Tbar = 0.0
        self._toutbar = np.zeros(len(touts))
        self._pbars = [np.zeros(np.shape(p), np.result_type(p, float))
                       for p in self.field.params]
        cks = self.ckpts
        i = len(cks) - 1
        while i >= 0:
            lo, ylo, data = cks[i]
            hi = cks[i + 1][0] if i + 1 < len(cks) else N
            if data is not None and hi == lo + 1:
                # a run of steps kept with their stages
                first = i
                while first > 0 and cks[first - 1][2] is not None:
                    first -= 1
                self._adjoint_steps(cks[first][0], [(y, dt) for _, y, dt in cks[first:i + 1]])
                i = first - 1
            else:
                self._reverse(lo, hi, ylo)
                i -= 1
        ybar0 = self._ybar + G[0]
        tbar = None
        if need_t:
            tbar = np.concatenate([[self._tcarry], self._toutbar])
            tbar[-1] += self._Tbar
        return ybar0, tbar, self._pbars

    def _acc(self, pbars: Sequence) -> None:
        for a, b in zip(self._pbars, pbars):
            a += np.asarray(b)

    def _adjoint_steps(self, lo: int, kept: list) -> None:
        """The adjoint of steps ``lo, lo + 1, ...`` (their states and data in ``kept``),
        last first: in blocks from the field's Jacobians where the method and the field
        allow it (a small real state), else step by step."""
        hi = lo + len(kept)
        block = getattr(self.method, "adjoint_block", None)
        if block and self._adjoint_block(lo, kept, native=True):
            return
        points = self.field.linear_points(self._ybar.dtype) if block else 0
        per = points // 7
        if per < 1:
            for k in range(hi - 1, lo - 1, -1):
                self._adjoint_step(k, *kept[k - lo])
            return
        for end in range(hi, lo, -per):
            start = max(lo, end - per)
            self._adjoint_block(start, kept[start - lo:end - lo])

    def _adjoint_block(self, lo: int, kept: list, native: bool = False) -> bool:
        """The adjoint of the steps ``lo, lo + 1, ...`` at once: from the field's
        Jacobians (``method.adjoint_block``) or, with ``native``, in one numba loop
        (``method.adjoint_native``; False where there is none)."""
        hi = lo + len(kept)
        t, h = self.ts[lo:hi], self.hs[lo:hi]
        sel = slice(self._starts[lo], self._starts[hi])
        step = self._step_of[sel] - lo
        thetas = (self.times[1:][sel] - t[step]) / h[step]
        how = self.method.adjoint_native if native else self.method.adjoint_block
        if native and self._ybar.dtype != np.float64:
            return False
        found = how(self.field, np.stack([y for y, _ in kept]), t, h,
                    np.stack([data for _, data in kept]), self._ybar, step, thetas,
                    self._G[sel], self._need_t)
        if found is None:
            return False
        ybar, pbar, tb, hb, tob = found
        self._ybar = ybar
        if self.field.params:
            self._acc(self.field.split(pbar))
        if self._need_t:
            if tob is not None:
                self._toutbar[sel] += tob
            last = len(self.hs) - 1
            for k in range(hi - 1, lo - 1, -1):
                if k == last:
                    self._Tbar += hb[k - lo]
                    self._tcarry = tb[k - lo] - hb[k - lo]
                else:
                    self._tcarry = tb[k - lo] + self._tcarry
        return True

    def _adjoint_step(self, n: int, y: np.ndarray, data: Any) -> None:
        sel = slice(self._starts[n], self._starts[n + 1])
        t, h = float(self.ts[n]), float(self.hs[n])
        thetas = (self.times[1:][sel] - t) / h
        self._ybar, tb, hb, tob = self.method.adjoint(
            self.field, y, t, h, data, self._ybar, thetas, self._G[sel], self._need_t,
            self._acc)
        if self._need_t:
            if tob is not None:
                self._toutbar[sel] += tob
            if n == len(self.hs) - 1:  # h = times[-1] - t_n
                self._Tbar += hb
                self._tcarry = tb - hb
            else:  # t_{n+1} = t_n + h_n, h_n fixed
                self._tcarry = tb + self._tcarry

    def _steps(self, lo: int, hi: int, y: np.ndarray, keep: Any) -> None:
        """Recompute steps ``lo .. hi-1`` from ``y``; ``keep(k, y_k, data_k)`` each."""
        m, f = self.method, self.field
        cache = m.first(f, y, float(self.ts[lo]))
        for k in range(lo, hi):
            keep(k, y, None)
            y_new, data, _ = m.step(f, y, float(self.ts[k]), float(self.hs[k]), cache,
                                    error=False)
            keep(k, y, data)
            cache = m.next_cache(data)
            y = y_new

    def _reverse(self, lo: int, hi: int, ylo: np.ndarray) -> None:
        if hi - lo <= self.budget:
            kept: dict = {}
            self._steps(lo, hi, ylo, lambda k, y, data: kept.__setitem__(k, (y, data)))
            self._adjoint_steps(lo, [kept[k] for k in range(lo, hi)])
            return
        stride = math.ceil((hi - lo) / self.budget)
        marks: dict = {}

        def keep(k: int, y: np.ndarray, data: Any) -> None:
            if data is None and (k - lo) % stride == 0:
                marks[k] = y

        self._steps(lo, hi, ylo, keep)
        starts = sorted(marks)
        for a, b in reversed(list(zip(starts, [*starts[1:], hi]))):
            self._reverse(a, b, marks.pop(a))

    # ---- replay as yaad operations --------------------------------------------------------

    def kept_steps(self, lo: int, hi: int) -> list:
        """The states and data of steps ``lo .. hi-1``: those kept with their data, the
        others recomputed from the checkpoint before them (the same numbers)."""
        out: dict = {}
        marks = [c for c, _, _ in self.ckpts]
        i = max(0, int(np.searchsorted(marks, lo, "right")) - 1)
        while i < len(self.ckpts) and self.ckpts[i][0] < hi:
            start, y, data = self.ckpts[i]
            end = self.ckpts[i + 1][0] if i + 1 < len(self.ckpts) else len(self.hs)
            if data is not None and end == start + 1:
                out[start] = (y, data)
            else:
                self._steps(start, end, y, lambda k, yk, dk: out.__setitem__(k, (yk, dk))
                            if dk is not None else None)
            i += 1
        return [out[k] for k in range(lo, hi)]

    def replay(self, y0: Any, times: Any, params: Sequence) -> Any:
        """The outputs recomputed on the same grid with yaad operations on tensors:
        ``y0`` (the state's shape), ``times`` (a tensor or an array), ``params`` the
        differentiable inputs of the field (tensors). Each step is the method's
        ``replay_step`` (Radau's stages an implicit function of the step's inputs)."""
        m = self.method
        field = self.field
        shape = field.shape

        def f(Y: Any, t: Any, ps: Sequence = params) -> Any:
            return field.call(Y.reshape(shape), t, ps).reshape(-1)

        ts, hs = self.ts, self.hs
        N = len(hs)
        timed = isinstance(times, Tensor)
        t0 = times[0] if timed else float(times[0])
        T = times[-1] if timed else float(times[-1])
        d = self.direction
        touts = times[1:]
        step_of = np.clip(np.searchsorted(d * ts, d * self.times[1:], "left") - 1, 0, N - 1)
        starts = np.searchsorted(step_of, np.arange(N + 1), "left")
        y = y0.reshape(-1)
        blocks = [y.reshape(1, -1)]
        cache = m.replay_first(f, y, t0)
        data = m.replay_data(field, self.kept_steps, ts, hs)
        for n in range(N):
            tn = t0 + (ts[n] - ts[0]) if n else t0
            h = T - tn if n == N - 1 else float(hs[n])
            Y, stages, cache = m.replay_step(f, field, list(params), y, tn, h, cache,
                                             next(data))
            a, b = starts[n], starts[n + 1]
            if b > a:
                blocks.append(m.dense_ops(y, h, stages, (touts[a:b] - tn) / h))
            y = Y
        return concatenate(blocks).reshape((len(self.times),) + tuple(shape))
