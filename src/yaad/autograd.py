"""``yaad.autograd``: the functional entry points of the engine (PyTorch's names)."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .engine import run_backward
from .grad_mode import state
from .op import Op, apply
from .tensor import Tensor


def _as_tuple(x: Any, what: str = "outputs") -> tuple:
    if isinstance(x, Tensor):
        return (x,)
    if not isinstance(x, (tuple, list)):
        raise TypeError(f"autograd: {what} must be a Tensor or a sequence of Tensors, not a "
                        f"{type(x).__name__} (differentiate tensors made from yaad.tensor(..., "
                        f"requires_grad=True))")
    return tuple(x)


def grad(outputs: Tensor | Sequence[Tensor], inputs: Tensor | Sequence[Tensor],
         grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, allow_unused: bool = False) -> tuple:
    """Gradients of ``outputs`` with respect to ``inputs``, without touching any ``.grad``.

    Parameters
    ----------
    outputs : Tensor or sequence of Tensor
        What to differentiate.
    inputs : Tensor or sequence of Tensor
        With respect to what (leaves or intermediate tensors).
    grad_outputs : array_like or sequence, optional
        The gradient with respect to each output; may be omitted for real scalars.
    retain_graph : bool, optional
        Keep saved values for another backward; defaults to ``create_graph``.
    create_graph : bool, optional
        Record the computation of the gradients, for higher derivatives.
    allow_unused : bool, optional
        Return None for inputs that the outputs do not depend on, instead of raising.

    Returns
    -------
    tuple
        One gradient (array, or tensor under ``create_graph``) per input.
    """
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs, "inputs")
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    else:
        grad_outputs = (grad_outputs,) if len(outputs) == 1 and not isinstance(
            grad_outputs, (tuple, list)) else tuple(grad_outputs)
        if len(grad_outputs) != len(outputs):
            raise ValueError(f"grad: {len(grad_outputs)} grad_outputs for {len(outputs)} "
                             f"outputs")
    return tuple(run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs,
                              capture=True, allow_unused=allow_unused))


def backward(tensors: Tensor | Sequence[Tensor], grad_tensors: Any = None,
             retain_graph: bool | None = None, create_graph: bool = False,
             inputs: Any = None) -> None:
    """Accumulate gradients of ``tensors`` into the leaves' ``.grad`` (several roots at once).

    Parameters are those of :meth:`Tensor.backward`, with one gradient per tensor.
    """
    tensors = _as_tuple(tensors)
    if grad_tensors is None:
        grad_tensors = (None,) * len(tensors)
    elif isinstance(grad_tensors, Tensor) or not isinstance(grad_tensors, (list, tuple)):
        grad_tensors = (grad_tensors,)
    run_backward(tensors, tuple(grad_tensors), retain_graph, create_graph, inputs)


# ---- PyTorch-style custom functions ------------------------------------------------------


class FunctionCtx:
    """The ``ctx`` handed to :meth:`Function.forward`, :meth:`Function.backward` and
    :meth:`Function.jvp`: what forward leaves for the derivatives.

    Attributes
    ----------
    needs_input_grad : tuple of bool
        For each argument of ``apply``, whether a gradient is wanted for it.

    Any other attribute may be set in ``forward`` (``ctx.alpha = 2``) and read later.
    """

    def __init__(self, needs_input_grad: tuple) -> None:
        self.needs_input_grad = needs_input_grad
        self._saved: tuple = ()
        self._view = None  # maps saved arrays to the values a rule works with
        self._inputs: tuple = ()
        self._outputs: Any = None
        self._grads = None  # (g, gradients): backward's result for the current pass

    def save_for_backward(self, *values: Any) -> None:
        """Keep values (inputs, outputs or others) for :meth:`Function.backward`."""
        self._saved = values

    @property
    def saved_tensors(self) -> tuple:
        """The saved values. Inputs and outputs among them come back linked into the
        graph when backward is recorded (``create_graph=True``), so a backward written
        with yaad functions has second derivatives; other saved values are constants."""
        view = self._view
        return tuple(view(v) for v in self._saved) if view is not None else self._saved

    def _viewer(self, args: tuple, ans: Any) -> Callable:
        """Map forward's input and output arrays to the rule's ``args`` and ``ans``."""
        pairs = list(zip(self._inputs, args))
        outs = self._outputs
        if isinstance(outs, tuple):
            pairs += list(zip(outs, ans))
        elif outs is not None:
            pairs.append((outs, ans))

        def view(v: Any) -> Any:
            for a, r in pairs:
                if v is a:
                    return r
            return v

        return view


class Function:
    """Base class of a PyTorch-style differentiable function.

    Subclass it with static methods ``forward(ctx, *args)`` (on NumPy arrays: each tensor
    argument arrives as its array) and ``backward(ctx, *grads)`` (one gradient per output
    in, one per argument of ``apply`` out, None where there is none), and optionally
    ``jvp(ctx, *tangents)`` for forward mode. Call it with ``MyOp.apply(*args)``.

    Write ``backward`` with yaad functions (``yaad.exp``, ``@``, ``conj``) and keep the
    inputs and outputs it needs with ``ctx.save_for_backward``: it then also works under
    ``create_graph=True`` (second derivatives). The engine reduces a gradient over
    broadcast axes, casts it to the input's dtype and checks its shape, naming the class.
    The complex convention is yaad's: for a holomorphic function, ``g * conj(f'(z))``.

    Examples
    --------
    >>> class Exp(yaad.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         y = np.exp(x)
    ...         ctx.save_for_backward(y)
    ...         return y
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         (y,) = ctx.saved_tensors
    ...         return g * yaad.conj(y)
    >>> x = yaad.tensor([0.0, 1.0], requires_grad=True)
    >>> Exp.apply(x).sum().backward()
    """

    # Whether the node keeps forward's outputs (needed when backward reads them).
    _save_outputs = True

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any) -> Any:
        """The computation on arrays; returns an array or a tuple of arrays."""
        raise NotImplementedError("Function subclasses must define forward(ctx, *args)")

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> Any:
        """Gradients of the inputs from the gradients of the outputs."""
        raise NotImplementedError("Function subclasses must define backward(ctx, *grads)")

    @staticmethod
    def jvp(ctx: FunctionCtx, *tangents: Any) -> Any:
        """Tangents of the outputs from the tangents of the inputs (forward mode)."""
        raise NotImplementedError

    @classmethod
    def apply(cls, *args: Any) -> Any:
        """Run the function on ``args`` (tensors, arrays, other values), recording it."""
        if not any(isinstance(a, Tensor) for a in args):
            return cls.forward(FunctionCtx((False,) * len(args)), *args)
        needs = tuple(isinstance(a, Tensor) and a.requires_grad and state.enabled
                      for a in args)
        return apply(_function_op(cls), args, {"ctx": FunctionCtx(needs)})


def _as_array(x: Any) -> Any:
    if isinstance(x, Tensor):
        return x.data
    return x if hasattr(x, "dtype") else np.asarray(x)


def _function_op(cls: type) -> Op:
    """An op (made per call: the number of outputs is known after forward) running the
    static methods of ``cls``."""
    name = cls.__name__

    def forward(*arrays: Any, ctx: FunctionCtx) -> Any:
        out = cls.forward(ctx, *arrays)
        if isinstance(out, tuple):
            out = tuple(_as_array(o) for o in out)
            spec.nout = len(out)
        else:
            out = _as_array(out)
        ctx._inputs = arrays
        if cls._save_outputs:
            ctx._outputs = out
        return out

    def vjp(i: int, g: Any, ans: Any, *args: Any, ctx: FunctionCtx) -> Any:
        cached = ctx._grads
        if cached is None or cached[0] is not g:
            if spec.nout == 1:
                grads = (g,)
            else:  # outputs that received no gradient get zeros, as in PyTorch
                grads = tuple(np.zeros(np.shape(a), dtype=a.dtype) if gk is None else gk
                              for gk, a in zip(g, ans))
            ctx._view = ctx._viewer(args, ans)
            try:
                result = cls.backward(ctx, *grads)
            finally:
                ctx._view = None
            result = result if isinstance(result, tuple) else (result,)
            if len(result) != len(args):
                raise TypeError(
                    f"{name}.backward returned {len(result)} gradient(s), but apply() was "
                    f"called with {len(args)} argument(s): return one per argument (None "
                    f"for an argument without a gradient)")
            cached = ctx._grads = (g, result)
        return cached[1][i]

    def jvp(i: int, t: Any, out: Any, *args: Any, ctx: FunctionCtx) -> Any:
        if cls.jvp is Function.jvp:
            raise NotImplementedError(
                f"{name}: no JVP rule, so forward mode (jvp, jacfwd, hessian, hvp) cannot go "
                f"through it. Define a static method jvp(ctx, *tangents) on {name}, or use "
                f"reverse mode (vjp, jacrev). (see docs/errors.md#no-jvp-rule)")
        tangents = [t if k == i else
                    np.zeros(np.shape(a), dtype=a.dtype) if hasattr(a, "dtype") else None
                    for k, a in enumerate(args)]
        ctx._view = ctx._viewer(args, out)
        try:
            return cls.jvp(ctx, *tangents)
        finally:
            ctx._view = None

    spec = Op(forward=forward, name=name, vjps=(vjp,), jvps=(jvp,), save_args=True,
              save_ans=cls._save_outputs, nout=1, variadic=True, elementwise=False,
              selects=False, linear=False)
    return spec
