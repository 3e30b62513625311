"""The vector field ``func(y, t, *args)`` of an ODE on flat arrays.

The solvers work on flat vectors; the field reshapes them to the state's shape, calls
the user's function and returns arrays: its value, its vector-Jacobian product for the
state, the time and the differentiable parameters (the tensor arguments that require
grad, then the tensors ``func`` captures from outside), and its dense Jacobian (for the
implicit method).

Without captured tensors, ``func`` runs inside compiled programs (``yaad.compile``),
kept per ``func`` across calls: a whole explicit step (its seven stages) is one replayed
program, and the vector-Jacobian product of ``func`` another (one call per stage in the
reverse pass), instead of Python per operation. Both are made native programs where the
native backend covers them (:meth:`Field.native`), which the numba loops of ``native.py``
run without returning to Python.
The time is then handed to ``func`` as a 0-d tensor; a ``func`` that reads it as a Python
number (``float(t)``, ``math.sin(t)``) makes the programs record again for each time
(and run eagerly after ``max_recordings``), and ``compiled=False`` avoids that.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Sequence

import numpy as np

from ..core.grad_mode import no_grad
from ..core.tensor import Tensor, make_tensor
from ..implicit import Closure, data_of, differentiable, leaf, vjp_of
from ..ops.shape import stack

# the Jacobian-based adjoint (Field.linearizable): states up to this size, and this many
# bytes of Jacobians at once
LINEAR_MAX_STATE = 32
LINEAR_BYTES = 32 << 20

# func -> {swapped: its compiled programs} (the programs hold func weakly)
_PROGRAMS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# the functions solved with once: their programs are compiled from their second solve
_SEEN: weakref.WeakSet = weakref.WeakSet()


def _seen_before(func: Callable) -> bool:
    """Whether ``func`` was solved with before (marking it now). A function made anew for
    each solve (a lambda written in a loop) would have its programs recorded every time:
    about 50x the eager solve of a small system; so the first solve runs eagerly."""
    base = func.fun if isinstance(func, Swapped) else func
    try:
        if base in _SEEN:
            return True
        _SEEN.add(base)
    except TypeError:  # (not weakly referenceable: never compiled, see Field)
        return True
    return False


def _with_slots(args: Sequence, slots: Sequence, values: Sequence) -> list:
    full = list(args)
    for k, p in zip(slots, values):
        full[k] = p
    return full


class Swapped:
    """``fun(t, y, *args)`` (SciPy's order) as ``func(y, t, *args)``; its compiled
    programs are kept for ``fun``, so they are found again on the next call."""

    def __init__(self, fun: Callable) -> None:
        self.fun = fun

    def __call__(self, y: Any, t: Any, *args: Any) -> Any:
        return self.fun(t, y, *args)


def _programs(func: Callable, shape: tuple, slots: tuple, args: list,
              need_t: bool) -> tuple[dict, list]:
    """The compiled programs of ``func`` for a state's shape, the differentiable slots and
    the arguments that are not tensors (made on first use, kept while ``func`` lives), and
    the tensor arguments to hand them.

    The programs take tensors only (``yaad.compile``'s fast path: no signature of Python
    values per call); the other arguments are constants of the programs, part of the key
    under which they are kept (``TypeError`` if one cannot be hashed)."""
    swap = isinstance(func, Swapped)
    base = func.fun if isinstance(func, Swapped) else func
    where = [k for k, a in enumerate(args) if isinstance(a, Tensor)]
    statics = tuple((k, a) for k, a in enumerate(args) if not isinstance(a, Tensor))
    key = (swap, shape, slots, len(args), statics, need_t)
    hash(key)
    tensors = [args[k] for k in where]
    kept = _PROGRAMS.setdefault(base, {})
    progs = kept.get(key)
    if progs is not None:
        return progs, tensors
    from ..compile import Compiled
    from ..func import vjp
    from .methods import METHODS

    ref = weakref.ref(base)

    def field(ts: Sequence) -> Callable:
        fn = ref()
        full: list = [None] * len(args)
        for k, a in statics:
            full[k] = a
        for k, a in zip(where, ts):
            full[k] = a
        if swap:
            return lambda Y, t: fn(t, Y.reshape(shape), *full).reshape(-1)  # type: ignore
        return lambda Y, t: fn(Y.reshape(shape), t, *full).reshape(-1)  # type: ignore

    def value(y: Any, t: Any, *ts: Any) -> Any:
        return field(ts)(y, t)

    def value_vjp(y: Any, t: Any, cot: Any, *ts: Any) -> Any:
        # (the time's gradient only where asked for)
        at = [where.index(k) for k in slots]

        def g(y: Any, t: Any, *ps: Any) -> Any:
            full = list(ts)
            for j, p in zip(at, ps):
                full[j] = p
            return field(full)(y, t)

        if need_t:
            # (+ 0 t: the time's gradient a computed value also where func does not read
            # the time; the same gradients, the time's plus an exact 0)
            _, back = vjp(lambda y, t, *ps: g(y, t, *ps) + 0.0 * t, y, t,
                          *[ts[j] for j in at])
            return back(cot)
        _, back = vjp(lambda y, *ps: g(y, t, *ps), y, *[ts[j] for j in at])
        yb, *pbars = back(cot)
        return (yb, *pbars)

    def stepper(method: str) -> Callable:
        def step(y: Any, t: Any, h: Any, k1: Any, *ts: Any) -> Any:
            y_new, K = METHODS[method].step_ops(field(ts), y, t, h, k1)
            return y_new, stack(K)
        return step

    # (fused="native": a native program however short, for the numba loops of native.py)
    progs = {name: Compiled(body, warn=False, fused="native") for name, body in (
        ("value", value), ("vjp", value_vjp),
        *((f"step:{m}", stepper(m)) for m in ("dopri5",)))}
    kept[key] = progs
    return progs, tensors


def vmap_jacobians(g: Callable, Y: Any, T: Any, params: Sequence, need_t: bool) -> list:
    """The Jacobians of ``g(y, t, *params)`` (flat) at the points ``(Y[k], T[k])``: for
    ``y``, ``t`` if ``need_t``, and each of ``params``; one ``vmap`` of ``jacrev``, or
    a ``jacrev`` per point where ``g`` reads a value as a Python number (``float(t)`` in
    a branch), which ``vmap`` refuses."""
    from ..func import jacrev, vmap

    nums = (0,) + ((1,) if need_t else ()) + tuple(range(2, 2 + len(params)))
    try:
        jac = vmap(jacrev(g, argnums=nums), in_dims=(0, 0) + (None,) * len(params))
        return list(jac(Y, T, *params))
    except TypeError:  # (the error of a value read inside vmap; a point's own re-raises)
        one = jacrev(g, argnums=nums)
        rows = [one(Y[k], T[k], *params) for k in range(Y.shape[0])]
        return [stack([r[j] for r in rows]) for j in range(len(nums))]


class Field:
    """``func(y, t, *args)`` on flat arrays (see the module docstring).

    Parameters
    ----------
    func : callable
        ``func(y, t, *args)``.
    args : list
        All further arguments, as the user passed them.
    slots : list of int
        The positions in ``args`` of the tensors that require grad.
    closure : Closure
        The tensors ``func`` captures (found by :meth:`Closure.discover`).
    shape : tuple
        The state's shape.
    need_t : bool
        Whether the VJP must give the time's gradient.
    compiled : bool
        Whether to run ``func`` in compiled programs (ignored when ``func`` captures
        tensors that require grad).
    """

    def __init__(self, func: Callable, args: Sequence, slots: list, closure: Closure,
                 shape: tuple, need_t: bool, compiled: bool) -> None:
        self.func = func
        self.args = list(args)
        self.slots = slots
        self.closure = closure
        self.shape = shape
        self.need_t = need_t
        self.plain = [p.detach() if k in slots else p for k, p in enumerate(args)]
        # the arrays of the differentiable inputs after y0 (and t): slots, then captured
        self.params = [data_of(args[k]) for k in slots] + [
            data_of(c) for c in closure.captured]
        self.compiled = compiled and not closure.found and _seen_before(func)
        self.real = all(np.asarray(p).dtype.kind in "fiub" for p in self.params)
        self._native: dict = {}  # name -> what native(name) found
        if self.compiled:
            # arrays as tensors: a compiled program replays what it does with tensors
            full = [make_tensor(a) if isinstance(a, np.ndarray) else a
                    for a in _with_slots(self.plain, slots, self.params)]
            try:
                self.programs, self.program_args = _programs(func, tuple(shape),
                                                             tuple(slots), full, need_t)
            except TypeError:  # func cannot be weakly referenced, or an argument hashed
                self.compiled = False

    # ---- the user's function with substituted inputs ------------------------------------

    def full(self, slot_values: Sequence) -> list:
        """The arguments of ``func`` with ``slot_values`` at the differentiable slots."""
        return _with_slots(self.plain, self.slots, slot_values)

    def call(self, y: Any, t: Any, params: Sequence) -> Any:
        """``func(y, t, ...)`` with ``params`` (tensors) for the differentiable inputs
        (the slots, then the captured tensors), recorded."""
        ns = len(self.slots)
        full = self.full(params[:ns])
        return self.closure.call(lambda: self.func(y, t, *full), params[ns:])

    # ---- on arrays ------------------------------------------------------------------------

    def watched(self, body: Callable) -> tuple[Any, bool]:
        """``body()`` (a forward solve: calls of :meth:`value` and :meth:`run_step`) under
        ``no_grad``, and whether ``func`` used a tensor requiring grad from outside that is
        not among the captured ones found so far (now added to them): eagerly, every op's
        arguments are checked (:meth:`Closure.watch`); compiled, the recorded paths'
        outside tensors are, and a call that ran eagerly counts as one (the solve is then
        run again uncompiled)."""
        if not self.compiled:
            out = self.closure.watch(body)
            return out, self.closure.grew
        progs = list(self.programs.values())
        eager = sum(p.stats["eager"] for p in progs)
        with no_grad():
            out = body()
        grew = sum(p.stats["eager"] for p in progs) > eager
        for p in progs:
            for t in p.outside_tensors():
                if differentiable(t) and id(t) not in self.closure.found:
                    self.closure.found[id(t)] = (t, t)
                    grew = True
        return out, grew

    def value(self, y: np.ndarray, t: float) -> np.ndarray:
        """``func(y, t)`` as a flat array."""
        with no_grad():
            if self.compiled:
                out = self.programs["value"](make_tensor(y), make_tensor(np.asarray(t, float)),
                                             *self.program_args)
            else:
                out = self.func(make_tensor(y.reshape(self.shape)), t, *self.plain)
        return np.asarray(data_of(out)).reshape(-1)

    def run_step(self, method: str, y: np.ndarray, t: float, h: float,
                 k1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """An explicit method's step as one compiled program: ``(y_new, K)``."""
        with no_grad():
            y_new, K = self.programs[f"step:{method}"](
                make_tensor(y), make_tensor(np.asarray(t, float)),
                make_tensor(np.asarray(h, float)), make_tensor(k1), *self.program_args)
        return np.asarray(data_of(y_new)), np.asarray(data_of(K))

    def native(self, name: str, arrays: Sequence) -> tuple | None:
        """The compiled program ``name`` (``"vjp"``, ``"step:dopri5"``) as one native
        program, for the numba loops of ``native.py``: ``(program, ins, outs, R, Z)``,
        ``ins`` the ``(offset, size)`` in ``R`` of each of ``arrays`` (the arguments before
        the parameters, offset -1 for one the program does not read), ``outs`` those of its
        results, and workspaces ``R, Z`` of their own holding the parameters. None where
        there is none: not compiled, numba missing, complex values, floating-point errors
        set to raise (``np.errstate``), or a program the native backend does not cover."""
        from ..compiled.native import available
        from ..compiled.tape import float_state

        if not (self.compiled and self.real and available()) or float_state() is not None:
            return None
        if any(np.asarray(a).dtype != np.float64 for a in arrays):
            return None
        if name in self._native:  # (a solve asks again for each stretch of steps)
            return self._native[name]
        self._native[name] = found = self._find_native(name, arrays)
        return found

    def _find_native(self, name: str, arrays: Sequence) -> tuple | None:
        prog = self.programs[name]
        args = [make_tensor(np.array(a, np.float64)) for a in arrays] + list(self.program_args)
        with no_grad():
            found = prog.native(*args)
            for _ in range(2):  # (recorded twice before it is replayed)
                if found is not None:
                    break
                prog(*args)
                found = prog.native(*args)
        if found is None:
            return None
        program, params, outputs = found
        regions = {a: program.inputs[j][0] for j, a in enumerate(params)}
        outs = [program.outs[k][0] for k in outputs]
        if any(v.kind for v in [*regions.values(), *outs]):
            return None
        ins = np.array([(regions[a].off, regions[a].n) if a in regions else (-1, 0)
                        for a in range(len(arrays))], np.int64).reshape(-1, 2)
        R, Z = program.workspace([data_of(args[a]) for a in params])
        return program, ins, np.array([(v.off, v.n) for v in outs], np.int64), R, Z

    def vjp(self, y: np.ndarray, t: float, cot: np.ndarray) -> tuple[np.ndarray, float, list]:
        """The gradients of ``Re <cot, func(y, t)>`` for ``y``, ``t`` and the parameters."""
        if self.compiled:
            with no_grad():
                grads = self.programs["vjp"](make_tensor(y), make_tensor(np.asarray(t, float)),
                                             make_tensor(cot), *self.program_args)
            if self.need_t:
                yb, tb, *pbars = (data_of(g) for g in grads)
            else:
                (yb, *pbars), tb = (data_of(g) for g in grads), 0.0
            return (np.asarray(yb).reshape(-1), float(np.real(tb)),
                    [np.asarray(p) for p in pbars])
        yl = leaf(y.reshape(self.shape))
        tl = leaf(np.asarray(t, float)) if self.need_t else t
        pl = [leaf(p) for p in self.params]
        out = self.call(yl, tl, pl)
        ins = [yl, tl, *pl] if self.need_t else [yl, *pl]
        grads = vjp_of([out], ins, [cot.reshape(self.shape)], False, False)
        yb = np.asarray(grads[0]).reshape(-1)
        if self.need_t:
            return yb, float(np.real(grads[1])), grads[2:]
        return yb, 0.0, grads[1:]

    def jac(self, y: np.ndarray, t: float) -> np.ndarray:
        """The dense Jacobian ``d func / d y`` (a real state), ``(n, n)``."""
        return self.jacobians(y.reshape(1, -1), np.array([t]), False, False)[0][0]

    def linear_points(self, dtype: np.dtype) -> int:
        """How many points' Jacobians :meth:`jacobians` may take at once (0: none), for a
        state of ``dtype``: a small real state and real parameters (``n (n + parameters +
        1)`` numbers a point, at most ``LINEAR_BYTES`` in all)."""
        n = int(np.prod(self.shape))
        if not (self.real and dtype.kind == "f" and 0 < n <= LINEAR_MAX_STATE):
            return 0
        width = n + sum(int(np.size(p)) for p in self.params) + 2
        return LINEAR_BYTES // (n * width * 8)

    def split(self, flat: np.ndarray) -> list:
        """The parameters' gradients from their concatenation (as ``jacobians`` orders
        them)."""
        out, k = [], 0
        for p in self.params:
            size = int(np.size(p))
            out.append(flat[k:k + size].reshape(np.shape(p)))
            k += size
        return out

    def jacobians(self, Y: np.ndarray, ts: np.ndarray, need_t: bool,
                  need_p: bool) -> tuple[np.ndarray, Any, Any]:
        """The Jacobians of ``func`` at the points ``(Y[k], ts[k])`` (a real state):
        ``(J_y (P, n, n), J_t (P, n) or None, J_p (P, n, parameters) or None)``, the
        parameters flattened in order. One vectorized reverse pass (``vmap`` of
        ``jacrev``) for all points, instead of ``n`` vector-Jacobian products each."""
        P, n = Y.shape
        found = self._native_jacobians(Y, ts, need_t, need_p)
        if found is not None:
            return found
        Yt, Tt = make_tensor(np.ascontiguousarray(Y)), make_tensor(np.asarray(ts, float))
        # (eager: vmap of jacrev does not record in yaad.compile today)
        shape = self.shape
        params = [make_tensor(p) for p in self.params] if need_p else []

        def g(y: Any, t: Any, *ps: Any) -> Any:
            full = ps if need_p else [make_tensor(p) for p in self.params]
            return self.call(y.reshape(shape), t, full).reshape(-1)

        with self.closure.own():  # (its leaves are not captured tensors)
            blocks = vmap_jacobians(g, Yt, Tt, params, need_t)
        blocks = [np.asarray(data_of(b)) for b in blocks]
        Jy = blocks[0].reshape(P, n, n)
        Jt = blocks[1].reshape(P, n) if need_t else None
        Jp = None
        if need_p:
            rest = blocks[1 + need_t:]
            Jp = (np.concatenate([b.reshape(P, n, -1) for b in rest], axis=2) if rest
                  else np.zeros((P, n, 0)))
        return Jy, Jt, Jp

    def _native_jacobians(self, Y: np.ndarray, ts: np.ndarray, need_t: bool,
                          need_p: bool) -> tuple | None:
        """:meth:`jacobians` from the native vector-Jacobian product of ``func`` (one per
        point and component, in one numba loop), or None where there is none."""
        if need_t and not self.need_t:
            return None
        P, n = Y.shape
        eye = np.eye(n)
        found = self.native("vjp", [Y[0], np.asarray(ts[0], float), eye[0]])
        if found is None:
            return None
        from . import native

        program, ins, outs, R, Z = found
        # a row per point and component: (y, t, e_i) into the regions the program reads
        cols = [np.repeat(Y, n, axis=0), np.repeat(np.asarray(ts, float), n)[:, None],
                np.tile(eye, (P, 1))]
        read = ins[:, 0] >= 0
        X = np.ascontiguousarray(np.concatenate([c for c, r in zip(cols, read) if r], axis=1))
        out = np.empty((P * n, int(outs[:, 1].sum())))
        if native.execute_rows(program.code, program.idx, R, Z, ins[read], X, outs, out) >= 0:
            return None
        out = out.reshape(P, n, -1)
        Jy = out[..., :n]
        Jt = out[..., n] if need_t else None
        Jp = out[..., n + self.need_t:] if need_p else None
        return Jy, Jt, Jp
