"""The vector field ``func(y, t, *args)`` of an ODE on flat arrays.

The solvers work on flat vectors; the field reshapes them to the state's shape, calls
the user's function and returns arrays: its value, its vector-Jacobian product for the
state, the time and the differentiable parameters (the tensor arguments that require
grad, then the tensors ``func`` captures from outside), and its dense Jacobian (for the
implicit method).

Without captured tensors, ``func`` runs inside compiled programs (``yaad.compile``),
kept per ``func`` across calls: a whole explicit step (its seven stages) is one replayed
program, and the vector-Jacobian product of ``func`` another (one call per stage in the
reverse pass), instead of Python per operation.
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
from ..implicit import Closure, data_of, leaf, vjp_of
from ..ops.shape import stack

# func -> {swapped: its compiled programs} (the programs hold func weakly)
_PROGRAMS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


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


def _programs(func: Callable) -> dict:
    """The compiled programs of ``func`` (made on first use, kept while ``func`` lives).

    Each takes the state's shape, the differentiable slots and the method's name as
    Python constants, and all of ``func``'s further arguments (the differentiable ones
    as arrays) as arguments, so that nothing it reads is hidden from the recording."""
    swap = isinstance(func, Swapped)
    base = func.fun if isinstance(func, Swapped) else func
    progs = _PROGRAMS.setdefault(base, {}).get(swap)
    if progs is not None:
        return progs
    from ..compile import compile as compile_
    from ..func import vjp
    from .methods import METHODS

    ref = weakref.ref(base)

    def field(shape: tuple, args: Sequence) -> Callable:
        fn = ref()
        if swap:
            return lambda Y, t: fn(t, Y.reshape(shape), *args).reshape(-1)  # type: ignore
        return lambda Y, t: fn(Y.reshape(shape), t, *args).reshape(-1)  # type: ignore

    def value(y: Any, t: Any, shape: tuple, slots: tuple, *args: Any) -> Any:
        return field(shape, args)(y, t)

    def value_vjp(y: Any, t: Any, cot: Any, shape: tuple, slots: tuple, *args: Any) -> Any:
        def g(y: Any, t: Any, *ps: Any) -> Any:
            return field(shape, _with_slots(args, slots, ps))(y, t)

        _, back = vjp(g, y, t, *[args[k] for k in slots])
        return back(cot)

    def step(y: Any, t: Any, h: Any, k1: Any, shape: tuple, slots: tuple, method: str,
             *args: Any) -> Any:
        y_new, K = METHODS[method].step_ops(field(shape, args), y, t, h, k1)
        return y_new, stack(K)

    progs = {name: compile_(body, warn=False) for name, body in (
        ("value", value), ("vjp", value_vjp), ("step", step))}
    _PROGRAMS[base][swap] = progs
    return progs


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
        self.compiled = compiled and not closure.found
        if self.compiled:
            try:
                self.programs = _programs(func)
            except TypeError:  # func cannot be weakly referenced: no programs kept
                self.compiled = False
        if self.compiled:
            self.constants = (tuple(shape), tuple(slots))
            # arrays as tensors: a compiled program replays what it does with tensors
            self.program_args = [make_tensor(a) if isinstance(a, np.ndarray) else a
                                 for a in _with_slots(self.plain, slots, self.params)]

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

    def value(self, y: np.ndarray, t: float) -> np.ndarray:
        """``func(y, t)`` as a flat array."""
        with no_grad():
            if self.compiled:
                out = self.programs["value"](make_tensor(y), make_tensor(np.asarray(t, float)),
                                             *self.constants, *self.program_args)
            else:
                out = self.func(make_tensor(y.reshape(self.shape)), t, *self.plain)
        return np.asarray(data_of(out)).reshape(-1)

    def run_step(self, method: str, y: np.ndarray, t: float, h: float,
                 k1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """An explicit method's step as one compiled program: ``(y_new, K)``."""
        with no_grad():
            y_new, K = self.programs["step"](
                make_tensor(y), make_tensor(np.asarray(t, float)),
                make_tensor(np.asarray(h, float)), make_tensor(k1), *self.constants, method,
                *self.program_args)
        return np.asarray(data_of(y_new)), np.asarray(data_of(K))

    def vjp(self, y: np.ndarray, t: float, cot: np.ndarray) -> tuple[np.ndarray, float, list]:
        """The gradients of ``Re <cot, func(y, t)>`` for ``y``, ``t`` and the parameters."""
        if self.compiled:
            grads = self.programs["vjp"](y, np.asarray(t, float), cot, *self.constants,
                                         *self.program_args)
            yb, tb, *pbars = (data_of(g) for g in grads)
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
        n = y.size
        yl = leaf(y.reshape(self.shape))
        out = self.call(yl, t, [make_tensor(p) for p in self.params])
        if not isinstance(out, Tensor) or not out.requires_grad:
            return np.zeros((n, n))
        rows = np.empty((n, n))
        eye = np.eye(n)
        for i in range(n):
            (g,) = vjp_of([out], [yl], [eye[i].reshape(self.shape)], i < n - 1, False)
            rows[i] = np.asarray(g).reshape(-1)
        return rows
