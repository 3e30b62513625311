"""``yaad.integrate``: ODE solutions differentiated as they were computed.

``odeint(func, y0, t, *args)`` (the signature of ``scipy.integrate.odeint`` and
``jax.experimental.ode.odeint``: ``func(y, t, *args)``) and ``solve_ivp(fun, t_span, y0,
t_eval=..., args=...)`` (SciPy's, ``fun(t, y, *args)``) integrate with yaad's own
adaptive methods (:mod:`yaad.ode`): Dormand-Prince 5(4) (``"dopri5"``, SciPy's
``"RK45"``) or, for stiff systems, Radau IIA of order 5 (``"Radau"``). The outputs at
the times in between are the method's dense output.

The gradient (``adjoint="discrete"``, the default) is the discrete adjoint of the
solver's own steps: the exact derivative of the computed solution (with the step sizes
the controller chose held fixed), as diffrax's ``RecursiveCheckpointAdjoint``. The
backward pass recomputes the steps from checkpoints (memory: ``checkpoints`` states per
level of recomputation) and takes one vector-Jacobian product of ``func`` per stage.
It is safe on stiff and strongly decaying systems, where integrating the state
backwards is not. Gradients reach ``y0``, the tensor arguments, the tensors ``func``
uses from outside, and the times (the initial time and the output times). Second
derivatives (``create_graph=True``) and forward mode (``jvp``, ``hessian``) replay the
steps as yaad operations (Radau's stages as an implicit function of each step's inputs).

``adjoint="backsolve"`` is the continuous adjoint of torchdiffeq's ``odeint_adjoint``
(the state, its adjoint and the parameters' gradient integrated backwards together by
SciPy's ``solve_ivp``, memory independent of the number of steps): only for non-stiff
problems, since the state integrated backwards grows like ``exp(|lambda| t)`` for each
decaying mode ``lambda`` and the gradient is then wrong or NaN.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np
import scipy  # (scipy.integrate and scipy.optimize: imported where first used)

from .core.grad_mode import enable_grad, no_grad, state
from .core.tensor import Tensor, make_tensor
from .implicit import (
    Closure,
    data_of,
    differentiable,
    forward_mode_on,
    local,
    not_converged,
    pack,
    record,
    unpack,
    vjp_of,
)
from .ode.field import Field, Swapped
from .ode.methods import method_of
from .ode.solver import Trajectory
from .ops.shape import concatenate

__all__ = ["odeint", "solve_ivp"]


def __dir__() -> list[str]:  # what dir() and completion list: the public names only
    return list(__all__)


ADJOINTS = ("discrete", "backsolve")


class _Discrete:
    """The node of an ODE solution whose backward is the discrete adjoint."""

    def __init__(self, trajectory: Trajectory, need_t: bool, shape: tuple[int, ...],
                 times: np.ndarray) -> None:
        self.name = trajectory.name
        self.trajectory = trajectory
        self.need_t = need_t
        self.shape = shape
        self.times = times
        self.xs: list[np.ndarray] = []

    def backward(self, inputs: tuple[Any, ...], xs: tuple[Any, ...],
                 grads: tuple[Any, ...]) -> tuple[Any, ...]:
        (g,) = grads
        if state.enabled or state.levels:  # recorded: replay the steps as yaad ops
            loc = [local(x) for x in inputs]
            times = loc[1] if self.need_t else self.times
            with enable_grad():
                out = self.trajectory.replay(loc[0], times, loc[1 + self.need_t:])
            return tuple(vjp_of([out], loc, [g], True, True))
        G = np.asarray(data_of(g)).reshape(len(self.times), -1)
        ybar, tbar, pbars = self.trajectory.backward(G, self.need_t)
        front = [ybar.reshape(self.shape)] + ([tbar] if self.need_t else [])
        return (*front, *pbars)


class _Backsolve:
    """A solution by SciPy's ``solve_ivp`` and its continuous adjoint (backwards)."""

    def __init__(self, field: Field, times: np.ndarray, method: str, rtol: float,
                 atol: float, need_t: bool, shape: tuple[int, ...]) -> None:
        self.name = "integrate.odeint"
        self.field = field
        self.times = times
        self.method = {"dopri5": "RK45", "rk45": "RK45", "radau": "Radau"}.get(
            method.lower(), method)
        self.rtol = rtol
        self.atol = atol
        self.need_t = need_t
        self.shape = shape
        self.xs: list[np.ndarray] = []

    def integrate(self, fun: Callable[..., Any], state: np.ndarray, t0: float, t1: float,
                  what: str) -> np.ndarray:
        sol = scipy.integrate.solve_ivp(fun, (t0, t1), state, method=self.method,
                                        rtol=self.rtol, atol=self.atol, t_eval=[t1])
        if sol.status != 0 or not sol.t.size:
            raise not_converged(
                f"{self.name} ({what}, scipy.integrate.solve_ivp method={self.method!r})",
                float("nan"), self.rtol, int(sol.nfev),
                f"The integration from t = {t0} stopped: {sol.message} Loosen rtol/atol or "
                f"try another method (e.g. 'LSODA' or 'Radau' for a stiff system).")
        end: np.ndarray = sol.y[:, -1]
        return end

    def forward(self, y0: np.ndarray) -> np.ndarray:
        likes = [y0]

        def fun(t: float, v: np.ndarray) -> np.ndarray:
            return pack([self.field.value(unpack(v, likes)[0], t)], likes)

        ys = [y0]
        state_ = pack([y0], likes)
        for t0, t1 in zip(self.times[:-1], self.times[1:]):
            state_ = self.integrate(fun, state_, t0, t1, "forward")
            ys.append(unpack(state_, likes)[0])
        return np.stack(ys)

    def backward(self, inputs: tuple[Any, ...], xs: tuple[Any, ...],
                 grads: tuple[Any, ...]) -> tuple[Any, ...]:
        if state.enabled or forward_mode_on():
            raise NotImplementedError(
                f"{self.name}: second derivatives (create_graph=True, hessian, hvp) through "
                f"adjoint='backsolve' are not implemented; use adjoint='discrete' (the "
                f"default), whose steps are replayed as yaad operations for them")
        field = self.field
        g = np.asarray(data_of(grads[0])).reshape(len(self.times), -1)
        ys = np.asarray(data_of(xs[0])).reshape(len(self.times), -1)
        params = field.params
        likes = [ys[0], ys[0], *params]

        def augmented(t: float, v: np.ndarray) -> np.ndarray:
            y, a, *_ = unpack(v, likes)
            yb, _, pbars = field.vjp(y, t, a)
            return pack([field.value(y, t), -yb, *[-p for p in pbars]], likes)

        a = g[-1]
        pbar = [np.zeros(np.shape(p), np.result_type(p, float)) for p in params]
        for i in range(len(self.times) - 1, 0, -1):
            state_ = pack([ys[i], a, *pbar], likes)
            state_ = self.integrate(augmented, state_, self.times[i], self.times[i - 1],
                                    "adjoint")
            _, a, *pbar = unpack(state_, likes)
            a = a + g[i - 1]
        front = [a.reshape(self.shape)]
        if self.need_t:
            # dy(t_i)/dt_i = f(y_i, t_i); dy(t_i)/dt_0 = -Phi(t_i, t_0) f(y_0, t_0)
            tbar = np.array([np.vdot(g[i], field.value(ys[i], self.times[i])).real
                             for i in range(len(self.times))])
            tbar[0] = -np.vdot(a - g[0], field.value(ys[0], self.times[0])).real
            front.append(tbar)
        return (*front, *pbar)

    def jvp(self, inputs: tuple[Any, ...], xs: tuple[Any, ...], ts: tuple[Any, ...]) -> Any:
        raise NotImplementedError(
            f"{self.name}: forward mode (jvp, jacfwd, hessian, hvp) through "
            f"adjoint='backsolve' is not implemented; use adjoint='discrete' (the default)")


