"""Implicit differentiation: gradients through converged iterations, without unrolling.

A solution ``x*`` of ``F(x, theta) = 0`` (a root, or a fixed point ``x = f(x, theta)``
with ``F = f(x) - x``) depends on ``theta`` through the implicit function theorem:
``dx*/dtheta = -(dF/dx)^-1 dF/dtheta``. Its vector-Jacobian product for a gradient ``g``
of ``x*`` is one adjoint linear solve and one VJP, as in jaxopt::

    (dF/dx)^T w = -g,          grad_theta = (dF/dtheta)^T w

Only vector-Jacobian products of ``F`` enter (``dF/dx`` is never formed): the solve is
GMRES (SciPy's) on the real vector space of ``x`` (real and imaginary parts), so it is
right for non-holomorphic complex maps too. The forward iteration is not recorded:
memory is that of one evaluation of ``F``, whatever the number of iterations.

Second derivatives (``create_graph=True``, ``grad`` of ``grad``): the adjoint ``w`` is
itself the root of ``(dF/dx)^T w + g = 0``, linear in ``w``, with parameters ``g``, ``x*``
and ``theta``; it is computed by this same mechanism, so its own derivatives are implicit
too (exact at convergence, at the cost of double-backward through ``F``). Forward mode
(``jvp``) does not go through these solvers.

The functions may use tensors they do not receive as arguments (a closure over the
parameters): those that require grad are found while ``F`` runs, as ``yaad.checkpoint``
finds them, on every call of the forward solve (a tensor used only on a branch taken
after the first call too), and get their gradients too.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import scipy  # (scipy.optimize is imported where first used)
import scipy.sparse.linalg as spla

from .core.arguments import no_derivative
from .core.engine import run_backward
from .core.grad_mode import enable_grad, no_grad, state
from .core.graph import clock
from .core.levels import tangent_of, with_tangent
from .core.tensor import Tensor, make_tensor
from .function import Function, FunctionCtx
from .modes.batched_values import BatchAxis, batch_sizes, per_example
from .modes.forward import forward_level
from .modes.substitute import with_substitute
from .ops.elementwise import positive, real

__all__ = ["fixed_point", "root", "ConvergenceError"]


class ConvergenceError(RuntimeError):
    """An iterative solver stopped before reaching its tolerance."""


def not_converged(solver: str, reached: float, tol: float, iterations: int,
                  advice: str) -> ConvergenceError:
    """The error of a solver that stopped early, naming what it reached."""
    return ConvergenceError(
        f"{solver}: no convergence after {iterations} iterations: the relative residual is "
        f"{reached:.3g}, above the tolerance {tol:.3g}. {advice} "
        f"(see docs/errors.md#solver-convergence)")


# ---- functions and the tensors they capture -----------------------------------------


class Closure:
    """A function together with the tensors requiring grad that it uses from outside.

    ``discover`` runs the function once and notes every tensor that requires grad among
    the arguments of its operations (run under ``no_grad``, such a tensor can only come
    from outside); ``call`` runs it again with those tensors replaced.
    """

    def __init__(self, f: Callable, name: str) -> None:
        self.f = f
        self.name = name
        self.found: dict = {}  # id(tensor as f uses it) -> (that tensor, as the ops saw it)
        self.grew = False  # whether the last watch found a tensor not found before
        self.calls = 0  # calls running (a watch does not look inside them)

    @property
    def captured(self) -> list:
        """The captured tensors, as the graph knows them."""
        return [eff for _, eff in self.found.values()]

    def discover(self, *args: Any) -> Any:
        """``f(*args)`` under ``no_grad``, noting the captured tensors."""
        return self.watch(lambda: self.f(*args))

    def watch(self, body: Callable, known: Sequence = ()) -> Any:
        """``body()`` (which calls ``f`` on values without a graph) under ``no_grad``,
        noting the captured tensors found so far and any it uses besides: a solver wraps
        each run of ``f`` in it, so that a tensor used only on a branch taken after the
        first call (``-y if t < 0.5 else -c * y``) is found too. ``grew`` says whether
        this call found one. With ``known`` (the leaves ``body`` differentiates for), it
        runs with grad enabled instead, and those are not captured ones."""
        self.grew = False
        skip = {id(t) for t in known}
        outer = state.substitute
        clock[0] += 1  # (a node's epoch is the clock when it was recorded)
        start = clock[0]

        def hook(a: tuple, kw: dict) -> tuple:
            a, kw = outer(a, kw) if outer is not None else (a, kw)
            if self.calls:  # (the solver's own recorded call inside: all substituted)
                return a, kw
            # the tensor the graph will know: after a checkpointed segment's substitution
            segment = state.segment
            ea, ekw = segment(a, kw) if segment is not None else (a, kw)
            for raw, eff in zip((*a, *kw.values()), (*ea, *ekw.values())):
                if (differentiable(eff) and id(raw) not in self.found and id(raw) not in skip
                        and _before(raw, start)):
                    self.found[id(raw)] = (raw, eff)
                    self.grew = True
            return a, kw

        # Values only: no forward mode (whose rules would run ops on the tangents).
        levels = state.levels
        state.levels = ()
        state.refresh()
        try:
            with enable_grad() if known else no_grad():
                return with_substitute(hook, body)
        finally:
            state.levels = levels
            state.refresh()

    def call(self, body: Callable, substitutes: Sequence) -> Any:
        """``body()`` (which calls ``f``) with grad enabled and the captured tensors
        replaced by ``substitutes`` (before any mode sees them: a substitute's forward-mode
        tangent is propagated, the replaced tensor's is not)."""
        with self.own():
            return self._call(body, substitutes)

    @contextlib.contextmanager
    def own(self) -> Iterator[None]:
        """A stretch of the solver's own recorded calls of ``f`` (its leaves, and ``f``'s
        captured tensors substituted), which a :meth:`watch` around it does not look into."""
        self.calls += 1
        try:
            yield
        finally:
            self.calls -= 1

    def _call(self, body: Callable, substitutes: Sequence) -> Any:
        if not self.found:
            with enable_grad():
                return body()
        sub = {}
        for (raw, eff), t in zip(self.found.values(), substitutes):
            sub[id(raw)] = sub[id(eff)] = t
        outer = state.substitute

        def hook(a: tuple, kw: dict) -> tuple:
            a = tuple(sub.get(id(v), v) if isinstance(v, Tensor) else v for v in a)
            kw = {k: sub.get(id(v), v) if isinstance(v, Tensor) else v for k, v in kw.items()}
            return outer(a, kw) if outer is not None else (a, kw)

        with enable_grad():
            return with_substitute(hook, body)


def _before(t: Tensor, start: int) -> bool:
    """Whether ``t`` was made before the clock ``start``: a leaf, or a node recorded
    before (not a result of a recorded call inside the function, such as a solver's own
    :meth:`Closure.call`, whose tensors are not captured ones)."""
    node = t._node
    if node is None:
        return True
    node = node[0] if type(node) is tuple else node
    return bool(node.epoch < start)


def differentiable(x: Any) -> bool:
    """Whether ``x`` is a tensor that requires grad or carries a forward-mode tangent (a
    vmap batch axis is not one)."""
    if not isinstance(x, Tensor):
        return False
    tans = getattr(x, "_tangents", None)
    return x.requires_grad or bool(tans and any(type(v) is not BatchAxis
                                                 for v in tans.values()))


def data_of(x: Any) -> Any:
    """The array behind a tensor (anything else as an array)."""
    return x.data if isinstance(x, Tensor) else np.asarray(x)


def leaf(a: Any) -> Tensor:
    """A fresh leaf requiring grad over the array ``a``."""
    return make_tensor(data_of(a), requires_grad=True)


def local(x: Any) -> Tensor:
    """``x`` as a tensor requiring grad whose gradient can be taken without reaching the
    graph behind it: an identity op on a tensor that requires grad, else a fresh leaf
    (carrying the forward-mode tangents of ``x``, if any). Call it with grad enabled."""
    if isinstance(x, Tensor) and x.requires_grad:
        return positive(x)
    t = leaf(x)
    tans = getattr(x, "_tangents", None) if isinstance(x, Tensor) else None
    for level, tan in (tans or {}).items():
        t = with_tangent(t, level, tan)
    return t


def tangent_map(fn: Callable, primals: Sequence, tangents: Sequence) -> list:
    """The tangents of the outputs of ``fn(list)`` at ``primals`` along ``tangents`` (None:
    no tangent), by forward mode in a level of its own (zeros for an output that does not
    depend on them). Recorded for reverse mode where its arguments require grad."""
    with forward_level() as level:
        duals = []
        for p, t in zip(primals, tangents):
            if t is None:
                duals.append(p)
                continue
            x = p if isinstance(p, Tensor) else make_tensor(np.asarray(p))
            if np.iscomplexobj(data_of(t)) and not np.iscomplexobj(data_of(x)):
                t = real(t)
            duals.append(with_tangent(x, level, t))
        outs = fn(duals)
        result = []
        for o in outs:
            t = tangent_of(o, level)
            result.append(np.zeros(np.shape(o), data_of(o).dtype) if t is None else t)
        return result


def vjp_of(outputs: Sequence, inputs: Sequence, cotangents: Sequence, retain: bool,
           create: bool) -> list:
    """The gradients of ``sum Re <cotangent, output>`` for ``inputs`` (zeros where unused)."""
    roots = [(o, c) for o, c in zip(outputs, cotangents)
             if isinstance(o, Tensor) and o.requires_grad]
    if not roots:
        return [np.zeros(t.shape, t.dtype) for t in inputs]
    grads = run_backward([o for o, _ in roots], [c for _, c in roots], retain, create,
                         list(inputs), capture=True, allow_unused=True)
    return [np.zeros(t.shape, t.dtype) if g is None else g for g, t in zip(grads, inputs)]


def forward_mode_on() -> bool:
    """Whether a forward-mode level (not a vmap batch level) is active."""
    return any(lv not in batch_sizes for lv in state.levels)


# ---- a linear solve on the real vector space of a list of arrays ------------------------


def _real_dtype(likes: Sequence) -> np.dtype:
    return np.result_type(*[np.finfo(a.dtype).dtype for a in likes])


def pack(arrays: Sequence, likes: Sequence) -> np.ndarray:
    """The real vector of ``arrays`` (real and imaginary parts of complex ones)."""
    dt = _real_dtype(likes)
    parts = []
    for a, like in zip(arrays, likes):
        a = np.asarray(data_of(a)).reshape(-1)
        if like.dtype.kind == "c":
            parts += [a.real, a.imag]
        else:
            parts.append(a.real)
    return np.concatenate(parts).astype(dt, copy=False) if parts else np.zeros(0, dt)


def unpack(vec: np.ndarray, likes: Sequence) -> list:
    """The arrays (shapes and dtypes of ``likes``) whose :func:`pack` is ``vec``."""
    out, k = [], 0
    for like in likes:
        n = int(np.prod(like.shape))
        if like.dtype.kind == "c":
            a = vec[k:k + n] + 1j * vec[k + n:k + 2 * n]
            k += 2 * n
        else:
            a = vec[k:k + n]
            k += n
        out.append(np.asarray(a, like.dtype).reshape(like.shape))
    return out


def solve_real(apply: Callable, rhs: Sequence, likes: Sequence, tol: float,
               maxiter: int | None, what: str) -> list:
    """``w`` with ``apply(w) = rhs`` by GMRES, ``apply`` a real-linear map on lists of
    arrays shaped like ``likes``; raises :class:`ConvergenceError` naming ``what``."""
    b = pack(rhs, likes)
    nb = np.linalg.norm(b)
    if nb == 0 or not b.size:
        return [np.zeros(a.shape, a.dtype) for a in likes]
    count = [0]

    def matvec(v: np.ndarray) -> np.ndarray:
        count[0] += 1
        return pack(apply(unpack(np.ravel(v), likes)), likes)

    n = b.size
    op = spla.LinearOperator((n, n), matvec=matvec, dtype=b.dtype)
    restart = min(n, 20)
    w, _ = spla.gmres(op, b, rtol=tol, atol=0.0, restart=restart,
                      maxiter=maxiter if maxiter is not None else max(20, 2000 // restart))
    reached = np.linalg.norm(matvec(w) - b) / nb
    if not reached <= 10 * tol:
        raise not_converged(
            what, reached, tol, count[0] - 1,
            "The linear system of the gradient is ill-conditioned or singular there (the "
            "solution is not isolated, or it depends on a gauge choice). Pass a larger "
            "adjoint_tol or adjoint_maxiter, or fix the gauge in the function.")
    return unpack(w, likes)


# ---- the node of an implicit function ---------------------------------------------------


class _Implicit:
    """A solution ``xs`` of ``residual(x, params) = 0`` and what its derivatives need.

    ``params`` are all arguments of ``residual`` after ``x``; those at ``slots`` (tensors
    that require grad or carry tangents) and the tensors ``closure`` captured are the
    node's inputs. ``solvers``, if given, is ``(solve_j, solve_jt)``: functions of a list
    of arrays ``r`` solving ``J u = r`` and ``J^T w = r`` (``J = dF/dx`` at the solution,
    ``J^T`` its adjoint on the real vector space), used in place of GMRES on products.
    """

    def __init__(self, name: str, residual: Callable, closure: Closure | None,
                 params: list, slots: list, adjoint_tol: float,
                 adjoint_maxiter: int | None, solvers: tuple | None = None) -> None:
        self.name = name
        self.residual = residual
        self.closure = closure
        self.params = params
        self.slots = slots
        self.adjoint_tol = adjoint_tol
        self.adjoint_maxiter = adjoint_maxiter
        self.solvers = solvers
        self.xs: list = []
        # Whether results are tensors (else arrays: nothing that went in was a tensor).
        self.tensors = any(isinstance(p, Tensor) for p in params) or bool(
            closure is not None and closure.found)

    def evaluate(self, xl: list, inputs: Sequence) -> list:
        """``residual(xl, params)`` recorded, with the node's ``inputs`` in place of the
        differentiable parameters and the captured tensors."""
        full = list(self.params)
        for k, t in zip(self.slots, inputs):
            full[k] = t
        body = lambda: self.residual(xl, full)  # noqa: E731
        if self.closure is None:
            with enable_grad():
                return body()
        return self.closure.call(body, list(inputs[len(self.slots):]))

    # ---- first order, on arrays ---------------------------------------------------------

    def adjoint(self, xs: Sequence, inputs: Sequence, g: Sequence) -> tuple:
        """First order: ``w`` with ``(dF/dx)^T w = -g`` (arrays), with ``F``'s graph at
        ``xs`` on fresh leaves (returned, to take the parameters' VJP from)."""
        xl = [leaf(x) for x in xs]
        pl = [leaf(a) for a in inputs]
        y = self.evaluate(xl, pl)
        rhs = [-np.asarray(data_of(gi)) for gi in g]
        if self.solvers is not None:
            w = self.solvers[1](rhs)
        else:
            w = solve_real(lambda u: vjp_of(y, xl, u, True, False), rhs, xs,
                           self.adjoint_tol, self.adjoint_maxiter,
                           f"{self.name} (the adjoint solve of its gradient, GMRES)")
        return w, y, pl

    def tangent(self, xs: Sequence, inputs: Sequence, ts: Sequence) -> list:
        """First order: ``u`` with ``(dF/dx) u = -(dF/dtheta) t`` (arrays): the tangent of
        the solution for the tangents ``ts`` of the inputs."""
        m = len(xs)

        def jvp_f(u: Any, t: Any) -> list:
            with no_grad():
                return [np.asarray(data_of(r)) for r in tangent_map(
                    lambda d: self.evaluate(d[:m], d[m:]), [*xs, *inputs],
                    [*(u if u is not None else [None] * m), *t])]

        live = [None if t is None or not np.any(data_of(t)) else t for t in ts]
        if all(t is None for t in live):
            return [np.zeros(x.shape, x.dtype) for x in xs]
        rhs = [-r for r in jvp_f(None, live)]
        if self.solvers is not None:
            return self.solvers[0](rhs)
        return solve_real(lambda u: jvp_f(u, [None] * len(ts)), rhs, xs, self.adjoint_tol,
                          self.adjoint_maxiter,
                          f"{self.name} (the tangent solve of forward mode, GMRES)")

    # ---- the rules of the node ------------------------------------------------------------

    def backward(self, inputs: tuple, xs: tuple, g: tuple) -> tuple:
        """The gradients of the node's inputs for the gradients ``g`` of the solution."""
        if not (state.enabled or _any_tensor_in(inputs, xs, g)):  # first order
            w, y, pl = self.adjoint(xs, inputs, g)
            return tuple(vjp_of(y, pl, w, False, False))
        # Recorded (create_graph, or forward mode over this backward): w is itself an
        # implicit function of (g, x*, inputs), the root of (dF/dx)^T w + g = 0.
        n, m = len(g), len(xs)
        with enable_grad():
            problem = _Implicit(
                f"{self.name} (adjoint)", self._adjoint_residual, None,
                [*g, *xs, *inputs], list(range(n + m + len(inputs))),
                self.adjoint_tol, self.adjoint_maxiter, _swapped(self.solvers))
            w = problem.solve(
                lambda arrays: self.adjoint(arrays[n:n + m], arrays[n + m:], arrays[:n])[0],
                [np.asarray(data_of(gi)) for gi in g])
            pl = [local(a) for a in inputs]
            y = self.evaluate([local(x) for x in xs], pl)
            return tuple(vjp_of(y, pl, w, True, True))

    def jvp(self, inputs: tuple, xs: tuple, ts: tuple) -> Any:
        """The tangents of the solution for the tangents ``ts`` of the inputs."""
        if not _any_tensor_in(inputs, xs, ts):  # first order
            out = self.tangent(xs, inputs, ts)
        else:
            # Recorded: u is the root of (dF/dx) u + (dF/dtheta) t = 0, linear in u.
            n, m = len(ts), len(xs)
            ts = [np.zeros(np.shape(a), data_of(a).dtype) if t is None else t
                  for t, a in zip(ts, inputs)]
            problem = _Implicit(
                f"{self.name} (tangent)", self._tangent_residual, None,
                [*ts, *xs, *inputs], list(range(n + m + len(inputs))),
                self.adjoint_tol, self.adjoint_maxiter, self.solvers)
            out = problem.solve(
                lambda arrays: self.tangent(arrays[n:n + m], arrays[n + m:], arrays[:n]),
                [np.asarray(data_of(x)) for x in xs])
        return tuple(out) if len(out) > 1 else out[0]

    def _adjoint_residual(self, wl: list, full: list) -> list:
        """``(dF/dx)^T w + g`` at ``x*``; ``full`` is ``g``, ``x*``, then the inputs."""
        n = len(wl)
        m = len(self.xs)
        g, xs, inputs = full[:n], full[n:n + m], full[n + m:]
        with enable_grad():
            xl = [local(x) for x in xs]
            y = self.evaluate(xl, inputs)
            vj = vjp_of(y, xl, wl, True, True)
        return [v + gi for v, gi in zip(vj, g)]

    def _tangent_residual(self, ul: list, full: list) -> list:
        """``(dF/dx) u + (dF/dtheta) t`` at ``x*``; ``full`` is ``t``, ``x*``, the inputs."""
        m = len(ul)
        n = (len(full) - m) // 2  # as many tangents as inputs
        ts, xs, inputs = full[:n], full[n:n + m], full[n + m:]
        return tangent_map(lambda d: self.evaluate(d[:m], d[m:]), [*xs, *inputs],
                           [*ul, *ts])

    def solve(self, forward: Callable, likes: list) -> list:
        """The solution as tensors: ``forward(param arrays)`` computes it (no graph); the
        result is one recorded node when an input requires grad."""
        arrays = [data_of(p) if isinstance(p, Tensor) else p for p in self.params]
        if self.closure is not None:  # (every call of f: a tensor used on a later branch)
            xs = [np.asarray(x) for x in self.closure.watch(lambda: forward(arrays))]
            self.tensors |= bool(self.closure.found)
        else:
            with no_grad():
                xs = [np.asarray(x) for x in forward(arrays)]
        inputs = [self.params[k] for k in self.slots]
        if self.closure is not None:
            inputs += self.closure.captured
        for x, like in zip(xs, likes):
            if x.shape != like.shape:
                raise ValueError(f"{self.name}: the solution has shape {x.shape}, the "
                                 f"initial guess {like.shape}")
        self.xs = xs
        return record(self, inputs, self.tensors)


def _swapped(solvers: tuple | None) -> tuple | None:
    """The solvers of the adjoint problem: its Jacobian is the transpose."""
    return None if solvers is None else (solvers[1], solvers[0])


def _any_tensor_in(*groups: Sequence) -> bool:
    return any(isinstance(a, Tensor) for group in groups for a in group)


def record(problem: Any, inputs: Sequence, tensors: bool) -> list:
    """A solver's results ``problem.xs`` (arrays) as one recorded node whose inputs are
    ``inputs`` and whose backward is ``problem.backward(inputs, xs, grads)``; as tensors
    without a graph (arrays if not ``tensors``) when nothing needs a gradient."""
    if not (state.enabled or state.levels) or not any(differentiable(t) for t in inputs):
        return [make_tensor(x) for x in problem.xs] if tensors else list(problem.xs)
    out = _Node.apply(problem, *inputs)
    return list(out) if isinstance(out, tuple) else [out]


class _Node(Function):
    """The recorded node of a solver: its inputs are the parameters (see :func:`record`)."""

    @staticmethod
    def forward(ctx: FunctionCtx, problem: _Implicit, *arrays: Any) -> Any:
        ctx.problem = problem
        outs = tuple(problem.xs)
        ctx.save_for_backward(*arrays, *outs)
        return outs if len(outs) > 1 else outs[0]

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> tuple:
        saved = ctx.saved_tensors
        m = len(grads)
        inputs, xs = saved[:len(saved) - m], saved[len(saved) - m:]
        return (None, *solver_gradient(ctx.problem, tuple(inputs), tuple(xs), tuple(grads)))

    @staticmethod
    def jvp(ctx: FunctionCtx, *tangents: Any) -> Any:
        problem = ctx.problem
        if not hasattr(problem, "jvp"):
            raise NotImplementedError(
                f"{problem.name}: forward mode (jvp, jacfwd, hessian, hvp) does not go "
                f"through this solver; use reverse mode (grad, vjp, jacrev)")
        saved = ctx.saved_tensors
        m = len(problem.xs)
        inputs, xs = saved[:len(saved) - m], saved[len(saved) - m:]
        return solver_tangent(problem, tuple(inputs), tuple(xs), tuple(tangents[1:]))


# Inside vmap (jacrev's and jacfwd's batches of cotangents and tangents), a solver's rules
# read values in Python: they run once per example.
@per_example("inputs", "xs", "grads")
def solver_gradient(problem: Any, inputs: tuple, xs: tuple, grads: tuple) -> tuple:
    return tuple(problem.backward(inputs, xs, grads))


@per_example("inputs", "xs", "tangents")
def solver_tangent(problem: Any, inputs: tuple, xs: tuple, tangents: tuple) -> Any:
    return problem.jvp(inputs, xs, tangents)


_Node.__name__ = "solver"


# ---- the public functions ---------------------------------------------------------------


def _as_list(x: Any) -> tuple[list, bool]:
    """``x`` (a tensor/array or a tuple/list of them) as a list, and whether it was one."""
    if isinstance(x, (tuple, list)):
        return list(x), False
    return [x], True


def _float_array(x: Any, fname: str) -> np.ndarray:
    a = np.asarray(data_of(x))
    if a.dtype.kind not in "fc":
        if a.dtype.kind in "iub":
            return a.astype(float)
        raise TypeError(f"{fname}: the initial guess has dtype {a.dtype}; it must be a "
                        f"floating point or complex array")
    return a


def _prepare(fname: str, fun: Callable, x0: Any, params: tuple) -> tuple:
    """The pieces every implicit function needs: the initial guess as arrays, the call
    of ``fun`` on a list of arrays, the differentiable slots and the captured tensors."""
    x0s, single = _as_list(x0)
    x0s = [_float_array(x, fname) for x in x0s]
    slots = [k for k, p in enumerate(params) if differentiable(p)]
    plain = [p.detach() if k in slots else p for k, p in enumerate(params)]

    def call(xl: Sequence, ps: Sequence) -> list:
        out = fun(xl[0] if single else type(x0)(xl), *ps)
        outs, one = _as_list(out)
        if one != single or len(outs) != len(xl):
            raise TypeError(f"{fname}: the function returned {_describe(out)} for an "
                            f"argument x of {_describe(x0)}; it must return the same "
                            f"structure")
        for o, x in zip(outs, xl):
            if np.shape(o) != np.shape(x):
                raise ValueError(f"{fname}: the function returned shape {np.shape(o)} for "
                                 f"x of shape {np.shape(x)}; they must be equal")
            if np.iscomplexobj(data_of(o)) and not np.iscomplexobj(data_of(x)):
                raise TypeError(f"{fname}: the function returned a complex value for a real "
                                f"x; start from a complex initial guess (x0 + 0j)")
        return outs

    closure = Closure(lambda xl: call(xl, plain), fname)
    first = closure.discover([make_tensor(x) for x in x0s])
    return x0s, single, slots, closure, call, [data_of(o) for o in first]


def _any_tensor(x: Any) -> bool:
    return any(isinstance(a, Tensor) for a in _as_list(x)[0])


def _describe(x: Any) -> str:
    if isinstance(x, (tuple, list)):
        return f"a {type(x).__name__} of {len(x)}"
    return f"one array of shape {np.shape(x)}"


def _outputs(xs: list, single: bool, x0: Any) -> Any:
    return xs[0] if single else type(x0)(xs)


def _norm(arrays: Sequence) -> float:
    return float(np.sqrt(sum(np.vdot(a, a).real for a in arrays)))


@no_derivative("x0", why="an initial guess: the solution does not depend on it")
def fixed_point(f: Callable, x0: Any, *params: Any, tol: float = 1e-10,
                maxiter: int = 1000, method: str = "anderson", history: int = 5,
                adjoint_tol: float | None = None,
                adjoint_maxiter: int | None = None) -> Any:
    """The fixed point ``x = f(x, *params)``, differentiable implicitly.

    Parameters
    ----------
    f : callable
        ``f(x, *params)``, written with yaad (or NumPy) functions, returning something of
        the structure of ``x``. It may use tensors it does not receive (a closure):
        those that require grad get gradients too.
    x0 : Tensor, array_like, or tuple/list of them
        The initial guess (its value is not differentiated).
    *params : Tensor, array_like or any
        The further arguments of ``f``; tensors that require grad get gradients.
    tol : float
        Stop when ``|f(x) - x| <= tol * |x|`` and the next step (Anderson's estimate of
        the error) is as small (2-norms over all of ``x``); or when both fall below
        ``1e-3 * tol`` times the first residual ``|f(x0) - x0|`` (so that a fixed point
        at ``0`` is reached).
    maxiter : int
        At most this many applications of ``f``.
    method : {"anderson", "iterate", "root"}
        ``"anderson"`` (default): Anderson acceleration (type II, the last ``history``
        steps; a plain step where its least-squares problem fails). It converges where
        the plain iteration crawls (a contraction factor near 1, close to a critical
        point) and often where ``f`` is not a contraction. ``"iterate"``: the plain
        iteration ``x <- f(x)``. ``"root"``: ``scipy.optimize.root`` (MINPACK's hybrid
        method) on ``f(x) - x``, for fixed points that Anderson's method does not reach.
    history : int
        The number of past steps Anderson's method combines.
    adjoint_tol : optional
        Relative tolerance (default ``tol``) and restart cycles of the GMRES solves of the
        gradient and of forward-mode tangents.
    adjoint_maxiter : optional
        Relative tolerance (default ``tol``) and restart cycles of the GMRES solves of the
        gradient and of forward-mode tangents.

    Returns
    -------
    Tensor or tuple/list of Tensor
        The fixed point, with the structure of ``x0``. Its gradient with respect to the
        parameters is that of the implicit function theorem: one linear solve with
        ``I - (df/dx)^T`` (GMRES on vector-Jacobian products of ``f``), however many
        iterations the forward pass took; memory is one evaluation of ``f``. Forward mode
        (``jvp``, ``jacfwd``, ``hessian``, ``hvp``) solves with ``I - df/dx`` instead
        (GMRES on Jacobian-vector products), and both compose to any order.

    Raises
    ------
    ConvergenceError
        If the iteration (or the adjoint solve) stops above its tolerance; the message
        gives the residual reached and the number of iterations.

    Examples
    --------
    >>> a = yaad.tensor(0.5, requires_grad=True)
    >>> x = yaad.func.fixed_point(lambda x, a: yaad.cos(a * x), 1.0, a)
    >>> x.backward()          # a.grad == dx*/da, with x* = cos(a x*)
    """
    if method not in ("anderson", "iterate", "root"):
        raise ValueError(f"fixed_point: method={method!r}; use 'anderson', 'iterate' or "
                         f"'root'")
    if not (isinstance(history, int) and history >= 1):
        raise ValueError(f"fixed_point: history={history!r}; it must be a positive integer")
    x0s, single, slots, closure, call, first = _prepare("fixed_point", f, x0, params)

    def iterate(arrays: list) -> list:
        def fmap(v: np.ndarray) -> np.ndarray:
            return pack(data_of_list(call([make_tensor(a) for a in unpack(v, x0s)],
                                          arrays)), x0s)

        if method == "root":
            return _scipy_root("fixed_point (method='root')", lambda v: fmap(v) - v,
                               pack(x0s, x0s), x0s, "hybr", tol, None)
        return unpack(_iterate(fmap, pack(x0s, x0s), pack(first, x0s), tol, maxiter,
                               history if method == "anderson" else 0), x0s)

    def residual(xl: list, ps: list) -> list:
        return [fx - x for fx, x in zip(call(xl, ps), xl)]

    problem = _Implicit("fixed_point", residual, closure, list(params), slots,
                        adjoint_tol if adjoint_tol is not None else tol, adjoint_maxiter)
    problem.tensors |= _any_tensor(x0)
    return _outputs(problem.solve(iterate, x0s), single, x0)


def _iterate(fmap: Callable, x: np.ndarray, fx: np.ndarray, tol: float, maxiter: int,
             history: int) -> np.ndarray:
    """The fixed point of ``fmap`` (real vectors) from ``x`` (whose image is ``fx``): the
    plain iteration (``history == 0``) or Anderson's type-II acceleration over the last
    ``history`` steps (Walker and Ni, SIAM J. Numer. Anal. 49, 1715 (2011))."""
    g = fx - x
    first = np.linalg.norm(g)
    best = (np.inf, x, fx)
    dx: list = []
    dg: list = []
    for k in range(1, maxiter + 1):
        gn = np.linalg.norm(g)
        if not np.isfinite(gn):
            break
        if gn < best[0]:
            best = (gn, x, fx)
        elif history and gn > 1e4 * best[0]:  # diverging: a plain step from the best
            dx, dg = [], []
            _, x, fx = best
            g = fx - x
            gn = np.linalg.norm(g)
        step = g
        if dx:
            a = np.stack(dg, axis=1)
            gamma = np.linalg.lstsq(a, g, rcond=1e-12)[0]
            step = g - (np.stack(dx, axis=1) + a) @ gamma
        # Converged when the residual and the step (Anderson's estimates the error, which
        # near a critical point is much larger than the residual) are both small.
        scale = max(np.linalg.norm(x), np.linalg.norm(fx), first * _ZERO_SCALE)
        if max(gn, np.linalg.norm(step)) <= tol * scale:
            return x + step
        if k == maxiter:
            break
        x_new = x + step
        fx_new = fmap(x_new)
        g_new = fx_new - x_new
        if history:
            dx.append(x_new - x)
            dg.append(g_new - g)
            if len(dx) > history:
                dx.pop(0)
                dg.pop(0)
        x, fx, g = x_new, fx_new, g_new
    size = max(np.linalg.norm(x), np.finfo(float).tiny)
    raise not_converged("fixed_point", np.linalg.norm(g) / size, tol, maxiter,
                        "Raise maxiter or loosen tol; check that f has a fixed point near "
                        "x0, or try method='root' (or yaad.func.root on f(x) - x).")


# A residual this far below its first value counts as converged at a fixed point 0 (where
# no relative tolerance can be met): 2-norms of ``x`` below ``tol * first * _ZERO_SCALE``.
_ZERO_SCALE = 1e-3


def data_of_list(xs: Sequence) -> list:
    """The arrays behind a list of tensors."""
    return [data_of(x) for x in xs]


@no_derivative("x0", why="an initial guess: the solution does not depend on it")
def root(F: Callable, x0: Any, *params: Any, method: str = "hybr", tol: float = 1e-10,
         options: dict | None = None, adjoint_tol: float | None = None,
         adjoint_maxiter: int | None = None) -> Any:
    """A root ``F(x, *params) = 0`` by ``scipy.optimize.root``, differentiable implicitly.

    Parameters
    ----------
    F : callable
        ``F(x, *params)``, written with yaad (or NumPy) functions, returning something of
        the structure of ``x`` (real or complex; complex ``x`` is solved for as its real
        and imaginary parts). Tensors it uses from outside that require grad get
        gradients too.
    x0 : Tensor, array_like, or tuple/list of them
        The initial guess.
    *params : Tensor, array_like or any
        The further arguments of ``F``; tensors that require grad get gradients.
    method : str
        A method of ``scipy.optimize.root`` (``"hybr"``, ``"lm"``, ``"krylov"`` for large
        problems, ...).
    tol : float
        Passed to ``scipy.optimize.root``; the root is accepted when the solver reports
        success.
    options : dict, optional
        Passed to ``scipy.optimize.root``.
    adjoint_tol : optional
        Relative tolerance (default ``tol``) and restart cycles of the GMRES solve of
        the gradient.
    adjoint_maxiter : optional
        Relative tolerance (default ``tol``) and restart cycles of the GMRES solve of
        the gradient.

    Returns
    -------
    Tensor or tuple/list of Tensor
        The root. Its gradient is ``-(dF/dtheta)^T (dF/dx)^-T g``: one GMRES solve on
        vector-Jacobian products of ``F``, never a dense Jacobian.

    Raises
    ------
    ConvergenceError
        If the solver (or the adjoint solve) does not converge.
    """
    x0s, single, slots, closure, call, _ = _prepare("root", F, x0, params)

    def solve(arrays: list) -> list:
        def fun(v: np.ndarray) -> np.ndarray:
            return pack(call([make_tensor(a) for a in unpack(v, x0s)], arrays), x0s)

        return _scipy_root(f"root (scipy.optimize.root, method={method!r})", fun,
                           pack(x0s, x0s), x0s, method, tol, options)

    problem = _Implicit("root", lambda xl, ps: call(xl, ps), closure, list(params), slots,
                        adjoint_tol if adjoint_tol is not None else tol, adjoint_maxiter)
    problem.tensors |= _any_tensor(x0)
    return _outputs(problem.solve(solve, x0s), single, x0)


def _scipy_root(what: str, fun: Callable, v0: np.ndarray, likes: list, method: str,
                tol: float, options: dict | None) -> list:
    """``scipy.optimize.root`` of ``fun`` (real vectors) from ``v0``, unpacked like
    ``likes``; raises :class:`ConvergenceError` naming ``what``."""
    sol = scipy.optimize.root(fun, v0, method=method, tol=tol, options=options)
    if not sol.success:
        f0 = np.linalg.norm(fun(v0))
        reached = np.linalg.norm(sol.fun) / (f0 if f0 > 0 else 1.0)
        raise not_converged(what, reached, tol,
                            int(getattr(sol, "nit", getattr(sol, "nfev", 0))),
                            f"SciPy says: {sol.message} Try another method= or a better "
                            f"initial guess.")
    return unpack(sol.x, likes)
