"""``yaad.autograd``: the functional entry points of the engine (PyTorch's names)."""

from __future__ import annotations

from typing import Any, Sequence, cast

import numpy as np

from .core.engine import run_backward
from .core.errors import error
from .core.grad_mode import engine
from .core.tensor import Tensor, make_tensor
from .function import Function, FunctionCtx, once_differentiable
from .modes import batch as batch_mode
from .modes import batched_values
from .modes.anomaly import detect_anomaly
from .modes.batched_values import batch_axes

__all__ = ["grad", "backward", "Function", "FunctionCtx", "once_differentiable",
           "detect_anomaly"]


def __dir__() -> list[str]:  # what dir() and completion list: the public names only
    return list(__all__)


engine.run_backward = run_backward  # (for rules below the engine: see core.grad_mode)


def _as_tuple(x: Any, what: str = "outputs") -> tuple[Any, ...]:
    if isinstance(x, Tensor):
        return (x,)
    if not isinstance(x, (tuple, list)):
        raise TypeError(f"autograd: {what} must be a Tensor or a sequence of Tensors, not a "
                        f"{type(x).__name__} (differentiate tensors made from yaad.tensor(..., "
                        f"requires_grad=True))")
    return tuple(x)


def grad(outputs: Tensor | Sequence[Tensor], inputs: Tensor | Sequence[Tensor],
         grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, allow_unused: bool | None = None,
         materialize_grads: bool = False) -> tuple[Any, ...]:
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
        Return None for inputs that the outputs do not depend on, instead of raising
        (default: ``materialize_grads``).
    materialize_grads : bool, optional
        Return zeros instead of None for such inputs.

    Returns
    -------
    tuple
        One gradient (array, or tensor under ``create_graph``) per input.
    """
    if materialize_grads and allow_unused is False:
        raise ValueError("grad: materialize_grads=True returns zeros for unused inputs, "
                         "so allow_unused must be True or left out, not False")
    if allow_unused is None:
        allow_unused = materialize_grads
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
    levels = {lv for t in outputs for lv in batch_axes(t)}
    if levels:  # inside vmap: each example's gradient
        outputs, grad_outputs = _per_example_roots(outputs, grad_outputs, inputs, levels)
    grads = cast("list[Any]",  # a list when capturing
                 run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs,
                              capture=True, allow_unused=allow_unused))
    if levels:
        grads = [None if g is None else batched_values.like(g, x) for g, x in zip(grads, inputs)]
    if materialize_grads:
        grads = [_zeros_like(t, create_graph) if g is None else g
                 for g, t in zip(grads, inputs)]
    return tuple(grads)


def _per_example_roots(outputs: tuple[Any, ...], grad_outputs: tuple[Any, ...],
                       inputs: tuple[Any, ...], levels: set[int]) -> tuple[list[Any], list[Any]]:
    """The outputs of a call of ``grad`` inside vmap, with their batch axes made ordinary
    axes, and the cotangents laid out alike (as ``yaad.func``'s pullback does): the pass
    then gives every example its own gradient. An output's implicit gradient is 1 for each
    example's scalar; an input shared by the examples (without vmap's batch axis) would get
    their sum, which is refused."""
    for k, x in enumerate(inputs):
        if isinstance(x, Tensor) and not levels <= set(batch_axes(x)):
            raise ValueError(
                f"grad inside vmap: input {k} (shape {x.shape}) is the same tensor for every "
                f"example (it was not given to vmap, or was made inside without its batch "
                f"axis), so one backward pass would give the sum of the examples' gradients "
                f"for it, not each one's. Differentiate with yaad.func.grad or yaad.func.vjp "
                f"inside vmap (they give each example its own copy of the inputs), or call "
                f"grad outside vmap.")
    outs, cots = [], []
    for k, (t, g) in enumerate(zip(outputs, grad_outputs)):
        if batch_axes(t):
            if g is None:
                if t.shape != ():
                    raise error("non-scalar-backward", k=k, shape=t.shape)
                if t.dtype.kind == "c":
                    raise error("complex-backward", k=k, dtype=t.dtype)
                g = np.ones((), dtype=t.dtype)
            t, g = batch_mode.root(t, g)
        outs.append(t)
        cots.append(g)
    return outs, cots


def _zeros_like(t: Tensor, create_graph: bool) -> Any:
    zeros = np.zeros(t.shape, dtype=t.dtype)
    return make_tensor(zeros, requires_grad=True) if create_graph else zeros


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