def odeint(func: Callable[..., Any], y0: Any, t: Any, *args: Any, rtol: float = 1e-8,
           atol: float = 1e-10, method: str = "dopri5", adjoint: str = "discrete",
           checkpoints: int | None = None, max_steps: int = 100_000,
           compiled: bool = True) -> Any:
    """Integrate ``dy/dt = func(y, t, *args)`` and return ``y`` at the times ``t``.

    Parameters
    ----------
    func : callable
        ``func(y, t, *args)`` written with yaad (or NumPy) functions, returning an array
        of ``y``'s shape. It may use tensors it does not receive; those that require
        grad get gradients. ``t`` is a 0-d tensor (a float with ``compiled=False``,
        unless the times require grad).
    y0 : Tensor or array_like
        The initial state (any shape, real or complex; real for ``"Radau"``).
    t : Tensor or array_like
        The times, strictly monotonic, starting at the time of ``y0``. A tensor that
        requires grad gets the gradient (the vector field at the output times, through
        the computed steps).
    *args : Tensor, array_like or any
        Further arguments of ``func``; tensors that require grad get gradients.
    rtol : float, optional
        The relative tolerance of the steps' local error.
    atol : float, optional
        The absolute tolerance of the steps' local error.
    method : str
        ``"dopri5"`` (or ``"RK45"``, Dormand-Prince 5(4), explicit) or ``"Radau"``
        (Radau IIA of order 5, implicit: for stiff systems). With
        ``adjoint="backsolve"``, any method of ``scipy.integrate.solve_ivp``.
    adjoint : {"discrete", "backsolve"}
        ``"discrete"``: the exact gradient of the computed solution, from the steps
        recomputed at checkpoints. ``"backsolve"``: the continuous adjoint, integrated
        backwards with the state (memory independent of the steps, but wrong on stiff
        or strongly decaying systems: use only for non-stiff ones).
    checkpoints : int, optional
        The discrete adjoint's memory: the most states kept at once per level of
        recomputation (the backward pass recomputes the steps in between). Default: as
        many as fit in 64 MiB (every step's state and stages for most problems, so that
        nothing is recomputed).
    max_steps : int
        The most steps before :class:`ConvergenceError`.
    compiled : bool
        Run ``func`` and its vector-Jacobian product as compiled programs
        (``yaad.compile``; not when ``func`` captures tensors that require grad), from the
        second solve with the same ``func`` on (a function made anew for every solve runs
        eagerly: recording its programs each time would cost more than they save). With
        numba installed and a real state, the steps and the adjoint then run in numba
        loops over those programs (``method="dopri5"``; Radau's Jacobians likewise).

    Returns
    -------
    Tensor
        ``y(t)``, shape ``(len(t),) + y0.shape``; ``y(t[0]) = y0``.

    Raises
    ------
    ConvergenceError
        If the step size underflows (a singularity; a stiff system with an explicit
        method) or ``max_steps`` is reached.
    """
    name = "integrate.odeint"
    times = np.asarray(data_of(t), dtype=float)
    if times.ndim != 1 or times.size < 2:
        raise ValueError(f"{name}: t must be a vector of at least two times, not "
                         f"of shape {times.shape}")
    steps = np.diff(times)
    if not (np.all(steps > 0) or np.all(steps < 0)):
        raise ValueError(f"{name}: the times must be strictly monotonic")
    if adjoint not in ADJOINTS:
        raise ValueError(f"{name}: adjoint must be one of {ADJOINTS}, not {adjoint!r}")
    y0a = np.asarray(data_of(y0))
    if y0a.dtype.kind not in "fc":
        y0a = y0a.astype(float)
    need_t = differentiable(t)
    slots = [k for k, p in enumerate(args) if differentiable(p)]
    plain = [p.detach() if k in slots else p for k, p in enumerate(args)]
    closure = Closure(lambda y: func(y, float(times[0]), *plain), name)
    forward_mode = bool(state.levels) and (
        differentiable(y0) or need_t or bool(slots) or state.enabled)
    if forward_mode:  # tangents: the steps run as yaad operations (no discovery needed)
        with no_grad():
            first = func(make_tensor(y0a), float(times[0]), *plain)
    else:
        first = closure.discover(make_tensor(y0a))
    if np.shape(first) != y0a.shape:
        raise ValueError(f"{name}: func returned shape {np.shape(first)} for a "
                         f"state of shape {y0a.shape}")
    if np.iscomplexobj(data_of(first)) and y0a.dtype.kind != "c":
        raise TypeError(f"{name}: func returned complex values for a real y0; "
                        f"start from a complex y0 (y0 + 0j)")
    m = method_of(method, rtol, atol, name) if adjoint != "backsolve" else None
    if m is not None and m.name == "radau" and y0a.dtype.kind == "c":
        raise TypeError(f"{name}: method='Radau' takes a real state, not {y0a.dtype}; "
                        f"integrate the real and imaginary parts as a real state of twice "
                        f"the size, or use method='dopri5'")
    compiled = compiled and not forward_mode
    for _ in range(3):
        field = Field(func, args, slots, closure, y0a.shape, need_t, compiled)
        if adjoint == "backsolve":
            problem: Any = _Backsolve(field, times, method, rtol, atol, need_t, y0a.shape)
            run = functools.partial(problem.forward, y0a)
        else:
            trajectory = Trajectory(m, field, times, checkpoints, max_steps, name)
            run = functools.partial(trajectory.run, y0a.reshape(-1))
        if forward_mode:  # (the replay below records what func uses)
            outs = run()
            break
        # every call of func is checked for a tensor requiring grad from outside that the
        # first call did not use (a branch taken later): the solve is run again with it
        outs, grew = field.watched(run)
        if not grew:
            break
        compiled = False
    else:
        raise RuntimeError(f"{name}: func uses a new tensor that requires grad from outside "
                           f"on every solve (one made inside func?); pass the tensors it "
                           f"needs as arguments (odeint(func, y0, t, args=(...)))")
    outs = outs.reshape((len(times),) + y0a.shape)
    y0t = y0 if isinstance(y0, Tensor) else make_tensor(y0a)
    inputs = [y0t, *([t] if need_t else []), *[args[k] for k in slots], *closure.captured]
    tensors = isinstance(y0, Tensor) or bool(slots) or bool(closure.found) or need_t
    if adjoint == "backsolve":
        problem.xs = [outs]
        return record(problem, inputs, tensors)[0]
    if forward_mode:
        params = [args[k] for k in slots]
        with enable_grad():
            return trajectory.replay(y0t, t if need_t else times, params)
    problem = _Discrete(trajectory, need_t, y0a.shape, times)
    problem.xs = [outs]
    return record(problem, inputs, tensors)[0]


