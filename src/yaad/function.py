"""PyTorch-style custom functions: :class:`Function`, a class whose static ``forward``,
``backward`` (and ``jvp``) become one op, and the ``ctx`` (:class:`FunctionCtx`) they share.

A form of :func:`yaad.op` (it declares an op), so it sits with the ops, below the modes
that record it (``checkpoint``, compile); :mod:`yaad.autograd` exports it.
"""

from __future__ import annotations

import contextlib
import functools
from typing import TYPE_CHECKING, Any, Callable, Iterator

import numpy as np

from .core.grad_mode import no_grad, state
from .core.op import Op, apply, registry
from .core.op import op as declare_op
from .core.tensor import Tensor, make_tensor

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


class FunctionCtx:
    """The ``ctx`` handed to :meth:`Function.forward`, :meth:`Function.backward` and
    :meth:`Function.jvp`: what forward leaves for the derivatives.

    Attributes
    ----------
    needs_input_grad : tuple of bool
        For each argument of ``apply``, whether a gradient is wanted for it.

    Any other attribute may be set in ``forward`` (``ctx.alpha = 2``) and read later.
    """

    def __init__(self, needs_input_grad: tuple[bool, ...]) -> None:
        self.needs_input_grad = needs_input_grad
        self.materialize_grads = True
        self._saved: tuple[Any, ...] = ()
        # maps saved arrays to the values a rule works with
        self._view: Callable[[Any], Any] | None = None
        self._inputs: tuple[Any, ...] = ()
        # forward's array outputs: for each, the objects that stand for it (the value
        # forward returned, and the array made of it when that is another object, as for
        # a NumPy scalar), so that saving either keeps the output's link to the graph
        self._outputs: list[tuple[Any, ...]] = []
        # (g, gradients): backward's result for the current pass
        self._grads: tuple[Any, tuple[Any, ...]] | None = None
        self._non_differentiable: list[Any] = []
        # forward's outputs: for each, its index among the array outputs, or None for a
        # value that is not an array (None, a string, a Python number), kept as it is
        self._layout: list[Any] = []
        self._values: list[Any] = []
        self._single: bool  # whether forward returned one value (set by forward)

    if TYPE_CHECKING:  # any other attribute may be set and read (ctx.alpha = 2)
        def __getattr__(self, name: str) -> Any: ...
        def __setattr__(self, name: str, value: Any) -> None: ...

    def save_for_backward(self, *values: Any) -> None:
        """Keep values (inputs, outputs or others) for :meth:`Function.backward`."""
        self._saved = values

    def mark_non_differentiable(self, *outputs: Any) -> None:
        """Declare outputs of ``forward`` (the arrays it returns) without a gradient:
        their tensors do not require grad, and backward receives zeros for them."""
        self._non_differentiable.extend(outputs)

    def set_materialize_grads(self, value: bool) -> None:
        """With False, backward receives None (instead of zeros) for the outputs that
        got no gradient; it must then handle None."""
        self.materialize_grads = bool(value)

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        """The saved values. Inputs and outputs among them come back linked into the
        graph when backward is recorded (``create_graph=True``), so a backward written
        with yaad functions has second derivatives; other saved values are constants."""
        view = self._view
        return tuple(view(v) for v in self._saved) if view is not None else self._saved

    @contextlib.contextmanager
    def _linked(self, args: tuple[Any, ...], ans: Any) -> Iterator[None]:
        """While a rule runs: saved values, and forward's inputs and outputs kept as
        attributes (``ctx.x = x``, also inside a tuple or list), are the rule's ``args``
        and ``ans``, linked into the graph when backward is recorded (as PyTorch's
        ``ctx.x`` is the tensor itself)."""
        view = self._view = self._viewer(args, ans)
        kept = {name: v for name, v in vars(self).items() if name not in _CTX_OWN}
        try:
            for name, v in kept.items():
                if type(v) in (tuple, list):
                    seen = type(v)(view(e) for e in v)
                    if any(a is not b for a, b in zip(seen, v)):
                        object.__setattr__(self, name, seen)
                elif view(v) is not v:
                    object.__setattr__(self, name, view(v))
            yield
        finally:
            self._view = None
            for name, v in kept.items():
                object.__setattr__(self, name, v)

    def _viewer(self, args: tuple[Any, ...], ans: Any) -> Callable[..., Any]:
        """Map forward's input and output arrays to the rule's ``args`` and ``ans``."""
        pairs = list(zip(self._inputs, args))
        if self._outputs:
            answers = ans if len(self._outputs) > 1 else (ans,)
            pairs += [(v, a) for same, a in zip(self._outputs, answers) for v in same]

        def view(v: Any) -> Any:
            for a, r in pairs:
                if v is a:
                    return r
            return v

        return view


