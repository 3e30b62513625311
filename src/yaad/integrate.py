"""``yaad.integrate``: ODE solutions differentiated by the adjoint method.

``odeint(func, y0, t, *args)`` (the signature of ``scipy.integrate.odeint`` and
``jax.experimental.ode.odeint``: ``func(y, t, *args)``) and ``solve_ivp(fun, t_span, y0,
t_eval=..., args=...)`` (SciPy's, ``fun(t, y, *args)``) integrate with SciPy's
``solve_ivp`` (``DOP853`` by default) and record one node. Its backward integrates the
adjoint system backwards in time, as torchdiffeq's ``odeint_adjoint`` does::

    dy/dt = f(y, t),   da/dt = -(df/dy)^T a,   dp/dt = -(df/dtheta)^T a

with ``a`` the gradient of the state, jumping by the gradient of each output at its time,
and ``p`` accumulating the gradient of the parameters: vector-Jacobian products of ``f``
only, and memory that does not grow with the number of steps. The state may be real or
complex (integrated as its real and imaginary parts), of any shape. Gradients flow to
``y0``, to tensor arguments in ``args`` and to tensors ``func`` uses from outside; not to
the times. Second derivatives are not implemented (they raise).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import scipy  # (scipy.integrate and scipy.optimize: imported where first used)

from .core.grad_mode import no_grad
from .core.tensor import Tensor, make_tensor
from .implicit import (
    Closure,
    data_of,
    differentiable,
    first_order_only,
    leaf,
    not_converged,
    pack,
    record,
    unpack,
    vjp_of,
)

__all__ = ["odeint", "solve_ivp"]


class _Ode:
    """A solution of ``dy/dt = func(y, t, *params)`` at ``times`` and its adjoint."""

    def __init__(self, func: Callable[..., Any], closure: Closure, params: list[Any],
                 slots: list[int], times: np.ndarray, method: str, rtol: float,
                 atol: float) -> None:
        self.name = "integrate.odeint"
        self.func = func
        self.closure = closure
        self.params = params
        self.slots = slots
        self.times = times
        self.method = method
        self.rtol = rtol
        self.atol = atol
        self.xs: list[np.ndarray] = []

    def rhs(self, y: Any, t: float, inputs: Sequence[Any]) -> Any:
        """``func(y, t, params)`` with the node's inputs (after ``y0``) in place of the
        differentiable parameters and the captured tensors."""
        full = list(self.params)
        for k, p in zip(self.slots, inputs):
            full[k] = p
        return self.closure.call(lambda: self.func(y, t, *full), inputs[len(self.slots):])

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

    def forward(self, y0: np.ndarray, arrays: list[np.ndarray]) -> np.ndarray:
        likes = [y0]
        full = list(self.params)
        for k in self.slots:
            full[k] = arrays[k]

        def fun(t: float, v: np.ndarray) -> np.ndarray:
            with no_grad():
                return pack([self.func(unpack(v, likes)[0], t, *full)], likes)

        ys = [y0]
        state = pack([y0], likes)
        for t0, t1 in zip(self.times[:-1], self.times[1:]):
            state = self.integrate(fun, state, t0, t1, "forward")
            ys.append(unpack(state, likes)[0])
        return np.stack(ys)

    def backward(self, inputs: tuple[Any, ...], xs: tuple[Any, ...],
                 grads: tuple[Any, ...]) -> tuple[Any, ...]:
        first_order_only(self.name)
        (g,) = grads
        g = np.asarray(g)
        ys = self.xs[0]
        params = [np.asarray(p) for p in inputs[1:]]
        likes = [ys[0], ys[0], *params]

        def augmented(t: float, v: np.ndarray) -> np.ndarray:
            y, a, *_ = unpack(v, likes)
            yl = leaf(y)
            pl = [leaf(p) for p in params]
            f = self.rhs(yl, t, pl)
            vj = vjp_of([f], [yl, *pl], [a], False, False)
            return pack([data_of(f), *[-x for x in vj]], likes)

        a = g[-1]
        pbar = [np.zeros(p.shape, p.dtype) for p in params]
        for i in range(len(self.times) - 1, 0, -1):
            state = pack([ys[i], a, *pbar], likes)
            state = self.integrate(augmented, state, self.times[i], self.times[i - 1],
                                   "adjoint")
            _, a, *pbar = unpack(state, likes)
            a = a + g[i - 1]
        return (a, *pbar)


def odeint(func: Callable[..., Any], y0: Any, t: Any, *args: Any, rtol: float = 1e-8,
           atol: float = 1e-10, method: str = "DOP853") -> Any:
    """Integrate ``dy/dt = func(y, t, *args)`` and return ``y`` at the times ``t``.

    Parameters
    ----------
    func : callable
        ``func(y, t, *args)`` written with yaad (or NumPy) functions, returning an array
        of ``y``'s shape. It may use tensors it does not receive; those that require
        grad get gradients.
    y0 : Tensor or array_like
        The initial state (any shape, real or complex).
    t : array_like
        The times, monotonic, starting at the time of ``y0``.
    *args : Tensor, array_like or any
        Further arguments of ``func``; tensors that require grad get gradients.
    rtol, atol : float
        Tolerances of the forward and of the adjoint integration.
    method : str
        A method of ``scipy.integrate.solve_ivp``.

    Returns
    -------
    Tensor
        ``y(t)``, shape ``(len(t),) + y0.shape``; ``y(t[0]) = y0``. Its backward is the
        adjoint method (constant memory in the number of steps).

    Raises
    ------
    ConvergenceError
        If SciPy's integrator stops early (forward or adjoint).
    """
    times = np.asarray(data_of(t), dtype=float)
    if times.ndim != 1 or times.size < 2:
        raise ValueError(f"integrate.odeint: t must be a vector of at least two times, not "
                         f"of shape {times.shape}")
    steps = np.diff(times)
    if not (np.all(steps > 0) or np.all(steps < 0)):
        raise ValueError("integrate.odeint: the times must be strictly monotonic")
    y0a = np.asarray(data_of(y0))
    if y0a.dtype.kind not in "fc":
        y0a = y0a.astype(float)
    slots = [k for k, p in enumerate(args) if differentiable(p)]
    plain = [p.detach() if k in slots else p for k, p in enumerate(args)]
    closure = Closure(lambda y: func(y, float(times[0]), *plain), "integrate.odeint")
    first = closure.discover(make_tensor(y0a))
    if np.shape(first) != y0a.shape:
        raise ValueError(f"integrate.odeint: func returned shape {np.shape(first)} for a "
                         f"state of shape {y0a.shape}")
    if np.iscomplexobj(data_of(first)) and y0a.dtype.kind != "c":
        raise TypeError("integrate.odeint: func returned complex values for a real y0; "
                        "start from a complex y0 (y0 + 0j)")
    problem = _Ode(func, closure, list(args), slots, times, method, rtol, atol)
    arrays = [data_of(p) if isinstance(p, Tensor) else p for p in args]
    problem.xs = [problem.forward(y0a, arrays)]
    y0t = y0 if isinstance(y0, Tensor) else make_tensor(y0a)
    inputs = [y0t, *[args[k] for k in slots], *closure.captured]
    tensors = isinstance(y0, Tensor) or bool(slots) or bool(closure.found)
    return record(problem, inputs, tensors)[0]


def solve_ivp(fun: Callable[..., Any], t_span: Sequence[float], y0: Any, t_eval: Any = None,
              args: tuple[Any, ...] = (), method: str = "DOP853", rtol: float = 1e-8,
              atol: float = 1e-10) -> scipy.optimize.OptimizeResult:
    """Solve ``dy/dt = fun(t, y, *args)`` (``scipy.integrate.solve_ivp``), differentiable.

    Parameters
    ----------
    fun : callable
        ``fun(t, y, *args)``, written with yaad functions, ``y`` a vector.
    t_span : tuple
        ``(t0, t1)``.
    y0 : Tensor or array_like
        The initial state, a vector (real or complex).
    t_eval : array_like, optional
        The output times, from ``t0``; default ``(t0, t1)``.
    args : tuple
        Further arguments of ``fun``; tensors that require grad get gradients.
    method, rtol, atol
        As in SciPy.

    Returns
    -------
    scipy.optimize.OptimizeResult
        ``t`` (the output times), ``y`` (a Tensor of shape ``(n, len(t))``, differentiable
        by the adjoint method), ``success`` and ``message``.
    """
    times = np.asarray(t_span, dtype=float) if t_eval is None else np.asarray(t_eval, float)
    if np.ndim(data_of(y0)) != 1:
        raise ValueError(f"integrate.solve_ivp: y0 must be a vector, not of shape "
                         f"{np.shape(data_of(y0))}")
    if times.size and times[0] != t_span[0]:
        times = np.concatenate([[float(t_span[0])], times])
        ys = odeint(lambda y, t, *a: fun(t, y, *a), y0, times, *args, rtol=rtol, atol=atol,
                    method=method)[1:]
    else:
        ys = odeint(lambda y, t, *a: fun(t, y, *a), y0, times, *args, rtol=rtol, atol=atol,
                    method=method)
    y = ys.T if isinstance(ys, Tensor) else np.asarray(ys).T
    return scipy.optimize.OptimizeResult(t=times[-y.shape[1]:], y=y, success=True,
                                         status=0, message="The solver successfully reached "
                                         "the end of the integration interval.")