def _as_times(parts: Sequence[Any]) -> Any:
    """The 1-d times from scalars and vectors, a tensor if any part is one."""
    if any(isinstance(p, Tensor) for p in parts):
        return concatenate([p.reshape(-1) if isinstance(p, Tensor)
                            else np.asarray(p, float).reshape(-1) for p in parts])
    return np.concatenate([np.asarray(p, float).reshape(-1) for p in parts])


def solve_ivp(fun: Callable[..., Any], t_span: Sequence[Any], y0: Any, t_eval: Any = None,
              args: tuple[Any, ...] = (), method: str = "RK45", rtol: float = 1e-8,
              atol: float = 1e-10, adjoint: str = "discrete",
              checkpoints: int | None = None, max_steps: int = 100_000,
              compiled: bool = True) -> scipy.optimize.OptimizeResult:
    """Solve ``dy/dt = fun(t, y, *args)`` (``scipy.integrate.solve_ivp``), differentiable.

    Parameters
    ----------
    fun : callable
        ``fun(t, y, *args)``, written with yaad functions, ``y`` a vector.
    t_span : tuple
        ``(t0, t1)`` (floats or 0-d tensors; a tensor that requires grad gets the
        gradient).
    y0 : Tensor or array_like
        The initial state, a vector (real or complex).
    t_eval : Tensor or array_like, optional
        The output times; default ``(t0, t1)``.
    args : tuple
        Further arguments of ``fun``; tensors that require grad get gradients.
    method : str
        ``"RK45"`` (Dormand-Prince 5(4), yaad's ``"dopri5"``) or ``"Radau"`` (stiff).
    rtol : float, optional
        As in :func:`odeint`.
    atol : float, optional
        As in :func:`odeint`.
    adjoint : str, optional
        As in :func:`odeint`.
    checkpoints : int or None, optional
        As in :func:`odeint`.
    max_steps : int, optional
        As in :func:`odeint`.
    compiled : bool, optional
        As in :func:`odeint`.

    Returns
    -------
    scipy.optimize.OptimizeResult
        ``t`` (the output times, an array), ``y`` (a Tensor of shape ``(n, len(t))``,
        differentiable), ``success`` and ``message``.
    """
    if np.ndim(data_of(y0)) != 1:
        raise ValueError(f"integrate.solve_ivp: y0 must be a vector, not of shape "
                         f"{np.shape(data_of(y0))}")
    t0, t1 = t_span[0], t_span[1]
    first = None  # the output at t_eval[0] when it is t_span[0] (y0), as a function of both
    if t_eval is None:
        times, drop = _as_times([t0, t1]), 0
    elif float(np.asarray(data_of(t_eval), float).reshape(-1)[0]) != float(data_of(t0)):
        times, drop = _as_times([t0, t_eval]), 1
    else:
        # the solution starts at t_span[0]; t_eval[0] is only where the first output is
        # read: y(t_eval[0]) = y0 + (t_eval[0] - t0) f(t0, y0) to first order, a zero step
        # whose derivatives are the flow's (f for t_eval[0], -f for t0)
        te = t_eval if isinstance(t_eval, Tensor) else np.asarray(t_eval, float)
        te = te.reshape(-1)
        times, drop = _as_times([t0, te[1:]]), 0
        if differentiable(t0) or differentiable(te):
            first = te[0]
    ys = odeint(Swapped(fun), y0, times, *args, rtol=rtol, atol=atol,
                method=method, adjoint=adjoint, checkpoints=checkpoints,
                max_steps=max_steps, compiled=compiled)[drop:]
    if first is not None:
        y0t = y0 if isinstance(y0, Tensor) else make_tensor(np.asarray(y0, ys.dtype))
        start = y0t + (first - t0) * fun(t0, y0t, *args)
        ys = concatenate([start.reshape(1, -1), ys[1:]])
    y = ys.T if isinstance(ys, Tensor) else np.asarray(ys).T
    t_out = np.asarray(data_of(times), float)[drop:]
    return scipy.optimize.OptimizeResult(t=t_out, y=y, success=True,
                                         status=0, message="The solver successfully reached "
                                         "the end of the integration interval.")