# the attributes of a ctx that are its own (the rest are the user's: ctx.alpha = 2)
_CTX_OWN = frozenset(vars(FunctionCtx(()))) | {"_single"}


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
        """Run the function on ``args`` (tensors, arrays, other values), recording it.

        Array outputs come back as tensors; other outputs (None, strings, Python
        numbers) as they are.
        """
        if not any(isinstance(a, Tensor) for a in args):
            return cls.forward(FunctionCtx((False,) * len(args)), *args)
        needs = tuple(isinstance(a, Tensor) and a.requires_grad and state.enabled
                      for a in args)
        ctx = FunctionCtx(needs)
        out = apply(_function_op(cls), args, {"ctx": ctx})
        tensors = out if isinstance(out, tuple) else (out,)
        result = []
        for k, value in zip(ctx._layout, ctx._values):
            if k is None:
                result.append(value)
            elif any(value is m for m in ctx._non_differentiable):
                result.append(make_tensor(tensors[k].data))
            else:
                result.append(tensors[k])
        return result[0] if ctx._single else tuple(result)


def _is_array(x: Any) -> bool:
    return isinstance(x, (Tensor, np.ndarray, np.generic))


def _as_array(x: Any) -> Any:
    return x.data if isinstance(x, Tensor) else np.asarray(x)


def _function_op(cls: type[Function]) -> Op:
    """An op (made per call: the number of outputs is known after forward) running the
    static methods of ``cls``."""
    name = cls.__name__

    def forward(*arrays: Any, ctx: FunctionCtx) -> Any:
        with no_grad():  # as in PyTorch (forward works on arrays anyway)
            out = cls.forward(ctx, *arrays)
        ctx._single = not isinstance(out, tuple)
        ctx._values = [out] if ctx._single else list(out)
        outs: list[Any] = []
        for value in ctx._values:
            ctx._layout.append(len(outs) if _is_array(value) else None)
            if _is_array(value):
                outs.append(_as_array(value))
                if cls._save_outputs:
                    ctx._outputs.append((outs[-1],) if outs[-1] is value else
                                        (outs[-1], value))
        op.nout = len(outs)
        out = outs[0] if len(outs) == 1 else tuple(outs)
        ctx._inputs = arrays
        return out

    def vjp(i: int, g: Any, ans: Any, *args: Any, ctx: FunctionCtx) -> Any:
        cached = ctx._grads
        if cached is None or cached[0] is not g:
            gs = (g,) if op.nout == 1 else g
            outs = (ans,) if op.nout == 1 else ans
            grads: list[Any] = []
            for k in ctx._layout:  # one per output of forward, as in PyTorch
                if k is None:
                    grads.append(None)  # a value that is not an array
                elif gs[k] is None and ctx.materialize_grads:
                    grads.append(np.zeros(outs[k].shape, dtype=outs[k].dtype))
                else:
                    grads.append(gs[k])
            with ctx._linked(args, ans):
                result = cls.backward(ctx, *grads)
            result = result if isinstance(result, tuple) else (result,)
            n = len(args)
            if len(result) > n and all(r is None for r in result[n:]):
                result = result[:n]  # trailing Nones are accepted, as in PyTorch
            if len(result) != n:
                raise RuntimeError(
                    f"{name}.backward returned an incorrect number of gradients (expected "
                    f"{n}, got {len(result)}): return one per argument of apply() (None "
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
        with ctx._linked(args, out):
            return cls.jvp(ctx, *tangents)

    op = Op(forward=forward, name=name, vjps=(vjp,), jvps=(jvp,), save_args=True,
            save_ans=cls._save_outputs, nout=1, variadic=True, elementwise=False,
            selects=False, linear=False)
    return op


def once_differentiable(backward: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate :meth:`Function.backward` written for first derivatives only (with NumPy,
    say): it runs without recording, and a gradient it returns under
    ``create_graph=True`` refuses to be differentiated again (as in PyTorch).

    Parameters
    ----------
    backward : callable
        ``backward(ctx, *grads)``.

    Returns
    -------
    callable
    """
    @functools.wraps(backward)
    def wrapper(ctx: FunctionCtx, *grads: Any) -> Any:
        with no_grad():
            result = backward(ctx, *grads)
        deps = [g for g in grads if isinstance(g, Tensor) and g.requires_grad]
        if not deps:
            return result
        message = (f"{getattr(backward, '__qualname__', 'backward')} is marked "
                   f"@once_differentiable: its gradients cannot be differentiated again")
        single = not isinstance(result, tuple)
        out = tuple(None if r is None else
                    refuse_backward(r.data if isinstance(r, Tensor) else r, deps[0],
                                    message=message)
                    for r in ((result,) if single else result))
        return out[0] if single else out

    return wrapper


def _refused(g: Any, ans: Any, value: Any, dep: Any, message: str) -> Any:
    raise RuntimeError(message)


refuse_backward = declare_op(lambda value, dep, message: value, vjp=(None, _refused),
                             name="refuse_backward", save_args=False, save_ans=False)
del registry["refuse_backward"]  # not an op with derivatives to check: its backward raises
refuse_backward.__doc__ = """``value`` as a tensor that depends on ``dep`` (when that
requires grad) but whose backward raises ``RuntimeError(message)``: a gradient that must
not be differentiated, or a view whose history is ambiguous.

Parameters
----------
value : array
dep : Tensor
message : str

Returns
-------
Tensor
"""
