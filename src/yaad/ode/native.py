"""The solver's loops over native programs, compiled by numba (imported where first used).

A vector field compiled by ``yaad.compile`` into a native program (``compiled/native.py``:
a table of instructions over flat workspaces, run by ``native_kernels.execute``) can be
run from numba without returning to Python: the Dormand-Prince steps of a forward pass,
the step size controller and the dense output (:func:`dopri5_steps`), and a program at
many points at once (:func:`execute_rows`: the field's Jacobians, one vector-Jacobian
product per row). Python then costs a few calls a solve instead of tens of microseconds
a step. The arithmetic is that of ``methods.Dopri5`` and ``solver.Trajectory.run`` (the
same formulas; sums in another order, so values agree to rounding).

Only real (float64) states and parameters; everything else stays with the NumPy paths.
"""

from __future__ import annotations

import numba
import numpy as np

from ..compiled.native_kernels import execute

jit = numba.njit(cache=True, error_model="numpy")

# dopri5_steps' outcomes
DONE, FULL, SMALL, MAX_STEPS, FAILED = 0, 1, 2, 3, 4


@jit
def execute_rows(code, idx, R, Z, ins, X, outs, Y):
    """Run the program once per row of ``X``: the row's columns into the input regions
    ``ins`` (rows ``(offset, size)`` in ``R``, in column order), then the output regions
    ``outs`` into that row of ``Y``. Returns -1, or the first row the program could not
    run (the caller then takes its NumPy path)."""
    for p in range(X.shape[0]):
        c = 0
        for r in range(ins.shape[0]):
            o = ins[r, 0]
            for k in range(ins[r, 1]):
                R[o + k] = X[p, c + k]
            c += ins[r, 1]
        if execute(code, idx, R, Z):
            return p
        c = 0
        for r in range(outs.shape[0]):
            o = outs[r, 0]
            for k in range(outs[r, 1]):
                Y[p, c + k] = R[o + k]
            c += outs[r, 1]
    return -1


@jit
def dopri5_steps(code, idx, R, Z, io, E, PT, y, k1, state, touts, outs, ys, Ks, ts, hs):
    """Dormand-Prince steps from ``state`` until the end, ``len(hs)`` accepted steps, or
    a failure; the step itself is the native program (inputs ``y, t, h, k1`` at the
    offsets ``io[0:4]`` (-1: not read), results ``y_new, K`` at ``io[4:6]``).

    ``state``: ``t, T, h, rejected, direction, rtol, atol, exponent, j (outputs done),
    steps done, max_steps`` (floats), updated in place with ``y`` and ``k1`` (the state
    and the next first stage). Each accepted step writes its start ``ys[n]``, stages
    ``Ks[n]``, end time ``ts[n]`` and size ``hs[n]``, and the outputs at ``touts`` inside
    it into ``outs``. Returns ``(outcome, n)``: ``DONE``, ``FULL`` (``hs`` is full: call
    again), ``SMALL`` (the step size underflowed), ``MAX_STEPS``, ``FAILED`` (the program
    could not run: the caller takes the NumPy path)."""
    t, T, h = state[0], state[1], state[2]
    rejected = state[3] != 0
    d, rtol, atol, exponent = state[4], state[5], state[6], state[7]
    j = int(state[8])
    done = int(state[9])
    max_steps = int(state[10])
    N = y.size
    yo, to, ho, ko, Yo, Ko = io[0], io[1], io[2], io[3], io[4], io[5]
    M = len(touts)
    cap = hs.size
    n = 0
    outcome = FULL
    while n < cap:
        remaining = T - t
        last = h >= abs(remaining)
        hh = remaining if last else d * h
        if abs(hh) < 10 * np.spacing(abs(t)) or not np.isfinite(hh):
            outcome = SMALL
            break
        for k in range(N):
            R[yo + k] = y[k]
            R[ko + k] = k1[k]
        if to >= 0:
            R[to] = t
        if ho >= 0:
            R[ho] = hh
        if execute(code, idx, R, Z):
            outcome = FAILED
            break
        # the error estimate: rms(h (E @ K) / (atol + rtol max(|y|, |y_new|)))
        # (E @ K by BLAS, as NumPy's: the estimate is a difference of two solutions, so
        # another order of its sum changes it relatively by ~1e-9, and the steps with it)
        EK = np.dot(E, R[Ko:Ko + 7 * N].reshape((7, N)))
        s = 0.0
        for k in range(N):
            scale = atol + rtol * max(abs(y[k]), abs(R[Yo + k]))
            e = hh * EK[k] / scale
            s += e * e
        err = np.sqrt(s / N) if N else 0.0
        if not err <= 1:  # (also NaN)
            factor = max(0.2, 0.9 * err ** exponent) if np.isfinite(err) else 0.2
            h = abs(hh) * factor
            rejected = True
            continue
        t_new = T if last else t + hh
        # the outputs inside the step: y + h (W @ K), W = theta^(1..4) @ P.T (by BLAS, as
        # Dopri5.dense computes them)
        first = j
        while j < M and d * (touts[j] - t_new) <= 0:
            j += 1
        if j > first:
            powers = np.empty((j - first, 4))
            for m in range(j - first):
                theta = (touts[first + m] - t) / hh
                for q in range(4):
                    powers[m, q] = theta ** float(q + 1)
            WK = np.dot(np.dot(powers, PT), R[Ko:Ko + 7 * N].reshape((7, N)))
            for m in range(j - first):
                for k in range(N):
                    outs[1 + first + m, k] = y[k] + hh * WK[m, k]
        for k in range(N):
            ys[n, k] = y[k]
            for i in range(7):
                Ks[n, i, k] = R[Ko + i * N + k]
        ts[n] = t_new
        hs[n] = hh
        n += 1
        if last:
            outcome = DONE
            break
        if done + n >= max_steps:
            outcome = MAX_STEPS
            break
        factor = 10.0 if err == 0 else min(10.0, 0.9 * err ** exponent)
        if rejected:
            factor = min(1.0, factor)
        h = abs(hh) * factor
        rejected = False
        t = t_new
        for k in range(N):
            y[k] = R[Yo + k]
            k1[k] = R[Ko + 6 * N + k]
    state[0] = t
    state[2] = h
    state[3] = 1.0 if rejected else 0.0
    state[8] = j
    state[9] = done + n
    return outcome, n


