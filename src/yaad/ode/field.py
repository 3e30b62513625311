"""The vector field ``func(y, t, *args)`` of an ODE on flat arrays.

The solvers work on flat vectors; the field reshapes them to the state's shape, calls
the user's function and returns arrays: its value, its vector-Jacobian product for the
state, the time and the differentiable parameters (the tensor arguments that require
grad, then the tensors ``func`` captures from outside), and its dense Jacobian (for the
implicit method). Without captured tensors, the value and the VJP run as compiled
programs (``yaad.compile``): one replayed tape per call instead of Python per
operation. The time is then handed to ``func`` as a 0-d tensor; a ``func`` that
reads it as a Python number (``float(t)``, ``math.sin(t)``) makes the compiled program
record again for each time, and ``compiled=False`` avoids that.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..core.grad_mode import no_grad
from ..core.tensor import Tensor, make_tensor
from ..implicit import Closure, data_of, leaf, vjp_of


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
        Whether to run the value and the VJP as compiled programs (ignored when ``func``
        captures tensors that require grad).
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
            from ..compile import compile as _compile

            self._value_c = _compile(self._value_body)
            self._vjp_c = _compile(self._vjp_body)

    # ---- the user's function with substituted inputs ------------------------------------

    def full(self, slot_values: Sequence) -> list:
        """The arguments of ``func`` with ``slot_values`` at the differentiable slots."""
        full = list(self.plain)
        for k, p in zip(self.slots, slot_values):
            full[k] = p
        return full

    def call(self, y: Any, t: Any, params: Sequence) -> Any:
        """``func(y, t, ...)`` with ``params`` (tensors) for the differentiable inputs
        (the slots, then the captured tensors), recorded."""
        ns = len(self.slots)
        full = self.full(params[:ns])
        return self.closure.call(lambda: self.func(y, t, *full), params[ns:])

    # ---- compiled bodies ----------------------------------------------------------------

    def _value_body(self, y: Any, t: Any, *params: Any) -> Any:
        return self.func(y.reshape(self.shape), t, *self.full(params))

    def _vjp_body(self, y: Any, t: Any, cot: Any, *params: Any) -> Any:
        from ..func import vjp

        def f(y: Any, t: Any, *params: Any) -> Any:
            return self.func(y.reshape(self.shape), t, *self.full(params)).reshape(-1)

        _, back = vjp(f, y, t, *params)
        return back(cot)

    # ---- on arrays ------------------------------------------------------------------------

    def value(self, y: np.ndarray, t: float) -> np.ndarray:
        """``func(y, t)`` as a flat array."""
        if self.compiled:
            with no_grad():
                out = self._value_c(make_tensor(y), make_tensor(np.asarray(t, float)),
                                    *[make_tensor(p) for p in self.params])
        else:
            with no_grad():
                out = self.func(make_tensor(y.reshape(self.shape)), t, *self.plain)
        return np.asarray(data_of(out)).reshape(-1)

    def vjp(self, y: np.ndarray, t: float, cot: np.ndarray) -> tuple[np.ndarray, float, list]:
        """The gradients of ``Re <cot, func(y, t)>`` for ``y``, ``t`` and the parameters."""
        if self.compiled:
            grads = self._vjp_c(y, np.asarray(t, float), cot, *self.params)
            yb, tb, pbars = grads[0], grads[1], list(grads[2:])
            return (np.asarray(data_of(yb)).reshape(-1), float(np.real(data_of(tb))),
                    [np.asarray(data_of(p)) for p in pbars])
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