@jit
def _outputs_adjoint(m, hm, B, K, ybar, acc, Kbar, starts, W, dW, thetas, G, need_t,
                     toutbar):
    """Step ``m``'s end and outputs: their gradients into ``acc`` (the state's) and
    ``Kbar`` (the stages'); returns the step's time and size gradients so far."""
    N = ybar.size
    tb_m = 0.0
    hb_m = 0.0
    for k in range(N):
        acc[k] = ybar[k]
        s = 0.0
        for i in range(7):
            Kbar[i, k] = hm * B[i] * ybar[k]
            s += B[i] * K[m, i, k]
        hb_m += ybar[k] * s  # (y_new = y + h B K)
    for o in range(starts[m], starts[m + 1]):  # y + h W K, theta = (tout - t) / h
        for k in range(N):
            acc[k] += G[o, k]
            s = 0.0
            ds = 0.0
            for i in range(7):
                Kbar[i, k] += hm * W[o, i] * G[o, k]
                s += W[o, i] * K[m, i, k]
                ds += dW[o, i] * K[m, i, k]
            hb_m += G[o, k] * s
            if need_t:
                toutbar[o] += G[o, k] * ds
        if need_t:
            tb_m -= toutbar[o]
            hb_m -= toutbar[o] * thetas[o]
    return tb_m, hb_m


@jit
def dopri5_adjoint(code, idx, R, Z, ins, outs, A, B, C, y, t, h, K, ybar, starts, W, dW,
                   thetas, G, need_t, pbar, tbar, hbar, toutbar):
    """The adjoint of Dormand-Prince steps ``M-1, ..., 0`` (``methods.Dopri5.adjoint``
    step by step), each stage's vector-Jacobian product the native program: inputs
    ``y, t, cot`` at the regions ``ins`` (offset -1: not read), results ``ybar[, tbar],
    pbar_1, ...`` at ``outs`` (``tbar`` where ``need_t``).

    ``y (M, n)``, ``t, h (M,)``, ``K (M, 7, n)``: the steps; ``ybar``: the gradient of
    the state after the last, updated in place to that of the first one's start; the
    outputs of step ``m`` are ``starts[m]:starts[m + 1]`` of ``G (O, n)``, at ``thetas``
    with dense weights ``W`` and their derivatives ``dW`` (``(O, 7)``). Adds the
    parameters' gradients to ``pbar`` (flat) and writes each step's time and size
    gradients ``tbar, hbar (M,)`` and the output times' ``toutbar (O,)``. Returns -1, or
    the step whose program could not run (the caller then takes the NumPy path)."""
    M, N = y.shape
    yo, to, co = ins[0, 0], ins[1, 0], ins[2, 0]
    Kbar = np.empty((7, N))
    acc = np.empty(N)
    for m in range(M - 1, -1, -1):
        hm = h[m]
        tb_m, hb_m = _outputs_adjoint(m, hm, B, K, ybar, acc, Kbar, starts, W, dW, thetas,
                                      G, need_t, toutbar)
        for i in range(6, -1, -1):
            if not np.any(Kbar[i] != 0):
                continue
            # the stage's VJP: (Y_i, t + c_i h, Kbar_i) into the program
            for k in range(N):
                s = 0.0
                for j in range(i):
                    s += A[i, j] * K[m, j, k]
                if yo >= 0:
                    R[yo + k] = y[m, k] + hm * s
                if co >= 0:
                    R[co + k] = Kbar[i, k]
            if to >= 0:
                R[to] = t[m] + C[i] * hm
            if execute(code, idx, R, Z):
                return m
            o = outs[0, 0]
            for k in range(N):
                yb = R[o + k]
                acc[k] += yb
                s = 0.0
                for j in range(i):
                    Kbar[j, k] += hm * A[i, j] * yb
                    s += A[i, j] * K[m, j, k]
                hb_m += yb * s
            tb = R[outs[1, 0]] if need_t else 0.0
            hb_m += C[i] * tb
            tb_m += tb
            c = 0
            for r in range(1 + need_t, outs.shape[0]):
                o = outs[r, 0]
                for k in range(outs[r, 1]):
                    pbar[c + k] += R[o + k]
                c += outs[r, 1]
        ybar[:] = acc
        tbar[m] = tb_m
        hbar[m] = hb_m
    return -1
